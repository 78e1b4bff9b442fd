package supplyplan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// AllocationOutcome is what allocating (or closing) one order produced.
type AllocationOutcome struct {
	OrderID string
	// Ignored is set when the order's version is older than the one allocated: nothing changed.
	Ignored bool
	// Allocation is the order's allocation after the outcome (nil when it has none).
	Allocation *Allocation
	// Records are the ledger records to apply, in the same write as the order change.
	Records []Record
	// Event, when set, goes to the outbox in the same write (EventRecord): at most one per
	// (orderId, orderVersion).
	Event *DomainEvent
	// Consumed is the stock a shipped order took: the integration takes it off the levels' on-hand
	// in the same write.
	Consumed []Consumption
}

// OutcomeRecords concatenates the records of outcomes, in order.
func OutcomeRecords(outs []AllocationOutcome) []Record {
	var recs []Record
	for _, o := range outs {
		recs = append(recs, o.Records...)
	}
	return recs
}

// Allocator allocates orders against the ledger and the tenant's stock without changing either: it
// returns the records to apply. One allocator serves one write (an import chunk, an allocate call,
// a run) and the ledger must not change while it is used: what it reserved or promised for one
// order is seen by the next, so lines of the same sku in one order or batch are checked against
// their sum, never each against the same ATP.
type Allocator struct {
	l     *AllocationState
	w     AllocationWorld
	cfg   AllocationConfig
	now   time.Time
	nowMs int64

	work map[stockKey]*keyWork
	slab []keyWork // backing of work's values, in blocks (pointers stay valid)
	undo []undoOp
	// srcBuf and rankBuf are scratch of sources.
	srcBuf  []string
	rankBuf []SourceCandidate
	// usedBuf and takeBuf are scratch of planLine (takeBuf backs the plans of one order).
	usedBuf []string
	takeBuf []take
	planBuf []linePlan
	// pendRes and pendAlloc are the orders' state after their outcome in this allocator.
	pendRes   map[string][]*Reservation
	pendAlloc map[string]*Allocation
	// pooled reservations and promises were given back up front (redistribution).
	pooled         map[string]bool
	pooledPromises map[string]bool
}

// keyWork is the working view of one (sku, location): stock = onHand − reservedOutside − safety −
// reserved, and its receipts and promises.
type keyWork struct {
	stock float64
	tl    timeline
}

type undoKind int8

const (
	undoStock undoKind = iota
	undoInserted
	undoRemoved
)

type undoOp struct {
	kw   *keyWork
	kind undoKind
	qty  float64
	ev   tlEvent
}

// NewAllocator returns an allocator over the ledger l and the tenant's stock w at now.
func NewAllocator(l *AllocationState, w AllocationWorld, cfg AllocationConfig, now time.Time) *Allocator {
	l.index()
	return &Allocator{l: l, w: w, cfg: cfg, now: now, nowMs: now.UnixMilli(), work: map[stockKey]*keyWork{},
		pendRes: map[string][]*Reservation{}, pendAlloc: map[string]*Allocation{}, pooled: map[string]bool{}, pooledPromises: map[string]bool{}}
}

func (a *Allocator) keyOf(sku, loc string) *keyWork {
	k := stockKey{sku, loc}
	if kw := a.work[k]; kw != nil {
		return kw
	}
	sup := a.w.Supply(sku, loc)
	var promises []tlEvent
	if kl := a.l.index().byKey[k]; kl != nil {
		promises = kl.promises.events
	}
	if len(a.slab) == cap(a.slab) {
		a.slab = make([]keyWork, 0, 256)
	}
	a.slab = append(a.slab, keyWork{stock: sup.OnHand - sup.ReservedOutside - sup.SafetyStock - a.l.ReservedAt(sku, loc, a.now)})
	kw := &a.slab[len(a.slab)-1]
	if len(sup.Receipts) > 0 || len(promises) > 0 {
		kw.tl = newTimeline(sup.Receipts, promises)
	}
	a.work[k] = kw
	return kw
}

func (a *Allocator) addStock(kw *keyWork, q float64) {
	kw.stock += q
	a.undo = append(a.undo, undoOp{kw: kw, kind: undoStock, qty: q})
}

func (a *Allocator) addPromise(kw *keyWork, e tlEvent) {
	kw.tl.insert(e)
	a.undo = append(a.undo, undoOp{kw: kw, kind: undoInserted, ev: e})
}

func (a *Allocator) dropPromise(kw *keyWork, e tlEvent) {
	if kw.tl.remove(e) {
		a.undo = append(a.undo, undoOp{kw: kw, kind: undoRemoved, ev: e})
	}
}

// rollback undoes the working-view changes made since mark.
func (a *Allocator) rollback(mark int) {
	for i := len(a.undo) - 1; i >= mark; i-- {
		u := a.undo[i]
		switch u.kind {
		case undoStock:
			u.kw.stock -= u.qty
		case undoInserted:
			u.kw.tl.remove(u.ev)
		case undoRemoved:
			u.kw.tl.insert(u.ev)
		}
	}
	a.undo = a.undo[:mark]
}

func (a *Allocator) allocationOf(id string) *Allocation {
	if v, ok := a.pendAlloc[id]; ok {
		return v
	}
	return a.l.Allocations[id]
}

func (a *Allocator) activeOf(id string) []*Reservation {
	if v, ok := a.pendRes[id]; ok {
		return v
	}
	return a.l.activeOf(id, a.now)
}

// givePromises returns the backorders of an allocation to the working view.
func (a *Allocator) givePromises(al *Allocation) {
	if al == nil || a.pooledPromises[al.OrderID] {
		return
	}
	for _, l := range al.Lines {
		for _, b := range l.Backorders {
			a.dropPromise(a.keyOf(l.SKU, b.LocationID),
				tlEvent{at: b.PromiseDate.UnixMilli(), qty: -b.Quantity, owner: promiseOwner(al.OrderID, l.LineID)})
		}
	}
}

// giveBack returns a reservation's stock to the working view (unless it was pooled up front).
func (a *Allocator) giveBack(r *Reservation) {
	if !a.pooled[r.ID] {
		a.addStock(a.keyOf(r.SKU, r.LocationID), r.Quantity)
	}
}

// allocMode says what an allocation may do with the order's own reservations.
type allocMode int8

const (
	// modeAllocate re-plans the order: its reservations return to the pool first (kept when the
	// new plan places the same quantity at the same location).
	modeAllocate allocMode = iota
	// modeKeep keeps every reservation of the order and plans only what they leave uncovered; an
	// outcome worse than the order's current allocation is dropped (PROTECT_EXISTING, FILL_NEWEST).
	modeKeep
	// modeKeepCommitted keeps COMMITTED reservations; HELD ones were pooled up front
	// (REDISTRIBUTE_BY_PRIORITY).
	modeKeepCommitted
)

// Allocate allocates one order (or releases it when CANCELLED or SHIPPED).
func (a *Allocator) Allocate(o AllocOrder) AllocationOutcome { return a.allocate(o, modeAllocate) }

// AllocateBatch allocates orders as one batch: an order given twice counts once, at its highest
// version (the later one among equals); cancelled and shipped orders go first (they free stock),
// then open ones in allocation order (priority, requested date, created, id).
func (a *Allocator) AllocateBatch(orders []AllocOrder) []AllocationOutcome {
	pick := make(map[string]int, len(orders))
	for i := range orders {
		if j, ok := pick[orders[i].ID]; !ok || orders[i].Version >= orders[j].Version {
			pick[orders[i].ID] = i
		}
	}
	idx := make([]int, 0, len(pick))
	lines := 0
	for i := range orders {
		if pick[orders[i].ID] == i {
			idx = append(idx, i)
			lines += len(orders[i].Lines)
		}
	}
	closing := func(o *AllocOrder) bool { return o.Status == OrderCancelled || o.Status == OrderShipped }
	slices.SortFunc(idx, func(i, j int) int {
		x, y := &orders[i], &orders[j]
		if cx, cy := closing(x), closing(y); cx != cy {
			return cmp.Compare(b2i(cy), b2i(cx))
		} else if cx {
			return cmp.Compare(x.ID, y.ID)
		}
		return allocationOrder(x, y)
	})
	a.grow(len(idx), lines)
	outs := make([]AllocationOutcome, 0, len(idx))
	for _, i := range idx {
		outs = append(outs, a.Allocate(orders[i]))
	}
	return outs
}

// grow makes room for a batch of orders and lines.
func (a *Allocator) grow(orders, lines int) {
	if len(a.pendRes) == 0 && orders > 64 {
		a.pendRes = make(map[string][]*Reservation, orders)
		a.pendAlloc = make(map[string]*Allocation, orders)
	}
	if len(a.work) == 0 && lines > 64 {
		a.work = make(map[stockKey]*keyWork, lines)
	}
	a.l.reserve(lines) // the ledger the records will be applied to
}

// take is stock reserved now for a line at a location.
type take struct {
	loc string
	qty float64
}

// linePlan is what allocation decided for one line.
type linePlan struct {
	line       AllocLine
	pinned     []*Reservation
	takes      []take
	backorders []Backorder
	short      float64
}

func (p *linePlan) reserved() float64 {
	var t float64
	for _, r := range p.pinned {
		t += r.Quantity
	}
	for _, k := range p.takes {
		t += k.qty
	}
	return t
}

func (p *linePlan) backordered() float64 {
	var t float64
	for _, b := range p.backorders {
		t += b.Quantity
	}
	return t
}

func (a *Allocator) allocate(o AllocOrder, mode allocMode) AllocationOutcome {
	prev := a.allocationOf(o.ID)
	if prev != nil && o.Version < prev.OrderVersion {
		return AllocationOutcome{OrderID: o.ID, Ignored: true, Allocation: prev}
	}
	_, pending := a.pendRes[o.ID]
	existing := a.activeOf(o.ID)
	var recs []Record
	if !pending { // the order's own holds past their expiry, not swept yet
		for _, r := range a.l.OrderReservations(o.ID) {
			if r.Status == ResHeld && !r.ActiveAt(a.now) {
				e := r.released(ResExpired, ReleaseHoldExpired, a.now)
				recs = append(recs, Put(KindReservation, e.ID, &e))
			}
		}
	}
	switch o.Status {
	case OrderCancelled:
		return a.close(&o, prev, existing, recs, AllocReleased, ReleaseCancelled)
	case OrderShipped:
		return a.close(&o, prev, existing, recs, AllocShipped, ReleaseShipped)
	}

	mark0 := len(a.undo)
	// pinned[i]: existing[i] stays as it is (keep modes); the others go back to the pool
	pinned := make([]bool, len(existing))
	for i, r := range existing {
		if mode == modeKeep || (mode == modeKeepCommitted && r.Status == ResCommitted) {
			l := orderLine(&o, r.LineID)
			pinned[i] = l != nil && l.SKU == r.SKU
		}
	}
	for i, r := range existing { // a line holding more than it orders keeps nothing pinned
		if !pinned[i] {
			continue
		}
		var held float64
		for j, q := range existing {
			if pinned[j] && q.LineID == r.LineID {
				held += q.Quantity
			}
		}
		if held > orderLine(&o, r.LineID).Quantity+quantityEps {
			for j, q := range existing {
				if q.LineID == r.LineID {
					pinned[j] = false
				}
			}
		}
	}
	for i, r := range existing {
		if !pinned[i] {
			a.giveBack(r)
		}
	}
	a.givePromises(prev)

	fail := func(reason, msg string, earliest bool) AllocationOutcome {
		if mode == modeKeep && prev != nil && prev.Status != AllocFailed {
			a.rollback(mark0) // protected: never worse than it was
			return AllocationOutcome{OrderID: o.ID, Allocation: prev}
		}
		for i, r := range existing {
			if pinned[i] {
				a.giveBack(r)
			}
		}
		return a.fail(&o, prev, existing, recs, reason, msg, earliest)
	}
	if !o.valid() {
		return fail(ReasonPolicyViolation, o.Validate().Error(), false)
	}
	maxLoc := o.Locations()
	for _, l := range o.Lines {
		if !a.w.KnownSKU(l.SKU) {
			return fail(ReasonUnknownSKU, fmt.Sprintf("unknown sku %q", l.SKU), false)
		}
		if l.LocationID != "" && maxLoc == 1 && !a.w.LocationActive(l.LocationID) {
			return fail(ReasonLocationInactive, fmt.Sprintf("location %q is not active", l.LocationID), false)
		}
	}
	mark1 := len(a.undo)
	fill := o.FillOrDefault()
	minQ := 0.0
	if fill == FillPartial {
		minQ = o.MinQuantity
	}
	reqMs := o.requested(a.now).UnixMilli()
	deadline := reqMs + int64(o.MaxLatenessDays)*24*3600*1000
	plans := slices.Grow(a.planBuf[:0], len(o.Lines))[:len(o.Lines)] // scratch: build copies what it keeps
	defer func() { clear(plans); a.planBuf = plans[:0] }()
	a.takeBuf = a.takeBuf[:0]
	var reserved, back, short float64
	for i, l := range o.Lines {
		p := linePlan{line: l}
		for j, r := range existing {
			if pinned[j] && r.LineID == l.LineID {
				p.pinned = append(p.pinned, r)
			}
		}
		a.planLine(&o, &p, existing, maxLoc, minQ, fill != FillOrKill, reqMs, deadline)
		plans[i] = p
		reserved += p.reserved()
		back += p.backordered()
		short += p.short
	}
	var status AllocationStatus
	switch {
	case (fill == FillOrKill || fill == FillComplete) && short > quantityEps:
		a.rollback(mark1)
		msg := fmt.Sprintf("%s: %s short", fill, describeQty(short))
		return fail(ReasonInsufficientATP, msg, true)
	case reserved+back <= quantityEps:
		a.rollback(mark1)
		return fail(ReasonInsufficientATP, "nothing available", true)
	case short > quantityEps:
		status = AllocPartial
	case back > quantityEps:
		status = AllocBackordered
	default:
		status = AllocAllocated
	}
	alloc, newActive, lineRecs := a.build(&o, prev, existing, pinned, plans, status, reqMs)
	if mode == modeKeep && prev != nil && worse(prev, alloc) {
		a.rollback(mark0)
		return AllocationOutcome{OrderID: o.ID, Allocation: prev}
	}
	if len(recs) > 0 {
		lineRecs = append(recs, lineRecs...)
	}
	return a.finish(&o, prev, alloc, existing, newActive, lineRecs, nil, "")
}

// planLine reserves stock for a line (requested location first, then the ranked sources when the
// order splits), then promises the rest from receipts by the deadline.
func (a *Allocator) planLine(o *AllocOrder, p *linePlan, existing []*Reservation, maxLoc int, minQ float64, backorder bool, reqMs, deadline int64) {
	l := p.line
	used := a.usedBuf[:0]
	defer func() { a.usedBuf = used[:0] }()
	takeStart := len(a.takeBuf)
	rem := l.Quantity
	for _, r := range p.pinned {
		rem -= r.Quantity
		if !slices.Contains(used, r.LocationID) {
			used = append(used, r.LocationID)
		}
	}
	rem = snap(rem)
	srcs := a.sources(o, l, existing)
	if l.LocationID == "" && maxLoc == 1 && len(used) == 0 && len(srcs) > 1 {
		// one location of free choice: the first ranked that covers the line, else the fullest
		best, bestQty := 0, -1.0
		for i, loc := range srcs {
			kw := a.keyOf(l.SKU, loc)
			q := kw.tl.reservable(kw.stock)
			if q >= rem-quantityEps {
				best = i
				break
			}
			if q > bestQty+quantityEps {
				best, bestQty = i, q
			}
		}
		srcs = append([]string{srcs[best]}, append(slices.Clone(srcs[:best]), srcs[best+1:]...)...)
	}
	for _, loc := range srcs {
		if rem <= quantityEps {
			break
		}
		isUsed := slices.Contains(used, loc)
		if !isUsed && len(used) >= maxLoc {
			continue
		}
		kw := a.keyOf(l.SKU, loc)
		q := min(rem, kw.tl.reservable(kw.stock))
		if q <= quantityEps || q < min(minQ, rem)-quantityEps {
			continue
		}
		if rem-q <= quantityEps {
			q = rem
		}
		a.addStock(kw, -q)
		a.takeBuf = append(a.takeBuf, take{loc: loc, qty: q})
		if !isUsed {
			used = append(used, loc)
		}
		rem = snap(rem - q)
	}
	p.takes = a.takeBuf[takeStart:len(a.takeBuf):len(a.takeBuf)]
	if backorder && rem > quantityEps && deadline >= a.nowMs {
		owner := promiseOwner(o.ID, l.LineID)
		for _, loc := range srcs {
			if rem <= quantityEps {
				break
			}
			isUsed := slices.Contains(used, loc)
			if !isUsed && len(used) >= maxLoc {
				continue
			}
			kw := a.keyOf(l.SKU, loc)
			b := min(rem, kw.tl.futureATP(kw.stock, deadline))
			if b <= quantityEps || b < min(minQ, rem)-quantityEps {
				continue
			}
			if rem-b <= quantityEps {
				b = rem
			}
			at, ok := kw.tl.earliest(kw.stock, b, a.nowMs, deadline)
			if !ok {
				continue
			}
			at = max(at, reqMs)
			a.addPromise(kw, tlEvent{at: at, qty: -b, owner: owner})
			p.backorders = append(p.backorders, Backorder{LocationID: loc, Quantity: b, PromiseDate: time.UnixMilli(at).UTC()})
			if !isUsed {
				used = append(used, loc)
			}
			rem = snap(rem - b)
		}
	}
	p.short = max(0, rem)
}

// sources returns the locations that may serve a line, in the order they are tried: the requested
// one; when the order splits (or names no location), the others the world offers, active ones
// only, those already holding the line first, then by lead time, cost and id.
func (a *Allocator) sources(o *AllocOrder, l AllocLine, existing []*Reservation) []string {
	out := a.srcBuf[:0]
	if l.LocationID != "" && a.w.LocationActive(l.LocationID) {
		out = append(out, l.LocationID)
	}
	if l.LocationID != "" && o.Locations() == 1 {
		a.srcBuf = out
		return out
	}
	cands := a.w.Sources(l.SKU, l.LocationID)
	holds := func(loc string) int {
		for _, r := range existing {
			if r.LineID == l.LineID && r.LocationID == loc {
				return 0
			}
		}
		return 1
	}
	ranked := a.rankBuf[:0]
	for _, c := range cands {
		if c.LocationID == "" || c.LocationID == l.LocationID || !a.w.LocationActive(c.LocationID) {
			continue
		}
		ranked = append(ranked, c)
	}
	slices.SortFunc(ranked, func(x, y SourceCandidate) int {
		if len(existing) > 0 {
			if c := cmp.Compare(holds(x.LocationID), holds(y.LocationID)); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(x.LeadTimeDays, y.LeadTimeDays); c != 0 {
			return c
		}
		if c := cmp.Compare(x.UnitCost, y.UnitCost); c != 0 {
			return c
		}
		return cmp.Compare(x.LocationID, y.LocationID)
	})
	for i, c := range ranked {
		if i > 0 && ranked[i-1].LocationID == c.LocationID {
			continue
		}
		out = append(out, c.LocationID)
	}
	a.srcBuf, a.rankBuf = out, ranked
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// build turns the line plans into the new allocation and the reservation records: a reservation
// placing the same quantity of the same line at the same location is kept (its id stays); the
// others are released with the reason and new ones created.
func (a *Allocator) build(o *AllocOrder, prev *Allocation, existing []*Reservation, pinned []bool, plans []linePlan,
	status AllocationStatus, reqMs int64) (*Allocation, []*Reservation, []Record) {
	puts := make([]Record, 0, len(plans)+2) // and the allocation's record (finish)
	newActive := make([]*Reservation, 0, len(existing)+len(plans))
	kept := make([]bool, len(existing))
	keep := func(r *Reservation) {
		for i, e := range existing {
			if e == r {
				kept[i] = true
			}
		}
	}
	restamp := func(r *Reservation) *Reservation {
		if r.OrderVersion == o.Version && r.Priority == o.Priority {
			return r
		}
		c := *r
		c.OrderVersion, c.Priority, c.UpdatedAt = o.Version, o.Priority, a.now
		puts = append(puts, Put(KindReservation, c.ID, &c))
		return &c
	}
	lines := make([]AllocationLine, len(plans))
	dates := make([]time.Time, len(plans)) // backs the lines' promise dates
	var completeAt int64
	for i := range plans {
		p := &plans[i]
		al := AllocationLine{LineID: p.line.LineID, SKU: p.line.SKU, Quantity: p.line.Quantity, Allocations: []LineAllocation{}}
		ready := reqMs
		for _, r := range p.pinned {
			keep(r)
			nr := restamp(r)
			newActive = append(newActive, nr)
			al.Allocations = append(al.Allocations, LineAllocation{LocationID: nr.LocationID, Quantity: nr.Quantity, ReservationID: nr.ID})
			ready = max(ready, nr.CreatedAt.UnixMilli())
		}
		for _, t := range p.takes {
			// the replaceable reservations of this line at this location; one of the same quantity stays
			var reuse *Reservation
			var commit bool
			var heldUntil *time.Time
			for i, r := range existing {
				if pinned[i] || kept[i] || r.LineID != p.line.LineID || r.SKU != p.line.SKU || r.LocationID != t.loc {
					continue
				}
				if reuse == nil && math.Abs(r.Quantity-t.qty) <= quantityEps {
					reuse = r
				}
				commit = commit || r.Status == ResCommitted
				if r.Status == ResHeld && r.ExpiresAt != nil && (heldUntil == nil || r.ExpiresAt.Before(*heldUntil)) {
					heldUntil = r.ExpiresAt
				}
			}
			var nr *Reservation
			if reuse != nil {
				keep(reuse)
				nr = restamp(reuse)
			} else {
				box := &struct {
					r   Reservation
					exp time.Time
				}{r: Reservation{ID: NewID("res"), OrderID: o.ID, OrderVersion: o.Version, LineID: p.line.LineID, SKU: p.line.SKU,
					LocationID: t.loc, Quantity: t.qty, Status: ResHeld, Priority: o.Priority, CreatedAt: a.now, UpdatedAt: a.now}}
				nr = &box.r
				a.holdTerms(nr, commit, heldUntil, &box.exp)
				puts = append(puts, Put(KindReservation, nr.ID, nr))
			}
			newActive = append(newActive, nr)
			al.Allocations = append(al.Allocations, LineAllocation{LocationID: nr.LocationID, Quantity: nr.Quantity, ReservationID: nr.ID})
			ready = max(ready, nr.CreatedAt.UnixMilli())
		}
		al.Backorders = p.backorders
		for _, b := range p.backorders {
			al.BackorderedQuantity += b.Quantity
			ready = max(ready, b.PromiseDate.UnixMilli())
		}
		al.BackorderedQuantity = snap(al.BackorderedQuantity)
		al.Shortfall = snap(p.short)
		if p.reserved()+al.BackorderedQuantity > quantityEps {
			dates[i] = time.UnixMilli(ready).UTC()
			al.PromiseDate = &dates[i]
			completeAt = max(completeAt, ready)
		}
		lines[i] = al
	}
	if o.FillOrDefault() == FillComplete && completeAt > 0 { // the order ships complete, on one date
		t := time.UnixMilli(completeAt).UTC()
		for i := range lines {
			lines[i].PromiseDate = &t
		}
	}
	var releases []Record
	for i, r := range existing {
		if kept[i] {
			continue
		}
		rel := r.released(ResReleased, releaseReason(r, o, prev), a.now)
		releases = append(releases, Put(KindReservation, rel.ID, &rel))
	}
	alloc := &Allocation{OrderID: o.ID, OrderVersion: o.Version, Status: status, Fill: o.FillOrDefault(), Priority: o.Priority,
		Lines: lines, CreatedAt: a.now, UpdatedAt: a.now}
	if len(releases) == 0 { // a new order: no copy
		return alloc, newActive, puts
	}
	return alloc, newActive, append(releases, puts...)
}

// holdTerms sets a new reservation's status: COMMITTED when the configuration says so or when it
// replaces a COMMITTED one of the same line and location; else HELD until the earliest expiry of
// the HELD ones it replaces (heldUntil), or HoldTTL from now.
// exp is where the expiry is stored.
func (a *Allocator) holdTerms(r *Reservation, commit bool, heldUntil, exp *time.Time) {
	if commit || a.cfg.CommitOnAllocate {
		r.Status = ResCommitted
		return
	}
	*exp = a.now.Add(a.cfg.holdTTL())
	if heldUntil != nil {
		*exp = *heldUntil
	}
	r.ExpiresAt = exp
}

// releaseReason says why an order's reservation is no longer needed by its new allocation.
func releaseReason(r *Reservation, o *AllocOrder, prev *Allocation) string {
	var line *AllocLine
	for i := range o.Lines {
		if o.Lines[i].LineID == r.LineID {
			line = &o.Lines[i]
		}
	}
	if line == nil {
		return ReleaseLineRemoved
	}
	if prev != nil && line.SKU == r.SKU {
		for _, pl := range prev.Lines {
			if pl.LineID == r.LineID && line.Quantity < pl.Quantity-quantityEps {
				return ReleaseLineReduced
			}
		}
	}
	return ReleaseReallocated
}

// worse reports whether next leaves some line of prev with less reserved, or less covered
// (reserved plus backordered), than it had.
func worse(prev, next *Allocation) bool {
	if next.Status == AllocFailed && prev.Status != AllocFailed {
		return true
	}
	for _, pl := range prev.Lines {
		for _, nl := range next.Lines {
			if nl.LineID != pl.LineID {
				continue
			}
			if nl.Reserved() < pl.Reserved()-quantityEps ||
				nl.Reserved()+nl.BackorderedQuantity < pl.Reserved()+pl.BackorderedQuantity-quantityEps {
				return true
			}
		}
	}
	return false
}

// fail records a FAILED allocation: every reservation of the order is released (its stock already
// given back to the working view) and, for a stock shortage, the earliest date the whole order
// could be covered without the lateness limit.
func (a *Allocator) fail(o *AllocOrder, prev *Allocation, existing []*Reservation, recs []Record, reason, msg string, earliest bool) AllocationOutcome {
	var at *time.Time
	if earliest {
		mark := len(a.undo)
		at = a.earliestComplete(o)
		a.rollback(mark)
	}
	lines := make([]AllocationLine, len(o.Lines))
	for i, l := range o.Lines {
		lines[i] = AllocationLine{LineID: l.LineID, SKU: l.SKU, Quantity: l.Quantity, Allocations: []LineAllocation{}, Shortfall: l.Quantity}
	}
	for _, r := range existing {
		rel := r.released(ResReleased, ReleaseFailed, a.now)
		recs = append(recs, Put(KindReservation, rel.ID, &rel))
	}
	alloc := &Allocation{OrderID: o.ID, OrderVersion: o.Version, Status: AllocFailed, ReasonCode: reason, Fill: o.FillOrDefault(),
		Priority: o.Priority, Lines: lines, EarliestPromiseDate: at, CreatedAt: a.now, UpdatedAt: a.now}
	return a.finish(o, prev, alloc, existing, nil, recs, nil, msg)
}

// earliestComplete is when every line of o could be covered (stock now, then receipts whatever
// their date), within its location limit; nil when the known receipts never cover it. It changes
// the working view: the caller rolls back.
func (a *Allocator) earliestComplete(o *AllocOrder) *time.Time {
	reqMs := o.requested(a.now).UnixMilli()
	var at int64
	for _, l := range o.Lines {
		p := linePlan{line: l}
		a.planLine(o, &p, nil, o.Locations(), 0, true, reqMs, math.MaxInt64)
		if p.short > quantityEps {
			return nil
		}
		ready := max(reqMs, a.nowMs)
		for _, b := range p.backorders {
			ready = max(ready, b.PromiseDate.UnixMilli())
		}
		at = max(at, ready)
	}
	t := time.UnixMilli(at).UTC()
	return &t
}

// close releases a cancelled or shipped order: every reservation is released (cancelled: the stock
// returns; shipped: it is consumed) and its backorders dropped.
func (a *Allocator) close(o *AllocOrder, prev *Allocation, existing []*Reservation, recs []Record, status AllocationStatus, reason string) AllocationOutcome {
	if prev == nil && len(existing) == 0 {
		return AllocationOutcome{OrderID: o.ID, Records: recs}
	}
	var consumed []Consumption
	byLine := map[string][]LineAllocation{}
	for _, r := range existing {
		if status == AllocShipped {
			// on hand and reserved both drop by the quantity: the working stock stays as it is
			consumed = addConsumption(consumed, r.SKU, r.LocationID, r.Quantity)
			byLine[r.LineID] = append(byLine[r.LineID], LineAllocation{LocationID: r.LocationID, Quantity: r.Quantity, ReservationID: r.ID})
		} else {
			a.giveBack(r)
		}
		rel := r.released(ResReleased, reason, a.now)
		recs = append(recs, Put(KindReservation, rel.ID, &rel))
	}
	a.givePromises(prev)
	lines := make([]AllocationLine, len(o.Lines))
	for i, l := range o.Lines {
		lines[i] = AllocationLine{LineID: l.LineID, SKU: l.SKU, Quantity: l.Quantity, Allocations: byLine[l.LineID]}
		if lines[i].Allocations == nil {
			lines[i].Allocations = []LineAllocation{}
		}
	}
	alloc := &Allocation{OrderID: o.ID, OrderVersion: o.Version, Status: status, Fill: o.FillOrDefault(), Priority: o.Priority,
		Lines: lines, CreatedAt: a.now, UpdatedAt: a.now}
	slices.SortFunc(consumed, func(x, y Consumption) int {
		if c := cmp.Compare(x.SKU, y.SKU); c != 0 {
			return c
		}
		return cmp.Compare(x.LocationID, y.LocationID)
	})
	return a.finish(o, prev, alloc, existing, nil, recs, consumed, "")
}

func addConsumption(cs []Consumption, sku, loc string, q float64) []Consumption {
	for i := range cs {
		if cs[i].SKU == sku && cs[i].LocationID == loc {
			cs[i].Quantity = snap(cs[i].Quantity + q)
			return cs
		}
	}
	return append(cs, Consumption{SKU: sku, LocationID: loc, Quantity: q})
}

// finish decides the event (once per order version), records the allocation when it changed and
// remembers the order's new state for the rest of this allocator's work.
func (a *Allocator) finish(o *AllocOrder, prev, alloc *Allocation, existing, newActive []*Reservation, recs []Record,
	consumed []Consumption, msg string) AllocationOutcome {
	if prev != nil {
		alloc.CreatedAt = prev.CreatedAt
		if prev.OrderVersion == alloc.OrderVersion {
			alloc.Notified = prev.Notified
		}
	}
	var ev *DomainEvent
	switch alloc.Status {
	case AllocAllocated, AllocPartial, AllocBackordered, AllocFailed:
		if !alloc.Notified {
			e := allocationEvent(alloc, a.cfg.OrgID, msg, a.now)
			ev = &e
			alloc.Notified = true
		}
	}
	if prev != nil && sameAllocation(prev, alloc) {
		alloc = prev
	} else {
		recs = append(recs, Put(KindAllocation, o.ID, alloc))
	}
	for _, r := range existing {
		delete(a.pooled, r.ID)
	}
	delete(a.pooledPromises, o.ID)
	a.pendAlloc[o.ID] = alloc
	a.pendRes[o.ID] = newActive
	a.undo = a.undo[:0]
	return AllocationOutcome{OrderID: o.ID, Allocation: alloc, Records: recs, Event: ev, Consumed: consumed}
}

// sameAllocation reports whether two allocations say the same (timestamps aside).
func sameAllocation(x, y *Allocation) bool {
	if x.OrderID != y.OrderID || x.OrderVersion != y.OrderVersion || x.Status != y.Status || x.ReasonCode != y.ReasonCode ||
		x.Fill != y.Fill || x.Priority != y.Priority || x.Notified != y.Notified || !sameTime(x.EarliestPromiseDate, y.EarliestPromiseDate) ||
		len(x.Lines) != len(y.Lines) {
		return false
	}
	for i := range x.Lines {
		a, b := &x.Lines[i], &y.Lines[i]
		if a.LineID != b.LineID || a.SKU != b.SKU || a.Quantity != b.Quantity || a.BackorderedQuantity != b.BackorderedQuantity ||
			a.Shortfall != b.Shortfall || !sameTime(a.PromiseDate, b.PromiseDate) || !slices.Equal(a.Allocations, b.Allocations) ||
			len(a.Backorders) != len(b.Backorders) {
			return false
		}
		for j := range a.Backorders {
			p, q := a.Backorders[j], b.Backorders[j]
			if p.LocationID != q.LocationID || p.Quantity != q.Quantity || !p.PromiseDate.Equal(q.PromiseDate) {
				return false
			}
		}
	}
	return true
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}
