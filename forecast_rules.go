package supplyplan

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// The rules of the forecast of record, of stored forecast versions and of forecast windows. The
// forecast services (package actors) read the tenant's state and the demand store, and apply what
// these functions decide.

const weekDuration = 7 * 24 * time.Hour

// ForecastOfRecord returns the tenant's forecast of record, leaving out scenario except: the newest
// (ids sort by creation) of the latest versions of the PUBLISHED scenarios.
func (s *TenantState) ForecastOfRecord(except string) (*ForecastVersion, bool) {
	var best *ForecastVersion
	for _, sc := range s.Scenarios {
		if sc.ID == except || sc.Status != ScenarioPublished {
			continue
		}
		if v, ok := s.LatestVersion(sc.ID); ok && (best == nil || v.ID > best.ID) {
			best = v
		}
	}
	return best, best != nil
}

// PublishChange is the change-history entry of publishing sc: the forecast of record moves from
// prev (the forecast of record before, see ForecastOfRecord; nil: none) to next (sc's newest
// version; nil: sc was never generated, and the entry says so).
func PublishChange(sc Scenario, prev, next *ForecastVersion, actor string, now time.Time) ChangeEntry {
	total := func(v *ForecastVersion) *float64 {
		if v == nil {
			return nil
		}
		t := float64(v.TotalQuantity)
		return &t
	}
	reason := fmt.Sprintf("scenario %q published", sc.Name)
	if next == nil {
		reason += " (not generated yet: no forecast total)"
	}
	ch := NewChange(ChangePublish, actor, reason, total(prev), total(next), now)
	ch.ScenarioID = sc.ID
	return ch
}

// CheckGenerate refuses to generate a version of an ARCHIVED scenario (409).
func (sc Scenario) CheckGenerate() error {
	if sc.Status == ScenarioArchived {
		return Conflict("Scenario is archived and cannot be generated")
	}
	return nil
}

// CheckHorizon validates a horizon in weeks (0: DefaultHorizonWeeks), naming field.
func CheckHorizon(field string, weeks int) (int, error) {
	if weeks == 0 {
		weeks = DefaultHorizonWeeks
	}
	if weeks < 1 || weeks > MaxHorizonWeeks {
		return weeks, Invalid(field, "must be between 1 and %d", MaxHorizonWeeks)
	}
	return weeks, nil
}

// Window validates a generate request: its horizon (default DefaultHorizonWeeks) and its as-of
// date (optional; an ISO date not after now). A zero asOf means now.
func (in GenerateScenarioInput) Window(now time.Time) (horizon int, asOf time.Time, err error) {
	horizon = DefaultHorizonWeeks
	if in.HorizonWeeks != nil {
		horizon = *in.HorizonWeeks
		if horizon < 1 || horizon > MaxHorizonWeeks {
			return horizon, asOf, Invalid("horizonWeeks", "must be between 1 and %d", MaxHorizonWeeks)
		}
	}
	if in.AsOf != nil {
		t, ok := ParseTime(*in.AsOf)
		if !ok || t.After(now) {
			return horizon, asOf, Invalid("asOf", "must be an ISO date not in the future")
		}
		asOf = t
	}
	return horizon, asOf, nil
}

// SumWeekly returns the quantity and baseline totals of weekly totals.
func SumWeekly(w []WeekTotal) (q, b float64) {
	for _, x := range w {
		q += float64(x.Quantity)
		b += float64(x.Baseline)
	}
	return q, b
}

// NewForecastVersion is the version a generation stores: its first week is asOf's (now's when
// asOf is zero), its totals are the weekly totals' sums, rounded.
func NewForecastVersion(scenarioID, actor string, horizon int, asOf, now time.Time, weekly []WeekTotal, series []VersionSeries) ForecastVersion {
	start := now
	if !asOf.IsZero() {
		start = asOf
	}
	total, base := SumWeekly(weekly)
	return ForecastVersion{ID: NewID("fv"), ScenarioID: scenarioID, GeneratedAt: now, GeneratedBy: actor,
		Start: WeekStart(start), HorizonWeeks: horizon, TotalQuantity: Quantity(RoundQuantity(total)),
		TotalBaseline: Quantity(RoundQuantity(base)), Weekly: weekly, Series: series}
}

// GenerateChange is the change-history entry of generating v: the scenario's total moves from its
// previous newest version (prev; nil: none) to v's. It is scoped to a product or a location when
// the request named exactly one.
func GenerateChange(v ForecastVersion, prev *ForecastVersion, products, locations []string, actor string, now time.Time) ChangeEntry {
	var before *float64
	if prev != nil {
		t := float64(prev.TotalQuantity)
		before = &t
	}
	next, _ := SumWeekly(v.Weekly)
	ch := NewChange(ChangeGenerate, actor, fmt.Sprintf("generated %d weeks over %d series", v.HorizonWeeks, len(v.Series)), before, &next, now)
	ch.ScenarioID, ch.HorizonWeeks, ch.SeriesCount = v.ScenarioID, v.HorizonWeeks, len(v.Series)
	if len(products) == 1 {
		ch.ProductMasterID = products[0]
	}
	if len(locations) == 1 {
		ch.LocationID = locations[0]
	}
	return ch
}

// Window validates a comparison: 2 to 10 scenarios, and its horizon (default DefaultHorizonWeeks).
func (in CompareInput) Window() (horizon int, err error) {
	fe := FieldErrors{}
	if in.ScenarioIDs == nil || len(*in.ScenarioIDs) < 2 || len(*in.ScenarioIDs) > 10 {
		fe.Add("scenarioIds", "must list 2 to 10 scenario ids")
	}
	horizon = DefaultHorizonWeeks
	if in.HorizonWeeks != nil {
		horizon = *in.HorizonWeeks
		if horizon < 1 || horizon > MaxHorizonWeeks {
			fe.Add("horizonWeeks", "must be between 1 and %d", MaxHorizonWeeks)
		}
	}
	return horizon, fe.Err()
}

// CompareWith fills c's deltas against first, the first scenario of a comparison (c is first
// itself when first is nil: its deltas are zero).
func (c *ScenarioComparison) CompareWith(first *ScenarioComparison) {
	c.WeeklyDeltaVsFirst = make([]Quantity, len(c.Weekly))
	if first == nil {
		zero := 0.0
		c.DeltaPctVsFirst = &zero
		return
	}
	c.DeltaVsFirst = c.TotalQuantity - first.TotalQuantity
	if first.TotalQuantity != 0 {
		pct := RoundRatio(float64(c.DeltaVsFirst / first.TotalQuantity))
		c.DeltaPctVsFirst = &pct
	}
	for w := range c.Weekly {
		c.WeeklyDeltaVsFirst[w] = c.Weekly[w].Quantity - first.Weekly[w].Quantity
	}
}

// Long-term forecast granularities.
const (
	GranularityMonth   = "MONTH"
	GranularityQuarter = "QUARTER"
)

// forecastIntervals are the prediction intervals the API offers.
var forecastIntervals = []float64{0.5, 0.8, 0.9, 0.95}

// LongTermOptions validates a long-term query and fills its defaults: 18 months (1 to 36),
// MONTH or QUARTER, an interval of 0.5, 0.8 (default), 0.9 or 0.95.
func LongTermOptions(months int, granularity string, interval float64) (int, string, float64, error) {
	fe := FieldErrors{}
	if months == 0 {
		months = 18
	}
	if months < 1 || months > 36 {
		fe.Add("horizonMonths", "must be between 1 and 36")
	}
	if granularity == "" {
		granularity = GranularityMonth
	}
	if granularity != GranularityMonth && granularity != GranularityQuarter {
		fe.Add("granularity", "must be MONTH or QUARTER")
	}
	if interval == 0 {
		interval = 0.8
	}
	if !slices.Contains(forecastIntervals, interval) {
		fe.Add("interval", "must be 0.5, 0.8, 0.9 or 0.95")
	}
	return months, granularity, interval, fe.Err()
}

// QuarterStart is the first day of t's quarter (UTC).
func QuarterStart(t time.Time) time.Time {
	return time.Date(t.Year(), time.Month((int(t.Month())-1)/3*3+1), 1, 0, 0, 0, 0, time.UTC)
}

// LongTermWindow is the window of a long-term forecast made at now: the buckets from first
// (inclusive) to end (exclusive), and the weeks to forecast from now's week to cover them. The
// horizon covers the current month and the months-1 after it; quarters are whole, from the current
// quarter to the one holding the horizon's last month. The current month or quarter is partial
// (its past days are history).
func LongTermWindow(now time.Time, months int, granularity string) (first, end time.Time, weeks int) {
	now = now.UTC()
	first = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	last := first.AddDate(0, months-1, 0)
	end = last.AddDate(0, 1, 0)
	if granularity == GranularityQuarter {
		first = QuarterStart(first)
		end = QuarterStart(last).AddDate(0, 3, 0)
	}
	weeks = int(math.Ceil(end.Sub(WeekStart(now)).Hours() / (24 * 7)))
	return first, end, weeks
}

// BucketLabel names the long-term bucket starting at start: 2026-04, or 2026-Q2.
func BucketLabel(start time.Time, granularity string) string {
	if granularity == GranularityQuarter {
		return fmt.Sprintf("%d-Q%d", start.Year(), (int(start.Month())-1)/3+1)
	}
	return start.Format("2006-01")
}

// AccuracyWindow validates an accuracy query's window (default 13 weeks, 1 to 104) and returns
// it: the complete weeks [from, to) before now's week.
func (q AccuracyQuery) AccuracyWindow(now time.Time) (weeks int, from, to time.Time, err error) {
	weeks = q.WindowWeeks
	if weeks == 0 {
		weeks = 13
	}
	if weeks < 1 || weeks > 104 {
		return weeks, from, to, Invalid("windowWeeks", "must be between 1 and 104")
	}
	to = WeekStart(now)
	return weeks, to.Add(-time.Duration(weeks) * weekDuration), to, nil
}

// SeriesWeek is one week of one series.
type SeriesWeek struct {
	Key  DemandKey
	Week time.Time
}

// RecordedForecasts picks, for every (series, week) of [from, to) the versions cover, the forecast
// of record: the quantity of the version with the latest information cut-off (its first week)
// before that week, ties going to the newest version. Versions of other scenarios than scenarioID
// (when set), and series of other products or locations (when set), are left out. It also returns
// how many versions gave a figure. Versions hold channel totals (ChannelAll) only.
func RecordedForecasts(versions []ForecastVersion, scenarioID, product, location string, from, to time.Time) (map[SeriesWeek]float64, int) {
	best := map[SeriesWeek]float64{}
	bestID := map[SeriesWeek]string{}
	bestStart := map[SeriesWeek]time.Time{}
	for _, v := range versions {
		if scenarioID != "" && v.ScenarioID != scenarioID {
			continue
		}
		for _, vs := range v.Series {
			if (product != "" && vs.SKU != product) || (location != "" && vs.Location != location) {
				continue
			}
			for i, qty := range vs.Quantity {
				w := v.Start.Add(time.Duration(i) * weekDuration)
				if w.Before(from) || !w.Before(to) {
					continue
				}
				c := SeriesWeek{DemandKey{SKU: vs.SKU, Location: vs.Location, Channel: ChannelAll}, w}
				if bs, seen := bestStart[c]; !seen || v.Start.After(bs) || (v.Start.Equal(bs) && v.ID > bestID[c]) {
					best[c], bestID[c], bestStart[c] = qty, v.ID, v.Start
				}
			}
		}
	}
	used := map[string]bool{}
	for _, id := range bestID {
		used[id] = true
	}
	return best, len(used)
}

// EventWeight is an event's share of the week starting at weekStart: the days of [start, end)
// that fall in the week over 7, times its intensity (clamped to [0, 1]; nil is 1). The forecasting
// engine and the change history both weigh events with it.
func EventWeight(start, end time.Time, intensity *float64, weekStart time.Time) float64 {
	a, b := start, end
	if weekStart.After(a) {
		a = weekStart
	}
	if we := weekStart.Add(weekDuration); we.Before(b) {
		b = we
	}
	if !b.After(a) {
		return 0
	}
	w := float64(b.Sub(a)) / float64(weekDuration)
	if intensity != nil {
		w *= min(max(*intensity, 0), 1)
	}
	return w
}

// WeekWeight is EventWeight of e.
func (e *ExternalEvent) WeekWeight(weekStart time.Time) float64 {
	var intensity *float64
	if e.Value != nil {
		intensity = e.Value.Intensity
	}
	return EventWeight(e.StartsAt, e.EndsAt, intensity, weekStart)
}
