package http

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

func (s *Server) getForecast(r *Request) error {
	q := r.Query()
	fq := supplyplan.ForecastQuery{
		ProductMasterID: q.String("productMasterId"),
		LocationID:      q.String("locationId"),
		Channel:         q.String("channel"),
		HorizonWeeks:    q.Int("horizonWeeks", supplyplan.DefaultHorizonWeeks, 1, supplyplan.MaxHorizonWeeks),
		ScenarioID:      q.String("scenarioId"),
		Model:           q.String("model"),
		Point:           q.Enum("point", []string{"median", "mean", "mape"}),
		Transform:       q.Enum("transform", []string{"auto", "none", "log"}),
		NoEvents:        q.Enum("events", []string{"all", "none"}) == "none",
		Limit:           q.Int("limit", supplyplan.DefaultPageLimit, 1, supplyplan.MaxForecastPage),
		Offset:          q.Int("offset", 0, 0, 1<<31-1),
	}
	if asOf, _, ok := q.Time("asOf"); ok {
		fq.AsOf = asOf
	}
	if v := q.String("interval"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || (f != 0.5 && f != 0.8 && f != 0.9 && f != 0.95) {
			return supplyplan.Invalid("interval", "must be 0.5, 0.8, 0.9 or 0.95")
		}
		fq.Interval = f
	}
	if err := q.Err(); err != nil {
		return err
	}
	if wantsCSV(r) {
		return s.forecastCSV(r, fq)
	}
	res, err := s.svc.Forecast.Forecast(r.Context, r.Principal, fq)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, res)
}

func (s *Server) generateScenario(r *Request) error {
	var in supplyplan.GenerateScenarioInput
	if err := r.DecodeOptional(&in); err != nil {
		return err
	}
	res, err := s.svc.Forecast.GenerateScenario(r.Context, r.Principal, r.Param("id"), in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, res)
}

func (s *Server) compareScenarios(r *Request) error {
	var in supplyplan.CompareInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	res, err := s.svc.Forecast.CompareScenarios(r.Context, r.Principal, in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, res)
}

func (s *Server) changeHistory(r *Request) error {
	q := r.Query()
	f := supplyplan.ChangeFilter{ScenarioID: q.String("scenarioId"), ProductMasterID: q.String("productMasterId"),
		LocationID: q.String("locationId"), Page: q.Int("page", 1, 1, 1<<31-1), Limit: q.Int("limit", supplyplan.DefaultPageLimit, 1, supplyplan.MaxPageLimit)}
	if t, _, ok := q.Time("from"); ok {
		f.From = t
	}
	if t, dateOnly, ok := q.Time("to"); ok {
		if dateOnly {
			t = t.Add(24*60*60*1e9 - 1)
		}
		f.To = t
	}
	if err := q.Err(); err != nil {
		return err
	}
	entries, total, err := s.svc.Forecast.ChangeHistory(r.Context, r.Principal, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"entries": entries, "pagination": map[string]int{
		"page": f.Page, "pageSize": f.Limit, "total": total, "totalPages": (total + f.Limit - 1) / f.Limit}})
}

func (s *Server) channelProjection(r *Request) error {
	q := r.Query()
	horizon := q.Int("horizonWeeks", supplyplan.DefaultHorizonWeeks, 1, supplyplan.MaxHorizonWeeks)
	if err := q.Err(); err != nil {
		return err
	}
	res, err := s.svc.Forecast.ChannelProjection(r.Context, r.Principal, q.String("productMasterId"), q.String("locationId"), horizon)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, res)
}

func (s *Server) longTerm(r *Request) error {
	q := r.Query()
	months := q.Int("horizonMonths", 18, 1, 36)
	gran := q.Enum("granularity", []string{"MONTH", "QUARTER"})
	interval := 0.0
	if v := q.String("interval"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return supplyplan.Invalid("interval", "must be 0.5, 0.8, 0.9 or 0.95")
		}
		interval = f
	}
	if err := q.Err(); err != nil {
		return err
	}
	res, err := s.svc.Forecast.LongTerm(r.Context, r.Principal, q.String("productMasterId"), q.String("locationId"), months, gran, interval)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, res)
}

func (s *Server) forecastAccuracy(r *Request) error {
	q := r.Query()
	aq := supplyplan.AccuracyQuery{WindowWeeks: q.Int("windowWeeks", 13, 1, 104), ProductMasterID: q.String("productMasterId"),
		LocationID: q.String("locationId"), Channel: q.String("channel"), ScenarioID: q.String("scenarioId")}
	if err := q.Err(); err != nil {
		return err
	}
	res, err := s.svc.Forecast.Accuracy(r.Context, r.Principal, aq)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, res)
}

func (s *Server) eventLift(r *Request) error {
	res, err := s.svc.Forecast.EventLift(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, res)
}
