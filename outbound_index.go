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

// shiftLimit bounds the elements a removal or an insertion in the middle of an order moves; one
// that would move more marks the order stale instead (it is sorted again by the next read, once):
// a prune of thousands of alerts costs one sort, not thousands of shifts.
var shiftLimit = 1024

// sortedRemove removes x (found by cmp) from the sorted list; ok is false when the order must be
// rebuilt instead. Removing the oldest (what pruning does) reslices.
func sortedRemove[T any](list []*T, x *T, cmp func(a, b *T) int) (_ []*T, ok bool) {
	i, found := slices.BinarySearchFunc(list, x, cmp)
	switch {
	case !found:
		return list, true
	case i == 0:
		list[0] = nil
		return list[1:], true
	case len(list)-i > shiftLimit:
		return nil, false
	}
	return slices.Delete(list, i, i+1), true
}

// sortedPut inserts x into the sorted list, or replaces the element of equal order (the same
// item, a newer version); ok is false when the order must be rebuilt instead. Appending in order
// (the usual case: new alerts and deliveries are the newest) costs O(1).
func sortedPut[T any](list []*T, x *T, cmp func(a, b *T) int) (_ []*T, ok bool) {
	if n := len(list); n == 0 || cmp(list[n-1], x) < 0 {
		return append(list, x), true
	}
	i, found := slices.BinarySearchFunc(list, x, cmp)
	switch {
	case found:
		list[i] = x
		return list, true
	case len(list)-i > shiftLimit:
		return nil, false
	}
	return slices.Insert(list, i, x), true
}

// indexAlert moves the order from old (nil: none) to cur (nil: deleted).
func (s *OutboundState) indexAlert(old, cur *Alert) {
	ok := !s.alertsStale
	if ok && old != nil && (cur == nil || compareAlerts(old, cur) != 0) {
		s.alertOrder, ok = sortedRemove(s.alertOrder, old, compareAlerts)
	}
	if ok && cur != nil {
		s.alertOrder, ok = sortedPut(s.alertOrder, cur, compareAlerts)
	}
	if !ok {
		s.alertOrder, s.alertsStale = nil, true
	}
}

// indexDelivery moves the per-endpoint order from old (nil: none) to cur (nil: deleted).
func (s *OutboundState) indexDelivery(old, cur *Delivery) {
	if old != nil && old.Target == TargetEndpoint && (cur == nil || cur.Target != TargetEndpoint || cur.EndpointID != old.EndpointID) {
		s.updateEndpoint(old.EndpointID, func(ds []*Delivery) ([]*Delivery, bool) { return sortedRemove(ds, old, compareDeliveries) })
	}
	if cur != nil && cur.Target == TargetEndpoint {
		s.updateEndpoint(cur.EndpointID, func(ds []*Delivery) ([]*Delivery, bool) { return sortedPut(ds, cur, compareDeliveries) })
	}
}

func (s *OutboundState) updateEndpoint(ep string, fn func([]*Delivery) ([]*Delivery, bool)) {
	if s.staleEndpoints[ep] {
		return
	}
	ds, ok := fn(s.byEndpoint[ep])
	switch {
	case !ok:
		delete(s.byEndpoint, ep)
		s.staleEndpoints[ep] = true
	case len(ds) == 0:
		delete(s.byEndpoint, ep)
	default:
		s.byEndpoint[ep] = ds
	}
}

// alerts returns the alert order, sorted again when stale.
func (s *OutboundState) alerts() []*Alert {
	if s.alertsStale {
		s.alertOrder = make([]*Alert, 0, len(s.Alerts))
		for _, a := range s.Alerts {
			s.alertOrder = append(s.alertOrder, a)
		}
		slices.SortFunc(s.alertOrder, compareAlerts)
		s.alertsStale = false
	}
	return s.alertOrder
}

// endpointDeliveries returns an endpoint's delivery order, sorted again when stale.
func (s *OutboundState) endpointDeliveries(ep string) []*Delivery {
	if s.staleEndpoints[ep] {
		var ds []*Delivery
		for _, d := range s.Deliveries {
			if d.Target == TargetEndpoint && d.EndpointID == ep {
				ds = append(ds, d)
			}
		}
		slices.SortFunc(ds, compareDeliveries)
		if len(ds) > 0 {
			s.byEndpoint[ep] = ds
		}
		delete(s.staleEndpoints, ep)
	}
	return s.byEndpoint[ep]
}

// buildIndexes derives the orders from the maps (a snapshot loaded, a new state): they are sorted
// by their first read.
func (s *OutboundState) buildIndexes() {
	s.alertOrder, s.alertsStale = nil, true
	s.byEndpoint, s.staleEndpoints = map[string][]*Delivery{}, map[string]bool{}
	for _, d := range s.Deliveries {
		if d.Target == TargetEndpoint {
			s.staleEndpoints[d.EndpointID] = true
		}
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
	order := s.alerts()
	lo, hi := 0, len(order)
	if f.From != nil {
		from := *f.From
		lo, _ = slices.BinarySearchFunc(order, from, func(a *Alert, t time.Time) int { return a.TriggeredAt.Compare(t) })
	}
	if f.To != nil {
		to := *f.To
		// the first alert after To
		hi, _ = slices.BinarySearchFunc(order, to, func(a *Alert, t time.Time) int {
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
			p.Alerts = append(p.Alerts, *order[i])
		}
	} else {
		for i := hi - 1; i >= lo; i-- {
			a := order[i]
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
	ds := s.endpointDeliveries(endpointID)
	p := DeliveryPage{Deliveries: []Delivery{}}
	start, total := (f.Page-1)*f.Limit, 0
	if f.Status == "" {
		total = len(ds)
		for i := total - 1 - start; i >= 0 && i > total-1-start-f.Limit; i-- {
			p.Deliveries = append(p.Deliveries, *ds[i])
		}
	} else {
		for i := len(ds) - 1; i >= 0; i-- {
			d := ds[i]
			if d.Status != f.Status {
				continue
			}
			if total >= start && total < start+f.Limit {
				p.Deliveries = append(p.Deliveries, *d)
			}
			total++
		}
	}
	p.Pagination = NewPagination(f.Page, f.Limit, total)
	return p
}
