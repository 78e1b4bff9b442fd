package importjson

import (
	"encoding/json"
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
