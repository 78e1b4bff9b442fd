package supplyplan

import (
	"encoding/json"
	"testing"
	"time"
)

// What an earlier version could journal: numbers beyond every bound, whose sums overflow.
const oldEntry = `[
 {"k":"product","i":"P","v":{"id":"P","externalId":"P","name":"P","sku":"P","unitCost":1e308,"unitPrice":2}},
 {"k":"location","i":"L","v":{"id":"L","name":"L","code":"o-L"}},
 {"k":"inventory","i":"P\u0000L","v":{"skuId":"P","locationId":"L","quantityOnHand":1e308,"quantityReserved":1,
   "reorderPoint":1.7e308,"bins":{"DEFAULT":1e308,"A":3},"lots":[{"lotId":"a","quantity":1e308},{"lotId":"b","quantity":2}]}},
 {"k":"po","i":"PO1","v":{"externalPoNumber":"PO1","supplierId":"S","destinationLocationId":"L","status":"PENDING",
   "lines":[{"skuId":"P","quantity":1e308,"unitCost":1},{"skuId":"P","quantity":4,"unitCost":1}]}},
 {"k":"po","i":"PO2","v":{"externalPoNumber":"PO2","supplierId":"S","destinationLocationId":"L","status":"PENDING",
   "lines":[{"skuId":"P","quantity":1e308,"unitCost":1}]}},
 {"k":"order","i":"O1","v":{"externalOrderId":"O1","status":"OPEN","lines":[{"skuId":"P","quantity":-1e308,"locationId":"L"}]}},
 {"k":"transfer","i":"T1","v":{"id":"T1","productMasterId":"P","sourceLocationId":"L","destLocationId":"L","quantity":1e300,
   "status":"DRAFT","picks":[{"binId":"A","quantity":1e300}],"history":[]}}
]`

func checkQuarantined(t *testing.T, st *TenantState, q []QuarantinedValue) {
	t.Helper()
	// unitCost, onHand, reorderPoint, bins.DEFAULT, lots[0], PO1 line 0, PO2 line 0, O1 line 0,
	// the transfer's quantity and its pick.
	if len(q) != 10 {
		t.Fatalf("quarantined %d values, want 10: %v", len(q), q)
	}
	p := st.Products["P"]
	if p.UnitCost != nil || p.UnitPrice == nil || *p.UnitPrice != 2 {
		t.Errorf("product %+v", p)
	}
	l := st.Inventory[InventoryKey("P", "L")]
	if l.QuantityOnHand != 0 || l.QuantityReserved != 1 || l.ReorderPoint != 0 || len(l.Bins) != 1 || l.Bins["A"] != 3 ||
		len(l.Lots) != 1 || l.Lots[0].LotID != "b" {
		t.Errorf("level %+v", l)
	}
	if lines := st.PurchaseOrders["PO1"].Lines; len(lines) != 1 || lines[0].Quantity != 4 {
		t.Errorf("PO1 lines %+v", lines)
	}
	if lines := st.PurchaseOrders["PO2"].Lines; len(lines) != 0 {
		t.Errorf("PO2 lines %+v", lines)
	}
	if tr := st.Transfers["T1"]; tr.Quantity != 0 || len(tr.Picks) != 0 {
		t.Errorf("transfer %+v", tr)
	}
	av, err := st.Availability("P", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(av) != 1 || av[0].Inbound != 4 || !StoredOK(av[0].ATP) {
		t.Errorf("availability %+v", av)
	}
	if _, err := json.Marshal(st); err != nil {
		t.Fatalf("state does not encode: %v", err)
	}
	if len(st.TakeQuarantined()) != 0 {
		t.Error("TakeQuarantined did not forget")
	}
}

func TestQuarantineOnJournalReplay(t *testing.T) {
	recs, err := DecodeRecords([]byte(oldEntry))
	if err != nil {
		t.Fatal(err)
	}
	st := NewTenantState("o")
	for _, r := range recs {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	checkQuarantined(t, st, st.TakeQuarantined())
}

func TestQuarantineOnSnapshotLoad(t *testing.T) {
	// A snapshot of an earlier version: the raw maps, as it encoded them.
	raw := map[string]map[string]json.RawMessage{}
	names := map[string]string{KindProduct: "products", KindLocation: "locations", KindInventory: "inventory",
		KindPurchaseOrder: "purchaseOrders", KindOrder: "orders", KindTransfer: "transfers"}
	var entries []struct {
		K string          `json:"k"`
		I string          `json:"i"`
		V json.RawMessage `json:"v"`
	}
	if err := json.Unmarshal([]byte(oldEntry), &entries); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if raw[names[e.K]] == nil {
			raw[names[e.K]] = map[string]json.RawMessage{}
		}
		raw[names[e.K]][e.I] = e.V
	}
	snap, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var st TenantState
	if err := json.Unmarshal(snap, &st); err != nil {
		t.Fatal(err)
	}
	checkQuarantined(t, &st, st.TakeQuarantined())
}
