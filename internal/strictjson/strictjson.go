// Package strictjson is the strict check every request body goes through before encoding/json
// decodes it (the REST API's decoder, import bodies, signal batches, tool arguments).
//
// encoding/json accepts, without a word, three things a client almost certainly did not mean:
// invalid UTF-8 (stored as U+FFFD), a key given twice in one object (the last one wins), and a key
// that matches a field only case-insensitively ("Name" fills name). Check finds them in one pass
// over the bytes that also validates the syntax, so that encoding/json's own validation is the only
// other pass. It scans with internal/jsonscan, the one JSON scanner of the module.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/jsonscan"
)

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// Check checks data, one JSON value, in one pass: syntax, valid UTF-8 in every string and key
// (a lone surrogate escape counts as invalid), no key twice in one object at any depth, and, when
// schema is not nil, no key that matches a field of schema's structs only case-insensitively.
// Such case-variant keys are not errors, they are unknown keys: clean is data, or a copy in which
// they can no longer match any field (encoding/json then ignores them like any unknown key), and
// ignored lists their paths. A problem is a VALIDATION_ERROR naming the path
// (assumptions.categoryAdjustments[0].liftPct) or, for syntax, the offset.
func Check(data []byte, schema reflect.Type) (clean []byte, ignored []string, err error) {
	var s *jsonSchema
	if schema != nil {
		s = schemaOf(schema)
	}
	return check(data, s)
}

// CheckArray is Check that also returns the elements of the array under key in the top-level
// object, as they are in data (found: the object has key; isArray: its value is an array): the
// rows of an import body, split in the same pass. When Check renames case-variant keys (ignored
// is not empty) the elements are nil and the caller splits clean itself.
func CheckArray(data []byte, schema reflect.Type, key string) (clean []byte, ignored []string, elems []json.RawMessage, found, isArray bool, err error) {
	var s *jsonSchema
	if schema != nil {
		s = schemaOf(schema)
	}
	sp := &split{key: key}
	clean, ignored, err = checkSplit(data, s, sp)
	if err != nil || len(ignored) > 0 {
		return clean, ignored, nil, false, false, err
	}
	return clean, nil, sp.elems, sp.found, sp.isArray, nil
}

// split collects the elements of one top-level array during a check.
type split struct {
	key            string
	found, isArray bool
	next           bool // the array value about to be scanned is key's
	elems          []json.RawMessage
}

// Unmarshal is Check followed by json.Unmarshal into v (the schema is v's type).
func Unmarshal(data []byte, v any) error {
	clean, _, err := Check(data, reflect.TypeOf(v))
	if err != nil {
		return err
	}
	return json.Unmarshal(clean, v)
}

// scanners keeps the scanners' key and path stacks between checks: growing them anew was most of
// the allocations of checking a small body (a JWT's header and claims, a loop transition).
var scanners = sync.Pool{New: func() any { return new(jsonScanner) }}

// maxPooledStack is the longest key or path stack a scanner keeps for the next check.
const maxPooledStack = 1024

func check(data []byte, s *jsonSchema) ([]byte, []string, error) { return checkSplit(data, s, nil) }

func checkSplit(data []byte, s *jsonSchema, sp *split) ([]byte, []string, error) {
	sc := scanners.Get().(*jsonScanner)
	*sc = jsonScanner{data: data, keys: sc.keys[:0], path: sc.path[:0], split: sp}
	defer func() {
		clear(sc.keys[:cap(sc.keys)]) // no reference to data stays behind
		clear(sc.path[:cap(sc.path)])
		if cap(sc.keys) <= maxPooledStack && cap(sc.path) <= maxPooledStack {
			*sc = jsonScanner{keys: sc.keys[:0], path: sc.path[:0]}
			scanners.Put(sc)
		}
	}()
	i := sc.value(sc.ws(0), s, 0)
	if sc.err == nil {
		if i = sc.ws(i); i < len(data) {
			sc.fail("body", fmt.Sprintf("unexpected data after the JSON value (offset %d)", i))
		}
	}
	if sc.err != nil {
		return nil, nil, sc.err
	}
	if len(sc.variants) == 0 {
		return data, nil, nil
	}
	// Each case-variant key gets a NUL as its first character: no field name has one, so the key
	// is unknown to encoding/json, and two variants of one field stay distinct.
	out := make([]byte, 0, len(data)+6*len(sc.variants))
	prev := 0
	for _, at := range sc.variants {
		out = append(out, data[prev:at]...)
		out = append(out, `\u0000`...)
		prev = at
	}
	out = append(out, data[prev:]...)
	return out, sc.ignored, nil
}

// jsonSchema is what Check needs of a Go type: the field names of structs and where values
// go. A nil schema checks nothing type-related (interfaces, raw messages, custom unmarshalers).
type jsonSchema struct {
	fields map[string]*jsonSchema // struct: exact field names
	// names and schemas hold fields again for a struct of at most smallStruct fields, looked
	// up by a linear scan: cheaper than hashing the key (a demand-history row's four lookups
	// were a sixth of the strict pass).
	names   []string
	schemas []*jsonSchema
	folded  map[string]struct{} // struct: encoding/json's folded field names
	elem    *jsonSchema         // map values, array elements
	isObj   bool                // struct
}

var (
	schemaCache   sync.Map // reflect.Type -> *jsonSchema
	unmarshalerT  = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshal = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// smallStruct is the most fields a struct schema looks up by a linear scan.
const smallStruct = 16

// field returns the schema of the struct field named key (nil for a field that decodes itself)
// and whether there is one.
func (s *jsonSchema) field(key []byte) (*jsonSchema, bool) {
	if len(s.fields) <= smallStruct {
		for i, name := range s.names {
			if name == string(key) {
				return s.schemas[i], true
			}
		}
		return nil, false
	}
	f, ok := s.fields[string(key)]
	return f, ok
}

func schemaOf(t reflect.Type) *jsonSchema {
	if v, ok := schemaCache.Load(t); ok {
		return v.(*jsonSchema)
	}
	s := buildSchema(t, map[reflect.Type]*jsonSchema{})
	schemaCache.Store(t, s)
	return s
}

func buildSchema(t reflect.Type, building map[reflect.Type]*jsonSchema) *jsonSchema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshalerT) || reflect.PointerTo(t).Implements(unmarshalerT) ||
		t.Implements(textUnmarshal) || reflect.PointerTo(t).Implements(textUnmarshal) {
		return nil // decodes itself
	}
	if s, ok := building[t]; ok {
		return s // a recursive type
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &jsonSchema{isObj: true, fields: map[string]*jsonSchema{}, folded: map[string]struct{}{}}
		building[t] = s
		for name, ft := range jsonFields(t) {
			s.fields[name] = buildSchema(ft, building)
			s.folded[string(foldName([]byte(name)))] = struct{}{}
		}
		if len(s.fields) <= smallStruct {
			s.names = slices.Sorted(maps.Keys(s.fields))
			for _, name := range s.names {
				s.schemas = append(s.schemas, s.fields[name])
			}
		}
		return s
	case reflect.Map:
		s := &jsonSchema{}
		building[t] = s
		s.elem = buildSchema(t.Elem(), building)
		if s.elem == nil {
			return nil
		}
		return s
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // base64 string
		}
		s := &jsonSchema{}
		building[t] = s
		s.elem = buildSchema(t.Elem(), building)
		if s.elem == nil {
			return nil
		}
		return s
	}
	return nil
}

// jsonFields returns the JSON names of t's fields and their types, following encoding/json's rules
// closely enough for matching: exported fields, tag names, "-" skipped, fields of untagged embedded
// structs promoted, a shallower name hiding a deeper one, and at one depth a tagged name winning
// over untagged ones (two of a kind cancel out).
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	hidden := map[string]bool{}
	visited := map[reflect.Type]bool{}
	type cand struct {
		t      reflect.Type
		tagged bool
	}
	for level := []reflect.Type{t}; len(level) > 0; {
		var next []reflect.Type
		names := map[string][]cand{}
		for _, st := range level {
			if visited[st] {
				continue
			}
			visited[st] = true
			for i := range st.NumField() {
				f := st.Field(i)
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if f.Anonymous {
					ft := f.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if name == "" && ft.Kind() == reflect.Struct {
						next = append(next, ft)
						continue
					}
					if !f.IsExported() {
						continue
					}
				} else if !f.IsExported() {
					continue
				}
				tagged := name != ""
				if !tagged {
					name = f.Name
				}
				names[name] = append(names[name], cand{f.Type, tagged})
			}
		}
		for name, cs := range names {
			if _, done := out[name]; done || hidden[name] {
				continue
			}
			var win []cand
			for _, c := range cs {
				if c.tagged {
					win = append(win, c)
				}
			}
			if len(win) == 0 {
				win = cs
			}
			if len(win) == 1 {
				out[name] = win[0].t
			} else {
				hidden[name] = true
			}
		}
		level = next
	}
	return out
}

// foldName is encoding/json's case folding of field names (decode.go, fold.go): two names match
// when their folds are equal.
func foldName(in []byte) []byte {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		if c := in[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		out = utf8.AppendRune(out, unicode.ToUpper(unicode.ToLower(r)))
		i += n
	}
	return out
}

// pathElem is one step of the path to the value being scanned: a key (raw, as in the input) or
// an array index.
type pathElem struct {
	key   []byte
	index int
}

type jsonScanner struct {
	data     []byte
	err      error
	path     []pathElem
	keys     [][]byte // keys of the objects being scanned, innermost last
	variants []int    // offsets just after the opening quote of case-variant keys
	ignored  []string
	split    *split // CheckArray's array, nil for Check
}

func (sc *jsonScanner) ws(i int) int { return jsonscan.SkipWS(sc.data, i) }

// pathString renders the current path (with extra appended), "body" at the top.
func (sc *jsonScanner) pathString(extra []byte) string {
	var b strings.Builder
	for _, p := range sc.path {
		if p.key == nil {
			fmt.Fprintf(&b, "[%d]", p.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(keyText(p.key))
	}
	if extra != nil {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(keyText(extra))
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// keyText is a raw key as text (escapes decoded when possible).
func keyText(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) == nil {
		return s
	}
	return string(raw)
}

func (sc *jsonScanner) fail(field, msg string) {
	if sc.err == nil {
		sc.err = &supplyplan.Error{Code: supplyplan.EVALIDATION, Message: "Malformed JSON", Details: map[string][]string{field: {msg}}}
	}
}

// syntax reports a syntax error at offset i, worded by encoding/json when it agrees.
func (sc *jsonScanner) syntax(i int, context string) {
	if sc.err != nil {
		return
	}
	var v any
	err := json.Unmarshal(sc.data, &v)
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		sc.fail("body", fmt.Sprintf("invalid JSON at offset %d: %s", syn.Offset, syn.Error()))
	case err != nil:
		sc.fail("body", err.Error())
	case i >= len(sc.data):
		sc.fail("body", "unexpected end of JSON")
	default:
		sc.fail("body", fmt.Sprintf("invalid JSON at offset %d: invalid character %s %s", i+1, strconv.QuoteRune(rune(sc.data[i])), context))
	}
}

// value scans the value at i and returns the offset after it.
func (sc *jsonScanner) value(i int, s *jsonSchema, depth int) int {
	if sc.err != nil {
		return i
	}
	if i >= len(sc.data) {
		sc.syntax(i, "")
		return i
	}
	switch c := sc.data[i]; {
	case c == '{':
		if depth >= maxJSONDepth {
			sc.fail("body", "exceeded max depth")
			return i
		}
		return sc.object(i, s, depth+1)
	case c == '[':
		if depth >= maxJSONDepth {
			sc.fail("body", "exceeded max depth")
			return i
		}
		return sc.array(i, s, depth+1)
	case c == '"':
		end, _ := sc.str(i, false)
		return end
	case c == '-' || c >= '0' && c <= '9':
		return sc.number(i)
	case c == 't':
		return sc.literal(i, "true")
	case c == 'f':
		return sc.literal(i, "false")
	case c == 'n':
		return sc.literal(i, "null")
	}
	sc.syntax(i, "looking for beginning of value")
	return i
}

func (sc *jsonScanner) literal(i int, lit string) int {
	if !jsonscan.Literal(sc.data, i, lit) {
		sc.syntax(i, "in literal")
		return i
	}
	return i + len(lit)
}

func (sc *jsonScanner) number(i int) int {
	end, fault := jsonscan.ScanNumber(sc.data, i)
	switch fault {
	case jsonscan.NumberNoDigit:
		sc.syntax(end, "in numeric literal")
	case jsonscan.NumberNoFraction:
		sc.syntax(end, "after decimal point in numeric literal")
	case jsonscan.NumberNoExponent:
		sc.syntax(end, "in exponent of numeric literal")
	}
	return end
}

// str scans the string at i (sc.data[i] == '"') and returns the offset after it and whether it
// holds escapes. isKey only shapes error messages (a problem in a key is reported at its object).
func (sc *jsonScanner) str(i int, isKey bool) (int, bool) {
	d := sc.data
	start := i
	esc := false
	where := sc.pathString
	for i++; ; {
		i = jsonscan.SkipPlain(d, i)
		if i >= len(d) {
			sc.syntax(i, "in string literal")
			return i, esc
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1, esc
		case c == '\\':
			esc = true
			if i+1 >= len(d) {
				sc.syntax(i+1, "in string escape code")
				return i, esc
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := jsonscan.Hex4(d, i+2)
				if !ok {
					sc.syntax(i+2, "in \\u hexadecimal character escape")
					return i, esc
				}
				i += 6
				switch {
				case r >= 0xD800 && r < 0xDC00:
					lo, ok := rune(0), false
					if i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
						lo, ok = jsonscan.Hex4(d, i+2)
					}
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						sc.fail(where(nil), fmt.Sprintf("contains an unpaired UTF-16 surrogate escape (\\u%04X) at offset %d: not valid Unicode", r, i-6-start))
						return i, esc
					}
					i += 6
				case r >= 0xDC00 && r <= 0xDFFF:
					sc.fail(where(nil), fmt.Sprintf("contains an unpaired UTF-16 surrogate escape (\\u%04X) at offset %d: not valid Unicode", r, i-6-start))
					return i, esc
				}
			default:
				sc.syntax(i+1, "in string escape code")
				return i, esc
			}
		case c < 0x20:
			sc.syntax(i, "in string literal")
			return i, esc
		default:
			r, n := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && n == 1 {
				what := "contains invalid UTF-8"
				if isKey {
					what = "has a key with invalid UTF-8"
				}
				sc.fail(where(nil), fmt.Sprintf("%s (byte 0x%02X at offset %d of the string)", what, c, i-start-1))
				return i, esc
			}
			i += n
		}
	}
}

// smallObject is how many keys an object may have before duplicates are found with a map.
const smallObject = 16

func (sc *jsonScanner) object(i int, s *jsonSchema, depth int) int {
	d := sc.data
	i = sc.ws(i + 1)
	if i < len(d) && d[i] == '}' {
		return i + 1
	}
	base := len(sc.keys)
	var seen map[string]struct{}
	defer func() { sc.keys = sc.keys[:base] }()
	for {
		if i >= len(d) || d[i] != '"' {
			sc.syntax(i, "looking for beginning of object key string")
			return i
		}
		ks := i
		ke, esc := sc.str(i, true)
		if sc.err != nil {
			return ke
		}
		raw := d[ks+1 : ke-1]
		key := raw
		if esc {
			var k string
			if err := json.Unmarshal(d[ks:ke], &k); err != nil {
				sc.syntax(ks, "in object key")
				return ke
			}
			key = []byte(k)
		}
		// The same key twice in one object.
		n := len(sc.keys) - base
		switch {
		case seen != nil:
			if _, dup := seen[string(key)]; dup {
				sc.fail(sc.pathString(raw), "is given more than once in the same object")
				return ke
			}
			seen[string(key)] = struct{}{}
		default:
			for _, k := range sc.keys[base:] {
				if bytes.Equal(k, key) {
					sc.fail(sc.pathString(raw), "is given more than once in the same object")
					return ke
				}
			}
			sc.keys = append(sc.keys, key)
			if n+1 == smallObject {
				seen = make(map[string]struct{}, 2*smallObject)
				for _, k := range sc.keys[base:] {
					seen[string(k)] = struct{}{}
				}
			}
		}
		// Where the value goes, and whether the key only matches a field case-insensitively.
		var vs *jsonSchema
		if s != nil {
			if s.isObj {
				if f, ok := s.field(key); ok {
					vs = f
				} else if _, ok := s.folded[string(foldName(key))]; ok {
					sc.variants = append(sc.variants, ks+1)
					sc.ignored = append(sc.ignored, sc.pathString(raw))
				}
			} else {
				vs = s.elem
			}
		}
		i = sc.ws(ke)
		if i >= len(d) || d[i] != ':' {
			sc.syntax(i, "after object key")
			return i
		}
		sc.path = append(sc.path, pathElem{key: raw})
		i = sc.ws(i + 1)
		if sp := sc.split; sp != nil && depth == 1 && string(key) == sp.key { // duplicates fail: at most once
			sp.found, sp.isArray = true, i < len(d) && d[i] == '['
			sp.next = sp.isArray // array takes it at once
		}
		i = sc.value(i, vs, depth)
		sc.path = sc.path[:len(sc.path)-1]
		if sc.err != nil {
			return i
		}
		i = sc.ws(i)
		if i >= len(d) {
			sc.syntax(i, "after object key:value pair")
			return i
		}
		switch d[i] {
		case ',':
			i = sc.ws(i + 1)
		case '}':
			return i + 1
		default:
			sc.syntax(i, "after object key:value pair")
			return i
		}
	}
}

func (sc *jsonScanner) array(i int, s *jsonSchema, depth int) int {
	d := sc.data
	var sp *split
	if sc.split != nil && sc.split.next { // CheckArray's array: taken before anything nested can
		sp, sc.split.next = sc.split, false
		// A demand-history row is 80 to 100 bytes: sized for 80, so that those bodies never grow the
		// slice (growing it was a fifth of an import's allocation); longer rows leave at most 24
		// bytes of slice per 80 bytes of body unused.
		sp.elems = make([]json.RawMessage, 0, (len(d)-i)/80+1)
	}
	i = sc.ws(i + 1)
	if i < len(d) && d[i] == ']' {
		return i + 1
	}
	var es *jsonSchema
	if s != nil && !s.isObj {
		es = s.elem
	}
	for n := 0; ; n++ {
		sc.path = append(sc.path, pathElem{index: n})
		start := i
		i = sc.value(i, es, depth)
		sc.path = sc.path[:len(sc.path)-1]
		if sc.err != nil {
			return i
		}
		if sp != nil {
			sp.elems = append(sp.elems, json.RawMessage(d[start:i]))
		}
		i = sc.ws(i)
		if i >= len(d) {
			sc.syntax(i, "after array element")
			return i
		}
		switch d[i] {
		case ',':
			i = sc.ws(i + 1)
		case ']':
			return i + 1
		default:
			sc.syntax(i, "after array element")
			return i
		}
	}
}
