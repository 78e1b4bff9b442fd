package forecast

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

const tol = 1e-9

func near(a, b, eps float64) bool { return math.Abs(a-b) <= eps*math.Max(1, math.Abs(b)) }

func allOK(y []float64) []bool {
	ok := make([]bool, len(y))
	for i, v := range y {
		ok[i] = !math.IsNaN(v)
	}
	return ok
}

// runModel filters y through model k with parameters p and returns the one-step forecasts made
// before each week and the forecasts for steps 1..h after the last week.
func runModel(t *testing.T, k kind, p params, y []float64, h int) (onestep, future []float64) {
	t.Helper()
	ok := allOK(y)
	var st state
	var season [SeasonLength]float64
	if !st.init(k, p, y, ok, len(y), season[:]) {
		t.Fatalf("%s: init failed", k)
	}
	for i := range y {
		onestep = append(onestep, st.forecast(1))
		st.update(y[i], ok[i])
	}
	future = make([]float64, h)
	st.path(future)
	for i := range future {
		if f := st.forecast(i + 1); !near(f, future[i], tol) {
			t.Fatalf("%s: path[%d] = %v, forecast(%d) = %v", k, i, future[i], i+1, f)
		}
	}
	return onestep, future
}

var ten = []float64{10, 12, 11, 13, 12, 14, 13, 15, 14, 16}

func TestSESByHand(t *testing.T) {
	// l0 = mean of the first four = 11.5; l_t = l + 0.5 (y - l).
	one, fut := runModel(t, kSES, params{alpha: 0.5}, ten, 3)
	want := []float64{11.5, 10.75, 11.375, 11.1875}
	for i, w := range want {
		if !near(one[i], w, tol) {
			t.Errorf("one-step[%d] = %v, want %v", i, one[i], w)
		}
	}
	l := 11.5
	for _, v := range ten {
		l += 0.5 * (v - l)
	}
	for h, f := range fut {
		if !near(f, l, tol) {
			t.Errorf("h=%d: got %v, want flat %v", h+1, f, l)
		}
	}
}

// TestHoltDampedAgainstReference checks the Holt and damped recursions against a plain
// implementation of the textbook (Hyndman & Athanasopoulos, FPP §8.2) component form.
func TestHoltDampedAgainstReference(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    kind
		p    params
	}{
		{"holt", kHolt, params{alpha: 0.6, beta: 0.2, phi: 1}},
		{"damped", kDamped, params{alpha: 0.6, beta: 0.2, phi: 0.9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			one, fut := runModel(t, tc.k, tc.p, ten, 4)
			// Initial states: least-squares line through the first ten points, l0 = a - b.
			a, b := lineFit(ten)
			l, tr := a-b, b
			phi := tc.p.phi
			for i, y := range ten {
				f := l + phi*tr
				if !near(one[i], f, 1e-9) {
					t.Fatalf("one-step[%d] = %v, want %v", i, one[i], f)
				}
				ln := tc.p.alpha*y + (1-tc.p.alpha)*(l+phi*tr)
				tr = tc.p.beta*(ln-l) + (1-tc.p.beta)*phi*tr
				l = ln
			}
			d := 0.0
			for h := range fut {
				d += math.Pow(phi, float64(h+1))
				if want := l + d*tr; !near(fut[h], want, 1e-9) {
					t.Errorf("h=%d: got %v, want %v", h+1, fut[h], want)
				}
			}
		})
	}
}

func lineFit(y []float64) (a, b float64) {
	n := float64(len(y))
	var sx, sy, sxx, sxy float64
	for i, v := range y {
		x := float64(i)
		sx, sy, sxx, sxy = sx+x, sy+v, sxx+x*x, sxy+x*v
	}
	b = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	return (sy - b*sx) / n, b
}

// TestHoltWintersAgainstReference checks both Holt-Winters recursions against a plain
// implementation of FPP §8.3 with the same initialisation (two first seasons).
func TestHoltWintersAgainstReference(t *testing.T) {
	const m = SeasonLength
	rng := rand.New(rand.NewPCG(7, 7))
	y := make([]float64, 3*m+5)
	for i := range y {
		y[i] = 100 + 0.3*float64(i) + 20*math.Sin(2*math.Pi*float64(i)/m) + rng.NormFloat64()
	}
	p := params{alpha: 0.3, beta: 0.05, gamma: 0.2, phi: 1}
	for _, mult := range []bool{false, true} {
		k := kHWAdd
		if mult {
			k = kHWMul
		}
		t.Run(k.String(), func(t *testing.T) {
			one, fut := runModel(t, k, p, y, 10)
			// Reference initialisation.
			var mean [2]float64
			for j := range 2 {
				for i := range m {
					mean[j] += y[j*m+i] / m
				}
			}
			b := (mean[1] - mean[0]) / m
			s := make([]float64, m)
			tot := 0.0
			for i := range m {
				if mult {
					s[i] = (y[i]/mean[0] + y[i+m]/mean[1]) / 2
				} else {
					s[i] = (y[i] - mean[0] + y[i+m] - mean[1]) / 2
				}
				tot += s[i]
			}
			for i := range s {
				if mult {
					s[i] *= m / tot
				} else {
					s[i] -= tot / m
				}
			}
			l := mean[0] - b*(m+1)/2
			for i, v := range y {
				j := i % m
				var f float64
				if mult {
					f = (l + b) * s[j]
				} else {
					f = l + b + s[j]
				}
				if !near(one[i], f, 1e-9) {
					t.Fatalf("one-step[%d] = %v, want %v", i, one[i], f)
				}
				var ln float64
				if mult {
					ln = p.alpha*v/s[j] + (1-p.alpha)*(l+b)
					s[j] = p.gamma*v/(l+b) + (1-p.gamma)*s[j]
				} else {
					ln = p.alpha*(v-s[j]) + (1-p.alpha)*(l+b)
					s[j] = p.gamma*(v-l-b) + (1-p.gamma)*s[j]
				}
				b = p.beta*(ln-l) + (1-p.beta)*b
				l = ln
			}
			for h := range fut {
				j := (len(y) + h) % m
				want := l + float64(h+1)*b + s[j]
				if mult {
					want = (l + float64(h+1)*b) * s[j]
				}
				if !near(fut[h], want, 1e-9) {
					t.Errorf("h=%d: got %v, want %v", h+1, fut[h], want)
				}
			}
		})
	}
}

func TestThetaAgainstReference(t *testing.T) {
	alpha := 0.4
	_, fut := runModel(t, kTheta, params{alpha: alpha}, ten, 3)
	// Hyndman & Billah (2003), as forecast::thetaf: SES forecast plus half the regression slope
	// times (h - 1 + (1 - (1-alpha)^n) / alpha).
	l := (ten[0] + ten[1] + ten[2] + ten[3]) / 4
	for _, v := range ten {
		l += alpha * (v - l)
	}
	_, b := lineFit(ten)
	n := float64(len(ten))
	for h := range fut {
		want := l + b/2*(float64(h)+(1-math.Pow(1-alpha, n))/alpha)
		if !near(fut[h], want, 1e-9) {
			t.Errorf("h=%d: got %v, want %v", h+1, fut[h], want)
		}
	}
}

func TestIntermittentByHand(t *testing.T) {
	y := []float64{0, 0, 3, 0, 0, 0, 2, 0, 4, 0}
	tests := []struct {
		k    kind
		p    params
		want float64
	}{
		// Demands 3 (after 3 weeks), 2 (after 4), 4 (after 2), alpha 0.1:
		// z: 3 -> 2.9 -> 3.01; interval: 3 -> 3.1 -> 2.99.
		{kCroston, params{alpha: 0.1}, 3.01 / 2.99},
		{kSBA, params{alpha: 0.1}, (1 - 0.05) * 3.01 / 2.99},
		// TSB: probability starts at 3/10 and moves 0.2 toward each week's 0/1; size as Croston's.
		{kTSB, params{alpha: 0.1, beta: 0.2}, 0.33655529 * 3.01},
	}
	for _, tt := range tests {
		t.Run(tt.k.String(), func(t *testing.T) {
			_, fut := runModel(t, tt.k, tt.p, y, 2)
			for h, f := range fut {
				if !near(f, tt.want, 1e-7) {
					t.Errorf("h=%d: got %.9f, want %.9f", h+1, f, tt.want)
				}
			}
		})
	}
}

// TestCrostonSkipsMissingWeeks checks that missing weeks neither count as zero demand nor
// lengthen the interval between demands.
func TestCrostonSkipsMissingWeeks(t *testing.T) {
	nan := math.NaN()
	with := []float64{0, 0, 3, nan, nan, 0, 0, 0, 2, 0, 4, 0}
	without := []float64{0, 0, 3, 0, 0, 0, 2, 0, 4, 0}
	_, a := runModel(t, kCroston, params{alpha: 0.1}, with, 1)
	_, b := runModel(t, kCroston, params{alpha: 0.1}, without, 1)
	if !near(a[0], b[0], tol) {
		t.Errorf("with missing weeks %v, without %v: missing weeks changed the forecast", a[0], b[0])
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		want   DemandClass
		adi    float64
	}{
		{"smooth", []float64{10, 11, 9, 10, 12, 10, 9, 11}, ClassSmooth, 1},
		{"erratic", []float64{1, 30, 2, 25, 1, 40, 3, 20}, ClassErratic, 1},
		{"intermittent", []float64{0, 5, 0, 0, 6, 0, 5, 0, 0, 6}, ClassIntermittent, 2.5},
		{"lumpy", []float64{0, 1, 0, 0, 40, 0, 2, 0, 0, 60}, ClassLumpy, 2.5},
		{"missing is not zero", []float64{10, math.NaN(), 11, math.NaN(), 10, 12}, ClassSmooth, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.values)
			if got.Class != tt.want || !near(got.ADI, tt.adi, 1e-12) {
				t.Errorf("Classify = %+v, want class %s ADI %v", got, tt.want, tt.adi)
			}
		})
	}
	// CV² by hand: sizes 5, 6, 5, 6 have mean 5.5 and variance 0.25.
	if got := Classify([]float64{0, 5, 0, 0, 6, 0, 5, 0, 0, 6}).CV2; !near(got, 0.25/30.25, 1e-12) {
		t.Errorf("CV2 = %v, want %v", got, 0.25/30.25)
	}
}

func TestScoreByHand(t *testing.T) {
	f := []float64{10, 20, 30, 5}
	a := []float64{12, 18, 0, math.NaN()}
	got := Score(f, a, []float64{10, 14, 12}) // naive scale: (4 + 2) / 2 = 3
	check := func(name string, p *float64, want float64) {
		t.Helper()
		if p == nil || !near(*p, want, 1e-12) {
			t.Errorf("%s = %v, want %v", name, p, want)
		}
	}
	check("WAPE", got.WAPE, (2+2+30)/30.0)
	check("Bias", got.Bias, (-2+2+30)/30.0)
	check("MAPE", got.MAPE, (2.0/12+2.0/18)/2)
	check("SMAPE", got.SMAPE, (4.0/22+4.0/38+2)/3)
	check("MASE", got.MASE, (34.0/3)/3)
	if got.Points != 3 {
		t.Errorf("Points = %d, want 3", got.Points)
	}
	if z := Score([]float64{1}, []float64{0}, nil); z.MAPE != nil || z.WAPE != nil || z.MASE != nil {
		t.Errorf("undefined metrics must be nil: %+v", z)
	}
}

// TestFastFitLoopsMatchRecursions checks the hand-specialised SSE loops used while fitting (which
// run the recursions on the one-step forecast rather than on level and trend) against the
// general state recursion, over random parameters within the fit bounds and histories with
// trend, season, missing weeks, zeros and a level change.
func TestFastFitLoopsMatchRecursions(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	shapes := []func(i int) float64{
		func(i int) float64 {
			return 50 + 0.2*float64(i) + 10*math.Sin(2*math.Pi*float64(i)/SeasonLength) + 3*rng.NormFloat64()
		},
		func(i int) float64 { // intermittent: zeros take the multiplicative model's guarded branch
			if rng.Float64() < 0.4 {
				return 0
			}
			return float64(1 + rng.IntN(9))
		},
		func(i int) float64 { // a level shift and a falling trend
			if i < 70 {
				return 400 - 2*float64(i) + 20*rng.NormFloat64()
			}
			return 90 + 5*rng.NormFloat64()
		},
	}
	for si, shape := range shapes {
		y := make([]float64, 2*SeasonLength+52)
		for i := range y {
			y[i] = shape(i)
			if i%17 == 5 {
				y[i] = math.NaN()
			}
		}
		ok := allOK(y)
		for trial := range 50 {
			for _, k := range []kind{kSES, kHolt, kDamped, kHWAdd, kHWMul, kTheta} {
				var x [3]float64
				for d := range dims[k] {
					lo, hi := bounds[k][d][0], bounds[k][d][1]
					x[d] = lo + rng.Float64()*(hi-lo)
				}
				p := toParams(k, x)
				w := new(workspace)
				w.seedFit(k, y, ok, len(y))
				got := w.sse(k, p, y, ok, len(y))
				var st state
				var season [SeasonLength]float64
				if !st.init(k, p, y, ok, len(y), season[:]) { // the model cannot run on these data
					if !math.IsInf(got, 1) {
						t.Errorf("shape %d %s: init refused, fast SSE %v, want +Inf", si, k, got)
					}
					continue
				}
				want := 0.0
				for i := range y {
					if ok[i] {
						e := y[i] - st.forecast(1)
						want += e * e
					}
					st.update(y[i], ok[i])
				}
				if math.IsNaN(want) {
					want = math.Inf(1)
				}
				if got != want && !near(got, want, 1e-9) {
					t.Errorf("shape %d trial %d %s %+v: fast SSE %v, recursion %v", si, trial, k, p, got, want)
				}
			}
		}
	}
}

// TestQuantilesMatchSorting checks the selection-based quantiles against quantile on sorted
// values, with ties, a few values and the extreme levels.
func TestQuantilesMatchSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range 2000 {
		n := 1 + rng.IntN(700)
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
			if trial%3 == 0 {
				v[i] = math.Round(v[i] * 2) // many ties
			}
		}
		p := rng.Float64()
		if trial%10 == 0 {
			p = []float64{0, 1, 0.5}[trial%3]
		}
		q := p + (1-p)*rng.Float64()
		if trial%50 == 7 { // a NaN takes the sorting path, which puts it first
			v[rng.IntN(n)] = math.NaN()
		}
		sorted := slices.Clone(v)
		slices.Sort(sorted)
		wantP, wantQ := quantile(sorted, p), quantile(sorted, q)
		gotP, gotQ := quantiles(v, p, q)
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if !same(gotP, wantP) || !same(gotQ, wantQ) {
			t.Fatalf("n=%d p=%v q=%v: got %v %v, want %v %v", n, p, q, gotP, gotQ, wantP, wantQ)
		}
	}
}
