package supplyplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// TestRecommendationEventRefReplay: the events of a generation (recommendation.created) and of the
// expiry sweep (recommendation.expired) are journaled as references to the recommendation records
// of their entry, and replay rebuilds events that encode to the bytes of the events written. The
// whole form (journals written before the references) replays to the same outbox; an event whose
// data is not its record's, or that comes before it, is written whole.
func TestRecommendationEventRefReplay(t *testing.T) {
	now := time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC)
	live := NewTenantState("org_rec")
	replayed, replayedOld := NewTenantState("org_rec"), NewTenantState("org_rec")
	event := func(typ string, r Recommendation) Record {
		r.Explanation = nil
		return EventRecord(DomainEvent{ID: NewID("evt"), Type: typ, OrganizationID: "org_rec", Timestamp: now, Data: r})
	}
	write := func(recs []Record) (refs, events int, entry []byte) {
		t.Helper()
		for _, r := range recs {
			if r.Kind == KindPendingEvent && !r.Del {
				events++
			}
		}
		entry = replayEntry(t, replayed, recs)
		decoded, err := DecodeRecords(entry)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range decoded {
			if r.Kind == KindRecommendationEventRef {
				refs++
			}
		}
		old, err := json.Marshal(recs)
		if err != nil {
			t.Fatal(err)
		}
		applyEntry(t, replayedOld, old)
		for _, r := range recs {
			if err := live.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
		return refs, events, entry
	}
	m := 6.0
	var props []Proposal
	eval := map[string]bool{}
	for p := range 20 {
		ps := ProductStock{ProductID: fmt.Sprintf("P<%d>&\"", p), PriceMargin: &m}
		for l := range 6 {
			ls := LocationStock{LocationID: fmt.Sprintf("L%d", l), OnHand: 500, ReorderPoint: 40}
			fc := 3.0
			if l > 0 {
				fc, ls.OnHand, ls.ReorderPoint = 2+float64((p+l)%7), float64(5+(p*l)%40), 15
			}
			for range 8 {
				ls.Forecast = append(ls.Forecast, fc)
			}
			ps.Locations = append(ps.Locations, ls)
		}
		eval[ps.ProductID] = true
		props = append(props, ProposeTransfers(ps, RecommendOptions{WindowWeeks: 8, LeadTimeDays: 3, MinStockDifferencePct: 0.2, TransferCostPerUnit: 0.5})...)
	}
	res, recs := live.ApplyProposals(props, eval, "", 72*time.Hour, now)
	if len(res.Created) < 20 {
		t.Fatalf("%d recommendations created", len(res.Created))
	}
	for _, c := range res.Created {
		recs = append(recs, event("recommendation.created", c))
	}
	// Written whole: an event whose data differs from its record, and one before its record.
	odd := res.Created[0]
	odd.Reason += " (edited)"
	oddRec, earlyRec := event("recommendation.created", odd), event("recommendation.created", res.Created[1])
	writtenWhole := map[string]bool{oddRec.ID: true, earlyRec.ID: true}
	recs = append([]Record{earlyRec}, append(recs, oddRec)...)
	refs, events, entry := write(recs)
	if events != len(res.Created)+2 || refs != len(res.Created) {
		t.Fatalf("generation: %d events, %d journaled as references", events, refs)
	}
	whole, _ := json.Marshal(recs)
	t.Logf("generation entry %d bytes, %d written whole", len(entry), len(whole))
	if len(entry) > len(whole)*4/5 {
		t.Errorf("entry %d bytes against %d whole", len(entry), len(whole))
	}

	now = now.Add(73 * time.Hour)
	expired := live.ExpireDue(now)
	if len(expired) != len(res.Created) {
		t.Fatalf("%d expired", len(expired))
	}
	for _, r := range expired {
		expired = append(expired, event("recommendation.expired", *r.Value.(*Recommendation)))
	}
	if refs, events, _ := write(expired); refs != events || events != len(res.Created) {
		t.Fatalf("sweep: %d events, %d journaled as references", events, refs)
	}

	if len(live.PendingEvents) != 2*len(res.Created)+2 {
		t.Fatalf("%d events in the outbox", len(live.PendingEvents))
	}
	for id, e := range live.PendingEvents {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(replayed.PendingEvents[id])
		if _, typed := replayed.PendingEvents[id].Data.(Recommendation); typed == writtenWhole[id] {
			t.Errorf("event %s: replayed data %T (written whole: %v)", id, replayed.PendingEvents[id].Data, writtenWhole[id])
		} else if err != nil || !bytes.Equal(got, want) && !(writtenWhole[id] && sameJSON(t, got, want)) {
			t.Errorf("event %s replayed from references:\n got %s\nwant %s (%v)", id, got, want, err)
		}
		old, err := json.Marshal(replayedOld.PendingEvents[id])
		if err != nil || !sameJSON(t, old, want) {
			t.Errorf("event %s replayed from whole events:\n got %s\nwant %s (%v)", id, old, want, err)
		}
	}
	var drops []Record
	for id := range live.PendingEvents {
		drops = append(drops, Del(KindPendingEvent, id))
	}
	write(drops)
	if len(replayed.PendingEvents)+len(replayedOld.PendingEvents)+len(live.PendingEvents) != 0 {
		t.Errorf("events left after the relay dropped them")
	}
	// A reference to a recommendation the state does not hold is an error, not an empty event.
	bad := Put(KindRecommendationEventRef, "evt_x", &recommendationEventRef{ID: "evt_x", RecommendationID: "rec_missing"})
	if err := NewTenantState("o").Apply(bad); err == nil {
		t.Error("a reference to a missing recommendation applied")
	}
}
