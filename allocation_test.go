package supplyplan

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// allocWorld is an AllocationWorld over plain maps.
type allocWorld struct {
	unknown  map[string]bool // skus not in the catalog
	inactive map[string]bool
	supply   map[stockKey]Supply
	sources  map[string][]SourceCandidate // by sku
}

func newAllocWorld() *allocWorld {
	return &allocWorld{unknown: map[string]bool{}, inactive: map[string]bool{}, supply: map[stockKey]Supply{}, sources: map[string][]SourceCandidate{}}
}

func (w *allocWorld) KnownSKU(sku string) bool       { return !w.unknown[sku] }
func (w *allocWorld) LocationActive(loc string) bool { return !w.inactive[loc] }
func (w *allocWorld) Supply(sku, loc string) Supply  { return w.supply[stockKey{sku, loc}] }
func (w *allocWorld) Sources(sku, requested string) []SourceCandidate {
	return w.sources[sku]
}

func (w *allocWorld) stock(sku, loc string, onHand float64) *allocWorld {
	s := w.supply[stockKey{sku, loc}]
	s.OnHand = onHand
	w.supply[stockKey{sku, loc}] = s
	return w
}

func (w *allocWorld) receipt(sku, loc string, at time.Time, q float64) *allocWorld {
	s := w.supply[stockKey{sku, loc}]
	s.Receipts = append(s.Receipts, Receipt{At: at, Quantity: q})
	w.supply[stockKey{sku, loc}] = s
	return w
}

// consume takes shipped stock off the levels, as the integration does.
func (w *allocWorld) consume(cs []Consumption) {
	for _, c := range cs {
		s := w.supply[stockKey{c.SKU, c.LocationID}]
		s.OnHand -= c.Quantity
		w.supply[stockKey{c.SKU, c.LocationID}] = s
	}
}

// applyLedger applies records to the ledger, failing the test on an error; each record goes through
// a JSON round trip first, as the journal replays it.
func applyLedger(tb testing.TB, l *AllocationState, recs []Record) {
	tb.Helper()
	b, err := EncodeRecords(recs)
	if err != nil {
		tb.Fatalf("encode records: %v", err)
	}
	decoded, err := DecodeRecords(b)
	if err != nil {
		tb.Fatalf("decode records: %v", err)
	}
	for _, r := range decoded {
		if err := l.Apply(r); err != nil {
			tb.Fatalf("apply %s %s: %v", r.Kind, r.ID, err)
		}
	}
}

// allocOne allocates one order at now and applies the outcome.
func allocOne(tb testing.TB, l *AllocationState, w AllocationWorld, o AllocOrder, now time.Time) AllocationOutcome {
	tb.Helper()
	out := NewAllocator(l, w, AllocationConfig{OrgID: "org"}, now).Allocate(o)
	applyLedger(tb, l, out.Records)
	return out
}

func order(id string, lines ...AllocLine) AllocOrder {
	return AllocOrder{ID: id, Status: OrderOpen, CreatedAt: allocT0, Lines: lines}
}

func line(id, sku, loc string, q float64) AllocLine {
	return AllocLine{LineID: id, SKU: sku, LocationID: loc, Quantity: q}
}

// lineView renders a line's allocation compactly: "A:6 B:4 bo C:2@d3 short 1".
func lineView(l AllocationLine) string {
	var parts []string
	for _, a := range l.Allocations {
		parts = append(parts, fmt.Sprintf("%s:%g", a.LocationID, a.Quantity))
	}
	for _, b := range l.Backorders {
		parts = append(parts, fmt.Sprintf("bo %s:%g@d%g", b.LocationID, b.Quantity, math.Round(b.PromiseDate.Sub(allocT0).Hours()/24*100)/100))
	}
	if l.Shortfall > 0 {
		parts = append(parts, fmt.Sprintf("short %g", l.Shortfall))
	}
	return strings.Join(parts, " ")
}

func allocView(a *Allocation) []string {
	if a == nil {
		return nil
	}
	out := []string{string(a.Status) + " " + a.ReasonCode}
	for _, l := range a.Lines {
		out = append(out, l.LineID+": "+lineView(l))
	}
	return out
}

func TestAllocationPolicies(t *testing.T) {
	tests := []struct {
		name  string
		world func() *allocWorld
		order AllocOrder
		want  []string
	}{
		{"fill-or-kill allocated in full",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 12) },
			order("o", line("1", "X", "A", 12)),
			[]string{"ALLOCATED ", "1: A:12"}},
		{"fill-or-kill: all or nothing",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 10).stock("Y", "A", 3) },
			withTerms(order("o", line("1", "X", "A", 5), line("2", "Y", "A", 4)), OrderTerms{Fill: FillOrKill}),
			[]string{"FAILED INSUFFICIENT_ATP", "1: short 5", "2: short 4"}},
		{"fill-or-kill: the same item twice is summed",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 10) },
			withTerms(order("o", line("1", "X", "A", 6), line("2", "X", "A", 6)), OrderTerms{Fill: FillOrKill}),
			[]string{"FAILED INSUFFICIENT_ATP", "1: short 6", "2: short 6"}},
		{"fill-or-kill never backorders",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 5).receipt("X", "A", day(1), 10) },
			withTerms(order("o", line("1", "X", "A", 10)), OrderTerms{Fill: FillOrKill, MaxLatenessDays: 5}),
			[]string{"FAILED INSUFFICIENT_ATP", "1: short 10"}},
		{"partial takes what there is",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 10) },
			order("o", line("1", "X", "A", 15)),
			[]string{"PARTIAL ", "1: A:10 short 5"}},
		{"partial: the same item twice is summed",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 10) },
			order("o", line("1", "X", "A", 6), line("2", "X", "A", 6)),
			[]string{"PARTIAL ", "1: A:6", "2: A:4 short 2"}},
		{"partial below minQuantity takes nothing",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 10) },
			withTerms(order("o", line("1", "X", "A", 15)), OrderTerms{MinQuantity: 12}),
			[]string{"FAILED INSUFFICIENT_ATP", "1: short 15"}},
		{"partial: a whole line below minQuantity is allowed",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 10) },
			withTerms(order("o", line("1", "X", "A", 5)), OrderTerms{MinQuantity: 12}),
			[]string{"ALLOCATED ", "1: A:5"}},
		{"partial: minQuantity per line",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 10).stock("Y", "A", 2) },
			withTerms(order("o", line("1", "X", "A", 15), line("2", "Y", "A", 6)), OrderTerms{MinQuantity: 5}),
			[]string{"PARTIAL ", "1: A:10 short 5", "2: short 6"}},
		{"ship complete: stock now and a receipt in time",
			func() *allocWorld {
				return newAllocWorld().stock("X", "A", 5).stock("Y", "A", 4).receipt("X", "A", day(3), 10)
			},
			withTerms(order("o", line("1", "X", "A", 10), line("2", "Y", "A", 4)), OrderTerms{Fill: FillComplete, MaxLatenessDays: 5}),
			[]string{"BACKORDERED ", "1: A:5 bo A:5@d3", "2: A:4"}},
		{"ship complete: the receipt is too late",
			func() *allocWorld {
				return newAllocWorld().stock("X", "A", 5).stock("Y", "A", 4).receipt("X", "A", day(3), 10)
			},
			withTerms(order("o", line("1", "X", "A", 10), line("2", "Y", "A", 4)), OrderTerms{Fill: FillComplete, MaxLatenessDays: 1}),
			[]string{"FAILED INSUFFICIENT_ATP", "1: short 10", "2: short 4"}},
		{"ship complete in stock",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 5) },
			withTerms(order("o", line("1", "X", "A", 5)), OrderTerms{Fill: FillComplete}),
			[]string{"ALLOCATED ", "1: A:5"}},
		{"unknown sku",
			func() *allocWorld { w := newAllocWorld().stock("X", "A", 5); w.unknown["Z"] = true; return w },
			order("o", line("1", "X", "A", 1), line("2", "Z", "A", 1)),
			[]string{"FAILED UNKNOWN_SKU", "1: short 1", "2: short 1"}},
		{"inactive location without splitting",
			func() *allocWorld { w := newAllocWorld().stock("X", "A", 5); w.inactive["A"] = true; return w },
			order("o", line("1", "X", "A", 1)),
			[]string{"FAILED LOCATION_INACTIVE", "1: short 1"}},
		{"inactive location with splitting: the others serve",
			func() *allocWorld {
				w := newAllocWorld().stock("X", "A", 5).stock("X", "B", 5)
				w.inactive["A"] = true
				w.sources["X"] = []SourceCandidate{{LocationID: "A"}, {LocationID: "B"}}
				return w
			},
			withTerms(order("o", line("1", "X", "A", 3)), OrderTerms{MaxLocations: 2}),
			[]string{"ALLOCATED ", "1: B:3"}},
		{"policy violation: two lines with one id",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 5) },
			order("o", line("1", "X", "A", 1), line("1", "X", "A", 1)),
			[]string{"FAILED POLICY_VIOLATION", "1: short 1", "1: short 1"}},
		{"policy violation: unknown fill",
			func() *allocWorld { return newAllocWorld().stock("X", "A", 5) },
			withTerms(order("o", line("1", "X", "A", 1)), OrderTerms{Fill: "SOMETIMES"}),
			[]string{"FAILED POLICY_VIOLATION", "1: short 1"}},
		{"nothing at all",
			func() *allocWorld { return newAllocWorld() },
			order("o", line("1", "X", "A", 1)),
			[]string{"FAILED INSUFFICIENT_ATP", "1: short 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &AllocationState{}
			out := allocOne(t, l, tt.world(), tt.order, allocT0)
			if got := allocView(out.Allocation); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if out.Event == nil {
				t.Fatal("got no event, want one")
			}
			// the ledger holds exactly what the allocation lists
			var listed float64
			for _, ln := range out.Allocation.Lines {
				listed += ln.Reserved()
			}
			var held float64
			for _, r := range l.activeOf("o", allocT0) {
				held += r.Quantity
			}
			if held != listed {
				t.Errorf("ledger holds %g, allocation lists %g", held, listed)
			}
		})
	}
}

func withTerms(o AllocOrder, t OrderTerms) AllocOrder {
	o.OrderTerms = t
	return o
}

func TestSplittingAndRanking(t *testing.T) {
	world := func() *allocWorld {
		w := newAllocWorld().stock("X", "A", 3).stock("X", "B", 10).stock("X", "C", 10).stock("X", "D", 1)
		w.sources["X"] = []SourceCandidate{
			{LocationID: "B", LeadTimeDays: 1, UnitCost: 5},
			{LocationID: "C", LeadTimeDays: 1, UnitCost: 2},
			{LocationID: "D", LeadTimeDays: 0.5, UnitCost: 9},
			{LocationID: "A", LeadTimeDays: 0, UnitCost: 0},
		}
		return w
	}
	tests := []struct {
		name  string
		terms OrderTerms
		loc   string
		want  []string
	}{
		{"no splitting: the requested location only", OrderTerms{}, "A", []string{"PARTIAL ", "1: A:3 short 9"}},
		{"two locations: requested, then the shortest lead time", OrderTerms{MaxLocations: 2}, "A", []string{"PARTIAL ", "1: A:3 D:1 short 8"}},
		{"three locations: then the cheaper of equal lead times", OrderTerms{MaxLocations: 3}, "A", []string{"ALLOCATED ", "1: A:3 D:1 C:8"}},
		{"no requested location, one location: the fullest when none covers the line", OrderTerms{}, "", []string{"PARTIAL ", "1: C:10 short 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &AllocationState{}
			out := allocOne(t, l, world(), withTerms(order("o", line("1", "X", tt.loc, 12)), tt.terms), allocT0)
			if got := allocView(out.Allocation); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("no requested location, one location: the first ranked that covers the line", func(t *testing.T) {
		for q, want := range map[float64]string{3: "1: A:3", 4: "1: C:4"} {
			out := allocOne(t, &AllocationState{}, world(), order("o", line("1", "X", "", q)), allocT0)
			if got := allocView(out.Allocation); !slices.Equal(got, []string{"ALLOCATED ", want}) {
				t.Errorf("%g: got %q, want %q", q, got, want)
			}
		}
	})
}

func TestBackorderPromiseDates(t *testing.T) {
	world := func() *allocWorld {
		return newAllocWorld().stock("X", "A", 2).receipt("X", "A", day(4), 10).receipt("X", "A", day(9), 20)
	}
	req := func(d float64) *time.Time { t := day(d); return &t }
	tests := []struct {
		name  string
		q     float64
		terms OrderTerms
		want  []string
	}{
		{"no lateness allowed: nothing to promise", 8, OrderTerms{}, []string{"PARTIAL ", "1: A:2 short 6"}},
		{"within maxLatenessDays", 8, OrderTerms{MaxLatenessDays: 5}, []string{"BACKORDERED ", "1: A:2 bo A:6@d4"}},
		{"over maxLatenessDays", 8, OrderTerms{MaxLatenessDays: 3}, []string{"PARTIAL ", "1: A:2 short 6"}},
		{"partly within: the rest is short", 20, OrderTerms{MaxLatenessDays: 5}, []string{"PARTIAL ", "1: A:2 bo A:10@d4 short 8"}},
		{"two receipts: promised when both are in", 20, OrderTerms{MaxLatenessDays: 10}, []string{"BACKORDERED ", "1: A:2 bo A:18@d9"}},
		{"a later requested date is the promise", 8, OrderTerms{MaxLatenessDays: 0, RequestedDate: req(6)}, []string{"BACKORDERED ", "1: A:2 bo A:6@d6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &AllocationState{}
			out := allocOne(t, l, world(), withTerms(order("o", line("1", "X", "A", tt.q)), tt.terms), allocT0)
			if got := allocView(out.Allocation); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}

	t.Run("the promise date of a line", func(t *testing.T) {
		l := &AllocationState{}
		out := allocOne(t, l, world(), withTerms(order("o", line("1", "X", "A", 8)), OrderTerms{MaxLatenessDays: 5}), allocT0)
		if got, want := *out.Allocation.Lines[0].PromiseDate, day(4); !got.Equal(want) {
			t.Errorf("got %s, want %s", got, want)
		}
	})

	t.Run("a receipt is promised once", func(t *testing.T) {
		l := &AllocationState{}
		w := newAllocWorld().receipt("X", "A", day(4), 10)
		allocOne(t, l, w, withTerms(order("o1", line("1", "X", "A", 8)), OrderTerms{MaxLatenessDays: 5}), allocT0)
		out := allocOne(t, l, w, withTerms(order("o2", line("1", "X", "A", 5)), OrderTerms{MaxLatenessDays: 5}), allocT0)
		if got, want := allocView(out.Allocation), []string{"PARTIAL ", "1: bo A:2@d4 short 3"}; !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
		if got, want := l.ATP("X", "A", w.Supply("X", "A"), day(5), allocT0).Available, 0.0; got != want {
			t.Errorf("ATP at day 5: got %g, want %g", got, want)
		}
	})

	t.Run("a failed order says when it could be served", func(t *testing.T) {
		l := &AllocationState{}
		out := allocOne(t, l, world(), withTerms(order("o", line("1", "X", "A", 8)), OrderTerms{Fill: FillComplete, MaxLatenessDays: 1}), allocT0)
		if out.Allocation.Status != AllocFailed || out.Allocation.EarliestPromiseDate == nil || !out.Allocation.EarliestPromiseDate.Equal(day(4)) {
			t.Fatalf("got %q earliest %v, want FAILED earliest %s", allocView(out.Allocation), out.Allocation.EarliestPromiseDate, day(4))
		}
		data := out.Event.Data.(AllocationFailed)
		if data.EarliestPromiseDate == nil || !data.EarliestPromiseDate.Equal(day(4)) || data.ReasonCode != ReasonInsufficientATP ||
			!slices.Equal(data.Lines, []ShortLine{{LineID: "1", Shortfall: 8}}) {
			t.Errorf("got event %+v", data)
		}
	})
}

func TestVersionsAndEvents(t *testing.T) {
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 10).stock("Y", "A", 10)
	v := func(n int64, q float64, lines ...AllocLine) AllocOrder {
		o := order("o", append([]AllocLine{line("1", "X", "A", q)}, lines...)...)
		o.Version = n
		return o
	}
	events := map[int64]int{}
	step := func(o AllocOrder, at time.Time) AllocationOutcome {
		t.Helper()
		out := allocOne(t, l, w, o, at)
		if out.Event != nil {
			events[o.Version]++
			if id := out.Event.Data.(AllocationSucceeded).OrderVersion; id != o.Version {
				t.Errorf("event of version %d carries version %d", o.Version, id)
			}
		}
		return out
	}
	out := step(v(2, 6, line("2", "Y", "A", 3)), allocT0)
	first := map[string]string{}
	for _, r := range l.activeOf("o", allocT0) {
		first[r.LineID] = r.ID
	}

	if out := step(v(1, 9), allocT0); !out.Ignored || len(out.Records) > 0 {
		t.Errorf("an older version: got ignored=%v with %d records, want ignored without records", out.Ignored, len(out.Records))
	}
	if out := step(v(2, 6, line("2", "Y", "A", 3)), allocT0.Add(time.Minute)); len(out.Records) > 0 || out.Event != nil {
		t.Errorf("the same version again: got %d records and event %v, want nothing", len(out.Records), out.Event)
	}
	out = step(v(3, 4, line("2", "Y", "A", 3)), allocT0.Add(2*time.Minute))
	if got, want := allocView(out.Allocation), []string{"ALLOCATED ", "1: A:4", "2: A:3"}; !slices.Equal(got, want) {
		t.Errorf("reduced line: got %q, want %q", got, want)
	}
	var reasons []string
	for _, r := range l.OrderReservations("o") {
		if r.Status == ResReleased {
			reasons = append(reasons, r.LineID+" "+r.ReleaseReason)
		}
	}
	if want := []string{"1 " + ReleaseLineReduced}; !slices.Equal(reasons, want) {
		t.Errorf("released: got %q, want %q", reasons, want)
	}
	for _, r := range l.activeOf("o", allocT0) {
		if r.LineID == "2" && (r.ID != first["2"] || r.OrderVersion != 3) {
			t.Errorf("unchanged line 2: got reservation %s of version %d, want %s restamped to version 3", r.ID, r.OrderVersion, first["2"])
		}
	}
	out = step(v(4, 4), allocT0.Add(3*time.Minute)) // line 2 removed
	for _, r := range l.OrderReservations("o") {
		if r.LineID == "2" && r.Status.Active() {
			t.Errorf("line 2 removed: its reservation %s is still %s", r.ID, r.Status)
		}
		if r.LineID == "2" && r.ReleaseReason != ReleaseLineRemoved {
			t.Errorf("line 2 removed: released as %q, want %q", r.ReleaseReason, ReleaseLineRemoved)
		}
	}
	if got, want := l.ReservedAt("Y", "A", allocT0), 0.0; got != want {
		t.Errorf("Y reserved after its line went: got %g, want %g", got, want)
	}
	if want := map[int64]int{2: 1, 3: 1, 4: 1}; !mapsEqual(events, want) {
		t.Errorf("events per version: got %v, want %v", events, want)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestEventOncePerVersionInABatch(t *testing.T) {
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 10)
	o := order("o", line("1", "X", "A", 4))
	older := o
	older.Version, o.Version = 1, 2
	outs := NewAllocator(l, w, AllocationConfig{}, allocT0).AllocateBatch([]AllocOrder{o, o, older})
	applyLedger(t, l, OutcomeRecords(outs))
	var n int
	for _, out := range outs {
		if out.Event != nil {
			n++
		}
	}
	if got, want := len(outs), 1; got != want {
		t.Errorf("outcomes: got %d, want %d (one per order)", got, want)
	}
	if n != 1 {
		t.Errorf("events: got %d, want 1", n)
	}
	if got := l.Allocations["o"].OrderVersion; got != 2 {
		t.Errorf("version allocated: got %d, want 2", got)
	}
	// a run later at the same version emits nothing
	run, recs, evs := l.PlanRun(w, []AllocOrder{o}, RunRequest{Strategy: StrategyRedistribute}, AllocationConfig{}, "t", allocT0)
	applyLedger(t, l, recs)
	if len(evs) != 0 || run.OrdersChanged != 0 {
		t.Errorf("run at the same version: got %d events and %d changes, want none", len(evs), run.OrdersChanged)
	}
}

func TestCancelRestores(t *testing.T) {
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 10).receipt("X", "A", day(2), 5)
	a := withTerms(order("a", line("1", "X", "A", 15)), OrderTerms{MaxLatenessDays: 3})
	allocOne(t, l, w, a, allocT0)
	if got := l.ATP("X", "A", w.Supply("X", "A"), day(3), allocT0).Available; got != 0 {
		t.Fatalf("ATP with a allocated: got %g, want 0", got)
	}
	b := withTerms(order("b", line("1", "X", "A", 15)), OrderTerms{MaxLatenessDays: 3})
	if out := allocOne(t, l, w, b, allocT0); out.Allocation.Status != AllocFailed {
		t.Fatalf("b before the cancel: got %s, want FAILED", out.Allocation.Status)
	}
	a.Status, a.Version = OrderCancelled, 1
	out := allocOne(t, l, w, a, allocT0)
	if out.Allocation.Status != AllocReleased || out.Event != nil {
		t.Errorf("cancel: got %s with event %v, want RELEASED without event", out.Allocation.Status, out.Event)
	}
	if got := l.ATP("X", "A", w.Supply("X", "A"), day(3), allocT0); got.Reserved != 0 || got.Backordered != 0 || got.Available != 15 {
		t.Errorf("ATP after the cancel: got %+v, want nothing reserved or backordered, 15 available", got)
	}
	for _, r := range l.OrderReservations("a") {
		if r.Status != ResReleased || r.ReleaseReason != ReleaseCancelled {
			t.Errorf("reservation %s: got %s %s, want RELEASED %s", r.ID, r.Status, r.ReleaseReason, ReleaseCancelled)
		}
	}
	b.Version = 1
	if out := allocOne(t, l, w, b, allocT0); out.Allocation.Status != AllocBackordered {
		t.Errorf("b after the cancel: got %q, want BACKORDERED", allocView(out.Allocation))
	}
}

func TestExpiryReleases(t *testing.T) {
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 10)
	cfg := AllocationConfig{HoldTTL: 5 * time.Minute}
	out := NewAllocator(l, w, cfg, allocT0).Allocate(order("o", line("1", "X", "A", 10)))
	applyLedger(t, l, out.Records)
	r := l.activeOf("o", allocT0)[0]
	if r.Status != ResHeld || !r.ExpiresAt.Equal(allocT0.Add(5*time.Minute)) {
		t.Fatalf("got %s until %v, want HELD until %s", r.Status, r.ExpiresAt, allocT0.Add(5*time.Minute))
	}
	later := allocT0.Add(5*time.Minute + time.Second)
	if got := l.ReservedAt("X", "A", later); got != 0 {
		t.Errorf("reserved past the expiry, before the sweep: got %g, want 0", got)
	}
	if got := l.ListReservations(ReservationFilter{OrderID: "o"}, later).Items[0].Status; got != ResExpired {
		t.Errorf("listed past the expiry: got %s, want EXPIRED", got)
	}
	if recs := l.Sweep(allocT0.Add(4*time.Minute), cfg); len(recs) != 0 {
		t.Errorf("sweep before the expiry: got %d records, want none", len(recs))
	}
	applyLedger(t, l, l.Sweep(later, cfg))
	if got := l.Reservations[r.ID]; got.Status != ResExpired || got.ReleaseReason != ReleaseHoldExpired || !got.ReleasedAt.Equal(allocT0.Add(5*time.Minute)) {
		t.Errorf("after the sweep: got %+v, want EXPIRED at the expiry", got)
	}
	if got, want := allocView(l.Allocations["o"]), []string{"FAILED INSUFFICIENT_ATP", "1: short 10"}; !slices.Equal(got, want) {
		t.Errorf("allocation after the expiry: got %q, want %q", got, want)
	}
	if l.index().heldCount() != 0 || l.index().byKey[stockKey{"X", "A"}].reserved != 0 {
		t.Errorf("index after the expiry: %d held, %g reserved", l.index().heldCount(), l.index().byKey[stockKey{"X", "A"}].reserved)
	}
	// the expired quantity is free for another order
	if out := allocOne(t, l, w, order("p", line("1", "X", "A", 10)), later); out.Allocation.Status != AllocAllocated {
		t.Errorf("another order after the expiry: got %s, want ALLOCATED", out.Allocation.Status)
	}
	// terminal reservations go after the retention
	applyLedger(t, l, l.Sweep(later.Add(DefaultReservationRetention+time.Second), cfg))
	if _, ok := l.Reservations[r.ID]; ok {
		t.Errorf("expired reservation kept past the retention")
	}
}

func TestCommitStopsExpiry(t *testing.T) {
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 10)
	allocOne(t, l, w, order("o", line("1", "X", "A", 4)), allocT0)
	applyLedger(t, l, l.CommitOrder("o", allocT0.Add(time.Minute)))
	later := allocT0.Add(2 * DefaultHoldTTL)
	if got := l.ReservedAt("X", "A", later); got != 4 {
		t.Errorf("committed, past the hold: got %g reserved, want 4", got)
	}
	if recs := l.ExpireHolds(later); len(recs) != 0 {
		t.Errorf("sweep of a committed reservation: got %d records", len(recs))
	}
	// a re-allocation of a changed order keeps it COMMITTED
	o := order("o", line("1", "X", "A", 6))
	o.Version = 1
	allocOne(t, l, w, o, later)
	for _, r := range l.activeOf("o", later) {
		if r.Status != ResCommitted || r.Quantity != 6 {
			t.Errorf("re-allocated: got %s %g, want COMMITTED 6", r.Status, r.Quantity)
		}
	}
	cfg := AllocationConfig{CommitOnAllocate: true}
	out := NewAllocator(l, w, cfg, later).Allocate(order("p", line("1", "X", "A", 1)))
	applyLedger(t, l, out.Records)
	if r := l.activeOf("p", later)[0]; r.Status != ResCommitted || r.ExpiresAt != nil {
		t.Errorf("CommitOnAllocate: got %s until %v", r.Status, r.ExpiresAt)
	}
}

func TestShipConsumes(t *testing.T) {
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 10).stock("X", "B", 10)
	w.sources["X"] = []SourceCandidate{{LocationID: "B", LeadTimeDays: 1}}
	o := withTerms(order("o", line("1", "X", "A", 14), line("2", "X", "B", 2)), OrderTerms{MaxLocations: 2})
	allocOne(t, l, w, o, allocT0)
	before := l.ATP("X", "B", w.Supply("X", "B"), allocT0, allocT0).Available
	o.Status, o.Version = OrderShipped, 1
	out := allocOne(t, l, w, o, allocT0)
	want := []Consumption{{SKU: "X", LocationID: "A", Quantity: 10}, {SKU: "X", LocationID: "B", Quantity: 6}}
	if !slices.Equal(out.Consumed, want) {
		t.Errorf("consumed: got %+v, want %+v", out.Consumed, want)
	}
	w.consume(out.Consumed)
	if out.Allocation.Status != AllocShipped || out.Event != nil {
		t.Errorf("got %s with event %v, want SHIPPED without event", out.Allocation.Status, out.Event)
	}
	if got := l.ATP("X", "B", w.Supply("X", "B"), allocT0, allocT0); got.Available != before || got.OnHand != 4 || got.Reserved != 0 {
		t.Errorf("ATP at B after shipping: got %+v, want available %g with on hand 4, nothing reserved", got, before)
	}
	for _, r := range l.OrderReservations("o") {
		if r.Status != ResReleased || r.ReleaseReason != ReleaseShipped {
			t.Errorf("reservation %s: got %s %s", r.ID, r.Status, r.ReleaseReason)
		}
	}
	if found := l.FindInconsistencies(w, lookupOf(o), allocT0); len(found) != 0 {
		t.Errorf("inconsistencies after shipping: %+v", found)
	}
}

func lookupOf(orders ...AllocOrder) OrderLookup {
	m := map[string]AllocOrder{}
	for _, o := range orders {
		m[o.ID] = o
	}
	return func(id string) (AllocOrder, bool) { o, ok := m[id]; return o, ok }
}

func TestDeterministicOrdering(t *testing.T) {
	req := func(d float64) *time.Time { t := day(d); return &t }
	mk := func(id string, prio int, requested *time.Time, created float64) AllocOrder {
		o := withTerms(order(id, line("1", "X", "A", 4)), OrderTerms{Priority: prio, RequestedDate: requested})
		o.CreatedAt = day(created)
		return o
	}
	orders := []AllocOrder{
		mk("late-created", 0, nil, 2),
		mk("low-priority", 5, req(0), 0),
		mk("requested-later", 0, req(3), 0),
		mk("requested-first", 0, req(1), 1),
		mk("b-same", 0, nil, 1),
		mk("a-same", 0, nil, 1),
	}
	want := []string{"requested-first", "requested-later", "a-same", "b-same", "late-created", "low-priority"}
	perms := [][]int{{0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}, {2, 0, 4, 1, 5, 3}, {3, 5, 1, 0, 2, 4}}
	for _, p := range perms {
		in := make([]AllocOrder, len(p))
		for i, j := range p {
			in[i] = orders[j]
		}
		l := &AllocationState{}
		w := newAllocWorld().stock("X", "A", 13) // three orders in full, a fourth in part
		outs := NewAllocator(l, w, AllocationConfig{}, day(3)).AllocateBatch(in)
		var got []string
		for _, o := range outs {
			got = append(got, o.OrderID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("order %v: got %q, want %q", p, got, want)
		}
		var status []string
		for _, o := range outs {
			status = append(status, string(o.Allocation.Status))
		}
		if wantStatus := []string{"ALLOCATED", "ALLOCATED", "ALLOCATED", "PARTIAL", "FAILED", "FAILED"}; !slices.Equal(status, wantStatus) {
			t.Errorf("order %v: got %q, want %q", p, status, wantStatus)
		}
	}
}

func TestBatchClosesFirst(t *testing.T) {
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 5)
	a := order("a", line("1", "X", "A", 5))
	allocOne(t, l, w, a, allocT0)
	a.Status, a.Version = OrderCancelled, 1
	b := order("b", line("1", "X", "A", 5))
	b.CreatedAt = allocT0.Add(-time.Hour) // allocation order alone would put it first
	outs := NewAllocator(l, w, AllocationConfig{}, allocT0).AllocateBatch([]AllocOrder{b, a})
	applyLedger(t, l, OutcomeRecords(outs))
	if got := l.Allocations["b"].Status; got != AllocAllocated {
		t.Errorf("b in the batch cancelling a: got %s, want ALLOCATED", got)
	}
}

func TestAllocationRecordsRoundTrip(t *testing.T) {
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 5).receipt("X", "A", day(2), 5)
	allocOne(t, l, w, withTerms(order("o", line("1", "X", "A", 8)), OrderTerms{MaxLatenessDays: 3}), allocT0)
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var back AllocationState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	sup := w.Supply("X", "A")
	if got, want := back.ATP("X", "A", sup, day(3), allocT0), l.ATP("X", "A", sup, day(3), allocT0); got != want {
		t.Errorf("ATP from the snapshot: got %+v, want %+v", got, want)
	}
	if got := back.FindInconsistencies(w, lookupOf(withTerms(order("o", line("1", "X", "A", 8)), OrderTerms{MaxLatenessDays: 3})), allocT0); len(got) != 0 {
		t.Errorf("inconsistencies after a snapshot round trip: %+v", got)
	}
	if err := back.Apply(Record{Kind: "nope", ID: "x"}); err == nil {
		t.Error("an unknown kind: got no error")
	}
	if err := back.Apply(Record{Kind: KindReservation, ID: "x", Value: &Allocation{}}); err == nil {
		t.Error("a value of the wrong type: got no error")
	}
}

func TestAllocStatusOf(t *testing.T) {
	tests := []struct {
		in        string
		status    string
		confirmed bool
	}{
		{"OPEN", OrderOpen, false}, {"PENDING", OrderOpen, false}, {"ALLOCATED", OrderOpen, true}, {"PICKED", OrderOpen, true},
		{"SHIPPED", OrderShipped, false}, {"DELIVERED", OrderShipped, false}, {"CANCELLED", OrderCancelled, false},
		{"RETURNED", OrderCancelled, false}, {"", OrderOpen, false},
	}
	for _, tt := range tests {
		if s, c := AllocStatusOf(tt.in); s != tt.status || c != tt.confirmed {
			t.Errorf("%q: got %s %v, want %s %v", tt.in, s, c, tt.status, tt.confirmed)
		}
	}
}

func TestAllocationView(t *testing.T) {
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 1.0/3).receipt("X", "A", day(2), 5)
	out := allocOne(t, l, w, withTerms(order("o", line("1", "X", "A", 2)), OrderTerms{MaxLatenessDays: 3}), allocT0)
	b, err := json.Marshal(out.Allocation.View())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	ln := got["lines"].([]any)[0].(map[string]any)
	if got["status"] != "BACKORDERED" || ln["backorderedQuantity"] != 1.67 || ln["allocations"].([]any)[0].(map[string]any)["quantity"] != 0.33 ||
		ln["promiseDate"] != "2026-11-04T10:00:00Z" {
		t.Errorf("got %s", b)
	}
	if _, ok := got["notified"]; ok {
		t.Errorf("the view shows internals: %s", b)
	}
}

// TestBatchSumsTheSameItem: two orders of one batch asking the same sku are checked against their
// sum (medusa#16502), whatever their fill policy.
func TestBatchSumsTheSameItem(t *testing.T) {
	tests := []struct {
		fill FillPolicy
		want []string
	}{
		{FillPartial, []string{"a ALLOCATED", "b PARTIAL"}},
		{FillOrKill, []string{"a ALLOCATED", "b FAILED"}},
		{FillComplete, []string{"a ALLOCATED", "b FAILED"}},
	}
	for _, tt := range tests {
		l := &AllocationState{}
		w := newAllocWorld().stock("X", "A", 10)
		a := withTerms(order("a", line("1", "X", "A", 6)), OrderTerms{Fill: tt.fill})
		b := withTerms(order("b", line("1", "X", "A", 6)), OrderTerms{Fill: tt.fill})
		applyLedger(t, l, OutcomeRecords(NewAllocator(l, w, AllocationConfig{}, allocT0).AllocateBatch([]AllocOrder{b, a})))
		if got := statuses(l, "a", "b"); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.fill, got, tt.want)
		}
		if got := l.ReservedAt("X", "A", allocT0); got > 10 {
			t.Errorf("%s: reserved %g of 10", tt.fill, got)
		}
	}
}

func TestListReservations(t *testing.T) {
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 10).stock("X", "B", 10).stock("Y", "A", 10)
	allocOne(t, l, w, order("o1", line("1", "X", "A", 2), line("2", "Y", "A", 2)), allocT0)
	allocOne(t, l, w, order("o2", line("1", "X", "B", 2)), allocT0)
	o1 := order("o1", line("1", "X", "A", 2))
	o1.Version = 1
	allocOne(t, l, w, o1, allocT0) // releases o1's line 2
	count := func(f ReservationFilter) int { return l.ListReservations(f, allocT0).Total }
	tests := []struct {
		f    ReservationFilter
		want int
	}{
		{ReservationFilter{}, 3},
		{ReservationFilter{OrderID: "o1"}, 2},
		{ReservationFilter{OrderID: "o1", Status: ResHeld}, 1},
		{ReservationFilter{Status: ResReleased}, 1},
		{ReservationFilter{SKU: "X"}, 2},
		{ReservationFilter{SKU: "X", LocationID: "A"}, 1},
		{ReservationFilter{LocationID: "A"}, 2},
		{ReservationFilter{OrderID: "nope"}, 0},
		{ReservationFilter{SKU: "Z", LocationID: "A"}, 0},
	}
	for _, tt := range tests {
		if got := count(tt.f); got != tt.want {
			t.Errorf("%+v: got %d, want %d", tt.f, got, tt.want)
		}
	}
	if p := l.ListReservations(ReservationFilter{Limit: 2}, allocT0); len(p.Items) != 2 || p.Items[0].ID < p.Items[1].ID {
		t.Errorf("page: got %d items, newest first %v", len(p.Items), p.Items)
	}
}
