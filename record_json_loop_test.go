package supplyplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestEncodeLoopRecordsSameBytes: the loop runtime's hand-written encodings (instance, audit
// event, outbound event, usage) write exactly what encoding/json writes, on random values with the
// cases that differ: strings that need escaping, raw JSON with whitespace, HTML characters, U+2028
// or invalid bytes, nil and set pointers, omitted fields, years out of range, subjects and effects.
func TestEncodeLoopRecordsSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 5))
	strs := []string{"", "a", "lin_01ABC", "sha256:00ff", `quo"te`, `back\slash`, "<tag>", "a&b", "tab\there", "é", "\u2028", "\xff"}
	str := func() string { return strs[rng.IntN(len(strs))] }
	raws := []json.RawMessage{nil, json.RawMessage(`{}`), json.RawMessage(`{"a":1}`), json.RawMessage(`{"defects":[{"code":"SCRATCH","quantity":1}]}`),
		json.RawMessage(`{ "a": 1 }`), json.RawMessage(`{"a":"x y"}`), json.RawMessage(`{"a":"<b>"}`), json.RawMessage(`{"a":"\u2028"}`),
		json.RawMessage("{\"a\":\"\u2028\"}"), json.RawMessage(`{"a":"q\"uo"}`), json.RawMessage(`{"a":`), json.RawMessage(`[1,2]`),
		json.RawMessage("{\"a\":\"\xff\"}"), json.RawMessage(`{"a":"\\"}`), json.RawMessage("\n{}")}
	raw := func() json.RawMessage { return raws[rng.IntN(len(raws))] }
	times := []time.Time{time.Date(2026, 11, 27, 18, 0, 0, 123000000, time.UTC), {}, time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	tm := func() time.Time { return times[rng.IntN(len(times))] }
	tp := func() *time.Time {
		if rng.IntN(2) == 0 {
			return nil
		}
		v := tm()
		return &v
	}
	actor := func() LoopActor { return LoopActor{Type: str(), Sub: str(), Iss: str(), Jti: str()} }
	event := func() LoopEvent {
		return LoopEvent{Seq: rng.Int64N(1e6), InstanceID: str(), Type: str(), From: str(), To: str(), Transition: str(), Status: LoopInstanceStatus(str()),
			Actor: actor(), Reason: str(), RequestID: str(), IdempotencyKey: str(), DefinitionDigest: str(), OccurredAt: tm(), Payload: raw(),
			PrevHash: str(), Hash: str()}
	}
	instance := func() *LoopInstance {
		in := &LoopInstance{ID: str(), OrganizationID: str(), Loop: str(), LoopVersion: str(), DefinitionDigest: str(), Domain: LoopDomain(str()),
			BusinessKey: str(), Status: LoopInstanceStatus(str()), State: str(), Version: rng.Int64N(100), Input: raw(), TimerDueAt: tp(),
			TimerTransition: str(), TimerRemainingMs: []int64{0, 5}[rng.IntN(2)], LastSeq: rng.Int64N(100), LastHash: str(), StartedBy: actor(),
			CreatedAt: tm(), UpdatedAt: tm(), ClosedAt: tp(), CloseReason: str()}
		if rng.IntN(3) == 0 {
			in.Subject = &LoopSubject{Kind: str(), ID: str(), DestinationLocationID: str(), Lines: []LoopSubjectLine{{SKU: str(), Quantity: 1.5}}}
		}
		switch rng.IntN(3) {
		case 1:
			in.Effects = []LoopEffect{}
		case 2:
			in.Effects = []LoopEffect{{Seq: 3, ID: str(), Kind: LoopEffectShipment, Status: LoopEffectApplied, OrderID: str(), AppliedAt: tp(),
				Lines: []LoopStockLine{{SKU: str(), LocationID: str(), Quantity: 2, ExpiresAt: tp()}}}}
		}
		return in
	}
	for i := range 3000 {
		in := instance()
		ev := event()
		out := LoopOutboundEvent(*in, ev)
		usage := &LoopUsage{Period: str(), Transitions: rng.Int64N(1e9)}
		if rng.IntN(2) == 0 {
			usage.Reached = []int{80, 100}
		}
		recs := []Record{Put(KindLoopInstance, str(), in), Put(KindLoopEvent, str(), &ev), EventRecord(out), Put(KindLoopUsage, str(), usage),
			Put(KindLoopInstance, str(), (*LoopInstance)(nil))}
		rng.Shuffle(len(recs), func(a, b int) { recs[a], recs[b] = recs[b], recs[a] })
		recs = recs[:1+rng.IntN(len(recs))]
		want, wantErr := json.Marshal(recs)
		got, gotErr := EncodeRecords(recs)
		if (wantErr == nil) != (gotErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("case %d:\nencoding/json %s (%v)\nEncodeRecords %s (%v)", i, want, wantErr, got, gotErr)
		}
		want, wantErr = json.Marshal(in)
		if got, ok := AppendLoopInstanceJSON(nil, in); ok && (wantErr != nil || !bytes.Equal(got, want)) {
			t.Fatalf("case %d: instance\nencoding/json %s (%v)\nAppendLoopInstanceJSON %s", i, want, wantErr, got)
		}
	}
	// The values the runtime writes take the hand-written path (no fallback to encoding/json).
	in := &LoopInstance{ID: "lin_1", OrganizationID: "org_1", Loop: "supplyplan/quality", Status: LoopRunning, State: "on_hold",
		Input: json.RawMessage(`{}`), CreatedAt: times[0], UpdatedAt: times[0]}
	ev := LoopEvent{Seq: 2, InstanceID: "lin_1", OccurredAt: times[0], Payload: json.RawMessage(`{"defects":[{"code":"SCRATCH","quantity":1}]}`)}
	for _, v := range []jsonAppender{in, &ev, &DomainEvent{ID: "evt", Timestamp: times[0], Data: LoopOutboundEvent(*in, ev).Data}, &LoopUsage{Period: "2026-11"}} {
		if _, ok := v.appendJSON(nil); !ok {
			t.Fatalf("%T took the slow path", v)
		}
	}
}

// TestLoopOutboundEventID: the outbound event id is fmt's evt_loop_%s_%010d (redeliveries of events
// written before keep their ids).
func TestLoopOutboundEventID(t *testing.T) {
	for _, seq := range []int64{0, 1, 9, 10, 123456789, 1234567890, 12345678901, 1<<63 - 1, -1, -12} {
		if got, want := loopOutboundEventID("lin_01ABC", seq), fmt.Sprintf("evt_loop_%s_%010d", "lin_01ABC", seq); got != want {
			t.Errorf("seq %d: %s, want %s", seq, got, want)
		}
	}
	for _, d := range []LoopDomain{LoopDomainProcurement, LoopDomainOrders, LoopDomainReturns, LoopDomainQuality, LoopDomainCustom, "Mixed"} {
		if got := loopDomainName(d); got != strings.ToLower(string(d)) {
			t.Errorf("domain %s: %s", d, got)
		}
	}
}

// A resolution's hand-written encoding writes json.Marshal's bytes: with and without candidates,
// deprecation, range or tag, and strings that need escaping.
func TestLoopResolutionJSON(t *testing.T) {
	msg := "use 2.x <soon> \"now\" \u2028"
	for _, r := range []LoopResolution{
		{},
		{Name: "acme/restock", Version: "1.97.0", Digest: "sha256:ab", Integrity: "sha512-x+/=", Candidates: []string{"1.97.0", "1.96.0"}, Range: ">=1.0.0 <2.0.0-0"},
		{Name: "acme/restock", Version: "1.98.0", Deprecated: &msg, Candidates: []string{"1.98.0"}, Tag: "latest"},
		{Name: "a/é", Candidates: []string{}, Range: "<1 || >2"},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []any{r, &r} {
			got, ok := AppendJSON([]byte("x"), v)
			if !ok || string(got[1:]) != string(want) {
				t.Errorf("AppendJSON(%T) = %s, %v; want %s", v, got[1:], ok, want)
			}
		}
	}
}
