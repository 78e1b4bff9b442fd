package supplyplan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// in one object, numbers within IEEE 754 double range; decodeJSONValue enforces the first two.

// CanonicalJSON returns the RFC 8785 canonical form of one JSON text.
func CanonicalJSON(data []byte) ([]byte, error) {
	v, err := decodeJSONValue(data)
	if err != nil {
		return nil, err
	}
	return AppendCanonicalJSON(make([]byte, 0, len(data)), v)
}

// decodeJSONValue parses one JSON text strictly into map[string]any, []any, string, json.Number,
// bool and nil. encoding/json's token stream checks the syntax; on top of it, what encoding/json
// lets through without a word is refused: a member name given twice in one object, and invalid
// UTF-8 or a lone surrogate escape in a string or a name (encoding/json would store U+FFFD). A
// problem is a VALIDATION_ERROR naming the path of the value (a.b[0].c; a name's problem is its
// object's) or, for syntax, the offset: the shape of the strict check of request bodies
// (internal/strictjson), without depending on it.
func decodeJSONValue(data []byte) (any, error) {
	if v, ok := decodePlainJSON(data); ok {
		return v, nil
	}
	return decodeJSONTokens(data)
}

// decodeJSONTokens is decodeJSONValue on encoding/json's token stream (every text it declines).
func decodeJSONTokens(data []byte) (any, error) {
	d := ijsonDecoder{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	d.dec.UseNumber()
	tok, lit, err := d.token()
	if err != nil {
		return nil, err
	}
	v, err := d.value(tok, lit)
	if err != nil {
		return nil, err
	}
	end := int(d.dec.InputOffset())
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		return nil, malformed("body", fmt.Sprintf("unexpected data after the JSON value (offset %d)", len(data)-len(rest)))
	}
	return v, nil
}

// decodePlainJSON is decodeJSONValue's fast path: one pass over the bytes building the same
// value, for the JSON texts it takes without a doubt (valid, strings without escapes and of valid
// UTF-8, no member name twice, nesting up to plainJSONDepth). It declines (ok false) everything
// else, which the token stream then decodes or refuses with its own error: the results of the two
// paths are the same (FuzzDecodePlainJSON), only the fast one allocates no token per value.
func decodePlainJSON(data []byte) (v any, ok bool) {
	p := plainJSON{b: data}
	i := p.ws(0)
	v, i, ok = p.value(i, 0)
	if !ok || p.ws(i) != len(data) {
		return nil, false
	}
	return v, true
}

// plainJSONDepth is the nesting decodePlainJSON takes; deeper texts take the token stream.
const plainJSONDepth = 64

type plainJSON struct{ b []byte }

func (p *plainJSON) ws(i int) int {
	for i < len(p.b) && (p.b[i] == ' ' || p.b[i] == '\n' || p.b[i] == '\t' || p.b[i] == '\r') {
		i++
	}
	return i
}

// value decodes the value at b[i] and returns the offset after it.
func (p *plainJSON) value(i, depth int) (any, int, bool) {
	b := p.b
	if i >= len(b) {
		return nil, i, false
	}
	switch c := b[i]; {
	case c == '{':
		if depth >= plainJSONDepth {
			return nil, i, false
		}
		return p.object(i+1, depth+1)
	case c == '[':
		if depth >= plainJSONDepth {
			return nil, i, false
		}
		return p.array(i+1, depth+1)
	case c == '"':
		s, next, ok := p.str(i + 1)
		return s, next, ok
	case c == 't':
		return true, i + 4, len(b)-i >= 4 && string(b[i:i+4]) == "true"
	case c == 'f':
		return false, i + 5, len(b)-i >= 5 && string(b[i:i+5]) == "false"
	case c == 'n':
		return nil, i + 4, len(b)-i >= 4 && string(b[i:i+4]) == "null"
	case c == '-' || c >= '0' && c <= '9':
		end, ok := plainNumber(b, i)
		if !ok {
			return nil, i, false
		}
		return json.Number(b[i:end]), end, true
	}
	return nil, i, false
}

// str decodes the string whose body starts at b[i] (after the quote): no escape, no control
// character, valid UTF-8.
func (p *plainJSON) str(i int) (string, int, bool) {
	b := p.b
	q := bytes.IndexByte(b[i:], '"')
	if q < 0 {
		return "", i, false
	}
	body := b[i : i+q]
	ascii := true
	for _, c := range body {
		if c < 0x20 || c == '\\' {
			return "", i, false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(body) {
		return "", i, false
	}
	return string(body), i + q + 1, true
}

func (p *plainJSON) object(i, depth int) (any, int, bool) {
	b := p.b
	m := map[string]any{}
	i = p.ws(i)
	if i < len(b) && b[i] == '}' {
		return m, i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, i, false
		}
		name, next, ok := p.str(i + 1)
		if !ok {
			return nil, i, false
		}
		if _, dup := m[name]; dup {
			return nil, i, false
		}
		if i = p.ws(next); i >= len(b) || b[i] != ':' {
			return nil, i, false
		}
		v, next, ok := p.value(p.ws(i+1), depth)
		if !ok {
			return nil, i, false
		}
		m[name] = v
		switch i = p.ws(next); {
		case i < len(b) && b[i] == ',':
			i = p.ws(i + 1)
		case i < len(b) && b[i] == '}':
			return m, i + 1, true
		default:
			return nil, i, false
		}
	}
}

func (p *plainJSON) array(i, depth int) (any, int, bool) {
	b := p.b
	a := []any{}
	i = p.ws(i)
	if i < len(b) && b[i] == ']' {
		return a, i + 1, true
	}
	for {
		v, next, ok := p.value(i, depth)
		if !ok {
			return nil, i, false
		}
		a = append(a, v)
		switch i = p.ws(next); {
		case i < len(b) && b[i] == ',':
			i = p.ws(i + 1)
		case i < len(b) && b[i] == ']':
			return a, i + 1, true
		default:
			return nil, i, false
		}
	}
}

// plainNumber scans the JSON number at b[i]: the offset after it, false when it is malformed.
func plainNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	return i, true
}

// maxJSONDepth is encoding/json's nesting limit (its token stream has none of its own).
const maxJSONDepth = 10000

// ijsonDecoder builds a value from encoding/json's tokens, checking what I-JSON requires.
type ijsonDecoder struct {
	data  []byte
	dec   *json.Decoder
	path  []any // member names (string) and array indexes (int) down to the current value
	depth int
}

// token returns the next token and, for a string, its literal in data (quotes included).
func (d *ijsonDecoder) token() (json.Token, []byte, error) {
	start := d.dec.InputOffset()
	tok, err := d.dec.Token()
	switch {
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, nil, malformed("body", "unexpected end of JSON")
	case err != nil:
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, nil, malformed("body", fmt.Sprintf("invalid JSON at offset %d: %s", syn.Offset, syn.Error()))
		}
		return nil, nil, malformed("body", err.Error())
	}
	var lit []byte
	if _, ok := tok.(string); ok {
		// Before the literal, the token stream only consumed whitespace, ',' and ':'.
		raw := d.data[start:d.dec.InputOffset()]
		lit = raw[bytes.IndexByte(raw, '"'):]
	}
	return tok, lit, nil
}

func (d *ijsonDecoder) value(tok json.Token, lit []byte) (any, error) {
	switch t := tok.(type) {
	case json.Delim: // '{' or '[': the token stream reports a misplaced '}' or ']' as a syntax error
		if d.depth++; d.depth > maxJSONDepth {
			return nil, malformed("body", "exceeded max depth")
		}
		defer func() { d.depth-- }()
		if t == '{' {
			return d.object()
		}
		return d.array()
	case string:
		if err := d.checkString(t, lit, false); err != nil {
			return nil, err
		}
	}
	return tok, nil // json.Number, bool, nil or a string
}

func (d *ijsonDecoder) object() (any, error) {
	m := map[string]any{}
	for {
		tok, lit, err := d.token()
		if err != nil {
			return nil, err
		}
		if tok == json.Delim('}') {
			return m, nil
		}
		name, ok := tok.(string)
		if !ok { // the token stream allows nothing else here; kept as a guard
			return nil, malformed("body", "invalid JSON: an object member name must be a string")
		}
		if err := d.checkString(name, lit, true); err != nil {
			return nil, err
		}
		if _, dup := m[name]; dup {
			d.path = append(d.path, name)
			return nil, malformed(d.pathString(), "is given more than once in the same object")
		}
		if tok, lit, err = d.token(); err != nil {
			return nil, err
		}
		d.path = append(d.path, name)
		v, err := d.value(tok, lit)
		if err != nil {
			return nil, err
		}
		d.path = d.path[:len(d.path)-1]
		m[name] = v
	}
}

func (d *ijsonDecoder) array() (any, error) {
	a := []any{}
	for i := 0; ; i++ {
		tok, lit, err := d.token()
		if err != nil {
			return nil, err
		}
		if tok == json.Delim(']') {
			return a, nil
		}
		d.path = append(d.path, i)
		v, err := d.value(tok, lit)
		if err != nil {
			return nil, err
		}
		d.path = d.path[:len(d.path)-1]
		a = append(a, v)
	}
}

// checkString refuses a string or member name s, decoded from the literal lit, that encoding/json
// decoded with a replacement character it did not contain: invalid UTF-8 or a lone surrogate
// escape, whichever comes first. A name's problem is reported at its object.
func (d *ijsonDecoder) checkString(s string, lit []byte, isName bool) error {
	if !strings.ContainsRune(s, utf8.RuneError) {
		return nil // both problems decode to U+FFFD
	}
	body := lit[1 : len(lit)-1]
	bad := 0 // the first invalid UTF-8 byte of body, len(body) when none
	for bad < len(body) {
		r, n := utf8.DecodeRune(body[bad:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		bad += n
	}
	esc, r := loneSurrogate(lit)
	switch {
	case bad < len(body) && (esc < 0 || bad+1 < esc):
		what := "contains invalid UTF-8"
		if isName {
			what = "has a key with invalid UTF-8"
		}
		return malformed(d.pathString(), fmt.Sprintf("%s (byte 0x%02X at offset %d of the string)", what, body[bad], bad))
	case esc >= 0:
		return malformed(d.pathString(), fmt.Sprintf("contains an unpaired UTF-16 surrogate escape (\\u%04X) at offset %d: not valid Unicode", r, esc))
	}
	return nil // a U+FFFD of the input
}

// loneSurrogate returns the offset in lit (a string literal of valid JSON, quotes included) of
// the first \u escape of a UTF-16 surrogate without its other half, and the escaped unit; -1
// when there is none.
func loneSurrogate(lit []byte) (int, rune) {
	for i := 0; i+1 < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		if lit[i+1] != 'u' {
			i++ // \" \\ \/ \b \f \n \r \t
			continue
		}
		r := hex4(lit[i+2 : i+6])
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+12 <= len(lit) && lit[i+6] == '\\' && lit[i+7] == 'u' {
				if lo := hex4(lit[i+8 : i+12]); lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11 // a pair
					continue
				}
			}
			return i, r
		case r >= 0xDC00 && r <= 0xDFFF:
			return i, r
		}
		i += 5
	}
	return -1, 0
}

// hex4 is the value of the four hexadecimal digits of a \u escape (valid: checked by the token
// stream).
func hex4(b []byte) rune {
	v, _ := strconv.ParseUint(string(b), 16, 16)
	return rune(v)
}

// pathString renders the path of the current value, "body" at the top.
func (d *ijsonDecoder) pathString() string {
	var b strings.Builder
	for _, p := range d.path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		}
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

func malformed(field, msg string) error {
	return &Error{Code: EVALIDATION, Message: "Malformed JSON", Details: map[string][]string{field: {msg}}}
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
