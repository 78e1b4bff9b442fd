package supplyplan

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// How GET /api/forecast/accuracy scores forecasts of record (RecordedForecasts) against the
// actuals that arrived later. The forecast service reads the versions and the demand history.

// AccuracyPoint is one forecast week scored against its actual.
type AccuracyPoint struct {
	Key      DemandKey
	Forecast float64
	Actual   float64
	// Scale is the series' mean absolute week-to-week change before the window (MASE's scale;
	// 0: unknown).
	Scale float64
}

// WindowActuals splits a series' weekly history (oldest first) at from: the actual of each week
// from from on, by its Monday, and the mean absolute change between consecutive weeks before from
// (0 with fewer than two of them).
func WindowActuals(weeks []WeekValue, from time.Time) (actuals map[time.Time]float64, scale float64) {
	actuals = map[time.Time]float64{}
	var diffs, n float64
	var prev *float64
	for _, w := range weeks {
		if w.Week.Before(from) {
			if prev != nil {
				diffs += math.Abs(w.Actual - *prev)
				n++
			}
			a := w.Actual
			prev = &a
			continue
		}
		actuals[WeekStart(w.Week)] = w.Actual
	}
	if n > 0 {
		scale = diffs / n
	}
	return actuals, scale
}

// ScoreAccuracy computes WAPE, bias, MAPE and MASE (rounded to RatioDecimals) per group of
// points (groupOf names a point's group). WAPE and bias need actuals; MAPE leaves out zero
// actuals; MASE needs a scale.
func ScoreAccuracy(points []AccuracyPoint, groupOf func(AccuracyPoint) string) map[string]AccuracyMetrics {
	type acc struct {
		absErr, err, absAct, fc, act, ape, scale float64
		n, nAPE, nScale                          int
	}
	by := map[string]*acc{}
	for _, p := range points {
		g := groupOf(p)
		a := by[g]
		if a == nil {
			a = &acc{}
			by[g] = a
		}
		e := p.Forecast - p.Actual
		a.absErr += math.Abs(e)
		a.err += e
		a.absAct += math.Abs(p.Actual)
		a.fc += p.Forecast
		a.act += p.Actual
		a.n++
		if p.Actual != 0 {
			a.ape += math.Abs(e) / math.Abs(p.Actual)
			a.nAPE++
		}
		if p.Scale > 0 {
			a.scale += p.Scale
			a.nScale++
		}
	}
	out := make(map[string]AccuracyMetrics, len(by))
	for g, a := range by {
		m := AccuracyMetrics{Points: a.n, Actual: Quantity(a.act), Forecast: Quantity(a.fc)}
		if a.absAct > 0 {
			w, b := RoundRatio(a.absErr/a.absAct), RoundRatio(a.err/a.absAct)
			m.WAPE, m.Bias = &w, &b
		}
		if a.nAPE > 0 {
			v := RoundRatio(a.ape / float64(a.nAPE))
			m.MAPE = &v
		}
		if a.nScale > 0 && a.scale > 0 {
			v := RoundRatio((a.absErr / float64(a.n)) / (a.scale / float64(a.nScale)))
			m.MASE = &v
		}
		out[g] = m
	}
	return out
}

// AccuracyBreakdown scores points overall, and by product, location and channel (each sorted).
func AccuracyBreakdown(points []AccuracyPoint) (overall AccuracyMetrics, byProduct, byLocation, byChannel []AccuracyMetrics) {
	overall = ScoreAccuracy(points, func(AccuracyPoint) string { return "" })[""]
	group := func(name func(AccuracyPoint) string, set func(*AccuracyMetrics, string)) []AccuracyMetrics {
		m := ScoreAccuracy(points, name)
		out := make([]AccuracyMetrics, 0, len(m))
		for k, v := range m {
			set(&v, k)
			out = append(out, v)
		}
		slices.SortFunc(out, func(a, b AccuracyMetrics) int {
			return cmp.Compare(a.ProductMasterID+"|"+a.LocationID+"|"+a.Channel, b.ProductMasterID+"|"+b.LocationID+"|"+b.Channel)
		})
		return out
	}
	byProduct = group(func(p AccuracyPoint) string { return p.Key.SKU }, func(m *AccuracyMetrics, k string) { m.ProductMasterID = k })
	byLocation = group(func(p AccuracyPoint) string { return p.Key.Location }, func(m *AccuracyMetrics, k string) { m.LocationID = k })
	byChannel = group(func(p AccuracyPoint) string { return p.Key.Channel }, func(m *AccuracyMetrics, k string) { m.Channel = k })
	return overall, byProduct, byLocation, byChannel
}
