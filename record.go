package supplyplan

import (
	"encoding/json"
	"fmt"
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

// EncodeRecords renders a journal entry: json.Marshal(recs), with the values that have a
// hand-written encoding (record_json.go) written without reflection, to the same bytes.
func EncodeRecords(recs []Record) ([]byte, error) {
	for _, r := range recs {
		if _, ok := r.Value.(jsonAppender); ok {
			return encodeRecordsFast(recs)
		}
	}
	return json.Marshal(recs)
}

// DecodeRecords parses a journal entry.
func DecodeRecords(b []byte) ([]Record, error) {
	var recs []Record
	err := json.Unmarshal(b, &recs)
	return recs, err
}
