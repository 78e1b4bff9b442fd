package actors

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics/forecast"
)

// totalSeries forecasts the total demand of a product and/or location (the whole tenant when both
// are empty) over horizon weeks. One series is forecast directly; a total is forecast top-down from
// its summed weekly history (aggregated in the store), with the org-wide events and, for one
// product, that product's own events.
func (s *Forecasts) totalSeries(ctx context.Context, org, product, location string, opt forecast.Options) (forecast.Result, bool, error) {
	if product != "" && location != "" {
		k := supplyplan.DemandKey{SKU: product, Location: location, Channel: supplyplan.ChannelAll}
		res, err := s.fc.run(ctx, org, []supplyplan.DemandKey{k}, opt, time.Time{})
		if err != nil {
			return forecast.Result{}, false, err
		}
		return res[0].full(), !res[0].NoHistory, nil
	}
	q := supplyplan.DemandQuery{GroupBy: []string{"week"}, To: supplyplan.WeekStart(time.Now()).Add(-time.Nanosecond)}
	if product != "" {
		q.SKUs = []string{product}
	}
	if location != "" {
		q.Locations = []string{location}
	}
	groups, err := s.demand.Aggregate(ctx, org, q)
	if err != nil {
		return forecast.Result{}, false, fmt.Errorf("aggregate demand: %w", err)
	}
	if len(groups) == 0 {
		return forecast.Result{}, false, nil
	}
	weeks := make([]supplyplan.WeekValue, len(groups))
	for i, g := range groups {
		weeks[i] = supplyplan.WeekValue{Week: g.Week, Actual: g.Actual}
	}
	slices.SortFunc(weeks, func(a, b supplyplan.WeekValue) int { return a.Week.Compare(b.Week) })
	// The org-wide (and global) events, and those of the product or the location alone.
	evs, err := s.fc.eventsOf(ctx, org, []supplyplan.DemandKey{{SKU: product, Location: location}})
	if err != nil {
		return forecast.Result{}, false, err
	}
	events := occurrences(evs[0], time.Time{})
	var lifts *forecast.LiftModel
	if hasLearned(evs[0]) {
		if lifts, _, err = s.fc.liftModel(ctx, org, supplyplan.WeekStart(time.Now())); err != nil {
			return forecast.Result{}, false, err
		}
	}
	series := forecast.FromWeekValues(forecast.SeriesKey{ID: "total", ProductID: product, LocationID: location}, weeks)
	for end := series.Start.Add(time.Duration(len(series.Values)) * week); end.Before(supplyplan.WeekStart(time.Now())); end = end.Add(week) {
		series.Values = append(series.Values, math.NaN())
	}
	res, err := forecast.Forecast(series, events, lifts, opt)
	return res, err == nil, err
}

// ChannelProjection splits the total forecast by the channel mix of the demand history.
func (s *Forecasts) ChannelProjection(ctx context.Context, p supplyplan.Principal, productRef, location string, horizon int) (supplyplan.ChannelProjection, error) {
	horizon, err := supplyplan.CheckHorizon("horizonWeeks", horizon)
	if err != nil {
		return supplyplan.ChannelProjection{}, err
	}
	product, _, err := s.resolveSeries(ctx, p.OrgID, productRef, location, "")
	if err != nil {
		return supplyplan.ChannelProjection{}, err
	}
	out := supplyplan.ChannelProjection{ProductMasterID: product, LocationID: location, HorizonWeeks: horizon,
		Total: []supplyplan.WeekTotal{}, Channels: []supplyplan.ChannelProjSeries{}, GeneratedAt: supplyplan.Now()}
	res, ok, err := s.totalSeries(ctx, p.OrgID, product, location, forecast.Options{Horizon: horizon, Point: forecast.PointMean})
	if err != nil || !ok {
		return out, err
	}
	// Channel history of the last 52 weeks, aggregated in the store.
	end := supplyplan.WeekStart(time.Now())
	from := end.Add(-52 * week)
	q := supplyplan.DemandQuery{From: from, To: end.Add(-time.Nanosecond), GroupBy: []string{"channel", "week"}}
	if product != "" {
		q.SKUs = []string{product}
	}
	if location != "" {
		q.Locations = []string{location}
	}
	groups, err := s.demand.Aggregate(ctx, p.OrgID, q)
	if err != nil {
		return out, fmt.Errorf("aggregate channels: %w", err)
	}
	byChannel := map[string][]float64{}
	for _, g := range groups {
		i := int(supplyplan.WeekStart(g.Week).Sub(from) / week)
		if i < 0 || i >= 52 {
			continue
		}
		v := byChannel[g.Channel]
		if v == nil {
			v = make([]float64, 52)
			for j := range v {
				v[j] = math.NaN()
			}
			byChannel[g.Channel] = v
		}
		if math.IsNaN(v[i]) {
			v[i] = 0
		}
		v[i] += g.Actual
	}
	hist := make([]forecast.ChannelHistory, 0, len(byChannel))
	for ch, v := range byChannel {
		hist = append(hist, forecast.ChannelHistory{Channel: ch, Values: v})
	}
	slices.SortFunc(hist, func(a, b forecast.ChannelHistory) int { return cmp.Compare(a.Channel, b.Channel) })
	for _, pd := range res.Periods {
		out.Total = append(out.Total, supplyplan.WeekTotal{WeekStarting: supplyplan.Date(pd.WeekStart), Baseline: supplyplan.Quantity(pd.Baseline),
			Quantity: supplyplan.Quantity(pd.Quantity), Lower: supplyplan.Quantity(pd.Lower), Upper: supplyplan.Quantity(pd.Upper)})
	}
	if len(hist) == 0 {
		return out, nil
	}
	shares := forecast.ChannelShares(hist, horizon, 26)
	shareOf := map[string][]float64{}
	for _, sh := range shares {
		shareOf[sh.Channel] = sh.Shares
	}
	for _, cf := range forecast.SplitByChannel(res.Periods, shares) {
		cs := supplyplan.ChannelProjSeries{Channel: cf.Channel}
		for i, pd := range cf.Periods {
			share := 0.0
			if i < len(shareOf[cf.Channel]) {
				share = shareOf[cf.Channel][i]
			}
			cs.Periods = append(cs.Periods, supplyplan.ChannelProjWeek{WeekStarting: supplyplan.Date(pd.WeekStart), Share: round4(share),
				Quantity: supplyplan.Quantity(pd.Quantity), Lower: supplyplan.Quantity(pd.Lower), Upper: supplyplan.Quantity(pd.Upper)})
			cs.Total += supplyplan.Quantity(pd.Quantity)
		}
		out.Channels = append(out.Channels, cs)
	}
	return out, nil
}

// LongTerm forecasts months ahead and sums by month or quarter, with intervals that widen.
func (s *Forecasts) LongTerm(ctx context.Context, p supplyplan.Principal, productRef, location string, months int, granularity string, interval float64) (supplyplan.LongTermForecast, error) {
	months, granularity, interval, err := supplyplan.LongTermOptions(months, granularity, interval)
	if err != nil {
		return supplyplan.LongTermForecast{}, err
	}
	product, _, err := s.resolveSeries(ctx, p.OrgID, productRef, location, "")
	if err != nil {
		return supplyplan.LongTermForecast{}, err
	}
	first, end, weeks := supplyplan.LongTermWindow(time.Now(), months, granularity)
	out := supplyplan.LongTermForecast{ProductMasterID: product, LocationID: location, HorizonMonths: months, Granularity: granularity,
		Interval: interval, Buckets: []supplyplan.LongTermBucket{}, GeneratedAt: supplyplan.Now()}
	res, ok, err := s.totalSeries(ctx, p.OrgID, product, location, forecast.Options{Horizon: weeks, Interval: interval, Point: forecast.PointMean})
	if err != nil || !ok {
		out.Model = "none"
		return out, err
	}
	out.Model = res.Model
	buckets, err := forecast.Aggregate(res, granularity)
	if err != nil {
		return out, err
	}
	for _, b := range buckets {
		if b.Start.Before(first) || !b.Start.Before(end) {
			continue // the days of the forecast's first week that fall in the previous month or quarter
		}
		out.Buckets = append(out.Buckets, supplyplan.LongTermBucket{Period: supplyplan.BucketLabel(b.Start, granularity), Start: supplyplan.Date(b.Start), End: supplyplan.Date(b.End),
			Baseline: supplyplan.Quantity(b.Baseline), Quantity: supplyplan.Quantity(b.Quantity), Lower: supplyplan.Quantity(b.Lower),
			Upper: supplyplan.Quantity(b.Upper), Partial: b.Partial})
	}
	return out, nil
}

// Accuracy scores stored forecast versions against the actuals that arrived later.
func (s *Forecasts) Accuracy(ctx context.Context, p supplyplan.Principal, q supplyplan.AccuracyQuery) (supplyplan.AccuracyReport, error) {
	windowWeeks, from, to, err := q.AccuracyWindow(time.Now())
	if err != nil {
		return supplyplan.AccuracyReport{}, err
	}
	q.WindowWeeks = windowWeeks
	product, _, err := s.resolveSeries(ctx, p.OrgID, q.ProductMasterID, q.LocationID, "")
	if err != nil {
		return supplyplan.AccuracyReport{}, err
	}
	versions, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.ForecastVersion, []supplyplan.Record, error) {
		return st.Versions(), nil, nil
	})
	if err != nil {
		return supplyplan.AccuracyReport{}, err
	}
	rep := supplyplan.AccuracyReport{WindowWeeks: q.WindowWeeks, From: supplyplan.Date(from), To: supplyplan.Date(to.Add(-24 * time.Hour)),
		ByProduct: []supplyplan.AccuracyMetrics{}, ByLocation: []supplyplan.AccuracyMetrics{}, ByChannel: []supplyplan.AccuracyMetrics{}}
	if q.Channel != "" && q.Channel != supplyplan.ChannelAll {
		return rep, nil // versions hold channel totals (ALL) only
	}
	// The forecast of record of every (series, week) of the window.
	best, used := supplyplan.RecordedForecasts(versions, q.ScenarioID, product, q.LocationID, from, to)
	keys := map[supplyplan.DemandKey]bool{}
	for c := range best {
		keys[c.Key] = true
	}
	rep.Versions = used
	if len(keys) == 0 {
		return rep, nil
	}
	klist := make([]supplyplan.DemandKey, 0, len(keys))
	for k := range keys {
		klist = append(klist, k)
	}
	hist, err := s.demand.SeriesBatch(ctx, p.OrgID, klist, time.Time{}, to.Add(-time.Nanosecond))
	if err != nil {
		return rep, fmt.Errorf("read actuals: %w", err)
	}
	actual := map[supplyplan.SeriesWeek]float64{}
	scale := map[supplyplan.DemandKey]float64{}
	for k, weeks := range hist {
		byWeek, sc := supplyplan.WindowActuals(weeks, from)
		for w, a := range byWeek {
			actual[supplyplan.SeriesWeek{Key: k, Week: w}] = a
		}
		if sc > 0 {
			scale[k] = sc
		}
	}
	var points []supplyplan.AccuracyPoint
	for c, f := range best {
		a, ok := actual[c]
		if !ok {
			continue // no actual recorded for the week yet
		}
		points = append(points, supplyplan.AccuracyPoint{Key: c.Key, Forecast: f, Actual: a, Scale: scale[c.Key]})
	}
	rep.Overall, rep.ByProduct, rep.ByLocation, rep.ByChannel = supplyplan.AccuracyBreakdown(points)
	return rep, nil
}

// maxLiftSeries bounds the series an event's lift report reads.
const maxLiftSeries = 500

// EventLift compares an event's planned and realised lift over the series it applies to.
func (s *Forecasts) EventLift(ctx context.Context, p supplyplan.Principal, eventID string) (supplyplan.EventLiftReport, error) {
	ev, err := s.event(ctx, p.OrgID, eventID)
	if err != nil {
		return supplyplan.EventLiftReport{}, err
	}
	rep := supplyplan.EventLiftReport{EventID: ev.ID, Type: string(ev.Type), Weeks: []supplyplan.EventLiftWeek{}}
	keys, err := s.fc.seriesKeys(ctx, p.OrgID, ev.ProductMasterID, ev.LocationID, supplyplan.ChannelAll)
	if err != nil {
		return rep, err
	}
	if len(keys) > maxLiftSeries {
		keys = keys[:maxLiftSeries]
	}
	rep.SeriesCount = len(keys)
	evs, err := s.fc.eventsOf(ctx, p.OrgID, keys)
	if err != nil {
		return rep, err
	}
	start := supplyplan.WeekStart(ev.StartsAt)
	// Lifts learned on the history before the event, for a clean comparison.
	lifts, _, err := s.fc.liftModel(ctx, p.OrgID, start)
	if err != nil {
		return rep, err
	}
	occ := forecast.FromExternalEvent(ev)
	if ev.Value != nil && ev.Value.LiftPct != nil {
		v := *ev.Value.LiftPct
		rep.PlannedLiftPct = &v
	} else {
		rep.Learned = true
	}
	thisWeek := supplyplan.WeekStart(time.Now())
	if !start.Before(thisWeek) {
		rep.Status = "PENDING"
		if rep.Learned && len(keys) > 0 && lifts != nil {
			est := lifts.Estimate(&occ, seriesKey(keys[0]))
			v := round4(est.LiftPct)
			rep.PlannedLiftPct = &v
		}
		return rep, nil
	}
	hist, err := s.demand.SeriesBatch(ctx, p.OrgID, keys, time.Time{}, thisWeek.Add(-time.Nanosecond))
	if err != nil {
		return rep, fmt.Errorf("read history: %w", err)
	}
	byWeek := map[time.Time]*supplyplan.EventLiftWeek{}
	var base, planned, actual, plannedLift, nLift float64
	for i, k := range keys {
		weeks := hist[k]
		if len(weeks) == 0 {
			continue
		}
		series := forecast.FromWeekValues(seriesKey(k), weeks)
		lr, err := forecast.RealisedLift(series, ev.ID, occurrences(evs[i], time.Time{}), lifts, forecast.Options{Point: forecast.PointMean})
		if err != nil {
			if c := supplyplan.ErrorCode(err); c == supplyplan.ENOTFOUND || c == supplyplan.EVALIDATION {
				continue
			}
			return rep, err
		}
		plannedLift += lr.PlannedLiftPct
		nLift++
		for _, w := range lr.Weeks {
			x := byWeek[w.WeekStart]
			if x == nil {
				x = &supplyplan.EventLiftWeek{WeekStarting: supplyplan.Date(w.WeekStart)}
				byWeek[w.WeekStart] = x
			}
			x.Base += supplyplan.Quantity(w.Base)
			x.Planned += supplyplan.Quantity(w.Planned)
			a := supplyplan.Quantity(w.Actual)
			if x.Actual != nil {
				a += *x.Actual
			}
			x.Actual = &a
			base += w.Base
			planned += w.Planned
			actual += w.Actual
		}
	}
	if nLift > 0 && rep.Learned {
		v := round4(plannedLift / nLift)
		rep.PlannedLiftPct = &v
	}
	for _, w := range byWeek {
		rep.Weeks = append(rep.Weeks, *w)
	}
	slices.SortFunc(rep.Weeks, func(a, b supplyplan.EventLiftWeek) int {
		return time.Time(a.WeekStarting).Compare(time.Time(b.WeekStarting))
	})
	if base > 0 {
		pe, re := round4(planned/base-1), round4(actual/base-1)
		rep.PlannedEffectPct, rep.RealisedLiftPct = &pe, &re
	}
	switch {
	case len(rep.Weeks) == 0:
		rep.Status = "PENDING"
	case supplyplan.WeekStart(ev.EndsAt.Add(-time.Nanosecond)).Before(thisWeek):
		rep.Status = "COMPLETE"
	default:
		rep.Status = "PARTIAL"
	}
	return rep, nil
}
