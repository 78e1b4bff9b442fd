package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/supplyplan/supplyplan"
)

type strictInner struct {
	Kelvin string   `json:"kelvin"`
	Lift   *float64 `json:"liftPct"`
}

type strictEmbedded struct {
	Promoted string `json:"promoted"`
}

type strictT struct {
	strictEmbedded
	Name   string                 `json:"name"`
	Count  int                    `json:"count"`
	Inner  *strictInner           `json:"inner"`
	Items  []strictInner          `json:"items"`
	Labels map[string]string      `json:"labels"`
	ByKey  map[string]strictInner `json:"byKey"`
	Raw    json.RawMessage        `json:"raw"`
	Any    any                    `json:"any"`
	Skip   string                 `json:"-"`
	Plain  string
}

func detailsOf(t *testing.T, err error) map[string][]string {
	t.Helper()
	var e *supplyplan.Error
	if !errors.As(err, &e) || e.Code != supplyplan.EVALIDATION {
		t.Fatalf("err = %v, want a VALIDATION_ERROR", err)
	}
	return e.Details
}

func TestCheckRejects(t *testing.T) {
	tests := []struct {
		name, body, field, says string
	}{
		{"invalid UTF-8 in a value", "{\"name\":\"a\xffb\"}", "name", "invalid UTF-8"},
		{"invalid UTF-8 deep", "{\"items\":[{},{\"kelvin\":\"\xc3\"}]}", "items[1].kelvin", "invalid UTF-8"},
		{"invalid UTF-8 in a key", "{\"inner\":{\"k\xe9y\":1}}", "inner", "key with invalid UTF-8"},
		{"UTF-8 encoded surrogate", "{\"name\":\"\xed\xa0\x80\"}", "name", "invalid UTF-8"},
		{"overlong UTF-8", "{\"name\":\"\xc0\xaf\"}", "name", "invalid UTF-8"},
		{"lone high surrogate escape", `{"name":"a\ud800b"}`, "name", "unpaired UTF-16 surrogate"},
		{"lone low surrogate escape", `{"any":{"x":["\udc00"]}}`, "any.x[0]", "unpaired UTF-16 surrogate"},
		{"high surrogate then non-surrogate", `{"name":"\ud800\u0041"}`, "name", "unpaired"},
		{"duplicate key", `{"name":"first","name":"second"}`, "name", "more than once"},
		{"duplicate key deep", `{"items":[{"kelvin":"a"},{"liftPct":1,"liftPct":2}]}`, "items[1].liftPct", "more than once"},
		{"duplicate key in an untyped value", `{"any":{"a":{"b":1,"b":2}}}`, "any.a.b", "more than once"},
		{"duplicate key spelled with an escape", `{"name":"a","n\u0061me":"b"}`, "name", "more than once"},
		{"duplicate map key", `{"labels":{"x":"1","y":"2","x":"3"}}`, "labels.x", "more than once"},
		{"duplicate case variant", `{"Name":"a","Name":"b"}`, "Name", "more than once"},
		{"trailing data", `{"name":"a"} {}`, "body", "after the JSON value"},
		{"syntax", `{"name":"a",}`, "body", "invalid JSON at offset"},
		{"truncated", `{"name":"a`, "body", "unexpected end"},
		{"bad escape", `{"name":"\x"}`, "body", "invalid JSON at offset"},
		{"control character", "{\"name\":\"a\tb\"}", "body", "invalid JSON at offset"},
		{"bad number", `{"count":01}`, "body", "invalid JSON at offset"},
	}
	for _, tc := range tests {
		_, _, err := Check([]byte(tc.body), reflect.TypeFor[strictT]())
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		d := detailsOf(t, err)
		if len(d[tc.field]) == 0 || !strings.Contains(d[tc.field][0], tc.says) {
			t.Errorf("%s: details %v, want %s: ...%s...", tc.name, d, tc.field, tc.says)
		}
	}
}

func TestCheckDuplicateInLargeObject(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"labels":{`)
	for i := range 40 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strings.Repeat("x", i) + `":"v"`)
	}
	b.WriteString(`,"kxxx":"again"}}`)
	_, _, err := Check([]byte(b.String()), nil)
	if d := detailsOf(t, err); len(d["labels.kxxx"]) == 0 {
		t.Fatalf("details %v", d)
	}
}

func TestCheckAccepts(t *testing.T) {
	for _, body := range []string{
		`{}`, `[]`, `"x"`, `0`, `-1.5e+3`, `true`, `null`, ` { "name" : "a" } `,
		`{"name":"caf\u00e9 \ud83d\ude00 ` + "é😀" + `"}`,
		`{"items":[{"kelvin":"a"},{"kelvin":"a"}]}`, // the same key in sibling objects
		`{"inner":{"kelvin":"a"},"any":{"kelvin":"b"}}`,
		`{"name":"\"\\\/\b\f\n\r\t"}`,
	} {
		clean, ignored, err := Check([]byte(body), reflect.TypeFor[strictT]())
		if err != nil || len(ignored) > 0 || !bytes.Equal(clean, []byte(body)) {
			t.Errorf("%s: %v %v %q", body, err, ignored, clean)
		}
	}
}

func TestCheckKeysAreCaseSensitive(t *testing.T) {
	tests := []struct {
		body    string
		want    strictT
		ignored []string
	}{
		{`{"Name":"x"}`, strictT{}, []string{"Name"}},
		{`{"name":"a","NAME":"b","Name":"c"}`, strictT{Name: "a"}, []string{"NAME", "Name"}},
		{`{"Name":"c","name":"a"}`, strictT{Name: "a"}, []string{"Name"}},
		{`{"inner":{"KELVIN":"x","kelvin":"k"}}`, strictT{Inner: &strictInner{Kelvin: "k"}}, []string{"inner.KELVIN"}},
		// U+212A KELVIN SIGN folds to K: encoding/json would match it to "kelvin".
		{`{"items":[{"` + "\u212a" + `elvin":"x"}]}`, strictT{Items: []strictInner{{}}}, []string{"items[0]." + "\u212a" + "elvin"}},
		{`{"byKey":{"A":{"LiftPct":1}}}`, strictT{ByKey: map[string]strictInner{"A": {}}}, []string{"byKey.A.LiftPct"}},
		{`{"PROMOTED":"x","promoted":"p"}`, strictT{strictEmbedded: strictEmbedded{Promoted: "p"}}, []string{"PROMOTED"}},
		{`{"plain":"x","Plain":"y"}`, strictT{Plain: "y"}, []string{"plain"}},
		// Map keys, raw and untyped values are not fields: any case goes.
		{`{"labels":{"Name":"x","name":"y"},"any":{"Name":1},"raw":{"Name":1}}`,
			strictT{Labels: map[string]string{"Name": "x", "name": "y"}, Any: map[string]any{"Name": 1.0}, Raw: json.RawMessage(`{"Name":1}`)}, nil},
		// Unknown keys stay ignored; "-" is no field.
		{`{"unknown":1,"Skip":"s","-":"x"}`, strictT{}, nil},
		{`{"N\u0041ME":"x"}`, strictT{}, []string{"NAME"}},
	}
	for _, tc := range tests {
		var got strictT
		err := Unmarshal([]byte(tc.body), &got)
		_, ignored, _ := Check([]byte(tc.body), reflect.TypeFor[strictT]())
		if err != nil || !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(ignored, tc.ignored) {
			t.Errorf("%s: %+v %v ignored %v, want %+v ignored %v", tc.body, got, err, ignored, tc.want, tc.ignored)
		}
	}
}

// duplicateKeys reports whether data (valid JSON) has a key twice in one object, by
// encoding/json's token stream: the reference the scanner is fuzzed against.
func duplicateKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj    bool
		keys   map[string]bool
		expect bool // next string token in an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.obj {
					top.expect = true
				}
				stack = append(stack, &frame{obj: v == '{', keys: map[string]bool{}, expect: true})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.obj && top.expect {
				if top.keys[v] {
					return true
				}
				top.keys[v] = true
				top.expect = false
				continue
			}
		}
		if top != nil && top.obj {
			top.expect = true
		}
	}
}

var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

// fuzzT is the schema of the case property of FuzzCheck.
type fuzzT struct {
	Name  string   `json:"name"`
	Lift  *float64 `json:"liftPct"`
	Inner *struct {
		Kelvin string `json:"kelvin"`
	} `json:"inner"`
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"name":"a"}`, `{"name":"a","name":"b"}`, `{"Name":"a"}`, `{"inner":{"KELVIN":"k"}}`, "{\"name\":\"\xff\"}",
		`{"name":"\ud800"}`, `[1,2,{"a":[]}]`, `{"liftPct":-0.5e-3}`, `{"a":{"b":{"c":{"b":1,"b":2}}}}`, `  "x"  `, `{`,
		"{\"a\":{\"k\xe9y\":1}}", `["\udc00"]`, "[\"\\ud800\xff\"]", "[\"\xff\\ud800\"]", `["\ufffd","\\ud800","\ud83d\ude00"]`,
		`{"":1,"":2}`, `{"a":{"":[{"":1,"":2}]}}`, `[1e400]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		agreesWithCanonicalJSON(t, data)
		clean, ignored, err := Check(data, reflect.TypeFor[fuzzT]())
		valid := json.Valid(data)
		if err == nil {
			if !valid || !utf8.Valid(data) || duplicateKeys(data) {
				t.Fatalf("accepted %q (json.Valid %v, utf8 %v)", data, valid, utf8.Valid(data))
			}
			if !json.Valid(clean) {
				t.Fatalf("clean %q of %q is not JSON", clean, data)
			}
			// Nothing fills a field but its exact key.
			var got fuzzT
			var generic map[string]any
			if json.Unmarshal(clean, &got) == nil && json.Unmarshal(data, &generic) == nil {
				if _, ok := generic["name"]; got.Name != "" && !ok {
					t.Fatalf("%q filled name from %v (ignored %v)", data, generic, ignored)
				}
				if _, ok := generic["liftPct"]; got.Lift != nil && !ok {
					t.Fatalf("%q filled liftPct from %v", data, generic)
				}
				if in, _ := generic["inner"].(map[string]any); got.Inner != nil && got.Inner.Kelvin != "" && in["kelvin"] == nil {
					t.Fatalf("%q filled inner.kelvin from %v", data, generic)
				}
			}
			return
		}
		if c := supplyplan.ErrorCode(err); c != supplyplan.EVALIDATION {
			t.Fatalf("error code %s: %v", c, err)
		}
		if valid && utf8.Valid(data) && !surrogateEscape.Match(data) && !duplicateKeys(data) && !strings.Contains(err.Error(), "max depth") {
			t.Fatalf("refused %q: %v", data, err)
		}
	})
}

// agreesWithCanonicalJSON checks data against the root package's canonical JSON, which refuses
// the same things on its own (with encoding/json's token stream): both refuse what is not strict
// JSON, and for valid syntax they name the same problem at the same place. Only numbers beyond
// the double range are refused by canonicalization alone.
func agreesWithCanonicalJSON(t *testing.T, data []byte) {
	t.Helper()
	_, _, err := Check(data, nil)
	_, cerr := supplyplan.CanonicalJSON(data)
	var e, ce *supplyplan.Error
	errors.As(err, &e)
	errors.As(cerr, &ce)
	switch {
	case err == nil && ce != nil:
		t.Fatalf("%q: strict JSON, refused by CanonicalJSON: %v", data, cerr)
	case err != nil && cerr == nil:
		t.Fatalf("%q: refused (%v), accepted by CanonicalJSON", data, err)
	case err != nil && json.Valid(data) && (e == nil || ce == nil || !reflect.DeepEqual(e.Details, ce.Details)):
		t.Fatalf("%q: %v, CanonicalJSON's %v", data, err, cerr)
	}
}
