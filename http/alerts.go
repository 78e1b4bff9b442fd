package http

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

func (s *Server) getAlertConfig(r *Request) error {
	cfg, err := s.svc.Alerts.GetAlertConfig(r.Context, r.Principal)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"config": cfg})
}

func (s *Server) putAlertConfig(r *Request) error {
	var in struct {
		Config *supplyplan.AlertConfigInput `json:"config"`
	}
	if err := r.Decode(&in); err != nil {
		return err
	}
	if in.Config == nil {
		return supplyplan.Invalid("config", "is required (the full alert configuration)")
	}
	cfg, err := s.svc.Alerts.PutAlertConfig(r.Context, r.Principal, *in.Config)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"success": true, "config": cfg})
}

func (s *Server) alertHistory(r *Request) error {
	q := r.Query()
	f := supplyplan.AlertFilter{
		Type:     supplyplan.AlertKind(q.Enum("alertType", enumStrings(supplyplan.AlertKinds))),
		Severity: supplyplan.Severity(q.Enum("severity", enumStrings(supplyplan.Severities))),
		Page:     q.Int("page", 1, 1, 1<<30),
		Limit:    q.Int("limit", supplyplan.DefaultAlertPage, 1, supplyplan.MaxAlertPage),
	}
	if from, _, ok := q.Time("fromDate"); ok {
		f.From = &from
	}
	if to, dateOnly, ok := q.Time("toDate"); ok {
		if dateOnly {
			to = to.Add(24*time.Hour - time.Millisecond) // a plain date includes its whole day
		}
		f.To = &to
	}
	if q.Has("delivered") {
		d := q.Bool("delivered", false)
		f.Delivered = &d
	}
	if err := q.Err(); err != nil {
		return err
	}
	if f.From != nil && f.To != nil && f.To.Before(*f.From) {
		return supplyplan.Invalid("toDate", "must not be before fromDate")
	}
	if wantsCSV(r) {
		return s.alertsCSV(r, f)
	}
	page, err := s.svc.Alerts.ListAlerts(r.Context, r.Principal, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, page)
}

func (s *Server) triggerAlert(r *Request) error {
	var in supplyplan.TriggerInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	a, err := s.svc.Alerts.TriggerAlert(r.Context, r.Principal, in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusCreated, map[string]any{"success": true, "alert": a})
}

func (s *Server) evaluateAlerts(r *Request) error {
	rep, err := s.svc.Alerts.EvaluateAlerts(r.Context, r.Principal)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"success": true, "evaluation": rep})
}
