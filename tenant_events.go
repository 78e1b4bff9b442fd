package supplyplan

import (
	"cmp"
	"slices"
	"time"
)

// The event operations that read the catalog as well: an event names its product (by id or sku)
// and its location, which must exist, and is shown with their names.

// ListEvents returns the tenant's events and the given global ones that pass f, by start then id.
func (s *TenantState) ListEvents(f EventFilter, globals []*ExternalEvent) []ExternalEvent {
	out := make([]ExternalEvent, 0)
	for e := range s.Events.All() {
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
	if e, ok := s.Events.Get(id); ok {
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
	pr, lr := s.EventRefs(&e)
	if pr != nil {
		e.ProductMaster = pr
	}
	if lr != nil {
		e.Location = lr
	}
	return e
}

// EventRefs returns the productMaster and location objects of e (expand), nil for what e does not
// name.
func (s *TenantState) EventRefs(e *ExternalEvent) (*ProductRef, *LocationRef) {
	var pr *ProductRef
	var lr *LocationRef
	if e.ProductMasterID != "" {
		pr = &ProductRef{ID: e.ProductMasterID, Name: e.ProductMasterID, SKU: e.ProductMasterID}
		if p, ok := s.Products[e.ProductMasterID]; ok {
			pr.Name, pr.SKU = p.Name, p.SKU
		}
	}
	if e.LocationID != "" {
		lr = &LocationRef{ID: e.LocationID, Name: e.LocationID}
		if l, ok := s.Locations[e.LocationID]; ok {
			lr.Name, lr.Code = l.Name, l.Code
		}
	}
	return pr, lr
}

// resolveEventRefs checks that the event's product and location exist (a product may be named by
// its sku; it is stored by id).
func (s *TenantState) resolveEventRefs(e *ExternalEvent) error {
	var fe FieldErrors // made only for an error: this runs in the actor on every event write
	if e.ProductMasterID != "" {
		if p, ok := s.ProductBySKU(e.ProductMasterID); ok {
			e.ProductMasterID = p.ID
		} else {
			fe = FieldErrors{}
			fe.Add("productMasterId", "unknown product %q", e.ProductMasterID)
		}
	}
	if e.LocationID != "" {
		if _, ok := s.Locations[e.LocationID]; !ok {
			if fe == nil {
				fe = FieldErrors{}
			}
			fe.Add("locationId", "unknown location %q", e.LocationID)
		}
	}
	return fe.Err()
}

// CreateEvent validates in and returns the new event and its records.
func (s *TenantState) CreateEvent(in EventInput, now time.Time) (ExternalEvent, []Record, error) {
	e, err := PrepareEvent(in, now)
	if err != nil {
		return ExternalEvent{}, nil, err
	}
	recs, err := s.AddEvent(&e)
	if err != nil {
		return ExternalEvent{}, nil, err
	}
	return s.expand(e), recs, nil
}

// PrepareEvent is the part of CreateEvent that needs no state: validation (dates parsed) and the
// event built from in, without its id. The service runs it on the request's goroutine, so that the
// tenant's actor (one writer per tenant) runs only AddEvent.
func PrepareEvent(in EventInput, now time.Time) (ExternalEvent, error) {
	starts, ends, err := in.Validate(true, false)
	if err != nil {
		return ExternalEvent{}, err
	}
	return NewEvent("", in, starts, ends, false, now)
}

// AddEvent is the part of CreateEvent that needs the state, for an event from PrepareEvent: its
// product and location checked, its id given (in the actor: ids follow the order of the writes).
// The state keeps e itself (its record's value): the caller must not change it after, and reads
// its expanded references with EventRefs.
func (s *TenantState) AddEvent(e *ExternalEvent) ([]Record, error) {
	if err := s.resolveEventRefs(e); err != nil {
		return nil, err
	}
	e.ID = NewID("evt")
	recs := make([]Record, 1, 3) // room for the change-history entry the caller appends (and the delete of the oldest)
	recs[0] = Put(KindEvent, e.ID, e)
	return recs, nil
}

// UpdateEvent applies a partial update to one of the tenant's events.
func (s *TenantState) UpdateEvent(id string, in EventInput, global EventLookup, now time.Time) (ExternalEvent, []Record, error) {
	cur, ok := s.Events.Get(id)
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
