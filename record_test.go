package supplyplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"
)

// A journal entry of many records is the JSON array json.Marshal writes, byte for byte, whatever the
// sizes of its records (the buffer is sized from the first ones); it decodes to the same records;
// and an unencodable value is an error, as before.
func TestEncodeRecordsLargeEntry(t *testing.T) {
	now := time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{0, 1, 64, 65, 128, 1000} {
		recs := make([]Record, 0, n)
		for i := 0; i < n; i++ {
			name := "small"
			if i%97 == 96 || (n == 128 && i%2 == 1) { // records much larger than the sampled ones
				name = string(bytes.Repeat([]byte("<big>&"), 400))
			}
			if i%3 == 0 && n != 128 {
				recs = append(recs, Del(KindProduct, fmt.Sprint("gone-", i)))
				continue
			}
			id := fmt.Sprintf("P%04d", i)
			recs = append(recs, Put(KindProduct, id, &Product{ID: id, ExternalID: id, Name: name, SKU: id, CreatedAt: now, UpdatedAt: now}))
		}
		got, err := EncodeRecords(recs)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(recs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d records: EncodeRecords differs from json.Marshal", n)
		}
		back, err := DecodeRecords(got)
		if err != nil || len(back) != n {
			t.Fatalf("%d records: decoded %d, %v", n, len(back), err)
		}
	}
	bad := make([]Record, 100)
	for i := range bad {
		bad[i] = Put(KindInventory, fmt.Sprint(i), &InventoryLevel{SKU: "P", LocationID: "L"})
	}
	bad[80].Value.(*InventoryLevel).QuantityOnHand = math.NaN()
	if _, err := EncodeRecords(bad); err == nil {
		t.Fatal("a NaN quantity encoded")
	}
}
