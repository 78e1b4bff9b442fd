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
