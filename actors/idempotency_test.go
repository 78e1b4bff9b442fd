package actors

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

func idemRecord(key string, at time.Time, resp *supplyplan.IdempotentResponse) supplyplan.Record {
	return supplyplan.Put(supplyplan.KindIdempotency, supplyplan.IdempotencyID("org_1", key),
		&supplyplan.IdempotencyEntry{Scope: "org_1", Key: key, Fingerprint: "fp", At: at, Response: resp})
}

// The table holds the keys of the last 24 hours only, however many came before.
func TestIdemTableKeepsTheLastDay(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tab := newIdemTable()
	const perHour = 100
	for h := range 72 {
		at := t0.Add(time.Duration(h) * time.Hour)
		for i := range perHour {
			key := fmt.Sprintf("k%d-%d", h, i)
			if err := tab.apply(idemRecord(key, at, nil)); err != nil {
				t.Fatal(err)
			}
			// Its response replaces the marker without adding to the expiry order.
			if err := tab.apply(idemRecord(key, at, &supplyplan.IdempotentResponse{Status: 201})); err != nil {
				t.Fatal(err)
			}
		}
		tab.prune(at)
		if got, most := tab.len(), 25*perHour; got > most {
			t.Fatalf("hour %d: %d keys, at most %d expected", h, got, most)
		}
		if live := len(tab.order) - tab.head; live > 25*perHour {
			t.Fatalf("hour %d: expiry order holds %d entries", h, live)
		}
	}
	now := t0.Add(71 * time.Hour)
	if tab.get("org_1", "k71-0", now) == nil || tab.get("org_1", "k47-0", now) != nil {
		t.Fatal("a recent key is missing or an expired one is kept")
	}
	if e := tab.get("org_1", "k48-5", now); e == nil || e.Response == nil || e.Response.Status != 201 {
		t.Fatalf("k48-5 = %+v", e)
	}
}

func TestSnapshotCarriesIdempotencyKeys(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	entries := []*supplyplan.IdempotencyEntry{{Scope: "org_1", Key: "a", Fingerprint: "fp", At: at,
		Response: &supplyplan.IdempotentResponse{Status: 201, ContentType: "application/json", Body: `{"x":1}`}}}
	for _, state := range []string{`{}`, `{"orgs":{"o":1}}`, ` {"a":[1]} `} {
		data, err := withIdempotency([]byte(state), entries)
		if err != nil || !json.Valid(data) {
			t.Fatalf("%s: %s %v", state, data, err)
		}
		got, err := snapshotIdempotency(data)
		if err != nil || len(got) != 1 || got[0].Response.Body != `{"x":1}` || !got[0].At.Equal(at) {
			t.Fatalf("%s: %+v %v", state, got, err)
		}
		var back, orig map[string]any
		_ = json.Unmarshal(data, &back)
		_ = json.Unmarshal([]byte(state), &orig)
		delete(back, "$idempotency")
		if fmt.Sprint(back) != fmt.Sprint(orig) {
			t.Fatalf("%s: state became %v", state, back)
		}
	}
	// Snapshots written before idempotency keys existed load as they are.
	if got, err := snapshotIdempotency([]byte(`{"orgs":{}}`)); err != nil || got != nil {
		t.Fatalf("old snapshot: %v %v", got, err)
	}
	if data, _ := withIdempotency([]byte(`{"a":1}`), nil); string(data) != `{"a":1}` {
		t.Fatalf("no keys: %s", data)
	}
}
