package actors

import (
	"context"
	"fmt"

	"github.com/supplyplan/supplyplan"
)

// Signals is the sink of live demand signals (the Kafka consumer and the in-process stream of
// POST /api/demand/signals both feed it). Its part of the signal's write path (described once, in
// the root package's signal_path.go): the tenant's state resolves what the signals refer to, the
// demand store writes them (it owns the order of demand writes and their deduplication), then the
// tenant's forecasts and alerts follow.
type Signals struct {
	core      *Core
	demand    supplyplan.DemandStore
	forecasts *Forecasts // invalidated by applied signals (nil: none kept)
	alerts    *Alerts    // evaluated again after applied signals (nil: none)
}

// NewSignals returns the signal sink.
func NewSignals(core *Core, demand supplyplan.DemandStore, forecasts *Forecasts, alerts *Alerts) *Signals {
	return &Signals{core: core, demand: demand, forecasts: forecasts, alerts: alerts}
}

var _ supplyplan.SignalSink = (*Signals)(nil)

// ApplySignals implements supplyplan.SignalSink for signals validated where they entered
// (supplyplan.NormalizeSignal): a read of the tenant's state resolves their product and location
// (supplyplan.TenantState.ResolveSignals), then the demand store adds the resolved ones to their
// weeks, durably, deduplicated by signal id.
func (s *Signals) ApplySignals(ctx context.Context, orgID string, signals []supplyplan.DemandSignal) ([]supplyplan.SignalOutcome, error) {
	out := make([]supplyplan.SignalOutcome, len(signals))
	if !s.core.hasOrg(orgID) {
		for i := range out {
			out[i] = supplyplan.Rejected(supplyplan.RejectUnknownTenant, fmt.Sprintf("no organization %q", orgID))
		}
		return out, nil
	}
	type resolved struct {
		valid []supplyplan.DemandSignal
		slot  []int
	}
	r, err := tenantRead(ctx, s.core, orgID, func(st *supplyplan.TenantState) (resolved, error) {
		valid, slot := st.ResolveSignals(signals, out)
		return resolved{valid, slot}, nil
	})
	if err != nil {
		return nil, err
	}
	if len(r.valid) == 0 {
		return out, nil
	}
	if s.demand == nil {
		return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "No demand store configured")
	}
	// Concurrent calls for one tenant are fine: the store orders and deduplicates the writes of an
	// organization itself (see signal_path.go in the root package).
	writes, err := s.demand.AddSignals(ctx, orgID, r.valid)
	if err != nil {
		return nil, fmt.Errorf("add demand signals: %w", err)
	}
	if supplyplan.SignalOutcomes(out, r.slot, writes) > 0 {
		if s.forecasts != nil {
			s.forecasts.demandChanged(orgID)
		}
		if s.alerts != nil {
			s.alerts.demandSignalled(orgID)
		}
	}
	return out, nil
}
