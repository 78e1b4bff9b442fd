package supplyplan

import (
	"encoding/json"
	"slices"
)

// SnapshotEncoder is a state with a hand-written snapshot encoding: AppendSnapshotJSON appends
// exactly the bytes json.Marshal writes for the state, or reports false (the caller then uses
// json.Marshal, which also reports the error a value that cannot be encoded makes).
type SnapshotEncoder interface {
	AppendSnapshotJSON(b []byte) ([]byte, bool)
}

var _ SnapshotEncoder = (*LoopRunState)(nil)

// AppendSnapshotJSON writes the runtime state of an organization as json.Marshal does (members in
// field order, map keys sorted), its instances, audit events, usage and outbound events with their
// hand-written encodings (record_json_loop.go): the actor snapshots the state every so often, and
// its audit events, which only grow, were most of the snapshot's reflection
// (TestLoopRunStateSnapshotSameBytes).
func (s *LoopRunState) AppendSnapshotJSON(b []byte) ([]byte, bool) {
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"orgId":`)
	w.str(s.OrgID)
	w.raw(`,"definitions":`)
	appendSnapshotMap(&w, s.Definitions, func(w *jsonWriter, d *LoopDefinition) { w.marshal(d) })
	w.raw(`,"instances":`)
	appendSnapshotMap(&w, s.Instances, func(w *jsonWriter, in *LoopInstance) { w.appender(in) })
	w.raw(`,"events":`)
	appendSnapshotMap(&w, s.Events, func(w *jsonWriter, evs []*LoopEvent) {
		if evs == nil {
			w.raw("null")
			return
		}
		w.raw("[")
		for i, e := range evs {
			if i > 0 {
				w.raw(",")
			}
			w.appender(e)
		}
		w.raw("]")
	})
	w.raw(`,"idem":`)
	appendSnapshotMap(&w, s.Idem, func(w *jsonWriter, e *LoopIdem) { w.marshal(e) })
	if len(s.Usage) > 0 {
		w.raw(`,"usage":`)
		appendSnapshotMap(&w, s.Usage, func(w *jsonWriter, u *LoopUsage) { w.appender(u) })
	}
	if len(s.PendingEvents) > 0 {
		w.raw(`,"pendingEvents":`)
		appendSnapshotMap(&w, s.PendingEvents, func(w *jsonWriter, e *DomainEvent) { w.appender(e) })
	}
	w.raw("}")
	return w.b, w.ok
}

// appender writes v with its hand-written encoding, or through encoding/json when that declines.
func (w *jsonWriter) appender(v jsonAppender) {
	if !w.ok {
		return
	}
	mark := len(w.b)
	out, ok := v.appendJSON(w.b)
	if ok {
		w.b = out
		return
	}
	w.b = out[:mark]
	w.marshal(v)
}

// appendSnapshotMap writes m as encoding/json writes a map with string keys: null when nil, else
// the members sorted by key.
func appendSnapshotMap[T any](w *jsonWriter, m map[string]T, value func(*jsonWriter, T)) {
	if m == nil {
		w.raw("null")
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.raw("{")
	for i, k := range keys {
		if !w.ok {
			return
		}
		if i > 0 {
			w.raw(",")
		}
		w.str(k)
		w.raw(":")
		value(w, m[k])
	}
	w.raw("}")
}

// MarshalSnapshot is json.Marshal(state) for a snapshot, through the state's hand-written
// encoding when it has one (SnapshotEncoder), into a buffer of about sizeHint bytes.
func MarshalSnapshot(state any, sizeHint int) ([]byte, error) {
	if e, ok := state.(SnapshotEncoder); ok {
		if b, ok := e.AppendSnapshotJSON(make([]byte, 0, sizeHint)); ok {
			return b, nil
		}
	}
	return json.Marshal(state)
}
