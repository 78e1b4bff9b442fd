package supplyplan

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func detailOf(tb testing.TB, err error, field string) string {
	tb.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != EVALIDATION {
		tb.Fatalf("err = %v, want a VALIDATION_ERROR naming %s", err, field)
	}
	if len(e.Details[field]) == 0 {
		tb.Fatalf("err = %v, want a detail on %s", err, field)
	}
	return strings.Join(e.Details[field], "; ")
}

func TestParseTimeRange(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = refused
	}{
		{"1970-01-05", "1970-01-05T00:00:00Z"},
		{"1970-01-04T23:59:59.999Z", ""},
		{"1969-12-29", ""},
		{"1970-01-05T00:30:00+01:00", ""}, // 1970-01-04T23:30Z
		{"1970-01-04T23:30:00-01:00", "1970-01-05T00:30:00Z"},
		{"2100-01-01", "2100-01-01T00:00:00Z"},
		{"2100-01-01T00:00:00.001Z", ""},
		{"2099-12-31T23:00:00-05:00", ""}, // 2100-01-01T04:00Z
		{"9999-12-31", ""},
		{"9999-12-31T23:00:00-05:00", ""}, // year 10000 in UTC
		{"0000-01-01T00:00:00+01:00", ""}, // year -1 in UTC
		{"0000-01-01", ""},
		{"2026-11-23T10:00", "2026-11-23T10:00:00Z"},
		{"not a date", ""},
	}
	for _, tt := range tests {
		got, ok := ParseTime(tt.in)
		switch {
		case tt.want == "" && ok:
			t.Errorf("ParseTime(%q) = %v, want refused", tt.in, got)
		case tt.want != "" && (!ok || got.Format(time.RFC3339Nano) != tt.want):
			t.Errorf("ParseTime(%q) = %v %v, want %s", tt.in, got, ok, tt.want)
		}
	}
	// Every accepted instant renders as JSON and its ISO week starts in range.
	for _, s := range []string{"1970-01-05", "2100-01-01", "1970-01-07T12:00:00Z"} {
		tm, _ := ParseTime(s)
		if _, err := json.Marshal(tm); err != nil {
			t.Fatal(err)
		}
		if WeekStart(tm).Before(MinTime) {
			t.Errorf("week of %s starts %v, before MinTime", s, WeekStart(tm))
		}
	}
}

func TestEventDatesOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name, field        string
		starts, ends       string
		wantStarts, wantOK bool
	}{
		{"date-only endsAt 9999-12-31", "endsAt", "2026-01-01", "9999-12-31", false, false},
		{"date-only endsAt 2100-01-01 ends the next day", "endsAt", "2026-01-01", "2100-01-01", false, false},
		{"startsAt year 0 with an offset", "startsAt", "0000-01-01T00:00:00+01:00", "2026-01-01", false, false},
		{"startsAt before 1970", "startsAt", "1969-12-29", "2026-01-01", false, false},
		{"last day", "", "2099-12-30", "2099-12-31", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, platform := range []bool{false, true} {
				in := EventInput{Name: ptr("e"), StartsAt: ptr(tc.starts), EndsAt: ptr(tc.ends)}
				_, ends, err := in.Validate(true, platform)
				if tc.wantOK {
					if err != nil || !InTimeRange(ends) {
						t.Fatalf("err %v, ends %v", err, ends)
					}
					continue
				}
				msg := detailOf(t, err, tc.field)
				if !strings.Contains(msg, "2100-01-01") {
					t.Errorf("message %q does not state the range", msg)
				}
				// The same on update (PUT): the fields present are checked alike.
				if _, _, err := (EventInput{EndsAt: ptr(tc.ends), StartsAt: ptr(tc.starts)}).Validate(false, platform); err == nil {
					t.Fatal("update accepted it")
				}
			}
		})
	}
}

func TestCheckInputStringsAndNumbers(t *testing.T) {
	type line struct {
		SKU      string  `json:"skuId" max:"5"`
		Quantity float64 `json:"quantity"`
	}
	type Embedded struct {
		Code string `json:"code" max:"3"`
	}
	type body struct {
		Embedded
		Name  *string           `json:"name" max:"10"`
		Notes *string           `json:"notes"`
		Tags  []string          `json:"tags" max:"3"`
		Lines []line            `json:"lines"`
		Meta  map[string]string `json:"meta" max:"4"`
		Raw   json.RawMessage   `json:"raw"`
		Count *int              `json:"count"`
		Any   any               `json:"any"`
		skip  string
	}
	long := func(n int) *string { s := strings.Repeat("x", n); return &s }
	n := func(v int) *int { return &v }
	tests := []struct {
		name  string
		in    body
		field string
	}{
		{"valid", body{Name: long(10), Notes: long(MaxTextLen), Tags: []string{"abc"}, Lines: []line{{"ab", 1e12}, {"c", -1e12}},
			Meta: map[string]string{"k": "abcd"}, Raw: json.RawMessage(`"` + strings.Repeat("r", 10000) + `"`), skip: *long(9999)}, ""},
		{"tagged string", body{Name: long(11)}, "name"},
		{"default maximum", body{Notes: long(MaxTextLen + 1)}, "notes"},
		{"list item", body{Tags: []string{"ok", "long"}}, "tags[1]"},
		{"nested string", body{Lines: []line{{"ok", 1}, {"toolong", 1}}}, "lines[1].skuId"},
		{"nested number", body{Lines: []line{{"a", 1}, {"b", 1.7e308}}}, "lines[1].quantity"},
		{"negative number", body{Lines: []line{{"a", -1e12 - 1}}}, "lines[0].quantity"},
		{"NaN", body{Lines: []line{{"a", math.NaN()}}}, "lines[0].quantity"},
		{"integer", body{Count: n(2e12)}, "count"},
		{"map value", body{Meta: map[string]string{"k": "abcde"}}, "meta.k"},
		{"map key", body{Meta: map[string]string{"abcde": "x"}}, "meta"},
		{"interface", body{Any: map[string]any{"q": 1e300}}, "any.q"},
		{"embedded struct", body{Embedded: Embedded{Code: "abcd"}}, "code"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckInput(&tc.in)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("got %v", err)
				}
				return
			}
			detailOf(t, err, tc.field)
		})
	}
	// Many bad fields: the answer names a bounded number of them.
	many := body{}
	for range 100 {
		many.Lines = append(many.Lines, line{SKU: "toolong"})
	}
	var e *Error
	if !errors.As(CheckInput(many), &e) || len(e.Details) != maxInputProblems {
		t.Fatalf("details = %d, want %d", len(e.Details), maxInputProblems)
	}
}

func TestInputTypesBoundEveryString(t *testing.T) {
	huge := strings.Repeat("n", 100_000)
	tests := []struct {
		name, field string
		err         func() error
	}{
		{"scenario name", "name", func() error { return ScenarioInput{Name: &huge}.Validate(true) }},
		{"scenario narrative", "assumptions.narrative", func() error {
			return ScenarioInput{Name: ptr("s"), Assumptions: &AssumptionsInput{Narrative: &huge}}.Validate(true)
		}},
		{"event description", "value.description", func() error {
			_, _, err := EventInput{Name: ptr("e"), StartsAt: ptr("2030-01-01"), EndsAt: ptr("2030-01-02"),
				Value: &EventValueInput{Description: &huge}}.Validate(true, false)
			return err
		}},
		{"trigger message", "message", func() error {
			return TriggerInput{Type: ptr("lowAtp"), Severity: ptr("LOW"), Message: &huge}.Validate()
		}},
		{"alert destination name", "config.destinations[0].name", func() error {
			tr := true
			_, err := AlertConfigInput{Enabled: &tr, Destinations: &[]AlertDestinationInput{{Type: ptr("EMAIL"), Value: ptr("a@b.co"), Name: &huge}}}.
				ResolveConfig(DefaultAlertConfig(), time.Now())
			return err
		}},
		{"api key name", "name", func() error { return APIKeyInput{Role: ptr("ADMIN"), Name: &huge}.Validate() }},
		{"generate unit margin", "unitMargin", func() error { return GenerateInput{UnitMargin: ptr(1e308)}.Validate() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { detailOf(t, tc.err(), tc.field) })
	}
}

func TestTransferNotesAndQuantityBounds(t *testing.T) {
	st := NewTenantState("o")
	now := time.Now().UTC()
	for _, r := range []Record{
		Put(KindProduct, "P", &Product{ID: "P", SKU: "P", Name: "P"}),
		Put(KindLocation, "A", &Location{ID: "A", Name: "A"}),
		Put(KindLocation, "B", &Location{ID: "B", Name: "B"}),
		Put(KindInventory, InventoryKey("P", "A"), &InventoryLevel{SKU: "P", LocationID: "A", QuantityOnHand: 100,
			Bins: map[string]float64{DefaultBin: 100}}),
		Put(KindInventory, InventoryKey("P", "B"), &InventoryLevel{SKU: "P", LocationID: "B", QuantityOnHand: MaxStored - 5,
			Bins: map[string]float64{DefaultBin: MaxStored - 5}}),
	} {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	notes := strings.Repeat("n", 900_000)
	in := TransferInput{ProductMasterID: ptr("P"), SourceLocationID: ptr("A"), DestLocationID: ptr("B"), Quantity: ptr(10.0), Notes: &notes}
	if _, _, err := st.CreateTransfer(in, "k", now); err == nil {
		t.Fatal("900,000 characters of notes accepted on create")
	} else {
		detailOf(t, err, "notes")
	}
	huge := 1e308
	in.Notes, in.Quantity = nil, &huge
	_, _, err := st.CreateTransfer(in, "k", now)
	detailOf(t, err, "quantity")
	in.Quantity = ptr(10.0)
	tr, recs, err := st.CreateTransfer(in, "k", now)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(recs []Record) {
		for _, r := range recs {
			if err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(recs)
	if _, _, err := st.UpdateTransfer(tr.ID, TransferUpdate{Notes: &notes}, "k", now); err == nil {
		t.Fatal("900,000 characters of notes accepted on update")
	} else {
		detailOf(t, err, "notes")
	}
	_, recs, err = st.UpdateTransfer(tr.ID, TransferUpdate{Status: ptr("IN_TRANSIT")}, "k", now)
	if err != nil {
		t.Fatal(err)
	}
	apply(recs)
	// B holds MaxStored-5: receiving 10 would take it beyond what the state keeps.
	_, _, err = st.UpdateTransfer(tr.ID, TransferUpdate{Status: ptr("RECEIVED")}, "k", now)
	detailOf(t, err, "status")
}

func TestNormalizeSignalBounds(t *testing.T) {
	base := func() DemandSignal {
		return DemandSignal{SignalID: "s", OrganizationID: "o", SKU: "P", Location: "L", Quantity: 1,
			OccurredAt: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)}
	}
	for _, tc := range []struct {
		name, field string
		mutate      func(*DemandSignal)
	}{
		{"max quantity", "", func(s *DemandSignal) { s.Quantity = -1e12 }},
		{"1.7e308", "quantity", func(s *DemandSignal) { s.Quantity = 1.7e308 }},
		{"infinite", "quantity", func(s *DemandSignal) { s.Quantity = math.Inf(1) }},
		{"before 1970-01-05", "occurredAt", func(s *DemandSignal) { s.OccurredAt = time.Date(1969, 12, 29, 0, 0, 0, 0, time.UTC) }},
		{"year 9999", "occurredAt", func(s *DemandSignal) { s.OccurredAt = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC) }},
		{"long channel", "channel", func(s *DemandSignal) { s.Channel = strings.Repeat("c", MaxSignalIDLen+1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.mutate(&s)
			err := NormalizeSignal(&s)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			detailOf(t, err, tc.field)
		})
	}
}
