package actors

import (
	"encoding/json"
	"reflect"
	"sync"
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
	marshalerType = reflect.TypeFor[json.Marshaler]()
	viewableTypes sync.Map // reflect.Type -> bool
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
	switch src.Kind() {
	case reflect.Struct:
		copyView(dst, src)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			m.SetMapIndex(it.Key(), it.Value())
		}
		dst.Set(m)
	default:
		dst.Set(src)
	}
}
