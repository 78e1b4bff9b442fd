package actors

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics/forecast"
)

// scenarioView is what applying a scenario needs from the tenant.
type scenarioView struct {
	scenario   *supplyplan.Scenario
	categories map[string]string // product id -> category id
}

// resolveSeries checks the product and location of a query and loads the scenario.
func (s *Forecasts) resolveSeries(ctx context.Context, org, productRef, location, scenarioID string) (string, scenarioView, error) {
	type resolved struct {
		product string
		view    scenarioView
	}
	r, err := tenantTx(ctx, s.core, org, func(st *supplyplan.TenantState) (resolved, []supplyplan.Record, error) {
		var out resolved
		fe := supplyplan.FieldErrors{}
		if productRef != "" {
			if p, ok := st.ProductBySKU(productRef); ok {
				out.product = p.ID
			} else {
				fe.Add("productMasterId", "unknown product %q", productRef)
			}
		}
		if location != "" {
			if _, ok := st.Locations[location]; !ok {
				fe.Add("locationId", "unknown location %q", location)
			}
		}
		if scenarioID != "" {
			sc, ok := st.Scenarios[scenarioID]
			if !ok {
				return out, nil, supplyplan.NotFound("Scenario")
			}
			c := *sc
			out.view.scenario = &c
			if len(c.Assumptions.CategoryAdjustments) > 0 {
				out.view.categories = make(map[string]string, len(st.Products))
				for id, p := range st.Products {
					out.view.categories[id] = p.CategoryID
				}
			}
		}
		return out, nil, fe.Err()
	})
	return r.product, r.view, err
}

// forecastOptions validates the API's query options.
func forecastOptions(q supplyplan.ForecastQuery) (forecast.Options, error) {
	fe := supplyplan.FieldErrors{}
	if q.HorizonWeeks == 0 {
		q.HorizonWeeks = supplyplan.DefaultHorizonWeeks
	}
	if q.HorizonWeeks < 1 || q.HorizonWeeks > supplyplan.MaxHorizonWeeks {
		fe.Add("horizonWeeks", "must be between 1 and %d", supplyplan.MaxHorizonWeeks)
	}
	if q.Interval == 0 {
		q.Interval = 0.8
	}
	if !slices.Contains([]float64{0.5, 0.8, 0.9, 0.95}, q.Interval) {
		fe.Add("interval", "must be 0.5, 0.8, 0.9 or 0.95")
	}
	if q.Model == "" {
		q.Model = forecast.ModelAuto
	}
	if q.Model != forecast.ModelAuto && !slices.Contains(forecast.Models(), q.Model) {
		fe.Add("model", "must be auto or one of %v", forecast.Models())
	}
	if q.Point == "" {
		q.Point = forecast.PointMean // the forecast of record, the same everywhere (generate, transfers, alerts, tools)
	}
	if !slices.Contains([]string{forecast.PointMedian, forecast.PointMean, forecast.PointMAPE}, q.Point) {
		fe.Add("point", "must be median, mean or mape")
	}
	if q.Transform != "" && !slices.Contains([]string{forecast.TransformAuto, forecast.TransformNone, forecast.TransformLog}, q.Transform) {
		fe.Add("transform", "must be auto, none or log")
	}
	return forecast.Options{Horizon: q.HorizonWeeks, Interval: q.Interval, Model: q.Model, Point: q.Point, Transform: q.Transform}, fe.Err()
}

// Forecast answers GET /api/forecast: one series, or every series of the tenant (paginated).
func (s *Forecasts) Forecast(ctx context.Context, p supplyplan.Principal, q supplyplan.ForecastQuery) (supplyplan.ForecastResponse, error) {
	opt, err := forecastOptions(q)
	if err != nil {
		return supplyplan.ForecastResponse{}, err
	}
	if q.Channel == "" {
		q.Channel = supplyplan.ChannelAll
	}
	if q.Limit <= 0 {
		q.Limit = supplyplan.DefaultPageLimit
	}
	product, view, err := s.resolveSeries(ctx, p.OrgID, q.ProductMasterID, q.LocationID, q.ScenarioID)
	if err != nil {
		return supplyplan.ForecastResponse{}, err
	}
	var keys []supplyplan.DemandKey
	total := 1
	if product != "" && q.LocationID != "" {
		keys = []supplyplan.DemandKey{{SKU: product, Location: q.LocationID, Channel: q.Channel}}
	} else {
		// A page of the series search is cut from the store's kept order, not from every key.
		keys, total, err = s.demand.KeyPage(ctx, p.OrgID, supplyplan.DemandKeyFilter{SKU: product, Location: q.LocationID, Channel: q.Channel},
			max(q.Offset, 0), q.Limit)
		if err != nil {
			return supplyplan.ForecastResponse{}, fmt.Errorf("list demand series: %w", err)
		}
	}
	res, err := s.fc.runWith(ctx, p.OrgID, keys, opt, q.AsOf, q.NoEvents)
	if err != nil {
		return supplyplan.ForecastResponse{}, err
	}
	asOf := q.AsOf
	if asOf.IsZero() {
		asOf = time.Now()
	}
	out := supplyplan.ForecastResponse{Forecasts: make([]supplyplan.SeriesForecastView, 0, len(keys)), HorizonWeeks: opt.Horizon,
		Interval: opt.Interval, ScenarioID: q.ScenarioID, GeneratedAt: supplyplan.Now(), Total: total, Limit: q.Limit, Offset: q.Offset}
	if !q.AsOf.IsZero() {
		d := supplyplan.Date(supplyplan.WeekStart(q.AsOf))
		out.AsOf = &d
	}
	for i, k := range keys {
		chFactor, err := s.channelFactor(ctx, p.OrgID, k, view.scenario)
		if err != nil {
			return out, err
		}
		out.Forecasts = append(out.Forecasts, seriesView(k, res[i], view, chFactor, opt.Horizon, asOf))
	}
	return out, nil
}

// channelFactor is the scenario's channel lift for a series: the channel's own lift, or for ALL
// the lifts weighted by the channels' shares of the last 26 weeks of demand.
func (s *Forecasts) channelFactor(ctx context.Context, org string, k supplyplan.DemandKey, sc *supplyplan.Scenario) (float64, error) {
	if sc == nil || len(sc.Assumptions.ChannelAdjustments) == 0 {
		return 1, nil
	}
	adj := map[string]float64{}
	for _, a := range sc.Assumptions.ChannelAdjustments {
		adj[a.ChannelID] = a.LiftPct
	}
	if k.Channel != supplyplan.ChannelAll {
		return 1 + adj[k.Channel], nil
	}
	from := supplyplan.WeekStart(time.Now()).Add(-26 * week)
	groups, err := s.demand.Aggregate(ctx, org, supplyplan.DemandQuery{SKUs: []string{k.SKU}, Locations: []string{k.Location},
		From: from, GroupBy: []string{"channel"}})
	if err != nil {
		return 1, fmt.Errorf("channel mix: %w", err)
	}
	var total, lifted float64
	for _, g := range groups {
		total += g.Actual
		lifted += g.Actual * (1 + adj[g.Channel])
	}
	if total <= 0 {
		return 1, nil
	}
	return lifted / total, nil
}

// seriesView renders one series' forecast with the scenario applied, in the documented order:
// baseline -> events (those the scenario includes) -> category lift -> channel lift -> global lift.
func seriesView(k supplyplan.DemandKey, r seriesResult, view scenarioView, chFactor float64, horizon int, asOf time.Time) supplyplan.SeriesForecastView {
	v := supplyplan.SeriesForecastView{ProductMasterID: k.SKU, LocationID: k.Location, Channel: k.Channel, HistoryWeeks: r.HistoryWeeks}
	if r.NoHistory {
		v.Model = "none"
		start := supplyplan.WeekStart(asOf)
		for i := 0; i < horizon; i++ {
			v.Periods = append(v.Periods, supplyplan.ForecastPeriod{WeekStarting: supplyplan.Date(start.Add(time.Duration(i) * week)), Events: []supplyplan.PeriodEvent{}})
		}
		return v
	}
	res := r.Result
	v.Model, v.Class = res.Model, string(res.Class.Class)
	a := res.Accuracy
	v.Accuracy = supplyplan.ForecastAccuracy{WAPE: ratioPtr(a.WAPE), MASE: ratioPtr(a.MASE), Bias: ratioPtr(a.Bias), SMAPE: ratioPtr(a.SMAPE),
		MAPE: ratioPtr(a.MAPE), Window: a.Window, Points: a.Points}
	sc := view.scenario
	factor := chFactor
	var included map[string]bool
	if sc != nil {
		as := sc.Assumptions
		if as.IncludedEventIDs != nil {
			included = make(map[string]bool, len(as.IncludedEventIDs))
			for _, id := range as.IncludedEventIDs {
				included[id] = true
			}
		}
		if cat := view.categories[k.SKU]; cat != "" {
			for _, c := range as.CategoryAdjustments {
				if c.CategoryID == cat {
					factor *= 1 + c.LiftPct
				}
			}
		}
		if as.GlobalLiftPct != nil {
			factor *= 1 + *as.GlobalLiftPct
		}
	}
	for i := 0; i < r.numPeriods(); i++ {
		pd := r.period(i)
		period := supplyplan.ForecastPeriod{WeekStarting: supplyplan.Date(pd.WeekStart), Baseline: supplyplan.Quantity(pd.Baseline),
			Events: make([]supplyplan.PeriodEvent, 0, len(pd.Events))}
		scale := factor
		if included != nil && pd.Multiplier > 0 {
			scale *= stackedMultiplier(pd.Events, included) / pd.Multiplier
		}
		period.Quantity = supplyplan.Quantity(pd.Quantity * scale)
		period.Lower = supplyplan.Quantity(pd.Lower * scale)
		period.Upper = supplyplan.Quantity(pd.Upper * scale)
		for _, e := range pd.Events {
			period.Events = append(period.Events, supplyplan.PeriodEvent{ID: e.ID, Type: e.Type, Mechanic: e.Mechanic,
				LiftPct: supplyplan.RoundRatio(e.LiftPct), Weight: supplyplan.RoundRatio(e.Weight), Learned: e.Learned, Level: e.Level,
				Included: included == nil || included[e.ID]})
		}
		v.Periods = append(v.Periods, period)
	}
	return v
}

// stackedMultiplier recomputes a week's event multiplier from the included events only, with the
// engine's stacking rule (supplyplan.LiftStack).
func stackedMultiplier(events []forecast.AppliedEvent, included map[string]bool) float64 {
	var st supplyplan.LiftStack
	for _, e := range events {
		if included[e.ID] {
			st.Push(e.LiftPct, e.Weight, e.Additive)
		}
	}
	return st.Multiplier()
}

// ratioPtr rounds a ratio to supplyplan.RatioDecimals (nil stays nil).
func ratioPtr(v *float64) *float64 {
	if v == nil {
		return nil
	}
	r := supplyplan.RoundRatio(*v)
	return &r
}

func round2(v float64) float64 { return supplyplan.RoundQuantity(v) }
func round4(v float64) float64 { return supplyplan.RoundRatio(v) }

// scenarioTotals forecasts every matching series under a scenario and sums them by week.
func (s *Forecasts) scenarioTotals(ctx context.Context, org string, sc *supplyplan.Scenario, productRefs, locations []string, horizon int, asOf time.Time) ([]supplyplan.WeekTotal, []supplyplan.VersionSeries, error) {
	type resolved struct {
		products []string
		view     scenarioView
	}
	r, err := tenantTx(ctx, s.core, org, func(st *supplyplan.TenantState) (resolved, []supplyplan.Record, error) {
		var out resolved
		fe := supplyplan.FieldErrors{}
		for _, ref := range productRefs {
			if p, ok := st.ProductBySKU(ref); ok {
				out.products = append(out.products, p.ID)
			} else {
				fe.Add("productMasterIds", "unknown product %q", ref)
			}
		}
		for _, l := range locations {
			if _, ok := st.Locations[l]; !ok {
				fe.Add("locationIds", "unknown location %q", l)
			}
		}
		out.view.scenario = sc
		out.view.categories = make(map[string]string, len(st.Products))
		for id, p := range st.Products {
			out.view.categories[id] = p.CategoryID
		}
		return out, nil, fe.Err()
	})
	if err != nil {
		return nil, nil, err
	}
	all, err := s.fc.seriesKeys(ctx, org, "", "", supplyplan.ChannelAll)
	if err != nil {
		return nil, nil, err
	}
	keys := all[:0:0]
	for _, k := range all {
		if (len(r.products) == 0 || slices.Contains(r.products, k.SKU)) && (len(locations) == 0 || slices.Contains(locations, k.Location)) {
			keys = append(keys, k)
		}
	}
	opt := forecast.Options{Horizon: horizon, Point: forecast.PointMean}
	if asOf.IsZero() {
		asOf = time.Now()
	}
	res, err := s.fc.run(ctx, org, keys, opt, asOf)
	if err != nil {
		return nil, nil, err
	}
	weekly := make([]supplyplan.WeekTotal, horizon)
	start := supplyplan.WeekStart(asOf)
	for i := range weekly {
		weekly[i].WeekStarting = supplyplan.Date(start.Add(time.Duration(i) * week))
	}
	series := make([]supplyplan.VersionSeries, 0, len(keys))
	for i, k := range keys {
		if res[i].NoHistory {
			continue
		}
		chFactor, err := s.channelFactor(ctx, org, k, sc)
		if err != nil {
			return nil, nil, err
		}
		v := seriesView(k, res[i], r.view, chFactor, horizon, asOf)
		vs := supplyplan.VersionSeries{SKU: k.SKU, Location: k.Location}
		for w, pd := range v.Periods {
			if w >= horizon {
				break
			}
			weekly[w].Quantity += pd.Quantity
			weekly[w].Baseline += pd.Baseline
			weekly[w].Lower += pd.Lower
			weekly[w].Upper += pd.Upper
			vs.Quantity = append(vs.Quantity, round2(float64(pd.Quantity)))
			vs.Baseline = append(vs.Baseline, round2(float64(pd.Baseline)))
		}
		series = append(series, vs)
	}
	return weekly, series, nil
}

// GenerateScenario computes and stores the scenario's forecast version and returns its totals.
func (s *Forecasts) GenerateScenario(ctx context.Context, p supplyplan.Principal, id string, in supplyplan.GenerateScenarioInput) (supplyplan.GenerateScenarioResult, error) {
	horizon, asOf, err := in.Window(time.Now())
	if err != nil {
		return supplyplan.GenerateScenarioResult{}, err
	}
	var products, locations []string
	if in.ProductMasterIDs != nil {
		products = *in.ProductMasterIDs
	}
	if in.LocationIDs != nil {
		locations = *in.LocationIDs
	}
	sc, err := s.scenario(ctx, p.OrgID, id)
	if err != nil {
		return supplyplan.GenerateScenarioResult{}, err
	}
	if err := sc.CheckGenerate(); err != nil {
		return supplyplan.GenerateScenarioResult{}, err
	}
	weekly, series, err := s.scenarioTotals(ctx, p.OrgID, &sc, products, locations, horizon, asOf)
	if err != nil {
		return supplyplan.GenerateScenarioResult{}, err
	}
	now := supplyplan.Now()
	v := supplyplan.NewForecastVersion(id, p.Actor(), horizon, asOf, now, weekly, series)
	out, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.GenerateScenarioResult, []supplyplan.Record, error) {
		cur, ok := st.Scenarios[id]
		if !ok {
			return supplyplan.GenerateScenarioResult{}, nil, supplyplan.NotFound("Scenario")
		}
		if err := cur.CheckGenerate(); err != nil {
			return supplyplan.GenerateScenarioResult{}, nil, err
		}
		prev, _ := st.LatestVersion(id)
		ch := supplyplan.GenerateChange(v, prev, products, locations, p.Actor(), now)
		res := supplyplan.GenerateScenarioResult{Success: true, ScenarioID: id, VersionID: v.ID, GeneratedAt: now, HorizonWeeks: horizon,
			SeriesCount: len(series), TotalQuantity: v.TotalQuantity, TotalBaseline: v.TotalBaseline, Weekly: weekly, Status: string(cur.Status),
			PreviousTotal: ch.PreviousTotal, Delta: ch.Delta}
		recs := append(st.AddForecastVersion(v), st.AddChange(ch)...)
		return res, recs, nil
	})
	return out, err
}

// CompareScenarios forecasts 2 to 10 scenarios over the same series and compares them with the first.
func (s *Forecasts) CompareScenarios(ctx context.Context, p supplyplan.Principal, in supplyplan.CompareInput) (supplyplan.CompareResult, error) {
	horizon, err := in.Window()
	if err != nil {
		return supplyplan.CompareResult{}, err
	}
	var products, locations []string
	if in.ProductMasterID != nil && *in.ProductMasterID != "" {
		products = []string{*in.ProductMasterID}
	}
	if in.LocationID != nil && *in.LocationID != "" {
		locations = []string{*in.LocationID}
	}
	out := supplyplan.CompareResult{HorizonWeeks: horizon, GeneratedAt: supplyplan.Now()}
	for i, id := range *in.ScenarioIDs {
		sc, err := s.scenario(ctx, p.OrgID, id)
		if err != nil {
			if supplyplan.ErrorCode(err) == supplyplan.ENOTFOUND {
				return out, supplyplan.Invalid("scenarioIds", "unknown scenario %q", id)
			}
			return out, err
		}
		weekly, series, err := s.scenarioTotals(ctx, p.OrgID, &sc, products, locations, horizon, time.Time{})
		if err != nil {
			return out, err
		}
		total, base := supplyplan.SumWeekly(weekly)
		c := supplyplan.ScenarioComparison{ScenarioID: id, Name: sc.Name, Type: string(sc.Type), Status: string(sc.Status),
			TotalQuantity: supplyplan.Quantity(total), TotalBaseline: supplyplan.Quantity(base), Weekly: weekly}
		var first *supplyplan.ScenarioComparison
		if i > 0 {
			first = &out.Scenarios[0]
		}
		c.CompareWith(first)
		out.SeriesCount = len(series)
		out.Scenarios = append(out.Scenarios, c)
	}
	return out, nil
}

// scenario reads one scenario.
func (s *Forecasts) scenario(ctx context.Context, org, id string) (supplyplan.Scenario, error) {
	return tenantTx(ctx, s.core, org, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
		sc, err := st.GetScenario(id)
		return sc, nil, err
	})
}

// event reads one tenant event or global event.
func (s *Forecasts) event(ctx context.Context, org, id string) (supplyplan.ExternalEvent, error) {
	global := s.core.globalLookup()
	return tenantTx(ctx, s.core, org, func(st *supplyplan.TenantState) (supplyplan.ExternalEvent, []supplyplan.Record, error) {
		e, err := st.GetEvent(id, global)
		return e, nil, err
	})
}

// ChangeHistory lists forecast changes.
func (s *Forecasts) ChangeHistory(ctx context.Context, p supplyplan.Principal, f supplyplan.ChangeFilter) ([]supplyplan.ChangeEntry, int, error) {
	type page struct {
		items []supplyplan.ChangeEntry
		total int
	}
	r, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (page, []supplyplan.Record, error) {
		items, total := st.ListChanges(f)
		return page{items, total}, nil, nil
	})
	return r.items, r.total, err
}
