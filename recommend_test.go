package supplyplan

import (
	"math"
	"strings"
	"testing"
	"time"
)

func flat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func loc(id string, onHand, reserved, rop, weekly float64) LocationStock {
	return LocationStock{LocationID: id, OnHand: onHand, Reserved: reserved, ReorderPoint: rop,
		InboundByWeek: make([]float64, 8), Forecast: flat(weekly, 8)}
}

func TestProposeTransfersTable(t *testing.T) {
	margin := 5.0
	tests := []struct {
		name     string
		locs     []LocationStock
		opt      RecommendOptions
		want     int     // proposals
		qty      float64 // of the first
		priority Priority
	}{
		{"shortage vs surplus", []LocationStock{loc("store", 5, 0, 20, 10), loc("dc", 200, 0, 20, 5)},
			RecommendOptions{UnitMargin: &margin}, 1, 95, PriorityUrgent},
		{"reserved stock is not available", []LocationStock{loc("store", 25, 20, 20, 10), loc("dc", 200, 0, 20, 5)},
			RecommendOptions{UnitMargin: &margin}, 1, 95, PriorityUrgent},
		{"source protected: no surplus beyond its reorder point plus its forecast", []LocationStock{loc("store", 5, 0, 20, 10), loc("dc", 60, 0, 20, 5)},
			RecommendOptions{}, 0, 0, ""},
		{"source gives only its surplus", []LocationStock{loc("store", 5, 0, 20, 10), loc("dc", 90, 0, 20, 5)},
			RecommendOptions{}, 1, 30, PriorityUrgent},
		{"nobody short", []LocationStock{loc("a", 100, 0, 20, 5), loc("b", 200, 0, 20, 5)}, RecommendOptions{}, 0, 0, ""},
		{"min stock difference blocks similar coverage", []LocationStock{loc("a", 55, 0, 20, 5), loc("b", 66, 0, 10, 5)},
			RecommendOptions{MinStockDifferencePct: 0.5}, 0, 0, ""},
		{"min stock difference zero allows it", []LocationStock{loc("a", 55, 0, 20, 5), loc("b", 66, 0, 10, 5)},
			RecommendOptions{MinStockDifferencePct: 0}, 1, 5, PriorityLow},
		{"positive ROI required and margin unknown", []LocationStock{loc("store", 5, 0, 20, 10), loc("dc", 200, 0, 20, 5)},
			RecommendOptions{RequirePositiveROI: true}, 0, 0, ""},
		{"later stockout is HIGH", []LocationStock{loc("store", 15, 0, 0, 10), loc("dc", 200, 0, 20, 5)},
			RecommendOptions{}, 1, 65, PriorityHigh},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			props := ProposeTransfers(ProductStock{ProductID: "p", Locations: tc.locs}, tc.opt)
			if len(props) != tc.want {
				t.Fatalf("got %d proposals %+v, want %d", len(props), props, tc.want)
			}
			if tc.want == 0 {
				return
			}
			p := props[0]
			if p.Quantity != tc.qty || p.Priority != tc.priority {
				t.Fatalf("quantity %v priority %s, want %v %s (%s)", p.Quantity, p.Priority, tc.qty, tc.priority, p.Reason)
			}
			if p.Quantity != math.Trunc(p.Quantity) || p.Quantity > p.Explanation.Surplus+1e-9 {
				t.Fatalf("quantity %v not whole or above surplus %v", p.Quantity, p.Explanation.Surplus)
			}
		})
	}
}

func TestInboundPurchaseOrderAlreadyFixesIt(t *testing.T) {
	store := loc("store", 5, 0, 20, 10)
	store.InboundByWeek[0] = 100
	props := ProposeTransfers(ProductStock{ProductID: "p", Locations: []LocationStock{store, loc("dc", 200, 0, 20, 5)}}, RecommendOptions{})
	if len(props) != 0 {
		t.Fatalf("inbound covers the store, got %+v", props)
	}
	store.InboundByWeek[0] = 50 // covers part: the transfer fills the rest
	props = ProposeTransfers(ProductStock{ProductID: "p", Locations: []LocationStock{store, loc("dc", 200, 0, 20, 5)}}, RecommendOptions{})
	if len(props) != 1 || props[0].Quantity != 45 {
		t.Fatalf("partial inbound: %+v", props)
	}
}

func TestROISignAndExplanation(t *testing.T) {
	locs := []LocationStock{loc("store", 5, 0, 20, 10), loc("dc", 200, 0, 20, 5)}
	good, tiny := 5.0, 0.01
	p := ProposeTransfers(ProductStock{ProductID: "p", Locations: locs}, RecommendOptions{UnitMargin: &good, TransferCostPerUnit: 0.5})[0]
	e := p.Explanation
	// Without the transfer the store sells 5 then loses 75 of its 80 forecast units; the transfer
	// arrives on day 3, by which 3*10/7 = 4.3 units were sold from stock, so it serves the rest.
	if e.LostSalesAvoided < 70 || e.LostSalesAvoided > 76 {
		t.Fatalf("lost sales avoided %v", e.LostSalesAvoided)
	}
	wantROI := (e.LostSalesAvoided*5 - 95*0.5) / (95 * 0.5)
	if p.ROI == nil || math.Abs(*p.ROI-wantROI) > 0.1 || *p.ROI <= 0 {
		t.Fatalf("ROI %v, want about %v", p.ROI, wantROI)
	}
	if e.Destination.DaysToStockoutBefore == nil || *e.Destination.DaysToStockoutBefore != 3.5 || e.Destination.DaysToStockoutAfter != nil {
		t.Fatalf("destination days to stockout before %v after %v", e.Destination.DaysToStockoutBefore, e.Destination.DaysToStockoutAfter)
	}
	if e.Source.WeeksOfCoverBefore == nil || *e.Source.WeeksOfCoverBefore != 40 || *e.Source.WeeksOfCoverAfter != 21 {
		t.Fatalf("source cover %v -> %v", e.Source.WeeksOfCoverBefore, e.Source.WeeksOfCoverAfter)
	}
	for _, want := range []string{"store runs out", "3.5 days", "dc has 200 available", "Moving 95 units", "ROI"} {
		if !strings.Contains(p.Reason, want) {
			t.Errorf("reason %q lacks %q", p.Reason, want)
		}
	}
	neg := ProposeTransfers(ProductStock{ProductID: "p", Locations: locs}, RecommendOptions{UnitMargin: &tiny, TransferCostPerUnit: 0.5})
	if len(neg) != 1 || neg[0].ROI == nil || *neg[0].ROI >= 0 {
		t.Fatalf("tiny margin ROI = %+v", neg)
	}
	if got := ProposeTransfers(ProductStock{ProductID: "p", Locations: locs}, RecommendOptions{UnitMargin: &tiny, TransferCostPerUnit: 0.5, RequirePositiveROI: true}); len(got) != 0 {
		t.Fatalf("requirePositiveROI kept %+v", got)
	}
	// The product's price minus cost is the margin when the request gives none.
	m := 4.0
	p2 := ProposeTransfers(ProductStock{ProductID: "p", PriceMargin: &m, Locations: locs}, RecommendOptions{TransferCostPerUnit: 0.5})[0]
	if p2.Explanation.UnitMarginSource != "product price - cost" || *p2.Explanation.UnitMargin != 4 {
		t.Fatalf("margin source %+v", p2.Explanation)
	}
}

func TestMostUrgentDestinationServedFirst(t *testing.T) {
	locs := []LocationStock{loc("late", 30, 0, 10, 10), loc("soon", 2, 0, 10, 10), loc("dc", 150, 0, 10, 5)}
	props := ProposeTransfers(ProductStock{ProductID: "p", Locations: locs}, RecommendOptions{})
	if len(props) != 2 || props[0].Dest != "soon" || props[1].Dest != "late" {
		t.Fatalf("order: %+v", props)
	}
	// dc surplus is 150 - 40 - 10 = 100: soon needs 88, late gets the remaining 12 of its 60.
	if props[0].Quantity != 88 || props[1].Quantity != 12 {
		t.Fatalf("quantities %v %v", props[0].Quantity, props[1].Quantity)
	}
}

func TestPriorityFor(t *testing.T) {
	d := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		days *float64
		want Priority
	}{{d(0), PriorityUrgent}, {d(7), PriorityUrgent}, {d(7.1), PriorityHigh}, {d(14), PriorityHigh}, {d(20), PriorityMedium}, {d(28), PriorityMedium}, {d(29), PriorityLow}, {nil, PriorityLow}} {
		if got := PriorityFor(tc.days); got != tc.want {
			t.Errorf("PriorityFor(%v) = %s, want %s", tc.days, got, tc.want)
		}
	}
}

func TestRecommendationStateMachine(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	r := Recommendation{ID: "r", Status: RecPending, ExpiresAt: now.Add(72 * time.Hour)}
	a, err := r.Approve("k", "ok", now)
	if err != nil || a.Status != RecApproved || a.ApprovedBy != "k" || a.ApprovedAt == nil {
		t.Fatalf("approve: %+v %v", a, err)
	}
	if _, err := a.Approve("k", "", now); ErrorCode(err) != ECONFLICT {
		t.Fatalf("approve twice: %v", err)
	}
	rj, err := a.Reject("k", "changed my mind", now)
	if err != nil || rj.Status != RecRejected || rj.Comment != "changed my mind" {
		t.Fatalf("reject approved: %+v %v", rj, err)
	}
	if _, err := rj.Approve("k", "", now); ErrorCode(err) != ECONFLICT {
		t.Fatal("approve rejected")
	}
	if _, err := rj.Reject("k", "", now); ErrorCode(err) != ECONFLICT {
		t.Fatal("reject rejected")
	}
	late := now.Add(73 * time.Hour)
	if r.EffectiveStatus(late) != RecExpired {
		t.Fatal("pending past expiry is not EXPIRED")
	}
	if _, err := r.Approve("k", "", late); ErrorCode(err) != ECONFLICT {
		t.Fatal("approve expired")
	}
	if x, ok := r.Expire(ExpiryJustification, now); !ok || x.Status != RecExpired || x.ExpiryReason != ExpiryJustification {
		t.Fatalf("expire: %+v", x)
	}
	if _, ok := a.Expire(ExpiryTime, late); ok {
		t.Fatal("an APPROVED recommendation expired")
	}
}

func TestApplyProposalsIdempotentAndRejectionMemory(t *testing.T) {
	st := NewTenantState("o")
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	apply := func(recs []Record) {
		for _, r := range recs {
			if err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	prop := Proposal{ProductID: "p", Source: "dc", Dest: "store", Quantity: 40, Priority: PriorityMedium}
	eval := map[string]bool{"p": true}
	res, recs := st.ApplyProposals([]Proposal{prop}, eval, "", 72*time.Hour, now)
	apply(recs)
	if len(res.Created) != 1 {
		t.Fatalf("first run created %d", len(res.Created))
	}
	res, recs = st.ApplyProposals([]Proposal{prop}, eval, "", 72*time.Hour, now.Add(time.Hour))
	apply(recs)
	if len(res.Created) != 0 || res.SkippedPending != 1 {
		t.Fatalf("second run: %+v", res)
	}
	id := res.SkippedPending
	_ = id
	var recID string
	for k := range st.Recommendations {
		recID = k
	}
	rj, recs, err := st.ChangeRecommendation(recID, func(r Recommendation) (Recommendation, error) { return r.Reject("k", "", now) })
	if err != nil || rj.Status != RecRejected {
		t.Fatal(err)
	}
	apply(recs)
	res, recs = st.ApplyProposals([]Proposal{prop}, eval, "", 72*time.Hour, now.Add(2*time.Hour))
	apply(recs)
	if len(res.Created) != 0 || res.SkippedRejected != 1 {
		t.Fatalf("rejected move proposed again: %+v", res)
	}
	worse := prop
	worse.Priority = PriorityUrgent
	res, recs = st.ApplyProposals([]Proposal{worse}, eval, "", 72*time.Hour, now.Add(3*time.Hour))
	apply(recs)
	if len(res.Created) != 1 {
		t.Fatalf("worse situation not proposed: %+v", res)
	}
	// The engine no longer proposes it: the pending one expires (justification gone).
	res, recs = st.ApplyProposals(nil, eval, "", 72*time.Hour, now.Add(4*time.Hour))
	apply(recs)
	if res.Expired != 1 {
		t.Fatalf("justification gone: %+v", res)
	}
	// After the rejection memory the same move is proposed again.
	res, _ = st.ApplyProposals([]Proposal{prop}, eval, "", 72*time.Hour, now.Add(15*24*time.Hour))
	if len(res.Created) != 1 {
		t.Fatalf("after 14 days: %+v", res)
	}
}
