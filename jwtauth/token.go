package jwtauth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/supplyplan/supplyplan/internal/jsonscan"
	"github.com/supplyplan/supplyplan/internal/strictjson"
)

// The decoding of a token without golang-jwt's parser: each segment is base64-decoded once,
// checked by internal/strictjson, and its members read into typed structs instead of the
// map[string]any of jwt.MapClaims. The structs read values exactly as MapClaims does (the
// reference test in token_test.go compares the two on every edge it knows): keys match exactly,
// `aud` is a string or an array of strings (another type counts as absent), a date is any JSON
// number (0 counts as absent) read as golang-jwt's NumericDate, and a value of another type is
// jwt.ErrInvalidType when the validator asks for it.

// segments is a token split and decoded: the signing input (header.claims) and each segment's
// bytes, all decoded into one buffer (the signature only by decodeSignature).
type segments struct {
	signing                   string
	signingBytes              []byte // signing, as bytes
	header, claims, signature []byte
	encodedSig                []byte
}

// decodeSegments splits raw and decodes its segments, refusing a header or claims set with a key
// given twice, invalid UTF-8 or invalid JSON (strictjson), which encoding/json would accept or
// decode differently. The order of the checks is the order in which golang-jwt's parser met them.
func decodeSegments(raw string) (segments, *Error) {
	h, rest, ok := strings.Cut(raw, ".")
	if !ok {
		return segments{}, invalidToken("malformed token")
	}
	c, sig, ok := strings.Cut(rest, ".")
	if !ok {
		return segments{}, invalidToken("malformed token")
	}
	enc := base64.RawURLEncoding
	in := []byte(raw)
	buf := make([]byte, enc.DecodedLen(len(h))+enc.DecodedLen(len(c))+enc.DecodedLen(len(sig)))
	var s segments
	for _, seg := range []struct {
		in  []byte
		out *[]byte
	}{{in[:len(h)], &s.header}, {in[len(h)+1 : len(h)+1+len(c)], &s.claims}} {
		n, err := enc.Decode(buf, seg.in)
		if err != nil {
			return segments{}, invalidToken("malformed token")
		}
		*seg.out, buf = buf[:n:n], buf[n:]
		if _, _, err := strictjson.Check(*seg.out, nil); err != nil {
			return segments{}, invalidToken("malformed token: a header parameter or claim given twice, or not valid JSON")
		}
	}
	if strings.Contains(sig, ".") {
		return segments{}, invalidToken("malformed token")
	}
	s.signing = raw[:len(h)+1+len(c)]
	s.signingBytes = in[:len(s.signing)]
	s.encodedSig = in[len(s.signing)+1:]
	s.signature = buf // decoded by decodeSignature, after the algorithm is known
	return s, nil
}

// decodeSignature decodes the signature segment into the rest of the buffer.
func (s *segments) decodeSignature() *Error {
	n, err := base64.RawURLEncoding.Decode(s.signature, s.encodedSig)
	if err != nil {
		return invalidToken("malformed token")
	}
	s.signature = s.signature[:n]
	return nil
}

// claimString is a claim or header parameter read as a string.
type claimString struct {
	s        string
	present  bool
	isString bool
}

func (c *claimString) set(val []byte) {
	c.present = true
	c.s, c.isString = jsonString(val)
}

// numericClaim is a date claim (exp, iat, nbf): a JSON number of seconds since the epoch.
type numericClaim struct {
	present  bool
	isNumber bool
	seconds  float64
}

// date is the claim as MapClaims returns it: nil when absent or 0, jwt.ErrInvalidType when not a
// number, else the NumericDate of the seconds (fractions kept to jwt.TimePrecision).
func (n numericClaim) date(invalid error) (*jwt.NumericDate, error) {
	switch {
	case !n.present:
		return nil, nil
	case !n.isNumber:
		return nil, invalid
	case n.seconds == 0:
		return nil, nil
	}
	round, frac := math.Modf(n.seconds)
	return jwt.NewNumericDate(time.Unix(int64(round), int64(frac*1e9))), nil
}

// The wrong-type errors of the claims (golang-jwt's wording).
var (
	errExpType = fmt.Errorf("exp is invalid: %w", jwt.ErrInvalidType)
	errIatType = fmt.Errorf("iat is invalid: %w", jwt.ErrInvalidType)
	errNbfType = fmt.Errorf("nbf is invalid: %w", jwt.ErrInvalidType)
	errAudType = fmt.Errorf("aud is invalid: %w", jwt.ErrInvalidType)
	errIssType = fmt.Errorf("iss is invalid: %w", jwt.ErrInvalidType)
	errSubType = fmt.Errorf("sub is invalid: %w", jwt.ErrInvalidType)
)

// tokenClaims are the claims of a token that jwtauth reads; others are skipped.
type tokenClaims struct {
	iss, sub, jti, org, scope claimString
	exp, iat, nbf             numericClaim
	audPresent                bool
	audInvalid                bool // an array holding something else than strings
	aud                       jwt.ClaimStrings
}

var _ jwt.Claims = (*tokenClaims)(nil)

func (c *tokenClaims) GetExpirationTime() (*jwt.NumericDate, error) { return c.exp.date(errExpType) }
func (c *tokenClaims) GetIssuedAt() (*jwt.NumericDate, error)       { return c.iat.date(errIatType) }
func (c *tokenClaims) GetNotBefore() (*jwt.NumericDate, error)      { return c.nbf.date(errNbfType) }

func (c *tokenClaims) GetAudience() (jwt.ClaimStrings, error) {
	if c.audInvalid {
		return nil, errAudType
	}
	return c.aud, nil
}

func (c *tokenClaims) GetIssuer() (string, error)  { return c.iss.get(errIssType) }
func (c *tokenClaims) GetSubject() (string, error) { return c.sub.get(errSubType) }

func (c claimString) get(invalid error) (string, error) {
	switch {
	case !c.present:
		return "", nil
	case !c.isString:
		return "", invalid
	}
	return c.s, nil
}

// tokenHeader is the JOSE header parameters jwtauth reads.
type tokenHeader struct {
	alg, kid claimString
	crit     bool
}

// parseHeader reads the header (strictjson-checked JSON). ok is false where encoding/json would
// refuse to decode it into a map: neither an object nor null, or a number out of float64's range.
func parseHeader(b []byte) (h tokenHeader, ok bool) {
	m, ok := objectMembers(b)
	for ok {
		key, val, more, fits := m.next()
		if !more {
			break
		}
		ok = fits
		switch string(key) {
		case "alg":
			h.alg.set(val)
		case "kid":
			h.kid.set(val)
		case "crit":
			h.crit = true
		}
	}
	return h, ok
}

// parseClaims reads the claims set (strictjson-checked JSON), with parseHeader's ok.
func parseClaims(b []byte) (c tokenClaims, ok bool) {
	m, ok := objectMembers(b)
	for ok {
		key, val, more, fits := m.next()
		if !more {
			break
		}
		ok = fits
		switch string(key) {
		case "iss":
			c.iss.set(val)
		case "sub":
			c.sub.set(val)
		case "jti":
			c.jti.set(val)
		case "org":
			c.org.set(val)
		case "scope":
			c.scope.set(val)
		case "exp":
			c.exp = jsonNumber(val)
		case "iat":
			c.iat = jsonNumber(val)
		case "nbf":
			c.nbf = jsonNumber(val)
		case "aud":
			c.audPresent = true
			c.aud, c.audInvalid = jsonAudience(val)
		}
	}
	return c, ok
}

// jsonString is the string val holds, false when val is not a string.
func jsonString(val []byte) (string, bool) {
	if len(val) < 2 || val[0] != '"' {
		return "", false
	}
	inner := val[1 : len(val)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true // strictjson checked it is valid UTF-8
	}
	var s string
	if err := json.Unmarshal(val, &s); err != nil {
		return "", false // not reached: strictjson checked the escapes
	}
	return s, true
}

// jsonNumber reads a date claim: a number is read as encoding/json reads it into an any
// (strconv.ParseFloat; the value fits, members checked that).
func jsonNumber(val []byte) numericClaim {
	n := numericClaim{present: true}
	if len(val) == 0 || val[0] != '-' && (val[0] < '0' || val[0] > '9') {
		return n
	}
	f, ok := jsonscan.ParseDecimal(val)
	if !ok {
		var err error
		if f, err = strconv.ParseFloat(string(val), 64); err != nil {
			return n
		}
	}
	n.isNumber, n.seconds = true, f
	return n
}

// jsonAudience reads `aud` as MapClaims does: a string is a list of one, an array must hold only
// strings (invalid otherwise), any other value is no audience.
func jsonAudience(val []byte) (aud jwt.ClaimStrings, invalid bool) {
	switch {
	case len(val) > 0 && val[0] == '"':
		s, _ := jsonString(val)
		return jwt.ClaimStrings{s}, false
	case len(val) == 0 || val[0] != '[':
		return nil, false
	}
	for i := jsonscan.SkipWS(val, 1); i < len(val) && val[i] != ']'; {
		end, _ := skipValue(val, i)
		s, ok := jsonString(val[i:end])
		if !ok {
			return nil, true
		}
		aud = append(aud, s)
		if i = jsonscan.SkipWS(val, end); i < len(val) && val[i] == ',' {
			i = jsonscan.SkipWS(val, i+1)
		}
	}
	return aud, false
}

// members iterates the members of a JSON object that strictjson checked (valid, no key twice).
type members struct {
	b []byte
	i int
}

// objectMembers starts iterating b. ok is false when b is not an object; null is an object
// without members (encoding/json decodes it into a map without error).
func objectMembers(b []byte) (members, bool) {
	i := jsonscan.SkipWS(b, 0)
	switch {
	case i < len(b) && b[i] == '{':
		return members{b: b, i: i + 1}, true
	case jsonscan.Literal(b, i, "null"):
		return members{b: b, i: len(b)}, true
	}
	return members{}, false
}

// next returns the next member's key (unescaped) and value (its JSON text); more is false after
// the last. fits is false when a number in the value is out of float64's range.
func (m *members) next() (key, val []byte, more, fits bool) {
	b := m.b
	i := jsonscan.SkipWS(b, m.i)
	if i < len(b) && b[i] == ',' {
		i = jsonscan.SkipWS(b, i+1)
	}
	if i >= len(b) || b[i] != '"' {
		m.i = len(b)
		return nil, nil, false, true
	}
	ke := jsonscan.SkipString(b, i)
	key = b[i+1 : ke-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		var k string
		if err := json.Unmarshal(b[i:ke], &k); err == nil {
			key = []byte(k)
		}
	}
	i = jsonscan.SkipWS(b, ke) // at ':'
	i = jsonscan.SkipWS(b, i+1)
	end, fits := skipValue(b, i)
	m.i = end
	return key, b[i:end], true, fits
}

// skipValue returns the offset after the value at b[i] of valid JSON, and whether every number in
// it fits a float64 (encoding/json refuses to decode one that does not into an any).
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, true
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		depth, fits := 0, true
		for ; i < len(b); i++ {
			switch c := b[i]; {
			case c == '"':
				i = jsonscan.SkipString(b, i) - 1
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth--; depth == 0 {
					return i + 1, fits
				}
			case c == '-' || c >= '0' && c <= '9':
				end, _ := jsonscan.ScanNumber(b, i)
				fits = fits && numberFits(b[i:end])
				i = end - 1
			}
		}
		return i, fits
	case c == '-' || c >= '0' && c <= '9':
		end, _ := jsonscan.ScanNumber(b, i)
		return end, numberFits(b[i:end])
	}
	return jsonscan.SkipValue(b, i), true
}

// numberFits reports whether strconv.ParseFloat takes the JSON number n without a range error:
// only an exponent or over 300 digits can overflow.
func numberFits(n []byte) bool {
	if len(n) < 300 && bytes.IndexAny(n, "eE") < 0 {
		return true
	}
	_, err := strconv.ParseFloat(string(n), 64)
	return err == nil
}
