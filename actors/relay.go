package actors

import (
	"context"
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
			if r.dropped.Swap(false) {
				r.sweep() // everything still in an outbox, oldest first, before newer events
			}
			r.move(it)
		case <-t.C:
			r.sweep()
			r.w.prune()
		case <-r.closing:
			return
		}
	}
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
		for _, e := range evs {
			r.move(relayItem{sourceOrg: id, ev: e})
		}
	}
	evs, err := platformTx(ctx, r.w.core, func(st *supplyplan.PlatformState) ([]supplyplan.DomainEvent, []supplyplan.Record, error) {
		return st.PendingEventList(), nil, nil
	})
	if err != nil {
		r.w.core.log.Warn("read platform outbox", "err", err)
		return
	}
	for _, e := range evs {
		r.move(relayItem{fromPlatform: true, ev: e})
	}
}

// move accepts one event into its owner's outbound actor, then removes it from its outbox.
func (r *eventRelay) move(it relayItem) {
	select {
	case <-r.closing:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := it.ev
	owner := e.OrganizationID
	now := supplyplan.Now()
	if owner == "" {
		return
	}
	pol := r.cfg.policies()
	ds, err := outboundTx(ctx, r.w.core, owner, func(st *supplyplan.OutboundState) ([]supplyplan.Delivery, []supplyplan.Record, error) {
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
	})
	if err != nil {
		if supplyplan.ErrorCode(err) == supplyplan.ENOTFOUND {
			r.dropFromOutbox(ctx, it) // the organization is gone
			return
		}
		r.w.core.log.Warn("relay event", "event", e.ID, "type", e.Type, "err", err)
		return
	}
	r.w.deliveries.schedule(owner, ds)
	r.dropFromOutbox(ctx, it)
}

func (r *eventRelay) dropFromOutbox(ctx context.Context, it relayItem) {
	id := it.ev.ID
	var err error
	if it.fromPlatform {
		_, err = platformTx(ctx, r.w.core, func(st *supplyplan.PlatformState) (struct{}, []supplyplan.Record, error) {
			if _, ok := st.PendingEvents[id]; !ok {
				return struct{}{}, nil, nil
			}
			return struct{}{}, []supplyplan.Record{supplyplan.Del(supplyplan.KindPendingEvent, id)}, nil
		})
	} else if it.sourceOrg != "" {
		_, err = tenantTx(ctx, r.w.core, it.sourceOrg, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
			if _, ok := st.PendingEvents[id]; !ok {
				return struct{}{}, nil, nil
			}
			return struct{}{}, []supplyplan.Record{supplyplan.Del(supplyplan.KindPendingEvent, id)}, nil
		})
	}
	if err != nil && supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		r.w.core.log.Warn("remove relayed event from outbox", "event", id, "err", err)
	}
}

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
