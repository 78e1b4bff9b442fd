package forecast

import (
	"math"
	"time"

	"github.com/supplyplan/supplyplan"
)

// Series is a weekly demand history.
type Series struct {
	// ID, ProductID and LocationID identify the series for learned lifts (optional).
	ID         string
	ProductID  string
	LocationID string
	// Start is the week of Values[0]; any time in that week is taken as its ISO Monday.
	Start time.Time
	// Values holds one demand value per week, oldest first; NaN marks a missing week.
	Values []float64
	// Stockout, when not nil, has the length of Values; true marks a week whose demand was
	// censored by zero stock: it is treated as missing, never as demand.
	Stockout []bool
}

func (s *Series) key() SeriesKey {
	return SeriesKey{ID: s.ID, ProductID: s.ProductID, LocationID: s.LocationID}
}

func (s *Series) start() time.Time { return supplyplan.WeekStart(s.Start) }

// missing reports whether week t carries no demand observation.
func (s *Series) missing(t int) bool {
	return math.IsNaN(s.Values[t]) || math.IsInf(s.Values[t], 0) || (s.Stockout != nil && s.Stockout[t])
}

func weekDur(t int) time.Duration { return time.Duration(t) * week }

// FromWeekValues builds a contiguous series from stored weeks (oldest first, weeks may be
// absent): absent weeks become NaN, stockout flags are kept.
func FromWeekValues(key SeriesKey, weeks []supplyplan.WeekValue) Series {
	s := Series{ID: key.ID, ProductID: key.ProductID, LocationID: key.LocationID}
	if len(weeks) == 0 {
		return s
	}
	s.Start = supplyplan.WeekStart(weeks[0].Week)
	n := int(supplyplan.WeekStart(weeks[len(weeks)-1].Week).Sub(s.Start)/week) + 1
	s.Values = make([]float64, n)
	for i := range s.Values {
		s.Values[i] = math.NaN()
	}
	for _, w := range weeks {
		i := int(supplyplan.WeekStart(w.Week).Sub(s.Start) / week)
		if i < 0 || i >= n {
			continue
		}
		s.Values[i] = w.Actual
		if w.Stockout {
			if s.Stockout == nil {
				s.Stockout = make([]bool, n)
			}
			s.Stockout[i] = true
		}
	}
	return s
}

// Options control one forecast. The zero value forecasts 13 weeks with 80% intervals, automatic
// model selection and a 52-week backtest.
type Options struct {
	// Horizon is the number of weeks to forecast after the history (default 13, at most 520).
	Horizon int
	// Interval is the prediction interval level: 0.5, 0.8 (default), 0.9 or 0.95 (any level in
	// [0.5, 0.99] is accepted).
	Interval float64
	// Model is "auto" (default) or one of Models().
	Model string
	// Transform is "auto" (default: the log transform competes in the backtest when every
	// observed week is positive), "none" or "log".
	Transform string
	// Point is the statistic of the predictive distribution reported as the forecast: "median"
	// (default: what MAE, MASE and WAPE reward), "mean" (what totals and MSE reward) or "mape"
	// (the point that minimises the expected absolute percentage error; lower than the median).
	Point string
	// Window is the number of most recent weeks scored by the rolling-origin backtest that
	// selects the model and measures accuracy (default 52; at most a third of the history).
	Window int
}

// Transforms of Options.Transform and Result.Transform.
const (
	TransformAuto = "auto"
	TransformNone = "none"
	TransformLog  = "log"
)

// Point statistics of Options.Point.
const (
	PointMedian = "median"
	PointMean   = "mean"
	PointMAPE   = "mape"
)

// Defaults and limits of Options.
const (
	DefaultHorizon  = 13
	MaxHorizon      = 520
	DefaultInterval = 0.8
	DefaultWindow   = 52
)

// Validate checks the options and fills the defaults.
func (o *Options) Validate() error {
	fe := supplyplan.FieldErrors{}
	if o.Horizon == 0 {
		o.Horizon = DefaultHorizon
	}
	if o.Horizon < 1 || o.Horizon > MaxHorizon {
		fe.Add("horizon", "must be between 1 and %d weeks", MaxHorizon)
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if math.IsNaN(o.Interval) || o.Interval < 0.5 || o.Interval > 0.99 {
		fe.Add("interval", "must be between 0.5 and 0.99 (0.5, 0.8, 0.9 or 0.95)")
	}
	if o.Model == "" {
		o.Model = ModelAuto
	}
	if _, ok := kindByName(o.Model); !ok && o.Model != ModelAuto {
		fe.Add("model", "must be auto or one of %v", Models())
	}
	switch o.Transform {
	case "":
		o.Transform = TransformAuto
	case TransformAuto, TransformNone, TransformLog:
	default:
		fe.Add("transform", "must be auto, none or log")
	}
	switch o.Point {
	case "":
		o.Point = PointMedian
	case PointMedian, PointMean, PointMAPE:
	default:
		fe.Add("point", "must be median, mean or mape")
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Window < 2 || o.Window > MaxHorizon {
		fe.Add("window", "must be between 2 and %d weeks", MaxHorizon)
	}
	return fe.Err()
}

// Result is a forecast.
type Result struct {
	// Model is the model chosen (or asked for); a combination reads "combination(a+b+c)".
	Model string `json:"model"`
	// Transform is "log" when the model ran on the logarithm of demand (its forecast is then a
	// median), else "none".
	Transform string         `json:"transform"`
	Class     Classification `json:"classification"`
	Interval  float64        `json:"interval"`
	Periods   []Period       `json:"periods"`
	Accuracy  Accuracy       `json:"accuracy"`
	// ErrorCorrelation is the average correlation between the backtest errors of different
	// steps of one forecast (0..1); Aggregate uses it to widen intervals of sums honestly.
	ErrorCorrelation float64 `json:"errorCorrelation"`
}

// Period is one forecast week.
type Period struct {
	WeekStart time.Time `json:"weekStart"`
	// Baseline is the forecast without events; Quantity applies the week's event multiplier.
	Baseline float64 `json:"baseline"`
	Quantity float64 `json:"quantity"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
	// Multiplier is Quantity / Baseline: the stacked effect of Events.
	Multiplier float64        `json:"multiplier"`
	Events     []AppliedEvent `json:"events,omitempty"`
}

// AppliedEvent is one event's part in a forecast week.
type AppliedEvent struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Mechanic string `json:"mechanic,omitempty"`
	// LiftPct is the event's full-week lift (given, or learned when Learned).
	LiftPct float64 `json:"liftPct"`
	// Weight is the share of the lift applied to this week: overlapping days / 7 × intensity.
	Weight  float64 `json:"weight"`
	Learned bool    `json:"learned"`
	// Level tells where a learned lift comes from (series, product+location, ..., prior).
	Level string `json:"level,omitempty"`
	// Additive is true for an ADDITIVE event (see the stacking rule).
	Additive bool `json:"additive,omitempty"`
}

var (
	errNoData       = supplyplan.Invalid("values", "the series has no observed week (missing and stockout weeks are not demand)")
	errModelUnfit   = supplyplan.Invalid("model", "the model cannot be fitted to this history")
	errUnknownModel = supplyplan.Invalid("model", "unknown model")
)

// Forecast forecasts the weeks after s.
//
// events are the events that apply to the series, past ones (to de-lift the history) and
// planned ones (to lift the forecast). An event without LiftPct gets its lift from lifts; when
// lifts is nil it is learned from this series' own history (shrunk toward the type prior).
// The caller handles "as of" by truncating the history.
func Forecast(s Series, events []EventOccurrence, lifts *LiftModel, opts Options) (Result, error) {
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	if s.Stockout != nil && len(s.Stockout) != len(s.Values) {
		return Result{}, supplyplan.Invalid("stockout", "must have the length of values")
	}
	w := workspaces.Get().(*workspace)
	defer workspaces.Put(w)
	return w.forecast(&s, events, lifts, &opts)
}

func (w *workspace) forecast(s *Series, events []EventOccurrence, lifts *LiftModel, o *Options) (Result, error) {
	// Trim leading weeks without observation.
	first := 0
	for first < len(s.Values) && s.missing(first) {
		first++
	}
	n := len(s.Values) - first
	if n == 0 {
		return Result{}, errNoData
	}
	start := s.start().Add(weekDur(first))
	H := o.Horizon
	if lifts == nil && hasUnknownLift(events) {
		lifts = LearnLifts([]SeriesHistory{{Series: *s, Events: events}}, LiftOptions{})
	}
	key := s.key()
	res := resolve(events, lifts, key, w.res[:0])
	w.res = res
	w.mult = grow(w.mult, n+H)
	w.stacks = grow(w.stacks, n+H)
	multipliers(start, n+H, events, res, w.mult, w.stacks)
	w.ok, w.raw = grow(w.ok, n), grow(w.raw, n)
	raw, logs := &w.lanes[0], &w.lanes[1]
	raw.y, logs.y = grow(raw.y, n), grow(logs.y, n)
	positive := true
	for t := range n {
		w.ok[t] = !s.missing(first + t)
		w.raw[t] = s.Values[first+t]
		raw.y[t], logs.y[t] = math.NaN(), math.NaN()
		if w.ok[t] {
			raw.y[t] = w.raw[t] / w.mult[t]
			if raw.y[t] > 0 {
				logs.y[t] = math.Log(raw.y[t])
			} else {
				positive = false
			}
		}
	}
	var bl baseline
	var err error
	if o.Transform != TransformLog || !positive {
		if bl, err = w.selectBaseline(raw, n, H, o.Window, o.Model); err != nil {
			return Result{}, err
		}
	}
	if o.Transform != TransformNone && positive {
		lbl, lerr := w.selectBaseline(logs, n, H, o.Window, o.Model)
		switch {
		case lerr != nil && o.Transform == TransformLog:
			return Result{}, lerr
		case lerr != nil:
		case o.Transform == TransformLog || (lbl.he > 0 && w.predictiveLL(&lbl, n) > w.predictiveLL(&bl, n)):
			bl = lbl
		}
	}
	r := Result{Model: bl.name, Transform: TransformNone, Class: bl.class, Interval: o.Interval}
	if bl.log {
		r.Transform = TransformLog
	}
	iv := w.intervals(&bl, n, H, o.Interval)
	r.ErrorCorrelation = iv.corr
	r.Accuracy = w.accuracy(&bl, n, &iv, o.Point)
	r.Periods = make([]Period, H)
	for h := range H {
		t := n + h
		m := w.mult[t]
		f := bl.future[h]
		base, lo, hi := bl.point(f, iv.spread[h], o.Point), bl.level(f+iv.lo*iv.sigma[h]), bl.level(f+iv.hi*iv.sigma[h])
		p := Period{WeekStart: start.Add(weekDur(t)), Baseline: base, Quantity: base * m,
			Lower: min(lo*m, base*m), Upper: max(hi*m, base*m), Multiplier: m}
		p.Events = applied(events, res, p.WeekStart)
		r.Periods[h] = p
	}
	return r, nil
}

func hasUnknownLift(events []EventOccurrence) bool {
	for i := range events {
		if events[i].LiftPct == nil {
			return true
		}
	}
	return false
}

// applied lists the events active in the week starting ws.
func applied(events []EventOccurrence, res []resolved, ws time.Time) []AppliedEvent {
	var out []AppliedEvent
	for i := range events {
		e := &events[i]
		if !res[i].active {
			continue
		}
		wt := e.weight(ws)
		if wt <= 0 {
			continue
		}
		out = append(out, AppliedEvent{ID: e.ID, Type: e.Type, Mechanic: e.Mechanic, LiftPct: res[i].lift,
			Weight: wt, Learned: res[i].learned, Level: res[i].level, Additive: e.additive()})
	}
	return out
}
