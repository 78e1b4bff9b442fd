package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

func pendingDelivery(id, endpoint string, at time.Time) supplyplan.Delivery {
	return supplyplan.Delivery{ID: id, Target: supplyplan.TargetEndpoint, EndpointID: endpoint, Status: supplyplan.DeliveryPending, NextAttemptAt: &at}
}

// TestDeliveryLanes: the due deliveries of one target are handed out together in id (creation)
// order, whatever order they were scheduled in, and nothing more of that target until they are
// finished; a delivery waiting for its retry holds back the later ones to its target but not other
// targets; one scheduled again while in flight (a redelivery) is not lost; empty lanes are
// forgotten.
func TestDeliveryLanes(t *testing.T) {
	m := newDeliveryManager(nil, &OutboundConfig{})
	m.started = true
	m.wg.Add(1)
	go m.dispatch()
	t.Cleanup(func() { m.close(context.Background()) })
	now := time.Now()
	next := func() workItem {
		t.Helper()
		select {
		case it := <-m.work:
			return it
		case <-time.After(5 * time.Second):
			t.Fatal("nothing dispatched")
			return workItem{}
		}
	}
	idle := func() {
		t.Helper()
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, l := range m.due {
			if !l.head().After(time.Now()) {
				t.Fatalf("lane %v has %s due and not dispatched", l.key, l.ids[0])
			}
		}
	}
	gone, keep := laneResult{}, laneResult{keep: true}
	a, b := laneKey{"org", "endpoint\x00A"}, laneKey{"org", "endpoint\x00B"}
	m.schedule("org", []supplyplan.Delivery{pendingDelivery("dlv_3", "A", now), pendingDelivery("dlv_1", "A", now),
		pendingDelivery("dlv_2", "A", now), pendingDelivery("dlv_9", "B", now), pendingDelivery("dlv_1", "A", now),
		pendingDelivery("dlv_4", "A", now.Add(time.Hour))})

	got := map[laneKey][]string{}
	for range 2 {
		it := next()
		got[it.lane] = it.ids
	}
	if fmt.Sprint(got[a]) != "[dlv_1 dlv_2 dlv_3]" || fmt.Sprint(got[b]) != "[dlv_9]" {
		t.Fatalf("first dispatch = %v, want dlv_1..3 (not dlv_4, due later) on A and dlv_9 on B", got)
	}
	m.schedule("org", []supplyplan.Delivery{pendingDelivery("dlv_5", "A", now)})
	idle() // dlv_5 waits behind the batch in flight

	// dlv_1 fails and retries in an hour; dlv_2 and dlv_3 were not sent: all keep their place.
	retry := now.Add(time.Hour)
	m.finish(a, got[a], []laneResult{{next: &retry}})
	m.finish(b, got[b], []laneResult{gone})
	m.schedule("org", []supplyplan.Delivery{pendingDelivery("dlv_10", "B", now)})
	if it := next(); it.lane != b || fmt.Sprint(it.ids) != "[dlv_10]" {
		t.Fatalf("dispatched %v, want dlv_10 on B", it)
	}
	idle()
	m.mu.Lock()
	if l := m.lanes[a]; fmt.Sprint(l.ids) != "[dlv_1 dlv_2 dlv_3 dlv_4 dlv_5]" || l.index < 0 || !l.head().Equal(retry) {
		t.Fatalf("lane A = %+v", l)
	}
	m.mu.Unlock()

	// A manual redelivery makes dlv_1 due now: it goes first with the due ones behind it.
	m.schedule("org", []supplyplan.Delivery{pendingDelivery("dlv_1", "A", now)})
	it := next()
	if fmt.Sprint(it.ids) != "[dlv_1 dlv_2 dlv_3]" {
		t.Fatalf("dispatched %v", it)
	}
	// dlv_2 is scheduled again while in flight (a redelivery): it is attempted again.
	m.schedule("org", []supplyplan.Delivery{pendingDelivery("dlv_2", "A", now)})
	m.finish(a, it.ids, []laneResult{gone, gone, keep})
	if it := next(); fmt.Sprint(it.ids) != "[dlv_2 dlv_3]" {
		t.Fatalf("dispatched %v, want dlv_2 again and dlv_3 (dlv_5 waits behind dlv_4, due later)", it)
	} else {
		m.finish(a, it.ids, []laneResult{gone, gone})
	}
	m.finish(b, []string{"dlv_10"}, []laneResult{gone})
	idle()
	m.mu.Lock()
	if l := m.lanes[a]; len(m.lanes) != 1 || fmt.Sprint(l.ids) != "[dlv_4 dlv_5]" || l.index < 0 {
		t.Fatalf("lanes %v after every due delivery ended", m.lanes)
	}
	m.mu.Unlock()
	m.schedule("org", []supplyplan.Delivery{pendingDelivery("dlv_4", "A", now)})
	it = next()
	if fmt.Sprint(it.ids) != "[dlv_4 dlv_5]" {
		t.Fatalf("dispatched %v", it)
	}
	m.finish(a, it.ids, []laneResult{gone, gone})
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.lanes) != 0 || len(m.due) != 0 {
		t.Fatalf("lanes %v, heap %d after every delivery ended", m.lanes, len(m.due))
	}
}

// TestDeliveryBatchLimit: a target with many due deliveries is worked in batches of maxBatch.
func TestDeliveryBatchLimit(t *testing.T) {
	m := newDeliveryManager(nil, &OutboundConfig{})
	m.started = true
	m.wg.Add(1)
	go m.dispatch()
	t.Cleanup(func() { m.close(context.Background()) })
	now := time.Now()
	var ds []supplyplan.Delivery
	for i := range 2*maxBatch + 1 {
		ds = append(ds, pendingDelivery(fmt.Sprintf("dlv_%03d", i), "A", now))
	}
	m.schedule("org", ds)
	var sizes []int
	seen := 0
	for seen < len(ds) {
		it := <-m.work
		if it.ids[0] != ds[seen].ID {
			t.Fatalf("batch starts at %s, want %s", it.ids[0], ds[seen].ID)
		}
		sizes = append(sizes, len(it.ids))
		seen += len(it.ids)
		res := make([]laneResult, len(it.ids))
		m.finish(it.lane, it.ids, res)
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int{maxBatch, maxBatch, 1}) {
		t.Fatalf("batches %v", sizes)
	}
}

// TestRetryWindow: the window covers the longest schedule a delivery can have, so a delivery
// that never waited uses all its attempts, and bounds the wait of those behind it.
func TestRetryWindow(t *testing.T) {
	p := supplyplan.DefaultWebhookRetry
	w := p.Window(p.MaxAttempts)
	var longest time.Duration
	for n := 1; n < p.MaxAttempts; n++ {
		longest += time.Duration(float64(min(p.Base*time.Duration(1<<(2*(n-1))), p.Cap)) * 1.2)
	}
	if w < longest || w > longest+time.Second || w < 85*time.Hour || w > 86*time.Hour {
		t.Fatalf("webhook window %s, longest schedule %s", w, longest)
	}
	if a := supplyplan.DefaultAlertRetry.Window(5); a < 50*time.Minute || a > 52*time.Minute {
		t.Fatalf("alert window %s", a)
	}
	st := supplyplan.NewOutboundState("org")
	created := time.Unix(1_700_000_000, 0)
	d := supplyplan.Delivery{ID: "dlv_1", Target: supplyplan.TargetEndpoint, EndpointID: "A", Status: supplyplan.DeliveryPending, MaxAttempts: 12, CreatedAt: created, Attempts: []supplyplan.DeliveryAttempt{}}
	if err := st.Apply(supplyplan.Put(supplyplan.KindDelivery, d.ID, &d)); err != nil {
		t.Fatal(err)
	}
	r, _, _ := st.RecordAttempt("dlv_1", supplyplan.DeliveryAttempt{StatusCode: 500}, supplyplan.Outcome{}, p, created.Add(w-time.Second))
	if r.Delivery.Status != supplyplan.DeliveryPending {
		t.Fatalf("within the window: %s", r.Delivery.Status)
	}
	r, _, _ = st.RecordAttempt("dlv_1", supplyplan.DeliveryAttempt{StatusCode: 500}, supplyplan.Outcome{}, p, created.Add(w))
	if r.Delivery.Status != supplyplan.DeliveryFailed || len(r.Delivery.Attempts) != 1 {
		t.Fatalf("past the window: %s after %d attempts", r.Delivery.Status, len(r.Delivery.Attempts))
	}
}
