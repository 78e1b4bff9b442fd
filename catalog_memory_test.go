package supplyplan

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// heapAfterGC is the live heap.
func heapAfterGC() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// levelRecords are inventory records as an import (or a journal replay) hands them to Apply: each
// a fresh value with its own strings and its own map of the default bin.
func levelRecords(products, locations int, now time.Time) []Record {
	recs := make([]Record, 0, products*locations)
	for p := 0; p < products; p++ {
		for l := 0; l < locations; l++ {
			sku, loc := strings.Clone(fmt.Sprintf("P%05d", p)), strings.Clone(fmt.Sprintf("L%03d", l))
			q := float64((p + l) % 300)
			recs = append(recs, Put(KindInventory, InventoryKey(sku, loc), &InventoryLevel{SKU: sku, LocationID: loc, QuantityOnHand: q,
				ReorderPoint: 5, Bins: map[string]float64{DefaultBin: q}, UpdatedAt: now}))
		}
	}
	return recs
}

// A stored level holds its numbers, its key and its map entry: its ids are the product's and the
// location's strings and its default bin is a shared map. Writing every level again (a re-import)
// leaves the heap as it was, and a snapshot decodes to levels as small.
func TestInventoryLevelMemory(t *testing.T) {
	const products, locations = 400, 50
	st := NewTenantState("org")
	now := time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)
	for p := 0; p < products; p++ {
		id := fmt.Sprintf("P%05d", p)
		if err := st.Apply(Put(KindProduct, id, &Product{ID: id, ExternalID: id, Name: id, SKU: id})); err != nil {
			t.Fatal(err)
		}
	}
	for l := 0; l < locations; l++ {
		id := fmt.Sprintf("L%03d", l)
		if err := st.Apply(Put(KindLocation, id, &Location{ID: id, Name: id, Code: "org-" + id})); err != nil {
			t.Fatal(err)
		}
	}
	apply := func() {
		for _, r := range levelRecords(products, locations, now) {
			if err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	base := heapAfterGC()
	apply()
	first := heapAfterGC() - base
	per := first / (products * locations)
	t.Logf("%d bytes a level", per)
	if per > 220 {
		t.Errorf("a stored level takes %d bytes of heap, want at most 220", per)
	}
	apply()
	if again := heapAfterGC() - base; float64(again) > 1.05*float64(first) {
		t.Errorf("writing every level again grew the heap from %d to %d bytes", first, again)
	}
	l := st.Inventory[InventoryKey("P00007", "L003")]
	if l.Bins[DefaultBin] != 10 || len(l.Bins) != 1 {
		t.Fatalf("level bins = %v, want DEFAULT: 10", l.Bins)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	base = heapAfterGC()
	back := new(TenantState)
	if err := json.Unmarshal(b, back); err != nil {
		t.Fatal(err)
	}
	if decoded := heapAfterGC() - base; decoded/(products*locations) > per+40 {
		t.Errorf("a level decoded from a snapshot takes %d bytes, stored live %d", decoded/(products*locations), per)
	}
	if got := back.Inventory[InventoryKey("P00007", "L003")]; got.Bins[DefaultBin] != 10 || got.SKU != "P00007" {
		t.Fatalf("decoded level = %+v", got)
	}
	runtime.KeepAlive(back)
}

// A shared default-bin map is never written: a transfer that moves stock out of a level changes a
// copy, and the other levels of the same quantity keep theirs.
func TestSharedBinsAreNeverWritten(t *testing.T) {
	a := shareBins(map[string]float64{DefaultBin: 12})
	b := shareBins(map[string]float64{DefaultBin: 12})
	if fmt.Sprintf("%p", a) != fmt.Sprintf("%p", b) {
		t.Fatal("two default bins of 12 are not shared")
	}
	for _, q := range []float64{-1, 0.5, maxSharedBin, 1e300} {
		m := map[string]float64{DefaultBin: q}
		if got := shareBins(m); fmt.Sprintf("%p", got) != fmt.Sprintf("%p", m) {
			t.Errorf("bins of %g replaced by a shared map", q)
		}
	}
	if m := map[string]float64{DefaultBin: 3, "A": 1}; fmt.Sprintf("%p", shareBins(m)) != fmt.Sprintf("%p", m) {
		t.Error("bins of two entries replaced")
	}
	st := NewTenantState("org")
	now := time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)
	for _, r := range []Record{
		Put(KindProduct, "P", &Product{ID: "P", ExternalID: "P", Name: "P", SKU: "P"}),
		Put(KindLocation, "A", &Location{ID: "A", Name: "A"}), Put(KindLocation, "B", &Location{ID: "B", Name: "B"}),
		Put(KindLocation, "C", &Location{ID: "C", Name: "C"}),
		Put(KindInventory, InventoryKey("P", "A"), &InventoryLevel{SKU: "P", LocationID: "A", QuantityOnHand: 12, Bins: map[string]float64{DefaultBin: 12}}),
		Put(KindInventory, InventoryKey("P", "C"), &InventoryLevel{SKU: "P", LocationID: "C", QuantityOnHand: 12, Bins: map[string]float64{DefaultBin: 12}}),
	} {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	str := func(v string) *string { return &v }
	five := 5.0
	tr, recs, err := st.CreateTransfer(TransferInput{ProductMasterID: str("P"), SourceLocationID: str("A"), DestLocationID: str("B"), Quantity: &five}, "u", now)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(recs []Record) {
		t.Helper()
		for _, r := range recs {
			if err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(recs)
	_, recs, err = st.UpdateTransfer(tr.ID, TransferUpdate{Status: str(string(TransferInTransit))}, "u", now)
	if err != nil {
		t.Fatal(err)
	}
	apply(recs)
	if got := st.Inventory[InventoryKey("P", "A")].Bins[DefaultBin]; got != 7 {
		t.Errorf("source bin after shipping 5 of 12 = %g, want 7", got)
	}
	if got := st.Inventory[InventoryKey("P", "C")].Bins[DefaultBin]; got != 12 {
		t.Errorf("another level's default bin of 12 became %g", got)
	}
	if got := shareBins(map[string]float64{DefaultBin: 12})[DefaultBin]; got != 12 {
		t.Errorf("the shared map of 12 holds %g", got)
	}
}
