package supplyplan

import (
	"encoding/json"
	"fmt"
)

// TenantState is everything one organization owns that lives in its journal. It is owned by the
// tenant's actor: only that actor reads or changes it. Values stored in its maps are never mutated
// in place (a change stores a new value), so a copy handed out stays valid.
//
// It is composed of sub-states, one per part of the domain, each in its own file with its methods:
// each stores the records of its kinds (one Apply, one way of storing a record: putValue) and keeps
// its own derived indexes. The sub-states are embedded, so their fields and methods are the tenant
// state's, and a snapshot is one flat JSON object (encoding/json flattens embedded structs). The
// few operations that need two sub-states (an event named by its product and location, a transfer
// that moves stock) are TenantState's own methods, in the tenant_*.go files.
type TenantState struct {
	OrgID string `json:"orgId"`
	// CatalogState: products, locations, stock, suppliers, purchase orders, orders (catalog_state.go).
	CatalogState
	// ForecastingState: scenarios, events, forecast versions, change history (forecasting_state.go).
	ForecastingState
	// ImportsState: import jobs (import_state.go).
	ImportsState
	// TransfersState: inventory transfers and transfer recommendations (transfers_state.go).
	TransfersState
	// OutboxState: domain events waiting to be delivered (outbox.go).
	OutboxState
	// ToolAuditState: audits of confirmed tool calls (toolaudit_state.go).
	ToolAuditState
	// AllocationState: the reservation ledger, order allocations, runs and repair audits
	// (allocation_state.go; tenant_allocation.go joins it to the catalog).
	AllocationState
	// LoopEffectsState: the loop runtime's effects applied to this tenant (loop_effects.go).
	LoopEffectsState

	// allocation are the process's allocation settings (not journaled: SetAllocationSettings).
	allocation AllocationSettings
	// receipts is the derived index of stock on its way, by (product, location); nil until a read
	// needs it and after a purchase order, supplier or transfer changed (tenant_allocation.go).
	// Atomic: reads that run in parallel (under the actor's read lock) may each build and store it.
	receipts *receiptCache
	// sources remembers the locations each sku may be sourced from across allocations (derived,
	// tenant_allocation.go); dropped with receipts and when a location or a level comes or goes.
	sources *sourcesMemo
}

// NewTenantState returns the empty state of an organization.
func NewTenantState(orgID string) *TenantState {
	s := &TenantState{OrgID: orgID}
	s.init()
	return s
}

// init makes every map non-nil and rebuilds the derived indexes (after a snapshot decode too).
func (s *TenantState) init() {
	s.CatalogState.init()
	s.ForecastingState.init()
	s.ImportsState.init()
	s.TransfersState.init()
	s.OutboxState.init()
	s.ToolAuditState.init()
	s.AllocationState.init()
	s.LoopEffectsState.init()
	s.receipts = &receiptCache{}
	s.sources = &sourcesMemo{}
}

// UnmarshalJSON decodes a snapshot, rebuilds the derived indexes and quarantines stored numbers
// out of bounds (quarantine.go). The sub-states have no JSON methods of their own: their fields
// decode as the tenant state's.
func (s *TenantState) UnmarshalJSON(b []byte) error {
	type plain TenantState
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	set := s.allocation // settings are the process's, not the snapshot's
	*s = TenantState(p)
	s.allocation = set
	s.init()
	s.CatalogState.quarantineAll()
	s.TransfersState.quarantineAll()
	s.CatalogState.shareAll()
	return nil
}

// Apply applies one record: it hands it to the sub-state that owns its kind. It is the only way
// state changes, both live and on replay.
func (s *TenantState) Apply(r Record) error {
	switch r.Kind {
	case KindProduct, KindLocation, KindInventory, KindSupplier, KindPurchaseOrder, KindOrder:
		switch r.Kind {
		case KindPurchaseOrder, KindSupplier:
			s.receipts.p.Store(nil)
			s.sources.reset()
		case KindLocation:
			s.sources.reset()
		case KindInventory:
			if l, had := s.Inventory[r.ID]; had == r.Del { // a level comes or goes: its sku's sources change
				if v, ok := r.Value.(*InventoryLevel); had && l != nil {
					s.sources.forget(l.SKU)
				} else if ok && v != nil {
					s.sources.forget(v.SKU)
				} else {
					s.sources.reset()
				}
			}
		}
		return s.CatalogState.Apply(r)
	case KindScenario, KindEvent, KindForecastVersion, KindForecastChange, KindChangeFigures:
		return s.ForecastingState.Apply(r)
	case KindChangeEventRef:
		return s.applyChangeEventRef(r)
	case KindImportJob:
		return s.ImportsState.Apply(r)
	case KindTransfer, KindRecommendation:
		if r.Kind == KindTransfer {
			s.receipts.p.Store(nil)
			s.sources.reset()
		}
		return s.TransfersState.Apply(r)
	case KindPendingEvent:
		return s.OutboxState.Apply(r)
	case KindAllocationEventRef:
		return s.applyAllocationEventRef(r)
	case KindRecommendationEventRef:
		return s.applyRecommendationEventRef(r)
	case KindToolAudit:
		return s.ToolAuditState.Apply(r)
	case KindReservation, KindAllocation, KindAllocationAudit, KindAllocationRun:
		return s.AllocationState.Apply(r)
	case KindLoopEffectApplied:
		return s.LoopEffectsState.Apply(r)
	}
	return fmt.Errorf("tenant state: unknown record kind %q", r.Kind)
}

// TakeQuarantined returns the stored values left out (quarantine.go) since the last call, and
// forgets them.
func (s *TenantState) TakeQuarantined() []QuarantinedValue {
	return append(s.CatalogState.takeQuarantined(), s.TransfersState.takeQuarantined()...)
}

// putValue stores a record's value in m after checking its type, or deletes its id. It is the one
// way a sub-state stores a record; a sub-state with a derived index updates it after putValue
// succeeded.
func putValue[T any](m map[string]*T, r Record) error {
	if r.Del {
		delete(m, r.ID)
		return nil
	}
	v, ok := r.Value.(*T)
	if !ok {
		return fmt.Errorf("%s record %s has value %T", r.Kind, r.ID, r.Value)
	}
	m[r.ID] = v
	return nil
}

// unknownKind is the error of a sub-state handed a record kind it does not own.
func unknownKind(part string, r Record) error {
	return fmt.Errorf("%s: unknown record kind %q", part, r.Kind)
}
