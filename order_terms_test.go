package supplyplan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestOrderTermsRow(t *testing.T) {
	tests := []struct {
		row   string
		want  OrderTerms
		field string
	}{
		{`{}`, OrderTerms{}, ""},
		{`{"priority":-3,"fill":"ship_complete","minQuantity":2,"maxLocations":3,"maxLatenessDays":7,"version":12}`,
			OrderTerms{Priority: -3, Fill: FillComplete, MinQuantity: 2, MaxLocations: 3, MaxLatenessDays: 7, Version: 12}, ""},
		{`{"fill":"SOMETIMES"}`, OrderTerms{}, "fill"},
		{`{"priority":2000000}`, OrderTerms{}, "priority"},
		{`{"minQuantity":-1}`, OrderTerms{}, "minQuantity"},
		{`{"maxLocations":0}`, OrderTerms{}, "maxLocations"},
		{`{"maxLocations":101}`, OrderTerms{}, "maxLocations"},
		{`{"maxLatenessDays":-1}`, OrderTerms{}, "maxLatenessDays"},
		{`{"version":-1}`, OrderTerms{}, "version"},
		{`{"requestedDate":"yesterday"}`, OrderTerms{}, "requestedDate"},
	}
	for _, tt := range tests {
		var r OrderTermsRow
		if err := json.Unmarshal([]byte(tt.row), &r); err != nil {
			t.Fatal(err)
		}
		got, e := r.Terms(4)
		switch {
		case tt.field != "":
			if e == nil || e.Field != tt.field || e.Row != 4 || e.Code != RowInvalidValue {
				t.Errorf("%s: got %+v, want an error on %s", tt.row, e, tt.field)
			}
		case e != nil:
			t.Errorf("%s: got %+v", tt.row, e)
		case got != tt.want:
			t.Errorf("%s: got %+v, want %+v", tt.row, got, tt.want)
		}
	}
	var r OrderTermsRow
	_ = json.Unmarshal([]byte(`{"requestedDate":"2026-12-01"}`), &r)
	if got, e := r.Terms(0); e != nil || got.RequestedDate == nil || got.RequestedDate.Format("2006-01-02") != "2026-12-01" {
		t.Errorf("requestedDate: got %+v %v", got, e)
	}
}

func TestLineIDs(t *testing.T) {
	got, e := LineIDs(0, []string{"", "b", ""})
	if e != nil || !slices.Equal(got, []string{"1", "b", "3"}) {
		t.Errorf("got %q %v", got, e)
	}
	if _, e := LineIDs(2, []string{"a", "2", "a"}); e == nil || e.Field != "lines[2].lineId" {
		t.Errorf("duplicate: got %+v", e)
	}
	if _, e := LineIDs(2, []string{"", "1"}); e == nil || e.Field != "lines[1].lineId" {
		t.Errorf("a given id equal to a default one: got %+v", e)
	}
}

// TestOrderTermsRowEmbeds checks that a row type embedding OrderTermsRow (as OrderRow will)
// decodes the terms as its own fields, with the limits check naming them.
func TestOrderTermsRowEmbeds(t *testing.T) {
	type row struct {
		ExternalOrderID *string `json:"externalOrderId" max:"200"`
		OrderTermsRow
	}
	var r row
	if e := decodeRow(0, json.RawMessage(`{"externalOrderId":"SO-1","priority":2,"fill":"FILL_OR_KILL","version":3}`), &r); e != nil {
		t.Fatalf("decode: %+v", e)
	}
	if got, e := r.Terms(0); e != nil || got != (OrderTerms{Priority: 2, Fill: FillOrKill, Version: 3}) {
		t.Errorf("got %+v %v", got, e)
	}
	long := `{"fill":"` + strings.Repeat("x", 201) + `"}`
	if e := decodeRow(7, json.RawMessage(long), &r); e == nil || e.Field != "fill" {
		t.Errorf("a 201-character fill: got %+v, want an error on fill", e)
	}
	// encoding/json names the embedded struct in a type error: decodeRow must drop it (JSONFieldPath)
	if e := decodeRow(7, json.RawMessage(`{"priority":1.5}`), &r); e == nil || JSONFieldPath(e.Field) != "priority" || e.Code != RowInvalidType {
		t.Errorf("a fractional priority: got %+v, want a type error on priority", e)
	}
	for in, want := range map[string]string{"OrderTermsRow.priority": "priority", "lines.OrderLineRow.lineId": "lines.lineId", "fill": "fill", "": ""} {
		if got := JSONFieldPath(in); got != want {
			t.Errorf("JSONFieldPath(%q): got %q, want %q", in, got, want)
		}
	}
}
