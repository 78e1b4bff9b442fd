package jwtauth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// wantAuthError checks that err is an *Error with status, code and a description containing desc.
func wantAuthError(tb testing.TB, err error, status int, code, desc string) {
	tb.Helper()
	var ae *Error
	if !errors.As(err, &ae) {
		tb.Fatalf("got error %v (%T), want *Error %d %s %q", err, err, status, code, desc)
	}
	if ae.Status != status || ae.Code != code || !strings.Contains(ae.Description, desc) {
		tb.Fatalf("got %d %s %q, want %d %s containing %q", ae.Status, ae.Code, ae.Description, status, code, desc)
	}
}

// TestAuthenticateMatrix is the matrix of issue 14 against a JWKS file holding an RSA, an EC and
// an Ed25519 key.
func TestAuthenticateMatrix(t *testing.T) {
	clk := newClock()
	rs, es, ed := rsaSigner(t, "rsa-1"), ecSigner(t, "ec-1"), edSigner(t, "ed-1")
	v := mustVerifier(t, Config{Issuers: []string{"https://other.example.test", testIssuer},
		JWKSFile: writeFile(t, "keys.json", jwks(t, rs, es, ed)), Now: clk.Now})
	now := clk.Now()
	with := func(change func(jwt.MapClaims)) jwt.MapClaims {
		c := claimsAt(now)
		change(c)
		return c
	}
	unix := func(d time.Duration) int64 { return now.Add(d).Unix() }

	hsWith := func(secret []byte) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claimsAt(now))
		tok.Header["kid"] = "rsa-1"
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	none := jwt.NewWithClaims(jwt.SigningMethodNone, claimsAt(now))
	none.Header["kid"] = "ed-1"
	noneTok, err := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	crit := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claimsAt(now))
	crit.Header["kid"], crit.Header["crit"] = "ed-1", []string{"exp-ext"}
	critTok, err := crit.SignedString(ed.key)
	if err != nil {
		t.Fatal(err)
	}
	impostor := edSigner(t, "ed-1") // another key under a known kid
	// A claim given twice: encoding/json keeps the last, a reader keeping the first sees another issuer.
	dupe := func(header, claims string) string {
		b64 := base64.RawURLEncoding.EncodeToString
		signing := b64([]byte(header)) + "." + b64([]byte(claims))
		sig, err := jwt.SigningMethodEdDSA.Sign(signing, ed.key)
		if err != nil {
			t.Fatal(err)
		}
		return signing + "." + b64(sig)
	}
	body := func(iss string) string {
		return `"aud":"supplyplan-loops","sub":"user-1","jti":"jti-hand","org":"demo","scope":"loops:write","iat":` +
			strconv.FormatInt(now.Unix(), 10) + `,"exp":` + strconv.FormatInt(now.Add(time.Minute).Unix(), 10) + iss + `}`
	}

	for _, tc := range []struct {
		name  string
		token string
		desc  string // "" when the token is accepted
	}{
		{"RS256 accepted", rs.sign(t, claimsAt(now)), ""},
		{"ES256 accepted", es.sign(t, claimsAt(now)), ""},
		{"EdDSA accepted", ed.sign(t, claimsAt(now)), ""},
		{"second trusted issuer", ed.sign(t, with(func(c jwt.MapClaims) { c["iss"] = "https://other.example.test" })), ""},
		{"audience in a list", ed.sign(t, with(func(c jwt.MapClaims) { c["aud"] = []string{"x", DefaultAudience} })), ""},
		{"no kid: every key of the algorithm is tried", signer{method: ed.method, key: ed.key}.sign(t, claimsAt(now)), ""},

		{"alg none", noneTok, "algorithm not allowed"},
		{"HS256 signed with the RSA public key PEM", hsWith(rs.publicPEM(t)), "algorithm not allowed"},
		{"HS256 signed with the Ed25519 public key bytes", hsWith([]byte(ed.pub.(ed25519.PublicKey))), "algorithm not allowed"},
		{"signature by another key", impostor.sign(t, claimsAt(now)), "invalid token signature"},
		{"kid of a key of another algorithm", signer{method: es.method, key: es.key, kid: "rsa-1"}.sign(t, claimsAt(now)), "another algorithm"},
		{"unknown kid", signer{method: ed.method, key: ed.key, kid: "nope"}.sign(t, claimsAt(now)), "not a known signing key"},
		{"critical header", critTok, "critical parameters"},
		{"malformed", "abc.def", "malformed"},
		{"hand-made token (the helper below works)", dupe(`{"alg":"EdDSA","kid":"ed-1"}`, `{`+body(`,"iss":"`+testIssuer+`"`)), ""},
		{"claim given twice", dupe(`{"alg":"EdDSA","kid":"ed-1"}`, `{"iss":"https://evil.example.test",`+body(`,"iss":"`+testIssuer+`"`)), "given twice"},
		{"header parameter given twice", dupe(`{"alg":"none","alg":"EdDSA","kid":"ed-1"}`, `{`+body(`,"iss":"`+testIssuer+`"`)), "given twice"},

		{"expired", ed.sign(t, with(func(c jwt.MapClaims) { c["iat"], c["exp"] = unix(-10*time.Minute), unix(-2*time.Minute) })), "token expired"},
		{"expired within leeway", ed.sign(t, with(func(c jwt.MapClaims) { c["iat"], c["exp"] = unix(-10*time.Minute), unix(-59*time.Second) })), ""},
		{"expired beyond leeway", ed.sign(t, with(func(c jwt.MapClaims) { c["iat"], c["exp"] = unix(-10*time.Minute), unix(-61*time.Second) })), "token expired"},
		{"not yet valid", ed.sign(t, with(func(c jwt.MapClaims) { c["nbf"] = unix(5 * time.Minute) })), "not valid yet"},
		{"nbf within leeway", ed.sign(t, with(func(c jwt.MapClaims) { c["nbf"] = unix(59 * time.Second) })), ""},
		{"nbf beyond leeway", ed.sign(t, with(func(c jwt.MapClaims) { c["nbf"] = unix(61 * time.Second) })), "not valid yet"},
		{"iat within leeway", ed.sign(t, with(func(c jwt.MapClaims) { c["iat"] = unix(59 * time.Second) })), ""},
		{"iat beyond leeway", ed.sign(t, with(func(c jwt.MapClaims) { c["iat"] = unix(2 * time.Minute) })), "issued in the future"},
		{"lifetime of 15m", ed.sign(t, with(func(c jwt.MapClaims) { c["exp"] = unix(15 * time.Minute) })), ""},
		{"lifetime over 15m", ed.sign(t, with(func(c jwt.MapClaims) { c["exp"] = unix(15*time.Minute + time.Second) })), "lifetime"},
		{"exp before iat", ed.sign(t, with(func(c jwt.MapClaims) { c["iat"] = unix(30 * time.Second); c["exp"] = unix(20 * time.Second) })), "not after its iat"},

		{"wrong aud", ed.sign(t, with(func(c jwt.MapClaims) { c["aud"] = "someone-else" })), "audience"},
		{"no aud", ed.sign(t, with(func(c jwt.MapClaims) { delete(c, "aud") })), "no aud claim"},
		{"wrong iss", ed.sign(t, with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example.test" })), "issuer is not trusted"},
		{"no iss", ed.sign(t, with(func(c jwt.MapClaims) { delete(c, "iss") })), "no iss claim"},
		{"no exp", ed.sign(t, with(func(c jwt.MapClaims) { delete(c, "exp") })), "no exp claim"},
		{"no iat", ed.sign(t, with(func(c jwt.MapClaims) { delete(c, "iat") })), "no iat claim"},
		{"no sub", ed.sign(t, with(func(c jwt.MapClaims) { delete(c, "sub") })), "no sub claim"},
		{"no jti", ed.sign(t, with(func(c jwt.MapClaims) { delete(c, "jti") })), "no jti claim"},
		{"missing org", ed.sign(t, with(func(c jwt.MapClaims) { delete(c, "org") })), "no org claim"},
		{"empty org", ed.sign(t, with(func(c jwt.MapClaims) { c["org"] = " " })), "org claim is empty"},
		{"org not a string", ed.sign(t, with(func(c jwt.MapClaims) { c["org"] = 42 })), "org claim must be a string"},
		{"missing scope", ed.sign(t, with(func(c jwt.MapClaims) { delete(c, "scope") })), "no scope claim"},
		{"scope as a list", ed.sign(t, with(func(c jwt.MapClaims) { c["scope"] = []string{"loops:read"} })), "scope claim must be a string"},
		{"exp not a number", ed.sign(t, with(func(c jwt.MapClaims) { c["exp"] = "soon" })), "wrong type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := v.Authenticate(context.Background(), tc.token, false)
			if tc.desc != "" {
				wantAuthError(t, err, http.StatusUnauthorized, CodeInvalidToken, tc.desc)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Org != "demo" || c.Subject != "user-1" || !strings.HasPrefix(c.ID, "jti-") || c.Audience != DefaultAudience ||
				len(c.Scopes) != 1 || c.Scopes[0] != ScopeWrite || c.ExpiresAt.IsZero() || c.IssuedAt.IsZero() {
				t.Errorf("claims %+v", c)
			}
		})
	}
}

func TestAuthenticateClaims(t *testing.T) {
	clk := newClock()
	ed := edSigner(t, "ed-1")
	v := mustVerifier(t, Config{Issuers: []string{testIssuer}, JWKSFile: writeFile(t, "keys.json", jwks(t, ed)), Now: clk.Now})
	now := clk.Now()
	c := claimsAt(now)
	c["scope"], c["nbf"] = "openid  loops:admin ", now.Unix()
	got, err := v.Authenticate(context.Background(), "Bearer "+ed.sign(t, c), false)
	if err != nil {
		t.Fatal(err)
	}
	want := Claims{Issuer: testIssuer, Subject: "user-1", Audience: DefaultAudience, ID: c["jti"].(string), Org: "demo",
		Scopes: []string{"openid", "loops:admin"}, IssuedAt: now, NotBefore: now, ExpiresAt: now.Add(10 * time.Minute)}
	if got.Issuer != want.Issuer || got.Subject != want.Subject || got.ID != want.ID || got.Org != want.Org ||
		strings.Join(got.Scopes, ",") != strings.Join(want.Scopes, ",") || !got.IssuedAt.Equal(want.IssuedAt) ||
		!got.NotBefore.Equal(want.NotBefore) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestAuthenticateBearer(t *testing.T) {
	clk := newClock()
	ed := edSigner(t, "ed-1")
	v := mustVerifier(t, Config{Issuers: []string{testIssuer}, JWKSFile: writeFile(t, "keys.json", jwks(t, ed)), Now: clk.Now})
	tok := ed.sign(t, claimsAt(clk.Now()))
	for _, bearer := range []string{tok, "Bearer " + tok, "bearer  " + tok + " "} {
		if _, err := v.Authenticate(context.Background(), bearer, false); err != nil {
			t.Errorf("%q: %v", bearer[:10], err)
		}
	}
	for bearer, desc := range map[string]string{
		"":                               "missing bearer token",
		"Bearer ":                        "missing bearer token",
		"Basic dXNlcjpwYXNz":             "Bearer authentication scheme",
		strings.Repeat("a", 9<<10):       "longer than",
		"Bearer " + tok[:len(tok)-3]:     "invalid token signature",
		"Bearer " + tok + "." + tok[0:4]: "malformed",
	} {
		code := CodeInvalidRequest
		if !strings.HasPrefix(desc, "missing") && !strings.HasPrefix(desc, "Bearer") {
			code = CodeInvalidToken
		}
		_, err := v.Authenticate(context.Background(), bearer, false)
		wantAuthError(t, err, http.StatusUnauthorized, code, desc)
	}
}

// TestReplayedJTI: a token used on a mutating call is refused on the next mutating call until it
// expires; reads neither record nor refuse it.
func TestReplayedJTI(t *testing.T) {
	clk := newClock()
	ed := edSigner(t, "ed-1")
	v := mustVerifier(t, Config{Issuers: []string{testIssuer}, JWKSFile: writeFile(t, "keys.json", jwks(t, ed)), Now: clk.Now})
	ctx := context.Background()
	tok := ed.sign(t, claimsAt(clk.Now()))
	for i, step := range []struct {
		mutating bool
		ok       bool
	}{{false, true}, {true, true}, {true, false}, {false, true}, {true, false}} {
		_, err := v.Authenticate(ctx, tok, step.mutating)
		if step.ok && err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !step.ok {
			wantAuthError(t, err, http.StatusUnauthorized, CodeInvalidToken, "already used")
		}
	}
	// Another token of the same subject is a first use.
	if _, err := v.Authenticate(ctx, ed.sign(t, claimsAt(clk.Now())), true); err != nil {
		t.Fatal(err)
	}
	// The same jti from another issuer is another token.
	v2 := mustVerifier(t, Config{Issuers: []string{testIssuer, "https://b.example.test"}, JWKSFile: writeFile(t, "keys.json", jwks(t, ed)), Now: clk.Now})
	c := claimsAt(clk.Now())
	first := ed.sign(t, c)
	c["iss"] = "https://b.example.test"
	if _, err := v2.Authenticate(ctx, first, true); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Authenticate(ctx, ed.sign(t, c), true); err != nil {
		t.Fatal(err)
	}
	// Past exp plus leeway the jti is forgotten (the token is refused as expired anyway).
	if got := v.replay.len(); got != 2 {
		t.Fatalf("replay cache holds %d jtis, want 2", got)
	}
	clk.Advance(10*time.Minute + DefaultLeeway + time.Second)
	if _, err := v.Authenticate(ctx, ed.sign(t, claimsAt(clk.Now())), true); err != nil {
		t.Fatal(err)
	}
	if got := v.replay.len(); got != 1 {
		t.Errorf("replay cache holds %d jtis after the first two expired, want 1", got)
	}
	_, err := v.Authenticate(ctx, tok, true)
	wantAuthError(t, err, http.StatusUnauthorized, CodeInvalidToken, "token expired")
}

func TestReplayCacheBounded(t *testing.T) {
	r := newReplayCache(2)
	t0 := time.Unix(1000, 0)
	for i, tc := range []struct {
		key   string
		until time.Duration
		now   time.Duration
		want  replayOutcome
	}{
		{"a", 60 * time.Second, 0, firstUse},
		{"b", 90 * time.Second, 0, firstUse},
		{"c", 90 * time.Second, 10 * time.Second, replayFull}, // full of live entries: refused, not evicted
		{"a", 60 * time.Second, 59 * time.Second, replayed},
		{"c", 120 * time.Second, 60 * time.Second, firstUse}, // a expired and was pruned
		{"a", 120 * time.Second, 61 * time.Second, replayFull},
		{"a", 200 * time.Second, 120 * time.Second, firstUse}, // b and c expired
	} {
		if got := r.use(tc.key, t0.Add(tc.until), t0.Add(tc.now)); got != tc.want {
			t.Fatalf("step %d (%s): got %d, want %d", i, tc.key, got, tc.want)
		}
	}
	if got := r.len(); got != 1 {
		t.Errorf("len %d, want 1", got)
	}
}

func TestHasScope(t *testing.T) {
	for _, tc := range []struct {
		scopes             string
		read, write, admin bool
	}{
		{"loops:read", true, false, false},
		{"loops:write", true, true, false},
		{"loops:admin", true, true, true},
		{"openid profile", false, false, false},
		{"loops:read loops:admin", true, true, true},
		{"", false, false, false},
		{"loops:writer loops", false, false, false},
	} {
		c := Claims{Scopes: strings.Fields(tc.scopes)}
		if c.HasScope(ScopeRead) != tc.read || c.HasScope(ScopeWrite) != tc.write || c.HasScope(ScopeAdmin) != tc.admin {
			t.Errorf("%q: read %v write %v admin %v, want %v %v %v", tc.scopes, c.HasScope(ScopeRead), c.HasScope(ScopeWrite),
				c.HasScope(ScopeAdmin), tc.read, tc.write, tc.admin)
		}
		if got := c.HasScope("openid"); got != strings.Contains(tc.scopes, "openid") {
			t.Errorf("%q: HasScope(openid) = %v", tc.scopes, got)
		}
	}
	if err := (Claims{Scopes: []string{ScopeAdmin}}).RequireScope(ScopeWrite); err != nil {
		t.Errorf("admin RequireScope(write): %v", err)
	}
	err := (Claims{Scopes: []string{ScopeRead}}).RequireScope(ScopeWrite)
	wantAuthError(t, err, http.StatusForbidden, CodeInsufficientScope, "loops:write")
}

func TestErrorWWWAuthenticate(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{invalidToken("token expired"), `Bearer realm="supplyplan-loops", error="invalid_token", error_description="token expired"`},
		{&Error{Status: 403, Code: CodeInsufficientScope, Description: "the token lacks scope loops:write"},
			`Bearer realm="supplyplan-loops", error="insufficient_scope", error_description="the token lacks scope loops:write"`},
		{&Error{Status: 401, Code: CodeInvalidToken, Description: "a \"quoted\\\" é\nvalue"},
			`Bearer realm="supplyplan-loops", error="invalid_token", error_description="a quoted value"`},
		{&Error{Status: 401}, `Bearer realm="supplyplan-loops"`},
	} {
		if got := tc.err.WWWAuthenticate(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	if got, want := invalidToken("token expired").Error(), "jwtauth: 401 invalid_token: token expired"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	file := writeFile(t, "keys.json", jwks(t, edSigner(t, "k")))
	for name, cfg := range map[string]Config{
		"no issuer":            {JWKSFile: file},
		"empty issuer":         {Issuers: []string{" "}, JWKSFile: file},
		"no keys":              {Issuers: []string{testIssuer}},
		"URL and file":         {Issuers: []string{testIssuer}, JWKSFile: file, JWKSURL: "https://x.test/jwks"},
		"URL not http":         {Issuers: []string{testIssuer}, JWKSURL: "file:///etc/keys"},
		"lifetime over 15m":    {Issuers: []string{testIssuer}, JWKSFile: file, MaxLifetime: time.Hour},
		"negative leeway":      {Issuers: []string{testIssuer}, JWKSFile: file, Leeway: -time.Second},
		"missing file":         {Issuers: []string{testIssuer}, JWKSFile: file + ".missing"},
		"file without keys":    {Issuers: []string{testIssuer}, JWKSFile: writeFile(t, "empty.json", []byte(`{"keys":[]}`))},
		"symmetric key only":   {Issuers: []string{testIssuer}, JWKSFile: writeFile(t, "oct.json", []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))},
		"PEM private key":      {Issuers: []string{testIssuer}, JWKSFile: writeFile(t, "k.pem", []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))},
		"neither JSON nor PEM": {Issuers: []string{testIssuer}, JWKSFile: writeFile(t, "k.txt", []byte("hello"))},
	} {
		if v, err := New(cfg); err == nil {
			v.Close()
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
}

// TestKeyFiles: PEM public keys (no kid: any kid matches) and a JWKS file; a shorter RSA key and
// an encryption key are left out.
func TestKeyFiles(t *testing.T) {
	clk := newClock()
	rs, es, ed := rsaSigner(t, ""), ecSigner(t, ""), edSigner(t, "")
	pemFile := writeFile(t, "keys.pem", append(append(rs.publicPEM(t), es.publicPEM(t)...), ed.publicPEM(t)...))
	v := mustVerifier(t, Config{Issuers: []string{testIssuer}, JWKSFile: pemFile, Now: clk.Now})
	for _, s := range []signer{rs, es, ed, {method: ed.method, key: ed.key, kid: "any-kid"}} {
		if _, err := v.Authenticate(context.Background(), s.sign(t, claimsAt(clk.Now())), false); err != nil {
			t.Errorf("%s kid %q: %v", s.method.Alg(), s.kid, err)
		}
	}
	_, err := v.Authenticate(context.Background(), edSigner(t, "").sign(t, claimsAt(clk.Now())), false)
	wantAuthError(t, err, http.StatusUnauthorized, CodeInvalidToken, "invalid token signature")

	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	smallJWK := signer{method: jwt.SigningMethodRS256, key: small, pub: &small.PublicKey, kid: "small"}.jwk(t)
	encJWK := ed.jwk(t)
	encJWK["use"], encJWK["kid"] = "enc", "enc-1"
	edJWK := ed.jwk(t)
	edJWK["kid"] = "ed-1"
	set := `{"keys":[` + mustJSON(t, smallJWK) + "," + mustJSON(t, encJWK) + "," + mustJSON(t, edJWK) + `]}`
	v2 := mustVerifier(t, Config{Issuers: []string{testIssuer}, JWKSFile: writeFile(t, "keys.json", []byte(set)), Now: clk.Now})
	if got := len(v2.keys.set.keys); got != 1 {
		t.Errorf("kept %d keys, want only the Ed25519 signing key", got)
	}
	if _, err := v2.Authenticate(context.Background(), signer{method: ed.method, key: ed.key, kid: "ed-1"}.sign(t, claimsAt(clk.Now())), false); err != nil {
		t.Error(err)
	}
	_, err = v2.Authenticate(context.Background(), signer{method: ed.method, key: ed.key, kid: "enc-1"}.sign(t, claimsAt(clk.Now())), false)
	wantAuthError(t, err, http.StatusUnauthorized, CodeInvalidToken, "not a known signing key")
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestAuthenticateClaimTypes: the JSON types each claim may have, and dates as golang-jwt's
// NumericDate reads them (fractions truncated to the second).
func TestAuthenticateClaimTypes(t *testing.T) {
	clk := newClock()
	ed := edSigner(t, "ed-1")
	v := mustVerifier(t, Config{Issuers: []string{testIssuer}, JWKSFile: writeFile(t, "keys.json", jwks(t, ed)), Now: clk.Now})
	now := clk.Now()
	sec := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	body := func(members string) string {
		return `{"iss":"` + testIssuer + `","sub":"user-1","jti":"jti-t","org":"demo","scope":"loops:write",` + members + `}`
	}
	times := `"iat":` + sec(0) + `,"exp":` + sec(10*time.Minute)
	for _, tc := range []struct {
		name, claims string
		desc         string // "" when accepted
	}{
		{"aud array", body(`"aud":["other","supplyplan-loops"],` + times), ""},
		{"aud array without the audience", body(`"aud":["other"],` + times), "audience does not include"},
		{"aud array with a number", body(`"aud":["supplyplan-loops",7],` + times), "wrong type"},
		{"aud empty array", body(`"aud":[],` + times), "lacks a required claim"},
		{"aud number", body(`"aud":7,` + times), "lacks a required claim"},
		{"aud null", body(`"aud":null,` + times), "lacks a required claim"},
		{"escaped aud and claim names", `{"\u0069ss":"` + testIssuer + `","sub":"user-1","jti":"jti-t","org":"d\u0065mo","scope":"loops:write","aud":"supplyplan\u002dloops",` + times + `}`, ""},
		{"claim names are exact", body(`"AUD":"supplyplan-loops",` + times), "no aud claim"},
		{"exp a string", body(`"aud":"supplyplan-loops","iat":` + sec(0) + `,"exp":"` + sec(time.Minute) + `"`), "wrong type"},
		{"exp null", body(`"aud":"supplyplan-loops","iat":` + sec(0) + `,"exp":null`), "wrong type"},
		{"exp zero", body(`"aud":"supplyplan-loops","iat":` + sec(0) + `,"exp":0`), "lacks a required claim"},
		{"iat a string", body(`"aud":"supplyplan-loops","iat":"now","exp":` + sec(time.Minute)), "wrong type"},
		{"iat zero", body(`"aud":"supplyplan-loops","iat":0,"exp":` + sec(time.Minute)), "no iat claim"},
		{"nbf a list", body(`"aud":"supplyplan-loops","nbf":[1],` + times), "wrong type"},
		{"fractional exp within leeway", body(`"aud":"supplyplan-loops","iat":` + sec(-10*time.Minute) + `,"exp":` + sec(-59*time.Second) + `.5`), ""},
		{"fractional exp truncated out of the leeway", body(`"aud":"supplyplan-loops","iat":` + sec(-10*time.Minute) + `,"exp":` + sec(-60*time.Second) + `.5`), "token expired"},
		{"fractional exp beyond leeway", body(`"aud":"supplyplan-loops","iat":` + sec(-10*time.Minute) + `,"exp":` + sec(-61*time.Second) + `.999`), "token expired"},
		{"exponent dates", body(`"aud":"supplyplan-loops","iat":` + sec(0) + `e0,"exp":` + sec(10*time.Minute) + `.0E0`), ""},
		{"iss a number", `{"iss":7,"sub":"user-1","jti":"jti-t","org":"demo","scope":"loops:write","aud":"supplyplan-loops",` + times + `}`, "no iss claim"},
		{"a number out of float64 range", body(`"aud":"supplyplan-loops","x":{"y":[1e400]},` + times), "malformed token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := v.Authenticate(context.Background(), handMade(t, ed, `{"alg":"EdDSA","kid":"ed-1"}`, tc.claims), false)
			if tc.desc != "" {
				wantAuthError(t, err, http.StatusUnauthorized, CodeInvalidToken, tc.desc)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Org != "demo" || c.Issuer != testIssuer || c.ExpiresAt.Nanosecond() != 0 || c.IssuedAt.Nanosecond() != 0 {
				t.Errorf("claims %+v", c)
			}
		})
	}
	// A fractional date is truncated to the second, as jwt.NumericDate does.
	c, err := v.Authenticate(context.Background(), handMade(t, ed, `{"alg":"EdDSA"}`,
		body(`"aud":"supplyplan-loops","iat":`+sec(0)+`.75,"nbf":`+sec(0)+`.5,"exp":`+sec(10*time.Minute)+`.999`)), false)
	if err != nil {
		t.Fatal(err)
	}
	if !c.IssuedAt.Equal(now) || !c.NotBefore.Equal(now) || !c.ExpiresAt.Equal(now.Add(10*time.Minute)) {
		t.Errorf("dates %v %v %v, want %v and %v", c.IssuedAt, c.NotBefore, c.ExpiresAt, now, now.Add(10*time.Minute))
	}
	// The kid must be a string.
	_, err = v.Authenticate(context.Background(), handMade(t, ed, `{"alg":"EdDSA","kid":1}`, body(`"aud":"supplyplan-loops",`+times)), false)
	wantAuthError(t, err, http.StatusUnauthorized, CodeInvalidToken, "kid must be a string")
}
