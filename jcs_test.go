package supplyplan

import (
	"math"
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

func TestCompareUTF16(t *testing.T) {
	// U+1F600 (surrogates D83D DE00) sorts before U+FB33 in UTF-16 but after it in code points.
	if compareUTF16("😀", "\ufb33") >= 0 {
		t.Error("U+1F600 should sort before U+FB33")
	}
	if compareUTF16("a", "ab") >= 0 || compareUTF16("ab", "a") <= 0 || compareUTF16("ab", "ab") != 0 {
		t.Error("prefix ordering wrong")
	}
}
