package supplyplan

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestCanonicalJSONRFC8785Examples(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{
			// RFC 8785 section 3.2.2.
			"values",
			`{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			// RFC 8785 section 3.2.3: member names sort by UTF-16 code units.
			"sorting",
			`{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\"," +
				"\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{"escapes", `"\u001f\u007f/<>&\u2028\t\b\f"`, "\"\\u001f\u007f/<>&\u2028\\t\\b\\f\""},
		{"nested", ` { "b" : [ 1 , { "d" : 1.0 , "c" : -0 } ] , "a" : { } } `, `{"a":{},"b":[1,{"c":0,"d":1}]}`},
		{"scalar", ` 12 `, `12`},
	}
	for _, tt := range tests {
		got, err := CanonicalJSON([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
		again, err := CanonicalJSON(got)
		if err != nil || string(again) != string(got) {
			t.Errorf("%s: canonicalizing the canonical form changed it: %s (%v)", tt.name, again, err)
		}
	}
}

func TestES6NumberSerialization(t *testing.T) {
	// RFC 8785 appendix B: IEEE 754 bit patterns and their ECMAScript form.
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		f := math.Float64frombits(tt.bits)
		got, err := appendES6Number(nil, f)
		if err != nil || string(got) != tt.want {
			t.Errorf("%016x: got %q (%v), want %q", tt.bits, got, err, tt.want)
		}
	}
	for _, bits := range []uint64{0x7fffffffffffffff, 0x7ff0000000000000} { // NaN, Infinity
		if got, err := appendES6Number(nil, math.Float64frombits(bits)); err == nil {
			t.Errorf("%016x: got %q, want an error", bits, got)
		}
	}
}

func TestCanonicalJSONSameContentSameBytes(t *testing.T) {
	a := `{"name":"acme/restock","version":"1.0.0","domain":"PROCUREMENT","states":["draft","done"],
"initial":"draft","terminal":["done"],"transitions":[{"name":"finish","from":["draft"],"to":"done",
"input":{"type":"object","properties":{"qty":{"type":"integer","minimum":1}}}}]}`
	b := `{
	  "transitions" : [ { "to" : "done", "input" : { "properties" : { "qty" : { "minimum" : 1.0, "type" : "integer" } },
	  "type" : "object" }, "from" : [ "draft" ], "name" : "finish" } ],
	  "terminal" : [ "done" ], "initial" : "draft", "states" : [ "draft", "done" ],
	  "domain" : "PROCUREMENT", "version" : "1.0.0", "name" : "acme\/restock"
	}`
	ca, err := CanonicalJSON([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := CanonicalJSON([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if string(ca) != string(cb) {
		t.Fatalf("different canonical forms:\n%s\n%s", ca, cb)
	}
	if LoopDigest(ca) != LoopDigest(cb) || LoopIntegrity(ca) != LoopIntegrity(cb) {
		t.Fatal("same content, different digests")
	}
	// A real change (array order is content) changes the bytes.
	c := strings.Replace(a, `["draft","done"]`, `["done","draft"]`, 1)
	cc, err := CanonicalJSON([]byte(c))
	if err != nil {
		t.Fatal(err)
	}
	if string(cc) == string(ca) {
		t.Fatal("reordering an array did not change the canonical form")
	}
}

func TestCanonicalJSONRejectsNonIJSON(t *testing.T) {
	for name, in := range map[string]string{
		"duplicate member": `{"a":1,"a":2}`,
		"invalid UTF-8":    "{\"a\":\"\xff\"}",
		"lone surrogate":   `{"a":"\ud800"}`,
		"out of range":     `{"a":1e400}`,
		"trailing data":    `{} {}`,
		"syntax":           `{"a":}`,
	} {
		if got, err := CanonicalJSON([]byte(in)); err == nil {
			t.Errorf("%s: got %s, want an error", name, got)
		}
	}
}

// TestCanonicalJSONErrorNamesThePlace: what I-JSON refuses is a VALIDATION_ERROR naming the path
// of the value (a name's problem at its object), and a syntax error names the offset.
func TestCanonicalJSONErrorNamesThePlace(t *testing.T) {
	tests := []struct{ name, in, field, says string }{
		{"duplicate member", `{"a":1,"a":2}`, "a", "more than once"},
		{"duplicate member deep", `{"x":[{"b":1},{"b":1,"c":{},"b":2}]}`, "x[1].b", "more than once"},
		{"duplicate spelled with an escape", `{"name":1,"n\u0061me":2}`, "name", "more than once"},
		{"duplicate in a large object", `{"o":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,` +
			`"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":3}}`, "o.k3", "more than once"},
		{"invalid UTF-8", "{\"a\":\"x\xffy\"}", "a", "invalid UTF-8 (byte 0xFF at offset 1 of the string)"},
		{"invalid UTF-8 in a name", "{\"o\":{\"k\xe9y\":1}}", "o", "key with invalid UTF-8"},
		{"UTF-8 encoded surrogate", "[\"\xed\xa0\x80\"]", "[0]", "invalid UTF-8"},
		{"lone high surrogate", `{"a":"x\ud800y"}`, "a", `unpaired UTF-16 surrogate escape (\uD800) at offset 2`},
		{"lone low surrogate", `{"a":{"b":["\udc00"]}}`, "a.b[0]", "unpaired"},
		{"high surrogate then another escape", `{"a":"\ud800\u0041"}`, "a", "unpaired"},
		{"lone surrogate in a name", `{"a":{"\udfff":1}}`, "a", "unpaired"},
		{"the first of two problems", "{\"a\":\"\\ud800\xff\"}", "a", "unpaired"},
		{"trailing data", `{} {}`, "body", "unexpected data after the JSON value (offset 3)"},
		{"syntax", `{"a":}`, "body", "invalid JSON at offset"},
		{"truncated", `{"a":"b`, "body", "unexpected end"},
		{"empty", ` `, "body", "unexpected end"},
		{"too deep", strings.Repeat("[", 10001) + strings.Repeat("]", 10001), "body", "max depth"},
	}
	for _, tt := range tests {
		got, err := CanonicalJSON([]byte(tt.in))
		var e *Error
		if !errors.As(err, &e) || e.Code != EVALIDATION {
			t.Errorf("%s: got %s, %v; want a VALIDATION_ERROR", tt.name, got, err)
			continue
		}
		if m := e.Details[tt.field]; len(e.Details) != 1 || len(m) != 1 || !strings.Contains(m[0], tt.says) {
			t.Errorf("%s: details %v, want %s: ...%s...", tt.name, e.Details, tt.field, tt.says)
		}
	}
}

// TestCanonicalJSONKeepsWhatIsValid: a U+FFFD of the input (escaped or not), an escaped backslash
// before "ud800", a surrogate pair and nesting at the limit are valid I-JSON.
func TestCanonicalJSONKeepsWhatIsValid(t *testing.T) {
	for in, want := range map[string]string{
		`["\ufffd","` + "\ufffd" + `","\\ud800","\ud83d\ude00"]`: "[\"\ufffd\",\"\ufffd\",\"\\\\ud800\",\"😀\"]",
		`{"a":{"a":{"a":1}},"b":[{"a":1},{"a":1}]}`:              `{"a":{"a":{"a":1}},"b":[{"a":1},{"a":1}]}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000):  strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	} {
		got, err := CanonicalJSON([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("%.60s: got %.60s, %v; want %.60s", in, got, err, want)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	// U+1F600 (surrogates D83D DE00) sorts before U+FB33 in UTF-16 but after it in code points.
	if compareUTF16("😀", "\ufb33") >= 0 {
		t.Error("U+1F600 should sort before U+FB33")
	}
	if compareUTF16("a", "ab") >= 0 || compareUTF16("ab", "a") <= 0 || compareUTF16("ab", "ab") != 0 {
		t.Error("prefix ordering wrong")
	}
}

// plainJSONCorpus: texts the fast path takes and texts it must decline (escapes, invalid UTF-8,
// a name twice, syntax errors, depth).
var plainJSONCorpus = []string{
	`{"defects":[{"code":"SCRATCH","quantity":1}]}`, `{}`, `[]`, ` { "a" : [ 1 , -0.5e+3 , true , false , null ] } `,
	`"héllo"`, `"\u00e9"`, `{"a":"b\"c"}`, `{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `{"a":01}`, `[1,]`, `{"a":1,}`,
	`{"a" 1}`, `[1 2]`, `tru`, `nul`, `-`, `1.`, `1e`, `1e+`, `{"a":1} x`, "\"\x01\"", `{"a":{"b":{"c":[[[]]]}}}`,
	strings.Repeat("[", 65) + strings.Repeat("]", 65), strings.Repeat("[", 64) + strings.Repeat("]", 64), `1e400`, `""`,
	`{"":0}`, `[{"a":1},{"a":1}]`, "\t\r\n 7 \n", `{"a":"\ud800"}`, `{"\u0061":1,"a":2}`, `truex`, `[true,]`,
}

func TestDecodePlainJSONMatchesTheTokenStream(t *testing.T) {
	took := 0
	for _, s := range plainJSONCorpus {
		if checkPlainJSON(t, []byte(s)) {
			took++
		}
	}
	if took < 10 || took == len(plainJSONCorpus) {
		t.Fatalf("the fast path took %d of %d texts: the corpus no longer covers both paths", took, len(plainJSONCorpus))
	}
	if _, ok := decodePlainJSON([]byte(strings.Repeat("[", 65) + strings.Repeat("]", 65))); ok {
		t.Fatal("the fast path took a text nested deeper than plainJSONDepth")
	}
	for _, s := range []string{`{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `{"a":"\u00e9"}`, `[1,]`} {
		if _, ok := decodePlainJSON([]byte(s)); ok {
			t.Errorf("the fast path took %q", s)
		}
	}
}

// checkPlainJSON compares the fast path with the token stream on data; it reports whether the fast
// path took it.
func checkPlainJSON(t *testing.T, data []byte) bool {
	t.Helper()
	fast, ok := decodePlainJSON(data)
	slow, err := decodeJSONTokens(data)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("%q: the fast path decoded what the token stream refuses (%v)", data, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: fast path %#v, token stream %#v", data, fast, slow)
	}
	return true
}
