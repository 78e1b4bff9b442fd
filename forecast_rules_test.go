package supplyplan

import (
	"testing"
	"time"
)

// applyAll applies a transaction's records to st.
func applyAll(t *testing.T, st *TenantState, recs []Record) {
	t.Helper()
	for _, r := range recs {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
}

// scenarioWith creates a scenario in st, publishes it when published, and stores one version per
// total (oldest first).
func scenarioWith(t *testing.T, st *TenantState, name string, published bool, totals ...float64) Scenario {
	t.Helper()
	now := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	sc, recs, err := st.CreateScenario(ScenarioInput{Name: ptr(name)}, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	applyAll(t, st, recs)
	if published {
		p, recs, err := st.PublishScenario(sc.ID, now)
		if err != nil {
			t.Fatal(err)
		}
		applyAll(t, st, recs)
		sc = p
	}
	for _, total := range totals {
		v := NewForecastVersion(sc.ID, "test", 2, time.Time{}, now, []WeekTotal{{Quantity: Quantity(total)}}, nil)
		applyAll(t, st, st.AddForecastVersion(v))
	}
	return sc
}

// The forecast of record is the newest version of the published scenarios, whatever scenario it
// belongs to; drafts, archived scenarios and the scenario being published do not count.
func TestForecastOfRecord(t *testing.T) {
	st := NewTenantState("org")
	if _, ok := st.ForecastOfRecord(""); ok {
		t.Fatal("an empty tenant has a forecast of record")
	}
	a := scenarioWith(t, st, "a", true, 100, 110)
	scenarioWith(t, st, "draft", false, 999)
	b := scenarioWith(t, st, "b", true, 120)
	got, ok := st.ForecastOfRecord("")
	if !ok || got.TotalQuantity != 120 || got.ScenarioID != b.ID {
		t.Fatalf("forecast of record = %+v, want b's 120", got)
	}
	if got, _ := st.ForecastOfRecord(b.ID); got.TotalQuantity != 110 || got.ScenarioID != a.ID {
		t.Fatalf("forecast of record without b = %+v, want a's newest, 110", got)
	}
	scenarioWith(t, st, "c", true) // published, never generated
	if got, _ := st.ForecastOfRecord(""); got.TotalQuantity != 120 {
		t.Fatalf("a scenario without versions changed the forecast of record: %+v", got)
	}
}

// Publishing records the forecast of record moving to the scenario's newest version; a scenario
// never generated leaves the new total unknown and says so.
func TestPublishChange(t *testing.T) {
	now := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	sc := Scenario{ID: "scn_1", Name: "Spring"}
	prev, next := &ForecastVersion{TotalQuantity: 100}, &ForecastVersion{TotalQuantity: 130.5}
	ch := PublishChange(sc, prev, next, "key:k1", now)
	if ch.ChangeType != ChangePublish || ch.ScenarioID != "scn_1" || ch.Actor != "key:k1" || !ch.CreatedAt.Equal(now) {
		t.Fatalf("entry = %+v", ch)
	}
	if ch.PreviousTotal == nil || *ch.PreviousTotal != 100 || ch.NewTotal == nil || *ch.NewTotal != 130.5 || ch.Delta == nil || *ch.Delta != 30.5 {
		t.Fatalf("totals %v -> %v (%v), want 100 -> 130.5 (30.5)", ch.PreviousTotal, ch.NewTotal, ch.Delta)
	}
	if ch.Reason != `scenario "Spring" published` {
		t.Fatalf("reason %q", ch.Reason)
	}
	first := PublishChange(sc, nil, nil, "key:k1", now)
	if first.PreviousTotal != nil || first.NewTotal != nil || first.Delta != nil {
		t.Fatalf("no versions: totals %v -> %v", first.PreviousTotal, first.NewTotal)
	}
	if first.Reason != `scenario "Spring" published (not generated yet: no forecast total)` {
		t.Fatalf("reason %q", first.Reason)
	}
}

func TestGenerateWindow(t *testing.T) {
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		in      GenerateScenarioInput
		horizon int
		asOf    time.Time
		field   string // the field of the VALIDATION_ERROR ("": none)
	}{
		{"defaults", GenerateScenarioInput{}, DefaultHorizonWeeks, time.Time{}, ""},
		{"a horizon", GenerateScenarioInput{HorizonWeeks: ptr(26)}, 26, time.Time{}, ""},
		{"the longest horizon", GenerateScenarioInput{HorizonWeeks: ptr(MaxHorizonWeeks)}, MaxHorizonWeeks, time.Time{}, ""},
		{"a zero horizon", GenerateScenarioInput{HorizonWeeks: ptr(0)}, 0, time.Time{}, "horizonWeeks"},
		{"too long a horizon", GenerateScenarioInput{HorizonWeeks: ptr(MaxHorizonWeeks + 1)}, 0, time.Time{}, "horizonWeeks"},
		{"a past as-of date", GenerateScenarioInput{AsOf: ptr("2026-01-05")}, DefaultHorizonWeeks, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), ""},
		{"a future as-of date", GenerateScenarioInput{AsOf: ptr("2026-06-01")}, 0, time.Time{}, "asOf"},
		{"an as-of date that is no date", GenerateScenarioInput{AsOf: ptr("soon")}, 0, time.Time{}, "asOf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, asOf, err := tt.in.Window(now)
			if tt.field != "" {
				if !hasDetail(err, tt.field) {
					t.Fatalf("err = %v, want a VALIDATION_ERROR naming %s", err, tt.field)
				}
				return
			}
			if err != nil || h != tt.horizon || !asOf.Equal(tt.asOf) {
				t.Fatalf("Window() = %d, %v, %v; want %d, %v", h, asOf, err, tt.horizon, tt.asOf)
			}
		})
	}
}

func hasDetail(err error, field string) bool {
	e, ok := err.(*Error)
	return ok && e.Code == EVALIDATION && len(e.Details[field]) > 0
}

// A version starts on the Monday of its as-of date (or of now), with rounded totals; its change
// entry goes from the previous version's total and names the one product or location asked for.
func TestForecastVersionAndGenerateChange(t *testing.T) {
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC) // a Wednesday
	weekly := []WeekTotal{{Quantity: 10.004, Baseline: 8}, {Quantity: 20.002, Baseline: 9}}
	v := NewForecastVersion("scn_1", "key:k", 2, time.Time{}, now, weekly, []VersionSeries{{SKU: "P"}})
	if !v.Start.Equal(time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)) || v.TotalQuantity != 30.01 || v.TotalBaseline != 17 ||
		v.ScenarioID != "scn_1" || v.GeneratedBy != "key:k" || v.HorizonWeeks != 2 {
		t.Fatalf("version = %+v", v)
	}
	past := NewForecastVersion("scn_1", "key:k", 2, time.Date(2026, 1, 7, 0, 0, 0, 0, time.UTC), now, weekly, nil)
	if !past.Start.Equal(time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("backfilled version starts %v", past.Start)
	}
	ch := GenerateChange(v, &ForecastVersion{TotalQuantity: 25}, []string{"P"}, []string{"L1", "L2"}, "key:k", now)
	if ch.ChangeType != ChangeGenerate || ch.ScenarioID != "scn_1" || ch.HorizonWeeks != 2 || ch.SeriesCount != 1 ||
		ch.ProductMasterID != "P" || ch.LocationID != "" || *ch.PreviousTotal != 25 || *ch.NewTotal != 30.01 || *ch.Delta != 5.01 {
		t.Fatalf("entry = %+v", ch)
	}
	if first := GenerateChange(v, nil, nil, nil, "key:k", now); first.PreviousTotal != nil || first.Delta != nil || *first.NewTotal != 30.01 {
		t.Fatalf("first generation: %v -> %v", first.PreviousTotal, first.NewTotal)
	}
	if err := (Scenario{Status: ScenarioArchived}).CheckGenerate(); ErrorCode(err) != ECONFLICT {
		t.Fatalf("generate an archived scenario: %v", err)
	}
	if err := (Scenario{Status: ScenarioPublished}).CheckGenerate(); err != nil {
		t.Fatal(err)
	}
}

func TestCompareWindowAndDeltas(t *testing.T) {
	ids := func(n int) *[]string { s := make([]string, n); return &s }
	if _, err := (CompareInput{ScenarioIDs: ids(1)}).Window(); !hasDetail(err, "scenarioIds") {
		t.Fatalf("one scenario: %v", err)
	}
	if _, err := (CompareInput{ScenarioIDs: ids(11)}).Window(); !hasDetail(err, "scenarioIds") {
		t.Fatalf("eleven scenarios: %v", err)
	}
	if _, err := (CompareInput{ScenarioIDs: ids(2), HorizonWeeks: ptr(0)}).Window(); !hasDetail(err, "horizonWeeks") {
		t.Fatalf("zero horizon: %v", err)
	}
	if h, err := (CompareInput{ScenarioIDs: ids(10)}).Window(); err != nil || h != DefaultHorizonWeeks {
		t.Fatalf("ten scenarios: %d %v", h, err)
	}
	first := ScenarioComparison{TotalQuantity: 40, Weekly: []WeekTotal{{Quantity: 10}, {Quantity: 30}}}
	first.CompareWith(nil)
	if *first.DeltaPctVsFirst != 0 || len(first.WeeklyDeltaVsFirst) != 2 || first.DeltaVsFirst != 0 {
		t.Fatalf("first = %+v", first)
	}
	c := ScenarioComparison{TotalQuantity: 50, Weekly: []WeekTotal{{Quantity: 15}, {Quantity: 35}}}
	c.CompareWith(&first)
	if c.DeltaVsFirst != 10 || *c.DeltaPctVsFirst != 0.25 || c.WeeklyDeltaVsFirst[0] != 5 || c.WeeklyDeltaVsFirst[1] != 5 {
		t.Fatalf("second = %+v", c)
	}
	zero := ScenarioComparison{Weekly: []WeekTotal{{}, {}}}
	c.CompareWith(&zero)
	if c.DeltaPctVsFirst == nil || c.DeltaVsFirst != 50 {
		// the percentage of the previous call stays: only a non-zero first total sets one
		t.Fatalf("against a zero total: %+v", c)
	}
}

// The long-term window: months from the current one, whole quarters from the current one, and
// enough weeks from this week to cover them.
func TestLongTermWindow(t *testing.T) {
	now := time.Date(2026, 5, 20, 15, 0, 0, 0, time.UTC)
	first, end, weeks := LongTermWindow(now, 3, GranularityMonth)
	if !first.Equal(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)) || !end.Equal(time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("months: %v to %v", first, end)
	}
	if w := WeekStart(now).Add(time.Duration(weeks) * weekDuration); w.Before(end) || w.Add(-weekDuration).After(end) {
		t.Fatalf("%d weeks from %v end %v, not the first week past %v", weeks, WeekStart(now), w, end)
	}
	first, end, _ = LongTermWindow(now, 3, GranularityQuarter)
	if !first.Equal(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)) || !end.Equal(time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("quarters: %v to %v (May to July covers Q2 and Q3)", first, end)
	}
	if got := BucketLabel(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), GranularityQuarter); got != "2026-Q3" {
		t.Fatalf("quarter label %q", got)
	}
	if got := BucketLabel(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), GranularityMonth); got != "2026-07" {
		t.Fatalf("month label %q", got)
	}
	if m, g, i, err := LongTermOptions(0, "", 0); err != nil || m != 18 || g != GranularityMonth || i != 0.8 {
		t.Fatalf("defaults: %d %s %v %v", m, g, i, err)
	}
	_, _, _, err := LongTermOptions(37, "WEEK", 0.7)
	for _, f := range []string{"horizonMonths", "granularity", "interval"} {
		if !hasDetail(err, f) {
			t.Errorf("error %v does not name %s", err, f)
		}
	}
}

// Accuracy scores each (series, week) against the version with the latest cut-off before it,
// the newest of equal cut-offs.
func TestRecordedForecasts(t *testing.T) {
	now := time.Date(2026, 5, 20, 0, 0, 0, 0, time.UTC)
	weeks, from, to, err := AccuracyQuery{WindowWeeks: 4}.AccuracyWindow(now)
	if err != nil || weeks != 4 || !to.Equal(WeekStart(now)) || !from.Equal(to.Add(-4*weekDuration)) {
		t.Fatalf("window %d %v..%v %v", weeks, from, to, err)
	}
	if _, _, _, err := (AccuracyQuery{WindowWeeks: 105}).AccuracyWindow(now); !hasDetail(err, "windowWeeks") {
		t.Fatalf("105 weeks: %v", err)
	}
	w := func(i int) time.Time { return from.Add(time.Duration(i) * weekDuration) }
	series := func(q ...float64) []VersionSeries { return []VersionSeries{{SKU: "P", Location: "L", Quantity: q}} }
	versions := []ForecastVersion{
		{ID: "fv_1", ScenarioID: "a", Start: w(-1), Series: series(1, 1, 1, 1)}, // weeks -1..2
		{ID: "fv_2", ScenarioID: "a", Start: w(1), Series: series(2, 2, 2)},     // weeks 1..3
		{ID: "fv_3", ScenarioID: "b", Start: w(1), Series: series(3, 3)},        // weeks 1..2, newer at the same cut-off
		{ID: "fv_4", ScenarioID: "a", Start: w(4), Series: series(4)},           // week 4: outside the window
		{ID: "fv_5", ScenarioID: "a", Start: w(0), Series: []VersionSeries{{SKU: "Q", Location: "L", Quantity: []float64{5}}}},
	}
	got, used := RecordedForecasts(versions, "", "P", "", from, to)
	key := DemandKey{SKU: "P", Location: "L", Channel: ChannelAll}
	want := map[int]float64{0: 1, 1: 3, 2: 3, 3: 2}
	if len(got) != len(want) || used != 3 {
		t.Fatalf("got %v from %d versions, want %v from 3", got, used, want)
	}
	for i, q := range want {
		if got[SeriesWeek{key, w(i)}] != q {
			t.Errorf("week %d = %v, want %v", i, got[SeriesWeek{key, w(i)}], q)
		}
	}
	if got, _ := RecordedForecasts(versions, "a", "P", "", from, to); got[SeriesWeek{key, w(1)}] != 2 {
		t.Errorf("scenario a, week 1 = %v, want fv_2's 2", got[SeriesWeek{key, w(1)}])
	}
}

// An event weighs its share of the week's days, scaled by its intensity (clamped to [0, 1]).
func TestEventWeight(t *testing.T) {
	ws := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	day := func(d float64) time.Time { return ws.Add(time.Duration(d * 24 * float64(time.Hour))) }
	tests := []struct {
		name       string
		start, end time.Time
		intensity  *float64
		want       float64
	}{
		{"the whole week", day(-3), day(10), nil, 1},
		{"two days", day(2), day(4), nil, 2.0 / 7},
		{"before the week", day(-5), day(0), nil, 0},
		{"after the week", day(7), day(9), nil, 0},
		{"half intensity", day(0), day(7), ptr(0.5), 0.5},
		{"intensity above 1", day(0), day(7), ptr(3.0), 1},
		{"negative intensity", day(0), day(7), ptr(-1.0), 0},
		{"an empty event", day(3), day(3), nil, 0},
	}
	for _, tt := range tests {
		if got := EventWeight(tt.start, tt.end, tt.intensity, ws); got < tt.want-1e-12 || got > tt.want+1e-12 {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	e := ExternalEvent{StartsAt: day(2), EndsAt: day(4), Value: &EventValue{Intensity: ptr(0.5)}}
	if got := e.WeekWeight(ws); got < 1.0/7-1e-12 || got > 1.0/7+1e-12 {
		t.Errorf("ExternalEvent.WeekWeight = %v, want 1/7", got)
	}
}
