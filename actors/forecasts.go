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

// meanForecasts forecasts keys with the engine, mean point, straight from its batch run and cache
// (no copies; nil without a demand store).
func (s *Forecasts) meanForecasts(ctx context.Context, org string, keys []supplyplan.DemandKey, weeks int, asOf time.Time) ([]seriesResult, error) {
	if s.demand == nil {
		return nil, nil
	}
	return s.fc.run(ctx, org, keys, forecast.Options{Horizon: weeks, Point: forecast.PointMean}, asOf)
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
	res, err := s.fc.run(ctx, orgID, keys, forecast.Options{Horizon: horizon, Point: forecast.PointMean}, asOf)
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
