package actors

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/supplyplan/supplyplan"
)

// alertEvaluator evaluates tenants' alert conditions: after data changes (debounced, one run per
// tenant at a time, a change during a run asks for another) and on a schedule. A run reads a
// consistent copy of the tenant's stock from its actor, demand from the demand store and
// forecasts from the engine outside any actor, computes the conditions (root package), passes
// them through the cooldown and hysteresis gate, and records what fires in the tenant's outbound
// actor together with its deliveries.
type alertEvaluator struct {
	svc *Alerts
	cfg *AlertsConfig

	mu      sync.Mutex
	timers  map[string]*time.Timer
	running map[string]bool
	again   map[string]bool
	closed  bool
	sem     chan struct{}
	wg      sync.WaitGroup
	stop    chan struct{}
}

func newAlertEvaluator(svc *Alerts) *alertEvaluator {
	return &alertEvaluator{svc: svc, cfg: svc.cfg, timers: map[string]*time.Timer{}, running: map[string]bool{},
		again: map[string]bool{}, sem: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (a *alertEvaluator) start() {
	if a.cfg.EvalInterval < 0 {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		t := time.NewTicker(a.cfg.EvalInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				for _, id := range a.svc.core.orgs() {
					a.schedule(id)
				}
			case <-a.stop:
				return
			}
		}
	}()
}

func (a *alertEvaluator) close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	close(a.stop)
	for _, t := range a.timers {
		t.Stop()
	}
	a.mu.Unlock()
	a.wg.Wait()
}

// schedule asks for an evaluation of org after the debounce delay.
func (a *alertEvaluator) schedule(org string) { a.scheduleIn(org, a.cfg.EvalDebounce) }

// scheduleIn asks for an evaluation of org within d (an evaluation already scheduled or running
// covers the request).
func (a *alertEvaluator) scheduleIn(org string, d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	if a.running[org] {
		a.again[org] = true
		return
	}
	if _, ok := a.timers[org]; ok {
		return
	}
	a.timers[org] = time.AfterFunc(d, func() { a.run(org) })
}

func (a *alertEvaluator) run(org string) {
	a.mu.Lock()
	delete(a.timers, org)
	if a.closed || a.running[org] {
		a.mu.Unlock()
		return
	}
	a.running[org] = true
	a.wg.Add(1)
	a.mu.Unlock()
	defer a.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-a.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	rep, err := a.evaluate(ctx, org)
	cancel()
	if err != nil && ctx.Err() == nil {
		a.svc.core.log.Warn("alert evaluation failed", "org", org, "err", err)
	} else if err == nil {
		a.svc.core.log.Debug("alerts evaluated", "org", org, "skuLocations", rep.SKULocations, "conditions", rep.Conditions,
			"fired", rep.Fired, "took", rep.Took)
	}
	a.mu.Lock()
	a.running[org] = false
	again := a.again[org]
	delete(a.again, org)
	a.mu.Unlock()
	if again {
		a.schedule(org)
	}
}

func (a *alertEvaluator) evaluateNow(ctx context.Context, org string) (supplyplan.EvalReport, error) {
	return a.evaluate(ctx, org)
}

// tenantSnapshot is what evaluation reads from a tenant's actor. Values in TenantState maps are
// never mutated in place, so copying the maps of pointers is a consistent snapshot.
type tenantSnapshot struct {
	products  map[string]*supplyplan.Product
	levels    []*supplyplan.InventoryLevel
	leadTimes map[string]int
	inbound   map[string]float64
}

func (a *alertEvaluator) evaluate(ctx context.Context, org string) (supplyplan.EvalReport, error) {
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return supplyplan.EvalReport{}, ctx.Err()
	}
	defer func() { <-a.sem }()
	start := time.Now()
	rep := supplyplan.EvalReport{OrganizationID: org}
	th := a.cfg.Thresholds
	cfg, err := outboundTx(ctx, a.svc.core, org, func(st *supplyplan.OutboundState) (supplyplan.AlertConfig, []supplyplan.Record, error) {
		return st.AlertConfig(), nil, nil
	})
	if err != nil {
		return rep, err
	}
	if !cfg.Enabled {
		rep.Skipped = "alerts are disabled in the configuration"
		return rep, nil
	}
	now := time.Now().UTC()
	snap, err := tenantTx(ctx, a.svc.core, org, func(st *supplyplan.TenantState) (tenantSnapshot, []supplyplan.Record, error) {
		lt := st.LeadTimes()
		leadOf := func(p string) int {
			if d, ok := lt[p]; ok {
				return d
			}
			return th.DefaultLeadTimeDays
		}
		sn := tenantSnapshot{products: make(map[string]*supplyplan.Product, len(st.Products)), leadTimes: lt,
			levels: make([]*supplyplan.InventoryLevel, 0, len(st.Inventory))}
		for id, p := range st.Products {
			sn.products[id] = p
		}
		for _, l := range st.Inventory {
			sn.levels = append(sn.levels, l)
		}
		sn.inbound = st.InboundWithin(func(p string) time.Time { return now.AddDate(0, 0, leadOf(p)) })
		return sn, nil, nil
	})
	if err != nil {
		return rep, err
	}
	leadOf := func(p string) int {
		if d, ok := snap.leadTimes[p]; ok {
			return d
		}
		return th.DefaultLeadTimeDays
	}
	slices.SortFunc(snap.levels, func(x, y *supplyplan.InventoryLevel) int {
		return compareStrings(x.SKU+"\x00"+x.LocationID, y.SKU+"\x00"+y.LocationID)
	})
	rep.SKULocations = len(snap.levels)

	// Demand: the total of every channel per sku-location, and every stored series.
	weeks := max(th.RateWeeks, th.SlowMovingWeeks, th.SpikeBaselineWeeks, th.DeviationBiasWeeks) + 2
	from := supplyplan.WeekStart(now).AddDate(0, 0, -7*weeks)
	itemKeys := make([]supplyplan.DemandKey, len(snap.levels))
	for i, l := range snap.levels {
		itemKeys[i] = supplyplan.DemandKey{SKU: l.SKU, Location: l.LocationID, Channel: supplyplan.ChannelAll}
	}
	var hist, seriesHist map[supplyplan.DemandKey][]supplyplan.WeekValue
	var seriesKeys []supplyplan.DemandKey
	if d := a.svc.demand; d != nil {
		if hist, err = d.SeriesBatch(ctx, org, itemKeys, from, time.Time{}); err != nil {
			return rep, err
		}
		if seriesKeys, err = d.Keys(ctx, org); err != nil {
			return rep, err
		}
		var extra []supplyplan.DemandKey
		for _, k := range seriesKeys {
			if k.Channel != supplyplan.ChannelAll {
				extra = append(extra, k)
			}
		}
		seriesHist = hist
		if len(extra) > 0 {
			more, err := d.SeriesBatch(ctx, org, extra, from, time.Time{})
			if err != nil {
				return rep, err
			}
			seriesHist = make(map[supplyplan.DemandKey][]supplyplan.WeekValue, len(hist)+len(more))
			for k, v := range hist {
				seriesHist[k] = v
			}
			for k, v := range more {
				seriesHist[k] = v
			}
		}
	}
	rep.Series = len(seriesKeys)

	// Forecasts from the engine (in batches, through its cache): over the longest lead time from
	// this week for the stock rules, and of last week made before it for the interval check.
	// Without an engine, or for a series it cannot forecast, the rules use the moving average.
	last := supplyplan.WeekStart(now).AddDate(0, 0, -7)
	var itemFc, lastFc map[supplyplan.DemandKey]supplyplan.SeriesForecast
	if f := a.svc.forecaster; f != nil && len(hist) > 0 {
		horizon := th.StockoutHorizonWeeks
		for _, d := range snap.leadTimes {
			horizon = max(horizon, (d+6)/7)
		}
		horizon = max(horizon, (th.DefaultLeadTimeDays+6)/7)
		var withHistory []supplyplan.DemandKey
		for _, k := range itemKeys {
			if len(hist[k]) > 0 {
				withHistory = append(withHistory, k)
			}
		}
		// Background work: one core, so that API requests keep the other.
		bg := background(ctx)
		if itemFc, err = supplyplan.ForecastMany(bg, f, org, withHistory, horizon, now); err != nil {
			a.svc.core.log.Warn("alert evaluation without forecasts", "org", org, "err", err)
		}
		if lastFc, err = supplyplan.ForecastMany(bg, f, org, seriesKeys, 1, last); err != nil {
			a.svc.core.log.Warn("alert evaluation without last-week forecasts", "org", org, "err", err)
		}
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
	var conds []supplyplan.Condition
	for i, l := range snap.levels {
		p := snap.products[l.SKU]
		it := supplyplan.EvalItem{Product: p, Level: l, LeadTimeDays: leadOf(l.SKU),
			InboundDue: snap.inbound[supplyplan.InventoryKey(l.SKU, l.LocationID)], History: hist[itemKeys[i]]}
		if fc, ok := itemFc[itemKeys[i]]; ok {
			it.Forecast = &fc
		}
		conds = th.EvaluateItem(it, now, conds)
		if i%1024 == 1023 && ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
	for _, k := range seriesKeys {
		s := supplyplan.EvalSeries{Key: k, Product: snap.products[k.SKU], History: seriesHist[k]}
		if fc, ok := lastFc[k]; ok {
			s.LastWeek = &fc
		}
		conds = th.EvaluateSeries(s, now, conds)
	}

	// Only the enabled alert types take part (webhook-only signals always do).
	byKey := map[string]supplyplan.Condition{}
	obs := make([]supplyplan.GateObservation, 0, len(conds))
	for _, c := range conds {
		if isAlertKind(c.Key.Kind) && !cfg.AlertTypes[supplyplan.AlertKind(c.Key.Kind)] {
			continue
		}
		k := c.Key.String()
		byKey[k] = c
		obs = append(obs, supplyplan.GateObservation{Key: k, State: c.State})
	}
	rep.Conditions = len(obs)
	fired, events, err := a.record(ctx, org, cfg, obs, byKey, now)
	if err != nil {
		return rep, err
	}
	rep.Fired, rep.Events = fired, events
	rep.Took = time.Since(start)
	rep.TookMs = float64(rep.Took.Microseconds()) / 1000
	return rep, nil
}

func isAlertKind(k string) bool {
	return slices.Contains(supplyplan.AlertKinds, supplyplan.AlertKind(k))
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// record passes the observations through the gate and stores what fires: alerts (with their
// deliveries) and demand_signal.* events to the subscribed endpoints.
func (a *alertEvaluator) record(ctx context.Context, org string, cfg supplyplan.AlertConfig, obs []supplyplan.GateObservation,
	byKey map[string]supplyplan.Condition, now time.Time) (int, int, error) {
	gate := a.cfg.Gate
	var firedKeys []string
	if gate != nil {
		var err error
		if firedKeys, err = gate.Evaluate(ctx, org, obs, cfg.Cooldown(), now); err != nil {
			return 0, 0, err
		}
		if len(firedKeys) == 0 {
			return 0, 0, nil
		}
	}
	type result struct {
		alerts, events int
		ds             []supplyplan.Delivery
	}
	pol := a.svc.webhooks.policies()
	stamp := now.Truncate(time.Millisecond)
	r, err := outboundTx(ctx, a.svc.core, org, func(st *supplyplan.OutboundState) (result, []supplyplan.Record, error) {
		var recs []supplyplan.Record
		keys := firedKeys
		if gate == nil {
			var changes map[string]*supplyplan.GateEntry
			keys, changes = supplyplan.ApplyGate(st.Gate, obs, cfg.Cooldown(), now)
			for k, e := range changes {
				if e == nil {
					recs = append(recs, supplyplan.Del(supplyplan.KindAlertGate, k))
				} else {
					recs = append(recs, supplyplan.Put(supplyplan.KindAlertGate, k, e))
				}
			}
		}
		var res result
		cur := st.AlertConfig() // destinations as stored now
		// The most severe (then most valuable) alerts are sent; past the cap the rest stay in
		// history, suppressed, so that a first import does not send thousands of messages.
		slices.SortStableFunc(keys, func(x, y string) int {
			cx, cy := byKey[x], byKey[y]
			if r := supplyplan.SeverityRank(cx.Severity) - supplyplan.SeverityRank(cy.Severity); r != 0 {
				return r
			}
			vx, vy := 0.0, 0.0
			if cx.Value != nil {
				vx = *cx.Value
			}
			if cy.Value != nil {
				vy = *cy.Value
			}
			return compareFloat(vy, vx)
		})
		sent := 0
		capN := a.cfg.Thresholds.MaxDeliveredPerEvaluation
		for _, k := range keys {
			c, ok := byKey[k]
			if !ok {
				continue
			}
			if isAlertKind(c.Key.Kind) {
				dcfg := cur
				if capN > 0 && sent >= capN {
					dcfg.Destinations = nil
				}
				al := supplyplan.NewAlert(dcfg, supplyplan.AlertKind(c.Key.Kind), c.Severity, c.Message, c.Key.Product,
					c.Key.Location, c.Key.Channel, "evaluation", c.Value, stamp)
				if dcfg.Destinations == nil {
					al.Suppressed = true
				} else {
					sent++
				}
				ds, arecs, err := st.RecordAlert(al, pol, stamp)
				if err != nil {
					return result{}, nil, err
				}
				res.alerts++
				res.ds = append(res.ds, ds...)
				recs = append(recs, arecs...)
				continue
			}
			ev := supplyplan.DomainEvent{ID: supplyplan.NewID("evt"), Type: c.Key.Kind, OrganizationID: org, Timestamp: stamp, Data: c.Data}
			ds, erecs, err := st.AcceptEvent(ev, pol, stamp)
			if err != nil {
				return result{}, nil, err
			}
			res.events++
			res.ds = append(res.ds, ds...)
			recs = append(recs, erecs...)
		}
		return res, recs, nil
	})
	if err != nil {
		return 0, 0, err
	}
	a.svc.webhooks.schedule(org, r.ds)
	return r.alerts, r.events, nil
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
