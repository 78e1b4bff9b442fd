package actors

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/supplyplan/supplyplan"
)

// deliveryManager runs due deliveries. The outbound actors own every delivery durably; the
// manager only keeps, per target, the pending deliveries in creation order and a heap of the
// targets whose first pending delivery is due when, rebuilt from the actors on start. A worker
// reads the deliveries and their target from the actor, sends outside the actor, and reports the
// attempts back to the actor as a transaction (the actor never waits on the network).
//
// Deliveries to one target (an endpoint, an alert destination, a fixed URL: Delivery.Lane) are
// made one at a time in the order they were created, which is the order their events were
// accepted: a receiver never gets an event before an earlier one that can still arrive. A
// delivery waiting for its retry holds back the later ones to its target; it gives up after its
// attempts or once older than its policy's retry window (RetryPolicy.Window), so those behind it
// wait at most that long and each still gets an attempt. Targets are independent of each other.
//
// A worker takes the due deliveries at the head of a target together (at most maxBatch): one
// read of their plans, the POSTs one after the other (each waits for the previous answer; the
// first failure ends the batch), one journal write for every attempt. Ordering then costs one
// round trip per delivery to the receiver, not two journal commits.
type deliveryManager struct {
	core *Core
	log  *slog.Logger
	cfg  *OutboundConfig

	mu      sync.Mutex
	due     laneHeap // lanes with a pending delivery and none in flight, by their head's due time
	lanes   map[laneKey]*lane
	wake    chan struct{}
	work    chan workItem
	closing chan struct{}
	started bool
	closed  bool
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc

	stats deliveryStats
}

// maxBatch bounds the deliveries of one target a worker takes at once.
const maxBatch = 32

type deliveryStats struct {
	mu                          sync.Mutex
	attempts, succeeded, failed int64
}

// laneKey names one target of one owner.
type laneKey struct{ owner, target string }

// lane is one target's pending deliveries.
type lane struct {
	key laneKey
	ids []string             // pending delivery ids, sorted: ids sort by creation time
	at  map[string]time.Time // next attempt time of each
	// inflight are the deliveries a worker is attempting (the first ones of ids); again holds
	// those scheduled again meanwhile (a manual redelivery), so that none is forgotten when the
	// attempts end.
	inflight []string
	again    map[string]time.Time
	index    int // position in the heap, -1 when not in it
}

func (l *lane) head() time.Time { return l.at[l.ids[0]] }

type laneHeap []*lane

func (h laneHeap) Len() int           { return len(h) }
func (h laneHeap) Less(i, j int) bool { return h[i].head().Before(h[j].head()) }
func (h laneHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *laneHeap) Push(x any) {
	l := x.(*lane)
	l.index = len(*h)
	*h = append(*h, l)
}
func (h *laneHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	l.index = -1
	return l
}

// workItem is the due deliveries at the head of one lane, in order, handed to a worker.
type workItem struct {
	lane laneKey
	ids  []string
}

// laneResult is what became of one delivery of a work item: attempted again at next, or gone
// from the lane (next nil: succeeded, failed, cancelled, not pending any more), or untouched
// (keep: not attempted because an earlier one in the batch failed).
type laneResult struct {
	next *time.Time
	keep bool
}

func newDeliveryManager(core *Core, cfg *OutboundConfig) *deliveryManager {
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.DiscardHandler)
	if core != nil {
		log = core.log
	}
	return &deliveryManager{core: core, log: log, cfg: cfg, lanes: map[laneKey]*lane{}, wake: make(chan struct{}, 1),
		work: make(chan workItem), closing: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// schedule queues the pending deliveries among ds at their next attempt time, each behind the
// earlier deliveries to its target.
func (m *deliveryManager) schedule(owner string, ds []supplyplan.Delivery) {
	m.mu.Lock()
	n := 0
	for _, d := range ds {
		if d.Status != supplyplan.DeliveryPending || d.NextAttemptAt == nil || m.closed {
			continue
		}
		k := laneKey{owner: owner, target: d.Lane()}
		l, ok := m.lanes[k]
		if !ok {
			l = &lane{key: k, at: map[string]time.Time{}, index: -1}
			m.lanes[k] = l
		}
		at := *d.NextAttemptAt
		if slices.Contains(l.inflight, d.ID) {
			if cur, ok := l.again[d.ID]; !ok || at.Before(cur) {
				if l.again == nil {
					l.again = map[string]time.Time{}
				}
				l.again[d.ID] = at
			}
			continue
		}
		if cur, ok := l.at[d.ID]; ok {
			if !at.Before(cur) {
				continue // already queued at least as early
			}
		} else {
			i, _ := slices.BinarySearch(l.ids, d.ID)
			l.ids = slices.Insert(l.ids, i, d.ID)
		}
		l.at[d.ID] = at
		m.rearm(l)
		n++
	}
	m.mu.Unlock()
	if n > 0 {
		m.signal()
	}
}

func (m *deliveryManager) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// rearm puts l in the heap at its head's due time when it has a pending delivery and none in
// flight, takes it out otherwise, and forgets it when it is empty. Called with mu held.
func (m *deliveryManager) rearm(l *lane) {
	switch {
	case len(l.inflight) > 0:
		if l.index >= 0 {
			heap.Remove(&m.due, l.index)
		}
	case len(l.ids) == 0:
		if l.index >= 0 {
			heap.Remove(&m.due, l.index)
		}
		delete(m.lanes, l.key)
	case l.index >= 0:
		heap.Fix(&m.due, l.index)
	default:
		heap.Push(&m.due, l)
	}
}

// finish ends the attempts in flight on a lane with one result per delivery of the work item.
func (m *deliveryManager) finish(k laneKey, ids []string, res []laneResult) {
	m.mu.Lock()
	l, ok := m.lanes[k]
	if !ok || !slices.Equal(l.inflight, ids) {
		m.mu.Unlock()
		return
	}
	for i, id := range ids {
		r := laneResult{keep: true}
		if i < len(res) {
			r = res[i]
		}
		next, gone := r.next, !r.keep && r.next == nil
		if r.keep {
			cur := l.at[id]
			next = &cur
		}
		if again, ok := l.again[id]; ok && (gone || again.Before(*next)) {
			next, gone = &again, false
		}
		if gone {
			if j, found := slices.BinarySearch(l.ids, id); found {
				l.ids = slices.Delete(l.ids, j, j+1)
			}
			delete(l.at, id)
		} else {
			l.at[id] = *next
		}
	}
	l.inflight, l.again = nil, nil
	m.rearm(l)
	m.mu.Unlock()
	m.signal()
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

// dispatch hands the due deliveries at the head of each lane to the workers, lanes in due order,
// and marks them in flight until the attempts end.
func (m *deliveryManager) dispatch() {
	defer m.wg.Done()
	defer close(m.work)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		m.mu.Lock()
		var next *workItem
		wait := time.Hour
		if len(m.due) > 0 {
			now := time.Now()
			if d := m.due[0].head().Sub(now); d <= 0 {
				l := heap.Pop(&m.due).(*lane)
				n := 1
				for n < len(l.ids) && n < maxBatch && !l.at[l.ids[n]].After(now) {
					n++
				}
				l.inflight = slices.Clone(l.ids[:n])
				next = &workItem{lane: l.key, ids: l.inflight}
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
		res, err := m.attempt(it.lane.owner, it.ids)
		if err != nil && m.ctx.Err() == nil {
			m.log.Warn("delivery attempts not recorded; retrying", "owner", it.lane.owner, "deliveries", len(it.ids), "first", it.ids[0], "err", err)
			at := time.Now().Add(5 * time.Second)
			res = []laneResult{{next: &at}} // the rest keep their place behind it
		}
		m.finish(it.lane, it.ids, res)
	}
}

// sendPlan is what a worker needs to attempt one delivery, read from the outbound actor.
type sendPlan struct {
	d       supplyplan.Delivery
	msg     supplyplan.OutboundMessage
	channel supplyplan.DestinationType
	// secrets sign the message (Standard Webhooks) when it is sent; sign says whether to.
	secrets []string
	sign    bool
	cancel  string // the target is gone or disabled: end the delivery with this reason
	skip    bool   // not pending any more (done meanwhile)
}

// attemptOutcome is one attempt to record.
type attemptOutcome struct {
	id      string
	attempt supplyplan.DeliveryAttempt
	outcome supplyplan.Outcome
	policy  supplyplan.RetryPolicy
}

// attempt sends the deliveries ids (the head of one lane, in order) and records the attempts.
// It stops at the first delivery that does not succeed: the ones after it keep their place. It
// returns one result per id (fewer: the rest keep their place).
func (m *deliveryManager) attempt(owner string, ids []string) ([]laneResult, error) {
	ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
	plans, err := outboundTx(ctx, m.core, owner, func(st *supplyplan.OutboundState) ([]sendPlan, []supplyplan.Record, error) {
		out := make([]sendPlan, len(ids))
		for i, id := range ids {
			out[i] = m.plan(st, id)
		}
		return out, nil, nil
	})
	cancel()
	if err != nil {
		return nil, err
	}
	res := make([]laneResult, 0, len(ids))
	var cancels []attemptOutcome
	var done []attemptOutcome
	for _, p := range plans {
		if p.skip {
			res = append(res, laneResult{})
			continue
		}
		if p.cancel != "" {
			cancels = append(cancels, attemptOutcome{id: p.d.ID, attempt: supplyplan.DeliveryAttempt{Error: p.cancel}})
			res = append(res, laneResult{})
			continue
		}
		a := m.send(p)
		if m.ctx.Err() != nil {
			break // shutting down: what was sent and not recorded is sent again after the restart
		}
		done = append(done, a)
		res = append(res, laneResult{}) // filled in from the recorded attempt below
		if !a.outcome.Success {
			break
		}
	}
	if len(cancels) == 0 && len(done) == 0 {
		return res, nil
	}
	ctx, cancel = context.WithTimeout(m.ctx, 30*time.Second)
	defer cancel()
	results, err := outboundTx(ctx, m.core, owner, func(st *supplyplan.OutboundState) (map[string]supplyplan.AttemptResult, []supplyplan.Record, error) {
		now := supplyplan.Now()
		var recs []supplyplan.Record
		out := map[string]supplyplan.AttemptResult{}
		for _, c := range cancels {
			r, err := st.CancelDelivery(c.id, c.attempt.Error, now)
			if err != nil {
				return nil, nil, err
			}
			recs = append(recs, r...)
		}
		for _, a := range done {
			if d, ok := st.Deliveries[a.id]; !ok || d.Status != supplyplan.DeliveryPending {
				continue // deleted or finished meanwhile
			}
			r, rr, err := st.RecordAttempt(a.id, a.attempt, a.outcome, a.policy, now)
			if err != nil {
				return nil, nil, err
			}
			out[a.id], recs = r, append(recs, rr...)
		}
		return out, recs, nil
	})
	if err != nil {
		return nil, err
	}
	for i, id := range ids[:len(res)] {
		r, ok := results[id]
		if !ok {
			continue
		}
		m.count(r)
		m.logFailed(owner, r)
		if r.Disabled != "" {
			m.log.Warn("delivery target disabled", "owner", owner, "target", r.Disabled, "status", r.Delivery.Attempts[len(r.Delivery.Attempts)-1].StatusCode)
		}
		if r.Delivery.Status == supplyplan.DeliveryPending {
			res[i].next = r.Delivery.NextAttemptAt
		}
	}
	return res, nil
}

// send makes one attempt of a planned delivery, signing it now.
func (m *deliveryManager) send(p sendPlan) attemptOutcome {
	now := time.Now().UTC()
	msg := p.msg
	if p.sign {
		msg.Headers = maps.Clone(msg.Headers)
		msg.Headers["webhook-timestamp"] = strconv.FormatInt(now.Unix(), 10)
		if len(p.secrets) > 0 {
			sig, err := supplyplan.SignWebhook(p.secrets, p.d.EventID, now, p.d.Payload)
			if err != nil {
				return attemptOutcome{id: p.d.ID, attempt: supplyplan.DeliveryAttempt{AttemptedAt: now, Error: "cannot sign: " + err.Error()},
					outcome: supplyplan.Outcome{Permanent: true}}
			}
			msg.Headers["webhook-signature"] = sig
		}
	}
	var res supplyplan.SendResult
	if m.cfg.Sender == nil {
		res = supplyplan.SendResult{StatusCode: -1, Err: errors.New("no sender configured")}
	} else {
		sctx, scancel := context.WithTimeout(m.ctx, m.cfg.AttemptTimeout)
		res = m.cfg.Sender.Send(sctx, msg)
		scancel()
	}
	at := supplyplan.DeliveryAttempt{AttemptedAt: now.Truncate(time.Millisecond), StatusCode: max(res.StatusCode, 0),
		LatencyMs: float64(res.Latency.Microseconds()) / 1000}
	o := supplyplan.Classify(p.d.Target, p.channel, res)
	at.Success = o.Success
	if res.Err != nil {
		at.Error = res.Err.Error()
	}
	pol := m.cfg.WebhookRetry
	if p.d.Target == supplyplan.TargetAlert {
		pol = m.cfg.AlertRetry
	}
	return attemptOutcome{id: p.d.ID, attempt: at, outcome: o, policy: pol}
}

func (m *deliveryManager) count(r supplyplan.AttemptResult) {
	outcome := "retrying"
	m.stats.mu.Lock()
	m.stats.attempts++
	switch r.Delivery.Status {
	case supplyplan.DeliverySucceeded:
		m.stats.succeeded++
		outcome = "succeeded"
	case supplyplan.DeliveryFailed:
		m.stats.failed++
		outcome = "failed"
	}
	m.stats.mu.Unlock()
	if m.core != nil {
		m.core.metrics.Delivery(r.Delivery.Target, outcome)
	}
}

// logFailed logs a failed attempt at WARN: who, what, the answer, and whether it is retried.
func (m *deliveryManager) logFailed(owner string, r supplyplan.AttemptResult) {
	d := &r.Delivery
	if len(d.Attempts) == 0 || d.Attempts[len(d.Attempts)-1].Success {
		return
	}
	a := d.Attempts[len(d.Attempts)-1]
	args := []any{"org", owner, "delivery", d.ID, "target", d.Target, "eventType", d.EventType,
		"attempt", len(d.Attempts), "maxAttempts", d.MaxAttempts, "statusCode", a.StatusCode, "err", a.Error}
	if d.NextAttemptAt != nil {
		args = append(args, "nextAttemptAt", d.NextAttemptAt.UTC().Format(time.RFC3339))
	} else {
		args = append(args, "status", d.Status)
	}
	m.log.Warn("delivery attempt failed", args...)
}

// plan reads a delivery's current target (URL, secrets, enabled) and builds the message; a
// signed message gets its timestamp and signature when it is sent.
func (m *deliveryManager) plan(st *supplyplan.OutboundState, id string) sendPlan {
	cur, ok := st.Deliveries[id]
	if !ok || cur.Status != supplyplan.DeliveryPending {
		return sendPlan{skip: true}
	}
	d := *cur
	p := sendPlan{d: d, channel: supplyplan.DestWebhook}
	signed := func(url string, secrets []string) {
		p.msg = supplyplan.OutboundMessage{Channel: supplyplan.DestWebhook, URL: url, Body: d.Payload,
			Headers: map[string]string{"Content-Type": "application/json", "webhook-id": d.EventID}}
		p.sign, p.secrets = true, secrets
	}
	now := time.Now()
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
