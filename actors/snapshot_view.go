package actors

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"sync"

	"github.com/supplyplan/supplyplan"
)

// snapshotView returns a copy of a state (a pointer to a struct) that another goroutine may encode
// as JSON while the actor goes on changing the state, or false when the state's type does not
// allow it. The copy is a new struct of the same type whose exported maps are new maps holding the
// same keys and values, and whose exported strings and numbers are copied; embedded structs are
// copied the same way; unexported fields (derived indexes, which JSON does not encode) are left
// zero. Copying a map costs a pointer per entry, against encoding every value as JSON.
//
// It is consistent only for a state whose map values are replaced, never changed in place: every
// record puts a whole new value (putValue in the root package), which TenantState's sub-states do.
// A type with anything else among its exported fields (a slice, a pointer, an interface, a struct
// with its own MarshalJSON) is refused, and its snapshot is encoded in the actor as before.
func snapshotView(state any) (any, bool) {
	v := reflect.ValueOf(state)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct || !viewable(v.Elem().Type()) {
		return nil, false
	}
	out := reflect.New(v.Elem().Type())
	copyView(out.Elem(), v.Elem())
	return out.Interface(), true
}

var (
	marshalerType  = reflect.TypeFor[json.Marshaler]()
	eventStoreType = reflect.TypeFor[supplyplan.EventStore]()
	viewableTypes  sync.Map // reflect.Type -> bool
)

// viewable reports whether copyView makes a consistent copy of struct type t (see snapshotView).
func viewable(t reflect.Type) bool {
	if ok, known := viewableTypes.Load(t); known {
		return ok.(bool)
	}
	ok := viewableStruct(t)
	viewableTypes.Store(t, ok)
	return ok
}

func viewableStruct(t reflect.Type) bool {
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			if f.Anonymous {
				return false // JSON encodes the exported fields of an unexported embedded struct
			}
			continue
		}
		if f.Type == eventStoreType {
			continue // copied by its View, written by writeEvents
		}
		switch f.Type.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		case reflect.Struct:
			if !viewableStruct(f.Type) {
				return false
			}
		case reflect.Map:
			if f.Type.Key().Kind() != reflect.String || !sharedValue(f.Type.Elem().Kind()) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// sharedValue reports whether map values of kind k may be shared between the state and its view:
// pointers (to values replaced, never changed in place), strings and scalars.
func sharedValue(k reflect.Kind) bool {
	switch k {
	case reflect.Pointer, reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// copyView copies src into dst (both of a viewable struct type).
func copyView(dst, src reflect.Value) {
	t := src.Type()
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			copyField(dst.Field(i), src.Field(i))
		}
	}
}

func copyField(dst, src reflect.Value) {
	if src.Type() == eventStoreType {
		es := src.Interface().(supplyplan.EventStore)
		dst.Set(reflect.ValueOf(es.View()))
		return
	}
	switch src.Kind() {
	case reflect.Struct:
		copyView(dst, src)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		if clone, ok := mapClones[src.Type()]; ok {
			dst.Set(clone(src))
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		// One key and one value reused for every entry: Key and Value would allocate each.
		k, v := reflect.New(src.Type().Key()).Elem(), reflect.New(src.Type().Elem()).Elem()
		it := src.MapRange()
		for it.Next() {
			k.SetIterKey(it)
			v.SetIterValue(it)
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	default:
		dst.Set(src)
	}
}

// mapClones copies the maps of TenantState's sub-states with maps.Clone, which copies the map's
// table whole: an entry at a time through reflect (hashing and inserting every key again) was the
// actor's pause at each snapshot, 1.2 % of the service's CPU in the api benchmark's writes (the
// map of 230,000 events, since replaced by supplyplan.EventStore, whose View copies a slice of
// pointers). Another map type is copied through reflect (correct, slower);
// TestSnapshotViewClonesEveryTenantMap names a map of TenantState missing here.
var mapClones = map[reflect.Type]func(reflect.Value) reflect.Value{}

func cloneWith[M ~map[string]V, V any]() {
	mapClones[reflect.TypeFor[M]()] = func(v reflect.Value) reflect.Value {
		return reflect.ValueOf(maps.Clone(v.Interface().(M)))
	}
}

func init() {
	cloneWith[map[string]*supplyplan.Product]()
	cloneWith[map[string]*supplyplan.Location]()
	cloneWith[map[string]*supplyplan.InventoryLevel]()
	cloneWith[map[string]*supplyplan.Supplier]()
	cloneWith[map[string]*supplyplan.PurchaseOrder]()
	cloneWith[map[string]*supplyplan.Order]()
	cloneWith[map[string]*supplyplan.Scenario]()
	cloneWith[map[string]*supplyplan.ForecastVersion]()
	cloneWith[map[string]*supplyplan.ChangeEntry]()
	cloneWith[map[string]*supplyplan.ImportJob]()
	cloneWith[map[string]*supplyplan.Transfer]()
	cloneWith[map[string]*supplyplan.Recommendation]()
	cloneWith[map[string]*supplyplan.DomainEvent]()
	cloneWith[map[string]*supplyplan.ToolAudit]()
	cloneWith[map[string]*supplyplan.Reservation]()
	cloneWith[map[string]*supplyplan.Allocation]()
	cloneWith[map[string]*supplyplan.AllocationAudit]()
	cloneWith[map[string]*supplyplan.AllocationRun]()
	cloneWith[map[string]*supplyplan.LoopEffectRecord]()
}

// encodeSnapshot renders a view (see snapshotView) as a snapshot into one buffer of about sizeHint
// bytes (writeSnapshot); ok is false when writeSnapshot cannot encode the view's type.
func encodeSnapshot(view any, entries []*supplyplan.IdempotencyEntry, sizeHint int) (data []byte, ok bool, err error) {
	var buf bytes.Buffer
	buf.Grow(sizeHint + sizeHint/8 + 4096)
	w := bufio.NewWriterSize(&buf, 64<<10)
	if ok, err = writeSnapshot(w, view, entries); !ok || err != nil {
		return nil, ok, err
	}
	if err := w.Flush(); err != nil {
		return nil, true, err
	}
	return buf.Bytes(), true, nil
}

// snapshotEncodable tells whether writeSnapshot encodes view (a pointer to a struct whose JSON
// member names it resolves).
func snapshotEncodable(view any) bool {
	v := reflect.ValueOf(view)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	_, ok := jsonFields(v.Elem().Type())
	return ok
}

// snapshotValueRoom is the free room writeSnapshot keeps in its writer's buffer before a value, so
// that a value is encoded in place (bufio.Writer.AvailableBuffer) rather than into a new slice.
const snapshotValueRoom = 16 << 10

// writeSnapshot writes a view (see snapshotView) as a snapshot into w: the view's JSON object with
// the stream's idempotency keys as its leading "$idempotency" member, as withIdempotency makes it.
// It writes every value as encoding/json does, but the members of a map in the map's order rather
// than sorted (JSON does not order members; sorting hundreds of thousands of keys was a third of
// the snapshot's cost). ok is false, and nothing is written, when the view's type has JSON field
// names this encoder does not resolve (two fields of one name): then use json.Marshal and
// withIdempotency. w is not flushed.
func writeSnapshot(w *bufio.Writer, view any, entries []*supplyplan.IdempotencyEntry) (ok bool, err error) {
	if !snapshotEncodable(view) {
		return false, nil
	}
	v := reflect.ValueOf(view)
	fields, _ := jsonFields(v.Elem().Type())
	enc := json.NewEncoder(w)
	room := func() error {
		if w.Available() < snapshotValueRoom {
			return w.Flush()
		}
		return nil
	}
	sep := byte('{')
	if len(entries) > 0 {
		_, _ = w.WriteString(snapshotKey)
		if err := enc.Encode(entries); err != nil {
			return true, err
		}
		sep = ','
	}
	for _, f := range fields {
		fv := v.Elem().FieldByIndex(f.index)
		if f.omitEmpty && fv.IsZero() || f.omitEmpty && fv.Kind() == reflect.Map && fv.Len() == 0 {
			continue
		}
		_ = w.WriteByte(sep)
		sep = ','
		_, _ = w.WriteString(f.quoted)
		_ = w.WriteByte(':')
		if evs, ok := fv.Interface().(supplyplan.EventStore); ok {
			if err := writeEvents(w, enc, &evs, room); err != nil {
				return true, err
			}
			continue
		}
		if fv.Kind() != reflect.Map || fv.IsNil() {
			if err := enc.Encode(fv.Interface()); err != nil {
				return true, err
			}
			continue
		}
		inner := byte('{')
		key, value := reflect.New(fv.Type().Key()).Elem(), reflect.New(fv.Type().Elem()).Elem()
		it := fv.MapRange()
		for it.Next() {
			key.SetIterKey(it)
			value.SetIterValue(it)
			if err := writeMember(w, enc, &inner, key.String(), value.Interface(), room); err != nil {
				return true, err
			}
		}
		endMap(w, inner)
	}
	if sep == '{' {
		_ = w.WriteByte('{')
	}
	return true, w.WriteByte('}')
}

// eventBatch is how many events writeEvents reads ahead of encoding them.
const eventBatch = 64

// writeEvents writes a tenant's events as writeSnapshot's loop writes any map ({"id":event,...}),
// without reflection and a batch at a time: the events of a batch are read (TouchEvents) before
// the first of them is encoded, so that the cache misses of a walk over a large tenant's events,
// scattered over the heap, overlap rather than come one after the other.
// BenchmarkWriteSnapshotEvents: 930-1,050 ns per event through reflection one at a time, 502-507
// ns this way (over a map, in its order; the store's slots follow the order of the writes).
func writeEvents(w *bufio.Writer, enc *json.Encoder, es *supplyplan.EventStore, room func() error) error {
	var evs [eventBatch]*supplyplan.ExternalEvent
	inner := byte('{')
	write := func(n int) error {
		supplyplan.TouchEvents(evs[:n])
		for i := range n {
			if err := writeMember(w, enc, &inner, evs[i].ID, evs[i], room); err != nil {
				return err
			}
		}
		return nil
	}
	n := 0
	for e := range es.All() {
		evs[n] = e
		if n++; n == eventBatch {
			if err := write(n); err != nil {
				return err
			}
			n = 0
		}
	}
	if err := write(n); err != nil {
		return err
	}
	endMap(w, inner)
	return nil
}

// writeMember writes one member of a map's object: its separator (inner, '{' for the first, then
// ','), its key and its value. Values with a hand-written encoding (events, change-history
// entries) skip reflection.
func writeMember(w *bufio.Writer, enc *json.Encoder, inner *byte, key string, val any, room func() error) error {
	if err := room(); err != nil {
		return err
	}
	_ = w.WriteByte(*inner)
	*inner = ','
	_, _ = w.Write(supplyplan.AppendJSONString(w.AvailableBuffer(), key))
	_ = w.WriteByte(':')
	if b, ok := supplyplan.AppendJSON(w.AvailableBuffer(), val); ok {
		_, _ = w.Write(b)
		return nil
	}
	return enc.Encode(val)
}

// endMap closes a map's object (an empty one when inner is still '{').
func endMap(w *bufio.Writer, inner byte) {
	if inner == '{' {
		_ = w.WriteByte('{')
	}
	_ = w.WriteByte('}')
}

// jsonField is a member of a viewable struct's JSON object.
type jsonField struct {
	index     []int
	quoted    string // the member's name as a JSON string
	omitEmpty bool
}

var jsonFieldsOf sync.Map // reflect.Type -> []jsonField, or nil when unresolved

// jsonFields lists the members encoding/json writes for viewable struct type t, in its order:
// exported fields, named by their json tag, the fields of embedded structs without a tag in place.
// ok is false when two fields end up with one name (encoding/json's dominance rules are not
// reproduced here).
func jsonFields(t reflect.Type) ([]jsonField, bool) {
	if f, known := jsonFieldsOf.Load(t); known {
		fs := f.([]jsonField)
		return fs, fs != nil
	}
	var out []jsonField
	seen := map[string]bool{}
	ok := true
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(","+opts+",", ",string,") {
				ok = false // quoted numbers: not reproduced here
			}
			idx := append(append([]int(nil), index...), i)
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if name == "" {
				name = f.Name
			}
			if seen[name] {
				ok = false
			}
			seen[name] = true
			q, _ := json.Marshal(name)
			out = append(out, jsonField{index: idx, quoted: string(q), omitEmpty: strings.Contains(","+opts+",", ",omitempty,")})
		}
	}
	walk(t, nil)
	if !ok {
		out = nil
	}
	jsonFieldsOf.Store(t, out)
	return out, ok
}
