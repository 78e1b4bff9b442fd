package supplyplan

import (
	"cmp"
	"slices"
)

// eventIndex files a tenant's events by scope, so that the events of one series are found in
// proportion to their number, not to the tenant's. It is derived from ForecastingState.Events: kept up
// to date by Apply and rebuilt on load.
//
// Its sets hold the events' slots in the store (EventStore), not their pointers: a set of
// numbers holds no pointer, so the collector never reads it, where sets of pointers made it
// visit every event of the tenant once more in hash order at every cycle (event_store.go).
type eventIndex struct {
	orgWide    eventSet
	byProduct  map[string]eventSet    // a product and no location
	byLocation map[string]eventSet    // a location and no product
	bySeries   map[[2]string]eventSet // a product and a location
}

// eventSet is a set of slots of the event store. An event leaves it by the slot it was added
// with: Apply removes the one the store held there.
type eventSet map[uint32]struct{}

func (ix *eventIndex) reset(n int) {
	ix.orgWide = eventSet{}
	ix.byProduct = map[string]eventSet{}
	ix.byLocation = map[string]eventSet{}
	ix.bySeries = make(map[[2]string]eventSet, n/8)
}

func addTo[K comparable](m map[K]eventSet, k K, slot uint32) {
	g := m[k]
	if g == nil {
		g = eventSet{}
		m[k] = g
	}
	g[slot] = struct{}{}
}

func removeFrom[K comparable](m map[K]eventSet, k K, slot uint32) {
	if g := m[k]; g != nil {
		delete(g, slot)
		if len(g) == 0 {
			delete(m, k)
		}
	}
}

// add files the event e, in the store's slot, under its scope.
func (ix *eventIndex) add(slot uint32, e *ExternalEvent) {
	switch {
	case e.ProductMasterID != "" && e.LocationID != "":
		addTo(ix.bySeries, [2]string{e.ProductMasterID, e.LocationID}, slot)
	case e.ProductMasterID != "":
		addTo(ix.byProduct, e.ProductMasterID, slot)
	case e.LocationID != "":
		addTo(ix.byLocation, e.LocationID, slot)
	default:
		ix.orgWide[slot] = struct{}{}
	}
}

// remove takes the event e, filed in slot, out of its scope.
func (ix *eventIndex) remove(slot uint32, e *ExternalEvent) {
	switch {
	case e.ProductMasterID != "" && e.LocationID != "":
		removeFrom(ix.bySeries, [2]string{e.ProductMasterID, e.LocationID}, slot)
	case e.ProductMasterID != "":
		removeFrom(ix.byProduct, e.ProductMasterID, slot)
	case e.LocationID != "":
		removeFrom(ix.byLocation, e.LocationID, slot)
	default:
		delete(ix.orgWide, slot)
	}
}

// EventsFor appends to dst, in no particular order (see SortEvents), the tenant's events that
// apply to a product at a location: the org-wide events, the product's and the location's own,
// and the series'. An empty product (or location) stands for a total over every product
// (location): events scoped to one product (location) are then left out. The cost is
// proportional to the events returned. The events are shared values, never mutated: callers
// must not change them.
func (s *ForecastingState) EventsFor(product, location string, dst []*ExternalEvent) []*ExternalEvent {
	ix, st := &s.events, &s.Events
	for i := range ix.orgWide {
		dst = append(dst, st.at(i))
	}
	if product != "" {
		for i := range ix.byProduct[product] {
			dst = append(dst, st.at(i))
		}
	}
	if location != "" {
		for i := range ix.byLocation[location] {
			dst = append(dst, st.at(i))
		}
	}
	if product != "" && location != "" {
		for i := range ix.bySeries[[2]string{product, location}] {
			dst = append(dst, st.at(i))
		}
	}
	return dst
}

// HasEventsFor reports whether any of the tenant's events applies to the product at the location
// (same scopes as EventsFor).
func (s *ForecastingState) HasEventsFor(product, location string) bool {
	ix := &s.events
	return len(ix.orgWide) > 0 || len(ix.byProduct[product]) > 0 || len(ix.byLocation[location]) > 0 ||
		len(ix.bySeries[[2]string{product, location}]) > 0
}

// SortEvents orders events by id (ids sort by creation): one order whatever the map iteration
// gave, so that the same events always give the same forecast to the last bit.
func SortEvents(events []*ExternalEvent) {
	slices.SortFunc(events, func(a, b *ExternalEvent) int { return cmp.Compare(a.ID, b.ID) })
}
