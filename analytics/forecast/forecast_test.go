package forecast

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

var monday = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) // an ISO Monday

func weekAt(t int) time.Time { return monday.AddDate(0, 0, 7*t) }

func pf(v float64) *float64 { return &v }

func TestEventWeight(t *testing.T) {
	tests := []struct {
		name      string
		start     time.Time
		end       time.Time
		intensity *float64
		week      int
		want      float64
	}{
		{"whole week", weekAt(0), weekAt(1), nil, 0, 1},
		{"three of seven days", weekAt(0).AddDate(0, 0, 4), weekAt(1), nil, 0, 3.0 / 7},
		{"spills into next week", weekAt(0).AddDate(0, 0, 5), weekAt(1).AddDate(0, 0, 2), nil, 1, 2.0 / 7},
		{"outside", weekAt(2), weekAt(3), nil, 0, 0},
		{"half a day", weekAt(0), weekAt(0).Add(12 * time.Hour), nil, 0, 0.5 / 7},
		{"intensity", weekAt(0), weekAt(1), pf(0.4), 0, 0.4},
		{"intensity and proration", weekAt(0).AddDate(0, 0, 4), weekAt(1), pf(0.5), 0, 1.5 / 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := EventOccurrence{Start: tt.start, End: tt.end, Intensity: tt.intensity}
			if got := e.weight(weekAt(tt.week)); !near(got, tt.want, 1e-12) {
				t.Errorf("weight = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestForecastAppliesGivenLifts checks that planned events with a given lift multiply the
// baseline of the weeks they overlap, prorated by days.
func TestForecastAppliesGivenLifts(t *testing.T) {
	y := make([]float64, 60)
	for i := range y {
		y[i] = 100
	}
	s := Series{Start: monday, Values: y}
	events := []EventOccurrence{
		{ID: "promo", Type: "PROMOTION", Start: weekAt(61), End: weekAt(62), LiftPct: pf(0.35)},
		{ID: "short", Type: "PROMOTION", Start: weekAt(62).AddDate(0, 0, 4), End: weekAt(63), LiftPct: pf(0.7)},
		{ID: "add1", Type: "HOLIDAY", Start: weekAt(63), End: weekAt(64), LiftPct: pf(0.2), Stacking: "ADDITIVE"},
		{ID: "add2", Type: "OTHER", Start: weekAt(63), End: weekAt(64), LiftPct: pf(0.1), Stacking: "ADDITIVE"},
		{ID: "mult", Type: "PROMOTION", Start: weekAt(63), End: weekAt(64), LiftPct: pf(0.5)},
	}
	r, err := Forecast(s, events, nil, Options{Horizon: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 1.35, 1.3, 1.3 * 1.5, 1}
	for h, p := range r.Periods {
		if !near(p.Quantity, p.Baseline*want[h], 1e-9) || !near(p.Multiplier, want[h], 1e-9) {
			t.Errorf("week %d: quantity %v baseline %v multiplier %v, want multiplier %v", h, p.Quantity, p.Baseline, p.Multiplier, want[h])
		}
		if !near(p.Baseline, 100, 1e-6) {
			t.Errorf("week %d: baseline %v, want 100", h, p.Baseline)
		}
	}
	if ev := r.Periods[2].Events; len(ev) != 1 || ev[0].ID != "short" || !near(ev[0].Weight, 3.0/7, 1e-12) || ev[0].Learned {
		t.Errorf("week 2 events = %+v, want short with weight 3/7, not learned", ev)
	}
	if !r.Periods[0].WeekStart.Equal(weekAt(60)) {
		t.Errorf("first forecast week = %v, want %v", r.Periods[0].WeekStart, weekAt(60))
	}
}

// promoWorld simulates series with log-normal noise around a level, promotions with a true
// lift, and optionally price changes with a true elasticity.
type promoWorld struct {
	series, weeks  int
	lift           float64
	elasticity     float64
	promoRate      float64
	seriesLiftFunc func(i int) float64 // per-series true lift, overrides lift when set
	seed           uint64
}

func (w promoWorld) histories() []SeriesHistory {
	rng := rand.New(rand.NewPCG(w.seed, 3))
	out := make([]SeriesHistory, w.series)
	for i := range out {
		level := 50 + rng.Float64()*500
		lift := w.lift
		if w.seriesLiftFunc != nil {
			lift = w.seriesLiftFunc(i)
		}
		v := make([]float64, w.weeks)
		var ev []EventOccurrence
		for t := range v {
			m := 1.0
			if rng.Float64() < w.promoRate {
				m *= 1 + lift
				ev = append(ev, EventOccurrence{ID: "p", Type: "PROMOTION", Start: weekAt(t), End: weekAt(t + 1)})
			}
			if w.elasticity != 0 && rng.Float64() < 0.3 {
				pc := -0.3 + 0.5*rng.Float64()
				m *= math.Pow(1+pc, w.elasticity)
				ev = append(ev, EventOccurrence{ID: "c", Type: "PRICE_CHANGE", Start: weekAt(t), End: weekAt(t + 1), PriceChangePct: &pc})
			}
			v[t] = math.Round(level * m * math.Exp(0.15*rng.NormFloat64()))
		}
		out[i] = SeriesHistory{
			Series: Series{ID: "s" + itoa(i), ProductID: "p" + itoa(i%5), LocationID: "l" + itoa(i%7), Start: monday, Values: v},
			Events: ev,
		}
	}
	return out
}

func itoa(i int) string { return fmt.Sprintf("%03d", i) }

func TestLearnLiftsRecoversKnownLift(t *testing.T) {
	w := promoWorld{series: 40, weeks: 104, lift: 0.5, promoRate: 0.15, seed: 1}
	m := LearnLifts(w.histories(), LiftOptions{})
	e := EventOccurrence{Type: "PROMOTION"}
	est := m.Estimate(&e, SeriesKey{ProductID: "p001", LocationID: "l002"})
	if math.Abs(est.LiftPct-0.5) > 0.05 {
		t.Errorf("learned lift = %.3f (level %s), want 0.5 ± 0.05", est.LiftPct, est.Level)
	}
	if est.Level != LevelProductLocation {
		t.Errorf("level = %s, want %s", est.Level, LevelProductLocation)
	}
	sum := m.Summary()
	if len(sum) != 1 || math.Abs(sum[0].Value-0.5) > 0.05 {
		t.Errorf("summary = %+v, want one class near 0.5", sum)
	}
}

func TestLearnLiftsRecoversElasticity(t *testing.T) {
	w := promoWorld{series: 40, weeks: 104, lift: 0.3, elasticity: -2, promoRate: 0.1, seed: 2}
	m := LearnLifts(w.histories(), LiftOptions{})
	pc := -0.2
	e := EventOccurrence{Type: "PRICE_CHANGE", PriceChangePct: &pc}
	est := m.Estimate(&e, SeriesKey{ID: "s003"})
	if est.Elasticity == nil || math.Abs(*est.Elasticity+2) > 0.2 {
		t.Fatalf("elasticity = %v, want -2 ± 0.2", est.Elasticity)
	}
	if want := math.Pow(0.8, *est.Elasticity) - 1; !near(est.LiftPct, want, 1e-12) {
		t.Errorf("lift = %v, want (1+pc)^elasticity - 1 = %v", est.LiftPct, want)
	}
}

// TestLearnLiftsShrinkage: a series with a single, extreme event stays near the pooled lift;
// a series with many events of its own keeps its own lift.
func TestLearnLiftsShrinkage(t *testing.T) {
	w := promoWorld{series: 40, weeks: 104, lift: 0.5, promoRate: 0.15, seed: 4}
	h := w.histories()
	// One more series, one event that tripled demand.
	rng := rand.New(rand.NewPCG(4, 4))
	v := make([]float64, 104)
	for i := range v {
		v[i] = math.Round(200 * math.Exp(0.15*rng.NormFloat64()))
	}
	v[50] = 600
	h = append(h, SeriesHistory{
		Series: Series{ID: "single", ProductID: "p001", LocationID: "l001", Start: monday, Values: v},
		Events: []EventOccurrence{{Type: "PROMOTION", Start: weekAt(50), End: weekAt(51)}},
	})
	// And one with a different true lift and many events.
	own := promoWorld{series: 1, weeks: 104, lift: 1.0, promoRate: 0.3, seed: 5}.histories()[0]
	own.Series.ID, own.Series.ProductID, own.Series.LocationID = "own", "p002", "l002"
	h = append(h, own)
	m := LearnLifts(h, LiftOptions{})
	e := EventOccurrence{Type: "PROMOTION"}
	single := m.Estimate(&e, SeriesKey{ID: "single", ProductID: "p001", LocationID: "l001"})
	if single.Level != LevelSeries {
		t.Errorf("single: level %s, want series", single.Level)
	}
	if math.Abs(single.LiftPct-0.5) > math.Abs(single.LiftPct-2)/3 {
		t.Errorf("single-event series lift = %.3f: want it shrunk toward the pooled 0.5, far from its raw 2.0", single.LiftPct)
	}
	ownEst := m.Estimate(&e, SeriesKey{ID: "own", ProductID: "p002", LocationID: "l002"})
	t.Logf("single-event series %.3f, many-event series %.3f", single.LiftPct, ownEst.LiftPct)
	if ownEst.LiftPct < 0.8 {
		t.Errorf("series with many events lift = %.3f, want close to its own 1.0", ownEst.LiftPct)
	}
	// A series the model never saw gets the product+location estimate; an unknown class its prior.
	unseen := m.Estimate(&e, SeriesKey{ID: "new", ProductID: "p003"})
	if unseen.Level != LevelProduct {
		t.Errorf("unseen series level %s, want product", unseen.Level)
	}
	hol := EventOccurrence{Type: "HOLIDAY"}
	if est := m.Estimate(&hol, SeriesKey{}); est.Level != LevelPrior || est.LiftPct != 0 {
		t.Errorf("unknown class = %+v, want the zero prior", est)
	}
}

// TestForecastLearnedLiftDelifts checks that promotions without a lift are learned, flagged,
// removed from the baseline and applied to planned weeks.
func TestForecastLearnedLiftDelifts(t *testing.T) {
	w := promoWorld{series: 30, weeks: 104, lift: 0.5, promoRate: 0.2, seed: 6}
	h := w.histories()
	m := LearnLifts(h, LiftOptions{})
	s := h[0]
	planned := append(append([]EventOccurrence(nil), s.Events...),
		EventOccurrence{ID: "next", Type: "PROMOTION", Start: weekAt(105), End: weekAt(106)})
	r, err := Forecast(s.Series, planned, m, Options{Horizon: 4})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Periods[1]
	if len(p.Events) != 1 || !p.Events[0].Learned || p.Events[0].Level != LevelSeries {
		t.Fatalf("events = %+v, want one learned series-level event", p.Events)
	}
	if math.Abs(p.Multiplier-1.5) > 0.1 {
		t.Errorf("multiplier = %v, want about 1.5", p.Multiplier)
	}
	// The baseline must not be inflated by past promotions: compare with the mean of
	// non-promoted weeks.
	promo := map[int]bool{}
	for _, e := range s.Events {
		promo[int(e.Start.Sub(monday).Hours()/24/7)] = true
	}
	var sum float64
	var n int
	for i, v := range s.Series.Values {
		if !promo[i] {
			sum += v
			n++
		}
	}
	if plain := sum / float64(n); math.Abs(r.Periods[0].Baseline/plain-1) > 0.1 {
		t.Errorf("baseline %v, want within 10%% of the plain-week mean %v", r.Periods[0].Baseline, plain)
	}
	// Without a lift model the lift is learned from the series alone, still flagged.
	r2, err := Forecast(s.Series, planned, nil, Options{Horizon: 4})
	if err != nil {
		t.Fatal(err)
	}
	if ev := r2.Periods[1].Events; len(ev) != 1 || !ev[0].Learned || ev[0].LiftPct < 0.2 {
		t.Errorf("self-learned events = %+v, want a learned lift well above 0", ev)
	}
}

func TestMissingAndStockoutAreNotZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	y := make([]float64, 80)
	for i := range y {
		y[i] = 100 + 5*rng.NormFloat64()
	}
	zeroed := append([]float64(nil), y...)
	stock := make([]bool, len(y))
	for i := 60; i < 80; i += 2 {
		zeroed[i], stock[i] = 0, true
	}
	nanned := append([]float64(nil), zeroed...)
	for i := range nanned {
		if stock[i] {
			nanned[i] = math.NaN()
		}
	}
	base := func(s Series) float64 {
		t.Helper()
		r, err := Forecast(s, nil, nil, Options{Horizon: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r.Periods[0].Quantity
	}
	stockout := base(Series{Start: monday, Values: zeroed, Stockout: stock})
	missing := base(Series{Start: monday, Values: nanned})
	asZero := base(Series{Start: monday, Values: zeroed})
	for name, v := range map[string]float64{"stockout": stockout, "missing": missing} {
		if math.Abs(v-100) > 8 {
			t.Errorf("%s weeks: forecast %v, want about 100", name, v)
		}
	}
	if asZero > 90 {
		t.Errorf("control: zeros taken as demand should pull the forecast down, got %v", asZero)
	}
}

func seasonalSeries(rng *rand.Rand, n int) []float64 {
	y := make([]float64, n)
	for i := range y {
		y[i] = 200 + 80*math.Sin(2*math.Pi*float64(i)/SeasonLength) + 40*math.Cos(4*math.Pi*float64(i)/SeasonLength) + 8*rng.NormFloat64()
	}
	return y
}

func TestSelectionPicksTheRightFamily(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	trend := make([]float64, 120)
	for i := range trend {
		trend[i] = 50 + 3*float64(i) + 4*rng.NormFloat64()
	}
	inter := make([]float64, 120)
	for i := range inter {
		if rng.Float64() < 0.25 {
			inter[i] = float64(2 + rng.IntN(4))
		}
	}
	tests := []struct {
		name  string
		y     []float64
		want  []string // any of these model names (as a substring of the chosen name)
		class DemandClass
	}{
		{"seasonal", seasonalSeries(rng, 208), []string{"holt_winters", "seasonal_naive"}, ""},
		{"trend", trend, []string{"holt", "theta"}, ClassSmooth},
		{"intermittent", inter, []string{"croston", "sba", "tsb", "mean", "ses"}, ClassIntermittent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Forecast(Series{Start: monday, Values: tt.y}, nil, nil, Options{Horizon: 13})
			if err != nil {
				t.Fatal(err)
			}
			ok := false
			for _, w := range tt.want {
				ok = ok || strings.Contains(r.Model, w)
			}
			if !ok {
				t.Errorf("model = %s, want one of %v", r.Model, tt.want)
			}
			if strings.Contains(r.Model, "naive") && tt.name != "seasonal" {
				t.Errorf("model = %s: a naive model should not win", r.Model)
			}
			if tt.class != "" && r.Class.Class != tt.class {
				t.Errorf("class = %s, want %s", r.Class.Class, tt.class)
			}
			if r.Accuracy.Points == 0 || r.Accuracy.WAPE == nil || r.Accuracy.Window == 0 {
				t.Errorf("accuracy = %+v, want a scored backtest", r.Accuracy)
			}
		})
	}
	// On a clean trend, the backtest accuracy must be good.
	r, _ := Forecast(Series{Start: monday, Values: trend}, nil, nil, Options{})
	if *r.Accuracy.WAPE > 0.05 {
		t.Errorf("trend WAPE = %v, want < 5%%", *r.Accuracy.WAPE)
	}
	// Intermittent demand: only intermittent-family or level models are candidates.
	r, _ = Forecast(Series{Start: monday, Values: inter}, nil, nil, Options{})
	for _, bad := range []string{"holt", "theta", "naive"} {
		if strings.Contains(r.Model, bad) {
			t.Errorf("intermittent model = %s, must not use %s", r.Model, bad)
		}
	}
}

// TestIntervals checks coverage of the 80% and 95% intervals on simulated futures, widening with
// the horizon, and non-negative lower bounds.
func TestIntervals(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	const H = 8
	for _, level := range []float64{0.8, 0.95} {
		covered, total := 0, 0
		for range 150 {
			n := 100 + H
			y := make([]float64, n)
			l := 100.0
			for i := range y { // local level: a random walk plus noise
				l += 2 * rng.NormFloat64()
				y[i] = l + 6*rng.NormFloat64()
			}
			r, err := Forecast(Series{Start: monday, Values: y[:100]}, nil, nil, Options{Horizon: H, Interval: level})
			if err != nil {
				t.Fatal(err)
			}
			for h, p := range r.Periods {
				if y[100+h] >= p.Lower && y[100+h] <= p.Upper {
					covered++
				}
				total++
				if h > 0 {
					prev := r.Periods[h-1]
					if p.Upper-p.Lower < prev.Upper-prev.Lower-1e-9 && r.Transform == TransformNone {
						t.Fatalf("interval narrows at h=%d: %v < %v", h+1, p.Upper-p.Lower, prev.Upper-prev.Lower)
					}
				}
				if p.Lower < 0 || p.Lower > p.Quantity || p.Upper < p.Quantity {
					t.Fatalf("bad interval %+v", p)
				}
			}
		}
		cov := float64(covered) / float64(total)
		if math.Abs(cov-level) > 0.07 {
			t.Errorf("coverage of the %.0f%% interval = %.3f", 100*level, cov)
		}
	}
	// Low demand: lower bounds are clipped at zero, never negative.
	y := make([]float64, 60)
	for i := range y {
		y[i] = float64(rng.IntN(3))
	}
	r, err := Forecast(Series{Start: monday, Values: y}, nil, nil, Options{Interval: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Periods {
		if p.Lower < 0 {
			t.Fatalf("negative lower bound %v", p.Lower)
		}
	}
}

func TestForecastValidation(t *testing.T) {
	s := Series{Start: monday, Values: []float64{1, 2, 3}}
	for _, o := range []Options{{Horizon: -1}, {Interval: 0.3}, {Model: "arima"}, {Transform: "sqrt"}, {Window: 1}} {
		if _, err := Forecast(s, nil, nil, o); err == nil {
			t.Errorf("options %+v: want a validation error", o)
		}
	}
	if _, err := Forecast(Series{Start: monday, Values: []float64{math.NaN(), math.NaN()}}, nil, nil, Options{}); err == nil {
		t.Error("a series without observation must fail")
	}
	if _, err := Forecast(Series{Start: monday, Values: []float64{1, 2}, Stockout: []bool{true}}, nil, nil, Options{}); err == nil {
		t.Error("a stockout slice of the wrong length must fail")
	}
	// A short history still forecasts (mean, no backtest).
	r, err := Forecast(s, nil, nil, Options{Horizon: 2})
	if err != nil || r.Model != ModelMean || len(r.Periods) != 2 || !near(r.Periods[0].Quantity, 2, 1e-9) {
		t.Errorf("short series: %+v, %v; want the mean 2", r, err)
	}
	// Every model can be asked for by name.
	y := seasonalSeries(rand.New(rand.NewPCG(1, 2)), 160)
	for _, m := range Models() {
		r, err := Forecast(Series{Start: monday, Values: y}, nil, nil, Options{Model: m, Transform: TransformNone})
		if err != nil || r.Model != m {
			t.Errorf("model %s: got %q, %v", m, r.Model, err)
		}
	}
}

func TestRealisedLift(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	y := make([]float64, 70)
	for i := range y {
		y[i] = 100 * math.Exp(0.03*rng.NormFloat64())
	}
	y[60], y[61] = y[60]*1.5, y[61]*1.5
	events := []EventOccurrence{
		{ID: "promo", Type: "PROMOTION", Start: weekAt(60), End: weekAt(62), LiftPct: pf(0.3)},
	}
	rep, err := RealisedLift(Series{Start: monday, Values: y}, "promo", events, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Weeks) != 2 || math.Abs(rep.RealisedLiftPct-0.5) > 0.06 {
		t.Errorf("realised = %v over %d weeks, want 0.5 over 2", rep.RealisedLiftPct, len(rep.Weeks))
	}
	if !near(rep.PlannedLiftPct, 0.3, 1e-12) || !near(rep.PlannedEffectPct, 0.3, 1e-9) || rep.Learned {
		t.Errorf("planned = %+v, want the given 0.3", rep)
	}
	if _, err := RealisedLift(Series{Start: monday, Values: y[:50]}, "promo", events, nil, Options{}); err == nil {
		t.Error("an event without actuals yet must fail")
	}
	if _, err := RealisedLift(Series{Start: monday, Values: y}, "nope", events, nil, Options{}); err == nil {
		t.Error("an unknown event must fail")
	}
}

func TestChannelShares(t *testing.T) {
	n := 30
	web, store := make([]float64, n), make([]float64, n)
	for i := range n {
		total := 100.0
		web[i] = total * (0.2 + 0.01*float64(i)) // web share grows by 1 point a week
		store[i] = total - web[i]
	}
	sh := ChannelShares([]ChannelHistory{{"WEB", web}, {"STORE", store}}, 10, 26)
	last := 0.2 + 0.01*float64(n-1)
	for h := range 10 {
		if s := sh[0].Shares[h] + sh[1].Shares[h]; !near(s, 1, 1e-12) {
			t.Fatalf("shares sum to %v", s)
		}
		if h > 0 && sh[0].Shares[h] < sh[0].Shares[h-1] {
			t.Errorf("web share falls at h=%d despite its upward trend", h)
		}
	}
	if sh[0].Shares[0] <= last || sh[0].Shares[9] > last+0.01*ShareDamping/(1-ShareDamping)+1e-9 {
		t.Errorf("web shares %v: want above %v and within the damped trend", sh[0].Shares, last)
	}
	periods := []Period{{Quantity: 50, Baseline: 40, Lower: 30, Upper: 70}, {Quantity: 80, Baseline: 80, Lower: 60, Upper: 100}}
	split := SplitByChannel(periods, sh)
	for i, p := range periods {
		if got := split[0].Periods[i].Quantity + split[1].Periods[i].Quantity; !near(got, p.Quantity, 1e-12) {
			t.Errorf("week %d: channels sum to %v, want %v", i, got, p.Quantity)
		}
	}
	none := ChannelShares([]ChannelHistory{{"A", []float64{0, 0}}, {"B", nil}}, 2, 0)
	if none[0].Shares[0] != 0.5 {
		t.Errorf("without demand the shares are equal, got %v", none[0].Shares)
	}
}

func TestAggregate(t *testing.T) {
	// Weeks from Monday 2024-01-01: 5 weeks in January (the fifth spans Jan 29 - Feb 4).
	var periods []Period
	for i := range 9 {
		periods = append(periods, Period{WeekStart: weekAt(i), Baseline: 70, Quantity: 70, Lower: 56, Upper: 84})
	}
	for _, rho := range []float64{0, 0.5, 1} {
		b, err := Aggregate(Result{Periods: periods, Interval: 0.8, ErrorCorrelation: rho}, GrainMonth)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != 3 || !b[0].Start.Equal(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("buckets %+v", b)
		}
		// January: 31 days of 10 a day.
		if !near(b[0].Quantity, 310, 1e-9) || b[0].Days != 31 || b[0].Partial {
			t.Errorf("January = %+v, want 310 over 31 days, complete", b[0])
		}
		if !b[2].Partial {
			t.Errorf("March must be partial: %+v", b[2])
		}
		width := b[0].Upper - b[0].Lower
		sumWidths := 310.0 / 70 * 28
		switch rho {
		case 1:
			if !near(width, sumWidths, 1e-9) {
				t.Errorf("rho=1: width %v, want the sum of weekly widths %v", width, sumWidths)
			}
		case 0:
			if width >= sumWidths || width <= 28 {
				t.Errorf("rho=0: width %v, want between one week's 28 and the sum %v", width, sumWidths)
			}
		}
	}
	q, err := Aggregate(Result{Periods: periods, Interval: 0.8, ErrorCorrelation: 1}, GrainQuarter)
	if err != nil || len(q) != 1 || !near(q[0].Quantity, 630, 1e-9) {
		t.Errorf("quarter = %+v, %v; want one bucket of 630", q, err)
	}
	if _, err := Aggregate(Result{}, "YEAR"); err == nil {
		t.Error("unknown grain must fail")
	}
}

func TestFromWeekValues(t *testing.T) {
	weeks := []supplyplan.WeekValue{
		{Week: weekAt(0).AddDate(0, 0, 2), Actual: 5}, // a Wednesday: its ISO Monday
		{Week: weekAt(2), Actual: 7, Stockout: true},
		{Week: weekAt(3), Actual: 9},
	}
	s := FromWeekValues(SeriesKey{ID: "x", ProductID: "p"}, weeks)
	if !s.Start.Equal(weekAt(0)) || len(s.Values) != 4 || s.ID != "x" || s.ProductID != "p" {
		t.Fatalf("series = %+v", s)
	}
	if s.Values[0] != 5 || !math.IsNaN(s.Values[1]) || s.Values[3] != 9 || !s.Stockout[2] || s.Stockout[3] {
		t.Errorf("values %v stockout %v", s.Values, s.Stockout)
	}
	if !s.missing(1) || !s.missing(2) || s.missing(3) {
		t.Error("absent and stockout weeks must be missing")
	}
}

// TestPointStatistics checks the order of the point forecasts on a skewed (log-normal) series
// and that each one wins the backtest metric it is meant for.
func TestPointStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 31))
	y := make([]float64, 130)
	for i := range y {
		y[i] = math.Round(200 * math.Exp(0.5*rng.NormFloat64()))
	}
	s := Series{Start: monday, Values: y}
	got := map[string]Result{}
	for _, p := range []string{PointMedian, PointMean, PointMAPE} {
		r, err := Forecast(s, nil, nil, Options{Point: p, Transform: TransformLog, Model: ModelSES})
		if err != nil {
			t.Fatal(err)
		}
		got[p] = r
	}
	q := func(p string) float64 { return got[p].Periods[0].Quantity }
	if !(q(PointMAPE) < q(PointMedian) && q(PointMedian) < q(PointMean)) {
		t.Errorf("points mape %v, median %v, mean %v: want mape < median < mean", q(PointMAPE), q(PointMedian), q(PointMean))
	}
	if a, b := *got[PointMAPE].Accuracy.MAPE, *got[PointMedian].Accuracy.MAPE; a >= b {
		t.Errorf("backtest MAPE with point=mape %v, with median %v: want lower", a, b)
	}
	if a, b := *got[PointMedian].Accuracy.WAPE, *got[PointMAPE].Accuracy.WAPE; a >= b {
		t.Errorf("backtest WAPE with median %v, with point=mape %v: want lower", a, b)
	}
	// The interval does not depend on the point statistic.
	if got[PointMAPE].Periods[0].Upper != got[PointMean].Periods[0].Upper {
		t.Error("intervals changed with the point statistic")
	}
	if _, err := Forecast(s, nil, nil, Options{Point: "mode"}); err == nil {
		t.Error("unknown point must fail")
	}
}

// TestResultsEncode: results must always encode as JSON (no NaN or infinity), even for a history
// without any demand.
func TestResultsEncode(t *testing.T) {
	for _, y := range [][]float64{make([]float64, 40), {0, math.NaN(), 0}, seasonalSeries(rand.New(rand.NewPCG(3, 3)), 120)} {
		r, err := Forecast(Series{Start: monday, Values: y}, nil, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("encode %s result: %v", r.Model, err)
		}
		if r.Periods[0].Quantity != 0 && sum(y[:3]) == 0 && len(y) == 40 {
			t.Errorf("all-zero history forecast %v, want 0", r.Periods[0].Quantity)
		}
	}
}

// A week's forecast is the same number whatever the horizon asked for: selection, combination,
// intervals and point statistics never depend on it.
func TestWeekDoesNotDependOnHorizon(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	trend := make([]float64, 90)
	for i := range trend {
		trend[i] = 60 + 0.8*float64(i) + 6*rng.NormFloat64()
	}
	sparse := make([]float64, 80)
	for i := range sparse {
		if rng.Float64() < 0.3 {
			sparse[i] = float64(1 + rng.IntN(6))
		}
	}
	w := promoWorld{series: 6, weeks: 104, lift: 0.4, promoRate: 0.15, seed: 9}
	hs := w.histories()
	lifts := LearnLifts(hs, LiftOptions{})
	future := EventOccurrence{ID: "next", Type: "PROMOTION", Start: weekAt(105), End: weekAt(106)}
	cases := []struct {
		name   string
		s      Series
		events []EventOccurrence
	}{
		{"seasonal", Series{Start: monday, Values: seasonalSeries(rng, 130)}, nil},
		{"trend", Series{Start: monday, Values: trend}, nil},
		{"intermittent", Series{Start: monday, Values: sparse}, nil},
		{"short", Series{Start: monday, Values: trend[:20]}, nil},
		{"promotions with learned lifts", hs[2].Series, append(slices.Clone(hs[2].Events), future)},
	}
	horizons := []int{1, 2, 3, 4, 8, 12, 13, 14, 26, 60}
	for _, c := range cases {
		for _, point := range []string{PointMedian, PointMean, PointMAPE} {
			var ref Result
			for _, h := range horizons {
				r, err := Forecast(c.s, c.events, lifts, Options{Horizon: h, Point: point})
				if err != nil {
					t.Fatalf("%s h=%d: %v", c.name, h, err)
				}
				if h == horizons[0] {
					ref = r
					continue
				}
				ra, _ := json.Marshal(r.Accuracy)
				fa, _ := json.Marshal(ref.Accuracy)
				if r.Model != ref.Model || r.Transform != ref.Transform || string(ra) != string(fa) {
					t.Errorf("%s %s h=%d: model %s %s %s, with h=%d %s %s %s", c.name, point, h, r.Model, r.Transform, ra,
						horizons[0], ref.Model, ref.Transform, fa)
				}
				for k := range min(len(ref.Periods), h) {
					a, b := r.Periods[k], ref.Periods[k]
					if a.Baseline != b.Baseline || a.Quantity != b.Quantity || a.Lower != b.Lower || a.Upper != b.Upper {
						t.Errorf("%s %s week %d: h=%d gives %+v, h=%d gives %+v", c.name, point, k+1, h, a, len(ref.Periods), b)
					}
				}
				if len(r.Periods) > len(ref.Periods) {
					ref = r
				}
			}
		}
	}
}

// Events that overlap no week of the history leave the learned model exactly as it is: a
// promotion planned in the future never changes what was learned from the past.
func TestFutureEventsLeaveLiftsUnchanged(t *testing.T) {
	w := promoWorld{series: 12, weeks: 80, lift: 0.5, elasticity: -2, promoRate: 0.2, seed: 4}
	hs := w.histories()
	before := LearnLifts(hs, LiftOptions{})
	for i := range hs {
		pc := -0.2
		hs[i].Events = append(hs[i].Events,
			EventOccurrence{ID: "f1", Type: "PROMOTION", Start: weekAt(90), End: weekAt(91)},
			EventOccurrence{ID: "f2", Type: "HOLIDAY", Mechanic: "NEW", Start: weekAt(81), End: weekAt(82)},
			EventOccurrence{ID: "f3", Type: "PRICE_CHANGE", Start: weekAt(85), End: weekAt(86), PriceChangePct: &pc})
	}
	after := LearnLifts(hs, LiftOptions{})
	if b, a := fmt.Sprint(before.Summary()), fmt.Sprint(after.Summary()); a != b {
		t.Fatalf("future events changed the learned effects:\nbefore %s\nafter  %s", b, a)
	}
	for _, e := range []EventOccurrence{{Type: "PROMOTION"}, {Type: "HOLIDAY", Mechanic: "NEW"}} {
		key := SeriesKey{ID: "s003", ProductID: "p003", LocationID: "l003"}
		if b, a := before.Estimate(&e, key), after.Estimate(&e, key); b.LiftPct != a.LiftPct || b.Level != a.Level {
			t.Errorf("%s: estimate %+v before, %+v after", e.Type, b, a)
		}
	}
}
