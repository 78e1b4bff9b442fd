package importjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/strictjson"
)

// The fast order-row decoder must agree with encoding/json on every row it accepts, as rows reach
// it: after the body's strict check (no key twice, case-variant keys made unknown).
func checkOrderFast(t *testing.T, raw string) (accepted bool) {
	t.Helper()
	clean, _, err := strictjson.Check([]byte(raw), reflect.TypeFor[supplyplan.OrderRow]())
	if err != nil {
		return false // the body's check refuses it before rows are decoded
	}
	var vals orderVals
	var lines lineArena
	var fast supplyplan.OrderRow
	if !decodeOrderFast(clean, interner{}, &vals, &lines, &fast) {
		return false // falls back to encoding/json: nothing to compare
	}
	var slow supplyplan.OrderRow
	if err := json.Unmarshal(clean, &slow); err != nil {
		t.Fatalf("fast decoder accepted %q that encoding/json rejects: %v", raw, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: fast %+v differs from encoding/json %+v", raw, fast, slow)
	}
	return true
}

func TestDecodeOrderFastMatchesEncodingJSON(t *testing.T) {
	for _, c := range []struct {
		raw  string
		fast bool // the fast path takes it
	}{
		{`{"externalOrderId":"O1","lines":[{"lineId":"1","skuId":"P","quantity":2,"locationId":"L"}]}`, true},
		{`{"externalOrderId":"O1","status":"OPEN","channel":"WEB","orderedAt":"2026-01-05T00:00:00Z","priority":-3,"requestedDate":"2026-01-06","fill":"FILL_OR_KILL","minQuantity":1.5e0,"maxLocations":3,"maxLatenessDays":7,"version":9007199254740993,"lines":[{"skuId":"P","quantity":1},{"skuId":"Q","quantity":0.25,"extra":[1,{"a":"]"}]}]}`, true},
		{` { "externalOrderId" : "O1" , "lines" : [ ] , "x" : null } `, true},
		{`{"externalOrderId":null,"priority":null,"lines":null}`, true},
		{`{"lines":[{"skuId":null,"quantity":null}]}`, true},
		{`{}`, true},
		{`{"EXTERNALORDERID":"O1"}`, false}, // the check renames it (an escape): encoding/json ignores it
		{`{"externalOrderId":"O\u00e9"}`, false},
		{`{"externalOrderId":5}`, false},
		{`{"priority":1.0}`, false},
		{`{"priority":1e2}`, false},
		{`{"priority":99999999999999999999}`, false},
		{`{"version":"1"}`, false},
		{`{"minQuantity":true}`, false},
		{`{"lines":{}}`, false},
		{`{"lines":[null]}`, false},
		{`{"lines":[1]}`, false},
		{`{"lines":[{"quantity":"2"}]}`, false},
		{"{\"channel\":\"W\xffB\"}", false},
	} {
		if got := checkOrderFast(t, c.raw); got != c.fast {
			t.Errorf("%s: fast path %v, want %v", c.raw, got, c.fast)
		}
	}
}

// The rows of a body decode to the same rows and row errors with the fast path as without it.
func TestDecodeRowsOrdersFastAndSlowAgree(t *testing.T) {
	body := []byte(`{"orders":[
		{"externalOrderId":"O1","priority":2,"fill":"PARTIAL","lines":[{"lineId":"a","skuId":"P","quantity":2,"locationId":"L"},{"skuId":"P","quantity":1}]},
		{"externalOrderId":"O2","priority":1.5,"lines":[]},
		{"externalOrderId":"` + string(make([]byte, 0)) + `O3","lines":[{"skuId":"P","quantity":"x"}]},
		{"externalOrderId":"O4","channel":"` + longString(300) + `","lines":[{"skuId":"P","quantity":1}]},
		{"externalOrderId":"O5","lines":[{"skuId":"P","quantity":1}],"version":3}
	]}`)
	rows, err := SplitBody(supplyplan.ImportOrders, body, 0)
	if err != nil {
		t.Fatal(err)
	}
	fast := DecodeRows(supplyplan.ImportOrders, rows, 10)
	var slow supplyplan.DecodedRows
	slow.Kind = supplyplan.ImportOrders
	for i, r := range rows {
		var row supplyplan.OrderRow
		if e := decodeRow(10+i, r, &row); e != nil {
			slow.Errors = append(slow.Errors, *e)
			continue
		}
		slow.Orders = append(slow.Orders, row)
		slow.Index = append(slow.Index, 10+i)
	}
	if !reflect.DeepEqual(fast.Orders, slow.Orders) || !reflect.DeepEqual(fast.Index, slow.Index) || !reflect.DeepEqual(fast.Errors, slow.Errors) {
		t.Fatalf("fast\n%+v\n%+v\n%+v\nslow\n%+v\n%+v\n%+v", fast.Orders, fast.Index, fast.Errors, slow.Orders, slow.Index, slow.Errors)
	}
	if len(fast.Errors) != 3 {
		t.Fatalf("row errors %+v, want 3 (priority 1.5, quantity \"x\", channel of 300)", fast.Errors)
	}
}

func longString(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'c'
	}
	return string(b)
}

func FuzzDecodeOrderFast(f *testing.F) {
	f.Add(`{"externalOrderId":"O1","priority":1,"lines":[{"lineId":"1","skuId":"P","quantity":2,"locationId":"L"}]}`)
	f.Add(`{"fill":null,"minQuantity":-0.0,"maxLocations":2,"version":-1,"x":[{}],"lines":[{"q":1}]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		checkOrderFast(t, raw)
	})
}

// orderInBounds lists the fields of OrderRow and OrderLineRow by hand: a field added to either, or
// a string field whose max is not MaxNameLen, must be added there too (this test then fails).
func TestOrderInBoundsCoversTheRow(t *testing.T) {
	want := map[string]string{
		"OrderRow.ExternalOrderID": "*string", "OrderRow.Status": "*string", "OrderRow.Channel": "*string",
		"OrderRow.OrderedAt": "*string", "OrderRow.Lines": "[]supplyplan.OrderLineRow",
		"OrderTermsRow.Priority": "*int", "OrderTermsRow.RequestedDate": "*string", "OrderTermsRow.Fill": "*string",
		"OrderTermsRow.MinQuantity": "*float64", "OrderTermsRow.MaxLocations": "*int",
		"OrderTermsRow.MaxLatenessDays": "*int", "OrderTermsRow.Version": "*int64",
		"OrderLineRow.LineID": "*string", "OrderLineRow.SKU": "*string", "OrderLineRow.Quantity": "*float64",
		"OrderLineRow.LocationID": "*string",
	}
	got := map[string]string{}
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for f := range rt.Fields() {
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			got[rt.Name()+"."+f.Name] = f.Type.String()
			if f.Type.String() == "*string" && f.Tag.Get("max") != fmt.Sprint(supplyplan.MaxNameLen) {
				t.Errorf("%s.%s: max %q, orderInBounds assumes %d", rt.Name(), f.Name, f.Tag.Get("max"), supplyplan.MaxNameLen)
			}
		}
	}
	walk(reflect.TypeFor[supplyplan.OrderRow]())
	walk(reflect.TypeFor[supplyplan.OrderLineRow]())
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the order row's fields changed: %v, orderInBounds checks %v", got, want)
	}
}
