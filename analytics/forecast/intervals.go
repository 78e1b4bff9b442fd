package forecast

import (
	"math"
	"slices"
)

// intervalSet holds the prediction interval of each step: baseline + lo·sigma[h] to
// baseline + hi·sigma[h], before event multipliers.
type intervalSet struct {
	lo, hi float64
	sigma  []float64
	spread []float64 // estimated error standard deviation of each step (no small-sample widening)
	corr   float64
}

// minEmpirical is the number of backtest errors below which normal quantiles replace the
// empirical ones.
const minEmpirical = 40

// intervals derives prediction intervals from the rolling-origin backtest of the chosen model:
// sigma[h] is the root mean squared error of the h-step forecasts (forced non-decreasing in h,
// and grown as sqrt(h) past the backtested steps); the quantiles lo, hi are the empirical
// quantiles of all errors divided by their step's sigma (normal quantiles when there are fewer
// than minEmpirical errors). Errors are out of sample: parameters are fitted before the first
// origin. Without a backtest, sigma is the spread of the history.
func (w *workspace) intervals(bl *baseline, n, H int, level float64) intervalSet {
	z := math.Sqrt2 * math.Erfinv(level)
	iv := intervalSet{lo: -z, hi: z, sigma: make([]float64, H), spread: make([]float64, max(H, bl.he))}
	if bl.he == 0 {
		for h := range H {
			iv.sigma[h] = bl.fallback * math.Sqrt(1+float64(h)/float64(n))
			iv.spread[h] = iv.sigma[h]
		}
		iv.corr = 1
		return iv
	}
	y, ok := bl.y[:n], w.ok[:n]
	he := bl.he
	var ss [maxEvalHorizon]float64
	var cnt [maxEvalHorizon]int
	for o := bl.n0; o < n; o++ {
		row := bl.path[(o-bl.n0)*he:]
		for h := 0; h < he && o+h < n; h++ {
			if ok[o+h] {
				e := row[h] - y[o+h]
				ss[h] += e * e
				cnt[h]++
			}
		}
	}
	var sig [maxEvalHorizon]float64
	last := 0.0
	for h := range he {
		if cnt[h] >= 2 {
			sig[h] = math.Sqrt(ss[h] / float64(cnt[h]))
		}
		sig[h] = max(sig[h], last) // intervals never narrow with the horizon
		last = sig[h]
	}
	if last == 0 { // a perfectly forecast history: keep a hair of width
		for h := range he {
			sig[h] = 1e-9
		}
	}
	// Standardised errors: quantiles and the correlation between steps of one origin.
	w.errs = w.errs[:0]
	var cross, pairs float64
	for o := bl.n0; o < n; o++ {
		row := bl.path[(o-bl.n0)*he:]
		start := len(w.errs)
		for h := 0; h < he && o+h < n; h++ {
			if ok[o+h] && sig[h] > 0 {
				w.errs = append(w.errs, (row[h]-y[o+h])/sig[h])
			}
		}
		u := w.errs[start:]
		var s, s2 float64
		for _, v := range u {
			s += v
			s2 += v * v
		}
		cross += (s*s - s2) / 2 // Σ_{i<j} u_i u_j
		pairs += float64(len(u)*(len(u)-1)) / 2
	}
	if pairs > 0 {
		iv.corr = min(max(cross/pairs, 0), 1)
	}
	if len(w.errs) >= minEmpirical {
		iv.lo, iv.hi = quantiles(w.errs, (1-level)/2, (1+level)/2)
		iv.lo, iv.hi = min(iv.lo, 0), max(iv.hi, 0)
	}
	// Small-sample honesty: sigma[h] rests on cnt[h] errors that overlap over h steps, so about
	// cnt[h]/h independent ones; widen by the ratio of Student's t to the normal quantile for
	// that many degrees of freedom.
	p := (1 + level) / 2
	prev := 0.0
	for h := range H {
		hh := min(h, he-1)
		nu := max(float64(cnt[hh])/float64(hh+1)-1, 1)
		s := sig[hh] * studentT(p, nu) / z
		iv.spread[h] = sig[hh]
		if h >= he {
			s *= math.Sqrt(float64(h+1) / float64(he))
			iv.spread[h] *= math.Sqrt(float64(h+1) / float64(he))
		}
		iv.sigma[h] = max(s, prev)
		prev = iv.sigma[h]
	}
	for h := H; h < he; h++ {
		iv.spread[h] = sig[h]
	}
	return iv
}

// studentT approximates the p-quantile of Student's t with nu degrees of freedom by the
// Cornish-Fisher expansion around the normal quantile: within 1% for nu >= 5, and still wider
// than the normal quantile (as it must be) for smaller nu.
func studentT(p, nu float64) float64 {
	z := math.Sqrt2 * math.Erfinv(2*p-1)
	z3, z5 := z*z*z, z*z*z*z*z
	return z + (z3+z)/(4*nu) + (5*z5+16*z3+3*z)/(96*nu*nu)
}

// quantiles returns the linearly interpolated p- and q-quantiles (p <= q) of v, reordering v: the
// same values as quantile on sorted v, from the four order statistics they need instead of a
// sort (sorting the ~600 standardised errors was a tenth of a forecast's CPU).
func quantiles(v []float64, p, q float64) (float64, float64) {
	for _, x := range v {
		if x != x { // NaN: keep slices.Sort's order, which puts them first
			slices.Sort(v)
			return quantile(v, p), quantile(v, q)
		}
	}
	n := len(v)
	// at is the quantile at position x once v[k] is the k-th smallest value and v[k+1:] holds
	// the larger ones.
	at := func(x float64, k int) float64 {
		if k >= n-1 {
			return v[n-1]
		}
		f := x - float64(k)
		return v[k]*(1-f) + slices.Min(v[k+1:])*f
	}
	xi, xj := p*float64(n-1), q*float64(n-1)
	i, j := min(int(xi), n-1), min(int(xj), n-1)
	nthSmallest(v, i)
	a := at(xi, i)
	if j > i { // v[i+1:] holds the n-i-1 largest values
		nthSmallest(v[i+1:], j-i-1)
	}
	return a, at(xj, j)
}

// nthSmallest reorders v so that v[k] is its k-th smallest value (0-based), everything before it
// no larger and everything after no smaller, and returns v[k] (Hoare's selection with a
// median-of-three pivot; v holds no NaN).
func nthSmallest(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for hi > lo {
		if hi-lo < 12 {
			for i := lo + 1; i <= hi; i++ {
				for j := i; j > lo && v[j] < v[j-1]; j-- {
					v[j], v[j-1] = v[j-1], v[j]
				}
			}
			break
		}
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// quantile is the linearly interpolated p-quantile of sorted values.
func quantile(sorted []float64, p float64) float64 {
	x := p * float64(len(sorted)-1)
	i := int(x)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	f := x - float64(i)
	return sorted[i]*(1-f) + sorted[i+1]*f
}
