package supplyplan

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Available-to-promise (docs/allocation.md#atp).
//
// At one (sku, location), with
//
//	stock = onHand − reserved − safetyStock
//	reserved = reservedOutside (the level's quantityReserved: imported, draft transfers)
//	         + the ledger's HELD (not expired) and COMMITTED reservations
//	P(t) = stock + receipts due by t − backorders promised by t
//
// where receipts are open purchase-order lines and transfers in transit to the location (an
// overdue one counts at its date), the available-to-promise at date d is
//
//	ATP(d) = min over t ≥ d of P(t)
//
// The minimum looks ahead: quantity already promised to a later backorder is not offered again at
// an earlier date. Without backorders P never decreases, so ATP(d) = P(d), the formula
// onHand − reserved − safetyStock + receipts expected by d. Allocation reserves only stock on
// hand: a line may take min(stock, min over every t of P(t)) now; what receipts bring is promised
// as backorders.

// Receipt is stock expected at a location: an open purchase-order line or a transfer in transit.
type Receipt struct {
	At       time.Time `json:"at"`
	Quantity float64   `json:"quantity"`
	// Ref names its source, e.g. "po:PO-1" or "transfer:trf_...".
	Ref string `json:"ref,omitempty"`
}

// Promise is quantity promised from receipts (a backorder), due At.
type Promise struct {
	At       time.Time `json:"at"`
	Quantity float64   `json:"quantity"`
}

// Supply is what the tenant's state holds at one (sku, location) outside the reservation ledger.
type Supply struct {
	OnHand float64
	// ReservedOutside is the level's quantityReserved: reserved outside the ledger (imported from
	// the caller's systems, held by draft transfers).
	ReservedOutside float64
	// SafetyStock is the quantity protected from promises (SafetyStockPolicy).
	SafetyStock float64
	Receipts    []Receipt
}

// SafetyStockPolicy says which part of a level allocation may not promise.
type SafetyStockPolicy struct {
	// ReorderPointShare is the part of the level's reorder point that is protected when the level
	// has no explicit safety stock: 0 (the default) protects nothing, 1 the whole reorder point.
	ReorderPointShare float64 `json:"reorderPointShare"`
}

// Validate checks the share lies in [0, 1].
func (p SafetyStockPolicy) Validate() error {
	if !(p.ReorderPointShare >= 0 && p.ReorderPointShare <= 1) {
		return Invalid("reorderPointShare", "must be between 0 and 1")
	}
	return nil
}

// Protected returns the protected safety stock of a level: its explicit safety stock when it has
// one, else ReorderPointShare × its reorder point.
func (p SafetyStockPolicy) Protected(explicit *float64, reorderPoint float64) float64 {
	if explicit != nil {
		return math.Max(0, *explicit)
	}
	return math.Max(0, p.ReorderPointShare*reorderPoint)
}

// ATPFigure is the available-to-promise of one (sku, location) at a date with its parts
// (GET /api/inventory/atp).
type ATPFigure struct {
	SKU        string    `json:"skuId"`
	LocationID string    `json:"locationId"`
	Date       time.Time `json:"date"`
	OnHand     float64   `json:"onHand"`
	// Reserved is reservedOutside plus the ledger's active reservations.
	Reserved    float64 `json:"reserved"`
	SafetyStock float64 `json:"safetyStock"`
	// Incoming is the receipts due by Date.
	Incoming float64 `json:"incoming"`
	// Backordered is the backorders promised by Date.
	Backordered float64 `json:"backordered"`
	// Available is ATP(Date); negative when more is promised than there is.
	Available float64 `json:"available"`
}

// ComputeATP computes the figure of sup with the ledger's reserved quantity and backorders at date.
func ComputeATP(sup Supply, ledgerReserved float64, backorders []Promise, date time.Time) ATPFigure {
	f := ATPFigure{Date: date, OnHand: sup.OnHand, Reserved: sup.ReservedOutside + ledgerReserved, SafetyStock: sup.SafetyStock}
	tl := newTimeline(sup.Receipts, nil)
	for _, p := range backorders {
		tl.insert(tlEvent{at: p.At.UnixMilli(), qty: -p.Quantity})
	}
	d := date.UnixMilli()
	for _, e := range tl.events {
		if e.at > d {
			break
		}
		if e.qty > 0 {
			f.Incoming += e.qty
		} else {
			f.Backordered -= e.qty
		}
	}
	f.Incoming, f.Backordered = snap(f.Incoming), snap(f.Backordered)
	f.Available = snap(tl.futureATP(f.OnHand-f.Reserved-f.SafetyStock, d))
	return f
}

// tlEvent is a change of the projected stock at a time (unix ms): a receipt (+) or a promise (−).
// A promise's owner is "<orderId>\x00<lineId>".
type tlEvent struct {
	at    int64
	qty   float64
	owner string
}

// eventOrder sorts by time; at the same time receipts come before promises.
func eventOrder(a, b tlEvent) int {
	if c := cmp.Compare(a.at, b.at); c != 0 {
		return c
	}
	if c := cmp.Compare(b2i(b.qty > 0), b2i(a.qty > 0)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.owner, b.owner); c != 0 {
		return c
	}
	return cmp.Compare(a.qty, b.qty)
}

// timeline is the receipts and promises of one (sku, location), in eventOrder.
type timeline struct{ events []tlEvent }

func newTimeline(receipts []Receipt, promises []tlEvent) timeline {
	tl := timeline{events: make([]tlEvent, 0, len(receipts)+len(promises))}
	for _, r := range receipts {
		if r.Quantity > 0 {
			tl.events = append(tl.events, tlEvent{at: r.At.UnixMilli(), qty: r.Quantity})
		}
	}
	tl.events = append(tl.events, promises...)
	slices.SortFunc(tl.events, eventOrder)
	return tl
}

func (tl *timeline) insert(e tlEvent) {
	i, _ := slices.BinarySearchFunc(tl.events, e, eventOrder)
	tl.events = slices.Insert(tl.events, i, e)
}

// remove deletes the event equal to e; it reports whether there was one.
func (tl *timeline) remove(e tlEvent) bool {
	i, found := slices.BinarySearchFunc(tl.events, e, eventOrder)
	if !found {
		return false
	}
	tl.events = slices.Delete(tl.events, i, i+1)
	return true
}

// reservable is what may be reserved from stock now: min(stock, min over every t of P(t)), ≥ 0.
func (tl *timeline) reservable(stock float64) float64 {
	low, p := stock, stock
	for _, e := range tl.events {
		p += e.qty
		low = min(low, p)
	}
	return max(0, low)
}

// futureATP is ATP(d) = min over t ≥ d of P(t).
func (tl *timeline) futureATP(stock float64, d int64) float64 {
	p := stock
	i := 0
	for ; i < len(tl.events) && tl.events[i].at <= d; i++ {
		p += tl.events[i].qty
	}
	low := p
	for ; i < len(tl.events); i++ {
		p += tl.events[i].qty
		low = min(low, p)
	}
	return low
}

// earliest returns the earliest time c in [from, deadline] with ATP(c) ≥ need: from itself or the
// time of an event (ATP only steps up at a receipt). ATP never decreases with the date, so the first
// such candidate is the one.
func (tl *timeline) earliest(stock, need float64, from, deadline int64) (int64, bool) {
	if tl.futureATP(stock, from) >= need-quantityEps {
		return from, true
	}
	// suffix minima of P after each event: ATP(at of event i) = suffix[i] when i is the last event
	// at that time.
	n := len(tl.events)
	if n == 0 {
		return 0, false
	}
	prefix := make([]float64, n)
	p := stock
	for i, e := range tl.events {
		p += e.qty
		prefix[i] = p
	}
	for i := n - 2; i >= 0; i-- {
		prefix[i] = min(prefix[i], prefix[i+1])
	}
	for i, e := range tl.events {
		if e.at <= from || e.at > deadline {
			continue
		}
		if i+1 < n && tl.events[i+1].at == e.at {
			continue // the last event of this instant holds its ATP
		}
		if prefix[i] >= need-quantityEps {
			return e.at, true
		}
	}
	return 0, false
}
