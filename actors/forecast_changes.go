package actors

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics/forecast"
)

// eventChange is an event write whose effect on the forecast is recorded in the change history.
type eventChange struct {
	typ      string
	old, new *supplyplan.ExternalEvent
	actor    string
	at       time.Time
}

// changeRecorder batches event changes per tenant and records their forecast effect in the
// background, a moment after the last change (so a bulk of event writes costs one forecast run).
type changeRecorder struct {
	sys     *System
	mu      sync.Mutex
	pending map[string][]eventChange
	timers  map[string]*time.Timer
	wg      sync.WaitGroup
	closed  bool
	delay   time.Duration
}

// maxChangeSeries bounds the series one change entry forecasts.
const maxChangeSeries = 200

func newChangeRecorder(sys *System) *changeRecorder {
	return &changeRecorder{sys: sys, pending: map[string][]eventChange{}, timers: map[string]*time.Timer{}, delay: 500 * time.Millisecond}
}

func (c *changeRecorder) add(org string, ch eventChange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.pending[org] = append(c.pending[org], ch)
	if t := c.timers[org]; t != nil {
		t.Reset(c.delay)
		return
	}
	c.wg.Add(1)
	c.timers[org] = time.AfterFunc(c.delay, func() {
		defer c.wg.Done()
		c.mu.Lock()
		batch := c.pending[org]
		delete(c.pending, org)
		delete(c.timers, org)
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := c.record(ctx, org, batch); err != nil {
			c.sys.log.Warn("forecast change history not recorded", "org", org, "changes", len(batch), "err", err)
		}
	})
}

// close records what is pending now and waits.
func (c *changeRecorder) close() {
	c.mu.Lock()
	c.closed = true
	for _, t := range c.timers {
		t.Reset(0)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// eventWeight is an event's share of week ws: overlapping days / 7 × intensity (as the engine).
func eventWeight(e *supplyplan.ExternalEvent, ws time.Time) float64 {
	a, b := e.StartsAt, e.EndsAt
	if ws.After(a) {
		a = ws
	}
	if we := ws.Add(week); we.Before(b) {
		b = we
	}
	if !b.After(a) {
		return 0
	}
	w := float64(b.Sub(a)) / float64(week)
	if e.Value != nil && e.Value.Intensity != nil {
		w *= min(max(*e.Value.Intensity, 0), 1)
	}
	return w
}

// record computes, for each change, the 13-week forecast total of the series the event touches now
// and as it was (without the new version of the event, with the old one), and journals an entry
// for every change that moved a forecast.
func (c *changeRecorder) record(ctx context.Context, org string, batch []eventChange) error {
	s := c.sys
	if s.cfg.Demand == nil {
		return nil
	}
	const horizon = supplyplan.DefaultHorizonWeeks
	opt := forecast.Options{Horizon: horizon, Point: forecast.PointMean}
	var entries []supplyplan.ChangeEntry
	for _, ch := range batch {
		ref := ch.new
		if ref == nil {
			ref = ch.old
		}
		keys, err := s.fc.seriesKeys(ctx, org, ref.ProductMasterID, ref.LocationID, supplyplan.ChannelAll)
		if err != nil {
			return err
		}
		if ch.old != nil && ch.new != nil && (ch.old.ProductMasterID != ch.new.ProductMasterID || ch.old.LocationID != ch.new.LocationID) {
			more, err := s.fc.seriesKeys(ctx, org, ch.old.ProductMasterID, ch.old.LocationID, supplyplan.ChannelAll)
			if err != nil {
				return err
			}
			keys = append(keys, more...)
		}
		if len(keys) > maxChangeSeries {
			keys = keys[:maxChangeSeries]
		}
		res, _, err := s.fc.run(ctx, org, keys, opt, time.Time{})
		if err != nil {
			return err
		}
		ix, ev, dv, err := s.fc.index(ctx, org)
		if err != nil {
			return err
		}
		lifts, err := s.fc.liftModel(ctx, org, supplyplan.WeekStart(time.Now()), ix, ev, dv)
		if err != nil {
			return err
		}
		var now, before float64
		counted := 0
		for i, k := range keys {
			if res[i].NoHistory {
				continue
			}
			counted++
			for _, pd := range res[i].Result.Periods {
				now += pd.Quantity
				// The week as it was: drop the event's current part, add its old one.
				add, mul := 0.0, 1.0
				for _, e := range pd.Events {
					if e.ID == ref.ID {
						continue
					}
					if x, ok := ix.byID[e.ID]; ok && x.Stacking() == supplyplan.StackAdditive {
						add += e.Weight * e.LiftPct
					} else {
						mul *= 1 + e.Weight*e.LiftPct
					}
				}
				if old := ch.old; old != nil && old.AppliesTo(k.SKU, k.Location) {
					if w := eventWeight(old, pd.WeekStart); w > 0 {
						lift := 0.0
						if old.Value != nil && old.Value.LiftPct != nil {
							lift = *old.Value.LiftPct
						} else if lifts != nil {
							occ := forecast.FromExternalEvent(*old)
							lift = lifts.Estimate(&occ, seriesKey(k)).LiftPct
						}
						if old.Stacking() == supplyplan.StackAdditive {
							add += w * lift
						} else {
							mul *= 1 + w*lift
						}
					}
				}
				m := math.Max((1+add)*mul, 0.01)
				if pd.Multiplier > 0 {
					before += pd.Quantity * m / pd.Multiplier
				} else {
					before += pd.Baseline * m
				}
			}
		}
		if counted == 0 || math.Abs(now-before) < 0.005 {
			continue
		}
		prev, next := round2(before), round2(now)
		e := supplyplan.NewChange(ch.typ, ch.actor, fmt.Sprintf("event %q (%s) %s", ref.Name, ref.Type, changeVerb(ch.typ)), &prev, &next, ch.at)
		e.EventID, e.ProductMasterID, e.LocationID, e.HorizonWeeks, e.SeriesCount = ref.ID, ref.ProductMasterID, ref.LocationID, horizon, counted
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil
	}
	_, err := tenantTx(ctx, s, org, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		var recs []supplyplan.Record
		for _, e := range entries {
			recs = append(recs, st.AddChange(e)...)
		}
		return struct{}{}, recs, nil
	})
	return err
}

func changeVerb(typ string) string {
	switch typ {
	case supplyplan.ChangeEventCreated:
		return "created"
	case supplyplan.ChangeEventUpdated:
		return "updated"
	}
	return "deleted"
}
