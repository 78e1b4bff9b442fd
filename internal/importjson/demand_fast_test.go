package importjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/supplyplan/supplyplan"
)

// The fast demand-row decoder must agree with encoding/json on every row it accepts.
func checkDemandFast(t *testing.T, raw string) {
	t.Helper()
	var slab demandSlab
	var fast supplyplan.DemandHistoryRow
	if !decodeDemandFast([]byte(raw), interner{}, &slab, &fast) {
		return // falls back to encoding/json: nothing to compare
	}
	var slow supplyplan.DemandHistoryRow
	if err := json.Unmarshal([]byte(raw), &slow); err != nil {
		t.Fatalf("fast decoder accepted %q that encoding/json rejects: %v", raw, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: fast %+v differs from encoding/json %+v", raw, fast, slow)
	}
}

func TestDecodeDemandFastMatchesEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`{"skuId":"P","locationId":"L","weekStarting":"2026-01-05","actualDemand":10}`,
		`{"skuId":"P","locationId":"L","weekStarting":"2026-01-05","actualDemand":1.5e2,"forecastedDemand":-3,"channel":"WEB","onHand":0,"stockout":true}`,
		` { "skuId" : "P" , "actualDemand" : null , "extra" : {"a":[1,2,{"b":"]"}]} } `,
		`{"skuId":"P","skuId":"Q"}`,
		`{"SKUID":"P"}`,
		`{"skuId":"P\u00e9"}`,
		`{"skuId":5}`,
		`{"actualDemand":"5"}`,
		`{"stockout":1}`,
		`{"sku\u0049d":"P"}`,
		`{}`,
	} {
		checkDemandFast(t, raw)
	}
}

func FuzzDecodeDemandFast(f *testing.F) {
	f.Add(`{"skuId":"P","locationId":"L","weekStarting":"2026-01-05","actualDemand":10}`)
	f.Add(`{"channel":null,"onHand":-0.0,"stockout":false,"x":[{}]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return // bodies are validated whole before rows are decoded
		}
		checkDemandFast(t, raw)
	})
}

// TestDecodeRowsAfterRelease: a chunk decoded into the memory another chunk released decodes as
// encoding/json does, with nothing of the earlier chunk left in it (fields the new rows omit stay
// nil), and the earlier chunk's rows are not changed until it is released.
func TestDecodeRowsAfterRelease(t *testing.T) {
	full := `{"skuId":"P%d","locationId":"L1","weekStarting":"2026-01-05","actualDemand":%d,"forecastedDemand":4,"channel":"WEB","onHand":7,"stockout":true}`
	sparse := `{"skuId":"Q%d","weekStarting":"2026-01-12","actualDemand":%d}`
	rows := func(format string, n int) []json.RawMessage {
		out := make([]json.RawMessage, n)
		for i := range out {
			out[i] = json.RawMessage(fmt.Sprintf(format, i, i+1))
		}
		return out
	}
	check := func(raw []json.RawMessage, d supplyplan.DecodedRows) {
		t.Helper()
		if len(d.Demand) != len(raw) || len(d.Errors) != 0 {
			t.Fatalf("%d rows, %d errors from %d raw rows", len(d.Demand), len(d.Errors), len(raw))
		}
		for i, r := range raw {
			var want supplyplan.DemandHistoryRow
			if err := json.Unmarshal(r, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.Demand[i], want) || d.Index[i] != 100+i {
				t.Fatalf("row %d (index %d): %+v, want %+v", i, d.Index[i], d.Demand[i], want)
			}
		}
	}
	a := rows(full, 300)
	da := DecodeRows(supplyplan.ImportDemandHistory, a, 100)
	other := DecodeRows(supplyplan.ImportDemandHistory, rows(sparse, 50), 100) // a chunk in flight beside it
	check(a, da)
	resolved := append(da.DemandOut, supplyplan.DemandRow{SKU: "P0"})
	Release(da, resolved)
	for range 3 { // sync.Pool may drop what it was given (always under -race, at times): try again
		b := rows(sparse, 200)
		db := DecodeRows(supplyplan.ImportDemandHistory, b, 100)
		check(b, db)
		Release(db, nil)
	}
	Release(other, nil)
	bigger := rows(full, 1000)
	check(bigger, DecodeRows(supplyplan.ImportDemandHistory, bigger, 100))
}
