package http

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

func (s *Server) listScenarios(r *Request) error {
	q := r.Query()
	f := supplyplan.ScenarioFilter{
		Status:          supplyplan.ScenarioStatus(q.Enum("status", enumStrings(supplyplan.ScenarioStatuses))),
		Type:            supplyplan.ScenarioType(q.Enum("type", enumStrings(supplyplan.ScenarioTypes))),
		IncludeArchived: q.Bool("includeArchived", false),
	}
	if err := q.Err(); err != nil {
		return err
	}
	list, err := s.svc.Forecasting.ListScenarios(r.Context, r.Principal, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"scenarios": list})
}

func (s *Server) createScenario(r *Request) error {
	var in supplyplan.ScenarioInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	sc, err := s.svc.Forecasting.CreateScenario(r.Context, r.Principal, in)
	if err != nil {
		return err
	}
	return r.scenarioJSON(fasthttp.StatusCreated, &sc)
}

// scenarioBody is the {"scenario": ...} body of the scenario endpoints.
type scenarioBody struct {
	Scenario supplyplan.Scenario `json:"scenario"`
}

// eventJSON answers an event with the hand-written encoding (r.JSON otherwise), without boxing
// it in an interface (a heap copy per write).
func (r *Request) eventJSON(status int, ev *supplyplan.ExternalEvent) error {
	e := responseEncoders.Get().(*responseEncoder)
	b, ok := supplyplan.AppendEventJSON(e.raw[:0], ev)
	if !ok {
		responseEncoders.Put(e)
		return r.JSON(status, *ev)
	}
	r.Ctx.SetStatusCode(status)
	r.Ctx.SetContentType("application/json")
	r.Ctx.SetBody(b)
	if cap(b) <= maxPooledResponse {
		e.raw = b
	}
	responseEncoders.Put(e)
	return nil
}

// scenarioJSON answers {"scenario": sc} with the hand-written encoding (r.JSON otherwise), without
// boxing the scenario in an interface (two copies of it on the heap per read).
func (r *Request) scenarioJSON(status int, sc *supplyplan.Scenario) error {
	e := responseEncoders.Get().(*responseEncoder)
	b := append(e.raw[:0], `{"scenario":`...)
	b, ok := supplyplan.AppendScenarioJSON(b, sc)
	if !ok {
		responseEncoders.Put(e)
		return r.JSON(status, scenarioBody{*sc})
	}
	b = append(b, '}')
	r.Ctx.SetStatusCode(status)
	r.Ctx.SetContentType("application/json")
	r.Ctx.SetBody(b)
	if cap(b) <= maxPooledResponse {
		e.raw = b
	}
	responseEncoders.Put(e)
	return nil
}

func (s *Server) getScenario(r *Request) error {
	sc, err := s.svc.Forecasting.GetScenario(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.scenarioJSON(fasthttp.StatusOK, &sc)
}

func (s *Server) updateScenario(r *Request) error {
	var in supplyplan.ScenarioInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	sc, err := s.svc.Forecasting.UpdateScenario(r.Context, r.Principal, r.Param("id"), in)
	if err != nil {
		return err
	}
	return r.scenarioJSON(fasthttp.StatusOK, &sc)
}

func (s *Server) archiveScenario(r *Request) error {
	sc, err := s.svc.Forecasting.ArchiveScenario(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"success": true, "scenario": sc})
}

func (s *Server) publishScenario(r *Request) error {
	sc, err := s.svc.Forecasting.PublishScenario(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"success": true, "scenario": sc})
}

// EventWindow is the default listing window: today to today plus 90 days.
const EventWindow = 90 * 24 * time.Hour

func (s *Server) listEvents(r *Request) error {
	q := r.Query()
	today := supplyplan.StartOfDay(time.Now())
	from, _, ok := q.Time("from")
	if !ok {
		from = today
	}
	to, dateOnly, ok := q.Time("to")
	switch {
	case !ok:
		to = today.Add(EventWindow + 24*time.Hour - time.Millisecond)
	case dateOnly:
		to = to.Add(24*time.Hour - time.Millisecond) // a plain date includes its whole day
	}
	f := supplyplan.EventFilter{
		From: from, To: to,
		ProductMasterID: q.String("productMasterId"),
		LocationID:      q.String("locationId"),
		Type:            supplyplan.EventType(q.Enum("type", enumStrings(supplyplan.EventTypes))),
		IncludeGlobal:   q.Bool("includeGlobal", true),
		IncludeOrgWide:  q.Bool("includeOrgWide", true),
	}
	if err := q.Err(); err != nil {
		return err
	}
	if f.To.Before(f.From) {
		return supplyplan.Invalid("to", "must not be before from")
	}
	list, err := s.svc.Forecasting.ListEvents(r.Context, r.Principal, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"events": list})
}

func (s *Server) createEvent(r *Request) error {
	var in supplyplan.EventInput
	if err := r.decodeEvent(&in); err != nil {
		return err
	}
	e, err := s.svc.Forecasting.CreateEvent(r.Context, r.Principal, in)
	if err != nil {
		return err
	}
	return r.eventJSON(fasthttp.StatusCreated, &e)
}

func (s *Server) getEvent(r *Request) error {
	e, err := s.svc.Forecasting.GetEvent(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, e)
}

func (s *Server) updateEvent(r *Request) error {
	var in supplyplan.EventInput
	if err := r.decodeEvent(&in); err != nil {
		return err
	}
	e, err := s.svc.Forecasting.UpdateEvent(r.Context, r.Principal, r.Param("id"), in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, e)
}

func (s *Server) deleteEvent(r *Request) error {
	if err := s.svc.Forecasting.DeleteEvent(r.Context, r.Principal, r.Param("id")); err != nil {
		return err
	}
	return r.NoContent()
}
