package tools_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/tools"
)

func detailsOf(t *testing.T, err error) map[string][]string {
	t.Helper()
	var e *supplyplan.Error
	if !errors.As(err, &e) || e.Code != supplyplan.EVALIDATION {
		t.Fatalf("err = %v, want a VALIDATION_ERROR", err)
	}
	return e.Details
}

func TestDecodeArgsRefusesCaseVariants(t *testing.T) {
	var v struct {
		SKU string `json:"sku"`
	}
	if err := tools.DecodeArgs(json.RawMessage(`{"SKU":"x"}`), &v); err == nil || len(detailsOf(t, err)["SKU"]) == 0 {
		t.Fatalf("SKU: %v %+v", err, v)
	}
	if err := tools.DecodeArgs(json.RawMessage(`{"sku":"x","sku":"y"}`), &v); err == nil || len(detailsOf(t, err)["sku"]) == 0 {
		t.Fatalf("duplicate: %v", err)
	}
	if err := tools.DecodeArgs(json.RawMessage(`{"sku":"x"}`), &v); err != nil || v.SKU != "x" {
		t.Fatalf("sku: %v %+v", err, v)
	}
}

// TestDecodeArgsBoundsStrings is the tool-argument case of the root's
// TestInputTypesBoundEveryString: a string beyond its max tag is a VALIDATION_ERROR naming it.
func TestDecodeArgsBoundsStrings(t *testing.T) {
	huge := strings.Repeat("n", 100_000)
	var in struct {
		Query string `json:"query" max:"200"`
	}
	if d := detailsOf(t, tools.DecodeArgs(json.RawMessage(`{"query":"`+huge+`"}`), &in)); len(d["query"]) == 0 {
		t.Fatalf("details = %v, want one on query", d)
	}
}
