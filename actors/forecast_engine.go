package actors

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics/forecast"
)

const week = 7 * 24 * time.Hour

// forecaster runs the forecast engine over tenants' data. It keeps two caches, both invalidated
// in proportion to what a change touches, never wholesale on an event write:
//
//   - computed forecasts, in one LRU bounded in bytes across tenants. An entry is stamped with the
//     tenant's change clock when its inputs were read; it is valid while no change touched its
//     series since (an event of the series, of its product or location, an org-wide or global
//     event, a demand write), and while the lift model it used is still current.
//   - learned lift models per as-of week, a few per tenant. A model for week W is learned on the
//     history before W, so an event write drops only the models of weeks after the event's start:
//     a promotion planned in the future never costs a relearn.
//
// Nothing is kept per change: a write moves stamps in maps sized by the tenant's products,
// locations and series.
type forecaster struct {
	core   *Core
	demand supplyplan.DemandStore
	log    *slog.Logger
	mu     sync.Mutex
	t      map[string]*tenantForecasts
	cache  *resultCache
}

// tenantForecasts is one tenant's change clock, per-scope stamps and lift models.
type tenantForecasts struct {
	mu         sync.Mutex
	clock      uint64
	allAt      uint64               // org-wide or global events, demand
	productAt  map[string]uint64    // events of a product (no location)
	locationAt map[string]uint64    // events of a location (no product)
	seriesAt   map[[2]string]uint64 // events of a product at a location
	lifts      map[int64]*liftSlot  // by as-of week (Unix seconds)
	liftGen    uint64
}

// liftSlot holds the lift models of one as-of week: the current one (nil once a change made it
// out of date), and the last one learned, which background work (alert evaluation, change
// history figures) may go on using for a while after such a change instead of learning again
// after every event write.
type liftSlot struct {
	cur, last *liftEntry
	learnedAt time.Time     // when the last learning ended
	took      time.Duration // how long it took
	used      uint64        // the tenant clock at the last use (eviction order)
}

// liftEntry is one learned lift model; ready is closed once model is set.
type liftEntry struct {
	gen   uint64
	model *forecast.LiftModel
	err   error
	ready chan struct{}
}

func (e *liftEntry) done() bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

// Lift models kept per tenant (as-of weeks asked for recently), and how often background work
// learns them again after event writes: a model over every series costs time in proportion to
// the tenant's events, so background relearning is spaced by ten times its cost (at least
// minRelearn), which bounds the share of a core it takes whatever the write rate. Requests
// always get a model that includes every acknowledged write.
const (
	maxLiftModels = 16
	minRelearn    = 2 * time.Second
)

// Horizons are computed in these sizes and truncated to the one asked for, so that the same
// computation (and cache entry) answers every horizon up to its size.
var computeHorizons = []int{supplyplan.DefaultHorizonWeeks, 26, 52, 104, 208, forecast.MaxHorizon}

func computeHorizon(h int) int {
	for _, c := range computeHorizons {
		if h <= c {
			return c
		}
	}
	return h
}

// DefaultForecastCacheBytes is the default bound of the forecast cache.
const DefaultForecastCacheBytes = 1 << 30

func newForecaster(core *Core, demand supplyplan.DemandStore, cacheBytes int64) *forecaster {
	if cacheBytes <= 0 {
		cacheBytes = DefaultForecastCacheBytes
	}
	log := slog.New(slog.DiscardHandler)
	if core != nil {
		log = core.log
	}
	f := &forecaster{core: core, demand: demand, log: log, t: map[string]*tenantForecasts{}, cache: newResultCache(cacheBytes)}
	if core != nil {
		core.metrics.Gauge("supplyplan_forecast_cache_entries", func() float64 { n, _ := f.cache.stats(); return float64(n) })
		core.metrics.Gauge("supplyplan_forecast_cache_bytes", func() float64 { _, b := f.cache.stats(); return float64(b) })
	}
	return f
}

func (f *forecaster) tenant(org string) *tenantForecasts {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.t[org]
	if t == nil {
		t = &tenantForecasts{productAt: map[string]uint64{}, locationAt: map[string]uint64{},
			seriesAt: map[[2]string]uint64{}, lifts: map[int64]*liftSlot{}}
		f.t[org] = t
	}
	return t
}

func (f *forecaster) tenants() []*tenantForecasts {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*tenantForecasts, 0, len(f.t))
	for _, t := range f.t {
		out = append(out, t)
	}
	return out
}

// eventsChanged invalidates what depends on the given versions of an event (before and after a
// write; nil ones are skipped): the forecasts of the series in its scope, and the lift models
// whose history it overlaps.
func (f *forecaster) eventsChanged(org string, versions ...*supplyplan.ExternalEvent) {
	t := f.tenant(org)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clock++
	for _, e := range versions {
		if e == nil {
			continue
		}
		switch {
		case e.IsGlobal || e.IsOrgWide || (e.ProductMasterID == "" && e.LocationID == ""):
			t.allAt = t.clock
		case e.ProductMasterID != "" && e.LocationID != "":
			t.seriesAt[[2]string{e.ProductMasterID, e.LocationID}] = t.clock
		case e.ProductMasterID != "":
			t.productAt[e.ProductMasterID] = t.clock
		default:
			t.locationAt[e.LocationID] = t.clock
		}
		for w, sl := range t.lifts {
			if sl.cur != nil && e.StartsAt.Before(time.Unix(w, 0)) { // the event overlaps week w's history
				sl.cur = nil
			}
		}
	}
}

// bumpEvents invalidates everything derived from a tenant's events ("" = every tenant: a global
// event changed).
func (f *forecaster) bumpEvents(org string) {
	if org == "" {
		for _, t := range f.tenants() {
			t.invalidateAll()
		}
		return
	}
	f.tenant(org).invalidateAll()
}

// bumpDemand invalidates everything derived from a tenant's demand history.
func (f *forecaster) bumpDemand(org string) { f.tenant(org).invalidateAll() }

func (t *tenantForecasts) invalidateAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clock++
	t.allAt = t.clock
	// Every older stamp is now below allAt: the scope maps start again (they hold the scopes
	// written since the last demand write, never one entry per write).
	clear(t.productAt)
	clear(t.locationAt)
	clear(t.seriesAt)
	clear(t.lifts) // a model being learned still serves its waiters; nothing new uses it
}

// stampOf is the clock of the last change that touched series k (t.mu held).
func (t *tenantForecasts) stampOf(k supplyplan.DemandKey) uint64 {
	return max(t.allAt, t.productAt[k.SKU], t.locationAt[k.Location], t.seriesAt[[2]string{k.SKU, k.Location}])
}

// liftsCurrent reports whether the lift model of generation gen for week w is still the one in
// use, or for background work the last one learned (t.mu held).
func (t *tenantForecasts) liftsCurrent(w int64, gen uint64, bg bool) bool {
	sl := t.lifts[w]
	return sl != nil && (sl.cur != nil && sl.cur.gen == gen || bg && sl.last != nil && sl.last.gen == gen)
}

// eventsOf returns, for each scope (a series, or a total when product and/or location is
// empty, see TenantState.EventsFor), the events that apply to it, sorted by start then id. Only
// the events asked for are copied out of the tenant's state.
func (f *forecaster) eventsOf(ctx context.Context, org string, keys []supplyplan.DemandKey) ([][]*supplyplan.ExternalEvent, error) {
	out, err := tenantTx(ctx, f.core, org, func(st *supplyplan.TenantState) ([][]*supplyplan.ExternalEvent, []supplyplan.Record, error) {
		out := make([][]*supplyplan.ExternalEvent, len(keys))
		for i, k := range keys {
			if st.HasEventsFor(k.SKU, k.Location) {
				out[i] = st.EventsFor(k.SKU, k.Location, nil)
			}
		}
		return out, nil, nil
	})
	if err != nil {
		return nil, err
	}
	globals := f.core.globalEvents()
	for i := range out {
		out[i] = append(out[i], globals...)
		supplyplan.SortEvents(out[i])
	}
	return out, nil
}

// occurrences converts events for the engine (only those starting before `before` when it is
// not zero).
func occurrences(events []*supplyplan.ExternalEvent, before time.Time) []forecast.EventOccurrence {
	if len(events) == 0 {
		return nil
	}
	out := make([]forecast.EventOccurrence, 0, len(events))
	for _, e := range events {
		if !before.IsZero() && !e.StartsAt.Before(before) {
			continue
		}
		out = append(out, forecast.FromExternalEvent(*e))
	}
	return out
}

func hasLearned(events []*supplyplan.ExternalEvent) bool {
	for _, e := range events {
		if e.Value == nil || e.Value.LiftPct == nil {
			return true
		}
	}
	return false
}

// seriesKeys lists the (sku, location) series of a tenant for channel ALL, or the stored keys of a
// given channel, optionally of one product and/or location, sorted. The store's keys are sorted
// by sku, location, channel, so the channels of a series are adjacent: they are merged in place,
// without a set or another sort (a tenant of millions of series pages through this).
func (f *forecaster) seriesKeys(ctx context.Context, org, product, location, channel string) ([]supplyplan.DemandKey, error) {
	all, err := f.demand.Keys(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("list demand series: %w", err)
	}
	out := all[:0] // Keys returns a slice of the caller's
	for _, k := range all {
		if (product != "" && k.SKU != product) || (location != "" && k.Location != location) {
			continue
		}
		if channel == supplyplan.ChannelAll {
			k.Channel = supplyplan.ChannelAll
		} else if k.Channel != channel {
			continue
		}
		if n := len(out); n > 0 && out[n-1] == k {
			continue
		}
		out = append(out, k)
	}
	return out, nil
}

// liftModel returns the tenant's lifts learned from every series with events, on history before
// asOfWeek, and the model's generation. Concurrent callers share one computation. Requests get a
// model that includes every event write acknowledged before they asked; background callers may
// get the last model learned when a newer one is being learned or was learned less than its
// relearn interval ago.
func (f *forecaster) liftModel(ctx context.Context, org string, asOfWeek time.Time) (*forecast.LiftModel, uint64, error) {
	t := f.tenant(org)
	w := asOfWeek.Unix()
	bg := isBackground(ctx)
	t.mu.Lock()
	sl := t.lifts[w]
	if sl == nil {
		t.evictLifts()
		sl = &liftSlot{}
		t.lifts[w] = sl
	}
	sl.used = t.clock
	if e := sl.cur; e != nil {
		if !e.done() && bg && sl.last != nil {
			e = sl.last
		}
		t.mu.Unlock()
		select {
		case <-e.ready:
			return e.model, e.gen, e.err
		case <-ctx.Done():
			return nil, 0, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "Learning event lifts took too long")
		}
	}
	if bg && sl.last != nil && time.Since(sl.learnedAt) < max(minRelearn, 10*sl.took) {
		e := sl.last
		t.mu.Unlock()
		return e.model, e.gen, nil
	}
	t.liftGen++
	e := &liftEntry{gen: t.liftGen, ready: make(chan struct{})}
	sl.cur = e
	t.mu.Unlock()
	start := time.Now()
	model, err := f.learn(ctx, org, asOfWeek)
	t.mu.Lock()
	if err != nil {
		e.err = err
		if sl.cur == e {
			sl.cur = nil
		}
	} else {
		e.model = model
		sl.learnedAt, sl.took = time.Now(), time.Since(start)
		if sl.last == nil || sl.last.gen < e.gen {
			sl.last = e
		}
	}
	t.mu.Unlock()
	close(e.ready)
	if err != nil {
		return nil, 0, err
	}
	return model, e.gen, nil
}

// evictLifts makes room for one more as-of week, dropping the least recently used (t.mu held).
func (t *tenantForecasts) evictLifts() {
	if len(t.lifts) < maxLiftModels {
		return
	}
	var oldest int64
	var found bool
	for k, sl := range t.lifts {
		if sl.cur != nil && !sl.cur.done() {
			continue // being learned: its callers are waiting for it
		}
		if !found || sl.used < t.lifts[oldest].used {
			oldest, found = k, true
		}
	}
	if found {
		delete(t.lifts, oldest)
	}
}

// learn learns the lift model of asOfWeek: every series with history and events, the events
// that start before the week.
func (f *forecaster) learn(ctx context.Context, org string, asOfWeek time.Time) (*forecast.LiftModel, error) {
	start := time.Now()
	keys, err := f.seriesKeys(ctx, org, "", "", supplyplan.ChannelAll)
	if err != nil {
		return nil, err
	}
	evs, err := f.eventsOf(ctx, org, keys)
	if err != nil {
		return nil, err
	}
	var withEvents []supplyplan.DemandKey
	var occs [][]forecast.EventOccurrence
	for i, k := range keys {
		if o := occurrences(evs[i], asOfWeek); len(o) > 0 {
			withEvents = append(withEvents, k)
			occs = append(occs, o)
		}
	}
	evs = nil
	if len(withEvents) == 0 { // an empty model: learned events get their type's prior
		return forecast.LearnLifts(nil, forecast.LiftOptions{}), nil
	}
	hist, err := f.demand.SeriesBatch(ctx, org, withEvents, time.Time{}, asOfWeek.Add(-time.Nanosecond))
	if err != nil {
		return nil, fmt.Errorf("read history for lifts: %w", err)
	}
	histories := make([]forecast.SeriesHistory, 0, len(withEvents))
	for i, k := range withEvents {
		if weeks := hist[k]; len(weeks) > 0 {
			histories = append(histories, forecast.SeriesHistory{Series: forecast.FromWeekValues(seriesKey(k), weeks), Events: occs[i]})
		}
	}
	model := forecast.LearnLifts(histories, forecast.LiftOptions{})
	f.log.Debug("learned event lifts", "org", org, "series", len(histories), "asOf", asOfWeek, "took", time.Since(start))
	return model, nil
}

func seriesKey(k supplyplan.DemandKey) forecast.SeriesKey {
	return forecast.SeriesKey{ID: k.SKU + "|" + k.Location, ProductID: k.SKU, LocationID: k.Location}
}

// run forecasts keys (history before asOf's week; the first forecast week is asOf's week).
func (f *forecaster) run(ctx context.Context, org string, keys []supplyplan.DemandKey, opt forecast.Options, asOf time.Time) ([]seriesResult, error) {
	return f.runWith(ctx, org, keys, opt, asOf, false)
}

// runWith is run, optionally without any event (the pure statistical forecast). A week's
// forecast does not depend on the horizon asked for: the engine selects and fits the same way
// for every horizon, and the result is computed at computeHorizon(opt.Horizon) and truncated.
func (f *forecaster) runWith(ctx context.Context, org string, keys []supplyplan.DemandKey, opt forecast.Options, asOf time.Time, noEvents bool) ([]seriesResult, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if asOf.IsZero() {
		asOf = time.Now()
	}
	asOfWeek := supplyplan.WeekStart(asOf)
	want := opt.Horizon
	opt.Horizon = computeHorizon(want)
	t := f.tenant(org)
	t.mu.Lock()
	stamp := t.clock
	t.mu.Unlock()

	ckeys := make([]cacheKey, len(keys))
	for i, k := range keys {
		ckeys[i] = cacheKey{org: org, key: k, asOf: asOfWeek.Unix(), horizon: opt.Horizon, interval: opt.Interval,
			model: opt.Model, point: opt.Point, transform: opt.Transform, noEvents: noEvents}
	}
	out := make([]seriesResult, len(keys))
	bg := isBackground(ctx)
	hits := f.cache.get(ckeys)
	var miss []int
	t.mu.Lock()
	for i, c := range hits {
		if c == nil || !c.serves(want) || t.stampOf(keys[i]) > c.stamp || (c.liftGen != 0 && !t.liftsCurrent(c.key.v.asOf, c.liftGen, bg)) {
			miss = append(miss, i)
			hits[i] = nil
		}
	}
	t.mu.Unlock()
	for i, c := range hits {
		if c != nil {
			out[i] = c.result(want)
		}
	}
	if f.core != nil {
		f.core.metrics.Forecasts(len(keys)-len(miss), len(miss))
	}
	if len(miss) == 0 {
		return out, nil
	}

	missKeys := make([]supplyplan.DemandKey, len(miss))
	for j, i := range miss {
		missKeys[j] = keys[i]
	}
	var events [][]*supplyplan.ExternalEvent
	var lifts *forecast.LiftModel
	var liftGen uint64
	if !noEvents {
		var err error
		if events, err = f.eventsOf(ctx, org, missKeys); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(events, hasLearned) {
			if lifts, liftGen, err = f.liftModel(ctx, org, asOfWeek); err != nil {
				return nil, err
			}
		}
	}
	hist, err := f.demand.SeriesBatch(ctx, org, missKeys, time.Time{}, asOfWeek.Add(-time.Nanosecond))
	if err != nil {
		return nil, fmt.Errorf("read demand history: %w", err)
	}
	jobs := make([]forecast.Job, 0, len(miss))
	jobOf := make([]int, 0, len(miss))
	full := make([]seriesResult, len(miss))
	for j, i := range miss {
		k := keys[i]
		weeks := hist[k]
		if len(weeks) == 0 {
			full[j] = seriesResult{NoHistory: true}
			continue
		}
		s := forecast.FromWeekValues(seriesKey(k), weeks)
		// Weeks between the last recorded one and asOf are missing, not zero: pad with NaN so that
		// the forecast starts at asOf's week.
		for end := s.Start.Add(time.Duration(len(s.Values)) * week); end.Before(asOfWeek); end = end.Add(week) {
			s.Values = append(s.Values, math.NaN())
			if s.Stockout != nil {
				s.Stockout = append(s.Stockout, false)
			}
		}
		var occ []forecast.EventOccurrence
		if events != nil {
			occ = occurrences(events[j], time.Time{})
		}
		jobs = append(jobs, forecast.Job{Series: s, Events: occ})
		jobOf = append(jobOf, j)
		full[j].HistoryWeeks = len(weeks)
	}
	var results []forecast.Result
	var errs []error
	if isBackground(ctx) {
		// Background callers (alert evaluation, change history) forecast on one goroutine and
		// leave the other cores to requests.
		results, errs = make([]forecast.Result, len(jobs)), make([]error, len(jobs))
		for j := range jobs {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			results[j], errs[j] = forecast.Forecast(jobs[j].Series, jobs[j].Events, lifts, opt)
		}
	} else {
		results, errs = forecast.ForecastBatch(jobs, lifts, opt)
	}
	for r, j := range jobOf {
		if errs[r] != nil {
			k := keys[miss[j]]
			if supplyplan.ErrorCode(errs[r]) == supplyplan.EVALIDATION {
				return nil, errs[r]
			}
			return nil, fmt.Errorf("forecast %s at %s: %w", k.SKU, k.Location, errs[r])
		}
		full[j].Result = results[r]
	}
	entries := make([]*cacheEntry, len(miss))
	for j, i := range miss {
		// The entry keeps the weeks asked for: a later call wanting more computes them again.
		e := &cacheEntry{k: ckeys[i], stamp: stamp, res: full[j].truncated(want)}
		if events != nil && hasLearned(events[j]) {
			e.liftGen = liftGen
		}
		entries[j] = e
		out[i] = full[j].truncated(want)
	}
	f.cache.put(entries)
	return out, nil
}

type backgroundKey struct{}

// background marks ctx as background work: the forecasts it asks for run on one goroutine.
func background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

func isBackground(ctx context.Context) bool { v, _ := ctx.Value(backgroundKey{}).(bool); return v }
