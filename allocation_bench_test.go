package supplyplan

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchWorld is 10,000 skus x 50 locations with stock, a receipt at one location in ten, and
// every location a source of every sku.
type benchWorld struct {
	supply  map[stockKey]Supply
	sources []SourceCandidate
}

func (w *benchWorld) KnownSKU(string) bool                     { return true }
func (w *benchWorld) LocationActive(string) bool               { return true }
func (w *benchWorld) Supply(sku, loc string) Supply            { return w.supply[stockKey{sku, loc}] }
func (w *benchWorld) Sources(string, string) []SourceCandidate { return w.sources }

const (
	benchSKUs      = 10_000
	benchLocations = 50
	benchLines     = 100_000
)

func newBenchWorld(rng *rand.Rand) (*benchWorld, []string, []string) {
	skus := make([]string, benchSKUs)
	for i := range skus {
		skus[i] = fmt.Sprintf("SKU-%05d", i)
	}
	locs := make([]string, benchLocations)
	w := &benchWorld{supply: make(map[stockKey]Supply, benchSKUs*benchLocations)}
	for i := range locs {
		locs[i] = fmt.Sprintf("L%02d", i)
		w.sources = append(w.sources, SourceCandidate{LocationID: locs[i], LeadTimeDays: float64(rng.IntN(5)), UnitCost: float64(rng.IntN(10))})
	}
	for _, sku := range skus {
		for _, loc := range locs {
			s := Supply{OnHand: float64(rng.IntN(40))}
			if rng.IntN(10) == 0 {
				s.Receipts = []Receipt{{At: allocT0.Add(time.Duration(1+rng.IntN(10)) * 24 * time.Hour), Quantity: float64(10 + rng.IntN(50))}}
			}
			w.supply[stockKey{sku, loc}] = s
		}
	}
	return w, skus, locs
}

// benchOrders returns orders of 1 to 4 lines, 100,000 lines in all: most PARTIAL at one location,
// some FILL_OR_KILL or SHIP_COMPLETE, one in ten splitting over up to 3 locations, a third with
// a few days of lateness allowed.
func benchOrders(rng *rand.Rand, skus, locs []string) []AllocOrder {
	var orders []AllocOrder
	n := 0
	for n < benchLines {
		o := AllocOrder{ID: fmt.Sprintf("ord-%06d", len(orders)), Status: OrderOpen, CreatedAt: allocT0.Add(time.Duration(len(orders)) * time.Second)}
		o.Priority = rng.IntN(3)
		switch r := rng.IntN(20); {
		case r < 3:
			o.Fill = FillOrKill
		case r < 6:
			o.Fill = FillComplete
		}
		if rng.IntN(10) == 0 {
			o.MaxLocations = 3
		}
		if rng.IntN(3) == 0 {
			o.MaxLatenessDays = 7
		}
		for i := range min(1+rng.IntN(4), benchLines-n) {
			o.Lines = append(o.Lines, AllocLine{LineID: fmt.Sprint(i + 1), SKU: skus[rng.IntN(len(skus))], LocationID: locs[rng.IntN(len(locs))],
				Quantity: float64(1 + rng.IntN(8))})
			n++
		}
		orders = append(orders, o)
	}
	return orders
}

// BenchmarkAllocation allocates 100,000 order lines over 10,000 skus x 50 locations (planning the
// reservations and backorders, then applying the records to a fresh ledger), next to the bare
// ledger update: applying the same number of reservation records.
func BenchmarkAllocation(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	w, skus, locs := newBenchWorld(rng)
	orders := benchOrders(rng, skus, locs)

	b.Run("allocate", func(b *testing.B) {
		b.ReportAllocs()
		var reservations int
		cpu0 := processCPU()
		for b.Loop() {
			l := &AllocationState{}
			outs := NewAllocator(l, w, AllocationConfig{OrgID: "bench"}, allocT0).AllocateBatch(orders)
			reservations = 0
			for _, out := range outs {
				for _, r := range out.Records {
					if err := l.Apply(r); err != nil {
						b.Fatal(err)
					}
					if r.Kind == KindReservation {
						reservations++
					}
				}
			}
		}
		reportLines(b, cpu0)
		b.ReportMetric(float64(reservations), "reservations")
	})

	b.Run("ledger-apply", func(b *testing.B) {
		recs := make([]Record, benchLines)
		for i := range recs {
			o := orders[i%len(orders)]
			ln := o.Lines[0]
			exp := allocT0.Add(DefaultHoldTTL)
			r := &Reservation{ID: fmt.Sprintf("res_%07d", i), OrderID: o.ID, LineID: ln.LineID, SKU: ln.SKU, LocationID: ln.LocationID,
				Quantity: ln.Quantity, Status: ResHeld, ExpiresAt: &exp, CreatedAt: allocT0, UpdatedAt: allocT0}
			recs[i] = Put(KindReservation, r.ID, r)
		}
		b.ReportAllocs()
		cpu0 := processCPU()
		for b.Loop() {
			l := &AllocationState{}
			for _, r := range recs {
				if err := l.Apply(r); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportLines(b, cpu0)
	})
}

// reportLines reports lines per second of wall time and per second of the process's CPU time
// (every thread, the garbage collector's included): on a shared machine the second is the steadier.
func reportLines(b *testing.B, cpu0 time.Duration) {
	lines := float64(benchLines) * float64(b.N)
	b.ReportMetric(lines/b.Elapsed().Seconds(), "lines/s")
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(lines/cpu.Seconds(), "lines/cpu-s")
	}
}
