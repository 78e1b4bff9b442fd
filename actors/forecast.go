package actors

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics/forecast"
)

const week = 7 * 24 * time.Hour

// forecaster runs the forecast engine over tenants' data with three caches per tenant, all
// invalidated by version counters bumped on every change of demand or events: the event index, the
// learned lift model (per as-of week), and computed forecasts.
type forecaster struct {
	sys *System
	mu  sync.Mutex
	t   map[string]*tenantForecasts
}

type tenantForecasts struct {
	mu            sync.Mutex
	eventsVersion uint64
	demandVersion uint64
	index         *eventIndex
	lifts         map[time.Time]*liftEntry
	cache         map[cacheKey]cacheEntry
}

type liftEntry struct {
	eventsV, demandV uint64
	model            *forecast.LiftModel
	ready            chan struct{}
}

type cacheKey struct {
	key       supplyplan.DemandKey
	asOf      time.Time
	horizon   int
	interval  float64
	model     string
	point     string
	transform string
	noEvents  bool
}

type cacheEntry struct {
	eventsV, demandV uint64
	res              seriesResult
}

// seriesResult is one series' forecast (Result is zero and NoHistory true without history).
type seriesResult struct {
	Result       forecast.Result
	NoHistory    bool
	HistoryWeeks int
}

const maxCachedForecasts = 2_000_000

func newForecaster(sys *System) *forecaster {
	return &forecaster{sys: sys, t: map[string]*tenantForecasts{}}
}

func (f *forecaster) tenant(org string) *tenantForecasts {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.t[org]
	if t == nil {
		t = &tenantForecasts{lifts: map[time.Time]*liftEntry{}, cache: map[cacheKey]cacheEntry{}}
		f.t[org] = t
	}
	return t
}

// bumpEvents invalidates everything derived from a tenant's events ("" = every tenant: a global
// event changed).
func (f *forecaster) bumpEvents(org string) {
	if org == "" {
		f.mu.Lock()
		ts := make([]*tenantForecasts, 0, len(f.t))
		for _, t := range f.t {
			ts = append(ts, t)
		}
		f.mu.Unlock()
		for _, t := range ts {
			t.bump(true)
		}
		return
	}
	f.tenant(org).bump(true)
}

// bumpDemand invalidates everything derived from a tenant's demand history.
func (f *forecaster) bumpDemand(org string) { f.tenant(org).bump(false) }

func (t *tenantForecasts) bump(events bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if events {
		t.eventsVersion++
		t.index = nil
	} else {
		t.demandVersion++
	}
	t.cache = map[cacheKey]cacheEntry{}
	for k, e := range t.lifts {
		select {
		case <-e.ready:
			delete(t.lifts, k)
		default: // being computed: it will not match the new versions and gets replaced
		}
	}
}

// eventIndex holds a tenant's events (and the global ones) converted for the engine.
type eventIndex struct {
	version    uint64
	byProduct  map[string][]forecast.EventOccurrence // events with a product (maybe a location too)
	byLocation map[string][]forecast.EventOccurrence // events with a location and no product
	all        []forecast.EventOccurrence            // org-wide and global events
	byID       map[string]supplyplan.ExternalEvent
	count      int
}

func (ix *eventIndex) forSeries(product, location string) []forecast.EventOccurrence {
	out := make([]forecast.EventOccurrence, 0, len(ix.all)+len(ix.byProduct[product])+len(ix.byLocation[location]))
	out = append(out, ix.all...)
	for _, e := range ix.byProduct[product] {
		if e.LocationID == "" || e.LocationID == location {
			out = append(out, e)
		}
	}
	return append(out, ix.byLocation[location]...)
}

// index returns the tenant's current event index, building it from the tenant's state.
func (f *forecaster) index(ctx context.Context, org string) (*eventIndex, uint64, uint64, error) {
	t := f.tenant(org)
	t.mu.Lock()
	ix, ev, dv := t.index, t.eventsVersion, t.demandVersion
	t.mu.Unlock()
	if ix != nil {
		return ix, ev, dv, nil
	}
	events, err := tenantTx(ctx, f.sys, org, func(st *supplyplan.TenantState) ([]supplyplan.ExternalEvent, []supplyplan.Record, error) {
		out := make([]supplyplan.ExternalEvent, 0, len(st.Events))
		for _, e := range st.Events {
			out = append(out, *e)
		}
		return out, nil, nil
	})
	if err != nil {
		return nil, 0, 0, err
	}
	for _, g := range f.sys.index.Load().globalL {
		events = append(events, *g)
	}
	ix = &eventIndex{version: ev, byProduct: map[string][]forecast.EventOccurrence{},
		byLocation: map[string][]forecast.EventOccurrence{}, byID: make(map[string]supplyplan.ExternalEvent, len(events)), count: len(events)}
	slices.SortFunc(events, func(a, b supplyplan.ExternalEvent) int { return a.StartsAt.Compare(b.StartsAt) })
	for _, e := range events {
		ix.byID[e.ID] = e
		o := forecast.FromExternalEvent(e)
		switch {
		case e.ProductMasterID != "":
			ix.byProduct[e.ProductMasterID] = append(ix.byProduct[e.ProductMasterID], o)
		case e.LocationID != "":
			ix.byLocation[e.LocationID] = append(ix.byLocation[e.LocationID], o)
		default:
			ix.all = append(ix.all, o)
		}
	}
	t.mu.Lock()
	if t.eventsVersion == ev {
		t.index = ix
	}
	t.mu.Unlock()
	return ix, ev, dv, nil
}

// seriesKeys lists the (sku, location) series of a tenant for channel ALL, or the stored keys of a
// given channel, optionally of one product and/or location, sorted.
func (f *forecaster) seriesKeys(ctx context.Context, org, product, location, channel string) ([]supplyplan.DemandKey, error) {
	all, err := f.sys.cfg.Demand.Keys(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("list demand series: %w", err)
	}
	seen := map[supplyplan.DemandKey]bool{}
	var out []supplyplan.DemandKey
	for _, k := range all {
		if (product != "" && k.SKU != product) || (location != "" && k.Location != location) {
			continue
		}
		if channel == supplyplan.ChannelAll {
			k.Channel = supplyplan.ChannelAll
		} else if k.Channel != channel {
			continue
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.SKU != b.SKU {
			return a.SKU < b.SKU
		}
		if a.Location != b.Location {
			return a.Location < b.Location
		}
		return a.Channel < b.Channel
	})
	return out, nil
}

// liftModel returns the tenant's lifts learned from every series with events, on history before
// asOf's week. Concurrent callers share one computation.
func (f *forecaster) liftModel(ctx context.Context, org string, asOfWeek time.Time, ix *eventIndex, ev, dv uint64) (*forecast.LiftModel, error) {
	t := f.tenant(org)
	t.mu.Lock()
	e := t.lifts[asOfWeek]
	if e != nil && e.eventsV == ev && e.demandV == dv {
		t.mu.Unlock()
		select {
		case <-e.ready:
			return e.model, nil
		case <-ctx.Done():
			return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "Learning event lifts took too long")
		}
	}
	e = &liftEntry{eventsV: ev, demandV: dv, ready: make(chan struct{})}
	t.lifts[asOfWeek] = e
	t.mu.Unlock()
	defer close(e.ready)
	if ix.count == 0 {
		return nil, nil
	}
	start := time.Now()
	keys, err := f.seriesKeys(ctx, org, "", "", supplyplan.ChannelAll)
	if err != nil {
		t.mu.Lock()
		delete(t.lifts, asOfWeek)
		t.mu.Unlock()
		return nil, err
	}
	var withEvents []supplyplan.DemandKey
	for _, k := range keys {
		if len(ix.all) > 0 || len(ix.byProduct[k.SKU]) > 0 || len(ix.byLocation[k.Location]) > 0 {
			withEvents = append(withEvents, k)
		}
	}
	hist, err := f.sys.cfg.Demand.SeriesBatch(ctx, org, withEvents, time.Time{}, asOfWeek.Add(-time.Nanosecond))
	if err != nil {
		t.mu.Lock()
		delete(t.lifts, asOfWeek)
		t.mu.Unlock()
		return nil, fmt.Errorf("read history for lifts: %w", err)
	}
	histories := make([]forecast.SeriesHistory, 0, len(withEvents))
	for _, k := range withEvents {
		weeks := hist[k]
		if len(weeks) == 0 {
			continue
		}
		histories = append(histories, forecast.SeriesHistory{Series: forecast.FromWeekValues(seriesKey(k), weeks), Events: ix.forSeries(k.SKU, k.Location)})
	}
	e.model = forecast.LearnLifts(histories, forecast.LiftOptions{})
	f.sys.log.Debug("learned event lifts", "org", org, "series", len(histories), "asOf", asOfWeek, "took", time.Since(start))
	return e.model, nil
}

func seriesKey(k supplyplan.DemandKey) forecast.SeriesKey {
	return forecast.SeriesKey{ID: k.SKU + "|" + k.Location, ProductID: k.SKU, LocationID: k.Location}
}

// run forecasts keys (history before asOf's week; the first forecast week is asOf's week).
func (f *forecaster) run(ctx context.Context, org string, keys []supplyplan.DemandKey, opt forecast.Options, asOf time.Time) ([]seriesResult, *eventIndex, error) {
	return f.runWith(ctx, org, keys, opt, asOf, false)
}

// runWith is run, optionally without any event (the pure statistical forecast).
func (f *forecaster) runWith(ctx context.Context, org string, keys []supplyplan.DemandKey, opt forecast.Options, asOf time.Time, noEvents bool) ([]seriesResult, *eventIndex, error) {
	if err := opt.Validate(); err != nil {
		return nil, nil, err
	}
	if asOf.IsZero() {
		asOf = time.Now()
	}
	asOfWeek := supplyplan.WeekStart(asOf)
	ix, ev, dv, err := f.index(ctx, org)
	if err != nil {
		return nil, nil, err
	}
	t := f.tenant(org)
	out := make([]seriesResult, len(keys))
	var miss []int
	t.mu.Lock()
	for i, k := range keys {
		ck := cacheKey{key: k, asOf: asOfWeek, horizon: opt.Horizon, interval: opt.Interval, model: opt.Model, point: opt.Point, transform: opt.Transform, noEvents: noEvents}
		if c, ok := t.cache[ck]; ok && c.eventsV == ev && c.demandV == dv {
			out[i] = c.res
		} else {
			miss = append(miss, i)
		}
	}
	t.mu.Unlock()
	if len(miss) == 0 {
		return out, ix, nil
	}
	var lifts *forecast.LiftModel
	if !noEvents {
		if lifts, err = f.liftModel(ctx, org, asOfWeek, ix, ev, dv); err != nil {
			return nil, nil, err
		}
	}
	missKeys := make([]supplyplan.DemandKey, len(miss))
	for j, i := range miss {
		missKeys[j] = keys[i]
	}
	hist, err := f.sys.cfg.Demand.SeriesBatch(ctx, org, missKeys, time.Time{}, asOfWeek.Add(-time.Nanosecond))
	if err != nil {
		return nil, nil, fmt.Errorf("read demand history: %w", err)
	}
	jobs := make([]forecast.Job, 0, len(miss))
	jobOf := make([]int, 0, len(miss))
	for _, i := range miss {
		k := keys[i]
		weeks := hist[k]
		if len(weeks) == 0 {
			out[i] = seriesResult{NoHistory: true}
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
		var events []forecast.EventOccurrence
		if !noEvents {
			events = ix.forSeries(k.SKU, k.Location)
		}
		jobs = append(jobs, forecast.Job{Series: s, Events: events})
		jobOf = append(jobOf, i)
		out[i].HistoryWeeks = len(weeks)
	}
	var results []forecast.Result
	var errs []error
	if isBackground(ctx) {
		// Background callers (alert evaluation) forecast on one goroutine and leave the other cores
		// to requests.
		results, errs = make([]forecast.Result, len(jobs)), make([]error, len(jobs))
		for j := range jobs {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			results[j], errs[j] = forecast.Forecast(jobs[j].Series, jobs[j].Events, lifts, opt)
		}
	} else {
		results, errs = forecast.ForecastBatch(jobs, lifts, opt)
	}
	for j, i := range jobOf {
		if errs[j] != nil {
			if supplyplan.ErrorCode(errs[j]) == supplyplan.EVALIDATION {
				return nil, nil, errs[j]
			}
			return nil, nil, fmt.Errorf("forecast %s at %s: %w", keys[i].SKU, keys[i].Location, errs[j])
		}
		out[i].Result = results[j]
	}
	t.mu.Lock()
	if t.eventsVersion == ev && t.demandVersion == dv {
		if len(t.cache)+len(miss) > maxCachedForecasts {
			t.cache = map[cacheKey]cacheEntry{}
		}
		for _, i := range miss {
			ck := cacheKey{key: keys[i], asOf: asOfWeek, horizon: opt.Horizon, interval: opt.Interval, model: opt.Model, point: opt.Point, transform: opt.Transform, noEvents: noEvents}
			t.cache[ck] = cacheEntry{eventsV: ev, demandV: dv, res: out[i]}
		}
	}
	t.mu.Unlock()
	return out, ix, nil
}

// ForecastSeries implements supplyplan.Forecaster (mean forecasts: what sums of demand need).
func (s *System) ForecastSeries(ctx context.Context, orgID string, key supplyplan.DemandKey, horizon int, asOf time.Time) (supplyplan.SeriesForecast, error) {
	m, err := s.ForecastBatch(ctx, orgID, []supplyplan.DemandKey{key}, horizon, asOf)
	if err != nil {
		return supplyplan.SeriesForecast{}, err
	}
	sf, ok := m[key]
	if !ok {
		return sf, supplyplan.Errorf(supplyplan.ENOTFOUND, "No demand history for %s at %s", key.SKU, key.Location)
	}
	return sf, nil
}

// ForecastBatch implements supplyplan.BatchForecaster; series without history are left out.
func (s *System) ForecastBatch(ctx context.Context, orgID string, keys []supplyplan.DemandKey, horizon int, asOf time.Time) (map[supplyplan.DemandKey]supplyplan.SeriesForecast, error) {
	if s.cfg.Demand == nil {
		return map[supplyplan.DemandKey]supplyplan.SeriesForecast{}, nil
	}
	res, _, err := s.fc.run(ctx, orgID, keys, forecast.Options{Horizon: horizon, Point: forecast.PointMean}, asOf)
	if err != nil {
		return nil, err
	}
	out := make(map[supplyplan.DemandKey]supplyplan.SeriesForecast, len(keys))
	for i, r := range res {
		if r.NoHistory {
			continue
		}
		sf := supplyplan.SeriesForecast{Key: keys[i], Model: r.Result.Model}
		for j, p := range r.Result.Periods {
			if j == 0 {
				sf.Start = p.WeekStart
			}
			sf.Baseline = append(sf.Baseline, p.Baseline)
			sf.Quantity = append(sf.Quantity, p.Quantity)
			sf.Lower = append(sf.Lower, p.Lower)
			sf.Upper = append(sf.Upper, p.Upper)
		}
		out[keys[i]] = sf
	}
	return out, nil
}

var (
	_ supplyplan.Forecaster      = (*System)(nil)
	_ supplyplan.BatchForecaster = (*System)(nil)
)

type backgroundKey struct{}

// background marks ctx as background work: the forecasts it asks for run on one goroutine.
func background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

func isBackground(ctx context.Context) bool { v, _ := ctx.Value(backgroundKey{}).(bool); return v }
