package supplyplan

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Record is one state change in a journal entry: put (or delete) the value of Kind with ID.
// A write is a list of records applied atomically; replaying the same records rebuilds the same state.
type Record struct {
	Kind  string `json:"k"`
	ID    string `json:"i"`
	Del   bool   `json:"d,omitempty"`
	Value any    `json:"v,omitempty"`
}

// Put returns a record storing v under kind/id.
func Put(kind, id string, v any) Record { return Record{Kind: kind, ID: id, Value: v} }

// Del returns a record deleting kind/id.
func Del(kind, id string) Record { return Record{Kind: kind, ID: id, Del: true} }

// delAll returns the records deleting kind/id for every id, in id order (a journal entry in a
// stable order whatever the map iteration gave). It sorts ids.
func delAll(kind string, ids []string) []Record {
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	recs := make([]Record, len(ids))
	for i, id := range ids {
		recs[i] = Del(kind, id)
	}
	return recs
}

var (
	kindMu    sync.RWMutex
	kindTypes = map[string]func() any{}
)

// RegisterKind declares the Go type a record kind decodes into. Called from init functions.
func RegisterKind(kind string, newValue func() any) {
	kindMu.Lock()
	defer kindMu.Unlock()
	if _, dup := kindTypes[kind]; dup {
		panic("supplyplan: record kind registered twice: " + kind)
	}
	kindTypes[kind] = newValue
}

// UnmarshalJSON decodes the value into the type registered for its kind.
func (r *Record) UnmarshalJSON(b []byte) error {
	var raw struct {
		Kind  string          `json:"k"`
		ID    string          `json:"i"`
		Del   bool            `json:"d"`
		Value json.RawMessage `json:"v"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	r.Kind, r.ID, r.Del, r.Value = raw.Kind, raw.ID, raw.Del, nil
	if raw.Del || len(raw.Value) == 0 {
		return nil
	}
	kindMu.RLock()
	newValue, ok := kindTypes[raw.Kind]
	kindMu.RUnlock()
	if !ok {
		return fmt.Errorf("unknown record kind %q", raw.Kind)
	}
	v := newValue()
	if err := json.Unmarshal(raw.Value, v); err != nil {
		return fmt.Errorf("decode %s record %s: %w", raw.Kind, raw.ID, err)
	}
	r.Value = v
	return nil
}

// EncodeRecords renders a journal entry: the JSON array of the records, json.Marshal(recs)'s bytes,
// except for the records written as references to a record before them in the entry: an
// allocation or recommendation event in the outbox that its allocation or recommendation rebuilds
// exactly (allocation_event_ref.go, recommendation_event_ref.go), and a pending change-history
// entry holding the event of its transaction (change_event_ref.go). Values with a hand-written
// encoding (record_json.go) are written without reflection. A large entry
// (a generation of 50,000 recommendations is some 100 MB) is encoded record by record into one buffer
// sized from a sample of its records, rather than grown by doubling and copied once more at the end.
func EncodeRecords(recs []Record) ([]byte, error) {
	for _, r := range recs {
		if _, ok := r.Value.(jsonAppender); ok {
			return encodeRecordsFast(recs)
		}
	}
	const sample = 64
	n := len(recs)
	if n <= sample {
		return json.Marshal(recs)
	}
	size := 0
	for i := 0; i < sample; i++ {
		b, err := json.Marshal(recs[i*n/sample])
		if err != nil {
			return nil, err
		}
		size += len(b) + 1
	}
	buf := make([]byte, 1, size/sample*n*21/20+2)
	buf[0] = '['
	for i := range recs {
		b, err := json.Marshal(recs[i])
		if err != nil {
			return nil, err
		}
		if need := len(buf) + len(b) + 2; need > cap(buf) { // the sample was short: a quarter more
			buf = append(make([]byte, 0, need+cap(buf)/4), buf...)
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, b...)
	}
	return append(buf, ']'), nil
}

// DecodeRecords parses a journal entry.
func DecodeRecords(b []byte) ([]Record, error) {
	var recs []Record
	err := json.Unmarshal(b, &recs)
	return recs, err
}
