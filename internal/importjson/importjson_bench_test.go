package importjson

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/supplyplan/supplyplan"
)

// importBody renders an import request of n rows of kind (the shape clients send).
func importBody(tb testing.TB, kind supplyplan.ImportKind, n int) []byte {
	tb.Helper()
	rows := make([]map[string]any, n)
	for i := range rows {
		switch kind {
		case supplyplan.ImportDemandHistory:
			rows[i] = map[string]any{"skuId": fmt.Sprintf("P%05d", i%5000), "locationId": fmt.Sprintf("L%d", i%4),
				"weekStarting": "2024-01-01", "actualDemand": float64(i%97) + 0.5, "channel": "WEB"}
		case supplyplan.ImportOrders:
			rows[i] = map[string]any{"externalOrderId": fmt.Sprintf("O%06d", i), "priority": i % 3, "fill": "PARTIAL", "maxLocations": 2,
				"lines": []map[string]any{{"skuId": fmt.Sprintf("P%05d", i%5000), "quantity": 2, "locationId": fmt.Sprintf("L%d", i%50)},
					{"skuId": fmt.Sprintf("P%05d", (i+7)%5000), "quantity": 1, "locationId": fmt.Sprintf("L%d", i%50)}}}
		default:
			rows[i] = map[string]any{"externalId": fmt.Sprintf("P%05d", i), "name": fmt.Sprintf("Product %d", i),
				"sku": fmt.Sprintf("SKU-%05d", i), "categoryId": "cat-1", "unitCost": 1.25, "unitPrice": 2.5, "shelfLifeDays": 30}
		}
	}
	b, err := json.Marshal(map[string]any{kind.ArrayKey(): rows})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkImportDecode measures what an import request costs before the tenant actor: splitting
// the body into rows (with its JSON checks) and decoding every row.
func BenchmarkImportDecode(b *testing.B) {
	for _, kind := range []supplyplan.ImportKind{supplyplan.ImportDemandHistory, supplyplan.ImportCatalog, supplyplan.ImportOrders} {
		body := importBody(b, kind, 50000)
		b.Run(string(kind), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				rows, err := SplitBody(kind, body, 50000)
				if err != nil {
					b.Fatal(err)
				}
				d := DecodeRows(kind, rows, 0)
				if len(d.Errors) > 0 {
					b.Fatal(d.Errors[0])
				}
				Release(d, nil) // as an import job does once the chunk is written
			}
		})
	}
}

// BenchmarkImportSplit measures the strict check and row split alone (the part of an import that
// runs while its POST waits).
func BenchmarkImportSplit(b *testing.B) {
	body := importBody(b, supplyplan.ImportDemandHistory, 50000)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := SplitBody(supplyplan.ImportDemandHistory, body, 50000); err != nil {
			b.Fatal(err)
		}
	}
}
