package forecast

import "math"

// Parameter bounds. Trend and season smoothing are kept small so that a few noisy weeks cannot
// turn into a runaway trend; damping stays in the range usually found to forecast well.
var bounds = [numKinds][3][2]float64{
	kSES:     {{0.01, 0.99}},
	kTheta:   {{0.01, 0.99}},
	kHolt:    {{0.01, 0.99}, {0.005, 0.3}},
	kDamped:  {{0.01, 0.99}, {0.005, 0.3}, {0.8, 0.98}},
	kHWAdd:   {{0.01, 0.9}, {0.001, 0.2}, {0.001, 0.5}},
	kHWMul:   {{0.01, 0.9}, {0.001, 0.2}, {0.001, 0.5}},
	kCroston: {{0.02, 0.5}},
	kSBA:     {{0.02, 0.5}},
	kTSB:     {{0.02, 0.5}, {0.02, 0.5}},
}

// dims is the number of fitted parameters of each kind.
var dims = [numKinds]int{kSES: 1, kTheta: 1, kHolt: 2, kDamped: 3, kHWAdd: 3, kHWMul: 3, kCroston: 1, kSBA: 1, kTSB: 2}

func toParams(k kind, x [3]float64) params {
	p := params{phi: 1}
	switch k {
	case kSES, kTheta, kCroston, kSBA:
		p.alpha = x[0]
	case kHolt, kTSB:
		p.alpha, p.beta = x[0], x[1]
	case kDamped:
		p.alpha, p.beta, p.phi = x[0], x[1], x[2]
	case kHWAdd, kHWMul:
		p.alpha, p.beta, p.gamma = x[0], x[1], x[2]
	}
	return p
}

// sse runs model k with parameters p over y[:end] and returns the sum of squared one-step errors
// over the observed weeks (+Inf when the model cannot run on these data).
func (w *workspace) sse(k kind, p params, y []float64, ok []bool, end int) float64 {
	st := &w.st
	if !w.seedOK {
		return math.Inf(1)
	}
	switch k { // hand-specialised loops for the models whose fits dominate the cost
	case kSES, kHolt, kDamped, kHWAdd, kHWMul, kTheta:
		return w.sseFast(k, p, y, ok, end)
	}
	*st = w.seed // initial states do not depend on the parameters: set once per fit
	st.p = p
	if st.s != nil {
		st.s = w.season[:]
		copy(st.s, w.seedSeason[:])
	}
	s := 0.0
	for t := range end {
		if ok[t] {
			e := y[t] - st.one()
			s += e * e
		}
		st.update(y[t], ok[t])
	}
	if math.IsNaN(s) {
		return math.Inf(1)
	}
	return s
}

// sseFast is sse for SES, Theta, Holt, damped Holt and the two Holt-Winters, without the
// per-week dispatch of state.update. The recursions are those of state.update rewritten on the
// one-step forecast f = level + damped trend: f' = (f + phi*trend') + K*e, so that a week's
// dependency chain is one subtraction, one multiplication and one addition (state.update's
// form chains level -> trend -> forecast, about twice as long). The rewrite is exact in real
// arithmetic; in floating point the sums differ in their last bits (TestSSEFastMatchesUpdate).
func (w *workspace) sseFast(k kind, p params, y []float64, ok []bool, end int) float64 {
	l, b, s := w.seed.l, w.seed.b, 0.0
	a, be, phi := p.alpha, p.beta, p.phi
	switch k {
	case kSES:
		for t := range end {
			if ok[t] {
				e := y[t] - l
				s += e * e
				l += a * e
			}
		}
	case kHolt, kDamped:
		if k == kHolt {
			phi = 1
		}
		// f is the forecast for week t, pb the damped trend phi*b: after an observed week
		// l' = f + a*e and b' = pb + a*be*e, so f' = l' + phi*b' = (f + phi*pb) + a*(1+phi*be)*e.
		f, pb := l+phi*b, phi*b
		kf, kb := a+phi*a*be, phi*a*be
		for t := range end {
			u := f + phi*pb
			if ok[t] {
				e := y[t] - f
				s += e * e
				f = u + kf*e
				pb = phi*pb + kb*e
			} else {
				f, pb = u, phi*pb
			}
		}
	case kTheta:
		pw := 1.0
		for t := range end {
			if ok[t] {
				e := y[t] - (l + w.drift[t]/2*(1-pw)/a)
				s += e * e
				l += a * (y[t] - l)
			}
			pw *= 1 - a
		}
	case kHWMul:
		// f = l + b; after an observed week with positive season and forecast, r = y/s - f,
		// l' = f + a*r and b' = b + a*be*r, so f' = (f + b) + a*(1+be)*r.
		sea := w.season[:]
		copy(sea, w.seedSeason[:])
		g := p.gamma
		f, kf, kb := l+b, a+a*be, a*be
		i := 0
		for t := range end {
			sp := sea[i]
			switch {
			case ok[t] && sp > 0 && f > 0:
				e := y[t] - f*sp
				s += e * e
				r := y[t]/sp - f
				sea[i] = g*(y[t]/f) + (1-g)*sp
				f = (f + b) + kf*r
				b += kb * r
			case ok[t]:
				e := y[t] - f*sp
				s += e * e
				f += b
			default:
				f += b
			}
			if i++; i == SeasonLength {
				i = 0
			}
		}
	case kHWAdd:
		// f = l + b; after an observed week e = y - s - f, l' = f + a*e, b' = b + a*be*e and
		// s' = s + g*e, so f' = (f + b) + a*(1+be)*e.
		sea := w.season[:]
		copy(sea, w.seedSeason[:])
		g := p.gamma
		f, kf, kb := l+b, a+a*be, a*be
		i := 0
		for t := range end {
			sp := sea[i]
			if ok[t] {
				e := (y[t] - sp) - f
				s += e * e
				sea[i] = sp + g*e
				f = (f + b) + kf*e
				b += kb * e
			} else {
				f += b
			}
			if i++; i == SeasonLength {
				i = 0
			}
		}
	}
	if math.IsNaN(s) {
		return math.Inf(1)
	}
	return s
}

// seedFit computes the initial state of model k on y[:end] for the evaluations of one fit.
func (w *workspace) seedFit(k kind, y []float64, ok []bool, end int) {
	w.seedOK = w.seed.init(k, params{}, y, ok, end, w.seedSeason[:])
	if k == kTheta { // Theta's drift does not depend on alpha: the slope before each week
		w.drift = grow(w.drift, end)
		var st state
		st.k, st.p.alpha = kTheta, 0.5
		for t := range end {
			w.drift[t] = st.thetaDrift()
			st.update(y[t], ok[t])
		}
	}
	if k != kHWAdd && k != kHWMul && k != kSeasonalNaive {
		w.seed.s = nil
	}
}

// fit estimates the parameters of model k on y[:end] by minimising the in-sample one-step squared
// error: golden-section search for one parameter, Nelder-Mead within the bounds for more. start,
// when valid, warm-starts the search (used when refitting on the full history). It returns false
// when the model cannot run on these data.
func (w *workspace) fit(k kind, y []float64, ok []bool, end int, start *params) (params, bool) {
	d := dims[k]
	w.seedFit(k, y, ok, end)
	if d == 0 {
		if !w.st.init(k, params{}, y, ok, end, w.season[:]) {
			return params{}, false
		}
		return params{}, true
	}
	b := bounds[k]
	if d == 1 {
		lo, hi := b[0][0], b[0][1]
		evals := 10
		if start != nil { // narrow the bracket around the previous optimum
			c := start.alpha
			lo, hi = math.Max(lo, c-0.15), math.Min(hi, c+0.15)
			evals = 8
		}
		x, f := w.golden(k, y, ok, end, lo, hi, evals)
		if math.IsInf(f, 1) {
			return params{}, false
		}
		return toParams(k, [3]float64{x}), true
	}
	var x0 [3]float64
	if start != nil {
		switch k {
		case kHolt, kTSB:
			x0 = [3]float64{start.alpha, start.beta}
		case kDamped:
			x0 = [3]float64{start.alpha, start.beta, start.phi}
		default:
			x0 = [3]float64{start.alpha, start.beta, start.gamma}
		}
	} else {
		for i := range d {
			x0[i] = b[i][0] + 0.25*(b[i][1]-b[i][0])
		}
		if k == kDamped {
			x0[2] = 0.95
		}
	}
	maxEval := 14 + 8*d
	if start != nil {
		maxEval = 8 + 5*d
	}
	x, f := w.nelderMead(k, y, ok, end, x0, d, maxEval, start != nil)
	if math.IsInf(f, 1) {
		return params{}, false
	}
	return toParams(k, x), true
}

func (w *workspace) golden(k kind, y []float64, ok []bool, end int, lo, hi float64, evals int) (float64, float64) {
	const r = 0.6180339887498949
	a, b := lo, hi
	c, d := b-r*(b-a), a+r*(b-a)
	fc := w.sse(k, toParams(k, [3]float64{c}), y, ok, end)
	fd := w.sse(k, toParams(k, [3]float64{d}), y, ok, end)
	for range evals - 2 {
		if fc <= fd {
			b, d, fd = d, c, fc
			c = b - r*(b-a)
			fc = w.sse(k, toParams(k, [3]float64{c}), y, ok, end)
		} else {
			a, c, fc = c, d, fd
			d = a + r*(b-a)
			fd = w.sse(k, toParams(k, [3]float64{d}), y, ok, end)
		}
	}
	if fc <= fd {
		return c, fc
	}
	return d, fd
}

// nelderMead minimises the SSE of model k over its first d parameters, projecting every point
// onto the parameter bounds.
func (w *workspace) nelderMead(k kind, y []float64, ok []bool, end int, x0 [3]float64, d, maxEval int, warm bool) ([3]float64, float64) {
	b := bounds[k]
	clamp := func(x [3]float64) [3]float64 {
		for i := range d {
			x[i] = min(max(x[i], b[i][0]), b[i][1])
		}
		return x
	}
	eval := func(x [3]float64) float64 { return w.sse(k, toParams(k, x), y, ok, end) }
	var pts [4][3]float64
	var fs [4]float64
	pts[0] = clamp(x0)
	step := 0.25
	if warm {
		step = 0.08
	}
	for i := range d {
		p := pts[0]
		span := b[i][1] - b[i][0]
		if p[i]+step*span <= b[i][1] {
			p[i] += step * span
		} else {
			p[i] -= step * span
		}
		pts[i+1] = clamp(p)
	}
	n := d + 1
	for i := range n {
		fs[i] = eval(pts[i])
	}
	evals := n
	for evals < maxEval {
		// order: best first
		for i := 1; i < n; i++ {
			for j := i; j > 0 && fs[j] < fs[j-1]; j-- {
				fs[j], fs[j-1] = fs[j-1], fs[j]
				pts[j], pts[j-1] = pts[j-1], pts[j]
			}
		}
		if fs[n-1]-fs[0] <= 1e-9*(math.Abs(fs[0])+1e-12) {
			break
		}
		var c [3]float64
		for i := range n - 1 {
			for j := range d {
				c[j] += pts[i][j] / float64(n-1)
			}
		}
		worst := pts[n-1]
		var xr [3]float64
		for j := range d {
			xr[j] = c[j] + (c[j] - worst[j])
		}
		xr = clamp(xr)
		fr := eval(xr)
		evals++
		switch {
		case fr < fs[0]:
			var xe [3]float64
			for j := range d {
				xe[j] = c[j] + 2*(c[j]-worst[j])
			}
			xe = clamp(xe)
			fe := eval(xe)
			evals++
			if fe < fr {
				pts[n-1], fs[n-1] = xe, fe
			} else {
				pts[n-1], fs[n-1] = xr, fr
			}
		case fr < fs[n-2]:
			pts[n-1], fs[n-1] = xr, fr
		default:
			var xc [3]float64
			for j := range d {
				xc[j] = c[j] + 0.5*(worst[j]-c[j])
			}
			fc := eval(xc)
			evals++
			if fc < fs[n-1] {
				pts[n-1], fs[n-1] = xc, fc
			} else { // shrink toward the best
				for i := 1; i < n; i++ {
					for j := range d {
						pts[i][j] = pts[0][j] + 0.5*(pts[i][j]-pts[0][j])
					}
					fs[i] = eval(pts[i])
					evals++
				}
			}
		}
	}
	best := 0
	for i := 1; i < n; i++ {
		if fs[i] < fs[best] {
			best = i
		}
	}
	return pts[best], fs[best]
}
