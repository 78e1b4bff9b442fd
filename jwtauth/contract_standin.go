// Package jwtauth verifies the signed JWTs of the loop runtime.
//
// THIS FILE IS A STAND-IN with exactly the names of /work/brief/jwt-contract.md, so that the loop
// runtime (branch w14) compiles before the real package (branch w14jwt) lands: drop it at merge.
// Its Verifier refuses every token; the runtime's tests use a fake Authenticator.
package jwtauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Scopes of the loop runtime.
const (
	ScopeRead  = "loops:read"
	ScopeWrite = "loops:write"
	ScopeAdmin = "loops:admin"
)

// Claims are the verified claims of one token.
type Claims struct {
	Issuer, Subject, Audience, ID, Org string
	Scopes                             []string
	IssuedAt, NotBefore, ExpiresAt     time.Time
}

// HasScope reports whether the claims grant s: loops:admin implies write and read; write implies read.
func (c Claims) HasScope(s string) bool {
	switch {
	case slices.Contains(c.Scopes, s), slices.Contains(c.Scopes, ScopeAdmin):
		return true
	case s == ScopeRead:
		return slices.Contains(c.Scopes, ScopeWrite)
	}
	return false
}

// Error is every authentication failure.
type Error struct {
	Status      int
	Code        string
	Description string
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

// WWWAuthenticate is the challenge of the failure.
func (e *Error) WWWAuthenticate() string {
	return fmt.Sprintf(`Bearer realm="supplyplan-loops", error=%q, error_description=%q`, e.Code, e.Description)
}

// Authenticator verifies a bearer token. mutating=true records the jti and refuses a replay until exp.
type Authenticator interface {
	Authenticate(ctx context.Context, bearer string, mutating bool) (Claims, error)
}

// Config configures a Verifier.
type Config struct {
	Issuers     []string
	Audience    string
	JWKSURL     string
	JWKSFile    string
	Leeway      time.Duration
	MaxLifetime time.Duration
	HTTPClient  *http.Client
	Now         func() time.Time
}

// Verifier is the stand-in verifier: it refuses every token.
type Verifier struct{}

// New returns the stand-in verifier.
func New(cfg Config) (*Verifier, error) { return &Verifier{}, nil }

// Close does nothing.
func (v *Verifier) Close() {}

// Authenticate refuses every token (stand-in).
func (v *Verifier) Authenticate(context.Context, string, bool) (Claims, error) {
	return Claims{}, &Error{Status: http.StatusUnauthorized, Code: "invalid_token", Description: "JWT verification is not built into this binary"}
}

// LocalIssuer is the issuer of the local key.
const LocalIssuer = "supplyplan-local"

// EnsureLocalIssuer returns a Config trusting the local issuer (stand-in: no key is created).
func EnsureLocalIssuer(dataDir string) (Config, error) {
	return Config{Issuers: []string{LocalIssuer}, Audience: "supplyplan-loops"}, nil
}

// MintLocal is not available in the stand-in.
func MintLocal(dataDir, org string, scopes []string, ttl time.Duration) (string, error) {
	return "", errors.New("jwtauth stand-in: minting is not built into this binary")
}
