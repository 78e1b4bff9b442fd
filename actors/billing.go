package actors

import (
	"context"

	"github.com/supplyplan/supplyplan"
)

// HandlePaymentEvent applies a verified payment-provider event in the platform actor; it returns
// once the effect (billing record, entitlements, audit log, pending events) is durable.
func (s *System) HandlePaymentEvent(ctx context.Context, ev supplyplan.PaymentEvent) (supplyplan.PaymentResult, error) {
	now := supplyplan.Now()
	type out struct {
		res    supplyplan.PaymentResult
		events []supplyplan.DomainEvent
	}
	o, err := platformTx(ctx, s, func(st *supplyplan.PlatformState) (out, []supplyplan.Record, error) {
		res, recs, err := st.ApplyPaymentEvent(ev, s.cfg.Outbound.Plans, now)
		var evs []supplyplan.DomainEvent
		for _, r := range recs {
			if r.Kind == supplyplan.KindPendingEvent && !r.Del {
				evs = append(evs, *r.Value.(*supplyplan.DomainEvent))
			}
		}
		return out{res, evs}, recs, err
	})
	if err != nil {
		return o.res, err
	}
	if o.res.OpsAlert != "" {
		s.log.Warn("operations alert", "kind", supplyplan.OpsPaymentFailed, "org", o.res.OrganizationID, "message", o.res.OpsAlert)
	}
	for _, e := range o.events {
		s.relay.enqueue(relayItem{fromPlatform: true, ev: e})
	}
	return o.res, nil
}

// GetBilling returns an organization's billing record and audit log.
func (s *System) GetBilling(ctx context.Context, orgID string) (supplyplan.BillingView, error) {
	return platformTx(ctx, s, func(st *supplyplan.PlatformState) (supplyplan.BillingView, []supplyplan.Record, error) {
		v, err := st.BillingOf(orgID)
		return v, nil, err
	})
}

var _ supplyplan.BillingService = (*System)(nil)
