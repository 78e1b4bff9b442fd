package supplyplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// RFC 8785 JSON Canonicalization Scheme (JCS): the one byte sequence of a JSON value, so that a
// loop manifest has one digest whatever its key order and whitespace. Object members are sorted
// by the UTF-16 code units of their names, numbers are written as ECMAScript's Number.toString
// writes them (shortest round-trip digits, exponent form below 1e-6 and from 1e21), strings carry
// only the escapes JSON requires (\" \\ \b \f \n \r \t, \u00xx for the other controls) and no
// whitespace separates tokens. Input must be I-JSON (RFC 7493): valid UTF-8, no member name twice
// in one object, numbers within IEEE 754 double range; StrictJSON enforces the first two.

// CanonicalJSON returns the RFC 8785 canonical form of one JSON text.
func CanonicalJSON(data []byte) ([]byte, error) {
	v, err := decodeJSONValue(data)
	if err != nil {
		return nil, err
	}
	return AppendCanonicalJSON(make([]byte, 0, len(data)), v)
}

// decodeJSONValue parses one JSON text strictly (syntax, UTF-8, no duplicate member) into
// map[string]any, []any, string, json.Number, bool and nil.
func decodeJSONValue(data []byte) (any, error) {
	if _, _, err := StrictJSON(data, nil); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, Invalid("body", "is not valid JSON: %v", err)
	}
	return v, nil
}

// AppendCanonicalJSON appends the canonical form of a decoded JSON value (as decodeJSONValue
// returns it; float64 and int numbers are accepted too).
func AppendCanonicalJSON(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		if x {
			return append(buf, "true"...), nil
		}
		return append(buf, "false"...), nil
	case string:
		return appendCanonicalString(buf, x), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %s: %w", x, err)
		}
		return appendES6Number(buf, f)
	case float64:
		return appendES6Number(buf, x)
	case int:
		return appendES6Number(buf, float64(x))
	case []any:
		buf = append(buf, '[')
		for i, e := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = AppendCanonicalJSON(buf, e); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCanonicalString(buf, k)
			buf = append(buf, ':')
			var err error
			if buf, err = AppendCanonicalJSON(buf, x[k]); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	}
	return nil, fmt.Errorf("canonical JSON: unsupported value of type %T", v)
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785 section 3.2.3): a character
// above U+FFFF sorts by its high surrogate (D800-DBFF), so before U+E000-U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		a, b = a[na:], b[nb:]
		if ra == rb {
			continue
		}
		ua, ub := utf16Units(ra), utf16Units(rb)
		for i := range 2 {
			if ua[i] != ub[i] {
				return int(ua[i]) - int(ub[i])
			}
		}
	}
	return len(a) - len(b) // the one that ended first is the prefix
}

func utf16Units(r rune) [2]uint16 {
	if r < 0x10000 {
		return [2]uint16{uint16(r), 0}
	}
	r -= 0x10000
	return [2]uint16{uint16(0xD800 + (r >> 10)), uint16(0xDC00 + (r & 0x3FF))}
}

func appendCanonicalString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"':
			buf = append(buf, `\"`...)
		case '\\':
			buf = append(buf, `\\`...)
		case '\b':
			buf = append(buf, `\b`...)
		case '\f':
			buf = append(buf, `\f`...)
		case '\n':
			buf = append(buf, `\n`...)
		case '\r':
			buf = append(buf, `\r`...)
		case '\t':
			buf = append(buf, `\t`...)
		default:
			const hexDigits = "0123456789abcdef"
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// appendES6Number writes f as ECMAScript's Number.prototype.toString (RFC 8785 section 3.2.2.3).
func appendES6Number(buf []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("number out of the IEEE 754 double range")
	}
	if f == 0 { // 0 and -0 both print as 0
		return append(buf, '0'), nil
	}
	if f < 0 {
		buf = append(buf, '-')
		f = -f
	}
	format := byte('e')
	if f >= 1e-6 && f < 1e21 {
		format = 'f'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	// Go writes the exponent with at least two digits (1e+07); ECMAScript with as few as needed.
	if i := strings.IndexByte(s, 'e'); i > 0 && s[i+2] == '0' {
		s = s[:i+2] + s[i+3:]
	}
	return append(buf, s...), nil
}
