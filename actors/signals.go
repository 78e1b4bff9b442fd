package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/supplyplan/supplyplan"
)

// Signals is the sink of live demand signals (the Kafka consumer and the in-process stream of
// POST /api/demand/signals both feed it): the tenant's actor checks what the signals refer to,
// the demand store adds them to their weeks, and the tenant's forecasts and alerts follow.
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

// ApplySignals implements supplyplan.SignalSink: each batch goes to its tenant actor, which checks
// the product and location of every signal (a product may be named by id or sku), then the valid
// signals are added to their weeks in the demand store, durably, deduplicated by signal id.
func (s *Signals) ApplySignals(ctx context.Context, orgID string, signals []supplyplan.DemandSignal) ([]supplyplan.SignalOutcome, error) {
	out := make([]supplyplan.SignalOutcome, len(signals))
	if !s.core.hasOrg(orgID) {
		for i := range out {
			out[i] = supplyplan.Rejected(supplyplan.RejectUnknownTenant, fmt.Sprintf("no organization %q", orgID))
		}
		return out, nil
	}
	type checked struct {
		valid []supplyplan.DemandSignal
		slot  []int
	}
	c, err := tenantTx(ctx, s.core, orgID, func(st *supplyplan.TenantState) (checked, []supplyplan.Record, error) {
		var r checked
		for i, sg := range signals {
			// Callers validated the signal already; checked again because one signal the demand store
			// refuses would fail the whole batch, and a Kafka batch would then be retried for ever.
			if sg.OrganizationID == "" {
				sg.OrganizationID = orgID
			}
			if err := supplyplan.NormalizeSignal(&sg); err != nil || sg.OrganizationID != orgID {
				msg := "organizationId does not match the organization"
				if err != nil {
					msg = supplyplan.ErrorMessage(err) + ": " + fieldList(err)
				}
				out[i] = supplyplan.Rejected(supplyplan.RejectInvalidSignal, msg)
				continue
			}
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
	if s.demand == nil {
		return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "No demand store configured")
	}
	// Concurrent calls for one tenant are fine: the embedded store group-commits them and dedups in
	// its committer; the ClickHouse store serializes its read-then-write per organization itself.
	fresh, err := s.demand.AddSignals(ctx, orgID, c.valid)
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
		if s.forecasts != nil {
			s.forecasts.demandChanged(orgID)
		}
		if s.alerts != nil {
			s.alerts.demandSignalled(orgID)
		}
	}
	return out, nil
}

// fieldList renders a VALIDATION_ERROR's details as "field: problem; field: problem".
func fieldList(err error) string {
	var e *supplyplan.Error
	if !errors.As(err, &e) {
		return ""
	}
	keys := make([]string, 0, len(e.Details))
	for k := range e.Details {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+strings.Join(e.Details[k], ", "))
	}
	return strings.Join(parts, "; ")
}
