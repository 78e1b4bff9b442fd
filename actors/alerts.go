package actors

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/supplyplan/supplyplan"
)

// AlertsConfig configures alert evaluation.
type AlertsConfig struct {
	// Gate keeps cooldown state outside the process (Redis); nil keeps it in the outbound journal.
	Gate       supplyplan.AlertGate
	Thresholds supplyplan.AlertThresholds
	// EvalInterval re-evaluates every tenant's alerts on a schedule (default 15 min; negative:
	// never). EvalDebounce coalesces the evaluations that data changes ask for (default 500 ms).
	EvalInterval time.Duration
	EvalDebounce time.Duration
	// SignalDebounce is the delay of the evaluation live demand signals ask for (default 5 s).
	SignalDebounce time.Duration
}

func (c *AlertsConfig) defaults() {
	if c.Thresholds.RateWeeks == 0 {
		c.Thresholds = supplyplan.DefaultAlertThresholds()
	}
	if c.EvalInterval == 0 {
		c.EvalInterval = 15 * time.Minute
	}
	if c.EvalDebounce <= 0 {
		c.EvalDebounce = 500 * time.Millisecond
	}
	if c.SignalDebounce <= 0 {
		c.SignalDebounce = 5 * time.Second
	}
}

// Alerts is the alert service: a tenant's alert configuration and history (kept by its outbound
// actor, with the cooldown gate unless Redis keeps it), manual alerts, and the evaluator
// (alert_evaluator.go) that checks every rule after data changes and on a schedule. What fires is
// delivered by Webhooks.
type Alerts struct {
	core       *Core
	cfg        *AlertsConfig
	demand     supplyplan.DemandStore
	forecaster supplyplan.Forecaster // nil: the rules use moving averages
	webhooks   *Webhooks
	imports    *Imports // an evaluation waits while the tenant's import jobs run (nil: never)
	eval       *alertEvaluator
}

// NewAlerts returns the alert service; Open starts its scheduled evaluation. imports (optional)
// holds back the evaluations asked for while a tenant's import jobs run (see alertEvaluator.run).
func NewAlerts(core *Core, cfg AlertsConfig, demand supplyplan.DemandStore, forecaster supplyplan.Forecaster, webhooks *Webhooks, imports *Imports) *Alerts {
	cfg.defaults()
	s := &Alerts{core: core, cfg: &cfg, demand: demand, forecaster: forecaster, webhooks: webhooks, imports: imports}
	s.eval = newAlertEvaluator(s)
	return s
}

var _ supplyplan.AlertService = (*Alerts)(nil)

// Open starts the scheduled evaluation of every tenant.
func (s *Alerts) Open(context.Context) error {
	s.eval.start()
	return nil
}

// Close stops evaluation (a run in progress is cancelled).
func (s *Alerts) Close(context.Context) error {
	s.eval.close()
	return nil
}

// HandleEvent receives every domain event from the bus and asks for a re-evaluation of the
// tenant's alerts when the event may change their conditions. It never blocks.
func (s *Alerts) HandleEvent(e supplyplan.DomainEvent) {
	if e.OrganizationID != "" && e.OrganizationID != supplyplan.PlatformOwner && evaluationTrigger(e.Type) {
		s.eval.schedule(e.OrganizationID)
	}
}

// demandSignalled reacts to live demand: the tenant's alerts are evaluated again (spikes,
// stockout risk, and every rule whose demand rate moved), debounced by SignalDebounce so that a
// steady stream of signals costs one evaluation per interval.
func (s *Alerts) demandSignalled(org string) { s.eval.scheduleIn(org, s.cfg.SignalDebounce) }

// evaluationTrigger reports whether an event may change alert conditions: everything except
// what alerts, billing and federation produce themselves, and the loop runtime's changes that
// leave stock alone.
func evaluationTrigger(t string) bool {
	if strings.HasPrefix(t, supplyplan.LoopEventPrefix) {
		return supplyplan.LoopEventChangesStock(t) // other loop changes leave the planning data alone
	}
	for _, p := range []string{"alert.", "ops.", "subscription.", "merchant.", "demand_signal.spike", "demand_signal.stockout"} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	return true
}

// GetAlertConfig returns the tenant's alert configuration (the default one until stored).
func (s *Alerts) GetAlertConfig(ctx context.Context, p supplyplan.Principal) (supplyplan.AlertConfig, error) {
	return outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.AlertConfig, []supplyplan.Record, error) {
		return st.AlertConfig(), nil, nil
	})
}

// PutAlertConfig replaces the tenant's alert configuration.
func (s *Alerts) PutAlertConfig(ctx context.Context, p supplyplan.Principal, in supplyplan.AlertConfigInput) (supplyplan.AlertConfig, error) {
	now := supplyplan.Now()
	if _, err := in.ResolveConfig(supplyplan.DefaultAlertConfig(), now); err != nil {
		return supplyplan.AlertConfig{}, err
	}
	if in.Destinations != nil {
		for i, d := range *in.Destinations {
			if d.Type != nil && d.Value != nil && (*d.Type == string(supplyplan.DestWebhook) || *d.Type == string(supplyplan.DestChat)) {
				if err := s.webhooks.checkDestination(ctx, fmt.Sprintf("config.destinations[%d].value", i), *d.Value); err != nil {
					return supplyplan.AlertConfig{}, err
				}
			}
		}
	}
	return outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.AlertConfig, []supplyplan.Record, error) {
		cfg, err := in.ResolveConfig(st.AlertConfig(), now)
		if err != nil {
			return supplyplan.AlertConfig{}, nil, err
		}
		return cfg, []supplyplan.Record{supplyplan.Put(supplyplan.KindAlertConfig, "config", &cfg)}, nil
	})
}

// ListAlerts returns a page of the tenant's alert history.
func (s *Alerts) ListAlerts(ctx context.Context, p supplyplan.Principal, f supplyplan.AlertFilter) (supplyplan.AlertPage, error) {
	return outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.AlertPage, []supplyplan.Record, error) {
		return st.PageAlerts(f), nil, nil
	})
}

// TriggerAlert fires a manual alert: the product and location must exist; the cooldown of the
// same (type, product, location, channel) applies unless bypassed.
func (s *Alerts) TriggerAlert(ctx context.Context, p supplyplan.Principal, in supplyplan.TriggerInput) (supplyplan.Alert, error) {
	if err := in.Validate(); err != nil {
		return supplyplan.Alert{}, err
	}
	val := func(v *string) string {
		if v == nil {
			return ""
		}
		return strings.TrimSpace(*v)
	}
	product, location, channel := val(in.ProductMasterID), val(in.LocationID), val(in.ChannelID)
	resolved, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (string, []supplyplan.Record, error) {
		fe := supplyplan.FieldErrors{}
		id := ""
		if product != "" {
			if pr, ok := st.ProductBySKU(product); ok {
				id = pr.ID
			} else {
				fe.Add("productMasterId", "unknown product %q", product)
			}
		}
		if location != "" {
			if _, ok := st.Locations[location]; !ok {
				fe.Add("locationId", "unknown location %q", location)
			}
		}
		return id, nil, fe.Err()
	})
	if err != nil {
		return supplyplan.Alert{}, err
	}
	product = resolved
	kind := supplyplan.AlertKind(*in.Type)
	key := supplyplan.AlertKey{Kind: string(kind), Product: product, Location: location, Channel: channel}.String()
	bypass := in.BypassCooldown != nil && *in.BypassCooldown
	now := supplyplan.Now()
	pol := s.webhooks.policies()
	type fired struct {
		alert      supplyplan.Alert
		deliveries []supplyplan.Delivery
	}
	gate := s.cfg.Gate
	if gate != nil {
		cfg, err := s.GetAlertConfig(ctx, p)
		if err != nil {
			return supplyplan.Alert{}, err
		}
		ok, wait, err := gate.Trigger(ctx, p.OrgID, key, cfg.Cooldown(), now, bypass)
		if err != nil {
			return supplyplan.Alert{}, err
		}
		if !ok {
			return supplyplan.Alert{}, cooldownError(wait)
		}
	}
	f, err := outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) (fired, []supplyplan.Record, error) {
		cfg := st.AlertConfig()
		var recs []supplyplan.Record
		if gate == nil {
			ok, wait, next := supplyplan.GateTrigger(st.Gate[key], cfg.Cooldown(), now, bypass)
			if !ok {
				return fired{}, nil, cooldownError(wait)
			}
			recs = append(recs, supplyplan.Put(supplyplan.KindAlertGate, key, next))
		}
		a := supplyplan.NewAlert(cfg, kind, supplyplan.Severity(*in.Severity), strings.TrimSpace(*in.Message),
			product, location, channel, "manual", nil, now)
		ds, arecs, err := st.RecordAlert(a, pol, now)
		if err != nil {
			return fired{}, nil, err
		}
		for _, r := range arecs {
			if r.Kind == supplyplan.KindAlertHistory {
				a = *r.Value.(*supplyplan.Alert)
			}
		}
		return fired{a, ds}, append(recs, arecs...), nil
	})
	if err != nil {
		return supplyplan.Alert{}, err
	}
	s.webhooks.schedule(p.OrgID, f.deliveries)
	return f.alert, nil
}

func cooldownError(wait time.Duration) error {
	return &supplyplan.Error{Code: supplyplan.ERATELIMITED, RetryAfter: wait,
		Message: fmt.Sprintf("An alert of the same type, product, location and channel fired within the cooldown; retry in %s or set bypassCooldown", wait.Round(time.Second))}
}

// EvaluateAlerts evaluates the tenant's alerts now.
func (s *Alerts) EvaluateAlerts(ctx context.Context, p supplyplan.Principal) (supplyplan.EvalReport, error) {
	return s.eval.evaluateNow(ctx, p.OrgID)
}
