package importjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/supplyplan/supplyplan"
)

func detailsOf(t *testing.T, err error) map[string][]string {
	t.Helper()
	var e *supplyplan.Error
	if !errors.As(err, &e) || e.Code != supplyplan.EVALIDATION {
		t.Fatalf("err = %v, want a VALIDATION_ERROR", err)
	}
	return e.Details
}

func TestSplitBody(t *testing.T) {
	rows, err := SplitBody(supplyplan.ImportDemandHistory, []byte(` {"a":{"records":1},"records":[ {"x":"]"} , [1], "s" ,3 ], "b":[]} `), 0)
	if err != nil || len(rows) != 4 || string(rows[0]) != `{"x":"]"}` || string(rows[3]) != "3" {
		t.Fatalf("rows %q err %v", rows, err)
	}
	for body, code := range map[string]string{
		`{"records":[}`:            supplyplan.EVALIDATION,
		`{"records":{}}`:           supplyplan.EVALIDATION,
		`{"other":[1]}`:            supplyplan.EVALIDATION,
		`{"records":[]}`:           supplyplan.EVALIDATION,
		`{"records":[1,2,3]}`:      supplyplan.ETOOLARGE,
		`[{"records":[1]}]`:        supplyplan.EVALIDATION,
		`{"records":[1]} trailing`: supplyplan.EVALIDATION,
		`{"rec\u006frds":[1]}`:     "",
	} {
		_, err := SplitBody(supplyplan.ImportDemandHistory, []byte(body), 2)
		if supplyplan.ErrorCode(err) != code {
			t.Errorf("%s: %v, want %q", body, err, code)
		}
	}
}

func TestSplitBodyIsStrict(t *testing.T) {
	if _, err := SplitBody(supplyplan.ImportCatalog, []byte(`{"products":[{"externalId":"A","sku":"x","sku":"y"}]}`), 10); err == nil ||
		len(detailsOf(t, err)["products[0].sku"]) == 0 {
		t.Fatalf("duplicate key in a row: %v", err)
	}
	if _, err := SplitBody(supplyplan.ImportCatalog, []byte(`{"products":[],"products":[{"externalId":"A"}]}`), 10); err == nil ||
		len(detailsOf(t, err)["products"]) == 0 {
		t.Fatalf("duplicate array: %v", err)
	}
	if _, err := SplitBody(supplyplan.ImportDemandHistory, []byte("{\"records\":[{\"skuId\":\"P\xff\"}]}"), 10); err == nil ||
		len(detailsOf(t, err)["records[0].skuId"]) == 0 {
		t.Fatalf("invalid UTF-8 in a row: %v", err)
	}
	// Case variants are unknown keys: the row decodes without them, through both decoders.
	for kind, body := range map[supplyplan.ImportKind]string{
		supplyplan.ImportCatalog:       `{"products":[{"externalId":"A","Name":"wrong","name":"right","SKU":"wrong"}]}`,
		supplyplan.ImportDemandHistory: `{"records":[{"skuId":"P","SKUID":"Q","locationId":"L","weekStarting":"2026-01-05","ActualDemand":5}]}`,
	} {
		rows, err := SplitBody(kind, []byte(body), 10)
		if err != nil {
			t.Fatal(err)
		}
		d := DecodeRows(kind, rows, 0)
		switch kind {
		case supplyplan.ImportCatalog:
			r := d.Catalog[0]
			if *r.Name != "right" || r.SKU != nil {
				t.Errorf("catalog row %+v", r)
			}
		case supplyplan.ImportDemandHistory:
			r := d.Demand[0]
			if *r.SKU != "P" || r.ActualDemand != nil {
				t.Errorf("demand row %+v", r)
			}
		}
	}
	// A top-level key of another case is not the array.
	if _, err := SplitBody(supplyplan.ImportCatalog, []byte(`{"Products":[{"externalId":"A"}]}`), 10); err == nil ||
		len(detailsOf(t, err)["products"]) == 0 {
		t.Fatalf("Products: %v", err)
	}
}

// Every import kind has a body shape for the strict check, keyed by its array.
func TestBodyTypesCoverEveryKind(t *testing.T) {
	for _, kind := range supplyplan.ImportKinds {
		bt, ok := bodyTypes[kind]
		if !ok {
			t.Errorf("%s: no body type", kind)
			continue
		}
		if got := bt.Field(0).Tag.Get("json"); got != kind.ArrayKey() {
			t.Errorf("%s: body key %q, want %q", kind, got, kind.ArrayKey())
		}
	}
	if _, err := SplitBody("returns", []byte(`{"returns":[{}]}`), 0); supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
		t.Errorf("an unknown kind: %v, want a VALIDATION_ERROR", err)
	}
}

// TestDecodeRowEmbeddedTerms checks that a row type embedding supplyplan.OrderTermsRow (as OrderRow
// will) decodes the terms as its own fields, with the limits check naming them.
func TestDecodeRowEmbeddedTerms(t *testing.T) {
	type row struct {
		ExternalOrderID *string `json:"externalOrderId" max:"200"`
		supplyplan.OrderTermsRow
	}
	var r row
	if e := decodeRow(0, json.RawMessage(`{"externalOrderId":"SO-1","priority":2,"fill":"FILL_OR_KILL","version":3}`), &r); e != nil {
		t.Fatalf("decode: %+v", e)
	}
	if got, e := r.Terms(0); e != nil || got != (supplyplan.OrderTerms{Priority: 2, Fill: supplyplan.FillOrKill, Version: 3}) {
		t.Errorf("got %+v %v", got, e)
	}
	long := `{"fill":"` + strings.Repeat("x", 201) + `"}`
	if e := decodeRow(7, json.RawMessage(long), &r); e == nil || e.Field != "fill" {
		t.Errorf("a 201-character fill: got %+v, want an error on fill", e)
	}
	// encoding/json names the embedded struct in a type error: decodeRow must drop it
	// (supplyplan.JSONFieldPath, tested in the root package).
	if e := decodeRow(7, json.RawMessage(`{"priority":1.5}`), &r); e == nil || supplyplan.JSONFieldPath(e.Field) != "priority" || e.Code != supplyplan.RowInvalidType {
		t.Errorf("a fractional priority: got %+v, want a type error on priority", e)
	}
}

// TestDecodeOrderTermsRowErrors: a field of an order's terms (embedded OrderTermsRow) with the
// wrong type is named by its JSON path, not by the Go struct that holds it.
func TestDecodeOrderTermsRowErrors(t *testing.T) {
	body := `{"orders":[{"externalOrderId":"a","lines":[{"skuId":"A","quantity":1,"locationId":"DC"}]},
		{"externalOrderId":"b","priority":1.5,"lines":[{"skuId":"A","quantity":1,"locationId":"DC"}]},
		{"externalOrderId":"c","maxLocations":"two","lines":[{"skuId":"A","quantity":1,"locationId":"DC"}]}]}`
	raw, err := SplitBody(supplyplan.ImportOrders, []byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	d := DecodeRows(supplyplan.ImportOrders, raw, 0)
	if len(d.Orders) != 1 || d.Orders[0].ExternalOrderID == nil || *d.Orders[0].ExternalOrderID != "a" {
		t.Fatalf("decoded orders %+v", d.Orders)
	}
	got := map[int]string{}
	for _, e := range d.Errors {
		got[e.Row] = e.Field + ":" + e.Code
	}
	want := map[int]string{1: "priority:INVALID_TYPE", 2: "maxLocations:INVALID_TYPE"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("row errors %v, want %v", got, want)
	}
}
