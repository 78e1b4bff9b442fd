// Package storetest is the conformance suite of supplyplan.DemandStore: analytics runs it against the
// embedded store and against ClickHouse, so both answer every question the same way.
package storetest

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// Opener prepares the storage of one test and returns a function that opens a store over it. The
// first store opened is empty; a later one sees everything earlier ones wrote (the suite closes a
// store before it opens the next). The opener closes every store it opened and removes the storage
// in t.Cleanup.
type Opener func(t *testing.T) (open func() supplyplan.DemandStore)

// Run runs every conformance test against the stores of opener.
func Run(t *testing.T, opener Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open func() supplyplan.DemandStore)
	}{
		{"UpsertReplaces", testUpsertReplaces},
		{"SignalsAdd", testSignalsAdd},
		{"DuplicateSignals", testDuplicateSignals},
		{"ChannelAll", testChannelAll},
		{"SeriesRange", testSeriesRange},
		{"SeriesBatch", testSeriesBatch},
		{"KeysSorted", testKeysSorted},
		{"KeyPage", testKeyPage},
		{"Aggregate", testAggregate},
		{"TenantIsolation", testTenantIsolation},
		{"LargeBatch", testLargeBatch},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Validation", testValidation},
		{"Reopen", testReopen},
		{"SignalWindow", testSignalWindow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, opener(t))
		})
	}
}

// Week returns the Monday of ISO week n of 2024 (week 1 starts 2024-01-01).
func Week(n int) time.Time {
	return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*(n-1))
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// MustUpsert writes rows or fails the test.
func MustUpsert(tb testing.TB, s supplyplan.DemandStore, org string, rows ...supplyplan.DemandRow) {
	tb.Helper()
	if err := s.UpsertWeeks(context.Background(), org, rows); err != nil {
		tb.Fatalf("UpsertWeeks(%s, %d rows): %v", org, len(rows), err)
	}
}

// MustSignals adds signals or fails the test; it returns whether each was written.
func MustSignals(tb testing.TB, s supplyplan.DemandStore, org string, signals ...supplyplan.DemandSignal) []bool {
	tb.Helper()
	writes := MustSignalWrites(tb, s, org, signals...)
	fresh := make([]bool, len(writes))
	for i, w := range writes {
		fresh[i] = w == supplyplan.SignalWritten
	}
	return fresh
}

// MustSignalWrites adds signals or fails the test; it returns what became of each.
func MustSignalWrites(tb testing.TB, s supplyplan.DemandStore, org string, signals ...supplyplan.DemandSignal) []supplyplan.SignalWrite {
	tb.Helper()
	writes, err := s.AddSignals(context.Background(), org, signals)
	if err != nil {
		tb.Fatalf("AddSignals(%s, %d signals): %v", org, len(signals), err)
	}
	if len(writes) != len(signals) {
		tb.Fatalf("AddSignals returned %d outcomes for %d signals", len(writes), len(signals))
	}
	return writes
}

// MustSeries reads a series or fails the test.
func MustSeries(tb testing.TB, s supplyplan.DemandStore, org string, key supplyplan.DemandKey, from, to time.Time) []supplyplan.WeekValue {
	tb.Helper()
	got, err := s.Series(context.Background(), org, key, from, to)
	if err != nil {
		tb.Fatalf("Series(%s, %+v): %v", org, key, err)
	}
	return got
}

func row(sku, loc, ch string, week int, actual, forecast float64) supplyplan.DemandRow {
	return supplyplan.DemandRow{SKU: sku, Location: loc, Channel: ch, Week: Week(week), Actual: actual, Forecasted: forecast}
}

func signal(id, sku, loc, ch string, at time.Time, qty float64) supplyplan.DemandSignal {
	return supplyplan.DemandSignal{SignalID: id, SKU: sku, Location: loc, Channel: ch, OccurredAt: at, Quantity: qty}
}

func wv(week int, actual, forecast float64, stockout bool) supplyplan.WeekValue {
	return supplyplan.WeekValue{Week: Week(week), Actual: actual, Forecasted: forecast, Stockout: stockout}
}

func key(sku, loc, ch string) supplyplan.DemandKey {
	return supplyplan.DemandKey{SKU: sku, Location: loc, Channel: ch}
}

// equalWeeks compares week lists by instant (time zones aside).
func equalWeeks(got, want []supplyplan.WeekValue) bool {
	return slices.EqualFunc(got, want, func(a, b supplyplan.WeekValue) bool {
		return a.Week.Equal(b.Week) && a.Actual == b.Actual && a.Forecasted == b.Forecasted && a.Stockout == b.Stockout
	})
}

func checkWeeks(tb testing.TB, what string, got, want []supplyplan.WeekValue) {
	tb.Helper()
	if !equalWeeks(got, want) {
		tb.Errorf("%s:\n got %s\nwant %s", what, fmtWeeks(got), fmtWeeks(want))
	}
	for _, w := range got {
		if w.Week.Location() != time.UTC {
			tb.Errorf("%s: week %v is not in UTC", what, w.Week)
			break
		}
	}
}

func fmtWeeks(ws []supplyplan.WeekValue) string {
	s := "["
	for i, w := range ws {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s:%g/%g", w.Week.Format("2006-01-02"), w.Actual, w.Forecasted)
		if w.Stockout {
			s += "!"
		}
	}
	return s + "]"
}

func testUpsertReplaces(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	k := key("S1", "L1", "WEB")
	MustUpsert(t, s, "org", row("S1", "L1", "WEB", 1, 10, 12), row("S1", "L1", "WEB", 2, 20, 22))
	MustUpsert(t, s, "org", supplyplan.DemandRow{SKU: "S1", Location: "L1", Channel: "WEB", Week: Week(1),
		Actual: 7, Forecasted: 9, Stockout: true})
	checkWeeks(t, "after re-import of week 1", MustSeries(t, s, "org", k, time.Time{}, time.Time{}),
		[]supplyplan.WeekValue{wv(1, 7, 9, true), wv(2, 20, 22, false)})

	// Within one call the last row of a week wins; a stockout is cleared by a re-import without it.
	MustUpsert(t, s, "org", row("S1", "L1", "WEB", 1, 1, 1), row("S1", "L1", "WEB", 1, 5, 6))
	checkWeeks(t, "after two rows of week 1 in one call", MustSeries(t, s, "org", k, time.Time{}, time.Time{}),
		[]supplyplan.WeekValue{wv(1, 5, 6, false), wv(2, 20, 22, false)})

	// A week given as any day is bucketed to its ISO Monday; the empty channel is stored as ALL.
	MustUpsert(t, s, "org", supplyplan.DemandRow{SKU: "S2", Location: "L1", Week: Week(3).AddDate(0, 0, 3).Add(15 * time.Hour),
		Actual: 4, Forecasted: 4})
	checkWeeks(t, "row dated on a Thursday", MustSeries(t, s, "org", key("S2", "L1", supplyplan.ChannelAll), time.Time{}, time.Time{}),
		[]supplyplan.WeekValue{wv(3, 4, 4, false)})
	keys, err := s.Keys(ctxFor(t), "org")
	if err != nil {
		t.Fatal(err)
	}
	want := []supplyplan.DemandKey{k, key("S2", "L1", supplyplan.ChannelAll)}
	if !slices.Equal(keys, want) {
		t.Errorf("Keys = %v, want %v", keys, want)
	}
}

func testSignalsAdd(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	k := key("S1", "L1", "WEB")
	MustUpsert(t, s, "org", row("S1", "L1", "WEB", 5, 10, 12))
	wed := Week(5).AddDate(0, 0, 2).Add(13 * time.Hour)
	fresh := MustSignals(t, s, "org",
		signal("sig-1", "S1", "L1", "WEB", wed, 3),
		signal("sig-2", "S1", "L1", "WEB", Week(6).Add(-time.Second), 2), // Sunday 23:59:59 of week 5
		signal("sig-3", "S1", "L1", "WEB", Week(7).Add(30*time.Minute), 4),
	)
	if !slices.Equal(fresh, []bool{true, true, true}) {
		t.Errorf("fresh = %v, want all true", fresh)
	}
	checkWeeks(t, "imported week plus signals, signal-only week", MustSeries(t, s, "org", k, time.Time{}, time.Time{}),
		[]supplyplan.WeekValue{wv(5, 15, 12, false), wv(7, 4, 0, false)})

	// The week of a signal is the ISO Monday of OccurredAt in UTC: Monday 01:00 at +02:00 is Sunday.
	plus2 := time.FixedZone("+02", 2*3600)
	mon := Week(9)
	MustSignals(t, s, "org", signal("sig-4", "S1", "L1", "WEB", time.Date(mon.Year(), mon.Month(), mon.Day(), 1, 0, 0, 0, plus2), 1))
	got := MustSeries(t, s, "org", k, Week(8), Week(9))
	checkWeeks(t, "signal at Monday 01:00+02:00", got, []supplyplan.WeekValue{wv(8, 1, 0, false)})

	// A re-import replaces the imported part only: the signals stay.
	MustUpsert(t, s, "org", supplyplan.DemandRow{SKU: "S1", Location: "L1", Channel: "WEB", Week: Week(5), Actual: 1, Forecasted: 2, Stockout: true})
	checkWeeks(t, "re-import after signals", MustSeries(t, s, "org", k, Week(5), Week(5)),
		[]supplyplan.WeekValue{wv(5, 6, 2, true)})

	// A signal without a channel counts under ALL.
	MustSignals(t, s, "org", signal("sig-5", "S9", "L1", "", Week(5), 2.5))
	checkWeeks(t, "signal without channel", MustSeries(t, s, "org", key("S9", "L1", supplyplan.ChannelAll), time.Time{}, time.Time{}),
		[]supplyplan.WeekValue{wv(5, 2.5, 0, false)})
	keys, err := s.Keys(ctxFor(t), "org")
	if err != nil {
		t.Fatal(err)
	}
	if want := []supplyplan.DemandKey{k, key("S9", "L1", "ALL")}; !slices.Equal(keys, want) {
		t.Errorf("Keys = %v, want %v", keys, want)
	}
}

func testDuplicateSignals(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	k := key("S1", "L1", "WEB")
	at := Week(3).Add(time.Hour)
	if got := MustSignals(t, s, "org", signal("a", "S1", "L1", "WEB", at, 1), signal("b", "S1", "L1", "WEB", at, 2)); !slices.Equal(got, []bool{true, true}) {
		t.Errorf("first delivery: fresh = %v", got)
	}
	// Redeliveries (even with other values) change nothing; a repeat inside one call counts once.
	got := MustSignals(t, s, "org", signal("b", "S1", "L1", "WEB", at, 200), signal("c", "S1", "L1", "WEB", at, 4),
		signal("c", "S1", "L1", "WEB", at, 4))
	if !slices.Equal(got, []bool{false, true, false}) {
		t.Errorf("redelivery: fresh = %v, want [false true false]", got)
	}
	checkWeeks(t, "after redelivery", MustSeries(t, s, "org", k, time.Time{}, time.Time{}), []supplyplan.WeekValue{wv(3, 7, 0, false)})

	// Ids are per organization.
	if got := MustSignals(t, s, "other", signal("a", "S1", "L1", "WEB", at, 1)); !slices.Equal(got, []bool{true}) {
		t.Errorf("same id in another organization: fresh = %v, want [true]", got)
	}

	// And they are remembered across a restart.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	got = MustSignals(t, s, "org", signal("a", "S1", "L1", "WEB", at, 1), signal("d", "S1", "L1", "WEB", at, 8))
	if !slices.Equal(got, []bool{false, true}) {
		t.Errorf("after restart: fresh = %v, want [false true]", got)
	}
	checkWeeks(t, "after restart", MustSeries(t, s, "org", k, time.Time{}, time.Time{}), []supplyplan.WeekValue{wv(3, 15, 0, false)})
	checkWeeks(t, "other organization", MustSeries(t, s, "other", k, time.Time{}, time.Time{}), []supplyplan.WeekValue{wv(3, 1, 0, false)})
}

func testChannelAll(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	MustUpsert(t, s, "org",
		row("S1", "L1", "WEB", 1, 10, 11), row("S1", "L1", "WEB", 2, 20, 21),
		row("S1", "L1", "STORE", 1, 100, 101),
		row("S1", "L1", "ALL", 2, 1000, 1001), row("S1", "L1", "ALL", 3, 3, 3),
		row("S1", "L2", "WEB", 1, 7, 7), // other location
		row("S2", "L1", "WEB", 1, 9, 9), // other sku
	)
	MustUpsert(t, s, "org", supplyplan.DemandRow{SKU: "S1", Location: "L1", Channel: "STORE", Week: Week(2), Actual: 5, Forecasted: 5, Stockout: true})
	MustSignals(t, s, "org", signal("x", "S1", "L1", "STORE", Week(3), 1), signal("y", "S1", "L1", "", Week(3), 2))
	want := []supplyplan.WeekValue{wv(1, 110, 112, false), wv(2, 1025, 1027, true), wv(3, 6, 3, false)}
	checkWeeks(t, "channel ALL", MustSeries(t, s, "org", key("S1", "L1", supplyplan.ChannelAll), time.Time{}, time.Time{}), want)
	checkWeeks(t, "empty channel", MustSeries(t, s, "org", key("S1", "L1", ""), time.Time{}, time.Time{}), want)
	checkWeeks(t, "channel WEB", MustSeries(t, s, "org", key("S1", "L1", "WEB"), time.Time{}, time.Time{}),
		[]supplyplan.WeekValue{wv(1, 10, 11, false), wv(2, 20, 21, false)})
	checkWeeks(t, "channel ALL, week 2 only", MustSeries(t, s, "org", key("S1", "L1", supplyplan.ChannelAll), Week(2), Week(2)),
		[]supplyplan.WeekValue{wv(2, 1025, 1027, true)})
	if got := MustSeries(t, s, "org", key("S1", "L3", supplyplan.ChannelAll), time.Time{}, time.Time{}); len(got) != 0 {
		t.Errorf("unknown location: %s, want nothing", fmtWeeks(got))
	}
}

func testSeriesRange(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	k := key("S1", "L1", "WEB")
	var rows []supplyplan.DemandRow
	for w := 10; w >= 1; w-- { // written newest first: reads are oldest first anyway
		rows = append(rows, row("S1", "L1", "WEB", w, float64(w), float64(10*w)))
	}
	MustUpsert(t, s, "org", rows...)
	weeks := func(from, to int) []supplyplan.WeekValue {
		var out []supplyplan.WeekValue
		for w := from; w <= to; w++ {
			out = append(out, wv(w, float64(w), float64(10*w), false))
		}
		return out
	}
	cases := []struct {
		name     string
		from, to time.Time
		want     []supplyplan.WeekValue
	}{
		{"unbounded", time.Time{}, time.Time{}, weeks(1, 10)},
		{"inclusive", Week(3), Week(5), weeks(3, 5)},
		{"from only", Week(8), time.Time{}, weeks(8, 10)},
		{"to only", time.Time{}, Week(2), weeks(1, 2)},
		{"from mid-week excludes that week", Week(3).AddDate(0, 0, 2), Week(5), weeks(4, 5)},
		{"to mid-week includes that week", Week(3), Week(5).AddDate(0, 0, 4).Add(5 * time.Hour), weeks(3, 5)},
		{"from later in the Monday still includes it", Week(3).Add(10 * time.Hour), Week(3), weeks(3, 3)},
		{"other time zone", Week(3).In(time.FixedZone("-05", -5*3600)), Week(4).In(time.FixedZone("+09", 9*3600)), weeks(3, 4)},
		{"empty", Week(11), Week(20), nil},
		{"inverted", Week(5), Week(3), nil},
	}
	for _, c := range cases {
		checkWeeks(t, c.name, MustSeries(t, s, "org", k, c.from, c.to), c.want)
	}
}

func testSeriesBatch(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	MustUpsert(t, s, "org",
		row("S1", "L1", "WEB", 1, 1, 1), row("S1", "L1", "WEB", 2, 2, 2), row("S1", "L1", "WEB", 9, 9, 9),
		row("S1", "L1", "STORE", 1, 10, 10),
		row("S2", "L1", "WEB", 2, 5, 5),
		row("S3", "L2", "ALL", 1, 4, 4),
	)
	MustSignals(t, s, "org", signal("q", "S2", "L1", "WEB", Week(2), 1))
	keys := []supplyplan.DemandKey{
		key("S1", "L1", "WEB"), key("S1", "L1", supplyplan.ChannelAll), key("S2", "L1", "WEB"),
		key("S3", "L2", ""), key("S3", "L2", "ALL"), key("S4", "L1", "WEB"), key("S1", "L1", "MISSING"),
	}
	got, err := s.SeriesBatch(ctxFor(t), "org", keys, Week(1), Week(5))
	if err != nil {
		t.Fatal(err)
	}
	want := map[supplyplan.DemandKey][]supplyplan.WeekValue{
		key("S1", "L1", "WEB"):                 {wv(1, 1, 1, false), wv(2, 2, 2, false)},
		key("S1", "L1", supplyplan.ChannelAll): {wv(1, 11, 11, false), wv(2, 2, 2, false)},
		key("S2", "L1", "WEB"):                 {wv(2, 6, 5, false)},
		key("S3", "L2", ""):                    {wv(1, 4, 4, false)},
		key("S3", "L2", "ALL"):                 {wv(1, 4, 4, false)},
	}
	if len(got) != len(want) {
		t.Errorf("SeriesBatch returned %d keys, want %d (keys without data are absent): %v", len(got), len(want), got)
	}
	for k, w := range want {
		checkWeeks(t, fmt.Sprintf("SeriesBatch[%v]", k), got[k], w)
		checkWeeks(t, fmt.Sprintf("Series(%v)", k), MustSeries(t, s, "org", k, Week(1), Week(5)), w)
	}
	empty, err := s.SeriesBatch(ctxFor(t), "org", nil, time.Time{}, time.Time{})
	if err != nil || len(empty) != 0 {
		t.Errorf("SeriesBatch(no keys) = %v, %v; want empty", empty, err)
	}
}

func testKeysSorted(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	var want []supplyplan.DemandKey
	for _, sku := range []string{"b", "a", "B", "a-1", "é"} {
		for _, loc := range []string{"L2", "L1"} {
			for _, ch := range []string{"WEB", "ALL", "STORE"} {
				want = append(want, key(sku, loc, ch))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]supplyplan.DemandRow, 0, len(want))
	for _, i := range rng.Perm(len(want)) {
		k := want[i]
		if i%5 == 0 { // some series exist through a signal only
			MustSignals(t, s, "org", signal(fmt.Sprint("k", i), k.SKU, k.Location, k.Channel, Week(1), 1))
			continue
		}
		rows = append(rows, row(k.SKU, k.Location, k.Channel, 1+i%3, 1, 1))
	}
	MustUpsert(t, s, "org", rows...)
	slices.SortFunc(want, func(a, b supplyplan.DemandKey) int {
		return cmp.Or(cmp.Compare(a.SKU, b.SKU), cmp.Compare(a.Location, b.Location), cmp.Compare(a.Channel, b.Channel))
	})
	got, err := s.Keys(ctxFor(t), "org")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Keys:\n got %v\nwant %v", got, want)
	}
	none, err := s.Keys(ctxFor(t), "nobody")
	if err != nil || len(none) != 0 {
		t.Errorf("Keys(unknown organization) = %v, %v; want empty", none, err)
	}
}

// testKeyPage: every window of every filter (product, location, one channel, every channel merged
// as ALL, names unknown to the organization) equals the window of the full sorted list filtered by
// definition, and the total counts every key that passes; a series added later takes its place.
func testKeyPage(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	var rows []supplyplan.DemandRow
	for i, sku := range []string{"b", "a", "B", "a-1"} {
		for j, loc := range []string{"L2", "L1", "L3"} {
			for c, ch := range []string{"WEB", "ALL", "STORE"} {
				if (i+j+c)%4 != 3 {
					rows = append(rows, row(sku, loc, ch, 1+c, 1, 1))
				}
			}
		}
	}
	MustUpsert(t, s, "org", rows...)
	check := func() {
		t.Helper()
		all, err := s.Keys(ctxFor(t), "org")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []supplyplan.DemandKeyFilter{{Channel: "ALL"}, {Channel: "WEB"}, {SKU: "a", Channel: "ALL"}, {Location: "L3", Channel: "ALL"},
			{SKU: "B", Location: "L1", Channel: "STORE"}, {Location: "L2", Channel: "WEB"}, {SKU: "nope", Channel: "ALL"}, {Channel: "NONE"}, {Location: "L9", Channel: "WEB"}} {
			var want []supplyplan.DemandKey
			for _, k := range all {
				if (f.SKU != "" && k.SKU != f.SKU) || (f.Location != "" && k.Location != f.Location) || (f.Channel != "ALL" && k.Channel != f.Channel) {
					continue
				}
				if f.Channel == "ALL" {
					k.Channel = "ALL"
					if len(want) > 0 && want[len(want)-1] == k {
						continue
					}
				}
				want = append(want, k)
			}
			for _, w := range [][2]int{{0, 1}, {0, 5}, {2, 3}, {5, 100}, {len(want), 4}, {len(want) + 3, 2}} {
				got, total, err := s.KeyPage(ctxFor(t), "org", f, w[0], w[1])
				if err != nil {
					t.Fatal(err)
				}
				exp := want[min(w[0], len(want)):min(w[0]+w[1], len(want))]
				if total != len(want) || !slices.Equal(got, exp) || got == nil {
					t.Errorf("KeyPage(%+v, %d, %d) = %v of %d; want %v of %d", f, w[0], w[1], got, total, exp, len(want))
				}
			}
		}
	}
	check()
	MustUpsert(t, s, "org", row("a", "L0", "WEB", 1, 1, 1), row("zz", "L1", "ALL", 2, 1, 1))
	check()
	if got, total, err := s.KeyPage(ctxFor(t), "nobody", supplyplan.DemandKeyFilter{Channel: "ALL"}, 0, 10); err != nil || total != 0 || len(got) != 0 {
		t.Errorf("KeyPage(unknown organization) = %v, %d, %v; want empty", got, total, err)
	}
}

// cellRef is the reference model of one (series, week) for testAggregate.
type cellRef struct {
	k                  supplyplan.DemandKey
	week               int
	actual, forecasted float64
}

func testAggregate(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	rng := rand.New(rand.NewPCG(3, 4))
	cells := map[supplyplan.DemandKey]map[int]*cellRef{}
	var rows []supplyplan.DemandRow
	var sigs []supplyplan.DemandSignal
	n := 0
	for _, sku := range []string{"S1", "S2", "S3"} {
		for _, loc := range []string{"L1", "L2"} {
			for _, ch := range []string{"WEB", "STORE", "ALL"} {
				k := key(sku, loc, ch)
				cells[k] = map[int]*cellRef{}
				for w := 1; w <= 6; w++ {
					switch rng.IntN(4) {
					case 0: // no data
					case 1: // a signal only
						q := float64(1 + rng.IntN(9))
						n++
						sigs = append(sigs, signal(fmt.Sprint("g", n), sku, loc, ch, Week(w).Add(time.Duration(rng.IntN(7*24))*time.Hour), q))
						cells[k][w] = &cellRef{k, w, q, 0}
					default:
						a, f := float64(rng.IntN(100)), float64(rng.IntN(100))
						rows = append(rows, row(sku, loc, ch, w, a, f))
						c := &cellRef{k, w, a, f}
						if rng.IntN(2) == 0 {
							q := float64(1 + rng.IntN(9))
							n++
							sigs = append(sigs, signal(fmt.Sprint("g", n), sku, loc, ch, Week(w), q))
							c.actual += q
						}
						cells[k][w] = c
					}
				}
			}
		}
	}
	MustUpsert(t, s, "org", rows...)
	MustSignals(t, s, "org", sigs...)
	MustUpsert(t, s, "noise", row("S1", "L1", "WEB", 1, 1e6, 1e6))

	expect := func(q supplyplan.DemandQuery) []supplyplan.DemandAggregate {
		in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
		chans := q.Channels
		if slices.Contains(chans, supplyplan.ChannelAll) {
			chans = nil
		}
		groups := map[supplyplan.DemandAggregate]*supplyplan.DemandAggregate{}
		total := supplyplan.DemandAggregate{}
		for k, ws := range cells {
			if !in(q.SKUs, k.SKU) || !in(q.Locations, k.Location) || !in(chans, k.Channel) {
				continue
			}
			for w, c := range ws {
				if (!q.From.IsZero() && Week(w).Before(q.From)) || (!q.To.IsZero() && Week(w).After(q.To)) {
					continue
				}
				var g supplyplan.DemandAggregate
				for _, f := range q.GroupBy {
					switch f {
					case "sku":
						g.SKU = k.SKU
					case "location":
						g.Location = k.Location
					case "channel":
						g.Channel = k.Channel
					case "week":
						g.Week = Week(w)
					}
				}
				a := groups[g]
				if a == nil {
					a = new(supplyplan.DemandAggregate)
					*a = g
					groups[g] = a
				}
				a.Actual += c.actual
				a.Forecasted += c.forecasted
				a.Weeks++
				total.Actual += c.actual
				total.Forecasted += c.forecasted
				total.Weeks++
			}
		}
		if len(q.GroupBy) == 0 {
			return []supplyplan.DemandAggregate{total}
		}
		out := []supplyplan.DemandAggregate{}
		for _, a := range groups {
			out = append(out, *a)
		}
		slices.SortFunc(out, func(a, b supplyplan.DemandAggregate) int {
			return cmp.Or(cmp.Compare(a.SKU, b.SKU), cmp.Compare(a.Location, b.Location),
				cmp.Compare(a.Channel, b.Channel), a.Week.Compare(b.Week))
		})
		return out
	}
	fields := []string{"sku", "location", "channel", "week"}
	filters := []supplyplan.DemandQuery{
		{},
		{SKUs: []string{"S1", "S3"}, From: Week(2), To: Week(4)},
		{Locations: []string{"L2"}, Channels: []string{"WEB", "ALL"}}, // ALL in a filter: every channel
		{Channels: []string{"STORE", "WEB"}, To: Week(3).AddDate(0, 0, 3)},
		{SKUs: []string{"S2"}, Locations: []string{"L1"}, Channels: []string{"STORE"}, From: Week(5)},
		{SKUs: []string{"nothing"}},
	}
	for mask := 0; mask < 16; mask++ {
		var group []string
		for i, f := range fields {
			if mask&(1<<i) != 0 {
				group = append(group, f)
			}
		}
		for fi, filter := range filters {
			q := filter
			q.GroupBy = group
			got, err := s.Aggregate(ctxFor(t), "org", q)
			if err != nil {
				t.Fatalf("Aggregate(group %v, filter %d): %v", group, fi, err)
			}
			want := expect(q)
			if !slices.EqualFunc(got, want, func(a, b supplyplan.DemandAggregate) bool {
				return a.SKU == b.SKU && a.Location == b.Location && a.Channel == b.Channel && a.Week.Equal(b.Week) &&
					a.Actual == b.Actual && a.Forecasted == b.Forecasted && a.Weeks == b.Weeks
			}) {
				t.Errorf("Aggregate(group %v, filter %d):\n got %+v\nwant %+v", group, fi, got, want)
			}
		}
	}
	_, err := s.Aggregate(ctxFor(t), "org", supplyplan.DemandQuery{GroupBy: []string{"sku", "colour"}})
	if supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
		t.Errorf("Aggregate(group by colour) error = %v, want %s", err, supplyplan.EVALIDATION)
	}
	empty, err := s.Aggregate(ctxFor(t), "nobody", supplyplan.DemandQuery{GroupBy: []string{"sku"}})
	if err != nil || len(empty) != 0 {
		t.Errorf("Aggregate(unknown organization, by sku) = %v, %v; want no groups", empty, err)
	}
	total, err := s.Aggregate(ctxFor(t), "nobody", supplyplan.DemandQuery{})
	if err != nil || len(total) != 1 || total[0] != (supplyplan.DemandAggregate{}) {
		t.Errorf("Aggregate(unknown organization) = %v, %v; want one zero total", total, err)
	}
}

func testTenantIsolation(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	k := key("S1", "L1", "WEB")
	MustUpsert(t, s, "org-a", row("S1", "L1", "WEB", 1, 10, 10))
	MustUpsert(t, s, "org-b", row("S1", "L1", "WEB", 1, 20, 20), row("S1", "L1", "STORE", 1, 5, 5), row("S2", "L1", "WEB", 2, 1, 1))
	MustSignals(t, s, "org-b", signal("s", "S1", "L1", "WEB", Week(1), 3))
	// An organization id that is a prefix of another must not match it.
	MustUpsert(t, s, "org", row("S1", "L1", "WEB", 1, 1000, 1000))

	checkWeeks(t, "org-a", MustSeries(t, s, "org-a", k, time.Time{}, time.Time{}), []supplyplan.WeekValue{wv(1, 10, 10, false)})
	checkWeeks(t, "org-b", MustSeries(t, s, "org-b", k, time.Time{}, time.Time{}), []supplyplan.WeekValue{wv(1, 23, 20, false)})
	checkWeeks(t, "org-a ALL", MustSeries(t, s, "org-a", key("S1", "L1", "ALL"), time.Time{}, time.Time{}), []supplyplan.WeekValue{wv(1, 10, 10, false)})
	if got := MustSeries(t, s, "org-a", key("S2", "L1", "WEB"), time.Time{}, time.Time{}); len(got) != 0 {
		t.Errorf("org-a sees org-b's series: %s", fmtWeeks(got))
	}
	keysA, err := s.Keys(ctxFor(t), "org-a")
	if err != nil {
		t.Fatal(err)
	}
	if want := []supplyplan.DemandKey{k}; !slices.Equal(keysA, want) {
		t.Errorf("Keys(org-a) = %v, want %v", keysA, want)
	}
	batch, err := s.SeriesBatch(ctxFor(t), "org-a", []supplyplan.DemandKey{k, key("S2", "L1", "WEB")}, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(batch) != 1 {
		t.Errorf("SeriesBatch(org-a) = %v, want only %v", batch, k)
	}
	agg, err := s.Aggregate(ctxFor(t), "org-a", supplyplan.DemandQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(agg) != 1 || agg[0].Actual != 10 || agg[0].Weeks != 1 {
		t.Errorf("Aggregate(org-a) = %+v, want actual 10 over 1 week", agg)
	}
	if got := MustSignals(t, s, "org-a", signal("s", "S1", "L1", "WEB", Week(1), 1)); !slices.Equal(got, []bool{true}) {
		t.Errorf("org-a sees org-b's signal id: fresh = %v", got)
	}
}

func testLargeBatch(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	const series, weeks = 400, 156 // 62,400 rows in one call
	rows := make([]supplyplan.DemandRow, 0, series*weeks)
	var sum float64
	for i := 0; i < series; i++ {
		for w := 1; w <= weeks; w++ {
			v := float64((i*7 + w) % 50)
			rows = append(rows, supplyplan.DemandRow{SKU: fmt.Sprintf("SKU-%04d", i), Location: fmt.Sprintf("LOC-%d", i%7),
				Channel: []string{"WEB", "STORE"}[i%2], Week: Week(w), Actual: v, Forecasted: v + 1, Stockout: w%13 == 0})
			sum += v
		}
	}
	MustUpsert(t, s, "org", rows...)
	agg, err := s.Aggregate(ctxFor(t), "org", supplyplan.DemandQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(agg) != 1 || agg[0].Actual != sum || agg[0].Forecasted != sum+series*weeks || agg[0].Weeks != series*weeks {
		t.Errorf("Aggregate = %+v, want actual %g, forecasted %g, weeks %d", agg, sum, sum+series*weeks, series*weeks)
	}
	keys, err := s.Keys(ctxFor(t), "org")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != series {
		t.Fatalf("Keys: %d, want %d", len(keys), series)
	}
	batch, err := s.SeriesBatch(ctxFor(t), "org", keys, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(batch) != series {
		t.Fatalf("SeriesBatch: %d series, want %d", len(batch), series)
	}
	for i := 0; i < series; i += 37 {
		k := key(fmt.Sprintf("SKU-%04d", i), fmt.Sprintf("LOC-%d", i%7), []string{"WEB", "STORE"}[i%2])
		var want []supplyplan.WeekValue
		for _, r := range rows[i*weeks : (i+1)*weeks] {
			want = append(want, supplyplan.WeekValue{Week: r.Week, Actual: r.Actual, Forecasted: r.Forecasted, Stockout: r.Stockout})
		}
		checkWeeks(t, fmt.Sprint("series ", k), batch[k], want)
	}
}

func testConcurrentWriters(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	const writers, calls, perCall = 6, 10, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	freshByID := map[string]int{}
	errs := make(chan error, writers)
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := 0; c < calls; c++ {
				rows := make([]supplyplan.DemandRow, 0, perCall)
				for i := 0; i < perCall; i++ {
					rows = append(rows, row(fmt.Sprintf("W%d", g), "L", "WEB", 1+(c*perCall+i)%150, float64(c), 0))
				}
				if err := s.UpsertWeeks(context.Background(), "org", rows); err != nil {
					errs <- err
					return
				}
				// Writers g and g+1 deliver the same signals: each id must count once.
				var sigs []supplyplan.DemandSignal
				for _, owner := range []int{g, (g + 1) % writers} {
					sigs = append(sigs, signal(fmt.Sprintf("sig-%d-%d", owner, c), "SIG", "L", "WEB", Week(1+owner), 1))
				}
				fresh, err := s.AddSignals(context.Background(), "org", sigs)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for i, f := range fresh {
					if f == supplyplan.SignalWritten {
						freshByID[sigs[i].SignalID]++
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(freshByID) != writers*calls {
		t.Errorf("%d signal ids reported fresh, want %d", len(freshByID), writers*calls)
	}
	for id, n := range freshByID {
		if n != 1 {
			t.Errorf("signal %s reported fresh %d times", id, n)
		}
	}
	var want []supplyplan.WeekValue
	for owner := 0; owner < writers; owner++ {
		want = append(want, wv(1+owner, calls, 0, false))
	}
	checkWeeks(t, "signals", MustSeries(t, s, "org", key("SIG", "L", "WEB"), time.Time{}, time.Time{}), want)
	for g := 0; g < writers; g++ {
		got := MustSeries(t, s, "org", key(fmt.Sprintf("W%d", g), "L", "WEB"), time.Time{}, time.Time{})
		if len(got) != 150 {
			t.Errorf("writer %d: %d weeks, want 150", g, len(got))
		}
	}
}

func testValidation(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	ctx := ctxFor(t)
	bad := []struct {
		name string
		err  error
	}{
		{"no organization", s.UpsertWeeks(ctx, "", []supplyplan.DemandRow{row("S", "L", "WEB", 1, 1, 1)})},
		{"no sku", s.UpsertWeeks(ctx, "org", []supplyplan.DemandRow{row("", "L", "WEB", 1, 1, 1)})},
		{"no week", s.UpsertWeeks(ctx, "org", []supplyplan.DemandRow{{SKU: "S", Location: "L"}})},
		{"NaN", s.UpsertWeeks(ctx, "org", []supplyplan.DemandRow{row("S", "L", "WEB", 1, nanValue(), 1)})},
	}
	_, err := s.AddSignals(ctx, "org", []supplyplan.DemandSignal{signal("", "S", "L", "WEB", Week(1), 1)})
	bad = append(bad, struct {
		name string
		err  error
	}{"signal without id", err})
	_, err = s.AddSignals(ctx, "org", []supplyplan.DemandSignal{{SignalID: "x", OrganizationID: "other", SKU: "S", Location: "L", OccurredAt: Week(1), Quantity: 1}})
	bad = append(bad, struct {
		name string
		err  error
	}{"signal of another organization", err})
	for _, b := range bad {
		if supplyplan.ErrorCode(b.err) != supplyplan.EVALIDATION {
			t.Errorf("%s: error %v, want %s", b.name, b.err, supplyplan.EVALIDATION)
		}
	}
	// A rejected call writes nothing, not even its valid rows.
	if err := s.UpsertWeeks(ctx, "org", []supplyplan.DemandRow{row("S", "L", "WEB", 1, 1, 1), row("", "L", "WEB", 1, 1, 1)}); err == nil {
		t.Error("a call with one bad row was accepted")
	}
	if keys, err := s.Keys(ctx, "org"); err != nil || len(keys) != 0 {
		t.Errorf("Keys after rejected writes = %v, %v; want none", keys, err)
	}
	if err := s.UpsertWeeks(ctx, "org", nil); err != nil {
		t.Errorf("UpsertWeeks(no rows) = %v", err)
	}
	if fresh, err := s.AddSignals(ctx, "org", nil); err != nil || len(fresh) != 0 {
		t.Errorf("AddSignals(no signals) = %v, %v", fresh, err)
	}
}

func nanValue() float64 {
	var zero float64
	return zero / zero
}

func testReopen(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	k := key("S1", "L1", "WEB")
	MustUpsert(t, s, "org", row("S1", "L1", "WEB", 1, 1, 1), row("S1", "L1", "WEB", 2, 2, 2))
	MustSignals(t, s, "org", signal("a", "S1", "L1", "WEB", Week(2), 5))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	s = open()
	MustUpsert(t, s, "org", row("S1", "L1", "WEB", 1, 10, 10))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	checkWeeks(t, "after two restarts", MustSeries(t, s, "org", k, time.Time{}, time.Time{}),
		[]supplyplan.WeekValue{wv(1, 10, 10, false), wv(2, 7, 2, false)})
}

// testSignalWindow: a signal whose week is more than SignalDedupWeeks before the newest week of the
// organization's signals applied before the call is refused (late before duplicate), judged
// against the window in force when the call starts; the window is the organization's own and
// holds across a reopen.
func testSignalWindow(t *testing.T, open func() supplyplan.DemandStore) {
	s := open()
	W := supplyplan.SignalDedupWeeks
	sig := func(id string, week int) supplyplan.DemandSignal { return signal(id, "S", "L", "WEB", Week(week), 1) }
	want := func(what string, got []supplyplan.SignalWrite, want ...supplyplan.SignalWrite) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	ok, seen, late := supplyplan.SignalWritten, supplyplan.SignalSeen, supplyplan.SignalTooLate
	want("no window before the first signal", MustSignalWrites(t, s, "org", sig("first", 1)), ok)
	// The call is judged against the window ending at week 1: week 30 moves it only after the call.
	want("one call", MustSignalWrites(t, s, "org", sig("newest", 30), sig("w10", 10)), ok, ok)
	floor := 30 - W
	want("after the window moved", MustSignalWrites(t, s, "org",
		sig("at-floor", floor), sig("below", floor-1), sig("newest", 30), sig("first", 1), sig("below", floor-1)),
		ok, late, seen, late, late)
	want("another organization", MustSignalWrites(t, s, "org2", sig("first", 1)), ok)
	checkWeeks(t, "series", MustSeries(t, s, "org", key("S", "L", "WEB"), time.Time{}, time.Time{}),
		[]supplyplan.WeekValue{wv(1, 1, 0, false), wv(10, 1, 0, false), wv(floor, 1, 0, false), wv(30, 1, 0, false)})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	want("after a reopen", MustSignalWrites(t, s, "org", sig("below2", floor-1), sig("newest", 30), sig("at-floor2", floor)), late, seen, ok)
	want("the other organization after a reopen", MustSignalWrites(t, s, "org2", sig("second", 2)), ok)
}
