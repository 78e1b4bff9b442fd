package supplyplan

import (
	"cmp"
	"encoding/json"
	"iter"
	"slices"
)

// EventStore holds a tenant's events by id (ForecastingState.Events). Its JSON is the object of
// a map from id to event, as the map it replaced: snapshots are unchanged.
//
// Why not a map[string]*ExternalEvent: a tenant's events are most of its memory in the durable
// write benchmark (hundreds of thousands), and the collector visits every pointer of the map in
// hash order, two random loads per event (the id's bytes and the event), at every cycle. That
// walk was the growth of the write's cost with the tenant (issue 12: 36 -> 55 µs per write over
// the api section's rounds; the collector's marking 30-60 % of the service's CPU late in a long
// load). Here the events sit in a slice in the order they were stored, which the collector reads
// in order, and the map from id to slot holds no pointer at all, so the collector never reads it.
// The event index (event_index.go) files slots, not pointers, for the same reason.
// TestEventStoreHoldsNoPointersButItsEvents; BenchmarkEventStoreGC: a full collection of a heap
// of 300,000 events took 15.6 ms, against 35.3 ms in a map and sets of pointers.
//
// A deleted event's slot is taken by the next new one: the slots are as many as the most events
// the tenant held at once.
type EventStore struct {
	slots []*ExternalEvent // nil: a free slot, listed in free
	free  []uint32
	ids   map[eventKey]uint32 // ids up to eventKeyLen bytes (every id the service gives)
	long  map[string]uint32   // longer ids (only ever stored by hand)
	n     int
}

// eventKeyLen is the longest id an eventKey holds: "evt_" and 26 characters are 30.
const eventKeyLen = 31

// eventKey is an id as a value without pointers: its length, then its bytes.
type eventKey [eventKeyLen + 1]byte

func keyOf(id string) (eventKey, bool) {
	var k eventKey
	if len(id) > eventKeyLen {
		return k, false
	}
	k[0] = byte(len(id))
	copy(k[1:], id)
	return k, true
}

func (s *EventStore) slotOf(id string) (uint32, bool) {
	if k, ok := keyOf(id); ok {
		i, found := s.ids[k]
		return i, found
	}
	i, found := s.long[id]
	return i, found
}

// Len is the number of events.
func (s *EventStore) Len() int { return s.n }

// Get returns the event of an id.
func (s *EventStore) Get(id string) (*ExternalEvent, bool) {
	if i, ok := s.slotOf(id); ok {
		return s.slots[i], true
	}
	return nil, false
}

// Put stores e under its id, in place of the event of that id if there is one (returned), and
// returns its slot (the old event's, when there was one).
func (s *EventStore) Put(e *ExternalEvent) (slot uint32, old *ExternalEvent) {
	if i, ok := s.slotOf(e.ID); ok {
		old, s.slots[i] = s.slots[i], e
		return i, old
	}
	var i uint32
	if n := len(s.free); n > 0 {
		i, s.free = s.free[n-1], s.free[:n-1]
		s.slots[i] = e
	} else {
		i = uint32(len(s.slots))
		s.slots = append(s.slots, e)
	}
	if k, ok := keyOf(e.ID); ok {
		if s.ids == nil {
			s.ids = map[eventKey]uint32{}
		}
		s.ids[k] = i
	} else {
		if s.long == nil {
			s.long = map[string]uint32{}
		}
		s.long[e.ID] = i
	}
	s.n++
	return i, nil
}

// Delete removes the event of an id and returns it (nil when there was none) and its slot.
func (s *EventStore) Delete(id string) (slot uint32, old *ExternalEvent) {
	i, ok := s.slotOf(id)
	if !ok {
		return 0, nil
	}
	if k, short := keyOf(id); short {
		delete(s.ids, k)
	} else {
		delete(s.long, id)
	}
	old, s.slots[i] = s.slots[i], nil
	s.free = append(s.free, i)
	s.n--
	return i, old
}

// at returns the event in a slot (nil for a free one).
func (s *EventStore) at(slot uint32) *ExternalEvent { return s.slots[slot] }

// slotted yields every event with its slot.
func (s *EventStore) slotted() iter.Seq2[uint32, *ExternalEvent] {
	return func(yield func(uint32, *ExternalEvent) bool) {
		for i, e := range s.slots {
			if e != nil && !yield(uint32(i), e) {
				return
			}
		}
	}
}

// All yields every event, in no particular order.
func (s *EventStore) All() iter.Seq[*ExternalEvent] {
	return func(yield func(*ExternalEvent) bool) {
		for _, e := range s.slots {
			if e != nil && !yield(e) {
				return
			}
		}
	}
}

// View returns a copy of the store for a snapshot: the events themselves are shared (a stored
// event is never changed in place), the copy costs a pointer per slot, and it reads only All
// and Len (its ids are not copied).
func (s *EventStore) View() EventStore {
	return EventStore{slots: slices.Clone(s.slots), n: s.n}
}

// MarshalJSON writes the events as an object keyed by id, sorted by id as encoding/json sorts a
// map's keys (snapshots take another, faster path: actors.writeSnapshot). A value receiver, so
// that a TenantState marshaled by value encodes its events this way too.
func (s EventStore) MarshalJSON() ([]byte, error) {
	evs := slices.Collect(s.All())
	slices.SortFunc(evs, func(a, b *ExternalEvent) int { return cmp.Compare(a.ID, b.ID) })
	b := []byte{'{'}
	for i, e := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, e.ID)
		b = append(b, ':')
		v, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads an object keyed by id (null: no events). An event is stored under its key:
// an event whose own id differs from its key gets the key as its id.
func (s *EventStore) UnmarshalJSON(b []byte) error {
	var m map[string]*ExternalEvent
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = EventStore{slots: make([]*ExternalEvent, 0, len(m))}
	// In id order (ids sort by creation): the slots then follow the order the events were
	// created in, as they do live.
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if e := m[id]; e != nil {
			s.Put(withID(e, id))
		}
	}
	return nil
}

// withID returns e, or a copy of it with id as its id when its own differs.
func withID(e *ExternalEvent, id string) *ExternalEvent {
	if e.ID == id {
		return e
	}
	c := *e
	c.ID = id
	return &c
}
