package supplyplan

import (
	"cmp"
	"slices"
	"time"
)

// The outbound state's derived orders, kept as records are applied so that a page of alert
// history or of an endpoint's delivery log costs the page, not a pass over (and a sort of) every
// alert or delivery of the owner: the operator console and the REST lists read them on every
// render, and a tenant keeps up to MaxAlertHistory alerts. Both hold the current pointers of the
// maps (a record replaces its map value; the index follows).

// compareAlerts orders alerts oldest first: by trigger time, then id.
func compareAlerts(a, b *Alert) int {
	if c := a.TriggeredAt.Compare(b.TriggeredAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// compareDeliveries orders deliveries oldest first (ids are monotonic).
func compareDeliveries(a, b *Delivery) int { return cmp.Compare(a.ID, b.ID) }

// sortedRemove removes x (found by cmp) from the sorted list.
func sortedRemove[T any](list []*T, x *T, cmp func(a, b *T) int) []*T {
	if i, ok := slices.BinarySearchFunc(list, x, cmp); ok {
		return slices.Delete(list, i, i+1)
	}
	return list
}

// sortedPut inserts x into the sorted list, or replaces the element of equal order (the same
// item, a newer version). Appending in order (the usual case: new alerts and deliveries are the
// newest) costs O(1).
func sortedPut[T any](list []*T, x *T, cmp func(a, b *T) int) []*T {
	if n := len(list); n == 0 || cmp(list[n-1], x) < 0 {
		return append(list, x)
	}
	i, ok := slices.BinarySearchFunc(list, x, cmp)
	if ok {
		list[i] = x
		return list
	}
	return slices.Insert(list, i, x)
}

// indexAlert moves the index from old (nil: none) to cur (nil: deleted).
func (s *OutboundState) indexAlert(old, cur *Alert) {
	if old != nil && (cur == nil || compareAlerts(old, cur) != 0) {
		s.alertOrder = sortedRemove(s.alertOrder, old, compareAlerts)
	}
	if cur != nil {
		s.alertOrder = sortedPut(s.alertOrder, cur, compareAlerts)
	}
}

// indexDelivery moves the per-endpoint index from old (nil: none) to cur (nil: deleted).
func (s *OutboundState) indexDelivery(old, cur *Delivery) {
	if old != nil && old.Target == TargetEndpoint && (cur == nil || cur.Target != TargetEndpoint || cur.EndpointID != old.EndpointID) {
		ds := sortedRemove(s.byEndpoint[old.EndpointID], old, compareDeliveries)
		if len(ds) == 0 {
			delete(s.byEndpoint, old.EndpointID)
		} else {
			s.byEndpoint[old.EndpointID] = ds
		}
	}
	if cur != nil && cur.Target == TargetEndpoint {
		s.byEndpoint[cur.EndpointID] = sortedPut(s.byEndpoint[cur.EndpointID], cur, compareDeliveries)
	}
}

// buildIndexes derives the orders from the maps (a snapshot loaded, a new state).
func (s *OutboundState) buildIndexes() {
	s.alertOrder = make([]*Alert, 0, len(s.Alerts))
	for _, a := range s.Alerts {
		s.alertOrder = append(s.alertOrder, a)
	}
	slices.SortFunc(s.alertOrder, compareAlerts)
	s.byEndpoint = map[string][]*Delivery{}
	for _, d := range s.Deliveries {
		if d.Target == TargetEndpoint {
			s.byEndpoint[d.EndpointID] = append(s.byEndpoint[d.EndpointID], d)
		}
	}
	for _, ds := range s.byEndpoint {
		slices.SortFunc(ds, compareDeliveries)
	}
}

// PageAlerts filters the alert history and returns the requested page, newest first. The time
// bounds narrow the walk by binary search; the other filters are checked on the way, so a page
// costs the alerts it passes over to count the total, without allocating for them.
func (s *OutboundState) PageAlerts(f AlertFilter) AlertPage {
	if f.Limit <= 0 {
		f.Limit = DefaultAlertPage
	}
	if f.Page <= 0 {
		f.Page = 1
	}
	lo, hi := 0, len(s.alertOrder)
	if f.From != nil {
		from := *f.From
		lo, _ = slices.BinarySearchFunc(s.alertOrder, from, func(a *Alert, t time.Time) int { return a.TriggeredAt.Compare(t) })
	}
	if f.To != nil {
		to := *f.To
		// the first alert after To
		hi, _ = slices.BinarySearchFunc(s.alertOrder, to, func(a *Alert, t time.Time) int {
			if a.TriggeredAt.After(t) {
				return 1
			}
			return -1
		})
	}
	p := AlertPage{Alerts: []Alert{}}
	start := (f.Page - 1) * f.Limit
	total := 0
	if f.Type == "" && f.Severity == "" && f.Delivered == nil {
		total = max(hi-lo, 0)
		for i := hi - 1 - start; i >= lo && i > hi-1-start-f.Limit; i-- {
			p.Alerts = append(p.Alerts, *s.alertOrder[i])
		}
	} else {
		for i := hi - 1; i >= lo; i-- {
			a := s.alertOrder[i]
			if !f.Match(a) {
				continue
			}
			if total >= start && total < start+f.Limit {
				p.Alerts = append(p.Alerts, *a)
			}
			total++
		}
	}
	p.Pagination = NewPagination(f.Page, f.Limit, total)
	return p
}

// ListDeliveries returns an endpoint's deliveries, newest first.
func (s *OutboundState) ListDeliveries(endpointID string, f DeliveryFilter) DeliveryPage {
	if f.Limit <= 0 {
		f.Limit = DefaultAlertPage
	}
	if f.Page <= 0 {
		f.Page = 1
	}
	ds := s.byEndpoint[endpointID]
	p := DeliveryPage{Deliveries: []Delivery{}}
	start, total := (f.Page-1)*f.Limit, 0
	for i := len(ds) - 1; i >= 0; i-- {
		d := ds[i]
		if f.Status != "" && d.Status != f.Status {
			continue
		}
		if total >= start && total < start+f.Limit {
			p.Deliveries = append(p.Deliveries, *d)
		}
		total++
	}
	p.Pagination = NewPagination(f.Page, f.Limit, total)
	return p
}
