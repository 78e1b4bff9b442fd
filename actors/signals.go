package actors

import (
	"context"
	"fmt"
	"sync"

	"github.com/supplyplan/supplyplan"
)

// signalLocks serializes demand-signal writes per organization: the ClickHouse store's dedup is a
// read-then-write that needs one writer per tenant.
type signalLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

func (l *signalLocks) of(org string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*sync.Mutex{}
	}
	m := l.m[org]
	if m == nil {
		m = &sync.Mutex{}
		l.m[org] = m
	}
	return m
}

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
	lock := s.signals.of(orgID)
	lock.Lock()
	fresh, err := s.cfg.Demand.AddSignals(ctx, orgID, c.valid)
	lock.Unlock()
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

// signalsApplied is the hook for what reacts to live demand (alerts add spike detection here).
func (s *System) signalsApplied(orgID string, signals []supplyplan.DemandSignal, fresh []bool) {}

var _ supplyplan.SignalSink = (*System)(nil)
