package supplyplan

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
)

// naiveInventory is the inventory page by definition: every level filtered, all sorted, the page
// cut out.
func naiveInventory(all map[string]*InventoryLevel, f InventoryFilter) Page[InventoryLevel] {
	var out []InventoryLevel
	for _, l := range all {
		if (f.SKU == "" || l.SKU == f.SKU) && (f.LocationID == "" || l.LocationID == f.LocationID) &&
			(!f.BelowReorder || l.Available() < l.ReorderPoint) {
			out = append(out, *l)
		}
	}
	slices.SortFunc(out, func(a, b InventoryLevel) int { return compareLevels(&a, &b) })
	p := Page[InventoryLevel]{Items: []InventoryLevel{}, Total: len(out), Limit: f.Limit, Offset: f.Offset}
	if f.Offset < len(out) {
		p.Items = append(p.Items, out[f.Offset:min(f.Offset+f.Limit, len(out))]...)
	}
	return p
}

// TestInventoryOrder: after stock changes, levels added in and out of order and deleted, every
// page of the inventory list (with and without product, location and below-reorder filters)
// equals the page computed by sorting every level; reads in parallel sort a stale order once.
func TestInventoryOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	st := NewTenantState("org")
	var keys []string
	check := func(step int) {
		t.Helper()
		for _, f := range []InventoryFilter{{}, {SKU: fmt.Sprintf("p%03d", rng.IntN(60))}, {LocationID: fmt.Sprintf("L%d", rng.IntN(5))},
			{BelowReorder: true}, {SKU: fmt.Sprintf("p%03d", rng.IntN(60)), BelowReorder: true}, {LocationID: "L1", BelowReorder: true}} {
			f.Limit, f.Offset = 1+rng.IntN(40), rng.IntN(60)
			if got, want := st.ListInventory(f), naiveInventory(st.Inventory, f); !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d, %+v: got %d of %d, want %d of %d", step, f, len(got.Items), got.Total, len(want.Items), want.Total)
			}
		}
	}
	put := func(p, l int) {
		key := InventoryKey(fmt.Sprintf("p%03d", p), fmt.Sprintf("L%d", l))
		lv := InventoryLevel{SKU: fmt.Sprintf("p%03d", p), LocationID: fmt.Sprintf("L%d", l), QuantityOnHand: float64(rng.IntN(50)), ReorderPoint: 20}
		if err := st.Apply(Put(KindInventory, key, &lv)); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	for p := range 30 { // an import in order: appended
		for l := range 5 {
			put(p, l)
		}
	}
	check(0)
	for step := 1; step <= 2000; step++ {
		switch x := rng.IntN(10); {
		case x < 6: // a stock change of a known level, or a new one anywhere
			put(rng.IntN(60), rng.IntN(5))
		case x < 7:
			if err := st.Apply(Del(KindInventory, keys[rng.IntN(len(keys))])); err != nil {
				t.Fatal(err)
			}
		default:
			check(step)
		}
		if step%400 == 0 {
			put(rng.IntN(60), 0) // stale, probably: read by many at once
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st.ListInventory(InventoryFilter{Limit: 10})
				}()
			}
			wg.Wait()
		}
	}
	check(-1)
}
