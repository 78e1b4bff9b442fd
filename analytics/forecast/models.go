package forecast

import "math"

// SeasonLength is the season of weekly data: 52 weeks.
const SeasonLength = 52

// Model names accepted by Options.Model and reported in Result.Model.
const (
	ModelAuto          = "auto"
	ModelNaive         = "naive"
	ModelSeasonalNaive = "seasonal_naive"
	ModelMean          = "mean"
	ModelSES           = "ses"
	ModelHolt          = "holt"
	ModelDampedHolt    = "damped_holt"
	ModelHWAdditive    = "holt_winters_additive"
	ModelHWMult        = "holt_winters_multiplicative"
	ModelTheta         = "theta"
	ModelCroston       = "croston"
	ModelSBA           = "sba"
	ModelTSB           = "tsb"
	// ModelCombination prefixes the name of a combined forecast: "combination(ses+theta+damped_holt)".
	ModelCombination = "combination"
)

type kind uint8

const (
	kNaive kind = iota
	kSeasonalNaive
	kMean
	kSES
	kHolt
	kDamped
	kHWAdd
	kHWMul
	kTheta
	kCroston
	kSBA
	kTSB
	numKinds
)

var kindNames = [numKinds]string{ModelNaive, ModelSeasonalNaive, ModelMean, ModelSES, ModelHolt, ModelDampedHolt,
	ModelHWAdditive, ModelHWMult, ModelTheta, ModelCroston, ModelSBA, ModelTSB}

// Models lists the model names Options.Model accepts besides "auto".
func Models() []string { return append([]string(nil), kindNames[:]...) }

func kindByName(name string) (kind, bool) {
	for k, n := range kindNames {
		if n == name {
			return kind(k), true
		}
	}
	return 0, false
}

func (k kind) String() string { return kindNames[k] }

func (k kind) seasonal() bool { return k == kSeasonalNaive || k == kHWAdd || k == kHWMul }

// params are a model's smoothing parameters: alpha (level or size), beta (trend or probability),
// gamma (season), phi (damping).
type params struct{ alpha, beta, gamma, phi float64 }

// state is the running state of one model over one series. Models run as filters: init sets the
// state from the start of the data, update consumes one week (observed or missing), forecast
// returns the h-step-ahead forecast from the current state. Missing weeks never count as demand:
// smoothing models propagate their state as if the week had equalled its one-step forecast (the
// state-space treatment of a missing observation), counting models (mean, naive, Croston, TSB)
// skip the week.
type state struct {
	k      kind
	p      params
	l, b   float64   // level and trend (SES, Holt, Holt-Winters, Theta's SES level)
	s      []float64 // season slots indexed by week mod 52 (Holt-Winters, seasonal naive; NaN = unset)
	t      int       // index of the next week
	n      int       // observed weeks consumed
	sum    float64   // mean: sum of observations
	sx     float64   // Theta: running sums of the regression of y on t
	sy     float64
	sxx    float64
	sxy    float64
	z, q   float64 // Croston/SBA: smoothed size and interval; TSB: size and probability
	pw     float64 // Theta: (1-alpha)^t
	gap    int     // Croston: observed weeks since the last demand
	last   float64 // naive: last observation
	seeded bool    // Croston: first demand seen; naive: last set
}

// slot returns the season slot of week t.
func slot(t int) int { return t % SeasonLength }

// init prepares the state of kind k with parameters p for data y (ok marks observed weeks),
// using at most the first end weeks to set initial values. It returns false when the model
// cannot run on these data (too short, or non-positive values for a multiplicative model).
func (st *state) init(k kind, p params, y []float64, ok []bool, end int, season []float64) bool {
	*st = state{k: k, p: p, s: season}
	switch k {
	case kNaive, kMean:
		return true
	case kSeasonalNaive:
		for i := range st.s {
			st.s[i] = math.NaN()
		}
		return true
	case kSES, kTheta:
		l, c := 0.0, 0
		for i := 0; i < end && c < 4; i++ {
			if ok[i] {
				l += y[i]
				c++
			}
		}
		if c == 0 {
			return false
		}
		st.l = l / float64(c)
		st.pw = 1
		return true
	case kHolt, kDamped:
		var sx, sy, sxx, sxy float64
		c := 0
		for i := 0; i < end && c < 10; i++ {
			if ok[i] {
				x := float64(i)
				sx, sy, sxx, sxy = sx+x, sy+y[i], sxx+x*x, sxy+x*y[i]
				c++
			}
		}
		if c < 2 {
			return false
		}
		fc := float64(c)
		den := fc*sxx - sx*sx
		slope := 0.0
		if den > 0 {
			slope = (fc*sxy - sx*sy) / den
		}
		a := (sy - slope*sx) / fc // fitted value at t = 0
		st.b = slope
		st.l = a - slope // so that the first one-step forecast is a
		return true
	case kHWAdd, kHWMul:
		return st.initSeasonal(y, ok, end)
	case kCroston, kSBA:
		return true
	case kTSB:
		nz, c, sz := 0, 0, 0.0
		for i := 0; i < end; i++ {
			if ok[i] {
				c++
				if y[i] > 0 {
					nz++
					sz += y[i]
				}
			}
		}
		if c == 0 {
			return false
		}
		st.q = float64(nz) / float64(c)
		if nz > 0 {
			st.z = sz / float64(nz)
		}
		return true
	}
	return false
}

// initSeasonal sets Holt-Winters initial states from the first two seasons: level from the first
// season's mean, trend from the difference of the two seasons' means, season indices from the
// average deviation (additive) or ratio (multiplicative) to each season's mean.
func (st *state) initSeasonal(y []float64, ok []bool, end int) bool {
	const m = SeasonLength
	if end < 2*m {
		return false
	}
	var mean [2]float64
	for j := range 2 {
		s, c := 0.0, 0
		for i := j * m; i < (j+1)*m; i++ {
			if ok[i] {
				if st.k == kHWMul && y[i] <= 0 {
					return false
				}
				s += y[i]
				c++
			}
		}
		if c < m/2 {
			return false
		}
		mean[j] = s / float64(c)
	}
	if st.k == kHWMul && (mean[0] <= 0 || mean[1] <= 0) {
		return false
	}
	st.b = (mean[1] - mean[0]) / m
	total := 0.0
	for i := range m {
		v, c := 0.0, 0
		for j := range 2 {
			if t := i + j*m; ok[t] {
				if st.k == kHWMul {
					v += y[t] / mean[j]
				} else {
					v += y[t] - mean[j]
				}
				c++
			}
		}
		switch {
		case c > 0:
			v /= float64(c)
		case st.k == kHWMul:
			v = 1
		}
		st.s[i] = v
		total += v
	}
	for i := range m { // normalise: indices sum to 0 (additive) or average 1 (multiplicative)
		if st.k == kHWMul {
			st.s[i] *= m / total
		} else {
			st.s[i] -= total / m
		}
	}
	// Level at t = -1: the first season's mean sits at its middle, (m-1)/2.
	st.l = mean[0] - st.b*float64(m+1)/2
	return true
}

// forecast returns the h-step-ahead forecast (h >= 1) from the current state.
func (st *state) forecast(h int) float64 {
	p := &st.p
	switch st.k {
	case kNaive:
		return st.last
	case kSeasonalNaive:
		if v := st.s[slot(st.t+h-1)]; !math.IsNaN(v) {
			return v
		}
		return st.last
	case kMean:
		if st.n == 0 {
			return 0
		}
		return st.sum / float64(st.n)
	case kSES:
		return st.l
	case kHolt:
		return st.l + float64(h)*st.b
	case kDamped:
		return st.l + dampSum(p.phi, h)*st.b
	case kHWAdd:
		return st.l + float64(h)*st.b + st.s[slot(st.t+h-1)]
	case kHWMul:
		return (st.l + float64(h)*st.b) * st.s[slot(st.t+h-1)]
	case kTheta:
		return st.l + st.thetaDrift()/2*(float64(h-1)+(1-st.pw)/p.alpha)
	case kCroston:
		if !st.seeded {
			return 0
		}
		return st.z / st.q
	case kSBA:
		if !st.seeded {
			return 0
		}
		return (1 - p.alpha/2) * st.z / st.q
	case kTSB:
		return st.q * st.z
	}
	return 0
}

// one is forecast(1) without the general case's powers.
func (st *state) one() float64 {
	p := &st.p
	switch st.k {
	case kSES:
		return st.l
	case kHolt:
		return st.l + st.b
	case kDamped:
		return st.l + p.phi*st.b
	case kHWAdd:
		return st.l + st.b + st.s[slot(st.t)]
	case kHWMul:
		return (st.l + st.b) * st.s[slot(st.t)]
	case kTheta:
		return st.l + st.thetaDrift()/2*(1-st.pw)/p.alpha
	}
	return st.forecast(1)
}

// dampSum is phi + phi^2 + ... + phi^h.
func dampSum(phi float64, h int) float64 {
	if phi == 1 {
		return float64(h)
	}
	return phi * (1 - math.Pow(phi, float64(h))) / (1 - phi)
}

// thetaDrift is the slope of the least-squares line through the observations so far.
func (st *state) thetaDrift() float64 {
	n := float64(st.n)
	den := n*st.sxx - st.sx*st.sx
	if st.n < 2 || den <= 0 {
		return 0
	}
	return (n*st.sxy - st.sx*st.sy) / den
}

// update consumes week st.t with value y, observed when ok.
func (st *state) update(y float64, ok bool) {
	p := &st.p
	switch st.k {
	case kNaive:
		if ok {
			st.last, st.seeded = y, true
		}
	case kSeasonalNaive:
		if ok {
			st.s[slot(st.t)] = y
			st.last = y
		}
	case kMean:
		if ok {
			st.sum += y
			st.n++
		}
	case kSES:
		if ok {
			st.l += p.alpha * (y - st.l)
		}
	case kTheta:
		if ok {
			st.l += p.alpha * (y - st.l)
			x := float64(st.t)
			st.n++
			st.sx, st.sy, st.sxx, st.sxy = st.sx+x, st.sy+y, st.sxx+x*x, st.sxy+x*y
		}
		st.pw *= 1 - p.alpha
	case kHolt:
		f := st.l + st.b
		if !ok {
			y = f
		}
		l := p.alpha*y + (1-p.alpha)*f
		st.b = p.beta*(l-st.l) + (1-p.beta)*st.b
		st.l = l
	case kDamped:
		f := st.l + p.phi*st.b
		if !ok {
			y = f
		}
		l := p.alpha*y + (1-p.alpha)*f
		st.b = p.beta*(l-st.l) + (1-p.beta)*p.phi*st.b
		st.l = l
	case kHWAdd:
		i := slot(st.t)
		sp, f := st.s[i], st.l+st.b
		if !ok {
			y = f + sp
		}
		l := p.alpha*(y-sp) + (1-p.alpha)*f
		st.s[i] = p.gamma*(y-f) + (1-p.gamma)*sp
		st.b = p.beta*(l-st.l) + (1-p.beta)*st.b
		st.l = l
	case kHWMul:
		i := slot(st.t)
		sp, f := st.s[i], st.l+st.b
		if !ok || sp <= 0 || f <= 0 { // propagate: the level moves by the trend, indices stay
			st.l = f
			break
		}
		l := p.alpha*(y/sp) + (1-p.alpha)*f
		st.s[i] = p.gamma*(y/f) + (1-p.gamma)*sp
		st.b = p.beta*(l-st.l) + (1-p.beta)*st.b
		st.l = l
	case kCroston, kSBA:
		if !ok {
			break
		}
		st.gap++
		if y > 0 {
			if !st.seeded {
				st.z, st.q, st.seeded = y, float64(st.gap), true
			} else {
				st.z += p.alpha * (y - st.z)
				st.q += p.alpha * (float64(st.gap) - st.q)
			}
			st.gap = 0
		}
	case kTSB:
		if !ok {
			break
		}
		d := 0.0
		if y > 0 {
			d = 1
			st.z += p.alpha * (y - st.z)
		}
		st.q += p.beta * (d - st.q)
	}
	st.t++
}

// path writes the forecasts for steps 1..len(out) from the current state into out.
func (st *state) path(out []float64) {
	switch st.k {
	case kNaive, kMean, kSES, kCroston, kSBA, kTSB:
		v := st.forecast(1)
		for i := range out {
			out[i] = v
		}
	case kHolt:
		for i := range out {
			out[i] = st.l + float64(i+1)*st.b
		}
	case kDamped:
		d, phi := 0.0, st.p.phi
		pk := 1.0
		for i := range out {
			pk *= phi
			d += pk
			out[i] = st.l + d*st.b
		}
	case kTheta:
		d := st.thetaDrift() / 2
		c := (1 - st.pw) / st.p.alpha
		for i := range out {
			out[i] = st.l + d*(float64(i)+c)
		}
	default:
		for i := range out {
			out[i] = st.forecast(i + 1)
		}
	}
}
