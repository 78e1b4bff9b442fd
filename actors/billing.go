package actors

import (
	"context"

	"github.com/supplyplan/supplyplan"
)

// Billing is the billing service: the payment provider's events, applied by the platform actor to
// an organization's plan and entitlements, and the billing record they leave.
type Billing struct {
	core     *Core
	plans    supplyplan.PlansConfig
	webhooks *Webhooks // relays subscription.updated and ops.payment_failed
}

// NewBilling returns the billing service (plans: supplyplan.DefaultPlans when empty).
func NewBilling(core *Core, plans supplyplan.PlansConfig, webhooks *Webhooks) *Billing {
	if plans.Plans == nil {
		plans = supplyplan.DefaultPlans()
	}
	return &Billing{core: core, plans: plans, webhooks: webhooks}
}

var _ supplyplan.BillingService = (*Billing)(nil)

// HandlePaymentEvent applies a verified payment-provider event in the platform actor; it returns
// once the effect (billing record, entitlements, audit log, pending events) is durable.
func (s *Billing) HandlePaymentEvent(ctx context.Context, ev supplyplan.PaymentEvent) (supplyplan.PaymentResult, error) {
	now := supplyplan.Now()
	type out struct {
		res    supplyplan.PaymentResult
		events []supplyplan.DomainEvent
	}
	o, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (out, []supplyplan.Record, error) {
		res, recs, err := st.ApplyPaymentEvent(ev, s.plans, now)
		return out{res, pendingEvents(recs)}, recs, err
	})
	if err != nil {
		return o.res, err
	}
	if o.res.OpsAlert != "" {
		s.core.log.Warn("operations alert", "kind", supplyplan.OpsPaymentFailed, "org", o.res.OrganizationID, "message", o.res.OpsAlert)
	}
	s.webhooks.relayPlatform(o.events)
	return o.res, nil
}

// GetBilling returns an organization's billing record and audit log.
func (s *Billing) GetBilling(ctx context.Context, orgID string) (supplyplan.BillingView, error) {
	v, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (supplyplan.BillingView, []supplyplan.Record, error) {
		v, err := st.BillingOf(orgID)
		return v, nil, err
	})
	if err != nil {
		return v, err
	}
	u, err := s.core.loopUsage(ctx, orgID, supplyplan.Now(), s.LoopCommitment(orgID))
	if err != nil {
		return v, err
	}
	v.LoopUsage = &u
	return v, nil
}

// LoopCommitment is an organization's monthly commitment of loop transitions: its plan's.
func (s *Billing) LoopCommitment(orgID string) int64 {
	o, ok := s.core.index.Load().orgs[orgID]
	if !ok {
		return 0
	}
	return s.plans.LoopCommitment(o.Plan)
}
