package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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
