package supplyplan

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// An allocation event in the outbox (order.allocation_succeeded, order.allocation_failed) repeats
// its allocation: the succeeded event's lines are the allocation's lines with their reservations,
// about a quarter of the journal of an orders import with allocation. The journal writes the event
// as a reference to the allocation record written before it in the same entry (record kind
// "allocevent": the event's id, type, organization, timestamp and message, the order and its
// version), and replay rebuilds the event from that allocation, which the ledger holds when the
// reference is applied (the records of an entry are applied in order). The rebuilt event is the
// event that was written: EncodeRecords takes this form only when the allocation rebuilds every
// field of the event's data exactly (allocationRebuilds); any other event is journaled whole, as
// before. Journals written before this form existed hold whole events, and replay reads them as
// it always did. Only the journal takes this form: the live state, the outbox relay and snapshots
// hold whole events.

// KindAllocationEventRef is the journal's record kind of an allocation event written as a
// reference to its allocation; applying it puts the rebuilt event in the outbox.
const KindAllocationEventRef = "allocevent"

// allocEventLookback bounds how far before an event EncodeRecords looks for its allocation record
// (the allocation writes it right before the event, after the order's reservations at most).
const allocEventLookback = 64

func init() {
	RegisterKind(KindAllocationEventRef, func() any { return new(allocationEventRef) })
}

// allocationEventRef is the journaled form of an allocation event whose data its allocation
// rebuilds.
type allocationEventRef struct {
	ID             string    `json:"id"`
	Type           string    `json:"type"`
	OrganizationID string    `json:"organizationId"`
	Timestamp      time.Time `json:"timestamp"`
	OrderID        string    `json:"orderId"`
	OrderVersion   int64     `json:"orderVersion"`
	// Message is the failed event's message (it is not part of the allocation).
	Message string `json:"message,omitempty"`
}

// appendAllocationEventRef writes recs[i] as an allocation event reference when it is an outbox
// allocation event that the allocation record before it in recs rebuilds exactly; false leaves b
// as it was (the record is written whole).
func appendAllocationEventRef(b []byte, recs []Record, i int) ([]byte, bool) {
	r := recs[i]
	if r.Kind != KindPendingEvent || r.Del {
		return b, false
	}
	e, ok := r.Value.(*DomainEvent)
	if !ok || e == nil || r.ID != e.ID {
		return b, false
	}
	var orderID, message string
	var version int64
	switch d := e.Data.(type) {
	case AllocationSucceeded:
		orderID, version = d.OrderID, d.OrderVersion
	case AllocationFailed:
		orderID, version, message = d.OrderID, d.OrderVersion, d.Message
	default:
		return b, false
	}
	if !utf8.ValidString(e.ID) || !utf8.ValidString(e.Type) || !utf8.ValidString(e.OrganizationID) || !utf8.ValidString(message) {
		return b, false // written whole: see allocationRebuilds
	}
	a := allocationBefore(recs, i, orderID)
	if a == nil || !allocationRebuilds(a, e) {
		return b, false
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"k":"` + KindAllocationEventRef + `","i":`)
	w.str(r.ID)
	w.raw(`,"v":{"id":`)
	w.str(e.ID)
	w.raw(`,"type":`)
	w.str(e.Type)
	w.raw(`,"organizationId":`)
	w.str(e.OrganizationID)
	w.raw(`,"timestamp":`)
	w.time(e.Timestamp)
	w.raw(`,"orderId":`)
	w.str(orderID)
	w.raw(`,"orderVersion":`)
	w.int(version)
	if message != "" {
		w.raw(`,"message":`)
		w.str(message)
	}
	w.raw("}}")
	if !w.ok {
		return b, false
	}
	return w.b, true
}

// allocationBefore returns the allocation the last record of orderID's allocation before recs[i]
// stores (nil when there is none within allocEventLookback records, or it is a deletion): the
// allocation the ledger holds when recs[i] is applied.
func allocationBefore(recs []Record, i int, orderID string) *Allocation {
	for j := i - 1; j >= 0 && j >= i-allocEventLookback; j-- {
		r := &recs[j]
		if r.Kind != KindAllocation || r.ID != orderID {
			continue
		}
		if r.Del {
			return nil
		}
		a, _ := r.Value.(*Allocation)
		return a
	}
	return nil
}

// allocationRebuilds reports whether allocationEventData(a, message) gives e's type and data
// field for field (floats bit for bit, times equal in every part, strings valid UTF-8: the
// encoding replaces invalid bytes, so such a string would not come back as it was), so that the
// rebuilt event encodes to the same bytes.
func allocationRebuilds(a *Allocation, e *DomainEvent) bool {
	switch d := e.Data.(type) {
	case AllocationSucceeded:
		if e.Type != EventAllocationSucceeded || a.Status == AllocFailed || d.OrderID != a.OrderID || !utf8.ValidString(d.OrderID) ||
			d.OrderVersion != a.OrderVersion || d.Partial != (a.Status != AllocAllocated) || d.Lines == nil || len(d.Lines) != len(a.Lines) {
			return false
		}
		for k := range d.Lines {
			x, y := &d.Lines[k], &a.Lines[k]
			if x.LineID != y.LineID || !utf8.ValidString(x.LineID) || !sameBits(x.BackorderedQuantity, y.BackorderedQuantity) ||
				!sameTimePtr(x.PromiseDate, y.PromiseDate) || x.Allocations == nil || len(x.Allocations) != len(y.Allocations) {
				return false
			}
			for m := range x.Allocations {
				p, q := &x.Allocations[m], &y.Allocations[m]
				if p.LocationID != q.LocationID || p.ReservationID != q.ReservationID || !sameBits(p.Quantity, q.Quantity) ||
					!utf8.ValidString(p.LocationID) || !utf8.ValidString(p.ReservationID) {
					return false
				}
			}
		}
		return true
	case AllocationFailed:
		if e.Type != EventAllocationFailed || a.Status != AllocFailed || d.OrderID != a.OrderID || !utf8.ValidString(d.OrderID) ||
			d.OrderVersion != a.OrderVersion || d.ReasonCode != a.ReasonCode || !utf8.ValidString(d.ReasonCode) ||
			!sameTimePtr(d.EarliestPromiseDate, a.EarliestPromiseDate) || d.Lines == nil || len(d.Lines) != len(a.Lines) {
			return false
		}
		for k := range d.Lines {
			if d.Lines[k].LineID != a.Lines[k].LineID || !utf8.ValidString(d.Lines[k].LineID) || !sameBits(d.Lines[k].Shortfall, a.Lines[k].Shortfall) {
				return false
			}
		}
		return true
	}
	return false
}

func sameBits(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }

// sameTimePtr: both nil, or the same time in every part (instant, location, monotonic reading).
func sameTimePtr(x, y *time.Time) bool {
	if x == nil || y == nil {
		return x == y
	}
	return *x == *y
}

// applyAllocationEventRef puts the event a reference names in the outbox, rebuilt from the
// allocation of its order the ledger holds.
func (s *TenantState) applyAllocationEventRef(r Record) error {
	if r.Del {
		return s.OutboxState.Apply(Del(KindPendingEvent, r.ID))
	}
	ref, ok := r.Value.(*allocationEventRef)
	if !ok || ref == nil {
		return fmt.Errorf("%s record %s has value %T", r.Kind, r.ID, r.Value)
	}
	a := s.Allocations[ref.OrderID]
	if a == nil || a.OrderVersion != ref.OrderVersion {
		return fmt.Errorf("%s record %s: the ledger holds no allocation of order %q version %d", r.Kind, r.ID, ref.OrderID, ref.OrderVersion)
	}
	typ, data := allocationEventData(a, ref.Message)
	if typ != ref.Type {
		return fmt.Errorf("%s record %s: a %s event, but the allocation of order %q is %s", r.Kind, r.ID, ref.Type, ref.OrderID, a.Status)
	}
	e := &DomainEvent{ID: ref.ID, Type: typ, OrganizationID: ref.OrganizationID, Timestamp: ref.Timestamp, Data: data}
	return s.OutboxState.Apply(Put(KindPendingEvent, r.ID, e))
}
