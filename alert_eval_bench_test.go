package supplyplan

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkEvaluateItems evaluates 50,000 sku-locations with 8 weeks of history each.
func BenchmarkEvaluateItems(b *testing.B) {
	th := DefaultAlertThresholds()
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	cur := WeekStart(now)
	items := make([]EvalItem, 0, 50000)
	for i := range 10000 {
		cost, price := float64(4+i%20), float64(9+i%40)
		p := &Product{ID: fmt.Sprintf("SKU-%05d", i), UnitCost: &cost, UnitPrice: &price}
		for j := range 5 {
			h := make([]WeekValue, 8)
			for w := range 8 {
				h[w] = WeekValue{Week: cur.AddDate(0, 0, -7*(8-w)), Actual: float64(8 + (i+w)%5)}
			}
			items = append(items, EvalItem{Product: p, Level: &InventoryLevel{SKU: p.ID, LocationID: fmt.Sprint("L", j),
				QuantityOnHand: float64((i*7 + j) % 10 * 40), ReorderPoint: 20}, LeadTimeDays: 14, History: h})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var conds []Condition
		for _, it := range items {
			conds = th.EvaluateItem(it, now, conds)
		}
	}
}
