package actors

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics/forecast"
)

// changeRecorder fills in the forecast figures of change-history entries. Every event write
// journals its entry in the same record as the change (TenantState.EventChange); an entry whose
// event touches its forecast weeks is written PENDING, and this recorder computes its previous
// and new totals a moment later and writes them as an update of the same entry. At most one fill
// runs per tenant; writes arriving meanwhile are taken by its next round, so a burst of writes
// costs a few forecast runs, not one per write. Entries still pending at shutdown (or at a
// crash) are filled after the next start.
type changeRecorder struct {
	svc     *Forecasts
	mu      sync.Mutex
	running map[string]bool
	again   map[string]bool
	wg      sync.WaitGroup
	closed  bool
	stop    chan struct{}
	delay   time.Duration // gathers a burst of writes into one round
	retry   time.Duration // wait after a failed round
}

// Bounds of one fill round.
const (
	maxChangeSeries = 200 // series one entry forecasts (the first ones of its scope, by id)
	changeBatch     = 256 // entries computed per transaction
)

func newChangeRecorder(svc *Forecasts) *changeRecorder {
	return &changeRecorder{svc: svc, running: map[string]bool{}, again: map[string]bool{}, stop: make(chan struct{}),
		delay: 200 * time.Millisecond, retry: 5 * time.Second}
}

// schedule makes sure a fill round runs for org soon.
func (c *changeRecorder) schedule(org string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.running[org] {
		c.again[org] = true
		return
	}
	c.running[org] = true
	c.wg.Add(1)
	go c.loop(org)
}

func (c *changeRecorder) loop(org string) {
	defer c.wg.Done()
	ctx, cancel := context.WithCancel(background(context.Background()))
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	wait := c.delay
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		c.mu.Lock()
		c.again[org] = false
		c.mu.Unlock()
		wait = c.delay
		if err := c.fill(ctx, org); err != nil {
			if ctx.Err() != nil {
				return
			}
			if movedAway(err) {
				// Another node serves the organization (distributed mode): its owner computes the
				// figures when it restores the partition (Open's restore hook), so the round is
				// not retried; retrying went on every 5 s for as long as the organization was
				// elsewhere (at start, Open schedules every organization the platform knows, on
				// every node). A round scheduled meanwhile (a restore that gave the organization
				// back) still runs.
				c.svc.core.log.Debug("forecast change history: organization served by another node", "org", org, "err", err)
			} else {
				c.svc.core.log.Warn("forecast change history: figures not computed yet", "org", org, "err", err)
				wait = c.retry
				c.mu.Lock()
				c.again[org] = true
				c.mu.Unlock()
			}
		}
		c.mu.Lock()
		if !c.again[org] || c.closed {
			delete(c.running, org)
			delete(c.again, org)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// close stops the rounds in progress and waits for them; pending entries stay pending in the
// journal.
func (c *changeRecorder) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.stop)
	c.mu.Unlock()
	c.wg.Wait()
}

// fill computes and writes the figures of every pending entry of org, oldest first.
func (c *changeRecorder) fill(ctx context.Context, org string) error {
	s := c.svc
	for {
		batch, err := tenantTx(ctx, s.core, org, func(st *supplyplan.TenantState) ([]*supplyplan.ChangeEntry, []supplyplan.Record, error) {
			return st.PendingChanges(changeBatch), nil, nil
		})
		if err != nil || len(batch) == 0 {
			return err
		}
		var keys *scopeKeys
		if s.demand != nil {
			all, err := s.fc.seriesKeys(ctx, org, "", "", supplyplan.ChannelAll)
			if err != nil {
				return err
			}
			keys = newScopeKeys(all)
		}
		figs := make([]supplyplan.ChangeFigures, len(batch))
		for i, e := range batch {
			if figs[i], err = c.effect(ctx, org, e, keys); err != nil {
				return err
			}
		}
		if _, err := tenantTx(ctx, s.core, org, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
			recs := make([]supplyplan.Record, 0, len(batch))
			for i, e := range batch {
				recs = append(recs, st.CompleteChange(e.ID, figs[i])...)
			}
			return struct{}{}, recs, nil
		}); err != nil {
			return err
		}
		if len(batch) < changeBatch {
			return nil
		}
	}
}

// effect computes the figures of a pending event entry (a stored entry: read, never changed):
// over the entry's forecast weeks (as of the week it was written) and the series the event
// touches, the forecast total with the event as it was before the change (previousTotal) and as
// it is after it (newTotal), every other event as it is now.
func (c *changeRecorder) effect(ctx context.Context, org string, e *supplyplan.ChangeEntry, scopes *scopeKeys) (supplyplan.ChangeFigures, error) {
	s := c.svc
	now := supplyplan.Now()
	f := supplyplan.ChangeFigures{UpdatedAt: &now}
	noHistory := func() (supplyplan.ChangeFigures, error) {
		f.EffectStatus = supplyplan.EffectNoHistory
		zero := supplyplan.Quantity(0)
		f.Delta = &zero
		return f, nil
	}
	var old, new *supplyplan.ExternalEvent
	if e.Pending != nil {
		old, new = e.Pending.Old, e.Pending.New
	}
	ref := new
	if ref == nil {
		ref = old
	}
	if scopes == nil || ref == nil {
		return noHistory()
	}
	keys := scopes.of(ref.ProductMasterID, ref.LocationID)
	if old != nil && new != nil && (old.ProductMasterID != new.ProductMasterID || old.LocationID != new.LocationID) {
		more := scopes.of(old.ProductMasterID, old.LocationID)
		seen := map[supplyplan.DemandKey]bool{}
		for _, k := range keys {
			seen[k] = true
		}
		for _, k := range more {
			if !seen[k] {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) > maxChangeSeries {
		keys = keys[:maxChangeSeries]
	}
	res, err := s.fc.run(ctx, org, keys, forecast.Options{Horizon: supplyplan.ChangeHorizonWeeks, Point: forecast.PointMean}, e.CreatedAt)
	if err != nil {
		return f, err
	}
	var lifts *forecast.LiftModel
	if learned := func(x *supplyplan.ExternalEvent) bool { return x != nil && (x.Value == nil || x.Value.LiftPct == nil) }; learned(old) || learned(new) {
		if lifts, _, err = s.fc.liftModel(ctx, org, supplyplan.WeekStart(e.CreatedAt)); err != nil {
			return f, err
		}
	}
	var before, after float64
	counted := 0
	for i, k := range keys {
		if res[i].NoHistory {
			continue
		}
		counted++
		for _, pd := range res[i].periods() {
			var others supplyplan.LiftStack
			for _, a := range pd.Events {
				if a.ID != ref.ID {
					others.Push(a.LiftPct, a.Weight, a.Additive)
				}
			}
			b, a := others, others
			pushVersion(&b, old, k, pd.WeekStart, lifts)
			pushVersion(&a, new, k, pd.WeekStart, lifts)
			before += pd.Baseline * b.Multiplier()
			after += pd.Baseline * a.Multiplier()
		}
	}
	if counted == 0 {
		return noHistory()
	}
	f.EffectStatus = supplyplan.EffectComputed
	f.SeriesCount = counted
	f.SetTotals(&before, &after)
	return f, nil
}

// scopeKeys files a tenant's series (channel ALL) by product and location, for one fill round.
type scopeKeys struct {
	all        []supplyplan.DemandKey
	byProduct  map[string][]supplyplan.DemandKey
	byLocation map[string][]supplyplan.DemandKey
}

func newScopeKeys(all []supplyplan.DemandKey) *scopeKeys {
	sk := &scopeKeys{all: all, byProduct: map[string][]supplyplan.DemandKey{}, byLocation: map[string][]supplyplan.DemandKey{}}
	for _, k := range all {
		sk.byProduct[k.SKU] = append(sk.byProduct[k.SKU], k)
		sk.byLocation[k.Location] = append(sk.byLocation[k.Location], k)
	}
	return sk
}

// of returns the series an event scope covers (a new slice), sorted as seriesKeys sorts them.
func (sk *scopeKeys) of(product, location string) []supplyplan.DemandKey {
	switch {
	case product != "" && location != "":
		var out []supplyplan.DemandKey
		for _, k := range sk.byProduct[product] {
			if k.Location == location {
				out = append(out, k)
			}
		}
		return out
	case product != "":
		return slices.Clone(sk.byProduct[product])
	case location != "":
		return slices.Clone(sk.byLocation[location])
	}
	return slices.Clone(sk.all)
}

// pushVersion adds an event version's part of week ws of series k to st (nothing when it does not
// apply): its given lift, or the one learned for the series.
func pushVersion(st *supplyplan.LiftStack, e *supplyplan.ExternalEvent, k supplyplan.DemandKey, ws time.Time, lifts *forecast.LiftModel) {
	if e == nil || !e.AppliesTo(k.SKU, k.Location) {
		return
	}
	w := e.WeekWeight(ws)
	if w <= 0 {
		return
	}
	lift := 0.0
	if e.Value != nil && e.Value.LiftPct != nil {
		lift = *e.Value.LiftPct
	} else if lifts != nil {
		occ := forecast.FromExternalEvent(*e)
		lift = lifts.Estimate(&occ, seriesKey(k)).LiftPct
	}
	st.Push(lift, w, e.Stacking() == supplyplan.StackAdditive)
}
