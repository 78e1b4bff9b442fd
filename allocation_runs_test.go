package supplyplan

import (
	"slices"
	"testing"
	"time"
)

// runFixture: 10 of X at A; "low" (priority 5, created first) holds all of it, "high" (priority 1,
// created later) failed, "newer" (priority 3, created last) failed.
func runFixture(t *testing.T) (*AllocationState, *allocWorld, []AllocOrder) {
	t.Helper()
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 10)
	mk := func(id string, prio int, created time.Duration, q float64) AllocOrder {
		o := withTerms(order(id, line("1", "X", "A", q)), OrderTerms{Priority: prio})
		o.CreatedAt = allocT0.Add(created)
		return o
	}
	orders := []AllocOrder{mk("low", 5, 0, 10), mk("high", 1, time.Minute, 8), mk("newer", 3, 2*time.Minute, 4)}
	for _, o := range orders {
		allocOne(t, l, w, o, allocT0.Add(3*time.Minute))
	}
	if got := l.Allocations["low"].Status; got != AllocAllocated {
		t.Fatalf("fixture: low is %s", got)
	}
	return l, w, orders
}

func statuses(l *AllocationState, ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, id+" "+string(l.Allocations[id].Status))
	}
	return out
}

func TestRunStrategies(t *testing.T) {
	now := allocT0.Add(4 * time.Minute)
	tests := []struct {
		name     string
		strategy RunStrategy
		restock  float64 // on hand after the fixture
		commit   bool    // commit low's reservation first
		want     []string
		changed  []string
	}{
		{"protect existing with nothing new changes nothing", StrategyProtectExisting, 10, false,
			[]string{"low ALLOCATED", "high FAILED", "newer FAILED"}, nil},
		{"protect existing gives new stock by priority", StrategyProtectExisting, 15, false,
			[]string{"low ALLOCATED", "high PARTIAL", "newer FAILED"}, []string{"high"}},
		{"fill newest gives new stock to the newest", StrategyFillNewest, 15, false,
			[]string{"low ALLOCATED", "high PARTIAL", "newer ALLOCATED"}, []string{"high", "newer"}},
		{"redistribute by priority takes from the lower priority", StrategyRedistribute, 10, false,
			[]string{"low FAILED", "high ALLOCATED", "newer PARTIAL"}, []string{"high", "low", "newer"}},
		{"redistribute keeps committed reservations", StrategyRedistribute, 10, true,
			[]string{"low ALLOCATED", "high FAILED", "newer FAILED"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, w, orders := runFixture(t)
			w.stock("X", "A", tt.restock)
			if tt.commit {
				applyLedger(t, l, l.CommitOrder("low", now))
			}
			before := statuses(l, "low", "high", "newer")
			ledger := len(l.Reservations)

			dry, recs, evs := l.PlanRun(w, orders, RunRequest{DryRun: true, Strategy: tt.strategy}, AllocationConfig{}, "tester", now)
			if recs != nil || evs != nil || len(l.Reservations) != ledger || !slices.Equal(statuses(l, "low", "high", "newer"), before) {
				t.Fatalf("dry run changed something: %d records, %d events", len(recs), len(evs))
			}
			run, recs, _ := l.PlanRun(w, orders, RunRequest{Strategy: tt.strategy}, AllocationConfig{}, "tester", now)
			applyLedger(t, l, recs)
			if got := statuses(l, "low", "high", "newer"); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			var changed []string
			for _, c := range run.Changes {
				changed = append(changed, c.OrderID)
			}
			slices.Sort(changed)
			if !slices.Equal(changed, tt.changed) {
				t.Errorf("changes: got %q, want %q", changed, tt.changed)
			}
			var dryChanged []string
			for _, c := range dry.Changes {
				dryChanged = append(dryChanged, c.OrderID)
			}
			slices.Sort(dryChanged)
			if !slices.Equal(dryChanged, changed) || dry.After.Reserved != run.After.Reserved {
				t.Errorf("dry run: got changes %q reserving %g, the run %q reserving %g", dryChanged, dry.After.Reserved, changed, run.After.Reserved)
			}
			if got, want := run.After.Reserved, min(tt.restock, 22); tt.strategy != StrategyProtectExisting && !tt.commit && got != want {
				t.Errorf("reserved after: got %g, want %g", got, want)
			}
			if stored := l.AllocationRuns[run.ID]; stored == nil || stored.OrdersChanged != len(tt.changed) {
				t.Errorf("stored run: got %+v", stored)
			}
			if got := l.ReservedAt("X", "A", now); got > tt.restock {
				t.Errorf("reserved %g beyond the %g on hand", got, tt.restock)
			}
			if found := l.FindInconsistencies(w, lookupOf(orders...), now); len(found) != 0 {
				t.Errorf("inconsistencies after the run: %+v", found)
			}
		})
	}
}

func TestRunDifference(t *testing.T) {
	l, w, orders := runFixture(t)
	now := allocT0.Add(4 * time.Minute)
	run, _, _ := l.PlanRun(w, orders, RunRequest{DryRun: true, Strategy: StrategyRedistribute}, AllocationConfig{}, "tester", now)
	var high OrderChange
	for _, c := range run.Changes {
		if c.OrderID == "high" {
			high = c
		}
	}
	if high.Before.Status != AllocFailed || high.After.Status != AllocAllocated || high.Before.Shortfall != 8 || high.After.Reserved != 8 {
		t.Errorf("high: got %+v -> %+v", high.Before, high.After)
	}
	if len(high.Lines) != 1 || high.Lines[0].ReservedBefore != 0 || high.Lines[0].ReservedAfter != 8 || high.Lines[0].ShortfallAfter != 0 {
		t.Errorf("high's lines: got %+v", high.Lines)
	}
	if got, want := run.Before.Orders, map[AllocationStatus]int{AllocAllocated: 1, AllocFailed: 2}; !mapsEqual(got, want) {
		t.Errorf("before: got %v, want %v", got, want)
	}
	if got, want := run.After.Orders, map[AllocationStatus]int{AllocAllocated: 1, AllocPartial: 1, AllocFailed: 1}; !mapsEqual(got, want) {
		t.Errorf("after: got %v, want %v", got, want)
	}
	if run.ReservationsCreated != 2 || run.ReservationsReleased != 1 {
		t.Errorf("reservations: got %d created, %d released, want 2 and 1", run.ReservationsCreated, run.ReservationsReleased)
	}
}

func TestRunScope(t *testing.T) {
	l, w, orders := runFixture(t)
	now := allocT0.Add(4 * time.Minute)
	w.stock("Y", "B", 5)
	other := order("other", line("1", "Y", "B", 5))
	orders = append(orders, other)
	tests := []struct {
		scope RunScope
		want  int
	}{
		{RunScope{}, 4},
		{RunScope{SKUs: []string{"X"}}, 3},
		{RunScope{LocationIDs: []string{"B"}}, 1},
		{RunScope{OrderIDs: []string{"high", "other"}}, 2},
		{RunScope{OrderIDs: []string{"high", "other"}, SKUs: []string{"Y"}}, 1},
	}
	for _, tt := range tests {
		run, _, _ := l.PlanRun(w, orders, RunRequest{DryRun: true, Scope: tt.scope, Strategy: StrategyProtectExisting}, AllocationConfig{}, "", now)
		if run.OrdersConsidered != tt.want {
			t.Errorf("%+v: got %d orders, want %d", tt.scope, run.OrdersConsidered, tt.want)
		}
	}
	// out of scope stays: redistributing X at A for "high" alone cannot take low's stock
	run, recs, _ := l.PlanRun(w, orders, RunRequest{Scope: RunScope{OrderIDs: []string{"high"}}, Strategy: StrategyRedistribute}, AllocationConfig{}, "", now)
	applyLedger(t, l, recs)
	if run.OrdersChanged != 0 || l.Allocations["low"].Status != AllocAllocated {
		t.Errorf("scoped redistribution: got %d changes, low %s", run.OrdersChanged, l.Allocations["low"].Status)
	}
}

func TestRunInputValidate(t *testing.T) {
	s := func(v string) *string { return &v }
	f := false
	tests := []struct {
		in    RunInput
		field string
		dry   bool
	}{
		{RunInput{}, "strategy", false},
		{RunInput{Strategy: s("WIN")}, "strategy", false},
		{RunInput{Strategy: s("PROTECT_EXISTING"), Scope: &RunScope{SKUs: make([]string, MaxRunScopeIDs+1)}}, "scope.skuIds", false},
		{RunInput{Strategy: s("FILL_NEWEST")}, "", true},
		{RunInput{Strategy: s("REDISTRIBUTE_BY_PRIORITY"), DryRun: &f}, "", false},
	}
	for _, tt := range tests {
		req, err := tt.in.Validate()
		if tt.field == "" {
			if err != nil || req.DryRun != tt.dry {
				t.Errorf("%+v: got %v dry %v", tt.in, err, req.DryRun)
			}
			continue
		}
		e, ok := err.(*Error)
		if !ok || len(e.Details[tt.field]) == 0 {
			t.Errorf("%+v: got %v, want an error on %s", tt.in, err, tt.field)
		}
	}
}

func TestRunIgnoresStaleOrders(t *testing.T) {
	l, w, orders := runFixture(t)
	now := allocT0.Add(4 * time.Minute)
	o := orders[0] // low, allocated at version 1 below
	o.Version = 1
	allocOne(t, l, w, o, now)
	stale := slices.Clone(orders) // low at version 0: ignored, its stock stays
	_, recs, _ := l.PlanRun(w, stale, RunRequest{Strategy: StrategyRedistribute}, AllocationConfig{}, "", now)
	applyLedger(t, l, recs)
	if got := l.ReservedAt("X", "A", now); got > 10 {
		t.Errorf("reserved %g beyond the 10 on hand", got)
	}
	if got := l.Allocations["low"].Status; got != AllocAllocated {
		t.Errorf("low (stale in the run): got %s, want ALLOCATED", got)
	}
}
