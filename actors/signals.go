package actors

import (
	"context"
	"fmt"

	"github.com/supplyplan/supplyplan"
)

// ApplySignals implements supplyplan.SignalSink: each batch goes to its tenant actor, which checks
// the product and location of every signal (a product may be named by id or sku), then the valid
// signals are added to their weeks in the demand store, durably, deduplicated by signal id.
func (s *System) ApplySignals(ctx context.Context, orgID string, signals []supplyplan.DemandSignal) ([]supplyplan.SignalOutcome, error) {
	out := make([]supplyplan.SignalOutcome, len(signals))
	if _, ok := s.Organization(orgID); !ok {
		for i := range out {
			out[i] = supplyplan.Rejected(supplyplan.RejectUnknownTenant, fmt.Sprintf("no organization %q", orgID))
		}
		return out, nil
	}
	type checked struct {
		valid []supplyplan.DemandSignal
		slot  []int
	}
	c, err := tenantTx(ctx, s, orgID, func(st *supplyplan.TenantState) (checked, []supplyplan.Record, error) {
		var r checked
		for i, sg := range signals {
			p, ok := st.ProductBySKU(sg.SKU)
			if !ok {
				out[i] = supplyplan.Rejected(supplyplan.RejectUnknownProduct, fmt.Sprintf("unknown product %q", sg.SKU))
				continue
			}
			if _, ok := st.Locations[sg.Location]; !ok {
				out[i] = supplyplan.Rejected(supplyplan.RejectUnknownLocation, fmt.Sprintf("unknown location %q", sg.Location))
				continue
			}
			sg.SKU = p.ID
			r.valid = append(r.valid, sg)
			r.slot = append(r.slot, i)
		}
		return r, nil, nil
	})
	if err != nil {
		return nil, err
	}
	if len(c.valid) == 0 {
		return out, nil
	}
	if s.cfg.Demand == nil {
		return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "No demand store configured")
	}
	// Concurrent calls for one tenant are fine: the embedded store group-commits them and dedups in
	// its committer; the ClickHouse store serializes its read-then-write per organization itself.
	fresh, err := s.cfg.Demand.AddSignals(ctx, orgID, c.valid)
	if err != nil {
		return nil, fmt.Errorf("add demand signals: %w", err)
	}
	applied := 0
	for j, i := range c.slot {
		if fresh[j] {
			out[i] = supplyplan.SignalOutcome{Status: supplyplan.SignalApplied}
			applied++
		} else {
			out[i] = supplyplan.SignalOutcome{Status: supplyplan.SignalDuplicate}
		}
	}
	if applied > 0 {
		s.fc.bumpDemand(orgID)
		s.signalsApplied(orgID, c.valid, fresh)
	}
	return out, nil
}

// signalsApplied reacts to live demand: the tenant's alerts are evaluated again (spikes,
// stockout risk, and every rule whose demand rate moved), debounced by SignalDebounce so that a
// steady stream of signals costs one evaluation per interval.
func (s *System) signalsApplied(orgID string, _ []supplyplan.DemandSignal, _ []bool) {
	s.alerts.scheduleIn(orgID, s.cfg.Outbound.SignalDebounce)
}

var _ supplyplan.SignalSink = (*System)(nil)
