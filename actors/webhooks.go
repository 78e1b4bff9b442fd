package actors

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/supplyplan/supplyplan"
)

// Webhooks is the outbound delivery service: a tenant's webhook endpoints and their delivery log
// (kept by the tenant's outbound actor), the relay that turns the domain events waiting in the
// tenants' and the platform's outboxes into deliveries (relay.go), and the delivery workers
// (deliveries.go) that send every delivery, alerts' included, outside the actors.
type Webhooks struct {
	core       *Core
	cfg        *OutboundConfig
	deliveries *deliveryManager
	relay      *eventRelay
}

// NewWebhooks returns the delivery service; Open starts its workers and its relay.
func NewWebhooks(core *Core, cfg OutboundConfig) *Webhooks {
	cfg.defaults()
	s := &Webhooks{core: core, cfg: &cfg}
	s.deliveries = newDeliveryManager(core, s.cfg)
	s.relay = newEventRelay(s)
	return s
}

var _ supplyplan.WebhookService = (*Webhooks)(nil)

// Open starts the outbound actors of every owner, schedules the deliveries that were due before a
// restart, and starts the delivery workers and the relay.
func (s *Webhooks) Open(ctx context.Context) error {
	if err := s.resume(ctx, append([]string{supplyplan.PlatformOwner}, s.core.orgs()...)); err != nil {
		return err
	}
	s.core.onRestore("deliveries", s.resume)
	s.deliveries.start()
	s.relay.start()
	return nil
}

// resume schedules the pending deliveries of owners (at start, and in distributed mode when
// their partition is restored here).
func (s *Webhooks) resume(ctx context.Context, owners []string) error {
	for _, o := range owners {
		pending, err := outboundTx(ctx, s.core, o, func(st *supplyplan.OutboundState) ([]supplyplan.Delivery, []supplyplan.Record, error) {
			return st.PendingDeliveries(), nil, nil
		})
		if s.core.servedElsewhere(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("load outbound state of %s: %w", o, err)
		}
		if len(pending) > 0 {
			s.core.log.Info("resuming deliveries", "owner", o, "pending", len(pending))
		}
		s.deliveries.schedule(o, pending)
	}
	return nil
}

// Close stops the relay and the delivery workers (an attempt in flight finishes or is abandoned;
// its delivery stays pending and is retried after the restart).
func (s *Webhooks) Close(ctx context.Context) error {
	s.relay.close()
	s.deliveries.close(ctx)
	return nil
}

// HandleEvent receives every domain event from the bus and hands it to the relay. It never blocks.
func (s *Webhooks) HandleEvent(e supplyplan.DomainEvent) { s.relay.notify(e) }

// schedule queues deliveries an outbound actor just made durable.
func (s *Webhooks) schedule(owner string, ds []supplyplan.Delivery) { s.deliveries.schedule(owner, ds) }

// relayPlatform hands events just written to the platform's outbox to the relay (the relay's sweep
// catches them after a crash).
func (s *Webhooks) relayPlatform(evs []supplyplan.DomainEvent) {
	for _, e := range evs {
		s.relay.enqueue(relayItem{fromPlatform: true, ev: e})
	}
}

// policies are the retry policies of new deliveries.
func (s *Webhooks) policies() supplyplan.Policies { return s.cfg.policies() }

// ListEndpoints lists the tenant's webhook endpoints (without secrets).
func (s *Webhooks) ListEndpoints(ctx context.Context, p supplyplan.Principal) ([]supplyplan.WebhookEndpoint, error) {
	return outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) ([]supplyplan.WebhookEndpoint, []supplyplan.Record, error) {
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
func (s *Webhooks) checkDestination(ctx context.Context, field, raw string) error {
	raw = strings.TrimSpace(raw)
	if msg := supplyplan.CheckHTTPURL(raw); msg != "" {
		return supplyplan.Invalid(field, "%s", msg)
	}
	if s.cfg.Sender == nil {
		return nil
	}
	return s.cfg.Sender.CheckURL(ctx, field, raw)
}

func (s *Webhooks) checkEndpointURL(ctx context.Context, in supplyplan.WebhookEndpointInput) error {
	if in.URL == nil {
		return nil
	}
	return s.checkDestination(ctx, "url", *in.URL)
}

// CreateEndpoint registers a webhook endpoint; its secret is returned once.
func (s *Webhooks) CreateEndpoint(ctx context.Context, p supplyplan.Principal, in supplyplan.WebhookEndpointInput) (supplyplan.CreatedEndpoint, error) {
	now := supplyplan.Now()
	if _, err := in.Apply(supplyplan.WebhookEndpoint{}, true, now); err != nil {
		return supplyplan.CreatedEndpoint{}, err
	}
	if err := s.checkEndpointURL(ctx, in); err != nil {
		return supplyplan.CreatedEndpoint{}, err
	}
	return outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.CreatedEndpoint, []supplyplan.Record, error) {
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
func (s *Webhooks) GetEndpoint(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.WebhookEndpoint, error) {
	return outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.WebhookEndpoint, []supplyplan.Record, error) {
		e, ok := st.Endpoints[id]
		if !ok {
			return supplyplan.WebhookEndpoint{}, nil, supplyplan.NotFound("Webhook endpoint")
		}
		return e.View(), nil, nil
	})
}

// UpdateEndpoint changes the fields present in in.
func (s *Webhooks) UpdateEndpoint(ctx context.Context, p supplyplan.Principal, id string, in supplyplan.WebhookEndpointInput) (supplyplan.WebhookEndpoint, error) {
	if err := s.checkEndpointURL(ctx, in); err != nil {
		return supplyplan.WebhookEndpoint{}, err
	}
	now := supplyplan.Now()
	return outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.WebhookEndpoint, []supplyplan.Record, error) {
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
func (s *Webhooks) DeleteEndpoint(ctx context.Context, p supplyplan.Principal, id string) error {
	_, err := outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) (struct{}, []supplyplan.Record, error) {
		if _, ok := st.Endpoints[id]; !ok {
			return struct{}{}, nil, supplyplan.NotFound("Webhook endpoint")
		}
		return struct{}{}, []supplyplan.Record{supplyplan.Del(supplyplan.KindWebhookEndpoint, id)}, nil
	})
	return err
}

// RotateEndpointSecret replaces the secret; the previous one keeps signing for 24 hours.
func (s *Webhooks) RotateEndpointSecret(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.CreatedEndpoint, error) {
	now := supplyplan.Now()
	return outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.CreatedEndpoint, []supplyplan.Record, error) {
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
func (s *Webhooks) ListDeliveries(ctx context.Context, p supplyplan.Principal, endpointID string, f supplyplan.DeliveryFilter) (supplyplan.DeliveryPage, error) {
	return outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.DeliveryPage, []supplyplan.Record, error) {
		if _, ok := st.Endpoints[endpointID]; !ok {
			return supplyplan.DeliveryPage{}, nil, supplyplan.NotFound("Webhook endpoint")
		}
		return st.ListDeliveries(endpointID, f), nil, nil
	})
}

// RetryDelivery makes a delivery of an enabled endpoint due now (manual redelivery).
func (s *Webhooks) RetryDelivery(ctx context.Context, p supplyplan.Principal, endpointID, deliveryID string) (supplyplan.Delivery, error) {
	now := supplyplan.Now()
	d, err := outboundTx(ctx, s.core, p.OrgID, func(st *supplyplan.OutboundState) (supplyplan.Delivery, []supplyplan.Record, error) {
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
