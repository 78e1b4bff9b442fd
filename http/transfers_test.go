package http

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// The generation's response written by hand is the bytes encoding/json writes for its map.
func TestGenerateResponseAsEncodingJSON(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 123, time.UTC)
	f := func(v float64) *float64 { return &v }
	pos := func(loc string) supplyplan.StockPosition {
		return supplyplan.StockPosition{LocationID: loc, OnHand: 39, Available: 39, ReorderPoint: 15, Forecast: 64.25,
			WeeksOfCoverBefore: f(4.9), DaysToStockoutBefore: f(34.1), ProjectedEndAfter: 15}
	}
	full := supplyplan.Recommendation{ID: "rec_1", ProductMasterID: "T<1>&\"x\"", SourceLocationID: "L00", DestLocationID: "L24",
		Quantity: 40, Priority: supplyplan.PriorityLow, Status: supplyplan.RecPending, Reason: "L24 runs out \"soon\" \u2028 é",
		EstimatedROI: f(6.5), CreatedAt: t0, UpdatedAt: t0, ExpiresAt: t0.Add(72 * time.Hour),
		Explanation: &supplyplan.Explanation{Source: pos("L00"), Destination: pos("L24"), WindowWeeks: 8, LeadTimeDays: 3, Shortfall: 40,
			Surplus: 1860, StockDifferencePct: 0.965, LostSalesAvoided: 25, UnitMargin: f(6), UnitMarginSource: "product price - cost",
			TransferCostPerUnit: 0.5, TransferCost: 20, MarginSaved: f(150), Formula: "estimatedROI = a / b"}}
	bare := full
	bare.Explanation, bare.EstimatedROI = nil, nil
	for _, res := range []supplyplan.GenerateResult{
		{},
		{Created: []supplyplan.Recommendation{}, Products: 3},
		{Created: []supplyplan.Recommendation{full}, SkippedPending: 2, SkippedRejected: 1, Expired: 4, Products: 10000},
		{Created: []supplyplan.Recommendation{full, bare, full}, Products: 1},
	} {
		want, err := json.Marshal(generateResponseMap(res))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := generateResponse(res)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("by hand (%v):\n%s\nencoding/json:\n%s", ok, got, want)
		}
	}
	// A float JSON cannot write is left to encoding/json, which reports it.
	bad := full
	bad.Quantity = math.Inf(1)
	if _, ok := generateResponse(supplyplan.GenerateResult{Created: []supplyplan.Recommendation{full, bad}}); ok {
		t.Fatal("an infinite quantity was written")
	}
}
