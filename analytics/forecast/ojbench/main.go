// Command ojbench scores forecasting methods on the Dominick's orange juice data with the
// published TSPerf protocol (OrangeJuice_Pt_3Weeks_Weekly): 12 rounds, train on weeks
// 40..135+2(r-1), forecast weeks 137+2(r-1) and 138+2(r-1), MAPE of round(forecast) against
// every actual of the scored weeks. See docs/forecasting.md.
//
//	go run ./analytics/forecast/ojbench -data ../shared/data/oj/oj_weekly_long.csv
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/supplyplan/supplyplan/analytics/forecast"
)

type row struct {
	units, price, deal, feat float64
}

type key struct{ store, brand int }

type data struct {
	series map[key]map[int]row // week -> row
	keys   []key
	monday map[int]time.Time // Dominick's week -> Monday of the ISO week of its Thursday start
}

const firstWeek = 40

func main() {
	path := flag.String("data", envOr("SUPPLYPLAN_OJ_DATA", "../shared/data/oj/oj_weekly_long.csv"), "oj_weekly_long.csv (env SUPPLYPLAN_OJ_DATA)")
	methods := flag.String("methods", "naive,mean,seasonal_naive,engine", "comma-separated: naive, mean, seasonal_naive, engine")
	model := flag.String("model", forecast.ModelAuto, "engine model: auto or a model name")
	transform := flag.String("transform", forecast.TransformAuto, "engine transform: auto, none or log")
	fill := flag.Bool("fill", true, "forward then backward fill missing training weeks (the protocol); false passes them as missing")
	events := flag.String("events", "deal,feature,price", "events given to the engine: any of deal, feature, price, or none")
	pool := flag.Bool("pool", true, "learn lifts across all series (false: each series learns from its own history only)")
	point := flag.String("point", forecast.PointMedian, "engine point forecast: median, mean or mape")
	window := flag.Int("window", 0, "Options.Window (0: default)")
	halfWindow := flag.Int("halfwindow", 0, "LiftOptions.HalfWindow (0: default)")
	verbose := flag.Bool("v", false, "print per-round MAPE and learned lift summaries")
	flag.Parse()

	d, err := load(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ojbench:", err)
		os.Exit(1)
	}
	fmt.Printf("| Method | MAPE %% | scored |\n|---|---|---|\n")
	for _, m := range strings.Split(*methods, ",") {
		t0 := time.Now()
		cfg := engineConfig{
			opts:    forecast.Options{Horizon: 3, Model: *model, Transform: *transform, Window: *window, Point: *point},
			lifts:   forecast.LiftOptions{HalfWindow: *halfWindow},
			fill:    *fill,
			pool:    *pool,
			events:  *events,
			verbose: *verbose,
		}
		mape, n := d.run(strings.TrimSpace(m), cfg, *verbose)
		name := m
		if m == "engine" {
			name = fmt.Sprintf("engine (model=%s, transform=%s, point=%s, fill=%v, events=%s, pool=%v)", *model, *transform, *point, *fill, *events, *pool)
		}
		fmt.Printf("| %s | %.2f | %d |\n", name, mape, n)
		if *verbose {
			fmt.Fprintf(os.Stderr, "%s took %v\n", m, time.Since(t0).Round(time.Millisecond))
		}
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func load(path string) (*data, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open data: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, c := range []string{"store", "brand", "week", "week_start", "units", "price", "deal", "feat"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("missing column %q", c)
		}
	}
	d := &data{series: map[key]map[int]row{}, monday: map[int]time.Time{}}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read row: %w", err)
		}
		num := func(c string) float64 {
			v, err := strconv.ParseFloat(rec[col[c]], 64)
			if err != nil {
				panic(fmt.Sprintf("column %s: %v", c, err))
			}
			return v
		}
		k := key{int(num("store")), int(num("brand"))}
		wk := int(num("week"))
		ws, err := time.Parse("2006-01-02", rec[col["week_start"]])
		if err != nil {
			return nil, fmt.Errorf("week_start: %w", err)
		}
		d.monday[wk] = ws.AddDate(0, 0, -(int(ws.Weekday())+6)%7)
		if d.series[k] == nil {
			d.series[k] = map[int]row{}
			d.keys = append(d.keys, k)
		}
		d.series[k][wk] = row{num("units"), num("price"), num("deal"), num("feat")}
	}
	sort.Slice(d.keys, func(i, j int) bool {
		if d.keys[i].store != d.keys[j].store {
			return d.keys[i].store < d.keys[j].store
		}
		return d.keys[i].brand < d.keys[j].brand
	})
	return d, nil
}

// history returns the training values of weeks firstWeek..last, filled per the protocol when
// fill, else NaN for missing weeks.
func (d *data) history(k key, last int, fill bool) []float64 {
	v := make([]float64, last-firstWeek+1)
	s := d.series[k]
	for i := range v {
		if r, ok := s[firstWeek+i]; ok {
			v[i] = r.units
		} else {
			v[i] = math.NaN()
		}
	}
	if fill {
		for i := 1; i < len(v); i++ {
			if math.IsNaN(v[i]) {
				v[i] = v[i-1]
			}
		}
		for i := len(v) - 2; i >= 0; i-- {
			if math.IsNaN(v[i]) {
				v[i] = v[i+1]
			}
		}
	}
	return v
}

// engineConfig is how the engine runs on the benchmark.
type engineConfig struct {
	opts    forecast.Options
	lifts   forecast.LiftOptions
	fill    bool   // protocol fill of missing training weeks (else passed as missing)
	pool    bool   // one lift model for all series (else each series learns alone)
	events  string // which events to build: deal, feature, price
	verbose bool
}

// run scores one method over the 12 rounds and returns the MAPE in percent and the number of
// scored rows. verbose prints per-round figures and a breakdown by promotion status.
func (d *data) run(method string, cfg engineConfig, verbose bool) (float64, int) {
	var sum float64
	var n int
	diag := map[string][][2]float64{}
	defer func() {
		for g, v := range diag {
			var m, b, big float64
			apes := make([]float64, 0, len(v))
			for _, x := range v {
				m += x[0]
				b += x[1]
				apes = append(apes, x[0])
				if x[0] > 1 {
					big += x[0]
				}
			}
			slices.Sort(apes)
			q := func(p float64) float64 { return 100 * apes[int(p*float64(len(apes)-1))] }
			fmt.Fprintf(os.Stderr, "%s %s: n %d MAPE %.2f mean log(F/A) %.3f APE p50 %.1f p90 %.1f p99 %.1f, share of MAPE from APE>100%%: %.2f\n",
				method, g, len(v), 100*m/float64(len(v)), b/float64(len(v)), q(0.5), q(0.9), q(0.99), big/m)
		}
	}()
	for r := 1; r <= 12; r++ {
		last := 135 + 2*(r-1)
		scored := []int{last + 2, last + 3}
		var fc map[key][]float64 // forecasts of weeks last+1..last+3
		if method == "engine" {
			fc = d.engine(last, cfg)
		} else {
			fc = map[key][]float64{}
			for _, k := range d.keys {
				fc[k] = benchmark(method, d.history(k, last, true))
			}
		}
		var rs, rb float64
		var rn int
		for _, k := range d.keys {
			for _, wk := range scored {
				a, ok := d.series[k][wk]
				if !ok {
					continue
				}
				f := math.Round(fc[k][wk-last-1])
				e := math.Abs(f-a.units) / a.units
				if verbose {
					g := "plain"
					switch {
					case a.deal > 0 && a.feat > 0:
						g = "promo-both"
					case a.deal > 0:
						g = "promo-deal"
					case a.feat > 0:
						g = "promo-feat"
					}
					if pr, ok := d.series[k][last]; ok && a.price < pr.price*0.9 && g == "plain" {
						g = "plain-pricecut"
					}
					diag[g] = append(diag[g], [2]float64{e, math.Log(max(f, 1) / a.units)})
				}
				sum, rs = sum+e, rs+e
				rb += math.Log(max(f, 1) / a.units)
				n, rn = n+1, rn+1
			}
		}
		if verbose {
			fmt.Fprintf(os.Stderr, "%s round %d: MAPE %.2f over %d, mean log(F/A) %.3f\n", method, r, 100*rs/float64(rn), rn, rb/float64(rn))
		}
	}
	return 100 * sum / float64(n), n
}

func benchmark(method string, v []float64) []float64 {
	out := make([]float64, 3)
	for h := range out {
		switch method {
		case "naive":
			out[h] = v[len(v)-1]
		case "mean":
			// The published benchmark fits its models to log units: the mean forecast is the
			// geometric mean of the history (naive and seasonal naive are unaffected).
			s := 0.0
			for _, x := range v {
				s += math.Log(x)
			}
			out[h] = math.Exp(s / float64(len(v)))
		case "seasonal_naive":
			out[h] = v[len(v)+h-52]
		default:
			panic("unknown method " + method)
		}
	}
	return out
}

// engine learns lifts across all series on the training weeks and forecasts three weeks of
// every series with its planned events.
func (d *data) engine(last int, cfg engineConfig) map[key][]float64 {
	var hist []forecast.SeriesHistory
	var jobs []forecast.Job
	for _, k := range d.keys {
		s := forecast.Series{
			ID:         fmt.Sprintf("store%d/brand%d", k.store, k.brand),
			ProductID:  fmt.Sprintf("brand%d", k.brand),
			LocationID: fmt.Sprintf("store%d", k.store),
			Start:      d.monday[firstWeek],
			Values:     d.history(k, last, cfg.fill),
		}
		past := d.events(k, last, last, cfg.events)
		all := d.events(k, last, last+3, cfg.events)
		hist = append(hist, forecast.SeriesHistory{Series: s, Events: past})
		jobs = append(jobs, forecast.Job{Series: s, Events: all})
	}
	lifts := forecast.LearnLifts(hist, cfg.lifts)
	if cfg.verbose && last == 135 {
		for _, c := range lifts.Summary() {
			fmt.Fprintf(os.Stderr, "  %-32s %7.3f  weeks %6.0f  spread product %.3f location %.3f series %.3f\n",
				c.Class, c.Value, c.EventWeeks, c.SpreadProduct, c.SpreadLocation, c.SpreadSeries)
		}
	}
	if !cfg.pool {
		lifts = nil // Forecast learns from the series' own history
	}
	res, errs := forecast.ForecastBatch(jobs, lifts, cfg.opts)
	out := map[key][]float64{}
	models := map[string]int{}
	failed := 0
	for i, k := range d.keys {
		if errs[i] != nil {
			if failed++; failed <= 3 {
				fmt.Fprintln(os.Stderr, "ojbench:", k, errs[i])
			}
			out[k] = []float64{0, 0, 0}
			continue
		}
		models[res[i].Model+" "+res[i].Transform]++
		v := make([]float64, 3)
		for h, p := range res[i].Periods {
			v[h] = p.Quantity
		}
		out[k] = v
	}
	if cfg.verbose && last == 135 {
		names := make([]string, 0, len(models))
		for m := range models {
			names = append(names, m)
		}
		slices.SortFunc(names, func(a, b string) int { return models[b] - models[a] })
		for _, m := range names[:min(8, len(names))] {
			fmt.Fprintf(os.Stderr, "  model %-60s %d\n", m, models[m])
		}
	}
	return out
}

// events builds the events of series k for weeks firstWeek..upto from the data known up to
// week last (history) and planned after it: a PROMOTION/DEAL event per deal week, a
// PROMOTION/FEATURE event per featured week (intensity = the featured share), and a
// PRICE_CHANGE event per week whose price differs from the reference price by more than 0.5%.
// The reference price is the median price of the training weeks.
func (d *data) events(k key, last, upto int, which string) []forecast.EventOccurrence {
	s := d.series[k]
	var prices []float64
	for wk := firstWeek; wk <= last; wk++ {
		if r, ok := s[wk]; ok {
			prices = append(prices, r.price)
		}
	}
	slices.Sort(prices)
	ref := 0.0
	if len(prices) > 0 {
		ref = prices[len(prices)/2]
	}
	var out []forecast.EventOccurrence
	for wk := firstWeek; wk <= upto; wk++ {
		r, ok := s[wk]
		if !ok {
			continue
		}
		start := d.monday[wk]
		end := start.AddDate(0, 0, 7)
		id := fmt.Sprintf("%d/%d/%d", k.store, k.brand, wk)
		if r.deal > 0 && strings.Contains(which, "deal") {
			out = append(out, forecast.EventOccurrence{ID: id + "/deal", Type: "PROMOTION", Mechanic: "DEAL",
				Scope: forecast.ScopeSeries, Start: start, End: end})
		}
		if r.feat > 0 && strings.Contains(which, "feature") {
			f := r.feat
			out = append(out, forecast.EventOccurrence{ID: id + "/feature", Type: "PROMOTION", Mechanic: "FEATURE",
				Scope: forecast.ScopeSeries, Start: start, End: end, Intensity: &f})
		}
		if ref > 0 && strings.Contains(which, "price") {
			if pc := r.price/ref - 1; math.Abs(pc) > 0.005 {
				out = append(out, forecast.EventOccurrence{ID: id + "/price", Type: "PRICE_CHANGE",
					Scope: forecast.ScopeSeries, Start: start, End: end, PriceChangePct: &pc})
			}
		}
	}
	return out
}
