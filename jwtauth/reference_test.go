package jwtauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/supplyplan/supplyplan/internal/strictjson"
)

// reference is the verifier as it was before it decoded tokens itself: golang-jwt's
// ParseWithClaims into MapClaims (each segment decoded twice, once by strictSegments), kept here
// verbatim so that TestAuthenticateMatchesMapClaims and FuzzAuthenticateMatchesMapClaims can check
// that the typed decoding (token.go) accepts and refuses exactly the same tokens with the same
// descriptions.
type reference struct {
	v      *Verifier
	parser *jwt.Parser
}

func newReference(v *Verifier) *reference {
	return &reference{v: v, parser: jwt.NewParser(
		jwt.WithValidMethods(algorithms),
		jwt.WithLeeway(v.cfg.Leeway),
		jwt.WithTimeFunc(v.cfg.Now),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithAudience(v.cfg.Audience),
	)}
}

func (r *reference) Authenticate(ctx context.Context, bearer string, mutating bool) (Claims, error) {
	v := r.v
	raw, aerr := bearerToken(bearer)
	if aerr != nil {
		return Claims{}, aerr
	}
	if aerr := refStrictSegments(raw); aerr != nil {
		return Claims{}, aerr
	}
	mc := jwt.MapClaims{}
	var keyErr *Error
	tok, err := r.parser.ParseWithClaims(raw, mc, func(t *jwt.Token) (any, error) {
		k, e := r.key(ctx, t, mc)
		if e != nil {
			keyErr = e
			return nil, e
		}
		return k, nil
	})
	if err != nil {
		if keyErr != nil {
			return Claims{}, keyErr
		}
		return Claims{}, r.translate(tok, mc, err)
	}
	c, aerr := r.claims(mc)
	if aerr != nil {
		return Claims{}, aerr
	}
	if mutating {
		switch v.replay.use(c.Issuer+"\x00"+c.ID, c.ExpiresAt.Add(v.cfg.Leeway), v.cfg.Now()) {
		case replayed:
			return Claims{}, invalidToken("token already used (jti replayed): mint a new token for every change")
		case replayFull:
			return Claims{}, invalidToken("too many tokens in use: retry later with a new token")
		}
	}
	return c, nil
}

// strictSegments refuses a header or claims set with a key given twice or invalid UTF-8, which
// encoding/json (and so golang-jwt) accepts, keeping the last value: `{"iss":"a","iss":"b"}`
// would be read differently by a component that keeps the first. A segment that does not decode
// is left to the parser, which reports it as malformed.
func refStrictSegments(raw string) *Error {
	parts := strings.SplitN(raw, ".", 3)
	if len(parts) != 3 {
		return nil
	}
	for _, p := range parts[:2] {
		b, err := base64.RawURLEncoding.DecodeString(p)
		if err != nil {
			return nil
		}
		if _, _, err := strictjson.Check(b, nil); err != nil {
			return invalidToken("malformed token: a header parameter or claim given twice, or not valid JSON")
		}
	}
	return nil
}

// key is the Keyfunc: it runs after the header and claims are decoded and the algorithm passed
// the allow-list, before the signature is checked. It refuses untrusted issuers and critical
// header parameters first, so that neither can make the verifier fetch keys.
func (r *reference) key(ctx context.Context, t *jwt.Token, mc jwt.MapClaims) (any, *Error) {
	v := r.v
	if _, ok := t.Header["crit"]; ok {
		// golang-jwt ignores `crit`; RFC 7515 §4.1.11 requires refusing extensions we do not know.
		return nil, invalidToken("token header has critical parameters this service does not understand")
	}
	iss, ok := mc["iss"].(string)
	switch {
	case !ok || iss == "":
		return nil, invalidToken("token has no iss claim")
	case !v.issuers[iss]:
		return nil, invalidToken("token issuer is not trusted")
	}
	alg, _ := t.Header["alg"].(string)
	kid, ok := t.Header["kid"].(string)
	if _, present := t.Header["kid"]; present && !ok {
		return nil, invalidToken("token kid must be a string")
	}
	keys, err := v.keys.candidates(ctx, kid, alg)
	if err != nil {
		return nil, err
	}
	if len(keys) == 1 {
		return keys[0], nil
	}
	set := jwt.VerificationKeySet{Keys: make([]jwt.VerificationKey, len(keys))}
	for i, k := range keys {
		set.Keys[i] = k
	}
	return set, nil
}

// translate turns a golang-jwt error into an *Error whose description names the problem without
// the library's wording or any key material.
func (r *reference) translate(tok *jwt.Token, mc jwt.MapClaims, err error) *Error {
	v := r.v
	if errors.Is(err, jwt.ErrTokenMalformed) {
		return invalidToken("malformed token")
	}
	if tok != nil {
		if alg, _ := tok.Header["alg"].(string); !slices.Contains(algorithms, alg) {
			return invalidToken("token algorithm not allowed: use RS256, ES256 or EdDSA")
		}
	}
	switch {
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return invalidToken("invalid token signature")
	case errors.Is(err, jwt.ErrInvalidType):
		return invalidToken("token has a claim of the wrong type (exp, nbf, iat and aud)")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		for _, name := range []string{"exp", "aud"} {
			if _, ok := mc[name]; !ok {
				return invalidToken("token has no " + name + " claim")
			}
		}
		return invalidToken("token lacks a required claim")
	case errors.Is(err, jwt.ErrTokenExpired):
		return invalidToken("token expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return invalidToken("token not valid yet (nbf)")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return invalidToken("token issued in the future (iat)")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return invalidToken("token audience does not include " + v.cfg.Audience)
	}
	return invalidToken("invalid token")
}

// claims checks what golang-jwt does not (iat present, lifetime, sub, jti, org, scope) and
// returns the token's Claims.
func (r *reference) claims(mc jwt.MapClaims) (Claims, *Error) {
	v := r.v
	var c Claims
	c.Issuer, _ = mc["iss"].(string) // checked by key
	c.Audience = v.cfg.Audience
	exp, _ := mc.GetExpirationTime() // present and valid: checked by the parser
	iat, err := mc.GetIssuedAt()
	if err != nil || iat == nil {
		return c, invalidToken("token has no iat claim")
	}
	nbf, err := mc.GetNotBefore()
	if err != nil {
		return c, invalidToken("token nbf claim must be a number")
	}
	c.ExpiresAt, c.IssuedAt = exp.Time, iat.Time
	if nbf != nil {
		c.NotBefore = nbf.Time
	}
	switch life := c.ExpiresAt.Sub(c.IssuedAt); {
	case life <= 0:
		return c, invalidToken("token exp is not after its iat")
	case life > v.cfg.MaxLifetime:
		return c, invalidToken(fmt.Sprintf("token lifetime (exp - iat) exceeds %s", v.cfg.MaxLifetime))
	}
	var aerr *Error
	str := func(name string, limit int) string {
		if aerr != nil {
			return ""
		}
		raw, present := mc[name]
		s, ok := raw.(string)
		switch {
		case !present:
			aerr = invalidToken("token has no " + name + " claim")
		case !ok:
			aerr = invalidToken("token " + name + " claim must be a string")
		case strings.TrimSpace(s) == "":
			aerr = invalidToken("token " + name + " claim is empty")
		case len(s) > limit:
			aerr = invalidToken(fmt.Sprintf("token %s claim longer than %d bytes", name, limit))
		}
		return s
	}
	c.Subject = str("sub", maxClaimBytes)
	c.ID = str("jti", maxClaimBytes)
	c.Org = str("org", maxClaimBytes)
	scope := str("scope", maxScopeBytes)
	if aerr != nil {
		return Claims{}, aerr
	}
	c.Scopes = strings.Fields(scope)
	return c, nil
}

// handMade signs header and claims (JSON text, taken as is) with s's key under EdDSA.
func handMade(tb testing.TB, s signer, header, claims string) string {
	tb.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	signing := b64([]byte(header)) + "." + b64([]byte(claims))
	sig, err := jwt.SigningMethodEdDSA.Sign(signing, s.key)
	if err != nil {
		tb.Fatal(err)
	}
	return signing + "." + b64(sig)
}

// sameOutcome fails unless the verifier and the reference accept token with the same claims or
// refuse it with the same *Error.
func sameOutcome(tb testing.TB, v *Verifier, ref *reference, what, token string) {
	tb.Helper()
	got, gerr := v.Authenticate(context.Background(), token, false)
	want, werr := ref.Authenticate(context.Background(), token, false)
	if (gerr == nil) != (werr == nil) || gerr != nil && *gerr.(*Error) != *werr.(*Error) {
		tb.Fatalf("%s:\n got error  %v\n want error %v", what, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		tb.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// Headers and claims sets of the differential tests: every parsing edge the typed decoding has
// to read as MapClaims did. claimsBody(now) is the valid claims set they vary.
var diffHeaders = []string{
	`{"alg":"EdDSA","kid":"ed-1"}`, `{"alg":"EdDSA"}`, `{"typ":"JWT","alg":"EdDSA","kid":"ed-1"}`, ` { "alg" : "EdDSA" } `,
	`{"alg":"Ed\u0044SA","kid":"ed\u002d1"}`, `{"\u0061lg":"EdDSA"}`, `{"alg":"EdDSA","kid":42}`, `{"alg":"EdDSA","kid":null}`,
	`{"alg":"EdDSA","kid":""}`, `{"alg":"EdDSA","kid":"nope"}`, `{"alg":"EdDSA","kid":"ed-1","crit":null}`,
	`{"alg":"EdDSA","crit":["exp"]}`, `{"alg":"HS256","kid":"ed-1"}`, `{"alg":"none"}`, `{"alg":"foo"}`, `{"alg":42}`,
	`{"alg":null}`, `{"alg":["EdDSA"]}`, `{"ALG":"EdDSA"}`, `{}`, `null`, `[]`, `"EdDSA"`, `1`, `{"alg":"RS256","kid":"ed-1"}`,
	`{"alg":"ES256"}`, `{"alg":"EdDSA","x":1e400}`, `{"alg":"EdDSA","x":[{"y":-1e-400}]}`, `{"alg":"EdDSA","x":{"y":[1E309]}}`,
	`{"alg":"EdDSA","alg":"EdDSA"}`, `{"alg":"EdDSA","kid":"ed-1"} x`, `{"alg":"EdDSA","kid":"ed-1",}`, "{\"alg\":\"EdDSA\",\"x\":\"\xff\"}",
	`{"alg":"EdDSA","x":"\ud800"}`,
}

func diffClaims(now time.Time) []string {
	n := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	body := func(members ...string) string {
		base := map[string]string{"iss": `"` + testIssuer + `"`, "aud": `"supplyplan-loops"`, "sub": `"user-1"`, "jti": `"jti-d"`,
			"org": `"demo"`, "scope": `"loops:write"`, "iat": n(0), "exp": n(10 * time.Minute)}
		var extra []string
		for _, m := range members {
			k, v, _ := strings.Cut(m, "=")
			if _, ok := base[k]; ok {
				if v == "-" {
					delete(base, k)
				} else {
					base[k] = v
				}
				continue
			}
			extra = append(extra, m)
		}
		var parts []string
		for _, k := range []string{"iss", "aud", "sub", "jti", "org", "scope", "iat", "exp"} {
			if v, ok := base[k]; ok {
				parts = append(parts, strconv.Quote(k)+":"+v)
			}
		}
		for _, m := range extra {
			k, v, _ := strings.Cut(m, "=")
			parts = append(parts, k+":"+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	frac := func(d time.Duration, f string) string { return n(d) + f }
	out := []string{body()}
	for _, m := range []string{
		`aud=["x","supplyplan-loops"]`, `aud=[]`, `aud=[""]`, `aud=""`, `aud=42`, `aud=null`, `aud=true`, `aud={}`, `aud={"a":1}`,
		`aud=["supplyplan-loops",1]`, `aud=["supplyplan-loops",null]`, `aud=["a"]`, `aud=[ "supplyplan-loops" ]`, `aud="supplyplan\u002dloops"`,
		`aud=-`, `aud=["supplyplan-loops",["x"]]`,
		`exp="soon"`, `exp=null`, `exp=0`, `exp=-0`, `exp=0.0`, `exp=true`, `exp=[]`, `exp={}`, `exp=-`, `exp=-1`, `exp=1e400`, `exp=1.5e9`,
		`exp=` + frac(10*time.Minute, ".999"), `exp=` + frac(-61*time.Second, ".5"), `exp=` + frac(-60*time.Second, ".5"),
		`exp=` + frac(15*time.Minute, ".9"), `exp=` + n(15*time.Minute+time.Second), `exp=` + n(10*time.Minute) + "e0",
		`exp=` + n(10*time.Minute) + ".0000000000000000001", `exp=9223372036854775807`, `exp=1e300`, `exp=-1e300`,
		`iat=0`, `iat=null`, `iat="x"`, `iat=-`, `iat=` + frac(0, ".75"), `iat=` + n(2*time.Minute), `iat=` + frac(60*time.Second, ".5"),
		`iat=` + n(11*time.Minute), `iat=` + n(10*time.Minute), `iat=-1`,
		`"nbf"="x"`, `"nbf"=null`, `"nbf"=0`, `"nbf"=` + frac(59*time.Second, ".9"), `"nbf"=` + n(61*time.Second), `"nbf"=[1]`,
		`iss=42`, `iss=null`, `iss=""`, `iss=-`, `iss="https://evil.example.test"`, `iss="https:\/\/issuer.example.test"`,
		`iss="https://issuer.example.tes\u0074"`, `iss=["` + testIssuer + `"]`,
		`sub=42`, `sub=null`, `sub=""`, `sub=" "`, `sub=-`, `sub="` + strings.Repeat("s", 257) + `"`, `sub="` + strings.Repeat("s", 256) + `"`,
		`jti=-`, `jti=1`, `jti="a\"b"`, `jti="\u00e9t\u00e9"`, `jti="été"`, `jti="\t"`,
		`org=-`, `org={}`, `org=" demo "`, `org="d\u0065mo"`, `scope=-`, `scope=["loops:read"]`, `scope=""`,
		`scope="openid  loops:admin "`, `scope="` + strings.Repeat("s", 1025) + `"`, `scope=null`,
		`"ISS"="x"`, `"Org"="x"`, `"\u006frg"="x"`, `"x"=1e400`, `"x"=[1,{"y":2e308}]`, `"x"=-1e-400`, `"x"="1e400"`,
		`"x"=` + strings.Repeat("9", 400), `"x"={"a":[true,false,null,"\"}]"]}`, `"x"=` + strings.Repeat("[", 50) + strings.Repeat("]", 50),
		`"iss"="x"`, `"\u0069ss"="x"`, "\"x\"=\"\xff\"", `"x"="\udc00"`,
	} {
		out = append(out, body(m))
	}
	return append(out, `null`, `[]`, `1`, `"x"`, `{}`, `{"iss":"`+testIssuer+`"}`, body()+" ", body()+"x", strings.TrimSuffix(body(), "}")+",}")
}

// TestAuthenticateMatchesMapClaims: the typed decoding accepts and refuses every header and
// claims set of the corpus exactly as golang-jwt's MapClaims parsing did, with the same
// descriptions and claims.
func TestAuthenticateMatchesMapClaims(t *testing.T) {
	clk := newClock()
	rs, ed := rsaSigner(t, "rsa-1"), edSigner(t, "ed-1")
	v := mustVerifier(t, Config{Issuers: []string{testIssuer}, JWKSFile: writeFile(t, "keys.json", jwks(t, rs, ed)), Now: clk.Now})
	ref := newReference(v)
	claims := diffClaims(clk.Now())
	accepted := 0
	for _, h := range diffHeaders {
		tok := handMade(t, ed, h, claims[0])
		sameOutcome(t, v, ref, "header "+h, tok)
		if _, err := v.Authenticate(context.Background(), tok, false); err == nil {
			accepted++
		}
	}
	for _, c := range claims {
		tok := handMade(t, ed, diffHeaders[0], c)
		sameOutcome(t, v, ref, "claims "+c, tok)
		if _, err := v.Authenticate(context.Background(), tok, false); err == nil {
			accepted++
		}
	}
	if accepted < 20 || accepted > len(claims) {
		t.Errorf("%d tokens of the corpus accepted: the corpus no longer probes both sides", accepted)
	}
	valid := handMade(t, ed, diffHeaders[0], claims[0])
	h, c, _ := strings.Cut(valid, ".")
	c, sig, _ := strings.Cut(c, ".")
	b64 := base64.RawURLEncoding.EncodeToString
	for name, tok := range map[string]string{
		"two segments": h + "." + c, "four segments": valid + ".x", "empty": "..", "no signature": h + "." + c + ".",
		"signature not base64": h + "." + c + ".!!", "header not base64": "!!." + c + "." + sig, "claims not base64": h + ".!!." + sig,
		"padded signature": valid + "==", "padded header": h + "=." + c + "." + sig, "newline in claims": h + "." + c[:10] + "\n" + c[10:] + "." + sig,
		"HS256 with a bad signature":          b64([]byte(`{"alg":"HS256"}`)) + "." + c + ".!!",
		"unknown alg with a bad signature":    b64([]byte(`{"alg":"foo"}`)) + "." + c + ".!!",
		"duplicate header, four segments":     b64([]byte(`{"alg":"EdDSA","alg":"none"}`)) + "." + c + "." + sig + ".x",
		"duplicate claims, bad header base64": "!!." + b64([]byte(`{"iss":"a","iss":"b"}`)) + "." + sig,
		"RS256 token":                         rs.sign(t, claimsAt(clk.Now())),
		"RS256 token under the Ed25519 kid":   signer{method: rs.method, key: rs.key, kid: "ed-1"}.sign(t, claimsAt(clk.Now())),
		"truncated signature":                 valid[:len(valid)-3],
	} {
		sameOutcome(t, v, ref, name, tok)
	}
}

// FuzzAuthenticateMatchesMapClaims signs any header and claims text and checks that the typed
// decoding and golang-jwt's MapClaims parsing agree on it.
func FuzzAuthenticateMatchesMapClaims(f *testing.F) {
	clk := newClock()
	ed := edSigner(f, "ed-1")
	v := mustVerifier(f, Config{Issuers: []string{testIssuer}, JWKSFile: writeFile(f, "keys.json", jwks(f, ed)), Now: clk.Now})
	ref := newReference(v)
	claims := diffClaims(clk.Now())
	for _, h := range diffHeaders {
		f.Add(h, claims[0])
	}
	for _, c := range claims {
		f.Add(diffHeaders[0], c)
	}
	f.Fuzz(func(t *testing.T, header, claims string) {
		sameOutcome(t, v, ref, header+" / "+claims, handMade(t, ed, header, claims))
	})
}
