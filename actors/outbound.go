package actors

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
)

// OutboundConfig configures alerts, outbound webhooks and billing.
type OutboundConfig struct {
	// Sender performs deliveries (HTTP and SMTP); nil records every attempt as failed.
	Sender supplyplan.Sender
	// Gate keeps cooldown state outside the process (Redis); nil keeps it in the outbound journal.
	Gate       supplyplan.AlertGate
	Thresholds supplyplan.AlertThresholds
	Plans      supplyplan.PlansConfig
	// Retry policies of webhook (endpoints, fixed URLs) and alert deliveries.
	WebhookRetry, AlertRetry supplyplan.RetryPolicy
	// Workers bounds the deliveries in flight (default 16).
	Workers int
	// AttemptTimeout bounds one attempt (default 10 s).
	AttemptTimeout time.Duration
	// EvalInterval re-evaluates every tenant's alerts on a schedule (default 15 min; negative:
	// never). EvalDebounce coalesces the evaluations that data changes ask for (default 500 ms).
	EvalInterval time.Duration
	EvalDebounce time.Duration
	// SignalDebounce is the delay of the evaluation live demand signals ask for (default 5 s).
	SignalDebounce time.Duration
	// FederationSecret (whsec_...) signs federation events to merchant webhook URLs.
	FederationSecret string
	// OpsAlertURL is a chat incoming hook receiving operations alerts (payment failures).
	OpsAlertURL string
	// SweepInterval re-reads the outboxes and prunes old outbound state (default 1 min).
	SweepInterval time.Duration
}

func (c *OutboundConfig) defaults() {
	if c.Thresholds.RateWeeks == 0 {
		c.Thresholds = supplyplan.DefaultAlertThresholds()
	}
	if c.Plans.Plans == nil {
		c.Plans = supplyplan.DefaultPlans()
	}
	if c.WebhookRetry.MaxAttempts == 0 {
		c.WebhookRetry = supplyplan.DefaultWebhookRetry
	}
	if c.AlertRetry.MaxAttempts == 0 {
		c.AlertRetry = supplyplan.DefaultAlertRetry
	}
	if c.Workers <= 0 {
		c.Workers = 16
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = 10 * time.Second
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
	if c.SweepInterval <= 0 {
		c.SweepInterval = time.Minute
	}
}

func (c *OutboundConfig) policies() supplyplan.Policies {
	return supplyplan.Policies{Webhook: c.WebhookRetry, Alert: c.AlertRetry}
}

func outboundStream(owner string) string { return "outbound-" + owner }

// outbound returns the outbound actor of an owner (an organization id or "platform").
func (s *System) outbound(owner string) (*actor.PID, error) {
	if pid, ok := s.outbounds.Load(owner); ok {
		return pid.(*actor.PID), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "The service is shutting down")
	}
	if pid, ok := s.outbounds.Load(owner); ok {
		return pid.(*actor.PID), nil
	}
	if owner != supplyplan.PlatformOwner {
		if _, ok := s.index.Load().orgs[owner]; !ok {
			return nil, supplyplan.NotFound("Organization")
		}
	}
	pid := s.engine.Spawn(func() actor.Receiver {
		return &durable[*supplyplan.OutboundState]{
			stream: outboundStream(owner), journal: s.cfg.Journal, log: s.log, snapEvery: s.cfg.SnapshotEvery, now: s.cfg.Now,
			newState: func() *supplyplan.OutboundState { return supplyplan.NewOutboundState(owner) },
		}
	}, "outbound", actor.WithID(owner), actor.WithMaxRestarts(1<<30))
	s.outbounds.Store(owner, pid)
	return pid, nil
}

// outboundTx runs fn in the outbound actor of owner.
func outboundTx[T any](ctx context.Context, s *System, owner string, fn func(*supplyplan.OutboundState) (T, []supplyplan.Record, error)) (T, error) {
	pid, err := s.outbound(owner)
	if err != nil {
		var zero T
		return zero, err
	}
	return ask(ctx, s.engine, pid, fn)
}

// openOutbound starts the outbound actors of every owner and the delivery, relay and
// evaluation machinery. Deliveries that were due before a restart are scheduled again.
func (s *System) openOutbound(ctx context.Context, orgs []string) error {
	owners := append([]string{supplyplan.PlatformOwner}, orgs...)
	for _, o := range owners {
		pending, err := outboundTx(ctx, s, o, func(st *supplyplan.OutboundState) ([]supplyplan.Delivery, []supplyplan.Record, error) {
			return st.PendingDeliveries(), nil, nil
		})
		if err != nil {
			return fmt.Errorf("load outbound state of %s: %w", o, err)
		}
		if len(pending) > 0 {
			s.log.Info("resuming deliveries", "owner", o, "pending", len(pending))
		}
		s.deliveries.schedule(o, pending)
	}
	s.deliveries.start()
	s.relay.start()
	s.alerts.start()
	return nil
}

// closeOutbound stops evaluation, the relay and the delivery workers (an attempt in flight
// finishes or is abandoned; its delivery stays pending and is retried after the restart).
func (s *System) closeOutbound(ctx context.Context) {
	s.alerts.close()
	s.relay.close()
	s.deliveries.close(ctx)
}

// HandleEvent receives every domain event from the bus: it hands deliverable events to the
// relay and asks for a re-evaluation of the tenant's alerts. It never blocks.
func (s *System) HandleEvent(e supplyplan.DomainEvent) {
	s.relay.notify(e)
	if e.OrganizationID != "" && e.OrganizationID != supplyplan.PlatformOwner && evaluationTrigger(e.Type) {
		s.alerts.schedule(e.OrganizationID)
	}
}

// evaluationTrigger reports whether an event may change alert conditions: everything except
// what alerts, billing and federation produce themselves.
func evaluationTrigger(t string) bool {
	for _, p := range []string{"alert.", "ops.", "subscription.", "merchant.", "demand_signal.spike", "demand_signal.stockout"} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	return true
}

// GetAlertConfig returns the tenant's alert configuration (the default one until stored).
func (s *System) GetAlertConfig(ctx context.Context, p supplyplan.Principal) (supplyplan.AlertConfig, error) {
	return outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.AlertConfig, []supplyplan.Record, error) {
		return st.AlertConfig(), nil, nil
	})
}

// PutAlertConfig replaces the tenant's alert configuration.
func (s *System) PutAlertConfig(ctx context.Context, p supplyplan.Principal, in supplyplan.AlertConfigInput) (supplyplan.AlertConfig, error) {
	now := supplyplan.Now()
	if _, err := in.ResolveConfig(supplyplan.DefaultAlertConfig(), now); err != nil {
		return supplyplan.AlertConfig{}, err
	}
	if in.Destinations != nil {
		for i, d := range *in.Destinations {
			if d.Type != nil && d.Value != nil && (*d.Type == string(supplyplan.DestWebhook) || *d.Type == string(supplyplan.DestChat)) {
				if err := s.checkDestination(ctx, fmt.Sprintf("config.destinations[%d].value", i), *d.Value); err != nil {
					return supplyplan.AlertConfig{}, err
				}
			}
		}
	}
	return outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.AlertConfig, []supplyplan.Record, error) {
		cfg, err := in.ResolveConfig(st.AlertConfig(), now)
		if err != nil {
			return supplyplan.AlertConfig{}, nil, err
		}
		return cfg, []supplyplan.Record{supplyplan.Put(supplyplan.KindAlertConfig, "config", &cfg)}, nil
	})
}

// ListAlerts returns a page of the tenant's alert history.
func (s *System) ListAlerts(ctx context.Context, p supplyplan.Principal, f supplyplan.AlertFilter) (supplyplan.AlertPage, error) {
	return outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.AlertPage, []supplyplan.Record, error) {
		return supplyplan.PageAlerts(st.Alerts, f), nil, nil
	})
}

// TriggerAlert fires a manual alert: the product and location must exist; the cooldown of the
// same (type, product, location, channel) applies unless bypassed.
func (s *System) TriggerAlert(ctx context.Context, p supplyplan.Principal, in supplyplan.TriggerInput) (supplyplan.Alert, error) {
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
	resolved, err := tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (string, []supplyplan.Record, error) {
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
	pol := s.cfg.Outbound.policies()
	type fired struct {
		alert      supplyplan.Alert
		deliveries []supplyplan.Delivery
	}
	gate := s.cfg.Outbound.Gate
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
	f, err := outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) (fired, []supplyplan.Record, error) {
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
	s.deliveries.schedule(p.OrgID, f.deliveries)
	return f.alert, nil
}

func cooldownError(wait time.Duration) error {
	return &supplyplan.Error{Code: supplyplan.ERATELIMITED, RetryAfter: wait,
		Message: fmt.Sprintf("An alert of the same type, product, location and channel fired within the cooldown; retry in %s or set bypassCooldown", wait.Round(time.Second))}
}

// EvaluateAlerts evaluates the tenant's alerts now.
func (s *System) EvaluateAlerts(ctx context.Context, p supplyplan.Principal) (supplyplan.EvalReport, error) {
	return s.alerts.evaluateNow(ctx, p.OrgID)
}

// ListEndpoints lists the tenant's webhook endpoints (without secrets).
func (s *System) ListEndpoints(ctx context.Context, p supplyplan.Principal) ([]supplyplan.WebhookEndpoint, error) {
	return outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) ([]supplyplan.WebhookEndpoint, []supplyplan.Record, error) {
		out := []supplyplan.WebhookEndpoint{}
		for _, e := range st.Endpoints {
			out = append(out, e.View())
		}
		slices.SortFunc(out, func(a, b supplyplan.WebhookEndpoint) int { return strings.Compare(a.ID, b.ID) })
		return out, nil, nil
	})
}

// checkDestination is the one check of every URL the service will POST to on a tenant's or
// merchant's behalf (alert WEBHOOK and CHAT destinations, webhook endpoints, merchant
// webhookUrl): well-formed (supplyplan.CheckHTTPURL), then globally reachable by the sender's
// address guard unless the operator allowed private destinations. Errors name field.
func (s *System) checkDestination(ctx context.Context, field, raw string) error {
	raw = strings.TrimSpace(raw)
	if msg := supplyplan.CheckHTTPURL(raw); msg != "" {
		return supplyplan.Invalid(field, "%s", msg)
	}
	if s.cfg.Outbound.Sender == nil {
		return nil
	}
	return s.cfg.Outbound.Sender.CheckURL(ctx, field, raw)
}

func (s *System) checkEndpointURL(ctx context.Context, in supplyplan.WebhookEndpointInput) error {
	if in.URL == nil {
		return nil
	}
	return s.checkDestination(ctx, "url", *in.URL)
}

// CreateEndpoint registers a webhook endpoint; its secret is returned once.
func (s *System) CreateEndpoint(ctx context.Context, p supplyplan.Principal, in supplyplan.WebhookEndpointInput) (supplyplan.CreatedEndpoint, error) {
	now := supplyplan.Now()
	if _, err := in.Apply(supplyplan.WebhookEndpoint{}, true, now); err != nil {
		return supplyplan.CreatedEndpoint{}, err
	}
	if err := s.checkEndpointURL(ctx, in); err != nil {
		return supplyplan.CreatedEndpoint{}, err
	}
	return outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.CreatedEndpoint, []supplyplan.Record, error) {
		if len(st.Endpoints) >= supplyplan.MaxWebhookEndpoints {
			return supplyplan.CreatedEndpoint{}, nil, supplyplan.Invalid("url", "an organization has at most %d endpoints", supplyplan.MaxWebhookEndpoints)
		}
		e, err := in.Apply(supplyplan.WebhookEndpoint{}, true, now)
		if err != nil {
			return supplyplan.CreatedEndpoint{}, nil, err
		}
		return supplyplan.CreatedEndpoint{Endpoint: e.View(), Secret: e.Secret}, []supplyplan.Record{supplyplan.Put(supplyplan.KindWebhookEndpoint, e.ID, &e)}, nil
	})
}

// GetEndpoint returns one endpoint.
func (s *System) GetEndpoint(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.WebhookEndpoint, error) {
	return outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.WebhookEndpoint, []supplyplan.Record, error) {
		e, ok := st.Endpoints[id]
		if !ok {
			return supplyplan.WebhookEndpoint{}, nil, supplyplan.NotFound("Webhook endpoint")
		}
		return e.View(), nil, nil
	})
}

// UpdateEndpoint changes the fields present in in.
func (s *System) UpdateEndpoint(ctx context.Context, p supplyplan.Principal, id string, in supplyplan.WebhookEndpointInput) (supplyplan.WebhookEndpoint, error) {
	if err := s.checkEndpointURL(ctx, in); err != nil {
		return supplyplan.WebhookEndpoint{}, err
	}
	now := supplyplan.Now()
	return outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.WebhookEndpoint, []supplyplan.Record, error) {
		cur, ok := st.Endpoints[id]
		if !ok {
			return supplyplan.WebhookEndpoint{}, nil, supplyplan.NotFound("Webhook endpoint")
		}
		e, err := in.Apply(*cur, false, now)
		if err != nil {
			return supplyplan.WebhookEndpoint{}, nil, err
		}
		return e.View(), []supplyplan.Record{supplyplan.Put(supplyplan.KindWebhookEndpoint, e.ID, &e)}, nil
	})
}

// DeleteEndpoint removes an endpoint; its pending deliveries are abandoned.
func (s *System) DeleteEndpoint(ctx context.Context, p supplyplan.Principal, id string) error {
	_, err := outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) (struct{}, []supplyplan.Record, error) {
		if _, ok := st.Endpoints[id]; !ok {
			return struct{}{}, nil, supplyplan.NotFound("Webhook endpoint")
		}
		return struct{}{}, []supplyplan.Record{supplyplan.Del(supplyplan.KindWebhookEndpoint, id)}, nil
	})
	return err
}

// RotateEndpointSecret replaces the secret; the previous one keeps signing for 24 hours.
func (s *System) RotateEndpointSecret(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.CreatedEndpoint, error) {
	now := supplyplan.Now()
	return outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.CreatedEndpoint, []supplyplan.Record, error) {
		cur, ok := st.Endpoints[id]
		if !ok {
			return supplyplan.CreatedEndpoint{}, nil, supplyplan.NotFound("Webhook endpoint")
		}
		e := *cur
		until := now.Add(supplyplan.SecretRotationOverlap)
		e.PreviousSecret, e.PreviousSecretExpiresAt = e.Secret, &until
		e.Secret, e.UpdatedAt = supplyplan.NewWebhookSecret(), now
		return supplyplan.CreatedEndpoint{Endpoint: e.View(), Secret: e.Secret}, []supplyplan.Record{supplyplan.Put(supplyplan.KindWebhookEndpoint, e.ID, &e)}, nil
	})
}

// ListDeliveries returns a page of an endpoint's delivery log.
func (s *System) ListDeliveries(ctx context.Context, p supplyplan.Principal, endpointID string, f supplyplan.DeliveryFilter) (supplyplan.DeliveryPage, error) {
	return outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.DeliveryPage, []supplyplan.Record, error) {
		if _, ok := st.Endpoints[endpointID]; !ok {
			return supplyplan.DeliveryPage{}, nil, supplyplan.NotFound("Webhook endpoint")
		}
		return st.ListDeliveries(endpointID, f), nil, nil
	})
}

// RetryDelivery makes a delivery of an enabled endpoint due now (manual redelivery).
func (s *System) RetryDelivery(ctx context.Context, p supplyplan.Principal, endpointID, deliveryID string) (supplyplan.Delivery, error) {
	now := supplyplan.Now()
	d, err := outboundTx(ctx, s, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.Delivery, []supplyplan.Record, error) {
		ep, ok := st.Endpoints[endpointID]
		if !ok {
			return supplyplan.Delivery{}, nil, supplyplan.NotFound("Webhook endpoint")
		}
		d, ok := st.Deliveries[deliveryID]
		if !ok || d.Target != supplyplan.TargetEndpoint || d.EndpointID != endpointID {
			return supplyplan.Delivery{}, nil, supplyplan.NotFound("Delivery")
		}
		if !ep.Enabled {
			return supplyplan.Delivery{}, nil, supplyplan.Conflict("The endpoint is disabled; enable it before redelivering")
		}
		return st.RedeliverNow(deliveryID, now)
	})
	if err != nil {
		return d, err
	}
	s.deliveries.schedule(p.OrgID, []supplyplan.Delivery{d})
	return d, nil
}

var (
	_ supplyplan.AlertService   = (*System)(nil)
	_ supplyplan.WebhookService = (*System)(nil)
)
