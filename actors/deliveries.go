package actors

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/supplyplan/supplyplan"
)

// deliveryManager runs due deliveries. The outbound actors own every delivery durably; the
// manager only keeps a heap of what is due when, rebuilt from the actors on start. A worker reads
// the delivery and its target from the actor, sends outside the actor, and reports the attempt
// back to the actor as a transaction (the actor never waits on the network).
type deliveryManager struct {
	sys *System
	cfg *OutboundConfig

	mu      sync.Mutex
	due     dueHeap
	queued  map[string]bool // owner/id in the heap or in flight
	wake    chan struct{}
	work    chan dueItem
	closing chan struct{}
	started bool
	closed  bool
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc

	stats deliveryStats
}

type deliveryStats struct {
	mu                          sync.Mutex
	attempts, succeeded, failed int64
}

type dueItem struct {
	at    time.Time
	owner string
	id    string
}

type dueHeap []dueItem

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueItem)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newDeliveryManager(sys *System, cfg *OutboundConfig) *deliveryManager {
	ctx, cancel := context.WithCancel(context.Background())
	return &deliveryManager{sys: sys, cfg: cfg, queued: map[string]bool{}, wake: make(chan struct{}, 1),
		work: make(chan dueItem), closing: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// schedule queues the pending deliveries among ds at their next attempt time.
func (m *deliveryManager) schedule(owner string, ds []supplyplan.Delivery) {
	m.mu.Lock()
	n := 0
	for _, d := range ds {
		if d.Status != supplyplan.DeliveryPending || d.NextAttemptAt == nil || m.closed {
			continue
		}
		k := owner + "/" + d.ID
		if m.queued[k] {
			continue
		}
		m.queued[k] = true
		heap.Push(&m.due, dueItem{at: *d.NextAttemptAt, owner: owner, id: d.ID})
		n++
	}
	m.mu.Unlock()
	if n > 0 {
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

func (m *deliveryManager) start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed {
		return
	}
	m.started = true
	m.wg.Add(1 + m.cfg.Workers)
	go m.dispatch()
	for range m.cfg.Workers {
		go m.worker()
	}
}

// close stops dispatching and waits for attempts in flight (until ctx ends).
func (m *deliveryManager) close(ctx context.Context) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	close(m.closing)
	started := m.started
	m.mu.Unlock()
	if !started {
		return
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		m.cancel()
		<-done
	}
	m.cancel()
}

// dispatch hands due items to the workers in due order.
func (m *deliveryManager) dispatch() {
	defer m.wg.Done()
	defer close(m.work)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		m.mu.Lock()
		var next *dueItem
		wait := time.Hour
		if len(m.due) > 0 {
			if d := time.Until(m.due[0].at); d <= 0 {
				it := heap.Pop(&m.due).(dueItem)
				next = &it
			} else {
				wait = d
			}
		}
		m.mu.Unlock()
		if next != nil {
			select {
			case m.work <- *next:
				continue
			case <-m.closing:
				return
			}
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-m.wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-m.closing:
			return
		}
	}
}

func (m *deliveryManager) worker() {
	defer m.wg.Done()
	for it := range m.work {
		next, err := m.attempt(it)
		m.mu.Lock()
		delete(m.queued, it.owner+"/"+it.id)
		m.mu.Unlock()
		switch {
		case err != nil && m.ctx.Err() == nil:
			m.sys.log.Warn("delivery attempt not recorded; retrying", "owner", it.owner, "delivery", it.id, "err", err)
			at := time.Now().Add(5 * time.Second)
			m.schedule(it.owner, []supplyplan.Delivery{{ID: it.id, Status: supplyplan.DeliveryPending, NextAttemptAt: &at}})
		case next != nil:
			m.schedule(it.owner, []supplyplan.Delivery{*next})
		}
	}
}

// sendPlan is what a worker needs to attempt one delivery, read from the outbound actor.
type sendPlan struct {
	d       supplyplan.Delivery
	msg     supplyplan.OutboundMessage
	channel supplyplan.DestinationType
	cancel  string // the target is gone or disabled: end the delivery with this reason
	skip    bool   // not pending any more (done meanwhile)
}

// attempt runs one attempt and returns the delivery when another attempt is scheduled.
func (m *deliveryManager) attempt(it dueItem) (*supplyplan.Delivery, error) {
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.AttemptTimeout+10*time.Second)
	defer cancel()
	now := time.Now().UTC()
	plan, err := outboundTx(ctx, m.sys, it.owner, func(st *supplyplan.OutboundState) (sendPlan, []supplyplan.Record, error) {
		return m.plan(st, it.id, now), nil, nil
	})
	if err != nil {
		return nil, err
	}
	if plan.skip {
		return nil, nil
	}
	if plan.cancel != "" {
		_, err := outboundTx(ctx, m.sys, it.owner, func(st *supplyplan.OutboundState) (struct{}, []supplyplan.Record, error) {
			recs, err := st.CancelDelivery(it.id, plan.cancel, supplyplan.Now())
			return struct{}{}, recs, err
		})
		return nil, err
	}
	var res supplyplan.SendResult
	if m.cfg.Sender == nil {
		res = supplyplan.SendResult{StatusCode: -1, Err: errors.New("no sender configured")}
	} else {
		sctx, scancel := context.WithTimeout(m.ctx, m.cfg.AttemptTimeout)
		res = m.cfg.Sender.Send(sctx, plan.msg)
		scancel()
	}
	if m.ctx.Err() != nil {
		return nil, nil // shutting down: the delivery stays pending and runs after the restart
	}
	at := supplyplan.DeliveryAttempt{AttemptedAt: now.Truncate(time.Millisecond), StatusCode: max(res.StatusCode, 0),
		LatencyMs: float64(res.Latency.Microseconds()) / 1000}
	o := supplyplan.Classify(plan.d.Target, plan.channel, res)
	at.Success = o.Success
	if res.Err != nil {
		at.Error = res.Err.Error()
	}
	pol := m.cfg.WebhookRetry
	if plan.d.Target == supplyplan.TargetAlert {
		pol = m.cfg.AlertRetry
	}
	r, err := outboundTx(ctx, m.sys, it.owner, func(st *supplyplan.OutboundState) (supplyplan.AttemptResult, []supplyplan.Record, error) {
		if d, ok := st.Deliveries[it.id]; !ok || d.Status != supplyplan.DeliveryPending {
			return supplyplan.AttemptResult{}, nil, nil // deleted or finished meanwhile
		}
		return st.RecordAttempt(it.id, at, o, pol, supplyplan.Now())
	})
	if err != nil {
		return nil, err
	}
	m.stats.mu.Lock()
	m.stats.attempts++
	switch r.Delivery.Status {
	case supplyplan.DeliverySucceeded:
		m.stats.succeeded++
	case supplyplan.DeliveryFailed:
		m.stats.failed++
	}
	m.stats.mu.Unlock()
	if r.Disabled != "" {
		m.sys.log.Warn("delivery target disabled", "owner", it.owner, "target", r.Disabled, "status", at.StatusCode)
	}
	if r.Delivery.Status == supplyplan.DeliveryPending {
		return &r.Delivery, nil
	}
	return nil, nil
}

// plan reads a delivery's current target (URL, secrets, enabled) and builds the message.
func (m *deliveryManager) plan(st *supplyplan.OutboundState, id string, now time.Time) sendPlan {
	cur, ok := st.Deliveries[id]
	if !ok || cur.Status != supplyplan.DeliveryPending {
		return sendPlan{skip: true}
	}
	d := *cur
	p := sendPlan{d: d, channel: supplyplan.DestWebhook}
	signed := func(url string, secrets []string) {
		p.msg = supplyplan.OutboundMessage{Channel: supplyplan.DestWebhook, URL: url, Body: d.Payload,
			Headers: map[string]string{"Content-Type": "application/json", "webhook-id": d.EventID,
				"webhook-timestamp": strconv.FormatInt(now.Unix(), 10)}}
		if len(secrets) > 0 {
			sig, err := supplyplan.SignWebhook(secrets, d.EventID, now, d.Payload)
			if err != nil {
				p.cancel = "cannot sign: " + err.Error()
				return
			}
			p.msg.Headers["webhook-signature"] = sig
		}
	}
	switch d.Target {
	case supplyplan.TargetEndpoint:
		ep, ok := st.Endpoints[d.EndpointID]
		switch {
		case !ok:
			p.cancel = "endpoint deleted"
		case !ep.Enabled:
			p.cancel = "endpoint disabled"
		default:
			signed(ep.URL, ep.SigningSecrets(now))
		}
	case supplyplan.TargetAlert:
		dst, ok := st.AlertConfig().Destination(d.DestinationID)
		switch {
		case !ok:
			p.cancel = "destination removed from the alert configuration"
			return p
		case !dst.Enabled:
			p.cancel = "destination disabled"
			return p
		}
		p.channel = dst.Type
		var payload struct {
			Data supplyplan.Alert `json:"data"`
		}
		_ = json.Unmarshal(d.Payload, &payload)
		a := payload.Data
		switch dst.Type {
		case supplyplan.DestWebhook:
			var secrets []string
			if dst.Secret != "" {
				secrets = []string{dst.Secret}
			}
			signed(dst.Value, secrets)
		case supplyplan.DestChat:
			body, _ := json.Marshal(map[string]string{"text": alertText(a)})
			p.msg = supplyplan.OutboundMessage{Channel: supplyplan.DestChat, URL: dst.Value, Body: body,
				Headers: map[string]string{"Content-Type": "application/json"}}
		case supplyplan.DestEmail:
			p.msg = supplyplan.OutboundMessage{Channel: supplyplan.DestEmail, To: dst.Value,
				Subject: fmt.Sprintf("[%s] %s alert: %s", a.Severity, a.Type, truncate(a.Message, 120)),
				Text:    alertEmail(a)}
		}
	case supplyplan.TargetURL:
		var secrets []string
		if m.cfg.FederationSecret != "" {
			secrets = []string{m.cfg.FederationSecret}
		}
		signed(d.URL, secrets)
	case supplyplan.TargetURLChat:
		var payload struct {
			Data struct {
				Text string `json:"text"`
			} `json:"data"`
		}
		_ = json.Unmarshal(d.Payload, &payload)
		body, _ := json.Marshal(map[string]string{"text": payload.Data.Text})
		p.channel = supplyplan.DestChat
		p.msg = supplyplan.OutboundMessage{Channel: supplyplan.DestChat, URL: d.URL, Body: body,
			Headers: map[string]string{"Content-Type": "application/json"}}
	default:
		p.cancel = "unknown delivery target " + d.Target
	}
	return p
}

func alertText(a supplyplan.Alert) string {
	s := fmt.Sprintf("[%s] %s: %s", a.Severity, a.Type, a.Message)
	if a.ProductMasterID != "" || a.LocationID != "" {
		s += fmt.Sprintf(" (product %s, location %s)", orDash(a.ProductMasterID), orDash(a.LocationID))
	}
	return s
}

func alertEmail(a supplyplan.Alert) string {
	return fmt.Sprintf("%s\n\nType: %s\nSeverity: %s\nProduct: %s\nLocation: %s\nChannel: %s\nTriggered at: %s\nAlert id: %s\n",
		a.Message, a.Type, a.Severity, orDash(a.ProductMasterID), orDash(a.LocationID), orDash(a.ChannelID),
		a.TriggeredAt.Format(time.RFC3339), a.ID)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
