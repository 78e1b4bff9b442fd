package supplyplan

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The fast demand-row decoder must agree with encoding/json on every row it accepts.
func checkDemandFast(t *testing.T, raw string) {
	t.Helper()
	var slab demandSlab
	var fast DemandHistoryRow
	if !decodeDemandFast([]byte(raw), interner{}, &slab, &fast) {
		return // falls back to encoding/json: nothing to compare
	}
	var slow DemandHistoryRow
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

func TestSplitImportBody(t *testing.T) {
	rows, err := SplitImportBody(ImportDemandHistory, []byte(` {"a":{"records":1},"records":[ {"x":"]"} , [1], "s" ,3 ], "b":[]} `), 0)
	if err != nil || len(rows) != 4 || string(rows[0]) != `{"x":"]"}` || string(rows[3]) != "3" {
		t.Fatalf("rows %q err %v", rows, err)
	}
	for body, code := range map[string]string{
		`{"records":[}`:            EVALIDATION,
		`{"records":{}}`:           EVALIDATION,
		`{"other":[1]}`:            EVALIDATION,
		`{"records":[]}`:           EVALIDATION,
		`{"records":[1,2,3]}`:      ETOOLARGE,
		`[{"records":[1]}]`:        EVALIDATION,
		`{"records":[1]} trailing`: EVALIDATION,
		`{"rec\u006frds":[1]}`:     "",
	} {
		_, err := SplitImportBody(ImportDemandHistory, []byte(body), 2)
		if ErrorCode(err) != code {
			t.Errorf("%s: %v, want %q", body, err, code)
		}
	}
}
