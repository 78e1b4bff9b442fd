package supplyplan

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// storedEvent returns the event of an id, nil when there is none.
func storedEvent(s *EventStore, id string) *ExternalEvent {
	e, _ := s.Get(id)
	return e
}

// eventsByID returns the events of a store as a map.
func eventsByID(s *EventStore) map[string]*ExternalEvent {
	m := map[string]*ExternalEvent{}
	for e := range s.All() {
		m[e.ID] = e
	}
	return m
}

// TestEventStore checks the store against a map through puts, replacements and deletions (a
// freed slot taken again), with ids of every length, longer than a key holds too.
func TestEventStore(t *testing.T) {
	var s EventStore
	want := map[string]*ExternalEvent{}
	check := func(step string) {
		t.Helper()
		if s.Len() != len(want) {
			t.Fatalf("%s: Len %d, want %d", step, s.Len(), len(want))
		}
		if got := eventsByID(&s); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: All gives %v, want %v", step, got, want)
		}
		for id, e := range want {
			if got, ok := s.Get(id); !ok || got != e {
				t.Fatalf("%s: Get(%q) = %p %v, want %p", step, id, got, ok, e)
			}
		}
		if _, ok := s.Get("evt_absent"); ok {
			t.Fatalf("%s: Get of an absent id found one", step)
		}
	}
	ids := []string{"", "a", "evt_01m84pssv2tnbmerzzkzhxbr76", strings.Repeat("x", eventKeyLen), strings.Repeat("y", eventKeyLen+1), strings.Repeat("z", 200)}
	for i := range 40 {
		ids = append(ids, fmt.Sprintf("evt_%d", i))
	}
	for _, id := range ids {
		e := &ExternalEvent{ID: id, Name: "first " + id}
		if _, old := s.Put(e); old != nil {
			t.Fatalf("put %q: replaced %v", id, old)
		}
		want[id] = e
	}
	check("puts")
	for i, id := range ids {
		if i%3 != 0 {
			continue
		}
		e := &ExternalEvent{ID: id, Name: "second " + id}
		slot, _ := s.slotOf(id)
		if got, old := s.Put(e); old != want[id] || got != slot {
			t.Fatalf("replace %q: slot %d (was %d), old %v, want %v", id, got, slot, old, want[id])
		}
		want[id] = e
	}
	check("replacements")
	freed := map[uint32]bool{}
	for i, id := range ids {
		if i%2 == 0 {
			continue
		}
		slot, old := s.Delete(id)
		if old != want[id] {
			t.Fatalf("delete %q: %v, want %v", id, old, want[id])
		}
		freed[slot] = true
		delete(want, id)
		if _, old := s.Delete(id); old != nil {
			t.Fatalf("delete %q twice: %v", id, old)
		}
	}
	check("deletions")
	for i := range len(freed) + 3 {
		e := &ExternalEvent{ID: fmt.Sprintf("evt_new_%d", i)}
		slot, _ := s.Put(e)
		if i < len(freed) && !freed[slot] {
			t.Fatalf("put %d after deletions: slot %d, not a freed one", i, slot)
		}
		want[e.ID] = e
	}
	check("puts after deletions")
	if len(s.slots) != len(ids)+3 {
		t.Fatalf("%d slots for at most %d events at once", len(s.slots), len(ids)+3)
	}
}

// TestEventStoreJSON checks that the store reads and writes the object of the map it replaced
// (the snapshots), that an event takes its key as id, and that null is no events.
func TestEventStoreJSON(t *testing.T) {
	lift := 0.25
	at := time.Date(2026, 12, 28, 0, 0, 0, 0, time.UTC)
	m := map[string]*ExternalEvent{
		"evt_b": {ID: "evt_b", Name: "B", Type: EventPromotion, StartsAt: at, EndsAt: at.AddDate(0, 0, 7), Value: &EventValue{LiftPct: &lift}},
		"evt_a": {ID: "evt_a", Name: "A", Type: EventHoliday, StartsAt: at, EndsAt: at, ProductMasterID: "P1"},
	}
	want, _ := json.Marshal(m)
	var s EventStore
	if err := json.Unmarshal(want, &s); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("round trip:\n%s\nwant\n%s", got, want)
	}
	var keyed EventStore
	if err := json.Unmarshal([]byte(`{"evt_k":{"id":"evt_other","name":"K"}}`), &keyed); err != nil {
		t.Fatal(err)
	}
	if e, ok := keyed.Get("evt_k"); !ok || e.ID != "evt_k" || e.Name != "K" || keyed.Len() != 1 {
		t.Fatalf("an event under another key: %+v %v", e, ok)
	}
	var none EventStore
	if err := json.Unmarshal([]byte(`null`), &none); err != nil || none.Len() != 0 {
		t.Fatalf("null: %v, %d events", err, none.Len())
	}
	if err := json.Unmarshal([]byte(`[1]`), &none); err == nil {
		t.Fatal("an array decoded as events")
	}
}

// TestEventStoreView checks that a snapshot's view keeps the events of its moment while the
// store goes on changing.
func TestEventStoreView(t *testing.T) {
	var s EventStore
	a, b := &ExternalEvent{ID: "evt_a"}, &ExternalEvent{ID: "evt_b"}
	s.Put(a)
	s.Put(b)
	view := s.View()
	s.Delete("evt_a")
	s.Put(&ExternalEvent{ID: "evt_b", Name: "changed"})
	s.Put(&ExternalEvent{ID: "evt_c"})
	got := slices.Collect(view.All())
	if len(got) != 2 || got[0] != a || got[1] != b || view.Len() != 2 {
		t.Fatalf("view after changes: %v (Len %d), want the two first events", got, view.Len())
	}
}

// TestEventIndexAfterSlotReuse checks the index when a deleted event's slot is taken by an
// event of another scope, and when an update moves an event to another scope in its slot.
func TestEventIndexAfterSlotReuse(t *testing.T) {
	s := NewTenantState("org_1")
	put := func(e *ExternalEvent) {
		t.Helper()
		if err := s.Apply(Put(KindEvent, e.ID, e)); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(product, location string) []string {
		var out []string
		for _, e := range s.EventsFor(product, location, nil) {
			out = append(out, e.ID)
		}
		slices.Sort(out)
		return out
	}
	put(&ExternalEvent{ID: "evt_1", ProductMasterID: "P1"})
	put(&ExternalEvent{ID: "evt_2", LocationID: "L1"})
	if err := s.Apply(Del(KindEvent, "evt_1")); err != nil {
		t.Fatal(err)
	}
	put(&ExternalEvent{ID: "evt_3", ProductMasterID: "P2", LocationID: "L1"}) // evt_1's slot
	put(&ExternalEvent{ID: "evt_2", ProductMasterID: "P1"})                   // from L1 to P1
	for _, c := range []struct {
		product, location string
		want              []string
	}{
		{"P1", "L1", []string{"evt_2"}},
		{"P2", "L1", []string{"evt_3"}},
		{"P2", "L2", nil},
		{"", "L1", nil},
	} {
		if got := ids(c.product, c.location); !slices.Equal(got, c.want) {
			t.Errorf("EventsFor(%q, %q) = %v, want %v", c.product, c.location, got, c.want)
		}
	}
	if s.HasEventsFor("P9", "L1") {
		t.Error("L1 still has an event of its own")
	}
}

// TestEventStoreHoldsNoPointersButItsEvents checks what the store is for: the map from id to
// slot and the index's sets hold no pointer, so the collector does not read them.
func TestEventStoreHoldsNoPointersButItsEvents(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[map[eventKey]uint32](), reflect.TypeFor[eventSet]()} {
		for _, part := range []reflect.Type{typ.Key(), typ.Elem()} {
			if hasPointers(part) {
				t.Errorf("%v: its %v holds pointers", typ, part)
			}
		}
	}
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Array:
		return hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr, reflect.Float32, reflect.Float64:
		return false
	}
	return true
}

// BenchmarkEventStoreGC times a full collection of a heap holding 300,000 events, in the store
// with its index (store) and, as the baseline, in the map of pointers and sets of pointers it
// replaced (map).
func BenchmarkEventStoreGC(b *testing.B) {
	const n = 300_000
	at := time.Date(2026, 12, 28, 0, 0, 0, 0, time.UTC)
	events := func() []*ExternalEvent {
		out := make([]*ExternalEvent, n)
		for i := range out {
			lift := 0.25
			out[i] = &ExternalEvent{ID: NewID("evt"), Name: fmt.Sprintf("Promo %d", i%50), Type: EventPromotion,
				StartsAt: at, EndsAt: at.AddDate(0, 0, 7), Value: &EventValue{LiftPct: &lift},
				ProductMasterID: fmt.Sprintf("sku-%d", i%500)}
		}
		return out
	}
	collect := func(b *testing.B, keep any) {
		runtime.GC()
		b.ResetTimer()
		for b.Loop() {
			runtime.GC()
		}
		b.StopTimer()
		runtime.KeepAlive(keep)
	}
	b.Run("store", func(b *testing.B) {
		s := NewTenantState("org_1")
		for _, e := range events() {
			if err := s.Apply(Put(KindEvent, e.ID, e)); err != nil {
				b.Fatal(err)
			}
		}
		collect(b, s)
	})
	b.Run("map", func(b *testing.B) {
		byID := map[string]*ExternalEvent{}
		byProduct := map[string]map[*ExternalEvent]struct{}{}
		for _, e := range events() {
			byID[e.ID] = e
			set := byProduct[e.ProductMasterID]
			if set == nil {
				set = map[*ExternalEvent]struct{}{}
				byProduct[e.ProductMasterID] = set
			}
			set[e] = struct{}{}
		}
		collect(b, []any{byID, byProduct})
	})
}
