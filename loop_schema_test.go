package supplyplan

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

func mustDecodeJSON(t testing.TB, s string) any {
	t.Helper()
	v, err := decodeJSONValue([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func detailKeys(fe map[string][]string) []string {
	keys := make([]string, 0, len(fe))
	for k := range fe {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestCompileInputSchemaRefuses(t *testing.T) {
	tests := []struct {
		name, schema, path, msg string
	}{
		{"not a schema", `"string"`, "in", "must be a JSON Schema"},
		{"unknown type", `{"type":"text"}`, "in.type", "must be one of"},
		{"type listed twice", `{"type":["string","string"]}`, "in.type[1]", "listed twice"},
		{"unsupported keyword", `{"oneOf":[{"type":"string"}]}`, "in.oneOf", "unsupported keyword"},
		{"ref unsupported", `{"$ref":"#/defs/x"}`, "in.$ref", "unsupported keyword"},
		{"nested unsupported", `{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[]}}}}`, "in.properties.a.items.anyOf", "unsupported keyword"},
		{"tuple items", `{"type":"array","items":[{"type":"string"}]}`, "in.items", "tuple form"},
		{"negative minLength", `{"type":"string","minLength":-1}`, "in.minLength", "non-negative integer"},
		{"fractional maxItems", `{"type":"array","maxItems":1.5}`, "in.maxItems", "non-negative integer"},
		{"minimum not a number", `{"type":"number","minimum":"1"}`, "in.minimum", "must be a number"},
		{"draft-04 exclusiveMinimum", `{"type":"number","exclusiveMinimum":true}`, "in.exclusiveMinimum", "draft-04"},
		{"multipleOf zero", `{"type":"number","multipleOf":0}`, "in.multipleOf", "greater than 0"},
		{"bad pattern", `{"type":"string","pattern":"(?<=a)b"}`, "in.pattern", "RE2"},
		{"unknown format", `{"type":"string","format":"hostname"}`, "in.format", "must be one of"},
		{"empty enum", `{"enum":[]}`, "in.enum", "non-empty array"},
		{"enum duplicate", `{"enum":[1,1.0]}`, "in.enum[1]", "listed twice"},
		{"required twice", `{"type":"object","required":["a","a"]}`, "in.required[1]", "listed twice"},
		{"required not a string", `{"type":"object","required":[1]}`, "in.required[0]", "must be a string"},
		{"min above max", `{"type":"integer","minimum":5,"maximum":1}`, "in.maximum", "below minimum"},
		{"minLength above maxLength", `{"type":"string","minLength":5,"maxLength":1}`, "in.maxLength", "below minLength"},
		{"unsatisfiable required", `{"type":"object","properties":{"a":{}},"required":["b"],"additionalProperties":false}`, "in.required[0]", "additionalProperties is false"},
		{"keyword for another type", `{"type":"integer","minLength":1}`, "in.minLength", "applies to string values"},
		{"properties on a string", `{"type":"string","properties":{}}`, "in.properties", "applies to object values"},
		{"bad default", `{"type":"integer","minimum":1,"default":0}`, "in.default", "at least 1"},
		{"bad example", `{"type":"string","examples":["ok",3]}`, "in.examples[1]", "must be of type string"},
		{"annotation of the wrong type", `{"type":"string","title":1}`, "in.title", "must be a string"},
		{"too deep", `{"type":"array","items":` + strings.Repeat(`{"type":"array","items":`, MaxInputSchemaDepth) + `{}` + strings.Repeat(`}`, MaxInputSchemaDepth) + `}`, "in", "deeper"},
	}
	for _, tt := range tests {
		fe := FieldErrors{}
		s := CompileInputSchema(mustDecodeJSON(t, tt.schema), "in", fe)
		if s != nil {
			t.Errorf("%s: compiled, want an error at %s", tt.name, tt.path)
			continue
		}
		found := false
		for k, msgs := range fe {
			// "in.items..." paths of the depth limit are checked by prefix
			if (k == tt.path || (tt.name == "too deep" && strings.HasPrefix(k, tt.path+".items"))) &&
				strings.Contains(strings.Join(msgs, ";"), tt.msg) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: errors %v, want %q at %s", tt.name, fe, tt.msg, tt.path)
		}
	}
}

func TestCompileInputSchemaAccepts(t *testing.T) {
	for _, s := range []string{
		`true`, `{}`,
		`{"type":"object","properties":{"note":{"type":"string","maxLength":500}}}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","description":"d","$comment":"c",
		  "x-ui":{"widget":"textarea"},"type":"object","deprecated":false,"readOnly":false,"writeOnly":false,
		  "examples":[{"a":1}],"properties":{"a":{"type":"integer","default":1}}}`,
		`{"type":["string","null"],"minLength":1}`,
		`{"type":"object","additionalProperties":{"type":"number"}}`,
		`{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":10,"multipleOf":0.5}`,
	} {
		fe := FieldErrors{}
		if CompileInputSchema(mustDecodeJSON(t, s), "in", fe) == nil {
			t.Errorf("%s: %v", s, fe)
		}
	}
}

// receiveSchema is the shape of a goods receipt: lines of sku and quantity.
const receiveSchema = `{
  "type": "object",
  "required": ["lines"],
  "additionalProperties": false,
  "properties": {
    "lines": {"type": "array", "minItems": 1, "maxItems": 3, "uniqueItems": true, "items": {
      "type": "object", "required": ["sku", "quantity"], "additionalProperties": false,
      "properties": {
        "sku": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[A-Z0-9-]+$"},
        "quantity": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000, "multipleOf": 0.01},
        "lot": {"type": ["string", "null"]}
      }}},
    "receivedAt": {"type": "string", "format": "date-time"},
    "deliveryDate": {"type": "string", "format": "date"},
    "carrier": {"enum": ["DHL", "UPS", null]},
    "contact": {"type": "string", "format": "email"},
    "reference": {"type": "string", "format": "uuid"},
    "count": {"type": "integer", "minimum": 1},
    "kind": {"const": "RECEIPT"},
    "tags": {"type": "object", "maxProperties": 1, "minProperties": 1, "additionalProperties": {"type": "string"}}
  }
}`

func TestInputSchemaValidatesPayloads(t *testing.T) {
	fe := FieldErrors{}
	s := CompileInputSchema(mustDecodeJSON(t, receiveSchema), "transitions[0].input", fe)
	if s == nil {
		t.Fatal(fe)
	}
	if !s.RootIsObject() {
		t.Error("RootIsObject = false")
	}
	valid := []string{
		`{"lines":[{"sku":"A-1","quantity":2.5}]}`,
		`{"lines":[{"sku":"A-1","quantity":0.3,"lot":null},{"sku":"B","quantity":1000}],"carrier":null}`,
		`{"lines":[{"sku":"A","quantity":1}],"receivedAt":"2026-11-03T10:00:00Z","deliveryDate":"2026-11-04",
		  "contact":"ops@example.com","reference":"123e4567-e89b-12d3-a456-426614174000","count":3.0,"kind":"RECEIPT","tags":{"a":"b"}}`,
	}
	for _, p := range valid {
		if err := s.ValidatePayload([]byte(p), "input"); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	invalid := []struct {
		payload string
		paths   []string
	}{
		{`[]`, []string{"input"}},
		{`{}`, []string{"input.lines"}},
		{`{"lines":[]}`, []string{"input.lines"}},
		{`{"lines":[{"sku":"A","quantity":1}],"extra":1}`, []string{"input.extra"}},
		{`{"lines":[{"sku":"a b","quantity":0}]}`, []string{"input.lines[0].quantity", "input.lines[0].sku"}},
		{`{"lines":[{"sku":"","quantity":1001}]}`, []string{"input.lines[0].quantity", "input.lines[0].sku"}},
		{`{"lines":[{"sku":"TOOLONGSKU","quantity":1.005}]}`, []string{"input.lines[0].quantity", "input.lines[0].sku"}},
		{`{"lines":[{"quantity":"1"}]}`, []string{"input.lines[0].quantity", "input.lines[0].sku"}},
		{`{"lines":[{"sku":"A","quantity":1},{"sku":"A","quantity":1.0}]}`, []string{"input.lines[1]"}},
		{`{"lines":[{"sku":"A","quantity":1},{"sku":"B","quantity":1},{"sku":"C","quantity":1},{"sku":"D","quantity":1}]}`, []string{"input.lines"}},
		{`{"lines":[{"sku":"A","quantity":1,"lot":5}]}`, []string{"input.lines[0].lot"}},
		{`{"lines":[{"sku":"A","quantity":1}],"receivedAt":"yesterday"}`, []string{"input.receivedAt"}},
		{`{"lines":[{"sku":"A","quantity":1}],"deliveryDate":"2026-13-01"}`, []string{"input.deliveryDate"}},
		{`{"lines":[{"sku":"A","quantity":1}],"carrier":"FEDEX"}`, []string{"input.carrier"}},
		{`{"lines":[{"sku":"A","quantity":1}],"contact":"not-an-email"}`, []string{"input.contact"}},
		{`{"lines":[{"sku":"A","quantity":1}],"reference":"123"}`, []string{"input.reference"}},
		{`{"lines":[{"sku":"A","quantity":1}],"count":1.5}`, []string{"input.count"}},
		{`{"lines":[{"sku":"A","quantity":1}],"count":0}`, []string{"input.count"}},
		{`{"lines":[{"sku":"A","quantity":1}],"kind":"OTHER"}`, []string{"input.kind"}},
		{`{"lines":[{"sku":"A","quantity":1}],"tags":{}}`, []string{"input.tags"}},
		{`{"lines":[{"sku":"A","quantity":1}],"tags":{"a":1}}`, []string{"input.tags.a"}},
		{`{"lines":[{"sku":"A","quantity":1}],"tags":{"a":"x","b":"y"}}`, []string{"input.tags"}},
		{`{"lines":[{"sku":"A","quantity":1e400}]}`, []string{"input.lines[0].quantity"}},
	}
	for _, tt := range invalid {
		err := s.ValidatePayload([]byte(tt.payload), "input")
		e, ok := err.(*Error)
		if !ok || e.Code != EVALIDATION {
			t.Errorf("%s: got %v, want a validation error", tt.payload, err)
			continue
		}
		if got := detailKeys(e.Details); strings.Join(got, ",") != strings.Join(tt.paths, ",") {
			t.Errorf("%s: error paths %v (%v), want %v", tt.payload, got, e.Details, tt.paths)
		}
	}
	// Syntax and duplicate members are refused before the schema runs.
	if err := s.ValidatePayload([]byte(`{"lines":[],"lines":[]}`), "input"); ErrorCode(err) != EVALIDATION {
		t.Errorf("duplicate member: %v", err)
	}
}

func TestFalseSchemaAndMultipleOf(t *testing.T) {
	fe := FieldErrors{}
	s := CompileInputSchema(false, "in", fe)
	fe2 := FieldErrors{}
	s.Validate("x", "input", fe2)
	if len(fe2["input"]) == 0 {
		t.Error("false schema should refuse everything")
	}
	for _, tt := range []struct {
		n, m string
		want bool
	}{{"0.3", "0.1", true}, {"1e2", "25", true}, {"0.35", "0.1", false}, {"7", "2", false}, {"1e300", "1e-300", true}} {
		if got := isMultipleOf(json.Number(tt.n), json.Number(tt.m)); got != tt.want {
			t.Errorf("isMultipleOf(%s, %s) = %v", tt.n, tt.m, got)
		}
	}
}
