package supplyplan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// A change entry's pending effect shares an event as stored (never changed in place) and copies
// one that carries its expanded product or location, without them.
func TestChangePendingSharesTheStoredEvent(t *testing.T) {
	s := NewTenantState("org_1")
	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	stored := &ExternalEvent{ID: "evt_1", Name: "Promo", Type: EventPromotion, ProductMasterID: "prd_1",
		StartsAt: now, EndsAt: now.AddDate(0, 0, 7)}
	recs := s.EventChange(ChangeEventCreated, "apikey:k", nil, stored, now)
	p := recs[0].Value.(*ChangeEntry).Pending
	if p == nil || p.New != stored {
		t.Fatalf("pending effect %+v does not share the stored event", p)
	}
	expanded := *stored
	expanded.ProductMaster = &ProductRef{ID: "prd_1", Name: "Product", SKU: "sku-1"}
	recs = s.EventChange(ChangeEventUpdated, "apikey:k", stored, &expanded, now)
	p = recs[0].Value.(*ChangeEntry).Pending
	if p.Old != stored || p.New == &expanded || p.New.ProductMaster != nil || p.New.ID != "evt_1" {
		t.Fatalf("pending effect old %p (stored %p), new %+v: want the stored old and a bare copy of the new", p.Old, stored, p.New)
	}
	if expanded.ProductMaster == nil {
		t.Fatal("the caller's event was changed")
	}
}

// PendingChanges reads the pending entries through pendingOrder: over random creations (pending
// or not), computations in and out of order and evictions of the oldest, it answers what a scan of
// the whole history answers, and the queue holds no more ids than the history.
func TestPendingChangesFollowsTheHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := NewTenantState("org_1")
	put := func(e ChangeEntry) {
		if err := s.Apply(Put(KindForecastChange, e.ID, &e)); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(limit int) []string {
		var ids []string
		for _, id := range s.changeOrder {
			if s.Changes[id].EffectStatus == EffectPending && len(ids) < limit {
				ids = append(ids, id)
			}
		}
		return ids
	}
	ids := func(es []*ChangeEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	next := 0
	for step := range 6000 {
		switch op := rng.IntN(10); {
		case op < 5: // a new entry, pending or not
			status := EffectPending
			if rng.IntN(3) == 0 {
				status = EffectOutsideHorizon
			}
			put(ChangeEntry{ID: fmt.Sprintf("chg_%07d", next), EffectStatus: status})
			next++
		case op < 8: // computed: the oldest pending, or another one
			pending := scan(50)
			if len(pending) == 0 {
				continue
			}
			id := pending[0]
			if op == 7 {
				id = pending[rng.IntN(len(pending))]
			}
			put(ChangeEntry{ID: id, EffectStatus: EffectComputed})
		default: // the oldest entry evicted by the cap
			if len(s.changeOrder) > 0 {
				if err := s.Apply(Del(KindForecastChange, s.changeOrder[0])); err != nil {
					t.Fatal(err)
				}
			}
		}
		limit := 1 + rng.IntN(40)
		if got, want := ids(s.PendingChanges(limit)), scan(limit); !slices.Equal(got, want) {
			t.Fatalf("step %d: PendingChanges(%d) = %v, a scan gives %v", step, limit, got, want)
		}
		if len(s.pendingOrder) > len(s.Changes) {
			t.Fatalf("step %d: %d ids queued for %d entries", step, len(s.pendingOrder), len(s.Changes))
		}
	}
	// Computed oldest first, every id leaves the queue.
	for _, id := range scan(len(s.Changes)) {
		put(ChangeEntry{ID: id, EffectStatus: EffectComputed})
	}
	if len(s.pendingOrder) != 0 || len(s.PendingChanges(10)) != 0 {
		t.Fatalf("%d ids still queued, %d pending", len(s.pendingOrder), len(s.PendingChanges(10)))
	}
}
