package forecast

import (
	"math"
	"sort"

	"github.com/supplyplan/supplyplan"
)

// SeriesKey identifies a series for learned lifts: its own id, its product and its location.
// Empty fields are unknown.
type SeriesKey struct {
	ID         string `json:"id,omitempty"`
	ProductID  string `json:"productId,omitempty"`
	LocationID string `json:"locationId,omitempty"`
}

// SeriesHistory is one series with the events that applied to it, input of LearnLifts.
type SeriesHistory struct {
	Series Series
	Events []EventOccurrence
}

// Prior is the type-level prior of a learned effect, in the units the engine learns: the log
// multiplier log(1+lift) for lifts, the elasticity for price changes.
type Prior struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

// LiftOptions tunes LearnLifts. The zero value uses the defaults.
type LiftOptions struct {
	// Priors by event type ("PROMOTION") or type and mechanic ("PROMOTION/DEAL"), for lifts.
	// Missing: DefaultLiftPriors, then {0, 0.7}.
	Priors map[string]Prior
	// Elasticity is the prior of price elasticities (default {-1.5, 1.5}).
	Elasticity *Prior
	// HalfWindow is the number of weeks on each side of a week in its local baseline (default 8).
	HalfWindow int
	// Iterations of the baseline / lift alternation (default 6).
	Iterations int
}

// DefaultLiftPriors are weak type-level priors: a promotion lifts demand by about 30%, other
// event types by nothing known in advance. They matter only for an organization with very
// little event history; the data take over as soon as there is some.
var DefaultLiftPriors = map[string]Prior{
	string(supplyplan.EventPromotion): {Mean: math.Log(1.3), SD: 0.7},
}

// DefaultElasticityPrior centres price elasticities on -1.5 (retail elasticities are mostly
// between -0.5 and -4).
var DefaultElasticityPrior = Prior{Mean: -1.5, SD: 1.5}

var defaultPrior = Prior{Mean: 0, SD: 0.7}

// Levels an estimate can come from, most specific first.
const (
	LevelSeries          = "series"
	LevelProductLocation = "product+location"
	LevelProduct         = "product"
	LevelLocation        = "location"
	LevelOrg             = "org"
	LevelPrior           = "prior"
)

// classKey identifies a learned effect: events of one type and mechanic, lift or elasticity.
type classKey struct {
	typ, mechanic string
	elastic       bool
}

func keyOf(e *EventOccurrence) classKey {
	return classKey{typ: e.Type, mechanic: e.Mechanic, elastic: e.elastic()}
}

// Name is "TYPE", "TYPE/MECHANIC", with " elasticity" appended for a price elasticity.
func (k classKey) Name() string {
	s := k.typ
	if k.mechanic != "" {
		s += "/" + k.mechanic
	}
	if k.elastic {
		s += " elasticity"
	}
	return s
}

// LiftModel holds lifts and price elasticities learned across many series, shrunk from series
// toward product and location, from those toward the organization, and from the organization
// toward the type prior. It is read-only after LearnLifts and safe for concurrent use.
type LiftModel struct {
	classes  []classKey
	index    map[classKey]int
	priors   []Prior
	org      []float64
	product  map[string][]float64
	location map[string][]float64
	series   map[string][]float64
	weeks    []float64 // event weeks (weighted) seen per class
	tau      [3][]float64
	o        LiftOptions
}

// ClassSummary describes one learned effect at the organization level.
type ClassSummary struct {
	Class string `json:"class"` // "PROMOTION/DEAL", "PRICE_CHANGE elasticity", ...
	// Value is the organization-level lift (LiftPct) or elasticity.
	Value float64 `json:"value"`
	// EventWeeks is the weighted number of event weeks the estimate rests on.
	EventWeeks float64 `json:"eventWeeks"`
	// SpreadProduct, SpreadLocation and SpreadSeries are the estimated standard deviations of the
	// effect between products, locations and series (log-multiplier or elasticity units): how
	// much each level may depart from the one above it.
	SpreadProduct  float64 `json:"spreadProduct"`
	SpreadLocation float64 `json:"spreadLocation"`
	SpreadSeries   float64 `json:"spreadSeries"`
}

// Summary lists the learned effects at the organization level, sorted by class.
func (m *LiftModel) Summary() []ClassSummary {
	out := make([]ClassSummary, len(m.classes))
	for i, k := range m.classes {
		v := m.org[i]
		if !k.elastic {
			v = math.Expm1(v)
		}
		out[i] = ClassSummary{Class: k.Name(), Value: v, EventWeeks: m.weeks[i],
			SpreadProduct: math.Sqrt(m.tau[0][i]), SpreadLocation: math.Sqrt(m.tau[1][i]),
			SpreadSeries: math.Sqrt(m.tau[2][i])}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Class < out[b].Class })
	return out
}

// LiftEstimate is the learned effect of one event on one series.
type LiftEstimate struct {
	LiftPct float64 `json:"liftPct"` // full-week lift, within [-0.99, 5]
	// Elasticity is set for a price change learned through its elasticity.
	Elasticity *float64 `json:"elasticity,omitempty"`
	Level      string   `json:"level"` // where the estimate comes from: series, product+location, ..., prior
}

// Estimate returns the learned full-week lift of event e on the series key. A model learned
// without any event of e's class answers with the class's prior.
func (m *LiftModel) Estimate(e *EventOccurrence, key SeriesKey) LiftEstimate {
	k := keyOf(e)
	var theta float64
	level := LevelPrior
	if i, found := m.index[k]; found {
		theta, level = m.lookup(i, key)
	} else {
		theta = priorFor(k, m.o).Mean
	}
	est := LiftEstimate{Level: level}
	if k.elastic {
		el := theta
		est.Elasticity = &el
		est.LiftPct = math.Expm1(theta * e.priceTerm())
	} else {
		est.LiftPct = math.Expm1(theta)
	}
	est.LiftPct = min(max(est.LiftPct, supplyplan.MinEventLift), supplyplan.MaxLift)
	return est
}

// lookup returns the estimate of class i for a series: its own when it had events of the class,
// else its product's and location's deviations from the organization added to it.
func (m *LiftModel) lookup(i int, key SeriesKey) (float64, string) {
	if key.ID != "" {
		if s, ok := m.series[key.ID]; ok {
			return s[i], LevelSeries
		}
	}
	v, level := m.org[i], LevelOrg
	p, hasP := m.product[key.ProductID]
	l, hasL := m.location[key.LocationID]
	switch {
	case hasP && hasL:
		v, level = p[i]+l[i]-v, LevelProductLocation
	case hasP:
		v, level = p[i], LevelProduct
	case hasL:
		v, level = l[i], LevelLocation
	}
	return v, level
}

func priorFor(k classKey, o LiftOptions) Prior {
	if k.elastic {
		if o.Elasticity != nil {
			return *o.Elasticity
		}
		return DefaultElasticityPrior
	}
	full := k.typ + "/" + k.mechanic
	for _, m := range []map[string]Prior{o.Priors, DefaultLiftPriors} {
		if p, ok := m[full]; ok && k.mechanic != "" {
			return p
		}
		if p, ok := m[k.typ]; ok {
			return p
		}
	}
	return defaultPrior
}

// levent is one learned event's share of one week of a series.
type levent struct {
	t, c int
	w, u float64 // weight (proration × intensity) and regressor unit (1, or log(1+price change))
}

// effect is the log multiplier of an event with weight w and unit u under coefficient theta:
// log(1 + w·(exp(theta·u) - 1)), which is theta·u for a full week.
func effect(theta, w, u float64) float64 {
	if w == 1 {
		return theta * u
	}
	return math.Log(max(1+w*math.Expm1(theta*u), supplyplan.MinEventMultiplier))
}

// regressor linearises effect around theta: effect(theta)/theta (w·u as theta → 0).
func regressor(theta, w, u float64) float64 {
	if w == 1 || math.Abs(theta) < 1e-6 {
		return w * u
	}
	return effect(theta, w, u) / theta
}

type lseries struct {
	key    SeriesKey
	logy   []float64 // log demand, NaN when not usable (missing, stockout, zero)
	off    []float64 // log multiplier of the events with a given lift
	ev     []levent  // sorted by week
	theta  []float64
	a, c   []float64 // precision-weighted XᵀX and Xᵀr
	hasEv  []float64 // weighted event weeks per class
	z, b   []float64
	sigma  float64 // residual scale of the previous pass (0: none yet)
	groupP int     // index into product groups, -1 none
	groupL int
}

// LearnLifts learns the lift of every class of event without a given lift (type and mechanic)
// and the price elasticity of PRICE_CHANGE events with a PriceChangePct, across all histories.
//
// Each series is modelled in logs as log y_t = b_t + Σ effects of its events + noise, where b_t
// is a local baseline: the mean of the de-lifted log demand of the HalfWindow weeks on each side
// (the week itself left out). Baselines and effects are estimated alternately. The effects are a
// hierarchical Bayesian regression: the organization's estimate is shrunk toward the type prior,
// each product's and location's toward the organization's, and each series' toward its product's
// plus its location's deviation; the between-group variances that set how strongly each level
// is shrunk are estimated from the data (method of moments), so a series with a single event
// stays close to its product and location, a series with many events gets its own lift.
//
// Weeks with zero, missing or stockout demand are left out, as are series classified
// intermittent (their log demand carries no usable lift signal); known-lift events are divided
// out first. Learned events are composed multiplicatively while learning.
func LearnLifts(histories []SeriesHistory, o LiftOptions) *LiftModel {
	if o.HalfWindow <= 0 {
		o.HalfWindow = 8
	}
	if o.Iterations <= 0 {
		o.Iterations = 6
	}
	m := &LiftModel{o: o, index: map[classKey]int{}, product: map[string][]float64{},
		location: map[string][]float64{}, series: map[string][]float64{}}
	var all []*lseries
	var st supplyplan.LiftStack
	for hi := range histories {
		h := &histories[hi]
		s := &h.Series
		n := len(s.Values)
		ls := &lseries{key: s.key(), logy: make([]float64, n), off: make([]float64, n)}
		usable := 0
		obs := make([]float64, n)
		for t, v := range s.Values {
			obs[t] = v
			if s.missing(t) {
				obs[t] = math.NaN()
			}
			if !math.IsNaN(obs[t]) && v > 0 {
				ls.logy[t] = math.Log(v)
				usable++
			} else {
				ls.logy[t] = math.NaN()
			}
		}
		if usable < 2*o.HalfWindow || classify(obs, nil).Intermittent() {
			continue
		}
		start := s.start()
		for t := range n { // known lifts as offsets
			st = supplyplan.LiftStack{}
			ws := start.Add(weekDur(t))
			known := false
			for ei := range h.Events {
				e := &h.Events[ei]
				if e.LiftPct == nil {
					continue
				}
				if w := e.weight(ws); w > 0 {
					st.Push(*e.LiftPct, w, e.additive())
					known = true
				}
			}
			if known {
				ls.off[t] = math.Log(st.Multiplier())
			}
		}
		for ei := range h.Events {
			e := &h.Events[ei]
			if e.LiftPct != nil {
				continue
			}
			// An event that overlaps no week of the history teaches nothing and leaves the model
			// as it is (its class is not even created): events planned after the history never
			// change what is learned from it.
			k := keyOf(e)
			u := 1.0
			if k.elastic {
				u = e.priceTerm()
			}
			ci := -1
			first, last := e.weeks(start, n)
			for t := first; t <= last; t++ {
				if w := e.weight(start.Add(weekDur(t))); w > 0 {
					if ci < 0 {
						var ok bool
						if ci, ok = m.index[k]; !ok {
							ci = len(m.classes)
							m.index[k] = ci
							m.classes = append(m.classes, k)
						}
					}
					ls.ev = append(ls.ev, levent{t: t, c: ci, w: w, u: u})
				}
			}
		}
		sort.SliceStable(ls.ev, func(a, b int) bool { return ls.ev[a].t < ls.ev[b].t })
		all = append(all, ls)
	}
	k := len(m.classes)
	m.priors = make([]Prior, k)
	for i, c := range m.classes {
		m.priors[i] = priorFor(c, o)
	}
	m.org = make([]float64, k)
	m.weeks = make([]float64, k)
	for i := range m.tau {
		m.tau[i] = make([]float64, k)
	}
	for i, p := range m.priors {
		m.org[i] = p.Mean
	}
	if k == 0 {
		return m
	}
	prodIdx, locIdx := map[string]int{}, map[string]int{}
	var prodNames, locNames []string
	for _, ls := range all {
		ls.theta = append([]float64(nil), m.org...)
		ls.a, ls.c, ls.hasEv = make([]float64, k*k), make([]float64, k), make([]float64, k)
		ls.z, ls.b = make([]float64, len(ls.logy)), make([]float64, len(ls.logy))
		ls.groupP, ls.groupL = group(ls.key.ProductID, prodIdx, &prodNames), group(ls.key.LocationID, locIdx, &locNames)
		for _, e := range ls.ev {
			if !math.IsNaN(ls.logy[e.t]) {
				ls.hasEv[e.c] += e.w
				m.weeks[e.c] += e.w
			}
		}
	}
	for range o.Iterations {
		for _, ls := range all {
			ls.accumulate(m.org, o.HalfWindow, k)
		}
		m.solve(all, prodNames, locNames, k)
	}
	for _, ls := range all {
		if ls.key.ID != "" && sum(ls.hasEv) > 0 {
			m.series[ls.key.ID] = ls.theta
		}
	}
	return m
}

func group(name string, idx map[string]int, names *[]string) int {
	if name == "" {
		return -1
	}
	i, ok := idx[name]
	if !ok {
		i = len(*names)
		idx[name] = i
		*names = append(*names, name)
	}
	return i
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

// accumulate recomputes the series' local baseline with its current effects and its
// precision-weighted normal equations (regressors linearised at the organization's effects).
func (ls *lseries) accumulate(org []float64, hw, k int) {
	n := len(ls.logy)
	copy(ls.z, ls.logy)
	for t := range n {
		ls.z[t] -= ls.off[t]
	}
	for _, e := range ls.ev {
		ls.z[e.t] -= effect(ls.theta[e.c], e.w, e.u)
	}
	// Leave-one-out local mean of z over [t-hw, t+hw] (NaN weeks skipped), by prefix sums.
	var ps, pc [1024]float64
	psum, pcnt := ps[:0], pc[:0]
	if n+1 > len(ps) {
		psum, pcnt = make([]float64, 0, n+1), make([]float64, 0, n+1)
	}
	psum, pcnt = append(psum, 0), append(pcnt, 0)
	zs, zc := 0.0, 0.0
	for t := range n {
		if !math.IsNaN(ls.z[t]) {
			zs += ls.z[t]
			zc++
		}
		psum, pcnt = append(psum, zs), append(pcnt, zc)
	}
	mean := zs / max(zc, 1)
	for t := range n {
		lo, hi := max(t-hw, 0), min(t+hw+1, n)
		s, c := psum[hi]-psum[lo], pcnt[hi]-pcnt[lo]
		if !math.IsNaN(ls.z[t]) {
			s -= ls.z[t]
			c--
		}
		if c > 0 {
			ls.b[t] = s / c
		} else {
			ls.b[t] = mean
		}
	}
	clear(ls.a)
	clear(ls.c)
	var xs [16]float64
	var cs [16]int
	ssr, nr := 0.0, 0.0
	j := 0
	for t := range n {
		nx := 0
		for ; j < len(ls.ev) && ls.ev[j].t == t; j++ {
			e := ls.ev[j]
			g := regressor(org[e.c], e.w, e.u)
			found := false
			for q := range nx {
				if cs[q] == e.c {
					xs[q] += g
					found = true
				}
			}
			if !found && nx < len(xs) {
				xs[nx], cs[nx] = g, e.c
				nx++
			}
		}
		if math.IsNaN(ls.logy[t]) {
			continue
		}
		r := ls.logy[t] - ls.off[t] - ls.b[t]
		fit := 0.0
		for p := range nx {
			fit += xs[p] * ls.theta[cs[p]]
		}
		// Huber weight: weeks far off the current fit (stockouts not flagged, data errors)
		// count less.
		wt := 1.0
		if d := math.Abs(r - fit); ls.sigma > 0 && d > huberK*ls.sigma {
			wt = huberK * ls.sigma / d
		}
		for p := range nx {
			ls.c[cs[p]] += wt * xs[p] * r
			for q := range nx {
				ls.a[cs[p]*k+cs[q]] += wt * xs[p] * xs[q]
			}
		}
		ssr += (r - fit) * (r - fit)
		nr++
	}
	sigma2 := max(ssr/max(nr-1, 1), 1e-3)
	ls.sigma = math.Sqrt(sigma2)
	for i := range ls.a {
		ls.a[i] /= sigma2
	}
	for i := range ls.c {
		ls.c[i] /= sigma2
	}
}

// huberK is the Huber threshold in residual standard deviations.
const huberK = 1.5

// solve runs the hierarchical regression: organization, products, locations, series.
func (m *LiftModel) solve(all []*lseries, prods, locs []string, k int) {
	A, c := make([]float64, k*k), make([]float64, k)
	for _, ls := range all {
		addTo(A, ls.a)
		addTo(c, ls.c)
	}
	prec := make([]float64, k)
	mean := make([]float64, k)
	for i, p := range m.priors {
		prec[i] = 1 / (p.SD * p.SD)
		mean[i] = p.Mean
	}
	m.org = posterior(A, c, prec, mean)

	levelGroups := func(groupOf func(*lseries) int, ng int) (est [][]float64, tau []float64) {
		As, cs := make([][]float64, ng), make([][]float64, ng)
		for g := range ng {
			As[g], cs[g] = make([]float64, k*k), make([]float64, k)
		}
		for _, ls := range all {
			if g := groupOf(ls); g >= 0 {
				addTo(As[g], ls.a)
				addTo(cs[g], ls.c)
			}
		}
		parents := make([][]float64, ng)
		for g := range ng {
			parents[g] = m.org
		}
		tau = betweenVariance(As, cs, parents, k)
		est = make([][]float64, ng)
		for g := range ng {
			est[g] = posterior(As[g], cs[g], invert(tau), m.org)
		}
		return est, tau
	}
	var pg, lg [][]float64
	pg, m.tau[0] = levelGroups(func(ls *lseries) int { return ls.groupP }, len(prods))
	for g, name := range prods {
		m.product[name] = pg[g]
	}
	lg, m.tau[1] = levelGroups(func(ls *lseries) int { return ls.groupL }, len(locs))
	for g, name := range locs {
		m.location[name] = lg[g]
	}

	// Series: shrunk toward product + location - organization.
	As, cs, parents := make([][]float64, len(all)), make([][]float64, len(all)), make([][]float64, len(all))
	for i, ls := range all {
		mu := append([]float64(nil), m.org...)
		for j := range k {
			if ls.groupP >= 0 {
				mu[j] += pg[ls.groupP][j] - m.org[j]
			}
			if ls.groupL >= 0 {
				mu[j] += lg[ls.groupL][j] - m.org[j]
			}
		}
		As[i], cs[i], parents[i] = ls.a, ls.c, mu
	}
	tau := betweenVariance(As, cs, parents, k)
	m.tau[2] = tau
	p := invert(tau)
	for i, ls := range all {
		ls.theta = posterior(ls.a, ls.c, p, parents[i])
	}
}

func addTo(dst, src []float64) {
	for i := range dst {
		dst[i] += src[i]
	}
}

func invert(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = 1 / x
	}
	return out
}

// Between-group variance bounds: the floor keeps every level able to move a little, the
// default applies when fewer than two groups carry information on a class.
const (
	tauFloor   = 1e-4
	tauDefault = 0.09
	maxSampleV = 1.0 // groups whose estimate has a larger sampling variance carry no information
)

// betweenVariance estimates, per class, the variance of the groups' true effects around their
// parents by the method of moments: mean of (estimate - parent)² - sampling variance.
func betweenVariance(As, cs, parents [][]float64, k int) []float64 {
	tau := make([]float64, k)
	num := make([]float64, k)
	cnt := make([]int, k)
	ridge := make([]float64, k)
	for i := range ridge {
		ridge[i] = 1e-6
	}
	for g := range As {
		est, v := posteriorVar(As[g], cs[g], ridge, parents[g])
		for j := range k {
			if v[j] < maxSampleV && As[g][j*k+j] > 0 {
				d := est[j] - parents[g][j]
				num[j] += d*d - v[j]
				cnt[j]++
			}
		}
	}
	for j := range k {
		if cnt[j] < 2 {
			tau[j] = tauDefault
			continue
		}
		tau[j] = max(num[j]/float64(cnt[j]), tauFloor)
	}
	return tau
}

// posterior returns the mean of the Gaussian posterior with likelihood precision A, score c and
// a diagonal prior of precision prec around mean: (A + diag(prec))⁻¹ (c + prec ∘ mean).
func posterior(A, c, prec, mean []float64) []float64 {
	est, _ := posteriorVar(A, c, prec, mean)
	return est
}

// posteriorVar is posterior with the diagonal of the posterior covariance.
func posteriorVar(A, c, prec, mean []float64) ([]float64, []float64) {
	k := len(c)
	M := make([]float64, k*k)
	copy(M, A)
	rhs := make([]float64, k)
	for i := range k {
		M[i*k+i] += prec[i]
		rhs[i] = c[i] + prec[i]*mean[i]
	}
	L, ok := cholesky(M, k)
	if !ok {
		return append([]float64(nil), mean...), fill(k, math.Inf(1))
	}
	est := cholSolve(L, k, rhs)
	v := make([]float64, k)
	e := make([]float64, k)
	for i := range k {
		clear(e)
		e[i] = 1
		v[i] = cholSolve(L, k, e)[i]
	}
	return est, v
}

func fill(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// cholesky factors the symmetric positive definite k×k matrix M as L·Lᵀ.
func cholesky(M []float64, k int) ([]float64, bool) {
	L := make([]float64, k*k)
	for i := range k {
		for j := 0; j <= i; j++ {
			s := M[i*k+j]
			for p := range j {
				s -= L[i*k+p] * L[j*k+p]
			}
			if i == j {
				if s <= 0 {
					return nil, false
				}
				L[i*k+i] = math.Sqrt(s)
			} else {
				L[i*k+j] = s / L[j*k+j]
			}
		}
	}
	return L, true
}

func cholSolve(L []float64, k int, b []float64) []float64 {
	y := make([]float64, k)
	for i := range k {
		s := b[i]
		for p := range i {
			s -= L[i*k+p] * y[p]
		}
		y[i] = s / L[i*k+i]
	}
	x := make([]float64, k)
	for i := k - 1; i >= 0; i-- {
		s := y[i]
		for p := i + 1; p < k; p++ {
			s -= L[p*k+i] * x[p]
		}
		x[i] = s / L[i*k+i]
	}
	return x
}
