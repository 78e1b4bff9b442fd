package http

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/supplyplan/supplyplan"
)

// schema is one JSON Schema (2020-12, the dialect of OpenAPI 3.1) of the OpenAPI document.
type schema = map[string]any

// schemaSet derives JSON Schemas from the Go types the handlers encode and decode, the way
// encoding/json renders them, and collects the named struct types under components/schemas.
// Deriving them from the types keeps the document true to the code: a field added to a response
// type is in the document without anyone editing it.
type schemaSet struct {
	components map[string]schema
	names      map[reflect.Type]string
}

func newSchemaSet() *schemaSet {
	return &schemaSet{components: map[string]schema{}, names: map[reflect.Type]string{}}
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

// customSchemas are the types with a MarshalJSON or MarshalText of their own: what they render.
// A type that marshals itself and is missing here makes the document's generation fail, so that
// its schema is never guessed from its fields.
var customSchemas = map[reflect.Type]schema{
	reflect.TypeFor[supplyplan.Quantity]():     {"type": "number", "description": "A quantity, rounded to 2 decimals."},
	reflect.TypeFor[supplyplan.Date]():         {"type": "string", "format": "date"},
	reflect.TypeFor[supplyplan.SignalStatus](): {"type": "string", "enum": []string{"APPLIED", "DUPLICATE", "REJECTED"}},
}

// sameShape are the types whose MarshalJSON renders the fields of the struct itself (it only
// rounds numbers): their schema is derived from the fields.
var sameShape = map[reflect.Type]bool{
	reflect.TypeFor[supplyplan.WeekValue](): true,
}

// componentNames renames the API's view types after what they show.
var componentNames = map[reflect.Type]string{
	reflect.TypeFor[jobView]():           "ImportJob",
	reflect.TypeFor[apiKeyView]():        "APIKey",
	reflect.TypeFor[namedKeyView]():      "NamedKey",
	reflect.TypeFor[errorBody]():         "Error",
	reflect.TypeFor[readyBody]():         "Readiness",
	reflect.TypeFor[readyCheck]():        "ReadinessCheck",
	reflect.TypeFor[signalOutcomeView](): "SignalOutcome",
	reflect.TypeFor[signalRow]():         "DemandSignalRow",
}

// of returns the schema of the Go type of v (a value or a reflect.Type).
func (s *schemaSet) of(v any) schema {
	t, ok := v.(reflect.Type)
	if !ok {
		t = reflect.TypeOf(v)
	}
	return s.typ(t)
}

func (s *schemaSet) typ(t reflect.Type) schema {
	if c, ok := customSchemas[t]; ok {
		return c
	}
	if t.Kind() == reflect.Pointer {
		return nullable(s.typ(t.Elem()))
	}
	switch {
	case t == timeType:
		return schema{"type": "string", "format": "date-time"}
	case t == rawType:
		return schema{}
	case !sameShape[t] && (t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)):
		panic(fmt.Sprintf("openapi: %v has a MarshalJSON of its own: add it to customSchemas", t))
	case t.Kind() != reflect.String && (t.Implements(textType) || reflect.PointerTo(t).Implements(textType)):
		panic(fmt.Sprintf("openapi: %v has a MarshalText of its own: add it to customSchemas", t))
	}
	switch t.Kind() {
	case reflect.Bool:
		return schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return schema{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return schema{"type": "number"}
	case reflect.String:
		if vals, ok := enumValues[t]; ok {
			return schema{"type": "string", "enum": vals}
		}
		return schema{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return schema{"type": "string", "contentEncoding": "base64"}
		}
		return schema{"type": "array", "items": s.typ(t.Elem())}
	case reflect.Map:
		return schema{"type": "object", "additionalProperties": s.typ(t.Elem())}
	case reflect.Interface:
		return schema{}
	case reflect.Struct:
		return s.structRef(t)
	}
	panic(fmt.Sprintf("openapi: no schema for %v", t))
}

// structRef registers a named struct under components/schemas and refers to it; an anonymous one
// is inlined.
func (s *schemaSet) structRef(t reflect.Type) schema {
	if t.Name() == "" {
		return s.object(t)
	}
	name, ok := s.names[t]
	if !ok {
		name = componentNames[t]
		if name == "" {
			name = t.Name()
		}
		if strings.ContainsAny(name, "[]") {
			panic(fmt.Sprintf("openapi: %v is generic: describe its instance with obj", t))
		}
		for other, n := range s.names {
			if n == name {
				panic(fmt.Sprintf("openapi: %v and %v would both be components/schemas/%s", t, other, name))
			}
		}
		s.names[t] = name
		s.components[name] = nil // placeholder: recursive types refer to it
		s.components[name] = s.object(t)
	}
	return schema{"$ref": "#/components/schemas/" + name}
}

// object is the schema of a struct as encoding/json renders it: exported fields by their json
// name, embedded structs flattened, omitempty and omitzero fields optional, the others required
// (a nil slice, map or pointer without omitempty renders as null).
func (s *schemaSet) object(t reflect.Type) schema {
	props := schema{}
	var required []string
	s.fields(t, props, &required)
	out := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

func (s *schemaSet) fields(t reflect.Type, props schema, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				s.fields(ft, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs := s.typ(f.Type)
		if strings.Contains(","+opts+",", ",string,") {
			fs = schema{"type": "string"}
		}
		optional := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		switch f.Type.Kind() {
		case reflect.Slice, reflect.Map, reflect.Interface:
			if !optional && f.Type != rawType {
				fs = nullable(fs)
			}
		}
		if f.Type.Kind() == reflect.Pointer && optional {
			fs = s.typ(f.Type.Elem()) // omitted when nil: never null
		}
		props[name] = fs
		if !optional {
			*required = append(*required, name)
		}
	}
}

// nullable allows null besides what sc allows.
func nullable(sc schema) schema {
	if typ, ok := sc["type"].(string); ok && len(sc) <= 3 {
		out := schema{}
		for k, v := range sc {
			out[k] = v
		}
		out["type"] = []string{typ, "null"}
		if e, ok := out["enum"].([]string); ok {
			out["enum"] = append(append([]any{}, anySlice(e)...), nil)
		}
		return out
	}
	if len(sc) == 0 {
		return sc
	}
	return schema{"anyOf": []any{sc, schema{"type": "null"}}}
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// enumValues are the string types whose values are a closed set.
var enumValues = map[reflect.Type][]string{}

func addEnum[T ~string](vals []T) {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = string(v)
	}
	enumValues[reflect.TypeFor[T]()] = s
}

func init() {
	addEnum(supplyplan.ScenarioStatuses)
	addEnum(supplyplan.ScenarioTypes)
	addEnum(supplyplan.EventTypes)
	addEnum(supplyplan.RecommendationStatuses)
	addEnum(supplyplan.Priorities)
	addEnum(supplyplan.TransferStatuses)
	addEnum(supplyplan.AlertKinds)
	addEnum(supplyplan.Severities)
	addEnum(supplyplan.ImportKinds)
	addEnum(supplyplan.ReservationStatuses)
	addEnum(supplyplan.AllocationStatuses)
	addEnum(supplyplan.LoopInstanceStatuses)
}
