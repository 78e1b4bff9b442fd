package supplyplan

import (
	"slices"
	"testing"
	"time"
)

// checkFixture: X and Y at A, a purchase order of X due on day 3, three allocated orders (o3 with
// a backorder on the purchase order).
func checkFixture(t *testing.T) (*AllocationState, *allocWorld, map[string]AllocOrder) {
	t.Helper()
	l := &AllocationState{}
	w := newAllocWorld().stock("X", "A", 10).stock("Y", "A", 10).receipt("X", "A", day(3), 10)
	orders := map[string]AllocOrder{
		"o1": order("o1", line("1", "X", "A", 4)),
		"o2": order("o2", line("1", "Y", "A", 3), line("2", "X", "A", 2)),
		"o3": withTerms(order("o3", line("1", "X", "A", 12)), OrderTerms{MaxLatenessDays: 5, Priority: 2}),
	}
	for _, id := range []string{"o1", "o2", "o3"} {
		allocOne(t, l, w, orders[id], allocT0)
	}
	if got, want := allocView(l.Allocations["o3"]), []string{"BACKORDERED ", "1: A:4 bo A:8@d3"}; !slices.Equal(got, want) {
		t.Fatalf("fixture o3: got %q, want %q", got, want)
	}
	return l, w, orders
}

func lookupMap(m map[string]AllocOrder) OrderLookup {
	return func(id string) (AllocOrder, bool) { o, ok := m[id]; return o, ok }
}

func TestInconsistencyFinderAndRepair(t *testing.T) {
	now := allocT0.Add(time.Minute)
	firstRes := func(l *AllocationState, orderID string) *Reservation { return l.activeOf(orderID, allocT0)[0] }
	tests := []struct {
		name  string
		plant func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder)
		codes []string
	}{
		{"reservation of a missing order", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			delete(orders, "o1")
		}, []string{IncOrderMissing, IncAllocationOrphan}},
		{"reservation of a cancelled order", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			o := orders["o2"]
			o.Status = OrderCancelled
			orders["o2"] = o
		}, []string{IncOrderClosed, IncOrderClosed}},
		{"stock re-imported below what is reserved", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			w.stock("X", "A", 7)
		}, []string{IncBeyondOnHand}},
		{"reserved outside the ledger grew", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			s := w.supply[stockKey{"Y", "A"}]
			s.ReservedOutside = 9
			w.supply[stockKey{"Y", "A"}] = s
		}, []string{IncBeyondOnHand}},
		{"allocation lists a reservation the ledger does not hold", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			a := l.Allocations["o1"].clone()
			a.Lines[0].Allocations = append(a.Lines[0].Allocations, LineAllocation{LocationID: "A", Quantity: 1, ReservationID: "res_ghost"})
			applyLedger(t, l, []Record{Put(KindAllocation, "o1", a)})
		}, []string{IncAllocationMismatch}},
		{"ledger quantity disagrees with the allocation", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			r := *firstRes(l, "o1")
			r.Quantity = 5
			applyLedger(t, l, []Record{Put(KindReservation, r.ID, &r)})
		}, []string{IncLineOverReserved, IncBeyondOnHand, IncAllocationMismatch}},
		{"negative reservation", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			r := *firstRes(l, "o1")
			r.Quantity = -2
			applyLedger(t, l, []Record{Put(KindReservation, r.ID, &r)})
		}, []string{IncNegativeQuantity, IncAllocationMismatch}},
		{"expired hold not swept", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			r := *firstRes(l, "o1")
			past := allocT0.Add(-time.Second)
			r.ExpiresAt = &past
			applyLedger(t, l, []Record{Put(KindReservation, r.ID, &r)})
		}, []string{IncHoldExpired}},
		{"line reduced without re-allocation", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			o := orders["o1"]
			o.Lines = []AllocLine{line("1", "X", "A", 1)}
			orders["o1"] = o
		}, []string{IncLineOverReserved}},
		{"line changed sku without re-allocation", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			o := orders["o1"]
			o.Lines = []AllocLine{line("1", "Y", "A", 4)}
			orders["o1"] = o
		}, []string{IncLineMismatch}},
		{"purchase order cancelled under a backorder", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			s := w.supply[stockKey{"X", "A"}]
			s.Receipts = nil
			w.supply[stockKey{"X", "A"}] = s
		}, []string{IncBackorderUnsupported}},
		{"reservation without an allocation", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			applyLedger(t, l, []Record{Del(KindAllocation, "o1")})
		}, []string{IncAllocationMismatch}},
		{"reservations of an older version", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			a := l.Allocations["o1"].clone()
			a.OrderVersion = 3
			o := orders["o1"]
			o.Version = 3
			orders["o1"] = o
			applyLedger(t, l, []Record{Put(KindAllocation, "o1", a)})
		}, []string{IncAllocationMismatch}},
		{"index drift", func(t *testing.T, l *AllocationState, w *allocWorld, orders map[string]AllocOrder) {
			l.index().byKey[stockKey{"Y", "A"}].reserved += 2
		}, []string{IncIndexDrift}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, w, orders := checkFixture(t)
			if found := l.FindInconsistencies(w, lookupMap(orders), now); len(found) != 0 {
				t.Fatalf("fixture: %+v", found)
			}
			tt.plant(t, l, w, orders)
			found := l.FindInconsistencies(w, lookupMap(orders), now)
			var codes []string
			for _, f := range found {
				codes = append(codes, f.Code)
			}
			if !slices.Equal(codes, tt.codes) {
				t.Fatalf("found %q, want %q: %+v", codes, tt.codes, found)
			}
			audits, recs := l.Repair(w, lookupMap(orders), "tester", now)
			if len(audits) == 0 {
				t.Fatal("repair: no audit entry")
			}
			for _, a := range audits {
				if a.By != "tester" || a.Code == "" || a.Action == "" || a.Message == "" {
					t.Errorf("audit entry incomplete: %+v", a)
				}
			}
			applyLedger(t, l, recs)
			if got := len(l.AllocationAudits); got != len(audits) {
				t.Errorf("audit entries stored: got %d, want %d", got, len(audits))
			}
			if left := l.FindInconsistencies(w, lookupMap(orders), now); len(left) != 0 {
				t.Errorf("after the repair: %+v", left)
			}
			for _, k := range l.ReservedKeys() {
				sup := w.Supply(k[0], k[1])
				if got := l.ReservedAt(k[0], k[1], now); got+sup.ReservedOutside > sup.OnHand+quantityEps {
					t.Errorf("%v: %g reserved beyond %g on hand", k, got, sup.OnHand)
				}
			}
		})
	}
}

func TestRepairReleasesLowestPriorityHeldFirst(t *testing.T) {
	l, w, orders := checkFixture(t)
	now := allocT0.Add(time.Minute)
	applyLedger(t, l, l.CommitOrder("o2", now))
	w.stock("X", "A", 5) // reserved: o1 4, o2 2 (committed), o3 4 (priority 2)
	audits, recs := l.Repair(w, lookupMap(orders), "tester", now)
	applyLedger(t, l, recs)
	var released []string
	for _, a := range audits {
		if a.Action == ActionReleased {
			released = append(released, a.OrderID)
		}
	}
	if want := []string{"o3", "o1"}; !slices.Equal(released, want) {
		t.Errorf("released: got %q, want %q (HELD before COMMITTED, lowest priority first)", released, want)
	}
	if got := l.Allocations["o2"].Status; got != AllocAllocated {
		t.Errorf("o2 (committed): got %s", got)
	}
	if got, want := allocView(l.Allocations["o3"]), []string{"PARTIAL ", "1: bo A:8@d3 short 4"}; !slices.Equal(got, want) {
		t.Errorf("o3 rewritten: got %q, want %q", got, want)
	}
}

func TestAuditsAreCapped(t *testing.T) {
	l := &AllocationState{}
	var recs []Record
	for i := range MaxAllocationAudits + 5 {
		a := AllocationAudit{ID: NewID("aau"), Code: IncHoldExpired, Action: ActionExpired, Message: "x"}
		_ = i
		recs = append(recs, Put(KindAllocationAudit, a.ID, &a))
	}
	applyLedger(t, l, recs)
	applyLedger(t, l, l.Sweep(allocT0, AllocationConfig{}))
	if got := len(l.AllocationAudits); got != MaxAllocationAudits {
		t.Errorf("audits after the sweep: got %d, want %d", got, MaxAllocationAudits)
	}
}
