package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/supplyplan/supplyplan/internal/jsonscan"
)

func TestScanNumberFaults(t *testing.T) {
	tests := []struct {
		in    string
		end   int
		fault jsonscan.NumberFault
	}{
		{"0", 1, jsonscan.NumberOK},
		{"-12.5e+3,", 8, jsonscan.NumberOK},
		{"01", 1, jsonscan.NumberOK}, // the caller finds the '1'
		{"-", 1, jsonscan.NumberNoDigit},
		{"-x", 1, jsonscan.NumberNoDigit},
		{".5", 0, jsonscan.NumberNoDigit},
		{"1.", 2, jsonscan.NumberNoFraction},
		{"1.e5", 2, jsonscan.NumberNoFraction},
		{"1e", 2, jsonscan.NumberNoExponent},
		{"1e+", 3, jsonscan.NumberNoExponent},
		{"2E-7x", 4, jsonscan.NumberOK},
	}
	for _, tc := range tests {
		end, fault := jsonscan.ScanNumber([]byte(tc.in), 0)
		if end != tc.end || fault != tc.fault {
			t.Errorf("ScanNumber(%q) = %d, %d; want %d, %d", tc.in, end, fault, tc.end, tc.fault)
		}
	}
}

func TestScanString(t *testing.T) {
	tests := []struct {
		in       string
		strict   bool
		body     string
		ok       bool
		nextRest string // what follows the string
	}{
		{`"plain",`, true, "plain", true, ","},
		{`"a longer plain string of ascii"}`, true, "a longer plain string of ascii", true, "}"},
		{`"é"`, true, "é", true, ""},
		{"\"\xff\"", true, "", false, ""},
		{"\"\xff\"", false, "\xff", true, ""},
		{`"a\"b"`, true, "", false, ""},
		{`"a\"b" `, false, `a\"b`, true, " "},
		{`"\u00e9"`, false, `\u00e9`, true, ""},
		{`"\u00g9"`, false, "", false, ""},
		{`"\x"`, false, "", false, ""},
		{"\"a\x01\"", false, "", false, ""},
		{`"open`, false, "", false, ""},
	}
	for _, tc := range tests {
		b := []byte(tc.in)
		s, next, ok := jsonscan.ScanString(b, 1, tc.strict)
		if ok != tc.ok || (ok && (string(s) != tc.body || string(b[next:]) != tc.nextRest)) {
			t.Errorf("ScanString(%q, strict %v) = %q, %d, %v", tc.in, tc.strict, s, next, ok)
		}
	}
}

// FuzzScan checks the scanning primitives against encoding/json and strconv.
func FuzzScan(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b\\c\u00e9"`, "\"\xff\"", `-0.0e+1`, `01`, `1.`, `123456789012345.5`,
		`0.000000000000001`, `true`, `nul`, `{"a":[1,{"b":"}"}]}`, `[1, 2 ,"x"]`, " \t\n{} ", `"\ud800"`, `12345678`,
		"abcdefgh\\ijk", "abcdefghij\x1f", "abcdefghijklmn\x80", `00ff`, `"\/\b\f\n\r\t"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		valid := json.Valid(b)
		// SkipValue and SkipWS on valid JSON: one value, whitespace around it.
		if valid {
			i := jsonscan.SkipValue(b, jsonscan.SkipWS(b, 0))
			if jsonscan.SkipWS(b, i) != len(b) {
				t.Fatalf("SkipValue(%q) stopped at %d", s, i)
			}
		}
		if len(b) > 0 && b[0] == '"' {
			body, next, ok := jsonscan.ScanString(b, 1, true)
			if ok {
				var v string
				if err := json.Unmarshal(b[:next], &v); err != nil || v != string(body) {
					t.Fatalf("strict ScanString(%q) = %q; encoding/json %q, %v", s, body, v, err)
				}
			}
			_, next, ok = jsonscan.ScanString(b, 1, false)
			if ok && !json.Valid(b[:next]) {
				t.Fatalf("ScanString(%q) accepted an invalid string", s)
			}
			if valid && (!ok || jsonscan.SkipWS(b, next) != len(b)) {
				t.Fatalf("ScanString(%q) = %d, %v on a valid string", s, next, ok)
			}
			if valid && jsonscan.SkipWS(b, jsonscan.SkipString(b, 0)) != len(b) {
				t.Fatalf("SkipString(%q) = %d", s, jsonscan.SkipString(b, 0))
			}
		}
		if len(b) > 0 {
			if j := jsonscan.SkipScalar(b, 0); j >= 0 {
				if !json.Valid(b[:j]) {
					t.Fatalf("SkipScalar(%q) accepted %q", s, b[:j])
				}
			} else if valid && !strings.ContainsRune("{[ \t\n\r", rune(b[0])) {
				t.Fatalf("SkipScalar(%q) refused a valid scalar", s)
			}
			if end, fault := jsonscan.ScanNumber(b, 0); fault == jsonscan.NumberOK {
				if !json.Valid(b[:end]) {
					t.Fatalf("ScanNumber(%q) accepted %q", s, b[:end])
				}
			} else if valid && (b[0] == '-' || b[0] >= '0' && b[0] <= '9') {
				t.Fatalf("ScanNumber(%q) refused a valid number", s)
			}
		}
		if v, ok := jsonscan.ParseDecimal(b); ok {
			if w, err := strconv.ParseFloat(s, 64); err != nil || math.Float64bits(v) != math.Float64bits(w) {
				t.Fatalf("ParseDecimal(%q) = %v, ParseFloat %v %v", s, v, w, err)
			}
		}
		noQuotes := strings.ReplaceAll(s, `"`, "x") // PlainASCII is never asked about quotes
		plain := true
		for _, c := range []byte(noQuotes) {
			plain = plain && jsonscan.IsPlain(c)
		}
		if got := jsonscan.PlainASCII([]byte(noQuotes)); got != plain {
			t.Fatalf("PlainASCII(%q) = %v, want %v", noQuotes, got, plain)
		}
		if jsonscan.SkipPlain([]byte(noQuotes), 0) == len(noQuotes) != plain {
			t.Fatalf("SkipPlain(%q) disagrees with PlainASCII", noQuotes)
		}
		if len(b) >= 4 {
			r, ok := jsonscan.Hex4(b, 0)
			w, err := strconv.ParseUint(s[:4], 16, 32)
			if ok != (err == nil && !strings.ContainsAny(s[:4], "+-_xX")) || (ok && rune(w) != r) {
				t.Fatalf("Hex4(%q) = %x, %v; ParseUint %x, %v", s[:4], r, ok, w, err)
			}
		}
		for _, lit := range []string{"true", "false", "null"} {
			if jsonscan.Literal(b, 0, lit) != strings.HasPrefix(s, lit) {
				t.Fatalf("Literal(%q, %s)", s, lit)
			}
		}
	})
}

// refScanString is ScanString's contract written plainly, byte by byte.
func refScanString(b []byte, i int, strict bool) ([]byte, int, bool) {
	start, ascii := i, true
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			if s := b[start:i]; ascii || !strict || utf8.Valid(s) {
				return s, i + 1, true
			}
			return nil, 0, false
		case c < 0x20:
			return nil, 0, false
		case c == '\\':
			if strict || i+1 >= len(b) {
				return nil, 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := jsonscan.Hex4(b, i+2); !ok {
					return nil, 0, false
				}
				i += 6
			default:
				return nil, 0, false
			}
		case c >= utf8.RuneSelf:
			ascii = false
			i++
		default:
			i++
		}
	}
	return nil, 0, false
}

// TestScanStringEveryPosition checks ScanString (its eight-bytes-at-a-time fast path above all)
// against refScanString with each special byte at each position of strings of 0 to 40 bytes.
func TestScanStringEveryPosition(t *testing.T) {
	specials := []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xc3, 0xff, '!', '#', '[', ']', 'n'}
	for n := 0; n <= 40; n++ {
		for pos := 0; pos <= n; pos++ {
			for _, c := range specials {
				for _, tail := range []string{`"`, `", "x":1}`, ``, `\"`} {
					b := append([]byte{'"'}, bytes.Repeat([]byte{'a'}, n)...)
					if pos < n {
						b[1+pos] = c
					}
					b = append(b, tail...)
					for _, strict := range []bool{true, false} {
						s, next, ok := jsonscan.ScanString(b, 1, strict)
						ws, wnext, wok := refScanString(b, 1, strict)
						if ok != wok || (ok && (string(s) != string(ws) || next != wnext)) {
							t.Fatalf("ScanString(%q, strict %v) = %q, %d, %v; want %q, %d, %v", b, strict, s, next, ok, ws, wnext, wok)
						}
					}
				}
			}
		}
	}
}
