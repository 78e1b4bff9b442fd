package analytics

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// The store accepts every week the service's inputs can name: the date range of the root package
// lies inside the weeks the stores (and ClickHouse's Date) hold.
func TestServiceDateRangeFitsTheStores(t *testing.T) {
	for _, at := range []time.Time{supplyplan.MinTime, supplyplan.MaxTime, supplyplan.MaxTime.Add(-time.Millisecond)} {
		if !weekOK(at) {
			t.Errorf("week of %v is refused by the stores", at)
		}
	}
	rows := []supplyplan.DemandRow{{SKU: "S", Location: "L", Week: supplyplan.MinTime, Actual: supplyplan.MaxNumber, Forecasted: -supplyplan.MaxNumber}}
	if err := validateRows("org", rows); err != nil {
		t.Fatal(err)
	}
	rows[0].Actual = 1e308
	if err := validateRows("org", rows); err == nil {
		t.Fatal("actual 1e308 accepted")
	}
	sig := []supplyplan.DemandSignal{{SignalID: "s", SKU: "S", Location: "L", OccurredAt: supplyplan.MaxTime, Quantity: 1.7e308}}
	if err := validateSignals("org", sig); err == nil {
		t.Fatal("signal 1.7e308 accepted")
	}
}

// Weeks an earlier version stored out of bounds (two signals of 1.7e308 summing to +Inf, an import
// of 1e308, a NaN) are left out of every read, live and after a reopen, and counted when the store
// opens; the rest of the series is served as before.
func TestEmbeddedQuarantinesWeeksOutOfBounds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demand")
	s := NewEmbeddedStore(EmbeddedConfig{Dir: dir})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	week := func(i int) time.Time { return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*i) }
	good := []supplyplan.DemandRow{{SKU: "S", Location: "L", Week: week(0), Actual: 5, Forecasted: 5},
		{SKU: "S", Location: "L", Week: week(3), Actual: 7, Forecasted: 7}}
	if err := s.UpsertWeeks(ctx, "org", good); err != nil {
		t.Fatal(err)
	}
	// As an earlier version wrote them: straight into the log, without the store's validation.
	old := []supplyplan.DemandRow{{SKU: "S", Location: "L", Week: week(1), Actual: 1e308, Forecasted: 1},
		{SKU: "S", Location: "L", Channel: "WEB", Week: week(3), Actual: math.NaN(), Forecasted: 1}}
	if err := s.submit(ctx, &writeReq{buf: encodeUpsert(nil, "org", old)}); err != nil {
		t.Fatal(err)
	}
	sigs := []supplyplan.DemandSignal{{SignalID: "a", SKU: "S", Location: "L", OccurredAt: week(2), Quantity: 1.7e308},
		{SignalID: "b", SKU: "S", Location: "L", OccurredAt: week(2), Quantity: 1.7e308}}
	if err := s.submit(ctx, &writeReq{buf: encodeSignals(nil, "org", sigs)}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, ch := range []string{"ALL", ""} {
			got, err := s.Series(ctx, "org", supplyplan.DemandKey{SKU: "S", Location: "L", Channel: ch}, time.Time{}, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || !got[0].Week.Equal(week(0)) || got[1].Actual != 7 {
				t.Fatalf("%s: Series(%q) = %+v, want weeks 0 and 3 only", when, ch, got)
			}
			if _, err := json.Marshal(got); err != nil {
				t.Fatalf("%s: %v", when, err)
			}
		}
		batch, err := s.SeriesBatch(ctx, "org", []supplyplan.DemandKey{{SKU: "S", Location: "L", Channel: "WEB"}}, time.Time{}, time.Time{})
		if err != nil || len(batch) != 0 {
			t.Fatalf("%s: SeriesBatch(WEB) = %+v, %v; want nothing", when, batch, err)
		}
		for _, group := range [][]string{nil, {"week"}, {"sku", "channel"}} {
			agg, err := s.Aggregate(ctx, "org", supplyplan.DemandQuery{GroupBy: group})
			if err != nil {
				t.Fatal(err)
			}
			var sum float64
			weeks := 0
			for _, a := range agg {
				sum += a.Actual
				weeks += a.Weeks
			}
			if sum != 12 || weeks != 2 {
				t.Fatalf("%s: Aggregate(%v) = %+v, want 12 over 2 weeks", when, group, agg)
			}
			if _, err := json.Marshal(agg); err != nil {
				t.Fatalf("%s: %v", when, err)
			}
		}
	}
	check("live")
	s = reopenEmbedded(t, s, dir)
	if got := s.Quarantined(); got != 3 {
		t.Fatalf("Quarantined() = %d, want 3 (the 1e308 week, the NaN week, the +Inf week)", got)
	}
	check("reopened")
}
