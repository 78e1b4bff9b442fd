package supplyplan

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The JSON Schema subset of loop transition inputs (JSON Schema 2020-12 keywords, the ones a
// workflow payload needs). A schema is compiled and checked when its manifest is published, and
// the loop runtime validates each transition's payload against it. Keywords outside the subset are
// refused at publish (never silently ignored, since an ignored `oneOf` would accept payloads its
// author meant to refuse); annotation keywords and `x-` extensions are accepted and ignored.
//
//	type                 "null", "boolean", "object", "array", "number", "integer", "string", or a list
//	properties, required, additionalProperties (boolean or schema), minProperties, maxProperties
//	items (one schema), minItems, maxItems, uniqueItems
//	enum, const
//	minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers), multipleOf
//	minLength, maxLength (in Unicode code points), pattern (RE2 syntax, unanchored), format
//	  (date-time: RFC 3339; date: YYYY-MM-DD; email; uuid)
//	annotations: title, description, default, examples, $comment, $schema, deprecated, readOnly,
//	  writeOnly; and any x-* member
//
// `true` and `false` are schemas too (anything / nothing). A transition's root input schema
// must be an object schema (`"type": "object"`). Publish also refuses a schema that can never be
// satisfied in an obvious way (minimum above maximum, a required property that
// additionalProperties: false forbids), a keyword that applies to none of the declared types
// (minLength on an integer), and a `default` or `examples` value the schema itself refuses.

// Input schema limits.
const (
	MaxInputSchemaDepth      = 32
	MaxInputSchemaPatternLen = 1000
)

var inputSchemaTypes = []string{"null", "boolean", "object", "array", "number", "integer", "string"}

var inputSchemaFormats = []string{"date-time", "date", "email", "uuid"}

var inputSchemaAnnotations = []string{"title", "description", "default", "examples", "$comment", "$schema",
	"deprecated", "readOnly", "writeOnly"}

var inputSchemaKeywords = []string{"type", "properties", "required", "additionalProperties", "minProperties",
	"maxProperties", "items", "minItems", "maxItems", "uniqueItems", "enum", "const", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "format"}

// InputSchema is a compiled schema of the subset.
type InputSchema struct {
	never bool // the `false` schema
	types []string

	properties   map[string]*InputSchema
	required     []string
	additional   *InputSchema // nil: any additional property is allowed
	minProps     int
	maxProps     int // -1: no limit
	items        *InputSchema
	minItems     int
	maxItems     int
	uniqueItems  bool
	enum         []string // canonical JSON of each allowed value
	constant     *string  // canonical JSON of the only allowed value
	minimum      *float64
	maximum      *float64
	exclMin      *float64
	exclMax      *float64
	multipleOf   json.Number
	minLength    int
	maxLength    int
	pattern      *regexp.Regexp
	format       string
	defaultValue any
	hasDefault   bool
	examples     []any
}

// CompileInputSchema compiles a decoded schema (map[string]any with json.Number numbers, or a
// bool), adding what is wrong to fe under path (e.g. transitions[0].input.properties.qty.minimum).
// The result is nil when fe got an error.
func CompileInputSchema(v any, path string, fe FieldErrors) *InputSchema {
	before := fieldErrorCount(fe)
	s := compileSchema(v, path, fe, 0)
	if fieldErrorCount(fe) != before {
		return nil
	}
	return s
}

func compileSchema(v any, path string, fe FieldErrors, depth int) *InputSchema {
	if depth > MaxInputSchemaDepth {
		fe.Add(path, "nests deeper than %d schemas", MaxInputSchemaDepth)
		return nil
	}
	if b, ok := v.(bool); ok {
		return &InputSchema{never: !b, maxProps: -1, maxItems: -1, maxLength: -1}
	}
	m, ok := v.(map[string]any)
	if !ok {
		fe.Add(path, "must be a JSON Schema (an object or a boolean)")
		return nil
	}
	s := &InputSchema{maxProps: -1, maxItems: -1, maxLength: -1}
	before := fieldErrorCount(fe)
	at := func(k string) string { return path + "." + k }
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		val := m[k]
		switch {
		case strings.HasPrefix(k, "x-"):
			continue
		case slices.Contains(inputSchemaAnnotations, k):
			switch k {
			case "title", "description", "$comment", "$schema":
				if _, ok := val.(string); !ok {
					fe.Add(at(k), "must be a string")
				}
			case "deprecated", "readOnly", "writeOnly":
				if _, ok := val.(bool); !ok {
					fe.Add(at(k), "must be a boolean")
				}
			case "examples":
				arr, ok := val.([]any)
				if !ok {
					fe.Add(at(k), "must be an array")
				}
				s.examples = arr
			case "default":
				s.defaultValue, s.hasDefault = val, true
			}
			continue
		case !slices.Contains(inputSchemaKeywords, k):
			fe.Add(at(k), "unsupported keyword %q (supported: %s; annotations and x- members are ignored)",
				k, strings.Join(inputSchemaKeywords, ", "))
			continue
		}
		switch k {
		case "type":
			s.types = compileTypes(val, at(k), fe)
		case "properties":
			props, ok := val.(map[string]any)
			if !ok {
				fe.Add(at(k), "must be an object of schemas")
				continue
			}
			s.properties = make(map[string]*InputSchema, len(props))
			for name, ps := range props {
				s.properties[name] = compileSchema(ps, at(k)+"."+name, fe, depth+1)
			}
		case "required":
			arr, ok := val.([]any)
			if !ok {
				fe.Add(at(k), "must be an array of property names")
				continue
			}
			for i, e := range arr {
				name, ok := e.(string)
				switch {
				case !ok:
					fe.Add(fmt.Sprintf("%s[%d]", at(k), i), "must be a string")
				case slices.Contains(s.required, name):
					fe.Add(fmt.Sprintf("%s[%d]", at(k), i), "%q is listed twice", name)
				default:
					s.required = append(s.required, name)
				}
			}
		case "additionalProperties":
			s.additional = compileSchema(val, at(k), fe, depth+1)
		case "items":
			if _, isArr := val.([]any); isArr {
				fe.Add(at(k), "must be one schema (the tuple form is not supported)")
				continue
			}
			s.items = compileSchema(val, at(k), fe, depth+1)
		case "minProperties":
			s.minProps = schemaCount(val, at(k), fe, 0)
		case "maxProperties":
			s.maxProps = schemaCount(val, at(k), fe, -1)
		case "minItems":
			s.minItems = schemaCount(val, at(k), fe, 0)
		case "maxItems":
			s.maxItems = schemaCount(val, at(k), fe, -1)
		case "minLength":
			s.minLength = schemaCount(val, at(k), fe, 0)
		case "maxLength":
			s.maxLength = schemaCount(val, at(k), fe, -1)
		case "uniqueItems":
			b, ok := val.(bool)
			if !ok {
				fe.Add(at(k), "must be a boolean")
			}
			s.uniqueItems = b
		case "enum":
			arr, ok := val.([]any)
			if !ok || len(arr) == 0 {
				fe.Add(at(k), "must be a non-empty array")
				continue
			}
			for i, e := range arr {
				c, err := AppendCanonicalJSON(nil, e)
				if err != nil {
					fe.Add(fmt.Sprintf("%s[%d]", at(k), i), "%v", err)
					continue
				}
				if slices.Contains(s.enum, string(c)) {
					fe.Add(fmt.Sprintf("%s[%d]", at(k), i), "%s is listed twice", c)
					continue
				}
				s.enum = append(s.enum, string(c))
			}
		case "const":
			c, err := AppendCanonicalJSON(nil, val)
			if err != nil {
				fe.Add(at(k), "%v", err)
				continue
			}
			cs := string(c)
			s.constant = &cs
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			f, ok := schemaNumber(val)
			if !ok {
				if _, isBool := val.(bool); isBool && strings.HasPrefix(k, "exclusive") {
					fe.Add(at(k), "must be a number (the draft-04 boolean form is not supported)")
				} else {
					fe.Add(at(k), "must be a number")
				}
				continue
			}
			switch k {
			case "minimum":
				s.minimum = &f
			case "maximum":
				s.maximum = &f
			case "exclusiveMinimum":
				s.exclMin = &f
			default:
				s.exclMax = &f
			}
		case "multipleOf":
			n, ok := val.(json.Number)
			f, okF := schemaNumber(val)
			if !ok || !okF || f <= 0 {
				fe.Add(at(k), "must be a number greater than 0")
				continue
			}
			s.multipleOf = n
		case "pattern":
			p, ok := val.(string)
			if !ok {
				fe.Add(at(k), "must be a string")
				continue
			}
			if len(p) > MaxInputSchemaPatternLen {
				fe.Add(at(k), "must be at most %d characters", MaxInputSchemaPatternLen)
				continue
			}
			re, err := regexp.Compile(p)
			if err != nil {
				fe.Add(at(k), "is not a valid RE2 regular expression: %v", err)
				continue
			}
			s.pattern = re
		case "format":
			f, ok := val.(string)
			if !ok || !slices.Contains(inputSchemaFormats, f) {
				fe.Add(at(k), "must be one of %s", strings.Join(inputSchemaFormats, ", "))
				continue
			}
			s.format = f
		}
	}
	s.checkConsistency(m, path, fe, before)
	return s
}

// fieldErrorCount is the number of messages in fe.
func fieldErrorCount(fe FieldErrors) int {
	n := 0
	for _, msgs := range fe {
		n += len(msgs)
	}
	return n
}

func compileTypes(val any, path string, fe FieldErrors) []string {
	var names []any
	switch t := val.(type) {
	case string:
		names = []any{t}
	case []any:
		if len(t) == 0 {
			fe.Add(path, "must name at least one type")
			return nil
		}
		names = t
	default:
		fe.Add(path, "must be a type name or an array of type names")
		return nil
	}
	var out []string
	for i, n := range names {
		at := path
		if _, isArr := val.([]any); isArr {
			at = fmt.Sprintf("%s[%d]", path, i)
		}
		name, ok := n.(string)
		switch {
		case !ok || !slices.Contains(inputSchemaTypes, name):
			fe.Add(at, "must be one of %s", strings.Join(inputSchemaTypes, ", "))
		case slices.Contains(out, name):
			fe.Add(at, "%q is listed twice", name)
		default:
			out = append(out, name)
		}
	}
	return out
}

// schemaCount reads a non-negative integer keyword; unset returns def.
func schemaCount(val any, path string, fe FieldErrors, def int) int {
	f, ok := schemaNumber(val)
	if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		fe.Add(path, "must be a non-negative integer")
		return def
	}
	return int(f)
}

func schemaNumber(val any) (float64, bool) {
	n, ok := val.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// checkConsistency refuses schemas that cannot be what their author meant.
func (s *InputSchema) checkConsistency(m map[string]any, path string, fe FieldErrors, before int) {
	at := func(k string) string { return path + "." + k }
	if s.minimum != nil && s.maximum != nil && *s.minimum > *s.maximum {
		fe.Add(at("maximum"), "is below minimum")
	}
	if s.maxLength >= 0 && s.minLength > s.maxLength {
		fe.Add(at("maxLength"), "is below minLength")
	}
	if s.maxItems >= 0 && s.minItems > s.maxItems {
		fe.Add(at("maxItems"), "is below minItems")
	}
	if s.maxProps >= 0 && s.minProps > s.maxProps {
		fe.Add(at("maxProperties"), "is below minProperties")
	}
	if s.additional != nil && s.additional.never {
		for i, name := range s.required {
			if _, ok := s.properties[name]; !ok {
				fe.Add(fmt.Sprintf("%s[%d]", at("required"), i),
					"%q is required but not in properties, and additionalProperties is false", name)
			}
		}
	}
	if len(s.types) > 0 {
		has := func(ts ...string) bool {
			for _, t := range ts {
				if slices.Contains(s.types, t) {
					return true
				}
			}
			return false
		}
		families := []struct {
			types    []string
			keywords []string
		}{
			{[]string{"string"}, []string{"minLength", "maxLength", "pattern", "format"}},
			{[]string{"number", "integer"}, []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}},
			{[]string{"object"}, []string{"properties", "required", "additionalProperties", "minProperties", "maxProperties"}},
			{[]string{"array"}, []string{"items", "minItems", "maxItems", "uniqueItems"}},
		}
		for _, f := range families {
			if has(f.types...) {
				continue
			}
			for _, k := range f.keywords {
				if _, ok := m[k]; ok {
					fe.Add(at(k), "applies to %s values, but type is %s", strings.Join(f.types, " or "), strings.Join(s.types, ", "))
				}
			}
		}
	}
	if fieldErrorCount(fe) != before {
		return // the schema is broken; checking values against it would only repeat that
	}
	if s.hasDefault {
		s.Validate(s.defaultValue, at("default"), fe)
	}
	for i, e := range s.examples {
		s.Validate(e, fmt.Sprintf("%s[%d]", at("examples"), i), fe)
	}
}

// RootIsObject reports whether the schema only admits objects (a transition input's root must).
func (s *InputSchema) RootIsObject() bool {
	return len(s.types) == 1 && s.types[0] == "object"
}

// ValidatePayload parses one JSON text strictly and validates it, naming problems by their path
// under root (input.lines[0].quantity). The result is a VALIDATION_ERROR or nil.
func (s *InputSchema) ValidatePayload(data []byte, root string) error {
	v, err := decodeJSONValue(data)
	if err != nil {
		return err
	}
	fe := FieldErrors{}
	s.Validate(v, root, fe)
	return fe.Err()
}

// Validate checks a decoded JSON value (as decodeJSONValue returns it) and adds each problem to
// fe under its path.
func (s *InputSchema) Validate(v any, path string, fe FieldErrors) {
	p := valuePath{root: path}
	s.validate(v, &p, fe)
}

// valuePath is the path of the value under validation, as a stack of member names and array
// indexes under the root, rendered only when a problem is reported: a payload that validates
// builds no path string.
type valuePath struct {
	root string
	segs []pathSeg
}

// pathSeg is a member name or, when isIndex, an array index.
type pathSeg struct {
	name    string
	index   int
	isIndex bool
}

func (p *valuePath) push(s pathSeg) { p.segs = append(p.segs, s) }
func (p *valuePath) pop()           { p.segs = p.segs[:len(p.segs)-1] }

func (p *valuePath) String() string {
	var b strings.Builder
	b.WriteString(p.root)
	for _, s := range p.segs {
		if s.isIndex {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
			continue
		}
		b.WriteByte('.')
		b.WriteString(s.name)
	}
	return b.String()
}

// child renders the path of member name under the current value.
func (p *valuePath) child(name string) string {
	p.push(pathSeg{name: name})
	defer p.pop()
	return p.String()
}

func (s *InputSchema) validate(v any, p *valuePath, fe FieldErrors) {
	if s == nil {
		return
	}
	if s.never {
		fe.Add(p.String(), "is not allowed")
		return
	}
	kind := jsonKind(v)
	if len(s.types) > 0 && !slices.Contains(s.types, kind) &&
		!(kind == "number" && slices.Contains(s.types, "integer") && isIntegral(v)) {
		fe.Add(p.String(), "must be of type %s", strings.Join(s.types, " or "))
		return
	}
	if s.constant != nil || len(s.enum) > 0 {
		c, err := AppendCanonicalJSON(nil, v)
		switch {
		case err != nil:
			fe.Add(p.String(), "%v", err)
			return
		case s.constant != nil && string(c) != *s.constant:
			fe.Add(p.String(), "must be %s", *s.constant)
		case len(s.enum) > 0 && !slices.Contains(s.enum, string(c)):
			fe.Add(p.String(), "must be one of %s", strings.Join(s.enum, ", "))
		}
	}
	switch x := v.(type) {
	case json.Number:
		s.validateNumber(x, p, fe)
	case string:
		s.validateString(x, p, fe)
	case map[string]any:
		s.validateObject(x, p, fe)
	case []any:
		s.validateArray(x, p, fe)
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	}
	return "number"
}

func isIntegral(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return err == nil && !math.IsInf(f, 0) && f == math.Trunc(f)
}

func (s *InputSchema) validateNumber(n json.Number, p *valuePath, fe FieldErrors) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		fe.Add(p.String(), "is out of range")
		return
	}
	switch {
	case s.minimum != nil && f < *s.minimum:
		fe.Add(p.String(), "must be at least %s", fmtSchemaNumber(*s.minimum))
	case s.exclMin != nil && f <= *s.exclMin:
		fe.Add(p.String(), "must be greater than %s", fmtSchemaNumber(*s.exclMin))
	}
	switch {
	case s.maximum != nil && f > *s.maximum:
		fe.Add(p.String(), "must be at most %s", fmtSchemaNumber(*s.maximum))
	case s.exclMax != nil && f >= *s.exclMax:
		fe.Add(p.String(), "must be less than %s", fmtSchemaNumber(*s.exclMax))
	}
	if s.multipleOf != "" && !isMultipleOf(n, s.multipleOf) {
		fe.Add(p.String(), "must be a multiple of %s", s.multipleOf)
	}
}

func fmtSchemaNumber(f float64) string {
	b, _ := appendES6Number(nil, f)
	return string(b)
}

// isMultipleOf decides exactly on the decimal literals (0.3 is a multiple of 0.1), falling back
// to floating point only for literals with huge exponents.
func isMultipleOf(n, m json.Number) bool {
	rn, okN := decimalRat(n)
	rm, okM := decimalRat(m)
	if okN && okM && rm.Sign() != 0 {
		return new(big.Rat).Quo(rn, rm).IsInt()
	}
	fn, _ := strconv.ParseFloat(string(n), 64)
	fm, _ := strconv.ParseFloat(string(m), 64)
	q := fn / fm
	return math.Abs(q-math.Round(q)) <= 1e-9*math.Max(1, math.Abs(q))
}

// decimalRat is the exact value of a JSON number literal whose exponent is small enough to make
// that cheap (|exponent| <= 400 covers every finite float64).
func decimalRat(n json.Number) (*big.Rat, bool) {
	s := string(n)
	if len(s) > 400 {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(s[i+1:])
		if err != nil || exp > 400 || exp < -400 {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

func (s *InputSchema) validateString(v string, p *valuePath, fe FieldErrors) {
	if s.minLength > 0 || s.maxLength >= 0 {
		n := utf8.RuneCountInString(v)
		if n < s.minLength {
			fe.Add(p.String(), "must be at least %d characters", s.minLength)
		}
		if s.maxLength >= 0 && n > s.maxLength {
			fe.Add(p.String(), "must be at most %d characters", s.maxLength)
		}
	}
	if s.pattern != nil && !s.pattern.MatchString(v) {
		fe.Add(p.String(), "must match the pattern %s", s.pattern)
	}
	if s.format != "" && !validFormat(s.format, v) {
		fe.Add(p.String(), "must be a valid %s", s.format)
	}
}

var uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func validFormat(format, v string) bool {
	switch format {
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, v)
		return err == nil
	case "date":
		_, err := time.Parse(time.DateOnly, v)
		return err == nil
	case "email":
		return ValidEmail(v)
	case "uuid":
		return uuidRe.MatchString(v)
	}
	return true
}

func (s *InputSchema) validateObject(obj map[string]any, p *valuePath, fe FieldErrors) {
	for _, name := range s.required {
		if _, ok := obj[name]; !ok {
			fe.Add(p.child(name), "is required")
		}
	}
	if len(obj) < s.minProps {
		fe.Add(p.String(), "must have at least %d properties", s.minProps)
	}
	if s.maxProps >= 0 && len(obj) > s.maxProps {
		fe.Add(p.String(), "must have at most %d properties", s.maxProps)
	}
	var buf [8]string
	names := buf[:0]
	for k := range obj {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if ps, ok := s.properties[k]; ok {
			p.push(pathSeg{name: k})
			ps.validate(obj[k], p, fe)
			p.pop()
			continue
		}
		if s.additional != nil {
			if s.additional.never {
				fe.Add(p.child(k), "is not an allowed property")
				continue
			}
			p.push(pathSeg{name: k})
			s.additional.validate(obj[k], p, fe)
			p.pop()
		}
	}
}

func (s *InputSchema) validateArray(arr []any, p *valuePath, fe FieldErrors) {
	if len(arr) < s.minItems {
		fe.Add(p.String(), "must have at least %d items", s.minItems)
	}
	if s.maxItems >= 0 && len(arr) > s.maxItems {
		fe.Add(p.String(), "must have at most %d items", s.maxItems)
	}
	var seen map[string]int
	if s.uniqueItems {
		seen = make(map[string]int, len(arr))
	}
	for i, e := range arr {
		p.push(pathSeg{index: i, isIndex: true})
		s.items.validate(e, p, fe)
		if seen != nil {
			if c, err := AppendCanonicalJSON(nil, e); err == nil {
				if j, dup := seen[string(c)]; dup {
					fe.Add(p.String(), "duplicates item %d (items must be unique)", j)
				} else {
					seen[string(c)] = i
				}
			}
		}
		p.pop()
	}
}
