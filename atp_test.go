package supplyplan

import (
	"math"
	"testing"
	"time"
)

// allocT0 is the clock of the allocation tests.
var allocT0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

func day(n float64) time.Time { return allocT0.Add(time.Duration(n * 24 * float64(time.Hour))) }

func TestComputeATP(t *testing.T) {
	po := func(d, q float64) Receipt { return Receipt{At: day(d), Quantity: q, Ref: "po"} }
	tests := []struct {
		name       string
		sup        Supply
		reserved   float64
		backorders []Promise
		date       time.Time
		want       ATPFigure
	}{
		{"on hand only", Supply{OnHand: 10}, 0, nil, day(0),
			ATPFigure{OnHand: 10, Available: 10}},
		{"reserved outside and in the ledger, safety stock", Supply{OnHand: 100, ReservedOutside: 10, SafetyStock: 5}, 20, nil, day(0),
			ATPFigure{OnHand: 100, Reserved: 30, SafetyStock: 5, Available: 65}},
		{"receipt after the date does not count", Supply{OnHand: 10, Receipts: []Receipt{po(5, 30)}}, 0, nil, day(4),
			ATPFigure{OnHand: 10, Available: 10}},
		{"receipt on the date counts", Supply{OnHand: 10, Receipts: []Receipt{po(5, 30)}}, 0, nil, day(5),
			ATPFigure{OnHand: 10, Incoming: 30, Available: 40}},
		{"overdue receipt counts", Supply{OnHand: 10, Receipts: []Receipt{po(-2, 5)}}, 0, nil, day(0),
			ATPFigure{OnHand: 10, Incoming: 5, Available: 15}},
		{"a later backorder is not offered again earlier", Supply{Receipts: []Receipt{po(5, 10)}}, 0, []Promise{{At: day(10), Quantity: 10}}, day(6),
			ATPFigure{Incoming: 10, Available: 0}},
		{"backorder covered by its receipt", Supply{OnHand: 5, Receipts: []Receipt{po(5, 10)}}, 0, []Promise{{At: day(5), Quantity: 10}}, day(5),
			ATPFigure{OnHand: 5, Incoming: 10, Backordered: 10, Available: 5}},
		{"stock kept for a backorder whose receipt is short", Supply{OnHand: 8, Receipts: []Receipt{po(3, 4)}}, 0, []Promise{{At: day(4), Quantity: 10}}, day(0),
			ATPFigure{OnHand: 8, Available: 2}},
		{"over-reserved reads negative", Supply{OnHand: 5}, 8, nil, day(0),
			ATPFigure{OnHand: 5, Reserved: 8, Available: -3}},
		{"cancelled or received orders are absent: zero quantities ignored", Supply{OnHand: 1, Receipts: []Receipt{po(1, 0)}}, 0, nil, day(2),
			ATPFigure{OnHand: 1, Available: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ComputeATP(tt.sup, tt.reserved, tt.backorders, tt.date)
			tt.want.Date = tt.date
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReservableIsStockOnHandOnly(t *testing.T) {
	tests := []struct {
		name     string
		stock    float64
		receipts []Receipt
		promises []tlEvent
		want     float64
	}{
		{"stock", 10, nil, nil, 10},
		{"a receipt is not reservable now", 10, []Receipt{{At: day(3), Quantity: 10}}, nil, 10},
		{"an overdue receipt is not on hand either", 10, []Receipt{{At: day(-3), Quantity: 10}}, nil, 10},
		{"a backorder its receipt does not cover keeps stock", 10, []Receipt{{At: day(3), Quantity: 4}},
			[]tlEvent{{at: day(4).UnixMilli(), qty: -6, owner: "o\x00l"}}, 8},
		{"nothing when negative", -2, nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTimeline(tt.receipts, tt.promises)
			if got := tl.reservable(tt.stock); got != tt.want {
				t.Errorf("got %g, want %g", got, tt.want)
			}
		})
	}
}

func TestEarliestPromise(t *testing.T) {
	tl := newTimeline([]Receipt{{At: day(2), Quantity: 5}, {At: day(6), Quantity: 5}}, []tlEvent{{at: day(8).UnixMilli(), qty: -3, owner: "x\x001"}})
	tests := []struct {
		need     float64
		deadline time.Time
		want     time.Time
		ok       bool
	}{
		{1, day(30), day(2), true},
		{5, day(30), day(2), true},
		{7, day(30), day(6), true}, // 10 by day 6, 3 of it promised on day 8
		{8, day(30), time.Time{}, false},
		{6, day(5), time.Time{}, false}, // day 6 is past the deadline
	}
	for _, tt := range tests {
		at, ok := tl.earliest(0, tt.need, allocT0.UnixMilli(), tt.deadline.UnixMilli())
		if ok != tt.ok || (ok && at != tt.want.UnixMilli()) {
			t.Errorf("earliest(%g by %s): got %v %v, want %v %v", tt.need, tt.deadline, time.UnixMilli(at).UTC(), ok, tt.want, tt.ok)
		}
	}
}

func TestSafetyStockPolicy(t *testing.T) {
	explicit := 7.0
	neg := -3.0
	tests := []struct {
		name     string
		p        SafetyStockPolicy
		explicit *float64
		rop      float64
		want     float64
	}{
		{"default protects nothing", SafetyStockPolicy{}, nil, 50, 0},
		{"whole reorder point", SafetyStockPolicy{ReorderPointShare: 1}, nil, 50, 50},
		{"share of the reorder point", SafetyStockPolicy{ReorderPointShare: 0.4}, nil, 50, 20},
		{"explicit safety stock wins", SafetyStockPolicy{ReorderPointShare: 1}, &explicit, 50, 7},
		{"never negative", SafetyStockPolicy{}, &neg, 50, 0},
	}
	for _, tt := range tests {
		if got := tt.p.Protected(tt.explicit, tt.rop); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: got %g, want %g", tt.name, got, tt.want)
		}
	}
	for _, bad := range []float64{-0.1, 1.1, math.NaN()} {
		if err := (SafetyStockPolicy{ReorderPointShare: bad}).Validate(); ErrorCode(err) != EVALIDATION {
			t.Errorf("share %g: got %v, want a validation error", bad, err)
		}
	}
}

// Reads of a tenant run in parallel under the actor's read lock; each may build the derived
// receipt index and store it. With -race this fails if the cache is a plain field.
func TestReceiptIndexParallelReads(t *testing.T) {
	s := NewTenantState("org")
	done := make(chan *receiptIndex, 8)
	for range 8 {
		go func() { done <- s.receiptsIndex() }()
	}
	for range 8 {
		if x := <-done; x == nil {
			t.Fatal("no index")
		}
	}
	s.SetAllocationSettings(AllocationSettings{TransferLeadTimeDays: 3})
	if s.receipts.p.Load() != nil {
		t.Fatal("a settings change keeps the old index")
	}
	if x := s.receiptsIndex(); x.leadDays != 3 {
		t.Fatalf("lead days %v", x.leadDays)
	}
}
