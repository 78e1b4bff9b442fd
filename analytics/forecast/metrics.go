package forecast

import "math"

// Accuracy measures forecasts against actuals. A metric whose denominator is zero is omitted
// (nil). Ratios are fractions: 0.25 means 25%.
type Accuracy struct {
	// WAPE is Σ|F-A| / Σ|A|.
	WAPE *float64 `json:"wape,omitempty"`
	// MASE is mean|F-A| divided by the mean absolute one-week change of the actuals before the
	// scored window (non-seasonal scaling: the in-sample naive forecast's error).
	MASE *float64 `json:"mase,omitempty"`
	// Bias is Σ(F-A) / Σ|A|: positive when forecasts run high.
	Bias *float64 `json:"bias,omitempty"`
	// SMAPE is the mean of 2|F-A| / (|F|+|A|) over pairs not both zero (0 to 2).
	SMAPE *float64 `json:"smape,omitempty"`
	// MAPE is the mean of |F-A| / |A| over actuals other than zero.
	MAPE *float64 `json:"mape,omitempty"`
	// Window is the number of most recent weeks whose actuals were scored.
	Window int `json:"window"`
	// Points is the number of (origin, step) forecasts scored.
	Points int `json:"points"`
}

// accum accumulates accuracy sums.
type accum struct {
	absErr, err, absAct, ape, sape float64
	n, nape, nsape                 int
}

func (a *accum) add(f, y float64) {
	e := f - y
	a.absErr += math.Abs(e)
	a.err += e
	a.absAct += math.Abs(y)
	a.n++
	if y != 0 {
		a.ape += math.Abs(e) / math.Abs(y)
		a.nape++
	}
	if d := math.Abs(f) + math.Abs(y); d > 0 {
		a.sape += 2 * math.Abs(e) / d
		a.nsape++
	}
}

func ratio(num, den float64) *float64 {
	if den == 0 || math.IsNaN(num) || math.IsInf(num, 0) {
		return nil
	}
	v := num / den
	return &v
}

func (a *accum) result(scale float64, window int) Accuracy {
	acc := Accuracy{Window: window, Points: a.n}
	if a.n == 0 {
		return acc
	}
	acc.WAPE = ratio(a.absErr, a.absAct)
	acc.Bias = ratio(a.err, a.absAct)
	acc.MAPE = ratio(a.ape, float64(a.nape))
	acc.SMAPE = ratio(a.sape, float64(a.nsape))
	acc.MASE = ratio(a.absErr/float64(a.n), scale)
	return acc
}

// naiveScale is the mean absolute change between consecutive observed weeks of y[:end].
func naiveScale(y []float64, ok []bool, end int) float64 {
	s, c := 0.0, 0
	for t := 1; t < end; t++ {
		if ok[t] && ok[t-1] {
			s += math.Abs(y[t] - y[t-1])
			c++
		}
	}
	if c == 0 {
		return 0
	}
	return s / float64(c)
}

// Score computes accuracy metrics of forecasts against actuals (pairs where the actual is NaN
// are skipped); history, when given, sets the MASE scale.
func Score(forecasts, actuals, history []float64) Accuracy {
	var a accum
	for i := range min(len(forecasts), len(actuals)) {
		if math.IsNaN(actuals[i]) || math.IsNaN(forecasts[i]) {
			continue
		}
		a.add(forecasts[i], actuals[i])
	}
	ok := make([]bool, len(history))
	for i, v := range history {
		ok[i] = !math.IsNaN(v)
	}
	return a.result(naiveScale(history, ok, len(history)), len(actuals))
}

// accuracy scores the chosen model's backtest forecasts, with event multipliers, against the
// actual demand of the observed weeks of the window: every (origin, step) pair of the backtest.
func (w *workspace) accuracy(bl *baseline, n int, iv *intervalSet, point string) Accuracy {
	if bl.he == 0 {
		return Accuracy{}
	}
	var a accum
	for o := bl.n0; o < n; o++ {
		row := bl.path[(o-bl.n0)*bl.he:]
		for h := 0; h < bl.he && o+h < n; h++ {
			t := o + h
			if w.ok[t] {
				a.add(bl.point(row[h], iv.spread[h], point)*w.mult[t], w.raw[t])
			}
		}
	}
	return a.result(naiveScale(w.raw, w.ok, bl.n0), n-bl.n0)
}

// point maps a model value f, whose forecast error has standard deviation s, to the point
// forecast asked for: the median (default), the mean, or the MAPE-optimal point (the median of
// the predictive distribution reweighted by 1/demand, Gneiting 2011). Under the log transform
// the predictive distribution is taken as log-normal: exp(f), exp(f + s²/2), exp(f - s²). On
// the demand scale it is taken as normal: f, f, and f - s²/f to first order, floored at zero.
func (bl *baseline) point(f, s float64, point string) float64 {
	switch point {
	case PointMean:
		if bl.log {
			return math.Exp(f + s*s/2)
		}
	case PointMAPE:
		if bl.log {
			return math.Exp(f - s*s)
		}
		if f > 0 {
			return max(f-s*s/f, 0)
		}
	}
	return bl.level(f)
}

// level maps a model value back to demand: exp under the log transform, floored at zero.
func (bl *baseline) level(v float64) float64 {
	if bl.log {
		return math.Exp(v)
	}
	return max(v, 0)
}

// predictiveLL is the Gaussian log-likelihood of the de-lifted history's backtest targets under
// the backtest errors of bl, per target, with the Jacobian of the log transform so that a
// model on logs and a model on the demand itself compare on the same scale (Box-Cox style).
func (w *workspace) predictiveLL(bl *baseline, n int) float64 {
	ss, jac, c := 0.0, 0.0, 0
	for o := bl.n0; o < n; o++ {
		row := bl.path[(o-bl.n0)*bl.he:]
		for h := 0; h < bl.he && o+h < n; h++ {
			if t := o + h; w.ok[t] {
				e := row[h] - bl.y[t]
				ss += e * e
				if bl.log {
					jac += bl.y[t]
				}
				c++
			}
		}
	}
	if c == 0 || ss == 0 {
		return math.Inf(-1)
	}
	return -0.5*math.Log(ss/float64(c)) - jac/float64(c)
}
