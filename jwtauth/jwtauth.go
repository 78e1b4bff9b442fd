// Package jwtauth authenticates callers of the loop runtime with signed JWTs (RFC 7519, RFC 9068
// style access tokens) on github.com/golang-jwt/jwt/v5: an allow-list of asymmetric algorithms,
// trusted issuers, one audience, short lifetimes, keys from a JWKS URL or a local JWKS/PEM file,
// and single use of a token's jti on mutating calls. It also holds the local issuer that lets a
// newcomer mint tokens on embedded defaults (local.go). See docs/loop-runtime-auth.md.
package jwtauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Scopes of the loop runtime.
const (
	ScopeRead  = "loops:read"
	ScopeWrite = "loops:write"
	ScopeAdmin = "loops:admin"
)

// Defaults of Config.
const (
	DefaultAudience    = "supplyplan-loops"
	DefaultLeeway      = 60 * time.Second
	DefaultMaxLifetime = 15 * time.Minute
)

// Realm is the realm of every WWW-Authenticate challenge.
const Realm = "supplyplan-loops"

// Codes of Error (RFC 6750 §3.1).
const (
	CodeInvalidToken      = "invalid_token"
	CodeInsufficientScope = "insufficient_scope"
	CodeInvalidRequest    = "invalid_request"
)

// algorithms is the allow-list: asymmetric signatures only, never `none` or HS*.
var algorithms = []string{"RS256", "ES256", "EdDSA"}

// Limits on what a caller can make the verifier hold or parse.
const (
	maxTokenBytes = 8 << 10 // a bearer token longer than this is refused before parsing
	maxClaimBytes = 256     // sub, jti and org
	maxScopeBytes = 1 << 10
)

// Claims are the verified claims of one token.
type Claims struct {
	Issuer, Subject, Audience, ID, Org string   // ID is jti; Org is the `org` claim (organization id or slug)
	Scopes                             []string // from the space-separated `scope` claim
	IssuedAt, NotBefore, ExpiresAt     time.Time
}

// HasScope reports whether the token grants s: loops:admin implies loops:write and loops:read,
// loops:write implies loops:read.
func (c Claims) HasScope(s string) bool {
	for _, have := range c.Scopes {
		if have == s {
			return true
		}
		switch have {
		case ScopeAdmin:
			if s == ScopeWrite || s == ScopeRead {
				return true
			}
		case ScopeWrite:
			if s == ScopeRead {
				return true
			}
		}
	}
	return false
}

// RequireScope returns nil when the token grants s, else the 403 insufficient_scope *Error that
// names it.
func (c Claims) RequireScope(s string) error {
	if c.HasScope(s) {
		return nil
	}
	return &Error{Status: http.StatusForbidden, Code: CodeInsufficientScope, Description: "the token lacks scope " + s}
}

// Error is every authentication failure. Status is 401 (bad/missing/expired/replayed token) or 403.
// Description is written for the caller and never carries an internal error.
type Error struct {
	Status      int
	Code        string // "invalid_token", "insufficient_scope", "invalid_request"
	Description string
}

func (e *Error) Error() string {
	return fmt.Sprintf("jwtauth: %d %s: %s", e.Status, e.Code, e.Description)
}

// WWWAuthenticate is the value of the WWW-Authenticate header of the response, e.g.
// `Bearer realm="supplyplan-loops", error="invalid_token", error_description="token expired"`.
func (e *Error) WWWAuthenticate() string {
	var b strings.Builder
	b.WriteString(`Bearer realm="` + Realm + `"`)
	if e.Code != "" {
		b.WriteString(`, error="` + quotable(e.Code) + `"`)
	}
	if e.Description != "" {
		b.WriteString(`, error_description="` + quotable(e.Description) + `"`)
	}
	return b.String()
}

// quotable keeps the characters RFC 6750 allows in error and error_description
// (%x20-21 / %x23-5B / %x5D-7E): no quote, no backslash, nothing outside printable ASCII.
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return -1
		}
		return r
	}, s)
}

func invalidToken(description string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeInvalidToken, Description: description}
}

// Authenticator verifies a bearer token. mutating=true records the jti and refuses a replay until exp.
type Authenticator interface {
	Authenticate(ctx context.Context, bearer string, mutating bool) (Claims, error)
}

// Config configures a Verifier.
type Config struct {
	Issuers     []string      // trusted `iss` values (required, >=1)
	Audience    string        // default "supplyplan-loops"
	JWKSURL     string        // either this ...
	JWKSFile    string        // ... or a local JWKS or PEM public key file
	Leeway      time.Duration // default 60s
	MaxLifetime time.Duration // default 15m: exp - iat must not exceed it
	HTTPClient  *http.Client
	Now         func() time.Time
}

// Verifier verifies tokens against a Config. It is safe for concurrent use.
type Verifier struct {
	cfg     Config
	issuers map[string]bool
	// validator checks exp, nbf, iat and aud as golang-jwt's parser did.
	validator *jwt.Validator
	keys      *keySource
	edKeys    decodedKeys // the Ed25519 keys' curve points, decoded once (ed25519.go)
	replay    *replayCache

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

var _ Authenticator = (*Verifier)(nil)

// New checks cfg, loads a JWKS/PEM file (an error when it holds no usable key) or starts fetching
// the JWKS URL in the background, and starts the periodic key refresh that Close stops.
func New(cfg Config) (*Verifier, error) {
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("jwtauth: at least one trusted issuer is required")
	}
	issuers := map[string]bool{}
	for _, iss := range cfg.Issuers {
		if strings.TrimSpace(iss) == "" {
			return nil, errors.New("jwtauth: an issuer is empty")
		}
		issuers[iss] = true
	}
	if cfg.Audience == "" {
		cfg.Audience = DefaultAudience
	}
	switch {
	case cfg.Leeway == 0:
		cfg.Leeway = DefaultLeeway
	case cfg.Leeway < 0 || cfg.Leeway > 5*time.Minute:
		return nil, fmt.Errorf("jwtauth: leeway %s: want between 0 and 5m", cfg.Leeway)
	}
	switch {
	case cfg.MaxLifetime == 0:
		cfg.MaxLifetime = DefaultMaxLifetime
	case cfg.MaxLifetime < 0 || cfg.MaxLifetime > DefaultMaxLifetime:
		return nil, fmt.Errorf("jwtauth: max lifetime %s: want at most %s", cfg.MaxLifetime, DefaultMaxLifetime)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: fetchTimeout}
	}
	v := &Verifier{cfg: cfg, issuers: issuers, replay: newReplayCache(maxReplayEntries), stop: make(chan struct{})}
	v.validator = jwt.NewValidator(
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithAudience(cfg.Audience),
	)
	switch {
	case cfg.JWKSURL != "" && cfg.JWKSFile != "":
		return nil, errors.New("jwtauth: set a JWKS URL or a JWKS file, not both")
	case cfg.JWKSURL != "":
		u, err := url.Parse(cfg.JWKSURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("jwtauth: JWKS URL %q: want an http(s) URL", cfg.JWKSURL)
		}
		client := cfg.HTTPClient
		v.keys = newKeySource(func(ctx context.Context) (*keySet, error) { return fetchKeys(ctx, client, cfg.JWKSURL) }, cfg.Now, &v.wg)
		v.keys.refresh() // warm the cache; a failure is retried on the first token
	case cfg.JWKSFile != "":
		path := cfg.JWKSFile
		v.keys = newKeySource(func(context.Context) (*keySet, error) { return readKeyFile(path) }, cfg.Now, &v.wg)
		if err := v.keys.loadNow(); err != nil {
			return nil, fmt.Errorf("jwtauth: %w", err)
		}
	default:
		return nil, errors.New("jwtauth: a JWKS URL or a JWKS/PEM file is required")
	}
	v.wg.Add(1)
	go v.refreshLoop()
	return v, nil
}

// Close stops the periodic key refresh and waits for a fetch in flight. It is idempotent.
func (v *Verifier) Close() {
	v.closeOnce.Do(func() {
		close(v.stop)
		v.wg.Wait()
	})
}

func (v *Verifier) refreshLoop() {
	defer v.wg.Done()
	t := time.NewTicker(refreshInterval)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			v.keys.refresh()
		}
	}
}

// Authenticate verifies bearer (the token, or an Authorization header value "Bearer <token>")
// and returns its claims. With mutating set, a token whose jti was already used on a mutating
// call is refused until it expires, and a first use records it. Every failure is an *Error.
//
// The checks run in the order golang-jwt's ParseWithClaims ran them when it parsed the token into
// MapClaims: segments, header and claims decoded (and checked strictly), the algorithm, the key
// (key), the signature (the library's SigningMethod.Verify; Ed25519 with the key decoded once,
// ed25519.go), the time claims and audience (the
// library's Validator on tokenClaims), then what the library does not check (claims).
func (v *Verifier) Authenticate(ctx context.Context, bearer string, mutating bool) (Claims, error) {
	raw, aerr := bearerToken(bearer)
	if aerr != nil {
		return Claims{}, aerr
	}
	seg, aerr := decodeSegments(raw)
	if aerr != nil {
		return Claims{}, aerr
	}
	hdr, ok := parseHeader(seg.header)
	if !ok {
		return Claims{}, invalidToken("malformed token")
	}
	tc, ok := parseClaims(seg.claims)
	if !ok {
		return Claims{}, invalidToken("malformed token")
	}
	var method jwt.SigningMethod
	if hdr.alg.isString {
		method = jwt.GetSigningMethod(hdr.alg.s)
	}
	if method == nil {
		return Claims{}, algorithmNotAllowed()
	}
	if aerr := seg.decodeSignature(); aerr != nil {
		return Claims{}, aerr
	}
	if !slices.Contains(algorithms, hdr.alg.s) {
		return Claims{}, algorithmNotAllowed()
	}
	keys, aerr := v.key(ctx, &hdr, &tc)
	if aerr != nil {
		return Claims{}, aerr
	}
	if len(keys) == 0 {
		return Claims{}, invalidToken("invalid token")
	}
	var err error
	for _, k := range keys {
		if err = v.verifySignature(method, seg.signing, seg.signingBytes, seg.signature, k); err == nil {
			break
		}
	}
	if err != nil {
		return Claims{}, invalidToken("invalid token signature")
	}
	if err := v.validator.Validate(&tc); err != nil {
		return Claims{}, v.translate(&tc, err)
	}
	c, aerr := v.claims(&tc)
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

// algorithmNotAllowed refuses a token whose alg is not on the allow-list.
func algorithmNotAllowed() *Error {
	return invalidToken("token algorithm not allowed: use RS256, ES256 or EdDSA")
}

// bearerToken takes the token out of "Bearer <token>" or a bare token.
func bearerToken(s string) (string, *Error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "Bearer") {
		s = ""
	}
	if scheme, rest, ok := strings.Cut(s, " "); ok {
		if !strings.EqualFold(scheme, "Bearer") {
			return "", &Error{Status: http.StatusUnauthorized, Code: CodeInvalidRequest, Description: "use the Bearer authentication scheme"}
		}
		s = strings.TrimSpace(rest)
	}
	switch {
	case s == "":
		return "", &Error{Status: http.StatusUnauthorized, Code: CodeInvalidRequest, Description: "missing bearer token"}
	case len(s) > maxTokenBytes:
		return "", invalidToken(fmt.Sprintf("token longer than %d bytes", maxTokenBytes))
	}
	return s, nil
}

// key returns the keys that may verify the token: it runs after the header and claims are
// decoded and the algorithm passed the allow-list, before the signature is checked (where
// golang-jwt ran its Keyfunc). It refuses untrusted issuers and critical header parameters first,
// so that neither can make the verifier fetch keys.
func (v *Verifier) key(ctx context.Context, h *tokenHeader, tc *tokenClaims) ([]any, *Error) {
	if h.crit {
		// golang-jwt ignores `crit`; RFC 7515 §4.1.11 requires refusing extensions we do not know.
		return nil, invalidToken("token header has critical parameters this service does not understand")
	}
	switch {
	case !tc.iss.isString || tc.iss.s == "":
		return nil, invalidToken("token has no iss claim")
	case !v.issuers[tc.iss.s]:
		return nil, invalidToken("token issuer is not trusted")
	}
	if h.kid.present && !h.kid.isString {
		return nil, invalidToken("token kid must be a string")
	}
	return v.keys.candidates(ctx, h.kid.s, h.alg.s)
}

// translate turns an error of golang-jwt's Validator into an *Error whose description names the
// problem without the library's wording.
func (v *Verifier) translate(tc *tokenClaims, err error) *Error {
	switch {
	case errors.Is(err, jwt.ErrInvalidType):
		return invalidToken("token has a claim of the wrong type (exp, nbf, iat and aud)")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		switch {
		case !tc.exp.present:
			return invalidToken("token has no exp claim")
		case !tc.audPresent:
			return invalidToken("token has no aud claim")
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
func (v *Verifier) claims(tc *tokenClaims) (Claims, *Error) {
	var c Claims
	c.Issuer = tc.iss.s // checked by key
	c.Audience = v.cfg.Audience
	exp, _ := tc.GetExpirationTime() // present and valid: checked by the validator
	iat, err := tc.GetIssuedAt()
	if err != nil || iat == nil {
		return c, invalidToken("token has no iat claim")
	}
	nbf, err := tc.GetNotBefore()
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
	str := func(name string, cs claimString, limit int) string {
		if aerr != nil {
			return ""
		}
		switch {
		case !cs.present:
			aerr = invalidToken("token has no " + name + " claim")
		case !cs.isString:
			aerr = invalidToken("token " + name + " claim must be a string")
		case strings.TrimSpace(cs.s) == "":
			aerr = invalidToken("token " + name + " claim is empty")
		case len(cs.s) > limit:
			aerr = invalidToken(fmt.Sprintf("token %s claim longer than %d bytes", name, limit))
		}
		return cs.s
	}
	c.Subject = str("sub", tc.sub, maxClaimBytes)
	c.ID = str("jti", tc.jti, maxClaimBytes)
	c.Org = str("org", tc.org, maxClaimBytes)
	scope := str("scope", tc.scope, maxScopeBytes)
	if aerr != nil {
		return Claims{}, aerr
	}
	c.Scopes = strings.Fields(scope)
	return c, nil
}
