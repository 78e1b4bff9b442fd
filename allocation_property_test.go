package supplyplan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestAllocationNeverOverReserves runs random sequences of allocations (single orders and batches,
// new versions, older versions, the same sku twice), cancels, shipments, clock advances with the
// expiry sweep, commits, restocks and re-allocation runs. After every step the ledger must reserve
// no more than on hand allows at any location (on hand minus what is reserved outside the ledger
// and the protected safety stock), the inconsistency finder must find nothing (totals, allocations,
// backorders within receipts), allocated versions never go back and no (order, version) gets two
// events.
func TestAllocationNeverOverReserves(t *testing.T) {
	seeds, steps := 40, 150
	if testing.Short() {
		seeds = 8
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { runAllocationSequence(t, uint64(seed), steps) })
	}
}

func runAllocationSequence(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	skus := []string{"X", "Y"}
	locs := []string{"A", "B", "C"}
	w := newAllocWorld()
	for _, sku := range skus {
		for i, loc := range locs {
			s := Supply{OnHand: float64(rng.IntN(15))}
			if rng.IntN(3) == 0 {
				s.ReservedOutside = float64(rng.IntN(4))
			}
			if rng.IntN(3) == 0 {
				s.SafetyStock = float64(rng.IntN(3))
			}
			for range rng.IntN(3) {
				s.Receipts = append(s.Receipts, Receipt{At: allocT0.Add(time.Duration(rng.IntN(8*24)) * time.Hour), Quantity: float64(1 + rng.IntN(10))})
			}
			w.supply[stockKey{sku, loc}] = s
			w.sources[sku] = append(w.sources[sku], SourceCandidate{LocationID: loc, LeadTimeDays: float64(i), UnitCost: float64(rng.IntN(3))})
		}
	}
	l := &AllocationState{}
	cfg := AllocationConfig{OrgID: "org", HoldTTL: 20 * time.Minute}
	now := allocT0
	orders := map[string]AllocOrder{}
	notified := map[string]bool{}
	allocated := map[string]int64{}

	randomOrder := func(id string) AllocOrder {
		cur, exists := orders[id]
		o := AllocOrder{ID: id, Status: OrderOpen, CreatedAt: now}
		if exists {
			o.CreatedAt = cur.CreatedAt
			switch rng.IntN(6) {
			case 0: // same version
				o.Version = cur.Version
			case 1: // older
				o.Version = cur.Version - 1
			default:
				o.Version = cur.Version + 1
			}
		}
		o.Fill = []FillPolicy{"", FillPartial, FillOrKill, FillComplete}[rng.IntN(4)]
		o.Priority = rng.IntN(4)
		o.MinQuantity = float64(rng.IntN(3) * 2)
		o.MaxLocations = rng.IntN(4)
		o.MaxLatenessDays = rng.IntN(6)
		if rng.IntN(3) == 0 {
			d := now.Add(time.Duration(rng.IntN(72)) * time.Hour)
			o.RequestedDate = &d
		}
		for i := range 1 + rng.IntN(3) {
			loc := locs[rng.IntN(len(locs))]
			if rng.IntN(5) == 0 {
				loc = ""
			}
			q := float64(1+rng.IntN(12)) / []float64{1, 2, 4}[rng.IntN(3)]
			o.Lines = append(o.Lines, AllocLine{LineID: fmt.Sprint(i + 1), SKU: skus[rng.IntN(len(skus))], LocationID: loc, Quantity: q})
		}
		return o
	}
	record := func(o AllocOrder) {
		if cur, ok := orders[o.ID]; !ok || o.Version >= cur.Version {
			orders[o.ID] = o
		}
	}
	take := func(step int, what string, outs []AllocationOutcome) {
		t.Helper()
		applyLedger(t, l, OutcomeRecords(outs))
		for _, out := range outs {
			w.consume(out.Consumed)
			if out.Event != nil {
				var v int64
				switch d := out.Event.Data.(type) {
				case AllocationSucceeded:
					v = d.OrderVersion
				case AllocationFailed:
					v = d.OrderVersion
				}
				k := fmt.Sprintf("%s@%d", out.OrderID, v)
				if notified[k] {
					t.Fatalf("step %d (%s): a second event for %s", step, what, k)
				}
				notified[k] = true
			}
		}
	}
	openIDs := func() []string {
		var ids []string
		for id, o := range orders {
			if o.Status == OrderOpen {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	all := func() []AllocOrder {
		var out []AllocOrder
		for _, id := range slices.Sorted(mapKeys(orders)) {
			out = append(out, orders[id])
		}
		return out
	}

	for step := range steps {
		var what string
		switch op := rng.IntN(20); {
		case op < 7:
			o := randomOrder(fmt.Sprintf("o%d", rng.IntN(10)))
			what = "allocate " + o.ID
			take(step, what, []AllocationOutcome{NewAllocator(l, w, cfg, now).Allocate(o)})
			record(o)
		case op < 10:
			var batch []AllocOrder
			for range 2 + rng.IntN(4) {
				batch = append(batch, randomOrder(fmt.Sprintf("o%d", rng.IntN(10))))
			}
			what = "batch"
			take(step, what, NewAllocator(l, w, cfg, now).AllocateBatch(batch))
			for _, o := range batch {
				record(o)
			}
		case op < 12:
			ids := openIDs()
			if len(ids) == 0 {
				continue
			}
			o := orders[ids[rng.IntN(len(ids))]]
			o.Version++
			o.Status = []string{OrderCancelled, OrderShipped}[rng.IntN(2)]
			what = o.Status + " " + o.ID
			take(step, what, []AllocationOutcome{NewAllocator(l, w, cfg, now).Allocate(o)})
			record(o)
		case op < 14:
			now = now.Add(time.Duration(rng.IntN(40)) * time.Minute)
			what = "sweep"
			applyLedger(t, l, l.Sweep(now, cfg))
		case op < 15:
			ids := openIDs()
			if len(ids) == 0 {
				continue
			}
			what = "commit"
			applyLedger(t, l, l.CommitOrder(ids[rng.IntN(len(ids))], now))
		case op < 17:
			k := stockKey{skus[rng.IntN(len(skus))], locs[rng.IntN(len(locs))]}
			s := w.supply[k]
			s.OnHand += float64(rng.IntN(8))
			w.supply[k] = s
			what = "restock"
		default:
			req := RunRequest{Strategy: RunStrategies[rng.IntN(len(RunStrategies))]}
			if rng.IntN(2) == 0 {
				req.Scope.SKUs = []string{skus[rng.IntN(len(skus))]}
			}
			what = "run " + string(req.Strategy)
			list := all()
			if len(list) > 0 && rng.IntN(4) == 0 { // a stale copy of an order: ignored
				list[rng.IntN(len(list))].Version--
			}
			_, recs, events := l.PlanRun(w, list, req, cfg, "prop", now)
			applyLedger(t, l, recs)
			for _, e := range events {
				var v int64
				var id string
				switch d := e.Data.(type) {
				case AllocationSucceeded:
					id, v = d.OrderID, d.OrderVersion
				case AllocationFailed:
					id, v = d.OrderID, d.OrderVersion
				}
				k := fmt.Sprintf("%s@%d", id, v)
				if notified[k] {
					t.Fatalf("step %d (%s): a second event for %s", step, what, k)
				}
				notified[k] = true
			}
		}

		for _, sku := range skus {
			for _, loc := range locs {
				sup := w.Supply(sku, loc)
				reserved := l.ReservedAt(sku, loc, now)
				if limit := max(0, sup.OnHand-sup.ReservedOutside-sup.SafetyStock); reserved > limit+1e-6 {
					t.Fatalf("step %d (%s): %s/%s reserves %g, more than the %g on hand allows (%+v)", step, what, sku, loc, reserved, limit, sup)
				}
			}
		}
		if found := l.FindInconsistencies(w, lookupMap(orders), now); len(found) != 0 {
			t.Fatalf("step %d (%s): %+v", step, what, found)
		}
		for id, a := range l.Allocations {
			if a.OrderVersion < allocated[id] {
				t.Fatalf("step %d (%s): %s went back from version %d to %d", step, what, id, allocated[id], a.OrderVersion)
			}
			allocated[id] = a.OrderVersion
		}
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
