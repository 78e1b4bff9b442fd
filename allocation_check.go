package supplyplan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The inconsistency finder (GET /api/allocation/inconsistencies) and its audited repair: ledger
// entries that disagree with stock or orders. Allocation keeps the ledger consistent by
// construction; what it finds comes from elsewhere: stock re-imported lower than what is reserved,
// purchase orders cancelled under backorders, orders changed by a path that did not re-allocate,
// or a ledger written by an older version.

// Inconsistency codes.
const (
	// IncNegativeQuantity: a reservation of 0 or less (or not finite), or an allocation line with a
	// negative backordered quantity or shortfall.
	IncNegativeQuantity = "NEGATIVE_QUANTITY"
	// IncOrderMissing: an active reservation of an order that does not exist.
	IncOrderMissing = "ORDER_MISSING"
	// IncOrderClosed: an active reservation of a CANCELLED or SHIPPED order.
	IncOrderClosed = "ORDER_CLOSED"
	// IncLineMismatch: an active reservation of a line the order no longer has, or of another sku.
	IncLineMismatch = "LINE_MISMATCH"
	// IncLineOverReserved: the active reservations of a line add up to more than it orders.
	IncLineOverReserved = "LINE_OVER_RESERVED"
	// IncBeyondOnHand: reserved (ledger plus quantityReserved) beyond on hand at a location.
	IncBeyondOnHand = "RESERVED_BEYOND_ON_HAND"
	// IncHoldExpired: a HELD reservation past its expiry that the sweep has not expired yet.
	IncHoldExpired = "HOLD_EXPIRED"
	// IncAllocationMismatch: an order's allocation lists other reservations (ids, quantities,
	// locations, version) than the ledger holds for it, or there is none for its reservations.
	IncAllocationMismatch = "ALLOCATION_MISMATCH"
	// IncBackorderUnsupported: backorders promised beyond what stock and receipts bring.
	IncBackorderUnsupported = "BACKORDER_UNSUPPORTED"
	// IncAllocationOrphan: an allocation of an order that does not exist.
	IncAllocationOrphan = "ALLOCATION_ORDER_MISSING"
	// IncIndexDrift: the derived (sku, location) totals disagree with the reservations.
	IncIndexDrift = "INDEX_DRIFT"
)

// Inconsistency is one finding.
type Inconsistency struct {
	Code          string `json:"code"`
	Message       string `json:"message"`
	OrderID       string `json:"orderId,omitempty"`
	LineID        string `json:"lineId,omitempty"`
	ReservationID string `json:"reservationId,omitempty"`
	SKU           string `json:"skuId,omitempty"`
	LocationID    string `json:"locationId,omitempty"`
	// Quantity is the quantity at stake (the excess, the unsupported promise, the difference).
	Quantity float64 `json:"quantity,omitempty"`
}

// OrderLookup finds an order (as allocation sees it) by id.
type OrderLookup func(id string) (AllocOrder, bool)

// FindInconsistencies checks the ledger against the orders and the stock, in a stable order.
func (s *AllocationState) FindInconsistencies(w AllocationWorld, orders OrderLookup, now time.Time) []Inconsistency {
	x := s.index()
	var out []Inconsistency
	add := func(i Inconsistency) { out = append(out, i) }

	// the derived totals against a fresh derivation
	fresh := &AllocationState{Reservations: s.Reservations, Allocations: s.Allocations}
	fresh.rebuildIndex()
	for _, k := range unionKeys(x.byKey, fresh.aidx.byKey) {
		got, want := x.byKey[k], fresh.aidx.byKey[k]
		var g, wq float64
		var gp, wp int
		if got != nil {
			g, gp = got.reserved, len(got.promises.events)
		}
		if want != nil {
			wq, wp = want.reserved, len(want.promises.events)
		}
		if math.Abs(g-wq) > 1e-6 || gp != wp {
			add(Inconsistency{Code: IncIndexDrift, SKU: k.sku, LocationID: k.loc, Quantity: snap(g - wq),
				Message: fmt.Sprintf("the ledger's total at %s/%s reads %g reserved and %d backorders; its reservations hold %g and %d", k.sku, k.loc, g, gp, wq, wp)})
		}
	}

	ids := make([]string, 0, len(s.Reservations))
	for id, r := range s.Reservations {
		if r.Status.Active() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	lineSum := map[[2]string]float64{}
	activeByOrder := map[string][]*Reservation{}
	for _, id := range ids {
		r := s.Reservations[id]
		base := Inconsistency{OrderID: r.OrderID, LineID: r.LineID, ReservationID: r.ID, SKU: r.SKU, LocationID: r.LocationID, Quantity: r.Quantity}
		if !(r.Quantity > 0) || !StoredOK(r.Quantity) {
			base.Code, base.Message = IncNegativeQuantity, fmt.Sprintf("reservation %s holds %g", r.ID, r.Quantity)
			add(base)
			continue
		}
		if !r.ActiveAt(now) {
			base.Code, base.Message = IncHoldExpired, fmt.Sprintf("reservation %s expired at %s and is still HELD", r.ID, r.ExpiresAt.Format(time.RFC3339))
			add(base)
			continue
		}
		activeByOrder[r.OrderID] = append(activeByOrder[r.OrderID], r)
		o, ok := orders(r.OrderID)
		switch {
		case !ok:
			base.Code, base.Message = IncOrderMissing, fmt.Sprintf("reservation %s belongs to order %q, which does not exist", r.ID, r.OrderID)
			add(base)
			continue
		case o.Status == OrderCancelled || o.Status == OrderShipped:
			base.Code, base.Message = IncOrderClosed, fmt.Sprintf("reservation %s belongs to order %q, which is %s", r.ID, r.OrderID, o.Status)
			add(base)
			continue
		}
		line := orderLine(&o, r.LineID)
		if line == nil || line.SKU != r.SKU {
			base.Code, base.Message = IncLineMismatch, fmt.Sprintf("reservation %s holds %s for line %q of order %q, which does not order it", r.ID, r.SKU, r.LineID, r.OrderID)
			add(base)
			continue
		}
		lineSum[[2]string{r.OrderID, r.LineID}] += r.Quantity
	}
	lineKeys := make([][2]string, 0, len(lineSum))
	for k := range lineSum {
		lineKeys = append(lineKeys, k)
	}
	slices.SortFunc(lineKeys, func(a, b [2]string) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	for _, k := range lineKeys {
		o, _ := orders(k[0])
		line := orderLine(&o, k[1])
		if sum := lineSum[k]; sum > line.Quantity+quantityEps {
			add(Inconsistency{Code: IncLineOverReserved, OrderID: k[0], LineID: k[1], SKU: line.SKU, Quantity: snap(sum - line.Quantity),
				Message: fmt.Sprintf("line %q of order %q orders %g and holds %g", k[1], k[0], line.Quantity, sum)})
		}
	}

	for _, k := range s.sortedKeys() {
		sup := w.Supply(k.sku, k.loc)
		reserved := s.ReservedAt(k.sku, k.loc, now)
		if reserved > quantityEps && reserved+sup.ReservedOutside > sup.OnHand+quantityEps {
			add(Inconsistency{Code: IncBeyondOnHand, SKU: k.sku, LocationID: k.loc, Quantity: snap(reserved + sup.ReservedOutside - sup.OnHand),
				Message: fmt.Sprintf("%s at %s has %g on hand and %g reserved (%g by orders, %g outside the ledger)", k.sku, k.loc,
					sup.OnHand, reserved+sup.ReservedOutside, reserved, sup.ReservedOutside)})
		}
		if kl := x.byKey[k]; kl != nil && len(kl.promises.events) > 0 {
			if short := unsupported(sup, reserved, kl.promises.events); short > quantityEps {
				add(Inconsistency{Code: IncBackorderUnsupported, SKU: k.sku, LocationID: k.loc, Quantity: snap(short),
					Message: fmt.Sprintf("backorders of %s at %s exceed stock and receipts by %g", k.sku, k.loc, snap(short))})
			}
		}
	}

	orderIDs := make([]string, 0, len(s.Allocations)+len(activeByOrder))
	for id := range s.Allocations {
		orderIDs = append(orderIDs, id)
	}
	for id := range activeByOrder {
		if _, ok := s.Allocations[id]; !ok {
			orderIDs = append(orderIDs, id)
		}
	}
	slices.Sort(orderIDs)
	for _, id := range orderIDs {
		a := s.Allocations[id]
		o, exists := orders(id)
		if a != nil && !exists {
			add(Inconsistency{Code: IncAllocationOrphan, OrderID: id, Message: fmt.Sprintf("allocation of order %q, which does not exist", id)})
			continue
		}
		if a != nil {
			for _, l := range a.Lines {
				if !(l.BackorderedQuantity >= 0) || !(l.Shortfall >= 0) {
					add(Inconsistency{Code: IncNegativeQuantity, OrderID: id, LineID: l.LineID, SKU: l.SKU,
						Message: fmt.Sprintf("line %q of the allocation of %q has backordered %g and shortfall %g", l.LineID, id, l.BackorderedQuantity, l.Shortfall)})
				}
			}
		}
		if !exists || o.Status == OrderCancelled || o.Status == OrderShipped {
			continue // their reservations are reported above
		}
		if msg, diff := allocationMismatch(a, activeByOrder[id], s.Reservations, now); msg != "" {
			add(Inconsistency{Code: IncAllocationMismatch, OrderID: id, Quantity: diff, Message: msg})
		}
	}
	return out
}

func orderLine(o *AllocOrder, lineID string) *AllocLine {
	for i := range o.Lines {
		if o.Lines[i].LineID == lineID {
			return &o.Lines[i]
		}
	}
	return nil
}

func unionKeys(a, b map[stockKey]*keyLedger) []stockKey {
	out := make([]stockKey, 0, len(a))
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, compareKeys)
	return out
}

func compareKeys(a, b stockKey) int {
	if c := cmp.Compare(a.sku, b.sku); c != 0 {
		return c
	}
	return cmp.Compare(a.loc, b.loc)
}

func (s *AllocationState) sortedKeys() []stockKey {
	x := s.index()
	out := make([]stockKey, 0, len(x.byKey))
	for k := range x.byKey {
		out = append(out, k)
	}
	slices.SortFunc(out, compareKeys)
	return out
}

// unsupported is how far the promises at a key go beyond what stock on hand (what reservations
// leave of it, at least 0) and receipts bring: −min over t of P(t), with stock floored at 0 so an
// excess of reservations is not counted twice.
func unsupported(sup Supply, reserved float64, promises []tlEvent) float64 {
	tl := newTimeline(sup.Receipts, promises)
	stock := max(0, sup.OnHand-sup.ReservedOutside-reserved)
	return -min(0, tl.futureATP(stock, math.MinInt64))
}

// allocationMismatch compares an allocation's listed reservations with the order's active ones.
func allocationMismatch(a *Allocation, active []*Reservation, all map[string]*Reservation, now time.Time) (string, float64) {
	var activeSum float64
	for _, r := range active {
		activeSum += r.Quantity
	}
	if a == nil {
		if len(active) == 0 {
			return "", 0
		}
		return fmt.Sprintf("order %q holds %d reservations (%g) and has no allocation", active[0].OrderID, len(active), activeSum), snap(activeSum)
	}
	if a.Status == AllocShipped || a.Status == AllocReleased {
		if len(active) > 0 {
			return fmt.Sprintf("the allocation of %q is %s and the order still holds %g", a.OrderID, a.Status, activeSum), snap(activeSum)
		}
		return "", 0
	}
	listed := map[string]LineAllocation{}
	lineOf := map[string]string{}
	var listedSum float64
	for _, l := range a.Lines {
		for _, al := range l.Allocations {
			if r := all[al.ReservationID]; r != nil && r.Status == ResHeld && !r.ActiveAt(now) {
				continue // an expired hold, reported as HOLD_EXPIRED
			}
			listed[al.ReservationID] = al
			lineOf[al.ReservationID] = l.LineID
			listedSum += al.Quantity
		}
	}
	for _, r := range active {
		al, ok := listed[r.ID]
		switch {
		case !ok:
			return fmt.Sprintf("reservation %s of order %q is not in its allocation", r.ID, a.OrderID), snap(math.Abs(activeSum - listedSum))
		case al.Quantity != r.Quantity || al.LocationID != r.LocationID || lineOf[r.ID] != r.LineID:
			return fmt.Sprintf("the allocation of %q lists reservation %s as %g at %s, the ledger holds %g at %s", a.OrderID, r.ID, al.Quantity,
				al.LocationID, r.Quantity, r.LocationID), snap(math.Abs(activeSum - listedSum))
		case r.OrderVersion != a.OrderVersion:
			return fmt.Sprintf("reservation %s is of version %d of order %q, its allocation of version %d", r.ID, r.OrderVersion, a.OrderID, a.OrderVersion), 0
		}
		delete(listed, r.ID)
	}
	for id := range listed {
		return fmt.Sprintf("the allocation of %q lists reservation %s, which the ledger does not hold", a.OrderID, id), snap(math.Abs(activeSum - listedSum))
	}
	return "", 0
}

// AllocationAudit is one audited repair of the ledger (record kind "allocaudit").
type AllocationAudit struct {
	ID            string    `json:"id"`
	At            time.Time `json:"at"`
	By            string    `json:"by"`
	Code          string    `json:"code"`
	Action        string    `json:"action"`
	OrderID       string    `json:"orderId,omitempty"`
	ReservationID string    `json:"reservationId,omitempty"`
	SKU           string    `json:"skuId,omitempty"`
	LocationID    string    `json:"locationId,omitempty"`
	Quantity      float64   `json:"quantity,omitempty"`
	Message       string    `json:"message"`
}

// Repair actions.
const (
	ActionReleased        = "RELEASED_RESERVATION"
	ActionExpired         = "EXPIRED_HOLD"
	ActionRewrote         = "REWROTE_ALLOCATION"
	ActionDroppedPromise  = "DROPPED_BACKORDER"
	ActionDeletedOrphan   = "DELETED_ALLOCATION"
	ActionRebuiltIndex    = "REBUILT_INDEX"
	ActionFlaggedQuantity = "FLAGGED"
)

// Repair fixes what FindInconsistencies finds and returns one audit entry per fix with the records
// to apply (audit entries included). Fixes: reservations of missing or closed orders, of lines
// that are gone, of quantity 0 or less are released; expired holds expire; a line holding more
// than it orders releases its newest reservations; at a location reserving beyond on hand, HELD
// reservations go before COMMITTED ones, lowest priority and newest first, until it fits;
// unsupported backorders are dropped lowest priority and newest first (their quantity becomes
// shortfall); allocations are rewritten from the ledger; allocations of missing orders are deleted.
// No event is emitted (events are once per order version).
func (s *AllocationState) Repair(w AllocationWorld, orders OrderLookup, by string, now time.Time) ([]AllocationAudit, []Record) {
	findings := s.FindInconsistencies(w, orders, now)
	var audits []AllocationAudit
	audit := func(i Inconsistency, action, msg string, q float64) {
		audits = append(audits, AllocationAudit{ID: NewID("aau"), At: now, By: by, Code: i.Code, Action: action, OrderID: i.OrderID,
			ReservationID: i.ReservationID, SKU: i.SKU, LocationID: i.LocationID, Quantity: q, Message: msg})
	}
	if slices.ContainsFunc(findings, func(i Inconsistency) bool { return i.Code == IncIndexDrift }) {
		for _, i := range findings {
			if i.Code == IncIndexDrift {
				audit(i, ActionRebuiltIndex, i.Message+": rebuilt from the reservations", i.Quantity)
			}
		}
		s.rebuildIndex() // derived state only: no record
		findings = s.FindInconsistencies(w, orders, now)
	}

	changed := map[string]*Reservation{} // reservation id -> its new (terminal) value
	touched := map[string]bool{}         // orders whose allocation is rewritten
	release := func(r *Reservation, status ReservationStatus, reason string) {
		if _, done := changed[r.ID]; done {
			return
		}
		v := r.released(status, reason, now)
		changed[r.ID] = &v
		touched[r.OrderID] = true
	}
	stillActive := func(r *Reservation) bool { _, gone := changed[r.ID]; return !gone && r.ActiveAt(now) }

	for _, i := range findings {
		switch i.Code {
		case IncNegativeQuantity, IncOrderMissing, IncOrderClosed, IncLineMismatch:
			if i.ReservationID == "" {
				continue
			}
			r := s.Reservations[i.ReservationID]
			release(r, ResReleased, ReleaseRepair)
			audit(i, ActionReleased, i.Message+": released", r.Quantity)
		case IncHoldExpired:
			release(s.Reservations[i.ReservationID], ResExpired, ReleaseHoldExpired)
			audit(i, ActionExpired, i.Message+": expired", i.Quantity)
		}
	}
	for _, i := range findings {
		if i.Code != IncLineOverReserved {
			continue
		}
		o, _ := orders(i.OrderID)
		line := orderLine(&o, i.LineID)
		var held []*Reservation
		var sum float64
		for _, r := range s.activeOf(i.OrderID, now) {
			if r.LineID == i.LineID && stillActive(r) {
				held = append(held, r)
				sum += r.Quantity
			}
		}
		slices.SortFunc(held, func(a, b *Reservation) int { return cmp.Compare(b.ID, a.ID) }) // newest first
		for _, r := range held {
			if sum <= line.Quantity+quantityEps {
				break
			}
			release(r, ResReleased, ReleaseRepair)
			sum -= r.Quantity
			audit(Inconsistency{Code: i.Code, OrderID: r.OrderID, ReservationID: r.ID, SKU: r.SKU, LocationID: r.LocationID}, ActionReleased,
				fmt.Sprintf("%s: released reservation %s (%g)", i.Message, r.ID, r.Quantity), r.Quantity)
		}
	}
	for _, i := range findings {
		if i.Code != IncBeyondOnHand {
			continue
		}
		sup := w.Supply(i.SKU, i.LocationID)
		kl := s.index().byKey[stockKey{i.SKU, i.LocationID}]
		var cands []*Reservation
		var reserved float64
		for _, sl := range kl.res {
			if r := s.index().res(sl); stillActive(r) {
				cands = append(cands, r)
				reserved += r.Quantity
			}
		}
		slices.SortFunc(cands, func(a, b *Reservation) int { // released first: HELD, lowest priority, newest
			if c := cmp.Compare(b2i(a.Status == ResCommitted), b2i(b.Status == ResCommitted)); c != 0 {
				return c
			}
			if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
				return c
			}
			return cmp.Compare(b.ID, a.ID)
		})
		for _, r := range cands {
			if reserved+sup.ReservedOutside <= sup.OnHand+quantityEps {
				break
			}
			release(r, ResReleased, ReleaseRepair)
			reserved -= r.Quantity
			audit(Inconsistency{Code: i.Code, OrderID: r.OrderID, ReservationID: r.ID, SKU: r.SKU, LocationID: r.LocationID}, ActionReleased,
				fmt.Sprintf("%s: released reservation %s (%g, %s, priority %d)", i.Message, r.ID, r.Quantity, r.Status, r.Priority), r.Quantity)
		}
	}

	// allocations, rewritten from the ledger as repaired
	allocs := map[string]*Allocation{}
	get := func(id string) *Allocation {
		if a, ok := allocs[id]; ok {
			return a
		}
		if a := s.Allocations[id]; a != nil {
			allocs[id] = a.clone()
			return allocs[id]
		}
		return nil
	}
	var deletes []string
	for _, i := range findings {
		switch i.Code {
		case IncAllocationOrphan:
			deletes = append(deletes, i.OrderID)
			audit(i, ActionDeletedOrphan, i.Message+": deleted", 0)
		case IncAllocationMismatch:
			touched[i.OrderID] = true
			audit(i, ActionRewrote, i.Message+": rewritten from the ledger", i.Quantity)
		case IncNegativeQuantity:
			if i.ReservationID == "" && i.OrderID != "" {
				touched[i.OrderID] = true
				audit(i, ActionRewrote, i.Message+": rewritten from the ledger", 0)
			}
		}
	}
	for _, i := range findings {
		if i.Code != IncBackorderUnsupported {
			continue
		}
		s.dropPromises(w, i, now, get, changed, func(a *Allocation, l *AllocationLine, b Backorder) {
			touched[a.OrderID] = true
			audit(Inconsistency{Code: i.Code, OrderID: a.OrderID, SKU: l.SKU, LocationID: b.LocationID}, ActionDroppedPromise,
				fmt.Sprintf("%s: dropped the backorder of %g of line %q of order %q promised %s", i.Message, b.Quantity, l.LineID, a.OrderID,
					b.PromiseDate.Format(time.RFC3339)), b.Quantity)
		})
	}

	var recs []Record
	resIDs := make([]string, 0, len(changed))
	for id := range changed {
		resIDs = append(resIDs, id)
	}
	slices.Sort(resIDs)
	for _, id := range resIDs {
		recs = append(recs, Put(KindReservation, id, changed[id]))
	}
	slices.Sort(deletes)
	orderIDs := make([]string, 0, len(touched))
	for id := range touched {
		if !slices.Contains(deletes, id) {
			orderIDs = append(orderIDs, id)
		}
	}
	slices.Sort(orderIDs)
	for _, id := range orderIDs {
		// the order's reservations that stay take its current version
		if o, ok := orders(id); ok && o.Status != OrderCancelled && o.Status != OrderShipped {
			for _, r := range s.activeOf(id, now) {
				if _, gone := changed[r.ID]; !gone && r.OrderVersion != o.Version {
					v := *r
					v.OrderVersion, v.UpdatedAt = o.Version, now
					recs = append(recs, Put(KindReservation, v.ID, &v))
				}
			}
		}
		if a := s.rebuiltAllocation(id, get(id), orders, changed, now); a != nil {
			recs = append(recs, Put(KindAllocation, id, a))
		}
	}
	for _, id := range deletes {
		recs = append(recs, Del(KindAllocation, id))
	}
	recs = append(recs, trimOldest(s.AllocationAudits, KindAllocationAudit, MaxAllocationAudits, len(audits))...)
	for i := range audits {
		recs = append(recs, Put(KindAllocationAudit, audits[i].ID, &audits[i]))
	}
	return audits, recs
}

// dropPromises removes backorders at the finding's key, lowest priority and newest allocation
// first, until what remains is supported; drop is called for each one removed.
func (s *AllocationState) dropPromises(w AllocationWorld, i Inconsistency, now time.Time, get func(string) *Allocation,
	changed map[string]*Reservation, drop func(*Allocation, *AllocationLine, Backorder)) {
	k := stockKey{i.SKU, i.LocationID}
	sup := w.Supply(k.sku, k.loc)
	var reserved float64
	if kl := s.index().byKey[k]; kl != nil {
		for _, sl := range kl.res {
			r := s.index().res(sl)
			if _, gone := changed[r.ID]; !gone && r.ActiveAt(now) {
				reserved += r.Quantity
			}
		}
	}
	type ref struct {
		a    *Allocation
		line int
		bo   int
	}
	var refs []ref
	var events []tlEvent
	var ids []string // the orders with promises at the key
	if kl := s.index().byKey[k]; kl != nil {
		for _, e := range kl.promises.events {
			id, _, _ := strings.Cut(e.owner, "\x00")
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	collect := func() {
		refs, events = refs[:0], events[:0]
		for _, id := range ids {
			a := get(id)
			if a == nil || a.Status == AllocShipped || a.Status == AllocReleased {
				continue
			}
			for li := range a.Lines {
				for bi, b := range a.Lines[li].Backorders {
					if a.Lines[li].SKU == k.sku && b.LocationID == k.loc {
						refs = append(refs, ref{a, li, bi})
						events = append(events, tlEvent{at: b.PromiseDate.UnixMilli(), qty: -b.Quantity, owner: promiseOwner(id, a.Lines[li].LineID)})
					}
				}
			}
		}
	}
	collect()
	slices.SortFunc(refs, func(x, y ref) int {
		if c := cmp.Compare(y.a.Priority, x.a.Priority); c != 0 {
			return c
		}
		if c := y.a.CreatedAt.Compare(x.a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(y.a.OrderID, x.a.OrderID)
	})
	order := slices.Clone(refs)
	for _, r := range order {
		collect()
		if unsupported(sup, reserved, events) <= quantityEps {
			return
		}
		l := &r.a.Lines[r.line]
		b := l.Backorders[r.bo]
		l.Backorders = slices.Delete(slices.Clone(l.Backorders), r.bo, r.bo+1)
		l.BackorderedQuantity = snap(l.BackorderedQuantity - b.Quantity)
		l.Shortfall = snap(l.Shortfall + b.Quantity)
		drop(r.a, l, b)
		// later refs of the same line point past the removed one
		for j := range order {
			if order[j].a == r.a && order[j].line == r.line && order[j].bo > r.bo {
				order[j].bo--
			}
		}
	}
}

// rebuiltAllocation rewrites an order's allocation from the ledger after the repair's releases:
// each line lists the order's active reservations of it, keeps its backorders, and the rest is
// shortfall; the status is recomputed. Nil when there is nothing to write.
func (s *AllocationState) rebuiltAllocation(id string, cur *Allocation, orders OrderLookup, changed map[string]*Reservation, now time.Time) *Allocation {
	o, exists := orders(id)
	var active []*Reservation
	for _, r := range s.activeOf(id, now) {
		if _, gone := changed[r.ID]; !gone {
			active = append(active, r)
		}
	}
	if cur == nil {
		if !exists || len(active) == 0 {
			return nil
		}
		cur = &Allocation{OrderID: id, OrderVersion: o.Version, Fill: o.FillOrDefault(), Priority: o.Priority, CreatedAt: now}
	}
	a := cur.clone()
	if exists && (o.Status == OrderCancelled || o.Status == OrderShipped) {
		if a.Status != AllocShipped && a.Status != AllocReleased {
			a.Status = AllocReleased
			for i := range a.Lines {
				a.Lines[i].Allocations, a.Lines[i].Backorders = []LineAllocation{}, nil
				a.Lines[i].BackorderedQuantity, a.Lines[i].Shortfall, a.Lines[i].PromiseDate = 0, 0, nil
			}
		}
		a.UpdatedAt = now
		return a
	}
	if exists {
		prevLines := a.Lines
		a.Lines = make([]AllocationLine, len(o.Lines))
		for i, l := range o.Lines {
			a.Lines[i] = AllocationLine{LineID: l.LineID, SKU: l.SKU, Quantity: l.Quantity}
			for _, pl := range prevLines {
				if pl.LineID == l.LineID && pl.SKU == l.SKU {
					a.Lines[i].Backorders, a.Lines[i].PromiseDate = pl.Backorders, pl.PromiseDate
				}
			}
		}
		if a.OrderVersion != o.Version {
			a.OrderVersion, a.Notified = o.Version, false
		}
	}
	for i := range a.Lines {
		l := &a.Lines[i]
		l.Allocations = []LineAllocation{}
		for _, r := range active {
			if r.LineID == l.LineID && r.SKU == l.SKU {
				l.Allocations = append(l.Allocations, LineAllocation{LocationID: r.LocationID, Quantity: r.Quantity, ReservationID: r.ID})
			}
		}
		var back float64
		kept := l.Backorders[:0:0]
		for _, b := range l.Backorders {
			if b.Quantity > 0 {
				kept = append(kept, b)
				back += b.Quantity
			}
		}
		l.Backorders, l.BackorderedQuantity = kept, snap(back)
		l.Shortfall = snap(max(0, l.Quantity-l.Reserved()-back))
		if l.Reserved()+back <= quantityEps {
			l.PromiseDate = nil
		}
	}
	a.Status = statusOf(a.Lines)
	if a.Status == AllocFailed && a.ReasonCode == "" {
		a.ReasonCode = ReasonInsufficientATP
	}
	if a.Status != AllocFailed {
		a.ReasonCode, a.EarliestPromiseDate = "", nil
	}
	a.UpdatedAt = now
	return a
}
