package supplyplan

import (
	"cmp"
	"slices"
	"time"
)

// RunStrategy says what a re-allocation run may change (docs/allocation.md#re-allocation-runs).
type RunStrategy string

// Re-allocation strategies.
//
//   - PROTECT_EXISTING: no reservation is released or reduced. The open orders of the scope that are
//     not fully ALLOCATED (PARTIAL, BACKORDERED, FAILED or never allocated) are allocated again one
//     at a time in allocation order (priority, requested date, created, id); each keeps every
//     reservation it holds and plans only what they leave uncovered: it may gain stock freed since
//     (cancels, expiries, receipts booked as on hand) and earlier or larger backorders. A result
//     leaving a line with less reserved or less covered than before is dropped.
//   - FILL_NEWEST: as PROTECT_EXISTING, but the orders are served newest first (created, latest
//     first; then priority, id): freed stock goes to the most recent orders.
//   - REDISTRIBUTE_BY_PRIORITY: every HELD reservation and every backorder of the open orders of the
//     scope goes back to the pool (COMMITTED reservations stay: the order is confirmed); then every
//     order of the scope is allocated again in allocation order. A higher-priority order takes
//     stock a lower-priority one held; an order may lose stock, or fail under FILL_OR_KILL or
//     SHIP_COMPLETE (a failed order holds nothing, its COMMITTED reservations included: only an
//     order holding HELD ones beside them can fail). Reservations placing the same quantity at the
//     same location keep their id.
const (
	StrategyProtectExisting RunStrategy = "PROTECT_EXISTING"
	StrategyRedistribute    RunStrategy = "REDISTRIBUTE_BY_PRIORITY"
	StrategyFillNewest      RunStrategy = "FILL_NEWEST"
)

// RunStrategies lists every strategy.
var RunStrategies = []RunStrategy{StrategyProtectExisting, StrategyRedistribute, StrategyFillNewest}

// RunScope restricts a run to the open orders matching every list given: orderIds (the order is
// one of them), skuIds (a line orders one of them), locationIds (a line requests one of them, or
// the order holds or awaits stock at one of them). Empty lists match everything.
type RunScope struct {
	SKUs        []string `json:"skuIds,omitempty" max:"200"`
	LocationIDs []string `json:"locationIds,omitempty" max:"200"`
	OrderIDs    []string `json:"orderIds,omitempty" max:"200"`
}

// RunInput is the body of POST /api/allocation/runs.
type RunInput struct {
	// DryRun defaults to true: only an explicit false changes anything.
	DryRun   *bool     `json:"dryRun"`
	Scope    *RunScope `json:"scope"`
	Strategy *string   `json:"strategy" max:"200"`
}

// RunRequest is a validated RunInput.
type RunRequest struct {
	DryRun   bool
	Scope    RunScope
	Strategy RunStrategy
}

// Validate checks a run's input and returns the request it asks for.
func (in RunInput) Validate() (RunRequest, error) {
	if err := CheckInput(in); err != nil {
		return RunRequest{}, err
	}
	fe := FieldErrors{}
	req := RunRequest{DryRun: in.DryRun == nil || *in.DryRun}
	switch {
	case in.Strategy == nil || *in.Strategy == "":
		fe.Add("strategy", "is required (one of %s)", joinEnum(RunStrategies))
	case !slices.Contains(RunStrategies, RunStrategy(*in.Strategy)):
		fe.Add("strategy", "must be one of %s", joinEnum(RunStrategies))
	default:
		req.Strategy = RunStrategy(*in.Strategy)
	}
	if in.Scope != nil {
		req.Scope = *in.Scope
		for field, ids := range map[string][]string{"scope.skuIds": in.Scope.SKUs, "scope.locationIds": in.Scope.LocationIDs, "scope.orderIds": in.Scope.OrderIDs} {
			if len(ids) > MaxRunScopeIDs {
				fe.Add(field, "must hold at most %d ids", MaxRunScopeIDs)
			}
		}
	}
	return req, fe.Err()
}

// AllocationSummary is an order's allocation in figures.
type AllocationSummary struct {
	// Status is the allocation's status, NONE for an order never allocated.
	Status      AllocationStatus `json:"status"`
	Reserved    float64          `json:"reserved"`
	Backordered float64          `json:"backordered"`
	Shortfall   float64          `json:"shortfall"`
	// PromiseDate is the latest promise date of its lines.
	PromiseDate *time.Time `json:"promiseDate"`
}

// AllocNone is the summary status of an order without an allocation.
const AllocNone AllocationStatus = "NONE"

func summarize(a *Allocation, o *AllocOrder) AllocationSummary {
	if a == nil {
		var q float64
		for _, l := range o.Lines {
			q += l.Quantity
		}
		return AllocationSummary{Status: AllocNone, Shortfall: snap(q)}
	}
	s := AllocationSummary{Status: a.Status}
	r, b, sh := a.Totals()
	s.Reserved, s.Backordered, s.Shortfall = snap(r), snap(b), snap(sh)
	for _, l := range a.Lines {
		if l.PromiseDate != nil && (s.PromiseDate == nil || l.PromiseDate.After(*s.PromiseDate)) {
			s.PromiseDate = l.PromiseDate
		}
	}
	return s
}

// LineChange is how a run changed one line.
type LineChange struct {
	LineID            string     `json:"lineId"`
	ReservedBefore    float64    `json:"reservedBefore"`
	ReservedAfter     float64    `json:"reservedAfter"`
	BackorderedBefore float64    `json:"backorderedBefore"`
	BackorderedAfter  float64    `json:"backorderedAfter"`
	ShortfallBefore   float64    `json:"shortfallBefore"`
	ShortfallAfter    float64    `json:"shortfallAfter"`
	PromiseDateBefore *time.Time `json:"promiseDateBefore"`
	PromiseDateAfter  *time.Time `json:"promiseDateAfter"`
}

// OrderChange is how a run changed one order.
type OrderChange struct {
	OrderID  string            `json:"orderId"`
	Priority int               `json:"priority"`
	Before   AllocationSummary `json:"before"`
	After    AllocationSummary `json:"after"`
	Lines    []LineChange      `json:"lines"`
}

// RunTotals are the figures of the orders a run considered.
type RunTotals struct {
	Reserved    float64                  `json:"reserved"`
	Backordered float64                  `json:"backordered"`
	Shortfall   float64                  `json:"shortfall"`
	Orders      map[AllocationStatus]int `json:"orders"`
}

func (t *RunTotals) add(s AllocationSummary) {
	if t.Orders == nil {
		t.Orders = map[AllocationStatus]int{}
	}
	t.Reserved = snap(t.Reserved + s.Reserved)
	t.Backordered = snap(t.Backordered + s.Backordered)
	t.Shortfall = snap(t.Shortfall + s.Shortfall)
	t.Orders[s.Status]++
}

// AllocationRun is a re-allocation run with its before/after difference (record kind "allocrun"
// when it was not a dry run).
type AllocationRun struct {
	ID                   string        `json:"id"`
	Strategy             RunStrategy   `json:"strategy"`
	DryRun               bool          `json:"dryRun"`
	Scope                RunScope      `json:"scope"`
	By                   string        `json:"by,omitempty"`
	CreatedAt            time.Time     `json:"createdAt"`
	OrdersConsidered     int           `json:"ordersConsidered"`
	OrdersChanged        int           `json:"ordersChanged"`
	ReservationsCreated  int           `json:"reservationsCreated"`
	ReservationsReleased int           `json:"reservationsReleased"`
	Before               RunTotals     `json:"before"`
	After                RunTotals     `json:"after"`
	Changes              []OrderChange `json:"changes"`
	// ChangesTruncated is set on a stored run holding only the first MaxRunChangesStored changes.
	ChangesTruncated bool `json:"changesTruncated,omitempty"`
}

// inScope reports whether an open order falls in a run's scope.
func (s *AllocationState) inScope(o *AllocOrder, sc RunScope, now time.Time) bool {
	if o.Status != OrderOpen && o.Status != "" {
		return false
	}
	if len(sc.OrderIDs) > 0 && !slices.Contains(sc.OrderIDs, o.ID) {
		return false
	}
	if len(sc.SKUs) > 0 && !slices.ContainsFunc(o.Lines, func(l AllocLine) bool { return slices.Contains(sc.SKUs, l.SKU) }) {
		return false
	}
	if len(sc.LocationIDs) > 0 {
		if slices.ContainsFunc(o.Lines, func(l AllocLine) bool { return slices.Contains(sc.LocationIDs, l.LocationID) }) {
			return true
		}
		for _, r := range s.activeOf(o.ID, now) {
			if slices.Contains(sc.LocationIDs, r.LocationID) {
				return true
			}
		}
		if a := s.Allocations[o.ID]; a != nil {
			for _, l := range a.Lines {
				for _, b := range l.Backorders {
					if slices.Contains(sc.LocationIDs, b.LocationID) {
						return true
					}
				}
			}
		}
		return false
	}
	return true
}

// PlanRun runs a re-allocation over the open orders of the scope (orders are every order of the
// tenant as allocation sees them). It returns the run with its difference and, unless it is a dry
// run, the records to apply (the run itself included) and the allocation events due (an order
// never notified at its version).
func (s *AllocationState) PlanRun(w AllocationWorld, orders []AllocOrder, req RunRequest, cfg AllocationConfig, by string, now time.Time) (AllocationRun, []Record, []DomainEvent) {
	run := AllocationRun{ID: NewID("run"), Strategy: req.Strategy, DryRun: req.DryRun, Scope: req.Scope, By: by, CreatedAt: now,
		Changes: []OrderChange{}}
	s.index()
	var sel []AllocOrder
	for i := range orders {
		if s.inScope(&orders[i], req.Scope, now) {
			sel = append(sel, orders[i])
		}
	}
	before := make(map[string]*Allocation, len(sel))
	for _, o := range sel {
		before[o.ID] = s.Allocations[o.ID]
	}
	a := NewAllocator(s, w, cfg, now)
	var todo []AllocOrder
	mode := modeKeep
	switch req.Strategy {
	case StrategyRedistribute:
		mode = modeKeepCommitted
		for _, o := range sel {
			if p := a.allocationOf(o.ID); p != nil && o.Version < p.OrderVersion {
				continue // ignored when allocated: its stock stays where it is
			}
			for _, r := range a.activeOf(o.ID) {
				if r.Status == ResHeld {
					a.giveBack(r)
					a.pooled[r.ID] = true
				}
			}
			a.givePromises(a.allocationOf(o.ID))
			a.pooledPromises[o.ID] = true
		}
		a.undo = a.undo[:0]
		todo = slices.Clone(sel)
		SortForAllocation(todo)
	default:
		for _, o := range sel {
			if p := before[o.ID]; p == nil || p.Status != AllocAllocated {
				todo = append(todo, o)
			}
		}
		if req.Strategy == StrategyFillNewest {
			slices.SortStableFunc(todo, func(x, y AllocOrder) int {
				if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
					return c
				}
				if c := cmp.Compare(x.Priority, y.Priority); c != 0 {
					return c
				}
				return cmp.Compare(x.ID, y.ID)
			})
		} else {
			SortForAllocation(todo)
		}
	}
	var recs []Record
	var events []DomainEvent
	after := map[string]*Allocation{}
	for _, o := range todo {
		out := a.allocate(o, mode)
		after[o.ID] = out.Allocation
		recs = append(recs, out.Records...)
		if out.Event != nil {
			events = append(events, *out.Event)
		}
	}
	for _, r := range recs {
		if r.Kind != KindReservation || r.Del {
			continue
		}
		v := r.Value.(*Reservation)
		switch {
		case !v.Status.Active():
			run.ReservationsReleased++
		case s.Reservations[v.ID] == nil:
			run.ReservationsCreated++
		}
	}
	for i := range sel {
		o := &sel[i]
		b := summarize(before[o.ID], o)
		run.Before.add(b)
		na, touched := after[o.ID]
		if !touched {
			na = before[o.ID]
		}
		n := summarize(na, o)
		run.After.add(n)
		if lines := lineChanges(before[o.ID], na, o); len(lines) > 0 || b.Status != n.Status {
			run.Changes = append(run.Changes, OrderChange{OrderID: o.ID, Priority: o.Priority, Before: b, After: n, Lines: lines})
		}
	}
	run.OrdersConsidered, run.OrdersChanged = len(sel), len(run.Changes)
	if req.DryRun {
		return run, nil, nil
	}
	stored := run
	if len(stored.Changes) > MaxRunChangesStored {
		stored.Changes, stored.ChangesTruncated = slices.Clone(stored.Changes[:MaxRunChangesStored]), true
	}
	recs = append(recs, trimOldest(s.AllocationRuns, KindAllocationRun, MaxAllocationRuns, 1)...)
	recs = append(recs, Put(KindAllocationRun, stored.ID, &stored))
	return run, recs, events
}

// lineChanges lists the lines whose figures or promise day differ between two allocations.
func lineChanges(before, after *Allocation, o *AllocOrder) []LineChange {
	find := func(a *Allocation, id string) *AllocationLine {
		if a == nil {
			return nil
		}
		for i := range a.Lines {
			if a.Lines[i].LineID == id {
				return &a.Lines[i]
			}
		}
		return nil
	}
	var out []LineChange
	for _, l := range o.Lines {
		c := LineChange{LineID: l.LineID, ShortfallBefore: l.Quantity, ShortfallAfter: l.Quantity}
		if b := find(before, l.LineID); b != nil {
			c.ReservedBefore, c.BackorderedBefore, c.ShortfallBefore, c.PromiseDateBefore = snap(b.Reserved()), b.BackorderedQuantity, b.Shortfall, b.PromiseDate
		}
		if n := find(after, l.LineID); n != nil {
			c.ReservedAfter, c.BackorderedAfter, c.ShortfallAfter, c.PromiseDateAfter = snap(n.Reserved()), n.BackorderedQuantity, n.Shortfall, n.PromiseDate
		}
		if c.ReservedBefore != c.ReservedAfter || c.BackorderedBefore != c.BackorderedAfter || c.ShortfallBefore != c.ShortfallAfter ||
			!sameDay(c.PromiseDateBefore, c.PromiseDateAfter) {
			out = append(out, c)
		}
	}
	return out
}

func sameDay(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return StartOfDay(*a).Equal(StartOfDay(*b))
}
