package forecast

import (
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/supplyplan/supplyplan"
)

// Selection settings.
const (
	maxEvalHorizon = 13 // steps scored per origin by the selection backtest
	minBacktestObs = 12 // observed weeks needed before a backtest is run
	combineTop     = 3  // models averaged by the combination
)

// workspace holds the scratch buffers of one forecast; workspaces are pooled so that the
// per-series path allocates little.
type workspace struct {
	st     state
	season [SeasonLength]float64
	// seed is the initial state of the model being fitted (seedSeason its season slots).
	seed       state
	seedSeason [SeasonLength]float64
	seedOK     bool
	drift      []float64 // Theta: regression slope before each week
	ok         []bool    // observed weeks
	raw        []float64 // observed history
	mult       []float64 // event multiplier of each history and future week
	stacks     []supplyplan.LiftStack
	lanes      [2]lane // de-lifted history as is, and in logs
	tmp        []float64
	errs       []float64
	res        []resolved
}

// lane holds one transform of the de-lifted history and the buffers of its model selection.
type lane struct {
	y     []float64 // de-lifted history (or its logarithm)
	paths []float64 // backtest paths: candidate × origin × step
	comb  []float64 // combination paths
	fut   []float64 // final baseline forecast
	cands []candidate
}

var workspaces = sync.Pool{New: func() any { return new(workspace) }}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

type candidate struct {
	k     kind
	p     params
	score float64
	path  []float64 // slice of workspace.paths
}

// baseline is the outcome of model selection on a de-lifted history.
type baseline struct {
	y        []float64 // the history the models ran on
	log      bool      // y is the logarithm of the de-lifted history
	kinds    []kind    // one model, or the models of a combination
	name     string
	n0, he   int       // first backtest origin and steps per origin (he = 0: no backtest)
	path     []float64 // backtest forecasts of the chosen model, origin-major, (n-n0) × he
	future   []float64 // baseline forecast for steps 1..H
	class    Classification
	fallback float64 // residual scale used when there is no backtest
}

// candidates returns the models tried by automatic selection when the backtest starts at week
// n0; multiplicative Holt-Winters only when mult.
func candidates(class Classification, n0 int, mult bool, dst []kind) []kind {
	dst = dst[:0]
	if class.Intermittent() {
		return append(dst, kMean, kSES, kCroston, kSBA, kTSB)
	}
	dst = append(dst, kNaive, kMean, kSES, kHolt, kDamped, kTheta)
	if n0 >= SeasonLength+minBacktestObs {
		dst = append(dst, kSeasonalNaive)
	}
	if n0 >= 2*SeasonLength {
		dst = append(dst, kHWAdd)
		if mult {
			dst = append(dst, kHWMul)
		}
	}
	return dst
}

// selectBaseline chooses and runs the baseline model on l.y / w.ok (n weeks) and forecasts
// horizon weeks. model is "" or ModelAuto for automatic selection, else a model name; window is
// the number of most recent weeks used as backtest origins.
func (w *workspace) selectBaseline(l *lane, n, horizon, window int, model string) (baseline, error) {
	y, ok := l.y[:n], w.ok[:n]
	nObs, positive := 0, true
	for i := range n {
		if ok[i] {
			nObs++
			if y[i] <= 0 {
				positive = false
			}
		}
	}
	bl := baseline{y: y, log: l == &w.lanes[1], class: classify(w.raw[:n], ok)}
	if nObs == 0 {
		return bl, errNoData
	}
	var kinds [int(numKinds)]kind
	list := kinds[:0]
	auto := model == "" || model == ModelAuto
	first := kMean
	if !auto {
		k, known := kindByName(model)
		if !known {
			return bl, errUnknownModel
		}
		first = k
		list = append(list, k)
	}

	// Backtest layout: origins n0..n-1, he steps each.
	wdw := min(window, n/3)
	n0 := n - wdw
	obsTrain := 0
	for i := range n0 {
		if ok[i] {
			obsTrain++
		}
	}
	if wdw < 2 || obsTrain < minBacktestObs {
		return w.noBacktest(l, bl, n, horizon, auto, first)
	}
	if auto {
		// On log demand the additive Holt-Winters already is multiplicative in demand.
		list = candidates(bl.class, n0, positive && !bl.log, list)
	}
	he := maxEvalHorizon // the same backtest whatever the horizon asked for: week k never depends on it
	bl.n0, bl.he = n0, he
	size := wdw * he
	l.paths = grow(l.paths, size*len(list))
	l.cands = l.cands[:0]
	useMSE := bl.class.Intermittent()
	for i, k := range list {
		p, fitted := w.fit(k, y, ok, n0, nil)
		if !fitted {
			continue
		}
		c := candidate{k: k, p: p, path: l.paths[i*size : (i+1)*size]}
		if !w.backtest(&c, y, ok, n0, n, he) {
			continue
		}
		c.score = score(c.path, y, ok, n0, he, useMSE)
		if math.IsNaN(c.score) || math.IsInf(c.score, 0) {
			continue
		}
		l.cands = append(l.cands, c)
	}
	if len(l.cands) == 0 {
		if !auto {
			return bl, errModelUnfit
		}
		return w.noBacktest(l, bl, n, horizon, true, kMean)
	}
	slices.SortStableFunc(l.cands, func(a, b candidate) int {
		switch {
		case a.score < b.score:
			return -1
		case a.score > b.score:
			return 1
		}
		return 0
	})
	chosen := l.cands[:1]
	bl.path = l.cands[0].path
	if auto && len(l.cands) >= combineTop {
		l.comb = grow(l.comb, size)
		for j := range l.comb {
			s := 0.0
			for _, c := range l.cands[:combineTop] {
				s += c.path[j]
			}
			l.comb[j] = s / combineTop
		}
		if !clearlyBetter(l.cands[0].path, l.comb, y, ok, n0, he, useMSE) {
			chosen = l.cands[:combineTop]
			bl.path = l.comb
		}
	}

	// Final forecast: refit the chosen models on the whole history, warm-started.
	l.fut = grow(l.fut, horizon)
	clear(l.fut)
	w.tmp = grow(w.tmp, horizon)
	bl.kinds = make([]kind, 0, len(chosen))
	for _, c := range chosen {
		p, fitted := w.fit(c.k, y, ok, n, &c.p)
		if !fitted {
			p = c.p
		}
		if !w.run(c.k, p, y, ok, n, w.tmp) {
			return bl, errModelUnfit
		}
		for j, v := range w.tmp {
			l.fut[j] += v / float64(len(chosen))
		}
		bl.kinds = append(bl.kinds, c.k)
	}
	for _, v := range l.fut {
		if math.IsNaN(v) || math.IsInf(v, 0) { // a refit that diverged: fall back to the mean
			return w.noBacktest(l, bl, n, horizon, true, kMean)
		}
	}
	bl.future = l.fut
	bl.name = modelName(bl.kinds)
	return bl, nil
}

func modelName(ks []kind) string {
	if len(ks) == 1 {
		return ks[0].String()
	}
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.String()
	}
	return ModelCombination + "(" + strings.Join(names, "+") + ")"
}

// noBacktest forecasts a history too short to backtest with model k (the mean under automatic
// selection) and records the spread of the observations for the intervals.
func (w *workspace) noBacktest(l *lane, bl baseline, n, horizon int, auto bool, k kind) (baseline, error) {
	y, ok := l.y[:n], w.ok[:n]
	bl.n0, bl.he, bl.path = 0, 0, nil
	if auto {
		k = kMean
	}
	p, fitted := w.fit(k, y, ok, n, nil)
	if !fitted {
		if auto || !w.st.init(kMean, params{}, y, ok, n, w.season[:]) {
			return bl, errModelUnfit
		}
		k, p = kMean, params{}
	}
	l.fut = grow(l.fut, horizon)
	if !w.run(k, p, y, ok, n, l.fut) {
		return bl, errModelUnfit
	}
	var s, ss float64
	c := 0
	for i := range n {
		if ok[i] {
			s += y[i]
			ss += y[i] * y[i]
			c++
		}
	}
	m := s / float64(c)
	bl.fallback = math.Sqrt(max(0, ss/float64(c)-m*m) * (1 + 1/float64(c)))
	bl.kinds = []kind{k}
	bl.name = k.String()
	bl.future = l.fut
	return bl, nil
}

// backtest runs candidate c (parameters fitted on y[:n0]) through the whole history and writes
// the he-step forecast path made at each origin n0..n-1 into c.path.
func (w *workspace) backtest(c *candidate, y []float64, ok []bool, n0, n, he int) bool {
	st := &w.st
	if !st.init(c.k, c.p, y, ok, n0, w.season[:]) {
		return false
	}
	for t := range n {
		if t >= n0 {
			st.path(c.path[(t-n0)*he : (t-n0+1)*he])
		}
		st.update(y[t], ok[t])
	}
	return true
}

// run runs model k over y[:n] and writes the forecasts for steps 1..len(out).
func (w *workspace) run(k kind, p params, y []float64, ok []bool, n int, out []float64) bool {
	st := &w.st
	if !st.init(k, p, y, ok, n, w.season[:]) {
		return false
	}
	for t := range n {
		st.update(y[t], ok[t])
	}
	st.path(out)
	return true
}

// score is the mean absolute error (mean squared error when mse) of the backtest path over the
// observed target weeks.
func score(path, y []float64, ok []bool, n0, he int, mse bool) float64 {
	n := len(y)
	s, c := 0.0, 0
	for o := n0; o < n; o++ {
		row := path[(o-n0)*he:]
		for h := 0; h < he && o+h < n; h++ {
			if !ok[o+h] {
				continue
			}
			e := row[h] - y[o+h]
			if mse {
				s += e * e
			} else {
				s += math.Abs(e)
			}
			c++
		}
	}
	if c == 0 {
		return math.Inf(1)
	}
	return s / float64(c)
}

// clearlyBetter reports whether path a beats path b by more than one standard error of the mean
// paired loss difference over the backtest (the one-standard-error rule): the combination is
// kept unless the best single model is clearly better, because selecting among close models on
// a short backtest mostly selects noise.
func clearlyBetter(a, b, y []float64, ok []bool, n0, he int, mse bool) bool {
	n := len(y)
	var s, ss float64
	c := 0
	for o := n0; o < n; o++ {
		ra, rb := a[(o-n0)*he:], b[(o-n0)*he:]
		for h := 0; h < he && o+h < n; h++ {
			if !ok[o+h] {
				continue
			}
			ea, eb := ra[h]-y[o+h], rb[h]-y[o+h]
			var d float64
			if mse {
				d = eb*eb - ea*ea
			} else {
				d = math.Abs(eb) - math.Abs(ea)
			}
			s += d
			ss += d * d
			c++
		}
	}
	if c < 2 {
		return false
	}
	m := s / float64(c)
	se := math.Sqrt(max(ss/float64(c)-m*m, 0) / float64(c))
	return m > se
}
