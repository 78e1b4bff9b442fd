package supplyplan

import (
	"encoding/json"
	"testing"
)

// The cost CheckInput adds to an import row (CheckRowInput runs it on every non-demand row).
func BenchmarkCheckInputInventoryRow(b *testing.B) {
	var row InventoryRow
	raw := []byte(`{"skuId":"OJ-1","locationId":"STORE-1","locationName":"Store 1","quantityOnHand":40,"quantityReserved":2,
		"reorderPoint":10,"binId":"A-1","lots":[{"lotId":"L1","quantity":20,"expiresAt":"2027-01-01"},{"lotId":"L2","quantity":20,"expiresAt":"2027-02-01"}]}`)
	if err := json.Unmarshal(raw, &row); err != nil {
		b.Fatal(err)
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r InventoryRow
			_ = json.Unmarshal(raw, &r)
		}
	})
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, bad := inputProblem(&row); bad {
				b.Fatal("bad")
			}
		}
	})
}
