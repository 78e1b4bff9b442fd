package actors

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
)

// The view of a tenant state encodes exactly as the state, and changes of the state after the view
// was taken do not reach it.
func TestSnapshotViewOfTenantState(t *testing.T) {
	st := supplyplan.NewTenantState("org_1")
	apply := func(recs ...supplyplan.Record) {
		t.Helper()
		for _, r := range recs {
			if err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for i := range 20 {
		id := fmt.Sprintf("P%02d", i)
		apply(supplyplan.Put(supplyplan.KindProduct, id, &supplyplan.Product{ID: id, SKU: "sku-" + id, Name: "Product " + id}))
		ev := supplyplan.ExternalEvent{ID: fmt.Sprintf("evt_%d", i), Name: "Promo", Type: "PROMOTION", StartsAt: now, EndsAt: now.AddDate(0, 0, 7)}
		apply(supplyplan.Put(supplyplan.KindEvent, ev.ID, &ev))
		apply(st.EventChange(supplyplan.ChangeEventCreated, "key:\"planner\"", nil, &ev, now)...)
	}
	view, ok := snapshotView(st)
	if !ok {
		t.Fatal("a tenant state has no snapshot view")
	}
	live, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(view)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(live) {
		t.Fatalf("the view encodes as\n%s\nthe state as\n%s", got, live)
	}
	apply(supplyplan.Put(supplyplan.KindProduct, "P99", &supplyplan.Product{ID: "P99", SKU: "sku-P99"}),
		supplyplan.Del(supplyplan.KindEvent, "evt_3"),
		supplyplan.Put(supplyplan.KindEvent, "evt_4", &supplyplan.ExternalEvent{ID: "evt_4", Name: "Changed"}))
	after, err := json.Marshal(view)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(live) {
		t.Fatal("changes of the state after the view reached the view")
	}
	if changed, _ := json.Marshal(st); string(changed) == string(live) {
		t.Fatal("the state did not change (the test is void)")
	}

	// The snapshot encoder writes what json.Marshal and withIdempotency write, up to the order of
	// map members: both decode to the same state and keys.
	entries := []*supplyplan.IdempotencyEntry{{Scope: "org_1", Key: "k1", Fingerprint: "f", At: now}}
	fast, ok, err := encodeSnapshot(view, entries, 0)
	if !ok || err != nil {
		t.Fatalf("encodeSnapshot: %v, %v", ok, err)
	}
	slow, err := withIdempotency(live, entries)
	if err != nil {
		t.Fatal(err)
	}
	decode := func(data []byte) string {
		t.Helper()
		keys, err := snapshotIdempotency(data)
		if err != nil || len(keys) != 1 || keys[0].Key != "k1" {
			t.Fatalf("idempotency keys %v, %v in %.80s", keys, err, data)
		}
		back := supplyplan.NewTenantState("")
		if err := json.Unmarshal(data, back); err != nil {
			t.Fatalf("decode %.80s: %v", data, err)
		}
		b, _ := json.Marshal(back)
		return string(b)
	}
	if a, b := decode(fast), decode(slow); a != b || a != string(live) {
		t.Fatalf("the snapshot decodes to\n%s\nwant\n%s", a, b)
	}
	if none, _, _ := encodeSnapshot(view, nil, 0); decode2(t, none) != string(live) {
		t.Fatal("a snapshot without idempotency keys decodes differently")
	}
}

// writeSnapshot streams the same snapshot whatever its writer's buffer: one smaller than a value
// (every value encoded into a slice of its own), and the journal's, flushed many times over.
func TestWriteSnapshotThroughSmallBuffers(t *testing.T) {
	st := supplyplan.NewTenantState("org_1")
	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for i := range 3000 {
		ev := supplyplan.ExternalEvent{ID: fmt.Sprintf("evt_%d", i), Name: fmt.Sprintf("Promo \"%d\"", i), Type: "PROMOTION", StartsAt: now, EndsAt: now.AddDate(0, 0, 7)}
		if i%3 == 0 { // a value, its lift behind one more pointer (writeEvents reads it ahead)
			lift := float64(i) / 1000
			ev.Value = &supplyplan.EventValue{LiftPct: &lift, StackingMode: "MULTIPLICATIVE"}
			ev.ProductMasterID = fmt.Sprintf("sku-%d", i%7)
		}
		for _, r := range append([]supplyplan.Record{supplyplan.Put(supplyplan.KindEvent, ev.ID, &ev)}, st.EventChange(supplyplan.ChangeEventCreated, "key:\"planner\"", nil, &ev, now)...) {
			if err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	live, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	view, ok := snapshotView(st)
	if !ok {
		t.Fatal("no view")
	}
	for _, size := range []int{64, 4096, 1 << 20} {
		var out bytes.Buffer
		w := bufio.NewWriterSize(&out, size)
		ok, err := writeSnapshot(w, view, nil)
		if err == nil {
			err = w.Flush()
		}
		if !ok || err != nil {
			t.Fatalf("buffer %d: writeSnapshot %v, %v", size, ok, err)
		}
		if out.Len() < 3000*100 {
			t.Fatalf("buffer %d: a snapshot of %d bytes for 3,000 events", size, out.Len())
		}
		if got := decode2(t, out.Bytes()); got != string(live) {
			t.Fatalf("buffer %d: the streamed snapshot decodes to another state", size)
		}
	}
}

// A tenant without events has an empty events object in its snapshot (writeEvents' empty map).
func TestWriteSnapshotWithoutEvents(t *testing.T) {
	st := supplyplan.NewTenantState("org_1")
	view, ok := snapshotView(st)
	if !ok {
		t.Fatal("no view")
	}
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	if _, err := writeSnapshot(w, view, nil); err != nil || w.Flush() != nil {
		t.Fatalf("writeSnapshot: %v", err)
	}
	live, _ := json.Marshal(st)
	if got := decode2(t, out.Bytes()); got != string(live) || !bytes.Contains(out.Bytes(), []byte(`"events":{}`)) {
		t.Fatalf("snapshot %s decodes to %s, want %s", out.Bytes(), got, live)
	}
}

func decode2(t *testing.T, data []byte) string {
	t.Helper()
	back := supplyplan.NewTenantState("")
	if err := json.Unmarshal(data, back); err != nil {
		t.Fatalf("decode %.80s: %v", data, err)
	}
	b, _ := json.Marshal(back)
	return string(b)
}

// A state with anything but maps of shared values, strings, numbers and structs of those has no
// view: its snapshot is encoded in the actor.
func TestSnapshotViewRefusesOtherShapes(t *testing.T) {
	type withSlice struct{ Items []string }
	type withPointer struct{ Config *supplyplan.AlertConfig }
	type withMapOfSlices struct{ Items map[string][]string }
	type withInterface struct{ Value any }
	type withMarshaler struct{ When time.Time }
	for _, st := range []any{&withSlice{}, &withPointer{}, &withMapOfSlices{}, &withInterface{}, &withMarshaler{}, notes{}} {
		if _, ok := snapshotView(st); ok {
			t.Errorf("%T has a snapshot view", st)
		}
	}
	if _, ok := snapshotView(newNotes()); !ok {
		t.Error("a map of strings has no snapshot view")
	}
}

// Snapshots encoded off the actor while writes go on (run with -race: the view shares nothing the
// actor changes) load back to the state that was written.
func TestDurableViewSnapshotsWhileWriting(t *testing.T) {
	j := newMemJournal()
	start := func() (*actor.Engine, *actor.PID) {
		e, err := actor.NewEngine(actor.NewEngineConfig())
		if err != nil {
			t.Fatal(err)
		}
		pid := e.Spawn(func() actor.Receiver {
			return &durable[*notes]{stream: "notes", journal: j, newState: newNotes, snapEvery: 3, viewSnapshots: true,
				log: discardLogger()}
		}, "notes", actor.WithMaxRestarts(1<<30))
		t.Cleanup(func() { <-e.Poison(pid).Done() })
		return e, pid
	}
	e, pid := start()
	ctx := ctxFor(t, 20*time.Second)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 150 {
				if _, err := ask(ctx, bareEngine{e}, pid, putNote(fmt.Sprintf("%d-%d", w, i%40), fmt.Sprintf("note %d-%d", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	done := make(chan struct{})
	e.Send(pid, drainMsg{done: done})
	<-done
	j.mu.Lock()
	snapped := j.stream("notes").snap != nil
	j.mu.Unlock()
	if !snapped {
		t.Fatal("no snapshot was taken")
	}
	e2, pid2 := start()
	m, err := ask(ctx, bareEngine{e2}, pid2, readNotes)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 160 || m["2-39"] != "note 2-119" || m["3-9"] != "note 3-129" {
		t.Fatalf("rebuilt %d notes: %v", len(m), m["2-39"])
	}
}

// Every map of TenantState is copied whole (mapClones), not an entry at a time through reflect.
func TestSnapshotViewClonesEveryTenantMap(t *testing.T) {
	var walk func(reflect.Type, string)
	walk = func(tt reflect.Type, path string) {
		for i := range tt.NumField() {
			f := tt.Field(i)
			if !f.IsExported() {
				continue
			}
			switch f.Type.Kind() {
			case reflect.Struct:
				walk(f.Type, path+"."+f.Name)
			case reflect.Map:
				if _, ok := mapClones[f.Type]; !ok {
					t.Errorf("%s.%s (%s) has no entry in mapClones: add cloneWith[%s]()", path, f.Name, f.Type, f.Type)
				}
			}
		}
	}
	walk(reflect.TypeFor[supplyplan.TenantState](), "TenantState")
}

// The copy of the view's largest maps: whole (maps.Clone) against an entry at a time (reflect).
func BenchmarkSnapshotViewEvents(b *testing.B) {
	st := supplyplan.NewTenantState("org_1")
	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for i := range 200_000 {
		ev := supplyplan.ExternalEvent{ID: fmt.Sprintf("evt_%d", i), Name: "Promo", Type: "PROMOTION", StartsAt: now, EndsAt: now.AddDate(0, 0, 7)}
		if err := st.Apply(supplyplan.Put(supplyplan.KindEvent, ev.ID, &ev)); err != nil {
			b.Fatal(err)
		}
	}
	for _, whole := range []bool{true, false} {
		b.Run(fmt.Sprintf("whole=%v", whole), func(b *testing.B) {
			saved := mapClones
			if !whole {
				mapClones = nil
			}
			defer func() { mapClones = saved }()
			for b.Loop() {
				if _, ok := snapshotView(st); !ok {
					b.Fatal("no view")
				}
			}
		})
	}
}

// The encoding of a large tenant's events into a snapshot (writeSnapshot), the heap laid out as
// writes lay it out: each event's objects made one write at a time, with a request's worth of
// garbage between them, so that a walk in the map's order misses the caches as in the service.
func BenchmarkWriteSnapshotEvents(b *testing.B) {
	st := supplyplan.NewTenantState("org_1")
	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	var garbage [][]byte
	for i := range 300_000 {
		lift := 0.25
		created := now.Add(time.Duration(i) * time.Millisecond)
		ev := &supplyplan.ExternalEvent{ID: fmt.Sprintf("evt_%08d", i), Name: fmt.Sprintf("Promo %d", i%50), Type: "PROMOTION",
			StartsAt: now, EndsAt: now.AddDate(0, 0, 7), Value: &supplyplan.EventValue{LiftPct: &lift, StackingMode: "MULTIPLICATIVE"},
			ProductMasterID: fmt.Sprintf("sku-%d", i%500), CreatedAt: created, UpdatedAt: created}
		if err := st.Apply(supplyplan.Put(supplyplan.KindEvent, ev.ID, ev)); err != nil {
			b.Fatal(err)
		}
		garbage = append(garbage[:0], make([]byte, 700), make([]byte, 300), make([]byte, 200))
	}
	_ = garbage
	view, ok := snapshotView(st)
	if !ok {
		b.Fatal("no view")
	}
	w := bufio.NewWriterSize(io.Discard, 64<<10)
	b.ResetTimer()
	for b.Loop() {
		if _, err := writeSnapshot(w, view, nil); err != nil {
			b.Fatal(err)
		}
		_ = w.Flush()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/300_000, "ns/event")
}
