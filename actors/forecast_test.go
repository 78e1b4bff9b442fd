package actors

import (
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
