package analytics

import (
	"slices"
	"sort"
	"sync"

	"github.com/supplyplan/supplyplan"
)

// The in-memory index of the embedded store: per organization, per series, a slice of week cells
// sorted by day. 50,000 series x 156 weeks is 7.8 million cells of 32 bytes (about 250 MB).

const (
	cellImported = 1 << iota // the week was imported (UpsertWeeks)
	cellStockout             // imported with Stockout
	cellSignals              // at least one signal added to the week
)

type cell struct {
	day      int32 // Unix day of the week's Monday
	flags    uint8
	actual   float64 // imported actual
	forecast float64 // imported forecast
	signals  float64 // sum of the distinct signals of the week
}

type series struct {
	key   supplyplan.DemandKey
	cells []cell
}

// at returns the cell of day, inserting an empty one in order if needed.
func (s *series) at(day int32) *cell {
	n := len(s.cells)
	if n == 0 || s.cells[n-1].day < day { // imports usually arrive in week order
		s.cells = append(s.cells, cell{day: day})
		return &s.cells[n]
	}
	if s.cells[n-1].day == day {
		return &s.cells[n-1]
	}
	i := sort.Search(n, func(i int) bool { return s.cells[i].day >= day })
	if s.cells[i].day != day {
		s.cells = slices.Insert(s.cells, i, cell{day: day})
	}
	return &s.cells[i]
}

// window returns the cells with lo <= day <= hi.
func (s *series) window(lo, hi int32) []cell {
	i := sort.Search(len(s.cells), func(i int) bool { return s.cells[i].day >= lo })
	j := sort.Search(len(s.cells), func(i int) bool { return s.cells[i].day > hi })
	if i >= j {
		return nil
	}
	return s.cells[i:j]
}

type item struct{ sku, location string }

// tenant is one organization's data. The committer writes under mu; readers hold it shared.
type tenant struct {
	mu      sync.RWMutex
	series  map[supplyplan.DemandKey]*series
	items   map[item][]*series  // every channel of a sku and location
	signals map[sigKey]struct{} // keys of the applied signal ids
}

func newTenant() *tenant {
	return &tenant{series: map[supplyplan.DemandKey]*series{}, items: map[item][]*series{},
		signals: map[sigKey]struct{}{}}
}

// seriesFor returns the series of key, creating it (with private copies of the strings, so that
// the index never pins a caller's or a frame's buffer).
func (t *tenant) seriesFor(key supplyplan.DemandKey) *series {
	if s := t.series[key]; s != nil {
		return s
	}
	key = supplyplan.DemandKey{SKU: cloneString(key.SKU), Location: cloneString(key.Location),
		Channel: cloneString(key.Channel)}
	s := &series{key: key}
	t.series[key] = s
	it := item{key.SKU, key.Location}
	t.items[it] = append(t.items[it], s)
	return s
}

func cloneString(s string) string {
	if s == "" {
		return ""
	}
	return string([]byte(s))
}

// served reports whether the cell's week may be read: a cell out of bounds (written by an earlier
// version without bounds, see supplyplan.MaxStored) is quarantined, left out of every read.
func (c *cell) served() bool { return supplyplan.WeekDemandOK(c.actual+c.signals, c.forecast) }

func (c *cell) value() supplyplan.WeekValue {
	return supplyplan.WeekValue{Week: dayTime(c.day), Actual: c.actual + c.signals, Forecasted: c.forecast,
		Stockout: c.flags&cellStockout != 0}
}

// read returns the weeks of key in [lo, hi]; key is normalized. Callers hold t.mu shared.
func (t *tenant) read(key supplyplan.DemandKey, lo, hi int32) []supplyplan.WeekValue {
	if key.Channel != supplyplan.ChannelAll {
		return readOne(t.series[key], lo, hi)
	}
	chans := t.items[item{key.SKU, key.Location}]
	switch len(chans) {
	case 0:
		return nil
	case 1:
		return readOne(chans[0], lo, hi)
	}
	// Sum the channels week by week: a merge of sorted windows.
	type acc struct {
		day                int32
		actual, forecasted float64
		stockout           bool
	}
	var all []acc
	for _, s := range chans {
		for _, c := range s.window(lo, hi) {
			if c.served() {
				all = append(all, acc{c.day, c.actual + c.signals, c.forecast, c.flags&cellStockout != 0})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b acc) int { return int(a.day) - int(b.day) })
	var out []supplyplan.WeekValue
	for i := 0; i < len(all); {
		j, v := i, supplyplan.WeekValue{Week: dayTime(all[i].day)}
		for ; j < len(all) && all[j].day == all[i].day; j++ {
			v.Actual += all[j].actual
			v.Forecasted += all[j].forecasted
			v.Stockout = v.Stockout || all[j].stockout
		}
		out = append(out, v)
		i = j
	}
	return out
}

func readOne(s *series, lo, hi int32) []supplyplan.WeekValue {
	if s == nil {
		return nil
	}
	w := s.window(lo, hi)
	if len(w) == 0 {
		return nil
	}
	out := make([]supplyplan.WeekValue, 0, len(w))
	for i := range w {
		if w[i].served() {
			out = append(out, w[i].value())
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// keys returns the tenant's keys sorted. Callers hold t.mu shared.
func (t *tenant) keys() []supplyplan.DemandKey {
	out := make([]supplyplan.DemandKey, 0, len(t.series))
	for k := range t.series {
		out = append(out, k)
	}
	slices.SortFunc(out, compareKeys)
	return out
}

type groupKey struct {
	sku, location, channel string
	day                    int32
}

// aggregate sums the cells selected by q. Callers hold t.mu shared.
func (t *tenant) aggregate(q supplyplan.DemandQuery, group int) []supplyplan.DemandAggregate {
	lo, hi := dayRange(q.From, q.To)
	skus, locs, chans := setOf(q.SKUs), setOf(q.Locations), setOf(channelFilter(q.Channels))
	groups := map[groupKey]*supplyplan.DemandAggregate{}
	var total supplyplan.DemandAggregate
	for k, s := range t.series {
		if !skus.has(k.SKU) || !locs.has(k.Location) || !chans.has(k.Channel) {
			continue
		}
		w := s.window(lo, hi)
		if len(w) == 0 {
			continue
		}
		if group == 0 {
			for i := range w {
				if w[i].served() {
					total.Actual += w[i].actual + w[i].signals
					total.Forecasted += w[i].forecast
					total.Weeks++
				}
			}
			continue
		}
		var gk groupKey
		if group&groupSKU != 0 {
			gk.sku = k.SKU
		}
		if group&groupLocation != 0 {
			gk.location = k.Location
		}
		if group&groupChannel != 0 {
			gk.channel = k.Channel
		}
		for i := range w {
			if !w[i].served() {
				continue
			}
			if group&groupWeek != 0 {
				gk.day = w[i].day
			}
			a := groups[gk]
			if a == nil {
				a = &supplyplan.DemandAggregate{SKU: gk.sku, Location: gk.location, Channel: gk.channel}
				if group&groupWeek != 0 {
					a.Week = dayTime(gk.day)
				}
				groups[gk] = a
			}
			a.Actual += w[i].actual + w[i].signals
			a.Forecasted += w[i].forecast
			a.Weeks++
		}
	}
	if group == 0 {
		return []supplyplan.DemandAggregate{total}
	}
	out := make([]supplyplan.DemandAggregate, 0, len(groups))
	for _, a := range groups {
		out = append(out, *a)
	}
	sortAggregates(out)
	return out
}

// stringSet is a filter; nil admits everything.
type stringSet map[string]struct{}

func setOf(list []string) stringSet {
	if len(list) == 0 {
		return nil
	}
	s := make(stringSet, len(list))
	for _, v := range list {
		s[v] = struct{}{}
	}
	return s
}

func (s stringSet) has(v string) bool {
	if s == nil {
		return true
	}
	_, ok := s[v]
	return ok
}

// quarantined counts the tenant's cells that are not served. Callers hold t.mu (or own t).
func (t *tenant) quarantined() int {
	n := 0
	for _, s := range t.series {
		for i := range s.cells {
			if !s.cells[i].served() {
				n++
			}
		}
	}
	return n
}
