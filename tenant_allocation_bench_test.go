package supplyplan

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkOrderImportChunk is the tenant actor's share of an orders import with allocation, one
// chunk of 5,000 orders (about 12,500 lines) at a time over 10,000 skus x 50 locations: apply the
// decoded rows, allocate them, encode the write as the journal does and apply it (the decoding of
// the rows runs ahead on another goroutine in the service and is measured apart, decode).
func BenchmarkOrderImportChunk(b *testing.B) {
	b.Run("decode", func(b *testing.B) {
		_, chunks, lines := orderChunkFixture(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			decodeOrderChunk(b, chunks[i%len(chunks)])
		}
		b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	})
	b.Run("apply-allocate-encode", func(b *testing.B) {
		st, chunks, lines := orderChunkFixture(b) // a fresh tenant each run: every chunk is new orders
		decoded := make([]DecodedRows, len(chunks))
		for i := range chunks {
			decoded[i] = decodeOrderChunk(b, chunks[i])
		}
		now := allocT0
		b.ReportAllocs()
		cpu0 := processCPU()
		for i := 0; b.Loop(); i++ {
			if i >= len(decoded) {
				b.Fatalf("%d chunks prepared: run with -benchtime %dx at most", len(decoded), len(decoded))
			}
			res := st.ApplyImport(decoded[i], now)
			w := st.AllocateImported(res.Records, now)
			all := append(res.Records, w.Records...)
			if _, err := EncodeRecords(all); err != nil {
				b.Fatal(err)
			}
			for _, r := range all {
				if err := st.Apply(r); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		if cpu := processCPU() - cpu0; cpu > 0 {
			b.ReportMetric(float64(lines)*float64(b.N)/cpu.Seconds(), "lines/cpu-s")
		}
	})
}

func decodeOrderChunk(b *testing.B, body []byte) DecodedRows {
	rows := fixtureRows(b, ImportOrders, body)
	return rows
}

// orderChunkFixture returns the tenant (10,000 skus x 50 locations with stock and a purchase
// order at one level in ten) and ten import bodies of 5,000 new orders each, with the lines of
// the first.
func orderChunkFixture(b *testing.B) (*TenantState, [][]byte, int) {
	const skus, locations, orders = 10_000, 50, 5000
	rng := rand.New(rand.NewPCG(7, 8))
	st := NewTenantState("org_bench")
	now := allocT0
	var recs []Record
	for i := range skus {
		id := fmt.Sprintf("T%05d", i)
		recs = append(recs, Put(KindProduct, id, &Product{ID: id, ExternalID: id, Name: id, SKU: id}))
	}
	for l := range locations {
		id := fmt.Sprintf("L%02d", l)
		recs = append(recs, Put(KindLocation, id, &Location{ID: id, Name: id}))
	}
	recs = append(recs, Put(KindSupplier, "S1", &Supplier{ID: "S1", ExternalID: "S1", Name: "S1"}))
	for i := range skus {
		for l := range locations {
			sku, loc := fmt.Sprintf("T%05d", i), fmt.Sprintf("L%02d", l)
			recs = append(recs, Put(KindInventory, InventoryKey(sku, loc), &InventoryLevel{SKU: sku, LocationID: loc, QuantityOnHand: float64(rng.IntN(40))}))
			if rng.IntN(10) == 0 {
				at := now.Add(time.Duration(1+rng.IntN(10)) * 24 * time.Hour)
				po := fmt.Sprintf("PO-%s-%s", sku, loc)
				recs = append(recs, Put(KindPurchaseOrder, po, &PurchaseOrder{ExternalPoNumber: po, SupplierID: "S1", DestinationLocationID: loc,
					Status: "PENDING", ExpectedAt: &at, Lines: []POLine{{SKU: sku, Quantity: float64(10 + rng.IntN(50)), UnitCost: 1}}}))
			}
		}
	}
	for _, r := range recs {
		if err := st.Apply(r); err != nil {
			b.Fatal(err)
		}
	}
	// bodies of 5,000 orders, as the import decodes them
	var chunks [][]byte
	lines := 0
	for c := range 10 {
		var body bytes.Buffer
		body.WriteString(`{"orders":[`)
		for o := range orders {
			if o > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"externalOrderId":"O-%d-%d","priority":%d`, c, o, rng.IntN(3))
			switch r := rng.IntN(20); {
			case r < 3:
				body.WriteString(`,"fill":"FILL_OR_KILL"`)
			case r < 6:
				body.WriteString(`,"fill":"SHIP_COMPLETE"`)
			}
			if rng.IntN(10) == 0 {
				body.WriteString(`,"maxLocations":3`)
			}
			if rng.IntN(3) == 0 {
				body.WriteString(`,"maxLatenessDays":7`)
			}
			body.WriteString(`,"lines":[`)
			for j := range 1 + rng.IntN(4) {
				if j > 0 {
					body.WriteByte(',')
				}
				fmt.Fprintf(&body, `{"lineId":"%d","skuId":"T%05d","quantity":%d,"locationId":"L%02d"}`, j+1, rng.IntN(skus), 1+rng.IntN(8), rng.IntN(locations))
				if c == 0 {
					lines++
				}
			}
			body.WriteString("]}")
		}
		body.WriteString("]}")
		chunks = append(chunks, body.Bytes())
	}
	return st, chunks, lines
}
