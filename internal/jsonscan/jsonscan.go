// Package jsonscan is the byte-level JSON scanning the hand-written decoders share: the fast path
// of demand-history import rows and the split of import bodies (internal/importjson), the
// demand-signal decoder (streams/signal_decode.go) and the strict check every request body goes
// through (internal/strictjson). Each function takes the input and an offset and returns the offset after what
// it scanned; none allocates. Functions named Skip* trust their input to be valid JSON (checked
// before); the others validate what they scan.
package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// SkipWS returns the offset of the first byte at or after i that is not JSON whitespace.
func SkipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// plain marks the bytes a string can hold as they are: printable ASCII but '"' and '\\' (not a
// control character, not part of a multi-byte sequence).
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// IsPlain reports whether a string can hold c as it is: printable ASCII but '"' and '\\'.
func IsPlain(c byte) bool { return plain[c] }

// SkipPlain returns the offset of the first byte at or after i that is not plain (IsPlain).
func SkipPlain(b []byte, i int) int {
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

// PlainASCII reports whether every byte of b is plain, eight bytes at a time. b must hold no
// quote (it is the inside of a string up to its first quote).
func PlainASCII(b []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte is special when its top bit is set, it is below 0x20, or it is a backslash
		// (quotes cannot occur: b ends before the first one).
		below := (x - lo*0x20) & ^x
		bs := x ^ (lo * '\\')
		if (x|below|((bs-lo)&^bs))&hi != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if !plain[c] {
			return false
		}
	}
	return true
}

// plainUntilQuote returns the offset of the first byte at or after i that is not plain when it is
// a quote, else -1: one pass, eight bytes at a time (ids and codes are short, and a call of
// bytes.IndexByte followed by PlainASCII cost twice as much).
func plainUntilQuote(b []byte, i int) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// The top bit of a byte of m is set when the byte has its own top bit set, is below 0x20,
		// is a backslash or a quote. The carries of the subtractions can only mark bytes above
		// (later than) a byte that is special itself, so the lowest mark is exact.
		below := (x - lo*0x20) & ^x
		bs := x ^ (lo * '\\')
		qs := x ^ (lo * '"')
		if m := (x | below | ((bs - lo) &^ bs) | ((qs - lo) &^ qs)) & hi; m != 0 {
			k := i + bits.TrailingZeros64(m)/8
			if b[k] == '"' {
				return k
			}
			return -1
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; !plain[c] {
			if c == '"' {
				return i
			}
			return -1
		}
	}
	return -1
}

// ScanString scans a string body starting after its opening quote (b[i-1] == '"') and returns
// the body and the offset after the closing quote. With strict, escapes and invalid UTF-8 decline
// (ok false): the body is then the string's value. Without it they are only checked for validity
// (the string is skipped). Control characters and an unterminated string always decline.
func ScanString(b []byte, i int, strict bool) (s []byte, next int, ok bool) {
	start := i
	if q := plainUntilQuote(b, i); q >= 0 {
		return b[i:q], q + 1, true // the common case: nothing special inside
	}
	i = SkipPlain(b, i)
	ascii := true
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			s = b[start:i]
			if !ascii && strict && !utf8.Valid(s) {
				return nil, 0, false
			}
			return s, i + 1, true
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
				if _, ok := Hex4(b, i+2); !ok {
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

// Hex4 decodes the four hexadecimal digits at b[i:i+4] (a \u escape's).
func Hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// NumberFault says where a JSON number is malformed.
type NumberFault uint8

// Number faults.
const (
	NumberOK         NumberFault = iota
	NumberNoDigit                // no digit where the number starts (after an optional '-')
	NumberNoFraction             // no digit after the decimal point
	NumberNoExponent             // no digit in the exponent
)

// ScanNumber scans the JSON number at i. It returns the offset after it and NumberOK, or the
// offset of the byte at fault and what is wrong there. A leading zero ends the integer part
// ("01" scans as "0", the caller finds the '1' after it).
func ScanNumber(b []byte, i int) (end int, fault NumberFault) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i++; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	default:
		return i, NumberNoDigit
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, NumberNoFraction
		}
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, NumberNoExponent
		}
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
	}
	return i, NumberOK
}

// Literal reports whether b holds lit (true, false or null) at i.
func Literal(b []byte, i int, lit string) bool {
	return i >= 0 && len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// SkipScalar skips the string, number, true, false or null at i (validating it); -1 for anything
// else.
func SkipScalar(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		_, j, ok := ScanString(b, i+1, false)
		if !ok {
			return -1
		}
		return j
	case c == 't' && Literal(b, i, "true"):
		return i + 4
	case c == 'f' && Literal(b, i, "false"):
		return i + 5
	case c == 'n' && Literal(b, i, "null"):
		return i + 4
	default:
		j, fault := ScanNumber(b, i)
		if fault != NumberOK {
			return -1
		}
		return j
	}
}

// SkipString returns the offset after the string starting at b[i] == '"' of valid JSON.
func SkipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// SkipValue returns the offset after the value starting at b[i] of valid JSON.
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = SkipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' {
		i++
	}
	return i
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// ParseDecimal converts a JSON number without exponent and with at most 15 digits, exactly as
// strconv.ParseFloat does (an integer below 2^53 divided by an exact power of ten is correctly
// rounded); ok is false for anything else.
func ParseDecimal(b []byte) (float64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var m uint64
	digits, frac := 0, -1
	for k, c := range b {
		switch {
		case '0' <= c && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
		case c == '.' && frac < 0:
			frac = k
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	v := float64(m)
	if frac >= 0 {
		v /= pow10[len(b)-frac-1]
	}
	if neg {
		v = -v
	}
	return v, true
}
