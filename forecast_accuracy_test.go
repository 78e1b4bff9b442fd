package supplyplan

import (
	"testing"
	"time"
)

func TestWindowActuals(t *testing.T) {
	from := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	w := func(i int) time.Time { return from.Add(time.Duration(i) * weekDuration) }
	weeks := []WeekValue{{Week: w(-3), Actual: 10}, {Week: w(-2), Actual: 14}, {Week: w(-1), Actual: 12}, {Week: w(0), Actual: 20}, {Week: w(1), Actual: 22}}
	actuals, scale := WindowActuals(weeks, from)
	if len(actuals) != 2 || actuals[w(0)] != 20 || actuals[w(1)] != 22 {
		t.Fatalf("actuals %v", actuals)
	}
	if scale != 3 { // |14-10| and |12-14|
		t.Fatalf("scale %v, want 3", scale)
	}
	if _, scale := WindowActuals(weeks[2:], from); scale != 0 {
		t.Fatalf("one week before the window: scale %v, want 0", scale)
	}
}

// WAPE, bias, MAPE (zero actuals left out) and MASE, overall and per group, sorted.
func TestAccuracyBreakdown(t *testing.T) {
	p := func(sku, loc string, f, a, scale float64) AccuracyPoint {
		return AccuracyPoint{Key: DemandKey{SKU: sku, Location: loc, Channel: ChannelAll}, Forecast: f, Actual: a, Scale: scale}
	}
	points := []AccuracyPoint{p("B", "L1", 12, 10, 2), p("A", "L1", 8, 10, 2), p("A", "L2", 5, 0, 0)}
	overall, byProduct, byLocation, byChannel := AccuracyBreakdown(points)
	// errors +2, -2, +5: |e| = 9, sum e = 5, |actual| = 20.
	if overall.Points != 3 || *overall.WAPE != 0.45 || *overall.Bias != 0.25 || *overall.MAPE != 0.2 || *overall.MASE != 1.5 {
		t.Fatalf("overall %+v (wape %v bias %v mape %v mase %v)", overall, *overall.WAPE, *overall.Bias, *overall.MAPE, *overall.MASE)
	}
	if len(byProduct) != 2 || byProduct[0].ProductMasterID != "A" || byProduct[0].Points != 2 || byProduct[1].ProductMasterID != "B" {
		t.Fatalf("by product %+v", byProduct)
	}
	if len(byLocation) != 2 || byLocation[1].LocationID != "L2" || byLocation[1].WAPE != nil || byLocation[1].MASE != nil {
		t.Fatalf("by location %+v: L2 has no actual and no scale", byLocation)
	}
	if len(byChannel) != 1 || byChannel[0].Channel != ChannelAll {
		t.Fatalf("by channel %+v", byChannel)
	}
	if o, _, _, _ := AccuracyBreakdown(nil); o.Points != 0 || o.WAPE != nil {
		t.Fatalf("no points: %+v", o)
	}
}
