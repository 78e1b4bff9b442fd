package supplyplan

import (
	"encoding/json"
	"slices"
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

// JSONFieldPath is for the import row decoder (internal/importjson, TestDecodeRowEmbeddedTerms):
// the field of a type error without the names of embedded structs.
func TestJSONFieldPath(t *testing.T) {
	for in, want := range map[string]string{"OrderTermsRow.priority": "priority", "lines.OrderLineRow.lineId": "lines.lineId", "fill": "fill", "": ""} {
		if got := JSONFieldPath(in); got != want {
			t.Errorf("JSONFieldPath(%q): got %q, want %q", in, got, want)
		}
	}
}
