package supplyplan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Record kinds of tenant state.
const (
	KindScenario        = "scenario"
	KindEvent           = "event"
	KindProduct         = "product"
	KindLocation        = "location"
	KindInventory       = "inventory"
	KindSupplier        = "supplier"
	KindPurchaseOrder   = "po"
	KindOrder           = "order"
	KindImportJob       = "importjob"
	KindTransfer        = "transfer"
	KindRecommendation  = "recommendation"
	KindForecastVersion = "fversion"
	KindForecastChange  = "fchange"
)

func init() {
	RegisterKind(KindScenario, func() any { return new(Scenario) })
	RegisterKind(KindEvent, func() any { return new(ExternalEvent) })
	RegisterKind(KindProduct, func() any { return new(Product) })
	RegisterKind(KindLocation, func() any { return new(Location) })
	RegisterKind(KindInventory, func() any { return new(InventoryLevel) })
	RegisterKind(KindSupplier, func() any { return new(Supplier) })
	RegisterKind(KindPurchaseOrder, func() any { return new(PurchaseOrder) })
	RegisterKind(KindOrder, func() any { return new(Order) })
	RegisterKind(KindImportJob, func() any { return new(ImportJob) })
	RegisterKind(KindTransfer, func() any { return new(Transfer) })
	RegisterKind(KindRecommendation, func() any { return new(Recommendation) })
	RegisterKind(KindForecastVersion, func() any { return new(ForecastVersion) })
	RegisterKind(KindForecastChange, func() any { return new(ChangeEntry) })
}

// InventoryKey is the key of a product's level at a location.
func InventoryKey(productID, locationID string) string { return productID + "\x00" + locationID }

// TenantState is everything one organization owns that lives in its journal. It is owned by the
// tenant's actor: only that actor reads or changes it. Values stored in its maps are never mutated
// in place (a change stores a new value), so a copy handed out stays valid.
type TenantState struct {
	OrgID            string                      `json:"orgId"`
	Scenarios        map[string]*Scenario        `json:"scenarios"`
	Events           map[string]*ExternalEvent   `json:"events"`
	Products         map[string]*Product         `json:"products"`
	Locations        map[string]*Location        `json:"locations"`
	Inventory        map[string]*InventoryLevel  `json:"inventory"`
	Suppliers        map[string]*Supplier        `json:"suppliers"`
	PurchaseOrders   map[string]*PurchaseOrder   `json:"purchaseOrders"`
	Orders           map[string]*Order           `json:"orders"`
	ImportJobs       map[string]*ImportJob       `json:"importJobs"`
	Transfers        map[string]*Transfer        `json:"transfers"`
	Recommendations  map[string]*Recommendation  `json:"recommendations"`
	ForecastVersions map[string]*ForecastVersion `json:"forecastVersions"`
	Changes          map[string]*ChangeEntry     `json:"forecastChanges"`
	// PendingEvents are domain events written with the change that caused them, waiting to be
	// handed to the outbound delivery (the outbox: an event is never lost between the two).
	PendingEvents map[string]*DomainEvent `json:"pendingEvents,omitempty"`
	// ToolAudits are the audits of confirmed state-changing tool calls (tool service).
	ToolAudits map[string]*ToolAudit `json:"toolAudits,omitempty"`

	skuIndex    map[string]string // product sku -> product id (derived, rebuilt on load)
	events      eventIndex        // events by scope (derived, rebuilt on load)
	changeOrder []string          // change-history ids, oldest first (derived, rebuilt on load)
	// quarantined are the stored numbers left out since TakeQuarantined last ran (quarantine.go).
	quarantined []QuarantinedValue
}

// NewTenantState returns the empty state of an organization.
func NewTenantState(orgID string) *TenantState {
	s := &TenantState{OrgID: orgID}
	s.init()
	return s
}

// init makes every map non-nil and rebuilds derived indexes (after a snapshot decode too).
func (s *TenantState) init() {
	if s.Scenarios == nil {
		s.Scenarios = map[string]*Scenario{}
	}
	if s.Events == nil {
		s.Events = map[string]*ExternalEvent{}
	}
	if s.Products == nil {
		s.Products = map[string]*Product{}
	}
	if s.Locations == nil {
		s.Locations = map[string]*Location{}
	}
	if s.Inventory == nil {
		s.Inventory = map[string]*InventoryLevel{}
	}
	if s.Suppliers == nil {
		s.Suppliers = map[string]*Supplier{}
	}
	if s.PurchaseOrders == nil {
		s.PurchaseOrders = map[string]*PurchaseOrder{}
	}
	if s.Orders == nil {
		s.Orders = map[string]*Order{}
	}
	if s.ImportJobs == nil {
		s.ImportJobs = map[string]*ImportJob{}
	}
	if s.PendingEvents == nil {
		s.PendingEvents = map[string]*DomainEvent{}
	}
	if s.Transfers == nil {
		s.Transfers = map[string]*Transfer{}
	}
	if s.Recommendations == nil {
		s.Recommendations = map[string]*Recommendation{}
	}
	if s.ForecastVersions == nil {
		s.ForecastVersions = map[string]*ForecastVersion{}
	}
	if s.Changes == nil {
		s.Changes = map[string]*ChangeEntry{}
	}
	s.skuIndex = make(map[string]string, len(s.Products))
	for id, p := range s.Products {
		s.skuIndex[p.SKU] = id
	}
	s.events.reset(len(s.Events))
	for _, e := range s.Events {
		s.events.add(e)
	}
	s.changeOrder = make([]string, 0, len(s.Changes))
	for id := range s.Changes {
		s.changeOrder = append(s.changeOrder, id)
	}
	slices.Sort(s.changeOrder)
}

// UnmarshalJSON decodes a snapshot and rebuilds the derived indexes.
func (s *TenantState) UnmarshalJSON(b []byte) error {
	type plain TenantState
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = TenantState(p)
	s.init()
	s.quarantineAll()
	return nil
}

// ProductBySKU finds a product by id, or else by sku.
func (s *TenantState) ProductBySKU(ref string) (*Product, bool) {
	if p, ok := s.Products[ref]; ok {
		return p, true
	}
	if id, ok := s.skuIndex[ref]; ok {
		return s.Products[id], true
	}
	return nil, false
}

// putValue stores a record's value in m after checking its type.
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

// Apply applies one record. It is the only way state changes, both live and on replay. A number
// out of bounds in the record's value is quarantined first (quarantine.go).
func (s *TenantState) Apply(r Record) error {
	if !r.Del && r.Value != nil {
		s.quarantineValue(r.Kind, r.ID, r.Value)
	}
	switch r.Kind {
	case KindProduct:
		if old, ok := s.Products[r.ID]; ok && s.skuIndex[old.SKU] == r.ID {
			delete(s.skuIndex, old.SKU)
		}
		if err := putValue(s.Products, r); err != nil {
			return err
		}
		if p, ok := s.Products[r.ID]; ok {
			s.skuIndex[p.SKU] = r.ID
		}
		return nil
	case KindLocation:
		return putValue(s.Locations, r)
	case KindInventory:
		return putValue(s.Inventory, r)
	case KindSupplier:
		return putValue(s.Suppliers, r)
	case KindPurchaseOrder:
		return putValue(s.PurchaseOrders, r)
	case KindOrder:
		return putValue(s.Orders, r)
	case KindImportJob:
		return putValue(s.ImportJobs, r)
	case KindPendingEvent:
		return putValue(s.PendingEvents, r)
	case KindTransfer:
		return putValue(s.Transfers, r)
	case KindRecommendation:
		return putValue(s.Recommendations, r)
	case KindForecastVersion:
		return putValue(s.ForecastVersions, r)
	case KindForecastChange:
		_, existed := s.Changes[r.ID]
		if err := putValue(s.Changes, r); err != nil {
			return err
		}
		s.orderChange(r.ID, existed, r.Del)
		return nil
	case KindScenario:
		if r.Del {
			delete(s.Scenarios, r.ID)
			return nil
		}
		v, ok := r.Value.(*Scenario)
		if !ok {
			return fmt.Errorf("scenario record %s has value %T", r.ID, r.Value)
		}
		s.Scenarios[r.ID] = v
	case KindEvent:
		var v *ExternalEvent
		if !r.Del {
			var ok bool
			if v, ok = r.Value.(*ExternalEvent); !ok {
				return fmt.Errorf("event record %s has value %T", r.ID, r.Value)
			}
		}
		if old, ok := s.Events[r.ID]; ok {
			s.events.remove(old)
			delete(s.Events, r.ID)
		}
		if v != nil {
			s.Events[r.ID] = v
			s.events.add(v)
		}
	case KindToolAudit:
		if s.ToolAudits == nil {
			s.ToolAudits = map[string]*ToolAudit{}
		}
		return applyTo(s.ToolAudits, r)
	default:
		return fmt.Errorf("tenant state: unknown record kind %q", r.Kind)
	}
	return nil
}

// EventLookup finds events outside the tenant (the platform's global events).
type EventLookup func(id string) (*ExternalEvent, bool)

// ListScenarios returns the scenarios passing f, newest first.
func (s *TenantState) ListScenarios(f ScenarioFilter) []Scenario {
	out := make([]Scenario, 0, len(s.Scenarios))
	for _, sc := range s.Scenarios {
		if f.Match(sc) {
			out = append(out, *sc)
		}
	}
	slices.SortFunc(out, func(a, b Scenario) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out
}

// GetScenario returns one scenario.
func (s *TenantState) GetScenario(id string) (Scenario, error) {
	sc, ok := s.Scenarios[id]
	if !ok {
		return Scenario{}, NotFound("Scenario")
	}
	return *sc, nil
}

// checkIncludedEvents verifies that every included event id names an event the tenant can see.
func (s *TenantState) checkIncludedEvents(in *AssumptionsInput, global EventLookup) error {
	if in == nil || in.IncludedEventIDs == nil {
		return nil
	}
	for _, id := range *in.IncludedEventIDs {
		if _, ok := s.Events[id]; ok {
			continue
		}
		if global != nil {
			if _, ok := global(id); ok {
				continue
			}
		}
		return Invalid("assumptions.includedEventIds", "unknown event %q", id)
	}
	return nil
}

// CreateScenario validates in and returns the new scenario and its records.
func (s *TenantState) CreateScenario(in ScenarioInput, global EventLookup, now time.Time) (Scenario, []Record, error) {
	if err := in.Validate(true); err != nil {
		return Scenario{}, nil, err
	}
	if err := s.checkIncludedEvents(in.Assumptions, global); err != nil {
		return Scenario{}, nil, err
	}
	sc := NewScenario(NewID("scn"), in, now)
	return sc, []Record{Put(KindScenario, sc.ID, &sc)}, nil
}

// UpdateScenario applies a partial update.
func (s *TenantState) UpdateScenario(id string, in ScenarioInput, global EventLookup, now time.Time) (Scenario, []Record, error) {
	cur, ok := s.Scenarios[id]
	if !ok {
		return Scenario{}, nil, NotFound("Scenario")
	}
	if err := in.Validate(false); err != nil {
		return Scenario{}, nil, err
	}
	if err := s.checkIncludedEvents(in.Assumptions, global); err != nil {
		return Scenario{}, nil, err
	}
	sc, err := cur.Update(in, now)
	if err != nil {
		return Scenario{}, nil, err
	}
	return sc, []Record{Put(KindScenario, sc.ID, &sc)}, nil
}

// PublishScenario publishes a scenario (idempotent on PUBLISHED).
func (s *TenantState) PublishScenario(id string, now time.Time) (Scenario, []Record, error) {
	cur, ok := s.Scenarios[id]
	if !ok {
		return Scenario{}, nil, NotFound("Scenario")
	}
	sc, changed, err := cur.Publish(now)
	if err != nil || !changed {
		return sc, nil, err
	}
	return sc, []Record{Put(KindScenario, sc.ID, &sc)}, nil
}

// ArchiveScenario archives a scenario (idempotent on ARCHIVED).
func (s *TenantState) ArchiveScenario(id string, now time.Time) (Scenario, []Record, error) {
	cur, ok := s.Scenarios[id]
	if !ok {
		return Scenario{}, nil, NotFound("Scenario")
	}
	sc, changed := cur.Archive(now)
	if !changed {
		return sc, nil, nil
	}
	return sc, []Record{Put(KindScenario, sc.ID, &sc)}, nil
}

// ListEvents returns the tenant's events and the given global ones that pass f, by start then id.
func (s *TenantState) ListEvents(f EventFilter, globals []*ExternalEvent) []ExternalEvent {
	out := make([]ExternalEvent, 0)
	for _, e := range s.Events {
		if f.Match(e) {
			out = append(out, s.expand(*e))
		}
	}
	for _, e := range globals {
		if f.Match(e) {
			out = append(out, *e)
		}
	}
	slices.SortFunc(out, func(a, b ExternalEvent) int {
		if c := a.StartsAt.Compare(b.StartsAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// GetEvent returns one of the tenant's events, or a global one.
func (s *TenantState) GetEvent(id string, global EventLookup) (ExternalEvent, error) {
	if e, ok := s.Events[id]; ok {
		return s.expand(*e), nil
	}
	if global != nil {
		if e, ok := global(id); ok {
			return *e, nil
		}
	}
	return ExternalEvent{}, NotFound("Event")
}

// expand fills the productMaster and location objects from the catalog (ids alone when the
// product or location has since disappeared).
func (s *TenantState) expand(e ExternalEvent) ExternalEvent {
	if e.ProductMasterID != "" {
		e.ProductMaster = &ProductRef{ID: e.ProductMasterID, Name: e.ProductMasterID, SKU: e.ProductMasterID}
		if p, ok := s.Products[e.ProductMasterID]; ok {
			e.ProductMaster.Name, e.ProductMaster.SKU = p.Name, p.SKU
		}
	}
	if e.LocationID != "" {
		e.Location = &LocationRef{ID: e.LocationID, Name: e.LocationID}
		if l, ok := s.Locations[e.LocationID]; ok {
			e.Location.Name, e.Location.Code = l.Name, l.Code
		}
	}
	return e
}

// resolveEventRefs checks that the event's product and location exist (a product may be named by
// its sku; it is stored by id).
func (s *TenantState) resolveEventRefs(e *ExternalEvent) error {
	fe := FieldErrors{}
	if e.ProductMasterID != "" {
		if p, ok := s.ProductBySKU(e.ProductMasterID); ok {
			e.ProductMasterID = p.ID
		} else {
			fe.Add("productMasterId", "unknown product %q", e.ProductMasterID)
		}
	}
	if e.LocationID != "" {
		if _, ok := s.Locations[e.LocationID]; !ok {
			fe.Add("locationId", "unknown location %q", e.LocationID)
		}
	}
	return fe.Err()
}

// CreateEvent validates in and returns the new event and its records.
func (s *TenantState) CreateEvent(in EventInput, now time.Time) (ExternalEvent, []Record, error) {
	starts, ends, err := in.Validate(true, false)
	if err != nil {
		return ExternalEvent{}, nil, err
	}
	e, err := NewEvent(NewID("evt"), in, starts, ends, false, now)
	if err != nil {
		return ExternalEvent{}, nil, err
	}
	if err := s.resolveEventRefs(&e); err != nil {
		return ExternalEvent{}, nil, err
	}
	stored := e
	return s.expand(e), []Record{Put(KindEvent, e.ID, &stored)}, nil
}

// UpdateEvent applies a partial update to one of the tenant's events.
func (s *TenantState) UpdateEvent(id string, in EventInput, global EventLookup, now time.Time) (ExternalEvent, []Record, error) {
	cur, ok := s.Events[id]
	if !ok {
		if global != nil {
			if _, ok := global(id); ok {
				return ExternalEvent{}, nil, Errorf(EFORBIDDEN, "Global events are managed by the platform operator")
			}
		}
		return ExternalEvent{}, nil, NotFound("Event")
	}
	starts, ends, err := in.Validate(false, false)
	if err != nil {
		return ExternalEvent{}, nil, err
	}
	e, err := cur.Update(in, starts, ends, now)
	if err != nil {
		return ExternalEvent{}, nil, err
	}
	if in.ProductMasterID != nil || in.LocationID != nil {
		if err := s.resolveEventRefs(&e); err != nil {
			return ExternalEvent{}, nil, err
		}
	}
	stored := e
	return s.expand(e), []Record{Put(KindEvent, e.ID, &stored)}, nil
}

// DeleteEvent removes one of the tenant's events.
func (s *TenantState) DeleteEvent(id string, global EventLookup) ([]Record, error) {
	if _, ok := s.Events[id]; !ok {
		if global != nil {
			if _, ok := global(id); ok {
				return nil, Errorf(EFORBIDDEN, "Global events are managed by the platform operator")
			}
		}
		return nil, NotFound("Event")
	}
	return []Record{Del(KindEvent, id)}, nil
}

// PendingEventList returns the tenant's pending events, oldest first.
func (s *TenantState) PendingEventList() []DomainEvent { return pendingList(s.PendingEvents) }

// EventRecord returns the record that stores e in the outbox of the state it is written to
// (tenant or platform): write it in the same transaction as the change the event announces, then
// publish e once the transaction is durable.
func EventRecord(e DomainEvent) Record { return Put(KindPendingEvent, e.ID, &e) }
