package supplyplan

import (
	"context"
	"time"
)

// SeriesForecast is a weekly forecast of one (sku, location, channel) series.
type SeriesForecast struct {
	Key   DemandKey
	Model string
	// Start is the Monday of the first forecast week; week i starts Start + 7*i days.
	Start time.Time
	// Baseline is the statistical forecast; Quantity adds events and scenario lifts; Lower and
	// Upper bound the prediction interval.
	Baseline, Quantity, Lower, Upper []float64
}

// Total returns the forecast quantity of the first n weeks (all when n exceeds the horizon).
func (f SeriesForecast) Total(n int) float64 {
	var t float64
	for i := 0; i < n && i < len(f.Quantity); i++ {
		t += f.Quantity[i]
	}
	return t
}

// Forecaster predicts weekly demand. Transfers, alerts and the tool service use it; the forecast
// engine implements it.
type Forecaster interface {
	// ForecastSeries forecasts horizon weeks of key using only history before the week of asOf
	// (zero asOf: now); the first forecast week is the week of asOf.
	ForecastSeries(ctx context.Context, orgID string, key DemandKey, horizon int, asOf time.Time) (SeriesForecast, error)
}

// BatchForecaster forecasts many series at once (the engine implements it to use every core and
// its cache).
type BatchForecaster interface {
	ForecastBatch(ctx context.Context, orgID string, keys []DemandKey, horizon int, asOf time.Time) (map[DemandKey]SeriesForecast, error)
}

// ForecastMany forecasts keys with f's batch method when it has one, one by one otherwise. Series
// that cannot be forecast (no history) are absent from the result.
func ForecastMany(ctx context.Context, f Forecaster, orgID string, keys []DemandKey, horizon int, asOf time.Time) (map[DemandKey]SeriesForecast, error) {
	if b, ok := f.(BatchForecaster); ok {
		return b.ForecastBatch(ctx, orgID, keys, horizon, asOf)
	}
	out := make(map[DemandKey]SeriesForecast, len(keys))
	for _, k := range keys {
		sf, err := f.ForecastSeries(ctx, orgID, k, horizon, asOf)
		if err != nil {
			if ErrorCode(err) == ENOTFOUND {
				continue
			}
			return nil, err
		}
		out[k] = sf
	}
	return out, nil
}
