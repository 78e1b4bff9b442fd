package supplyplan

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestLoopRunStateSnapshotSameBytes: the runtime state's hand-written snapshot encoding writes
// exactly json.Marshal's bytes, on a state built by real changes (instances, audit events with and
// without payloads, an Idempotency-Key, the month's usage, outbound events in the outbox) and on
// the values the hand-written encodings decline (raw JSON with whitespace or HTML characters, nil
// entries), and the snapshot loads back into the same state.
func TestLoopRunStateSnapshotSameBytes(t *testing.T) {
	st := NewLoopRunState("org_1")
	a := mustStart(t, st, "PO-1", rt0)
	mustStart(t, st, "PO-<2>", rt0.Add(time.Second))
	meta := planner
	meta.IdempotencyKey, meta.Fingerprint = "k1", "fp-a"
	res, recs, err := st.Transition(a.ID, LoopTransitionInput{Name: "submit", Roles: admin}, meta, PlanLoopEffects, rt0.Add(time.Minute))
	if err != nil || res.Replay != nil {
		t.Fatal(err)
	}
	runApply(t, st, recs)
	same := func(what string) {
		t.Helper()
		want, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := st.AppendSnapshotJSON([]byte("prefix"))
		if !ok || !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("%s: ok %v\n got %s\nwant %s", what, ok, got, want)
		}
		m, err := MarshalSnapshot(st, 16)
		if err != nil || !bytes.Equal(m, want) {
			t.Fatalf("%s: MarshalSnapshot %s (%v)", what, m, err)
		}
		back := NewLoopRunState("org_1")
		if err := json.Unmarshal(m, back); err != nil {
			t.Fatal(err)
		}
		again, err := json.Marshal(back)
		if err != nil || !bytes.Equal(again, want) {
			t.Fatalf("%s: loaded back as %s (%v)", what, again, err)
		}
	}
	same("after changes")
	if len(st.Idem) == 0 || len(st.Usage) == 0 || len(st.PendingEvents) == 0 || len(st.Events[a.ID]) < 2 {
		t.Fatalf("the state lacks what the test means to encode: %d keys, %d usage, %d pending, %d events",
			len(st.Idem), len(st.Usage), len(st.PendingEvents), len(st.Events[a.ID]))
	}
	// Values the hand-written encodings decline: each is written by encoding/json in its place.
	in := st.Instances[a.ID]
	odd := *in
	odd.Input = json.RawMessage(`{ "po": "<x>" }`)
	st.Instances[a.ID] = &odd
	ev := *st.Events[a.ID][0]
	ev.Payload = json.RawMessage("{\"note\": \"a & b\"}")
	st.Events[a.ID] = append([]*LoopEvent{&ev}, st.Events[a.ID][1:]...)
	st.Events["lin_none"] = nil
	st.Usage["2026-12"] = &LoopUsage{Period: "2026-12", Transitions: 3, Reached: []int{80}}
	same("declined values")
	// Empty and nil maps.
	st.Usage, st.PendingEvents, st.Idem = nil, map[string]*DomainEvent{}, nil
	want, _ := json.Marshal(st)
	if got, ok := st.AppendSnapshotJSON(nil); !ok || !bytes.Equal(got, want) {
		t.Fatalf("nil maps: %s, want %s", got, want)
	}
	// A value encoding/json refuses: the encoder declines and json.Marshal reports the error.
	bad := odd
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	bad.ClosedAt = &far
	st.Instances[a.ID] = &bad
	if _, ok := st.AppendSnapshotJSON(nil); ok {
		t.Fatal("a year past 9999 was encoded")
	}
	if _, err := MarshalSnapshot(st, 0); err == nil {
		t.Fatal("MarshalSnapshot encoded a year past 9999")
	}
}

// BenchmarkLoopRunStateSnapshot: a snapshot of 16 instances with 102 audit events each, through
// the hand-written encoding and through encoding/json's reflection (the outbox relayed).
func BenchmarkLoopRunStateSnapshot(b *testing.B) {
	st := NewLoopRunState("org_1")
	for i := range 16 {
		in := mustStart(b, st, "PO-"+string(rune('a'+i)), rt0)
		mustFire(b, st, in.ID, "submit", "", admin, rt0)
		for j := range 50 {
			now := rt0.Add(time.Duration(j) * time.Second)
			for _, action := range []string{LoopActionSuspend, LoopActionResume} {
				_, recs, err := st.Lifecycle(in.ID, action, LoopLifecycleInput{}, planner, PlanLoopEffects, now)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs { // as the actor applies them (a replay decodes outbound events' data as maps)
					if err := st.Apply(r); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
	clear(st.PendingEvents) // relayed, as the relay does within moments
	for _, tc := range []struct {
		name string
		enc  func() ([]byte, error)
	}{
		{"hand-written", func() ([]byte, error) { return MarshalSnapshot(st, 1<<20) }},
		{"encoding-json", func() ([]byte, error) { return json.Marshal(st) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := tc.enc()
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(data)))
			}
		})
	}
}
