package supplyplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestChangeEventRefReplay: an event write inside the horizon journals its pending change-history
// entry as a reference to the event of its transaction, and replay rebuilds the entry the live
// state holds, sharing the event the state stores. The whole form (journals written before the
// reference) replays to the same history; an entry whose event is not the value of the event's
// last record before it (a copy, a later record, a deletion) or that is not pending is written
// whole.
func TestChangeEventRefReplay(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	live := NewTenantState("org_chg")
	replayed, replayedOld := NewTenantState("org_chg"), NewTenantState("org_chg")
	var journal, whole int // of the last write
	write := func(recs []Record) (refs int) {
		t.Helper()
		entry := replayEntry(t, replayed, recs)
		decoded, err := DecodeRecords(entry)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range decoded {
			if r.Kind == KindChangeEventRef {
				refs++
			}
		}
		old, err := json.Marshal(recs)
		if err != nil {
			t.Fatal(err)
		}
		applyEntry(t, replayedOld, old)
		journal, whole = len(entry), len(old)
		for _, r := range recs {
			if err := live.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
		return refs
	}
	ptr := func(s string) *string { return &s }
	lift := 0.25
	// prepare builds an event as the service does (PrepareEvent, then AddEvent in the actor).
	prepare := func(name string, starts time.Time) (*ExternalEvent, []Record) {
		t.Helper()
		e, err := PrepareEvent(EventInput{Name: ptr(name), Type: ptr("PROMOTION"), StartsAt: ptr(starts.Format(time.RFC3339)),
			EndsAt: ptr(starts.AddDate(0, 0, 7).Format(time.RFC3339)), Value: &EventValueInput{LiftPct: &lift}}, now)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := live.AddEvent(&e)
		if err != nil {
			t.Fatal(err)
		}
		return &e, recs
	}
	inside, beyond := now.AddDate(0, 0, 28), now.AddDate(1, 0, 0)

	// Created inside the horizon, names with characters JSON escapes: references.
	var created []*ExternalEvent
	for i := range 6 {
		e, recs := prepare(fmt.Sprintf("Promo <%d> \"&\" \u2028 \xff", i), inside)
		if refs := write(live.AppendEventChange(recs, ChangeEventCreated, "key_a", nil, e, now)); refs != 1 {
			t.Fatalf("created event %d: %d references", i, refs)
		}
		if journal > whole*3/4 { // the event is about 300 of the 1,100 bytes
			t.Errorf("created event %d: journal %d bytes against %d whole", i, journal, whole)
		}
		created = append(created, e)
	}
	// Two events and their entries in one transaction: both references.
	e1, recs := prepare("first of two", inside)
	recs = live.AppendEventChange(recs, ChangeEventCreated, "key_a", nil, e1, now)
	e2, more := prepare("second of two", inside)
	recs = append(recs, more...)
	if refs := write(live.AppendEventChange(recs, ChangeEventCreated, "key_a", nil, e2, now)); refs != 2 {
		t.Fatalf("two in one transaction: %d references", refs)
	}
	// Beyond the horizon: complete at once, nothing pending, written whole.
	e, recs := prepare("far", beyond)
	if refs := write(live.AppendEventChange(recs, ChangeEventCreated, "key_a", nil, e, now)); refs != 0 {
		t.Fatalf("beyond the horizon: %d references", refs)
	}
	// An entry holding a copy of the event, and one written before its event: whole.
	e, recs = prepare("copied", inside)
	c := *e
	if refs := write(live.AppendEventChange(recs, ChangeEventCreated, "key_a", nil, &c, now)); refs != 0 {
		t.Fatalf("a copy of the event: %d references", refs)
	}
	e, recs = prepare("entry first", inside)
	ch := live.AppendEventChange(nil, ChangeEventCreated, "key_a", nil, e, now)
	if refs := write(append(ch, recs...)); refs != 0 {
		t.Fatalf("the entry before its event: %d references", refs)
	}
	// An update (the actor passes the stored versions): a reference, the old version whole.
	cur := storedEvent(&live.Events, created[1].ID)
	_, recs, err := live.UpdateEvent(cur.ID, EventInput{Name: ptr("renamed"), StartsAt: ptr(inside.AddDate(0, 0, 7).Format(time.RFC3339)),
		EndsAt: ptr(inside.AddDate(0, 0, 14).Format(time.RFC3339))}, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	stored := recs[0].Value.(*ExternalEvent)
	if refs := write(live.AppendEventChange(recs, ChangeEventUpdated, "key_b", cur, stored, now)); refs != 1 {
		t.Fatalf("update: %d references", refs)
	}
	// A deletion: no new event, whole.
	cur = storedEvent(&live.Events, created[2].ID)
	recs, err = live.DeleteEvent(cur.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if refs := write(live.AppendEventChange(recs, ChangeEventDeleted, "key_b", cur, nil, now)); refs != 0 {
		t.Fatalf("delete: %d references", refs)
	}
	// An event deleted after its reference was written: the entry replays with the event it had.
	cur = storedEvent(&live.Events, created[3].ID)
	recs, err = live.DeleteEvent(cur.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	write(recs)
	// Some entries computed.
	for _, p := range live.PendingChanges(3) {
		zero := Quantity(0)
		write(live.CompleteChange(p.ID, ChangeFigures{EffectStatus: EffectNoHistory, UpdatedAt: &now, Delta: &zero}))
	}

	if len(live.Changes) != 13 {
		t.Fatalf("%d entries", len(live.Changes))
	}
	for _, st := range []*TenantState{replayed, replayedOld} {
		if len(st.Changes) != len(live.Changes) || st.Events.Len() != live.Events.Len() {
			t.Fatalf("replayed %d entries, %d events; live %d, %d", len(st.Changes), st.Events.Len(), len(live.Changes), live.Events.Len())
		}
		for id, want := range live.Changes {
			got := st.Changes[id]
			// What the live entry replays to, whatever the journal's form: invalid UTF-8 in a
			// name comes back as U+FFFD from any JSON.
			wb, _ := json.Marshal(want)
			var back ChangeEntry
			if err := json.Unmarshal(wb, &back); err != nil {
				t.Fatal(err)
			}
			wb, _ = json.Marshal(&back)
			gb, err := json.Marshal(got)
			if err != nil || !bytes.Equal(gb, wb) {
				t.Errorf("entry %s replayed:\n got %s\nwant %s (%v)", id, gb, wb, err)
			}
		}
		if got, want := fmt.Sprint(ids(st.PendingChanges(100))), fmt.Sprint(ids(live.PendingChanges(100))); got != want {
			t.Errorf("pending %s, want %s", got, want)
		}
	}
	// The replayed entries of a reference share the event the state holds.
	shared := 0
	for _, e := range replayed.Changes {
		if e.Pending != nil && e.Pending.New != nil && storedEvent(&replayed.Events, e.EventID) == e.Pending.New {
			shared++
		}
	}
	if shared < 5 {
		t.Errorf("%d pending entries share their event after replay", shared)
	}
}

func ids(es []*ChangeEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// TestChangeEventRefWithoutItsEvent: a reference whose event the state does not hold is refused
// with an error naming it, not stored without its event.
func TestChangeEventRefWithoutItsEvent(t *testing.T) {
	recs, err := DecodeRecords([]byte(`[{"k":"fchangeref","i":"chg_1","v":{"id":"chg_1","changeType":"EVENT_CREATED","eventId":"evt_gone",` +
		`"actor":"a","previousTotal":null,"newTotal":null,"delta":null,"reason":"r","createdAt":"2026-11-30T09:00:00Z",` +
		`"effectStatus":"PENDING","pending":{}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	st := NewTenantState("org_chg")
	if err := st.Apply(recs[0]); err == nil || !strings.Contains(err.Error(), "evt_gone") {
		t.Fatalf("apply: %v", err)
	}
	if len(st.Changes) != 0 {
		t.Fatalf("%d entries stored", len(st.Changes))
	}
}

// TestChangeFiguresOverAnEntry: the figures record completes its entry on a copy (the entry a
// snapshot view shares is left as it was), leaves the other fields as they were, takes the entry
// out of the pending ones, and does nothing for an entry that has gone.
func TestChangeFiguresOverAnEntry(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	st := NewTenantState("org_fig")
	ev := &ExternalEvent{ID: "evt_1", Name: "promo", Type: "PROMOTION", StartsAt: now, EndsAt: now.AddDate(0, 0, 7)}
	if err := st.Apply(Put(KindEvent, ev.ID, ev)); err != nil {
		t.Fatal(err)
	}
	for _, r := range st.EventChange(ChangeEventCreated, "key_a", nil, ev, now) {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	pending := st.PendingChanges(10)
	if len(pending) != 1 {
		t.Fatalf("%d pending", len(pending))
	}
	before := st.Changes[pending[0].ID]
	if pending[0] != before {
		t.Fatal("PendingChanges gave a copy of the stored entry")
	}
	beforeJSON, _ := json.Marshal(before)
	later := now.Add(time.Second)
	prev, next := 100.0, 125.0
	f := ChangeFigures{EffectStatus: EffectComputed, SeriesCount: 3, UpdatedAt: &later}
	f.SetTotals(&prev, &next)
	recs := st.CompleteChange(before.ID, f)
	if len(recs) != 1 || recs[0].Kind != KindChangeFigures {
		t.Fatalf("completion records %+v", recs)
	}
	replayEntry(t, st, recs) // as the journal writes and replays it
	got := st.Changes[before.ID]
	if b, _ := json.Marshal(before); got == before || !bytes.Equal(b, beforeJSON) {
		t.Fatalf("the entry was changed in place: %s", b)
	}
	want := *before
	want.Pending, want.EffectStatus, want.SeriesCount, want.UpdatedAt = nil, EffectComputed, 3, &later
	want.SetTotals(&prev, &next)
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(&want)
	if !bytes.Equal(gb, wb) {
		t.Fatalf("completed entry\n got %s\nwant %s", gb, wb)
	}
	if p := st.PendingChanges(10); len(p) != 0 || len(st.pendingOrder) != 0 {
		t.Fatalf("still pending: %v, queue %v", ids(p), st.pendingOrder)
	}
	if len(st.CompleteChange(before.ID, f)) != 0 {
		t.Fatal("a completed entry completed again")
	}
	if err := st.Apply(Put(KindChangeFigures, "chg_gone", &ChangeFigures{EffectStatus: EffectComputed})); err != nil || len(st.Changes) != 1 {
		t.Fatalf("figures of a gone entry: %v, %d entries", err, len(st.Changes))
	}
}
