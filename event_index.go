package supplyplan

import (
	"cmp"
	"slices"
)

// eventIndex files a tenant's events by scope, so that the events of one series are found in
// proportion to their number, not to the tenant's. It is derived from ForecastingState.Events: kept up
// to date by Apply and rebuilt on load.
//
// Its sets are keyed by the event's pointer (the one in Events): a key of one word, against the id
// string and the pointer of a map[string]*ExternalEvent, is half the words the collector visits
// in a set holding every event of a tenant, and a cheaper hash on every event write.
type eventIndex struct {
	orgWide    eventSet
	byProduct  map[string]eventSet    // a product and no location
	byLocation map[string]eventSet    // a location and no product
	bySeries   map[[2]string]eventSet // a product and a location
}

// eventSet is a set of stored events. An event leaves it by the pointer it was added with: Apply
// removes the one Events held.
type eventSet map[*ExternalEvent]struct{}

func (ix *eventIndex) reset(n int) {
	ix.orgWide = eventSet{}
	ix.byProduct = map[string]eventSet{}
	ix.byLocation = map[string]eventSet{}
	ix.bySeries = make(map[[2]string]eventSet, n/8)
}

func addTo[K comparable](m map[K]eventSet, k K, e *ExternalEvent) {
	g := m[k]
	if g == nil {
		g = eventSet{}
		m[k] = g
	}
	g[e] = struct{}{}
}

func removeFrom[K comparable](m map[K]eventSet, k K, e *ExternalEvent) {
	if g := m[k]; g != nil {
		delete(g, e)
		if len(g) == 0 {
			delete(m, k)
		}
	}
}

func (ix *eventIndex) add(e *ExternalEvent) {
	switch {
	case e.ProductMasterID != "" && e.LocationID != "":
		addTo(ix.bySeries, [2]string{e.ProductMasterID, e.LocationID}, e)
	case e.ProductMasterID != "":
		addTo(ix.byProduct, e.ProductMasterID, e)
	case e.LocationID != "":
		addTo(ix.byLocation, e.LocationID, e)
	default:
		ix.orgWide[e] = struct{}{}
	}
}

func (ix *eventIndex) remove(e *ExternalEvent) {
	switch {
	case e.ProductMasterID != "" && e.LocationID != "":
		removeFrom(ix.bySeries, [2]string{e.ProductMasterID, e.LocationID}, e)
	case e.ProductMasterID != "":
		removeFrom(ix.byProduct, e.ProductMasterID, e)
	case e.LocationID != "":
		removeFrom(ix.byLocation, e.LocationID, e)
	default:
		delete(ix.orgWide, e)
	}
}

// EventsFor appends to dst, in no particular order (see SortEvents), the tenant's events that
// apply to a product at a location: the org-wide events, the product's and the location's own,
// and the series'. An empty product (or location) stands for a total over every product
// (location): events scoped to one product (location) are then left out. The cost is
// proportional to the events returned. The events are shared values, never mutated: callers
// must not change them.
func (s *ForecastingState) EventsFor(product, location string, dst []*ExternalEvent) []*ExternalEvent {
	ix := &s.events
	for e := range ix.orgWide {
		dst = append(dst, e)
	}
	if product != "" {
		for e := range ix.byProduct[product] {
			dst = append(dst, e)
		}
	}
	if location != "" {
		for e := range ix.byLocation[location] {
			dst = append(dst, e)
		}
	}
	if product != "" && location != "" {
		for e := range ix.bySeries[[2]string{product, location}] {
			dst = append(dst, e)
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
