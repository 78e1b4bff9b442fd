package supplyplan

import (
	"testing"
	"time"
)

func TestEventInputValidate(t *testing.T) {
	ok := func(in EventInput) EventInput {
		if in.Name == nil {
			in.Name = ptr("e")
		}
		if in.StartsAt == nil {
			in.StartsAt = ptr("2030-01-01")
		}
		if in.EndsAt == nil {
			in.EndsAt = ptr("2030-01-08T00:00:00Z")
		}
		return in
	}
	tests := []struct {
		name     string
		in       EventInput
		platform bool
		field    string
	}{
		{"valid", ok(EventInput{}), false, ""},
		{"no name", EventInput{StartsAt: ptr("2030-01-01"), EndsAt: ptr("2030-01-02")}, false, "name"},
		{"no dates", EventInput{Name: ptr("e")}, false, "startsAt"},
		{"bad date", ok(EventInput{EndsAt: ptr("next week")}), false, "endsAt"},
		{"bad type", ok(EventInput{Type: ptr("FEST")}), false, "type"},
		{"lift min", ok(EventInput{Value: &EventValueInput{LiftPct: ptr(-0.99)}}), false, ""},
		{"lift below", ok(EventInput{Value: &EventValueInput{LiftPct: ptr(-0.991)}}), false, "value.liftPct"},
		{"lift above", ok(EventInput{Value: &EventValueInput{LiftPct: ptr(5.5)}}), false, "value.liftPct"},
		{"stacking", ok(EventInput{Value: &EventValueInput{StackingMode: ptr("MAX")}}), false, "value.stackingMode"},
		{"tenant global", ok(EventInput{IsGlobal: ptr(true)}), false, "isGlobal"},
		{"platform scoped", ok(EventInput{ProductMasterID: ptr("p")}), true, "productMasterId"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.in.Validate(true, tc.platform)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if e, ok := err.(*Error); !ok || len(e.Details[tc.field]) == 0 {
				t.Fatalf("got %v, want error on %s", err, tc.field)
			}
		})
	}
}

func TestEventUpdateRules(t *testing.T) {
	now := time.Now().UTC()
	d := func(s string) time.Time { t, _ := ParseTime(s); return t }
	in := EventInput{Name: ptr("e"), StartsAt: ptr("2030-01-01"), EndsAt: ptr("2030-01-05"), ProductMasterID: ptr("p")}
	e, err := NewEvent("e1", in, d("2030-01-01"), d("2030-01-05"), false, now)
	if err != nil || e.IsOrgWide || e.Type != EventOther {
		t.Fatalf("new = %+v %v", e, err)
	}
	// Clearing the product makes it org-wide.
	e2, err := e.Update(EventInput{ProductMasterID: ptr("")}, time.Time{}, time.Time{}, now)
	if err != nil || !e2.IsOrgWide {
		t.Fatalf("cleared product = %+v %v", e2, err)
	}
	if _, err := e.Update(EventInput{IsOrgWide: ptr(true)}, time.Time{}, time.Time{}, now); err == nil {
		t.Fatal("isOrgWide true with a product accepted")
	}
	if _, err := e.Update(EventInput{EndsAt: ptr("2029-01-01")}, time.Time{}, d("2029-01-01"), now); err == nil {
		t.Fatal("endsAt before startsAt accepted")
	}
	if e.Stacking() != StackMultiplicative {
		t.Fatal("default stacking is not MULTIPLICATIVE")
	}
}

func TestEventFilterOverlapAndScope(t *testing.T) {
	d := func(s string) time.Time { t, _ := ParseTime(s); return t }
	f := EventFilter{From: d("2030-01-10"), To: d("2030-01-20"), IncludeGlobal: true, IncludeOrgWide: true, ProductMasterID: "p1", LocationID: "l1"}
	ev := func(start, end, p, l string, global bool) *ExternalEvent {
		e := &ExternalEvent{StartsAt: d(start), EndsAt: d(end), ProductMasterID: p, LocationID: l, IsGlobal: global}
		e.IsOrgWide = !global && p == "" && l == ""
		return e
	}
	tests := []struct {
		name string
		e    *ExternalEvent
		want bool
	}{
		{"inside", ev("2030-01-11", "2030-01-12", "p1", "", false), true},
		{"straddles start", ev("2030-01-01", "2030-01-11", "p1", "", false), true},
		{"ends at the window start", ev("2030-01-01", "2030-01-10", "p1", "", false), false},
		{"straddles end", ev("2030-01-20", "2030-01-25", "p1", "", false), true},
		{"covers window", ev("2030-01-01", "2030-02-01", "p1", "l1", false), true},
		{"before", ev("2030-01-01", "2030-01-09", "p1", "", false), false},
		{"after", ev("2030-01-21", "2030-01-25", "p1", "", false), false},
		{"other product", ev("2030-01-11", "2030-01-12", "p2", "", false), false},
		{"other location", ev("2030-01-11", "2030-01-12", "", "l2", false), false},
		{"location only, same", ev("2030-01-11", "2030-01-12", "", "l1", false), true},
		{"org-wide", ev("2030-01-11", "2030-01-12", "", "", false), true},
		{"global", ev("2030-01-11", "2030-01-12", "", "", true), true},
	}
	for _, tc := range tests {
		if got := f.Match(tc.e); got != tc.want {
			t.Errorf("%s: match = %v, want %v", tc.name, got, tc.want)
		}
	}
	f.IncludeGlobal, f.IncludeOrgWide = false, false
	if f.Match(ev("2030-01-11", "2030-01-12", "", "", true)) || f.Match(ev("2030-01-11", "2030-01-12", "", "", false)) {
		t.Error("flags false still include global/org-wide events")
	}
}

func TestParseTimeAndWeeks(t *testing.T) {
	for in, want := range map[string]string{
		"2026-11-23":                "2026-11-23T00:00:00Z",
		"2026-11-23T10:00:00Z":      "2026-11-23T10:00:00Z",
		"2026-11-23T10:00:00+02:00": "2026-11-23T08:00:00Z",
		"2026-11-23T10:00:00":       "2026-11-23T10:00:00Z",
	} {
		got, ok := ParseTime(in)
		if !ok || got.Format(time.RFC3339) != want {
			t.Errorf("ParseTime(%q) = %v %v, want %s", in, got, ok, want)
		}
	}
	if _, ok := ParseTime("23/11/2026"); ok {
		t.Error("non-ISO date accepted")
	}
	// 2026-11-26 is a Thursday; its ISO week starts Monday 2026-11-23. Sunday belongs to the week before.
	for in, want := range map[string]string{"2026-11-26": "2026-11-23", "2026-11-23": "2026-11-23", "2026-11-29T23:59:00Z": "2026-11-23", "2026-11-22": "2026-11-16"} {
		d, _ := ParseTime(in)
		if got := WeekStart(d).Format("2006-01-02"); got != want {
			t.Errorf("WeekStart(%s) = %s, want %s", in, got, want)
		}
	}
}
