package actors

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics/forecast"
)

func doneLifts(gen uint64) *liftEntry {
	e := &liftEntry{gen: gen, model: &forecast.LiftModel{}, ready: make(chan struct{})}
	close(e.ready)
	return e
}

// An event write touches the forecasts of its scope only, and the lift models whose history it
// overlaps only.
func TestEventWriteInvalidatesWhatItTouches(t *testing.T) {
	f := newForecaster(nil, nil, 0)
	tf := f.tenant("org")
	this := supplyplan.WeekStart(time.Now())
	past := this.AddDate(0, 0, -70)
	tf.lifts[this.Unix()] = &liftSlot{cur: doneLifts(1)}
	tf.lifts[past.Unix()] = &liftSlot{cur: doneLifts(2)}
	pl := supplyplan.DemandKey{SKU: "P", Location: "L", Channel: supplyplan.ChannelAll}
	pm := supplyplan.DemandKey{SKU: "P", Location: "M", Channel: supplyplan.ChannelAll}
	ql := supplyplan.DemandKey{SKU: "Q", Location: "L", Channel: supplyplan.ChannelAll}
	stamps := func() [3]uint64 { return [3]uint64{tf.stampOf(pl), tf.stampOf(pm), tf.stampOf(ql)} }
	changed := func(before, after [3]uint64) [3]bool {
		return [3]bool{after[0] > before[0], after[1] > before[1], after[2] > before[2]}
	}
	at := func(weeks int) time.Time { return this.AddDate(0, 0, 7*weeks) }
	tests := []struct {
		name         string
		event        supplyplan.ExternalEvent
		series       [3]bool // P@L, P@M, Q@L invalidated
		thisW, pastW bool    // lift models still current
	}{
		{"a planned promotion of one series", supplyplan.ExternalEvent{ProductMasterID: "P", LocationID: "L", StartsAt: at(2), EndsAt: at(3)},
			[3]bool{true, false, false}, true, true},
		{"a product's past event", supplyplan.ExternalEvent{ProductMasterID: "P", StartsAt: at(-5), EndsAt: at(-4)},
			[3]bool{true, true, false}, false, true},
		{"a location's event in this week", supplyplan.ExternalEvent{LocationID: "L", StartsAt: at(0), EndsAt: at(1)},
			[3]bool{true, false, true}, true, true},
		{"an org-wide event long ago", supplyplan.ExternalEvent{IsOrgWide: true, StartsAt: at(-80), EndsAt: at(-79)},
			[3]bool{true, true, true}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tf.lifts[this.Unix()].cur, tf.lifts[past.Unix()].cur = doneLifts(1), doneLifts(2)
			before := stamps()
			f.eventsChanged("org", nil, &tt.event)
			if got := changed(before, stamps()); got != tt.series {
				t.Errorf("series invalidated %v, want %v", got, tt.series)
			}
			if got := tf.liftsCurrent(this.Unix(), 1, false); got != tt.thisW {
				t.Errorf("this week's lift model current = %v, want %v", got, tt.thisW)
			}
			if got := tf.liftsCurrent(past.Unix(), 2, false); got != tt.pastW {
				t.Errorf("the lift model of 10 weeks ago current = %v, want %v", got, tt.pastW)
			}
		})
	}
	if n := len(tf.productAt) + len(tf.locationAt) + len(tf.seriesAt); n != 3 {
		t.Errorf("%d scope stamps after writes to 3 scopes: stamps must follow the scopes, not the writes", n)
	}
	for range 1000 {
		f.eventsChanged("org", &supplyplan.ExternalEvent{ProductMasterID: "P", LocationID: "L", StartsAt: at(1), EndsAt: at(2)}, nil)
	}
	if n := len(tf.productAt) + len(tf.locationAt) + len(tf.seriesAt); n != 3 {
		t.Errorf("%d scope stamps after 1,000 more writes to one scope", n)
	}
}

// The forecast cache stays within its byte bound, dropping the least recently used entries.
func TestResultCacheIsBounded(t *testing.T) {
	res := seriesResult{Result: forecast.Result{Model: "ses", Periods: make([]forecast.Period, 13)}}
	size := entrySize(&res)
	c := newResultCache(10 * size)
	key := func(i int) cacheKey {
		return cacheKey{org: "o", key: supplyplan.DemandKey{SKU: "P", Location: string(rune('A' + i))}, horizon: 13}
	}
	for i := range 10 {
		c.put([]*cacheEntry{{k: key(i), res: res}})
	}
	c.get([]cacheKey{key(0)}) // used: survives the next insertions
	for i := 10; i < 15; i++ {
		c.put([]*cacheEntry{{k: key(i), res: res}})
	}
	n, bytes := c.stats()
	if n != 10 || bytes > 10*size {
		t.Fatalf("%d entries, %d bytes; want 10 within %d", n, bytes, 10*size)
	}
	got := c.get([]cacheKey{key(0), key(1), key(5), key(14)})
	if got[0] == nil || got[1] != nil || got[2] != nil || got[3] == nil {
		t.Errorf("after eviction: key 0 %v, 1 %v, 5 %v, 14 %v; want 0 and 14 kept, 1 and 5 evicted", got[0] != nil, got[1] != nil, got[2] != nil, got[3] != nil)
	}
}

// realResults forecasts a few synthetic series with the engine, as the cache receives them.
func realResults(t *testing.T, n int) []seriesResult {
	t.Helper()
	var out []seriesResult
	start := time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC)
	for s := 0; s < n; s++ {
		vals := make([]float64, 104)
		for w := range vals {
			vals[w] = float64(10 + s + (w*7+s*3)%11)
		}
		r, err := forecast.Forecast(forecast.Series{Start: start, Values: vals}, nil, nil, forecast.Options{Horizon: 13, Point: forecast.PointMean})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, seriesResult{Result: r, HistoryWeeks: len(vals)})
	}
	return out
}

// The cache's byte count is what its entries hold on the heap (within a quarter), so that
// --forecast-cache-mb bounds memory for real; and a result served from it is the one computed.
func TestResultCacheAccounting(t *testing.T) {
	results := realResults(t, 8)
	const n = 20000
	keys := make([]cacheKey, n)
	for i := range keys { // the keys' strings belong to the caller (the demand store's, the catalog's)
		keys[i] = cacheKey{org: "org", key: supplyplan.DemandKey{SKU: fmt.Sprintf("P%05d", i/50), Location: fmt.Sprintf("L%02d", i%50),
			Channel: supplyplan.ChannelAll}, asOf: 1700000000, horizon: 13, point: forecast.PointMean}
	}
	// Three measurements, the median ratio: goroutines left by earlier tests of the package can
	// free or allocate during one of them (a full run once read 391 bytes an entry for 605).
	var c *resultCache
	var size, grew int64
	ratios := make([]float64, 0, 3)
	for range 3 {
		c = newResultCache(1 << 40)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < n; i += 1000 {
			entries := make([]*cacheEntry, 0, 1000)
			for j := i; j < i+1000; j++ {
				entries = append(entries, &cacheEntry{k: keys[j], stamp: 1, res: results[j%len(results)]})
			}
			c.put(entries)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		grew = int64(after.HeapAlloc) - int64(before.HeapAlloc)
		var entries int
		entries, size = c.stats()
		if entries != n {
			t.Fatalf("%d entries, want %d", entries, n)
		}
		ratios = append(ratios, float64(size)/float64(grew))
		if len(ratios) < 3 {
			c = nil
		}
	}
	slices.Sort(ratios)
	if ratio := ratios[1]; ratio < 0.8 || ratio > 1.25 {
		t.Errorf("the cache counts %d bytes for %d entries, the heap grew by %d (median ratio of three %.2f; %.2f)", size, n, grew, ratio, ratios)
	}
	t.Logf("%d bytes an entry (counted %d)", grew/n, size/n)
	got := c.get(keys[:len(results)])
	for i, e := range got {
		want := results[i].truncated(8)
		r := e.result(8)
		if !reflect.DeepEqual(r.full(), want.Result) || r.HistoryWeeks != want.HistoryWeeks {
			t.Fatalf("cached result %d differs from the computed one:\n got %+v\nwant %+v", i, r.full(), want.Result)
		}
	}
	runtime.KeepAlive(keys)
}
