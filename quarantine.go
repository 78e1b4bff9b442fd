package supplyplan

import "strconv"

// Quarantine of stored numbers. An earlier version accepted any finite number (1e308 as a
// purchase-order line's quantity), so a journal or snapshot written by it may hold values whose sums
// overflow to +Inf and break every response that adds them. When the tenant's state is loaded, a
// number of a product, stock level, purchase order, order or transfer that is not finite or beyond
// ±MaxStored is treated as absent: an optional number (unitCost, unitPrice) is dropped, a bin, a lot
// or a line holding it is left out, any other number (quantityOnHand, a transfer's quantity) becomes
// 0. The record stays otherwise as it was; the journal is not rewritten (the next snapshot holds the
// cleaned value). Each case is reported (TakeQuarantined), so that the service logs it.

// QuarantinedValue is one stored number left out when the state was loaded.
type QuarantinedValue struct {
	Kind  string  `json:"kind"`
	ID    string  `json:"id"`
	Field string  `json:"field"`
	Value float64 `json:"-"` // may be NaN or infinite in memory (never from JSON)
}

// String renders the value for a log line.
func (q QuarantinedValue) String() string {
	return q.Kind + " " + strconv.Quote(q.ID) + " " + q.Field + "=" + strconv.FormatFloat(q.Value, 'g', -1, 64)
}

// quarantiner collects what one record lost.
type quarantiner struct {
	kind, id string
	out      *[]QuarantinedValue
}

func (q quarantiner) bad(field string, v float64) bool {
	if StoredOK(v) {
		return false
	}
	*q.out = append(*q.out, QuarantinedValue{Kind: q.kind, ID: q.id, Field: field, Value: v})
	return true
}

// zero sets *v to 0 when it is out of bounds.
func (q quarantiner) zero(field string, v *float64) {
	if q.bad(field, *v) {
		*v = 0
	}
}

// optional drops *p when it is out of bounds.
func (q quarantiner) optional(field string, p **float64) {
	if *p != nil && q.bad(field, **p) {
		*p = nil
	}
}

// quarantine cleans the value of a record of kind, in place (it is freshly decoded or built for
// this write, never shared), and appends what it left out to out. The sub-states owning these
// values (CatalogState, TransfersState) call it from Apply and on snapshot load, and keep what it
// reported until TenantState.TakeQuarantined.
func quarantine(kind, id string, v any, out *[]QuarantinedValue) {
	q := quarantiner{kind: kind, id: id, out: out}
	switch v := v.(type) {
	case *Product:
		q.optional("unitCost", &v.UnitCost)
		q.optional("unitPrice", &v.UnitPrice)
	case *InventoryLevel:
		q.zero("quantityOnHand", &v.QuantityOnHand)
		q.zero("quantityReserved", &v.QuantityReserved)
		q.zero("reorderPoint", &v.ReorderPoint)
		for bin, x := range v.Bins {
			if q.bad("bins."+bin, x) {
				delete(v.Bins, bin)
			}
		}
		v.Lots = keep(v.Lots, func(i int, l Lot) bool { return !q.bad("lots["+strconv.Itoa(i)+"].quantity", l.Quantity) })
	case *PurchaseOrder:
		v.Lines = keep(v.Lines, func(i int, l POLine) bool {
			f := "lines[" + strconv.Itoa(i) + "]."
			return !q.bad(f+"quantity", l.Quantity) && !q.bad(f+"unitCost", l.UnitCost)
		})
	case *Order:
		v.Lines = keep(v.Lines, func(i int, l OrderLine) bool { return !q.bad("lines["+strconv.Itoa(i)+"].quantity", l.Quantity) })
	case *Transfer:
		q.zero("quantity", &v.Quantity)
		v.Picks = keep(v.Picks, func(i int, p BinPick) bool { return !q.bad("picks["+strconv.Itoa(i)+"].quantity", p.Quantity) })
	}
}

// keep returns the items ok accepts, reusing list's array; nil stays nil.
func keep[T any](list []T, ok func(int, T) bool) []T {
	if list == nil {
		return nil
	}
	out := list[:0]
	for i, x := range list {
		if ok(i, x) {
			out = append(out, x)
		}
	}
	return out
}
