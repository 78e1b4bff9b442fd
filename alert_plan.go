package supplyplan

import (
	"slices"
	"time"
)

// The decisions of one alert evaluation of a tenant. The evaluator (package actors) gathers the
// inputs (a copy of the tenant's stock, demand history, forecasts), runs EvaluateTenant, passes the
// observations through the cooldown gate, and records what PlanFirings returns.

// HistoryFrom is the first week of demand history an evaluation at now reads: the longest window of
// a rule, plus two weeks.
func (th AlertThresholds) HistoryFrom(now time.Time) time.Time {
	weeks := max(th.RateWeeks, th.SlowMovingWeeks, th.SpikeBaselineWeeks, th.DeviationBiasWeeks) + 2
	return WeekStart(now).AddDate(0, 0, -7*weeks)
}

// LeadTimeOf is a product's lead time in days: its suppliers' (LeadTimes), or the default.
func (th AlertThresholds) LeadTimeOf(leadTimes map[string]int, product string) int {
	if d, ok := leadTimes[product]; ok {
		return d
	}
	return th.DefaultLeadTimeDays
}

// ForecastHorizon is how many weeks of forecast the stock rules need: the stockout horizon, and
// the longest lead time (of a product, or the default) in weeks.
func (th AlertThresholds) ForecastHorizon(leadTimes map[string]int) int {
	horizon := th.StockoutHorizonWeeks
	for _, d := range leadTimes {
		horizon = max(horizon, (d+6)/7)
	}
	return max(horizon, (th.DefaultLeadTimeDays+6)/7)
}

// TenantEval is what one evaluation of a tenant reads.
type TenantEval struct {
	Products  map[string]*Product
	Levels    []*InventoryLevel // sorted by sku then location
	LeadTimes map[string]int    // see TenantState.LeadTimes
	// Inbound and Promised are EvalItem's InboundDue and Promised by InventoryKey
	// (TenantState.LowATPInputs).
	Inbound  map[string]float64
	Promised map[string]float64
	// History is the demand of every channel together of each sku-location (ChannelAll keys);
	// Forecasts their forecasts from this week (absent: the rules use moving averages).
	History   map[DemandKey][]WeekValue
	Forecasts map[DemandKey]SeriesForecast
	// Series are the stored series; SeriesHistory their demand; LastWeek the forecasts of last
	// week made before it.
	Series        []DemandKey
	SeriesHistory map[DemandKey][]WeekValue
	LastWeek      map[DemandKey]SeriesForecast
}

// EvaluateTenant returns every condition of a tenant at now: those of each sku-location
// (EvaluateItem) then of each stored series (EvaluateSeries). stop, when not nil, is asked every
// 1,024 sku-locations; when it answers true evaluation ends early and ok is false.
func (th AlertThresholds) EvaluateTenant(in TenantEval, now time.Time, stop func() bool) (conds []Condition, ok bool) {
	for i, l := range in.Levels {
		key := DemandKey{SKU: l.SKU, Location: l.LocationID, Channel: ChannelAll}
		it := EvalItem{Product: in.Products[l.SKU], Level: l, LeadTimeDays: th.LeadTimeOf(in.LeadTimes, l.SKU),
			InboundDue: in.Inbound[InventoryKey(l.SKU, l.LocationID)], Promised: in.Promised[InventoryKey(l.SKU, l.LocationID)],
			History: in.History[key]}
		if fc, ok := in.Forecasts[key]; ok {
			it.Forecast = &fc
		}
		conds = th.EvaluateItem(it, now, conds)
		if i%1024 == 1023 && stop != nil && stop() {
			return conds, false
		}
	}
	for _, k := range in.Series {
		s := EvalSeries{Key: k, Product: in.Products[k.SKU], History: in.SeriesHistory[k]}
		if fc, ok := in.LastWeek[k]; ok {
			s.LastWeek = &fc
		}
		conds = th.EvaluateSeries(s, now, conds)
	}
	return conds, true
}

// IsAlertKind reports whether k is an alert type (the other condition kinds are webhook-only
// demand_signal.* events).
func IsAlertKind(k string) bool { return slices.Contains(AlertKinds, AlertKind(k)) }

// Observe keeps the conditions that take part in an evaluation under c (the alert types it
// enables, and every webhook-only signal) and returns their gate observations and the conditions
// by key.
func (c AlertConfig) Observe(conds []Condition) ([]GateObservation, map[string]Condition) {
	byKey := map[string]Condition{}
	obs := make([]GateObservation, 0, len(conds))
	for _, cd := range conds {
		if IsAlertKind(cd.Key.Kind) && !c.AlertTypes[AlertKind(cd.Key.Kind)] {
			continue
		}
		k := cd.Key.String()
		byKey[k] = cd
		obs = append(obs, GateObservation{Key: k, State: cd.State})
	}
	return obs, byKey
}

// Firing is what one fired condition becomes: an alert (with the destinations it goes to), or a
// webhook-only demand_signal.* event.
type Firing struct {
	Alert *Alert
	Event *DomainEvent
}

// PlanFirings turns the keys the gate fired into alerts and events, most severe (then most
// valuable) first; keys is sorted in place. cfg is the tenant's configuration as stored now (its
// destinations). Past maxDelivered alerts sent (0: no cap) the rest stay in history, suppressed
// and without destinations, so that a first import does not send thousands of messages.
func PlanFirings(org string, keys []string, byKey map[string]Condition, cfg AlertConfig, maxDelivered int, stamp time.Time) []Firing {
	slices.SortStableFunc(keys, func(x, y string) int {
		cx, cy := byKey[x], byKey[y]
		if r := SeverityRank(cx.Severity) - SeverityRank(cy.Severity); r != 0 {
			return r
		}
		vx, vy := 0.0, 0.0
		if cx.Value != nil {
			vx = *cx.Value
		}
		if cy.Value != nil {
			vy = *cy.Value
		}
		return cmpFloat(vy, vx)
	})
	var out []Firing
	sent := 0
	for _, k := range keys {
		c, ok := byKey[k]
		if !ok {
			continue
		}
		if IsAlertKind(c.Key.Kind) {
			dcfg := cfg
			if maxDelivered > 0 && sent >= maxDelivered {
				dcfg.Destinations = nil
			}
			al := NewAlert(dcfg, AlertKind(c.Key.Kind), c.Severity, c.Message, c.Key.Product,
				c.Key.Location, c.Key.Channel, "evaluation", c.Value, stamp)
			if dcfg.Destinations == nil {
				al.Suppressed = true
			} else {
				sent++
			}
			out = append(out, Firing{Alert: &al})
			continue
		}
		ev := DomainEvent{ID: NewID("evt"), Type: c.Key.Kind, OrganizationID: org, Timestamp: stamp, Data: c.Data}
		out = append(out, Firing{Event: &ev})
	}
	return out
}
