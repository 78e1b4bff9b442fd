package actors

import (
	"context"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics/forecast"
)

// Forecasts is the forecast service: the forecasting engine over a tenant's demand history and
// events (forecast_engine.go: its caches, invalidated by what each write touches), the forecast
// views of the API (a series, scenarios, projections, accuracy, event lifts), the versions a
// scenario's generation stores, and the figures of change-history entries (forecast_changes.go).
// It is also the service's Forecaster for transfers, alerts and the tools.
type Forecasts struct {
	core    *Core
	demand  supplyplan.DemandStore
	fc      *forecaster
	changes *changeRecorder
}

// NewForecasts returns the forecast service; cacheBytes bounds its cache of computed forecasts
// across tenants (0: DefaultForecastCacheBytes). Open resumes the change-history figures a stop
// left pending.
func NewForecasts(core *Core, demand supplyplan.DemandStore, cacheBytes int64) *Forecasts {
	s := &Forecasts{core: core, demand: demand, fc: newForecaster(core, demand, cacheBytes)}
	s.changes = newChangeRecorder(s)
	return s
}

var (
	_ supplyplan.ForecastService = (*Forecasts)(nil)
	_ supplyplan.Forecaster      = (*Forecasts)(nil)
	_ supplyplan.BatchForecaster = (*Forecasts)(nil)
)

// Open computes the change-history figures left pending by a stop or a crash.
func (s *Forecasts) Open(context.Context) error {
	for _, org := range s.core.orgs() {
		s.changes.schedule(org)
	}
	s.core.onRestore("change history", func(_ context.Context, orgs []string) error {
		for _, org := range orgs {
			if org != supplyplan.PlatformOwner {
				s.changes.schedule(org)
			}
		}
		return nil
	})
	return nil
}

// Close stops the change-history rounds in progress; pending entries stay pending in the journal.
func (s *Forecasts) Close(context.Context) error {
	s.changes.close()
	return nil
}

// eventWritten invalidates the forecasts an event write touches and wakes the change recorder,
// which computes the figures of pending change-history entries.
func (s *Forecasts) eventWritten(org string, old, new *supplyplan.ExternalEvent) {
	s.fc.eventsChanged(org, old, new)
	s.changes.schedule(org)
}

// globalEventsChanged invalidates every tenant's forecasts: a global event changed.
func (s *Forecasts) globalEventsChanged() { s.fc.bumpEvents("") }

// demandChanged invalidates the forecasts of a tenant whose demand history changed.
func (s *Forecasts) demandChanged(org string) { s.fc.bumpDemand(org) }

// meanQuantities forecasts keys with the engine, mean point, straight from its batch run and
// cache, chunk by chunk, and returns each series' forecast quantities (nil without history; a nil
// slice without a demand store).
func (s *Forecasts) meanQuantities(ctx context.Context, org string, keys []supplyplan.DemandKey, weeks int, asOf time.Time) ([][]float64, error) {
	if s.demand == nil {
		return nil, nil
	}
	out := make([][]float64, 0, len(keys))
	err := s.meanChunks(ctx, org, keys, weeks, asOf, func(_ supplyplan.DemandKey, r *seriesResult) {
		if r.NoHistory {
			out = append(out, nil)
			return
		}
		q := make([]float64, r.numPeriods())
		for w := range q {
			q[w] = r.period(w).Quantity
		}
		out = append(out, q)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ForecastSeries implements supplyplan.Forecaster (mean forecasts: what sums of demand need).
func (s *Forecasts) ForecastSeries(ctx context.Context, orgID string, key supplyplan.DemandKey, horizon int, asOf time.Time) (supplyplan.SeriesForecast, error) {
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

// ForecastBatch implements supplyplan.BatchForecaster; series without history are left out. The
// figures are those of GET /api/forecast with the service's default point (the mean).
func (s *Forecasts) ForecastBatch(ctx context.Context, orgID string, keys []supplyplan.DemandKey, horizon int, asOf time.Time) (map[supplyplan.DemandKey]supplyplan.SeriesForecast, error) {
	if s.demand == nil {
		return map[supplyplan.DemandKey]supplyplan.SeriesForecast{}, nil
	}
	out := make(map[supplyplan.DemandKey]supplyplan.SeriesForecast, len(keys))
	err := s.meanChunks(ctx, orgID, keys, horizon, asOf, func(k supplyplan.DemandKey, r *seriesResult) {
		if r.NoHistory {
			return
		}
		sf := supplyplan.SeriesForecast{Key: k, Model: r.Result.Model}
		for j := 0; j < r.numPeriods(); j++ {
			p := r.period(j)
			if j == 0 {
				sf.Start = p.WeekStart
			}
			sf.Baseline = append(sf.Baseline, p.Baseline)
			sf.Quantity = append(sf.Quantity, p.Quantity)
			sf.Lower = append(sf.Lower, p.Lower)
			sf.Upper = append(sf.Upper, p.Upper)
		}
		out[k] = sf
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// meanChunk is the number of series a bulk caller forecasts at once: results served from the
// cache are built per call, so a call over every series of a big tenant is cut in chunks.
const meanChunk = 8192

// meanChunks forecasts keys (mean point) chunk by chunk and hands each result to fn, in order.
func (s *Forecasts) meanChunks(ctx context.Context, org string, keys []supplyplan.DemandKey, weeks int, asOf time.Time,
	fn func(supplyplan.DemandKey, *seriesResult)) error {
	for len(keys) > 0 {
		n := min(len(keys), meanChunk)
		res, err := s.fc.run(ctx, org, keys[:n], forecast.Options{Horizon: weeks, Point: forecast.PointMean}, asOf)
		if err != nil {
			return err
		}
		for i := range res {
			fn(keys[i], &res[i])
		}
		keys = keys[n:]
	}
	return nil
}
