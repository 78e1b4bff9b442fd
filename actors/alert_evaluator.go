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
	waiting map[string]time.Time // org -> when its evaluation first waited for its import jobs
	// waitMax bounds how long an evaluation waits for a tenant's import jobs (importWaitMax).
	waitMax time.Duration
	closed  bool
	sem     chan struct{}
	wg      sync.WaitGroup
	stop    chan struct{}
}

func newAlertEvaluator(svc *Alerts) *alertEvaluator {
	return &alertEvaluator{svc: svc, cfg: svc.cfg, timers: map[string]*time.Timer{}, running: map[string]bool{},
		again: map[string]bool{}, waiting: map[string]time.Time{}, waitMax: importWaitMax, sem: make(chan struct{}, 1), stop: make(chan struct{})}
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

// importWaitMax bounds how long an evaluation waits for a tenant's import jobs (run).
const importWaitMax = 30 * time.Second

func (a *alertEvaluator) run(org string) {
	importing := a.svc.imports != nil && a.svc.imports.m.busy(org)
	a.mu.Lock()
	delete(a.timers, org)
	if a.closed || a.running[org] {
		a.mu.Unlock()
		return
	}
	// While the tenant's import jobs are queued or running, the evaluation waits for them, looking
	// again every EvalDebounce, for at most waitMax: it would read a half-imported history, and
	// each job's completion would ask for another full evaluation (every series of the tenant
	// read from the demand store) while the next job is being written.
	if importing {
		since, ok := a.waiting[org]
		if !ok {
			since = time.Now()
			a.waiting[org] = since
		}
		if time.Since(since) < a.waitMax {
			a.timers[org] = time.AfterFunc(a.cfg.EvalDebounce, func() { a.run(org) })
			a.mu.Unlock()
			return
		}
	}
	delete(a.waiting, org)
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
	promised  map[string]float64
}

// evaluate gathers what the rules need outside any actor (the tenant's stock from its actor,
// demand from the demand store, forecasts from the engine), lets the domain decide
// (AlertThresholds.EvaluateTenant, AlertConfig.Observe), and records what the gate fires.
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
		sn := tenantSnapshot{products: make(map[string]*supplyplan.Product, len(st.Products)), leadTimes: lt,
			levels: make([]*supplyplan.InventoryLevel, 0, len(st.Inventory))}
		for id, p := range st.Products {
			sn.products[id] = p
		}
		for _, l := range st.Inventory {
			sn.levels = append(sn.levels, l)
		}
		// the ledger's available-to-promise at the end of each product's lead time (lowAtp)
		sn.inbound, sn.promised = st.LowATPInputs(func(p string) time.Time { return now.AddDate(0, 0, th.LeadTimeOf(lt, p)) }, now)
		return sn, nil, nil
	})
	if err != nil {
		return rep, err
	}
	slices.SortFunc(snap.levels, func(x, y *supplyplan.InventoryLevel) int {
		return compareStrings(x.SKU+"\x00"+x.LocationID, y.SKU+"\x00"+y.LocationID)
	})
	rep.SKULocations = len(snap.levels)
	in := supplyplan.TenantEval{Products: snap.products, Levels: snap.levels, LeadTimes: snap.leadTimes, Inbound: snap.inbound,
		Promised: snap.promised}

	// Demand: the total of every channel per sku-location, and every stored series.
	from := th.HistoryFrom(now)
	itemKeys := make([]supplyplan.DemandKey, len(snap.levels))
	for i, l := range snap.levels {
		itemKeys[i] = supplyplan.DemandKey{SKU: l.SKU, Location: l.LocationID, Channel: supplyplan.ChannelAll}
	}
	if d := a.svc.demand; d != nil {
		if in.History, err = d.SeriesBatch(ctx, org, itemKeys, from, time.Time{}); err != nil {
			return rep, err
		}
		if in.Series, err = d.Keys(ctx, org); err != nil {
			return rep, err
		}
		var extra []supplyplan.DemandKey
		for _, k := range in.Series {
			if k.Channel != supplyplan.ChannelAll {
				extra = append(extra, k)
			}
		}
		in.SeriesHistory = in.History
		if len(extra) > 0 {
			more, err := d.SeriesBatch(ctx, org, extra, from, time.Time{})
			if err != nil {
				return rep, err
			}
			in.SeriesHistory = make(map[supplyplan.DemandKey][]supplyplan.WeekValue, len(in.History)+len(more))
			for k, v := range in.History {
				in.SeriesHistory[k] = v
			}
			for k, v := range more {
				in.SeriesHistory[k] = v
			}
		}
	}
	rep.Series = len(in.Series)

	// Forecasts from the engine (in batches, through its cache): over the longest lead time from
	// this week for the stock rules, and of last week made before it for the interval check.
	// Without an engine, or for a series it cannot forecast, the rules use the moving average.
	last := supplyplan.WeekStart(now).AddDate(0, 0, -7)
	if f := a.svc.forecaster; f != nil && len(in.History) > 0 {
		var withHistory []supplyplan.DemandKey
		for _, k := range itemKeys {
			if len(in.History[k]) > 0 {
				withHistory = append(withHistory, k)
			}
		}
		// Background work: one core, so that API requests keep the other.
		bg := background(ctx)
		if in.Forecasts, err = supplyplan.ForecastMany(bg, f, org, withHistory, th.ForecastHorizon(snap.leadTimes), now); err != nil {
			a.svc.core.log.Warn("alert evaluation without forecasts", "org", org, "err", err)
		}
		if in.LastWeek, err = supplyplan.ForecastMany(bg, f, org, in.Series, 1, last); err != nil {
			a.svc.core.log.Warn("alert evaluation without last-week forecasts", "org", org, "err", err)
		}
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
	conds, ok := th.EvaluateTenant(in, now, func() bool { return ctx.Err() != nil })
	if !ok {
		return rep, ctx.Err()
	}

	// Only the enabled alert types take part (webhook-only signals always do).
	obs, byKey := cfg.Observe(conds)
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

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// record passes the observations through the gate and stores what fires (supplyplan.PlanFirings):
// alerts (with their deliveries) and demand_signal.* events to the subscribed endpoints.
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
		// Destinations as stored now.
		for _, f := range supplyplan.PlanFirings(org, keys, byKey, st.AlertConfig(), a.cfg.Thresholds.MaxDeliveredPerEvaluation, stamp) {
			if f.Alert != nil {
				ds, arecs, err := st.RecordAlert(*f.Alert, pol, stamp)
				if err != nil {
					return result{}, nil, err
				}
				res.alerts++
				res.ds = append(res.ds, ds...)
				recs = append(recs, arecs...)
				continue
			}
			ds, erecs, err := st.AcceptEvent(*f.Event, pol, stamp)
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
