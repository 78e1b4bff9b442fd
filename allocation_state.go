package supplyplan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// AllocationState is the reservation ledger of a tenant: a sub-state of its TenantState, owned by
// the tenant's actor (its single writer serializes every reservation). Apply is the only way it
// changes, live and on replay; the indexes by (sku, location) and by order are derived from the
// stored maps and kept consistent by Apply (rebuilt after a snapshot loads). Stored values are
// never changed in place.
type AllocationState struct {
	Reservations     map[string]*Reservation     `json:"reservations,omitempty"`
	Allocations      map[string]*Allocation      `json:"allocations,omitempty"`
	AllocationAudits map[string]*AllocationAudit `json:"allocationAudits,omitempty"`
	AllocationRuns   map[string]*AllocationRun   `json:"allocationRuns,omitempty"`

	aidx *allocIndex // derived; nil until first used
}

// stockKey is a (sku, location) pair.
type stockKey struct{ sku, loc string }

// allocIndex is derived from the stored maps. Each reservation has one slot (one map entry by
// id, its status read from the reservation itself); the per-key and per-order lists hold slot
// numbers, so adding a reservation costs one map insert besides the stored map.
type allocIndex struct {
	byKey   map[stockKey]*keyLedger
	byOrder map[string][]int32 // order id -> slots of every reservation of the order
	slotOf  map[string]int32   // reservation id -> its slot
	slots   []resSlot
	free    []int32 // slots given back, reused first
	held    int     // HELD reservations
}

// resSlot is one reservation of the index: where it sits in its key's list.
type resSlot struct {
	r   *Reservation // nil when the slot is free
	kl  *keyLedger
	pos int32 // position in kl.res
}

// keyLedger is the ledger of one (sku, location).
type keyLedger struct {
	res []int32 // slots of every reservation at the key, any status
	// active counts the HELD and COMMITTED ones; reserved sums their quantities (exactly 0 when
	// none is active).
	active   int
	reserved float64
	// minHeld is at most the earliest expiry of the HELD reservations (MaxInt64 when none).
	minHeld int64
	// promises are the backorders promised here, in eventOrder.
	promises timeline
}

func (s *AllocationState) index() *allocIndex {
	if s.aidx == nil {
		s.rebuildIndex()
	}
	return s.aidx
}

// rebuildIndex makes the maps non-nil and derives the indexes from them.
func (s *AllocationState) rebuildIndex() {
	if s.Reservations == nil {
		s.Reservations = map[string]*Reservation{}
	}
	if s.Allocations == nil {
		s.Allocations = map[string]*Allocation{}
	}
	if s.AllocationAudits == nil {
		s.AllocationAudits = map[string]*AllocationAudit{}
	}
	if s.AllocationRuns == nil {
		s.AllocationRuns = map[string]*AllocationRun{}
	}
	n := len(s.Reservations)
	x := &allocIndex{byKey: map[stockKey]*keyLedger{}, byOrder: map[string][]int32{}, slotOf: make(map[string]int32, n),
		slots: make([]resSlot, 0, n)}
	for _, r := range s.Reservations {
		x.addReservation(r)
	}
	for _, a := range s.Allocations {
		x.addPromises(a)
	}
	s.aidx = x
}

// reserve makes room for n more reservations (one chunk's worth) so that the maps and the slot
// list do not grow in steps while they are added.
func (s *AllocationState) reserve(n int) {
	x := s.index()
	if n <= len(x.free) {
		return
	}
	want := len(x.slots) + n - len(x.free)
	if want > cap(x.slots) {
		x.slots = slices.Grow(x.slots, want-len(x.slots))
	}
	if len(x.slotOf) == 0 && want > 64 {
		// an empty map presized; a populated one grows by doubling, which amortizes
		x.slotOf = make(map[string]int32, want)
		if len(s.Reservations) == 0 {
			s.Reservations = make(map[string]*Reservation, want)
		}
	}
}

// res returns the reservation of a slot.
func (x *allocIndex) res(slot int32) *Reservation { return x.slots[slot].r }

// heldCount is the number of HELD reservations (expired or not).
func (x *allocIndex) heldCount() int { return x.held }

func (x *allocIndex) key(k stockKey) *keyLedger {
	kl := x.byKey[k]
	if kl == nil {
		kl = &keyLedger{minHeld: math.MaxInt64}
		x.byKey[k] = kl
	}
	return kl
}

func (x *allocIndex) addReservation(r *Reservation) {
	kl := x.key(stockKey{r.SKU, r.LocationID})
	var slot int32
	if n := len(x.free); n > 0 {
		slot = x.free[n-1]
		x.free = x.free[:n-1]
	} else {
		slot = int32(len(x.slots))
		x.slots = append(x.slots, resSlot{})
	}
	x.slots[slot] = resSlot{r: r, kl: kl, pos: int32(len(kl.res))}
	x.slotOf[r.ID] = slot
	kl.res = append(kl.res, slot)
	x.byOrder[r.OrderID] = append(x.byOrder[r.OrderID], slot)
	if !r.Status.Active() {
		return
	}
	kl.active++
	kl.reserved += r.Quantity
	if r.Status == ResHeld {
		x.held++
		if r.ExpiresAt != nil {
			kl.minHeld = min(kl.minHeld, r.ExpiresAt.UnixMilli())
		}
	}
}

func (x *allocIndex) removeReservation(r *Reservation) {
	slot, ok := x.slotOf[r.ID]
	if !ok {
		return
	}
	sl := x.slots[slot]
	kl := sl.kl
	delete(x.slotOf, r.ID)
	x.slots[slot] = resSlot{}
	x.free = append(x.free, slot)
	// the key's last reservation takes the removed one's place
	last := int32(len(kl.res) - 1)
	if moved := kl.res[last]; sl.pos != last {
		kl.res[sl.pos] = moved
		x.slots[moved].pos = sl.pos
	}
	kl.res = kl.res[:last]
	if rs := x.byOrder[r.OrderID]; rs != nil {
		if i := slices.Index(rs, slot); i >= 0 {
			rs = slices.Delete(rs, i, i+1)
		}
		if len(rs) == 0 {
			delete(x.byOrder, r.OrderID)
		} else {
			x.byOrder[r.OrderID] = rs
		}
	}
	if r.Status.Active() {
		kl.active--
		kl.reserved -= r.Quantity
		if kl.active == 0 {
			kl.reserved = 0 // no float residue once nothing is reserved
		}
		if r.Status == ResHeld {
			x.held--
			if r.ExpiresAt != nil && r.ExpiresAt.UnixMilli() <= kl.minHeld {
				kl.minHeld = math.MaxInt64
				for _, i := range kl.res {
					if a := x.slots[i].r; a.Status == ResHeld && a.ExpiresAt != nil {
						kl.minHeld = min(kl.minHeld, a.ExpiresAt.UnixMilli())
					}
				}
			}
		}
	}
	if len(kl.res) == 0 && len(kl.promises.events) == 0 {
		delete(x.byKey, stockKey{r.SKU, r.LocationID})
	}
}

// promiseOwner names the promises of one order line.
func promiseOwner(orderID, lineID string) string { return orderID + "\x00" + lineID }

func (x *allocIndex) addPromises(a *Allocation) {
	for _, l := range a.Lines {
		for _, b := range l.Backorders {
			kl := x.key(stockKey{l.SKU, b.LocationID})
			kl.promises.insert(tlEvent{at: b.PromiseDate.UnixMilli(), qty: -b.Quantity, owner: promiseOwner(a.OrderID, l.LineID)})
		}
	}
}

func (x *allocIndex) removePromises(a *Allocation) {
	for _, l := range a.Lines {
		for _, b := range l.Backorders {
			k := stockKey{l.SKU, b.LocationID}
			if kl := x.byKey[k]; kl != nil {
				kl.promises.remove(tlEvent{at: b.PromiseDate.UnixMilli(), qty: -b.Quantity, owner: promiseOwner(a.OrderID, l.LineID)})
				if len(kl.res) == 0 && len(kl.promises.events) == 0 {
					delete(x.byKey, k)
				}
			}
		}
	}
}

// Apply applies one record of the allocation kinds (AllocationKinds).
func (s *AllocationState) Apply(r Record) error {
	x := s.index()
	switch r.Kind {
	case KindReservation:
		old := s.Reservations[r.ID]
		if err := putValue(s.Reservations, r); err != nil {
			return err
		}
		if old != nil {
			x.removeReservation(old)
		}
		if v := s.Reservations[r.ID]; v != nil {
			x.addReservation(v)
		}
	case KindAllocation:
		old := s.Allocations[r.ID]
		if err := putValue(s.Allocations, r); err != nil {
			return err
		}
		if old != nil {
			x.removePromises(old)
		}
		if v := s.Allocations[r.ID]; v != nil {
			x.addPromises(v)
		}
	case KindAllocationAudit:
		return putValue(s.AllocationAudits, r)
	case KindAllocationRun:
		return putValue(s.AllocationRuns, r)
	default:
		return fmt.Errorf("allocation state: unknown record kind %q", r.Kind)
	}
	return nil
}

// ReservedAt returns the quantity the ledger reserves at (sku, loc) at now: HELD reservations not
// yet expired and COMMITTED ones.
func (s *AllocationState) ReservedAt(sku, loc string, now time.Time) float64 {
	kl := s.index().byKey[stockKey{sku, loc}]
	if kl == nil {
		return 0
	}
	if now.UnixMilli() < kl.minHeld {
		return kl.reserved
	}
	var t float64
	x := s.index()
	for _, i := range kl.res {
		if r := x.res(i); r.ActiveAt(now) {
			t += r.Quantity
		}
	}
	return t
}

// PromisesAt returns the backorders promised at (sku, loc), earliest first.
func (s *AllocationState) PromisesAt(sku, loc string) []Promise {
	kl := s.index().byKey[stockKey{sku, loc}]
	if kl == nil {
		return nil
	}
	out := make([]Promise, len(kl.promises.events))
	for i, e := range kl.promises.events {
		out[i] = Promise{At: time.UnixMilli(e.at).UTC(), Quantity: -e.qty}
	}
	return out
}

// ATP returns the available-to-promise of (sku, loc) at date, sup being what the tenant's state
// holds there outside the ledger.
func (s *AllocationState) ATP(sku, loc string, sup Supply, date, now time.Time) ATPFigure {
	f := ComputeATP(sup, s.ReservedAt(sku, loc, now), s.PromisesAt(sku, loc), date)
	f.SKU, f.LocationID = sku, loc
	return f
}

// ReservedKeys lists the (sku, location) pairs with reservations or backorders, by sku then
// location (for ATP listings and checks).
func (s *AllocationState) ReservedKeys() [][2]string {
	x := s.index()
	out := make([][2]string, 0, len(x.byKey))
	for k := range x.byKey {
		out = append(out, [2]string{k.sku, k.loc})
	}
	slices.SortFunc(out, func(a, b [2]string) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	return out
}

// OrderReservations returns the reservations of an order (every status), oldest first.
func (s *AllocationState) OrderReservations(orderID string) []*Reservation {
	x := s.index()
	slots := x.byOrder[orderID]
	out := make([]*Reservation, len(slots))
	for i, sl := range slots {
		out[i] = x.res(sl)
	}
	slices.SortFunc(out, func(a, b *Reservation) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// activeOf returns the reservations of an order active at now, oldest first.
func (s *AllocationState) activeOf(orderID string, now time.Time) []*Reservation {
	x := s.index()
	rs := x.byOrder[orderID]
	if len(rs) == 0 {
		return nil
	}
	out := make([]*Reservation, 0, len(rs))
	for _, i := range rs {
		if r := x.res(i); r.ActiveAt(now) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *Reservation) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// GetAllocation returns the allocation of an order.
func (s *AllocationState) GetAllocation(orderID string) (Allocation, bool) {
	v, ok := s.Allocations[orderID]
	if !ok {
		return Allocation{}, false
	}
	return *v.clone(), true
}

// ReservationFilter selects reservations in a listing (GET /api/allocation/reservations).
type ReservationFilter struct {
	SKU        string
	LocationID string
	OrderID    string
	Status     ReservationStatus
	Limit      int
	Offset     int
}

// ListReservations returns reservations passing f, newest first; a HELD one past its expiry reads
// EXPIRED even before the sweep records it.
func (s *AllocationState) ListReservations(f ReservationFilter, now time.Time) Page[Reservation] {
	x := s.index()
	var from []int32
	scoped := true
	switch {
	case f.OrderID != "":
		from = x.byOrder[f.OrderID]
	case f.SKU != "" && f.LocationID != "":
		if kl := x.byKey[stockKey{f.SKU, f.LocationID}]; kl != nil {
			from = kl.res
		}
	default:
		scoped = false
	}
	out := make([]Reservation, 0)
	add := func(r *Reservation) {
		v := *r
		if v.Status == ResHeld && !v.ActiveAt(now) {
			v.Status = ResExpired
		}
		if (f.SKU != "" && v.SKU != f.SKU) || (f.LocationID != "" && v.LocationID != f.LocationID) ||
			(f.OrderID != "" && v.OrderID != f.OrderID) || (f.Status != "" && v.Status != f.Status) {
			return
		}
		out = append(out, v)
	}
	if scoped {
		for _, i := range from {
			add(x.res(i))
		}
	} else {
		for _, r := range s.Reservations {
			add(r)
		}
	}
	slices.SortFunc(out, func(a, b Reservation) int { return cmp.Compare(b.ID, a.ID) })
	return page(out, f.Limit, f.Offset)
}

// CommitOrder moves the order's HELD reservations (not expired) to COMMITTED: the order is
// confirmed and its stock no longer expires.
func (s *AllocationState) CommitOrder(orderID string, now time.Time) []Record {
	var recs []Record
	for _, r := range s.activeOf(orderID, now) {
		if r.Status != ResHeld {
			continue
		}
		c := *r
		c.Status, c.ExpiresAt, c.UpdatedAt = ResCommitted, nil, now
		recs = append(recs, Put(KindReservation, c.ID, &c))
	}
	return recs
}

// ExpireHolds returns the records expiring every HELD reservation past its expiresAt and updating
// the allocations that listed them (their lines lose the quantity to shortfall; the status is
// recomputed). No event: events are once per order version.
func (s *AllocationState) ExpireHolds(now time.Time) []Record {
	x := s.index()
	var due []*Reservation
	if x.held > 0 {
		for i := range x.slots {
			if r := x.slots[i].r; r != nil && r.Status == ResHeld && !r.ActiveAt(now) {
				due = append(due, r)
			}
		}
	}
	slices.SortFunc(due, func(a, b *Reservation) int { return cmp.Compare(a.ID, b.ID) })
	var recs []Record
	byOrder := map[string][]string{}
	var orders []string
	for _, r := range due {
		e := r.released(ResExpired, ReleaseHoldExpired, now)
		recs = append(recs, Put(KindReservation, e.ID, &e))
		if _, ok := byOrder[r.OrderID]; !ok {
			orders = append(orders, r.OrderID)
		}
		byOrder[r.OrderID] = append(byOrder[r.OrderID], r.ID)
	}
	for _, id := range orders {
		cur, ok := s.Allocations[id]
		if !ok {
			continue
		}
		if a, changed := withoutReservations(cur, byOrder[id], now); changed {
			recs = append(recs, Put(KindAllocation, id, a))
		}
	}
	return recs
}

// withoutReservations returns a copy of a whose lines no longer list the given reservations
// (their quantity becomes shortfall), with its status recomputed.
func withoutReservations(cur *Allocation, ids []string, now time.Time) (*Allocation, bool) {
	if cur.Status == AllocShipped || cur.Status == AllocReleased {
		return cur, false
	}
	a := cur.clone()
	changed := false
	for i := range a.Lines {
		l := &a.Lines[i]
		kept := l.Allocations[:0]
		for _, al := range l.Allocations {
			if slices.Contains(ids, al.ReservationID) {
				l.Shortfall = snap(l.Shortfall + al.Quantity)
				changed = true
				continue
			}
			kept = append(kept, al)
		}
		l.Allocations = kept
		if l.Reserved()+l.BackorderedQuantity <= quantityEps {
			l.PromiseDate = nil
		}
	}
	if !changed {
		return cur, false
	}
	a.Status = statusOf(a.Lines)
	if a.Status == AllocFailed && a.ReasonCode == "" {
		a.ReasonCode = ReasonInsufficientATP
	}
	a.UpdatedAt = now
	return a, true
}

// statusOf derives an allocation's status from its lines.
func statusOf(lines []AllocationLine) AllocationStatus {
	var reserved, back, short float64
	for i := range lines {
		reserved += lines[i].Reserved()
		back += lines[i].BackorderedQuantity
		short += lines[i].Shortfall
	}
	switch {
	case reserved+back <= quantityEps:
		return AllocFailed
	case short > quantityEps:
		return AllocPartial
	case back > quantityEps:
		return AllocBackordered
	}
	return AllocAllocated
}

// Sweep returns the housekeeping records of the ledger at now: HELD reservations past their
// expiry expire; RELEASED and EXPIRED ones older than the retention are deleted; audit entries
// and runs beyond their caps are deleted, oldest first.
func (s *AllocationState) Sweep(now time.Time, cfg AllocationConfig) []Record {
	recs := s.ExpireHolds(now)
	x := s.index()
	cutoff := now.Add(-cfg.retention())
	var old []string
	for i := range x.slots {
		if r := x.slots[i].r; r != nil && !r.Status.Active() && !r.UpdatedAt.After(cutoff) {
			old = append(old, r.ID)
		}
	}
	slices.Sort(old)
	for _, id := range old {
		recs = append(recs, Del(KindReservation, id))
	}
	recs = append(recs, trimOldest(s.AllocationAudits, KindAllocationAudit, MaxAllocationAudits, 0)...)
	recs = append(recs, trimOldest(s.AllocationRuns, KindAllocationRun, MaxAllocationRuns, 0)...)
	return recs
}

// trimOldest returns the records deleting the oldest entries of m (ids sort by creation) so that
// it holds at most limit once adding more entries.
func trimOldest[T any](m map[string]*T, kind string, limit, adding int) []Record {
	over := len(m) + adding - limit
	if over <= 0 {
		return nil
	}
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return delAll(kind, ids[:min(over, len(ids))])
}
