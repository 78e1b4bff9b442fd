package actors

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/supplyplan/supplyplan"
)

// eventRelay moves domain events from the outboxes they were written to (the tenant's or the
// platform's journal, in the same entry as the change they announce) to the outbound actor of
// their organization, which turns them into deliveries; only then is the outbox entry removed.
// The bus makes this immediate; a sweep at start and every SweepInterval catches what the bus
// could not carry (a crash, a full queue). Accepting an event twice creates no second delivery.
type eventRelay struct {
	w   *Webhooks
	cfg *OutboundConfig

	ch chan relayItem
	// dropped is set when the queue was full and an event was left to the sweep: the next queued
	// event waits for a sweep, so that it does not overtake the one left behind (deliveries to a
	// target keep the order their events were accepted in).
	dropped atomic.Bool
	closing chan struct{}
	once    sync.Once
	started bool
	wg      sync.WaitGroup
}

type relayItem struct {
	fromPlatform bool
	fromLoopRuns bool   // the event waits in the organization's loop runtime outbox
	sourceOrg    string // the tenant whose outbox holds the event
	ev           supplyplan.DomainEvent
}

func newEventRelay(w *Webhooks) *eventRelay {
	return &eventRelay{w: w, cfg: w.cfg, ch: make(chan relayItem, 4096), closing: make(chan struct{})}
}

// notify hands a published event to the relay without blocking; a full queue leaves it to the
// next sweep.
func (r *eventRelay) notify(e supplyplan.DomainEvent) {
	it := relayItem{sourceOrg: e.OrganizationID, ev: e}
	if e.OrganizationID == supplyplan.PlatformOwner || e.Type == supplyplan.EventSubscriptionUpdated {
		it.fromPlatform = true
	} else if isLoopRunEvent(e.Type) {
		it.fromLoopRuns = true
	}
	r.queue(it)
}

func (r *eventRelay) queue(it relayItem) {
	select {
	case r.ch <- it:
	default:
		r.dropped.Store(true)
	}
}

func (r *eventRelay) start() {
	r.started = true
	r.wg.Add(1)
	go r.loop()
}

func (r *eventRelay) close() {
	r.once.Do(func() { close(r.closing) })
	if r.started {
		r.wg.Wait()
	}
}

func (r *eventRelay) loop() {
	defer r.wg.Done()
	r.sweep()
	t := time.NewTicker(r.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case it := <-r.ch:
			batch := r.drain(it)
			if r.dropped.Swap(false) {
				r.sweep() // everything still in an outbox, oldest first, before newer events
			}
			r.moveAll(batch)
		case <-t.C:
			r.sweep()
			r.w.prune()
		case <-r.closing:
			return
		}
	}
}

// relayBatch is the most events moved together: one transaction of each owner's outbound actor
// accepts them and one of each outbox drops them, so that a burst of events (an import writes one
// per order) costs a few transactions, not two per event.
const relayBatch = 1000

// drain returns first and the events queued behind it, at most relayBatch, without waiting.
func (r *eventRelay) drain(first relayItem) []relayItem {
	batch := []relayItem{first}
	for len(batch) < relayBatch {
		select {
		case it := <-r.ch:
			batch = append(batch, it)
		default:
			return batch
		}
	}
	return batch
}

// sweep relays every event still in an outbox.
func (r *eventRelay) sweep() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range r.w.core.orgs() {
		evs, err := tenantTx(ctx, r.w.core, id, func(st *supplyplan.TenantState) ([]supplyplan.DomainEvent, []supplyplan.Record, error) {
			return st.PendingEventList(), nil, nil
		})
		if err != nil {
			r.w.core.log.Warn("read tenant outbox", "org", id, "err", err)
			continue
		}
		items := make([]relayItem, len(evs))
		for i, e := range evs {
			items[i] = relayItem{sourceOrg: id, ev: e}
		}
		r.moveAll(items)
	}
	r.w.core.loopRunsOutboxes(ctx, func(org string, evs []supplyplan.DomainEvent) {
		items := make([]relayItem, len(evs))
		for i, e := range evs {
			items[i] = relayItem{sourceOrg: org, fromLoopRuns: true, ev: e}
		}
		r.moveAll(items)
	})
	evs, err := platformTx(ctx, r.w.core, func(st *supplyplan.PlatformState) ([]supplyplan.DomainEvent, []supplyplan.Record, error) {
		return st.PendingEventList(), nil, nil
	})
	if err != nil {
		r.w.core.log.Warn("read platform outbox", "err", err)
		return
	}
	items := make([]relayItem, len(evs))
	for i, e := range evs {
		items[i] = relayItem{fromPlatform: true, ev: e}
	}
	r.moveAll(items)
}

// moveAll accepts events into their owners' outbound actors, then removes them from their
// outboxes, relayBatch at a time: for each owner, one transaction accepts its events in order; for
// each outbox, one transaction drops the events accepted.
func (r *eventRelay) moveAll(items []relayItem) {
	for len(items) > 0 {
		n := min(len(items), relayBatch)
		r.moveBatch(items[:n])
		items = items[n:]
	}
}

func (r *eventRelay) moveBatch(items []relayItem) {
	select {
	case <-r.closing:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := supplyplan.Now()
	pol := r.cfg.policies()
	var owners []string
	byOwner := map[string][]relayItem{}
	seen := map[string]bool{} // an event given twice (the bus and a sweep) is accepted once
	for _, it := range items {
		owner := it.ev.OrganizationID
		if owner == "" || seen[it.ev.ID] {
			continue
		}
		seen[it.ev.ID] = true
		if _, ok := byOwner[owner]; !ok {
			owners = append(owners, owner)
		}
		byOwner[owner] = append(byOwner[owner], it)
	}
	var done []relayItem // accepted (or whose owner is gone): to drop from their outboxes
	for _, owner := range owners {
		its := byOwner[owner]
		type accepted struct {
			ds []supplyplan.Delivery
			ok []relayItem
		}
		acc, err := outboundTx(ctx, r.w.core, owner, func(st *supplyplan.OutboundState) (accepted, []supplyplan.Record, error) {
			var a accepted
			var recs []supplyplan.Record
			for _, it := range its {
				ds, rs, err := r.accept(st, owner, it.ev, pol, now)
				if err != nil {
					r.w.core.log.Warn("relay event", "event", it.ev.ID, "type", it.ev.Type, "err", err)
					continue // stays in its outbox: the next sweep tries again
				}
				a.ds, recs, a.ok = append(a.ds, ds...), append(recs, rs...), append(a.ok, it)
			}
			return a, recs, nil
		})
		if err != nil {
			if supplyplan.ErrorCode(err) == supplyplan.ENOTFOUND {
				done = append(done, its...) // the organization is gone
				continue
			}
			r.w.core.log.Warn("relay events", "owner", owner, "events", len(its), "err", err)
			continue
		}
		r.w.deliveries.schedule(owner, acc.ds)
		done = append(done, acc.ok...)
	}
	r.dropFromOutboxes(ctx, done)
}

// accept creates the deliveries of one event in its owner's outbound state.
func (r *eventRelay) accept(st *supplyplan.OutboundState, owner string, e supplyplan.DomainEvent, pol supplyplan.Policies, now time.Time) ([]supplyplan.Delivery, []supplyplan.Record, error) {
	if owner == supplyplan.PlatformOwner {
		if e.Type == supplyplan.OpsPaymentFailed && r.cfg.OpsAlertURL != "" {
			return st.AcceptURLEvent(e, supplyplan.TargetURLChat, r.cfg.OpsAlertURL, pol.Webhook, now)
		}
		if url := supplyplan.MerchantEventURL(e); url != "" { // federation: to the merchant's webhook URL
			return st.AcceptURLEvent(e, supplyplan.TargetURL, url, pol.Webhook, now)
		}
		return nil, nil, nil
	}
	return st.AcceptEvent(e, pol, now)
}

// dropFromOutboxes removes relayed events from the outboxes holding them: one transaction per
// outbox.
func (r *eventRelay) dropFromOutboxes(ctx context.Context, items []relayItem) {
	if len(items) == 0 {
		return
	}
	var sources []string
	bySource := map[string][]string{}
	for _, it := range items {
		src := it.sourceOrg
		if it.fromPlatform {
			src = supplyplan.PlatformOwner
		}
		if it.fromLoopRuns {
			src = loopRunsOutboxPrefix + src
		}
		if src == "" {
			continue
		}
		if _, ok := bySource[src]; !ok {
			sources = append(sources, src)
		}
		bySource[src] = append(bySource[src], it.ev.ID)
	}
	for _, src := range sources {
		ids := bySource[src]
		drop := func(pending map[string]*supplyplan.DomainEvent) []supplyplan.Record {
			var recs []supplyplan.Record
			for _, id := range ids {
				if _, ok := pending[id]; ok {
					recs = append(recs, supplyplan.Del(supplyplan.KindPendingEvent, id))
				}
			}
			return recs
		}
		var err error
		if org, ok := strings.CutPrefix(src, loopRunsOutboxPrefix); ok {
			err = r.w.core.dropLoopRunsEvents(ctx, org, ids)
		} else if src == supplyplan.PlatformOwner {
			_, err = platformTx(ctx, r.w.core, func(st *supplyplan.PlatformState) (struct{}, []supplyplan.Record, error) {
				return struct{}{}, drop(st.PendingEvents), nil
			})
		} else {
			_, err = tenantTx(ctx, r.w.core, src, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
				return struct{}{}, drop(st.PendingEvents), nil
			})
		}
		if err != nil && supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
			r.w.core.log.Warn("remove relayed events from outbox", "outbox", src, "events", len(ids), "err", err)
		}
	}
}

// loopRunsOutboxPrefix marks, in dropFromOutboxes, an organization's loop runtime outbox.
const loopRunsOutboxPrefix = "loopruns:"

// prune forgets old alerts and deliveries of every owner.
func (s *Webhooks) prune() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owners := []string{supplyplan.PlatformOwner}
	owners = append(owners, s.core.orgs()...)
	now := supplyplan.Now()
	for _, o := range owners {
		if _, err := outboundTx(ctx, s.core, o, func(st *supplyplan.OutboundState) (struct{}, []supplyplan.Record, error) {
			return struct{}{}, st.Prune(now), nil
		}); err != nil {
			s.core.log.Warn("prune outbound state", "owner", o, "err", err)
		}
	}
}

// enqueue hands an event with a known outbox to the relay without blocking.
func (r *eventRelay) enqueue(it relayItem) { r.queue(it) }
