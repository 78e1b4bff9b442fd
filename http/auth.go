package http

import (
	"bytes"
	"crypto/subtle"
	"slices"

	"github.com/supplyplan/supplyplan"
)

// Why a key was refused: the `reason` field of a 401 body. Stable, documented in docs/api.md.
const (
	reasonKeyMissing   = "KEY_MISSING"
	reasonKeyMalformed = "KEY_MALFORMED"
	reasonKeyUnknown   = "KEY_UNKNOWN"
)

// authError is a 401 that says why: the key was missing, malformed, or unknown or revoked. It
// unwraps to the *supplyplan.Error the transports render.
type authError struct {
	err    *supplyplan.Error
	reason string
}

func (e *authError) Error() string { return e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

// unauthorized builds the 401 of reason about header ("authorization" or "x-api-key"), with the
// message msg ("Unauthorized" on the REST API, as the spec has it).
func unauthorized(reason, header, msg, detail string) error {
	return &authError{reason: reason, err: &supplyplan.Error{Code: supplyplan.EUNAUTHORIZED, Message: msg,
		Details: map[string][]string{header: {detail}}}}
}

// wellFormedKey reports whether k has the shape of the keys this service issues:
// sp_<kind>_<token> with a lower-case kind and an alphanumeric token.
func wellFormedKey(k []byte) bool {
	if len(k) > 200 || !bytes.HasPrefix(k, []byte("sp_")) {
		return false
	}
	rest := k[3:]
	i := bytes.IndexByte(rest, '_')
	if i <= 0 || i == len(rest)-1 {
		return false
	}
	for _, c := range rest[:i] {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	for _, c := range rest[i+1:] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// credential is a key read from a request header, or why there is none.
type credential struct {
	key    string
	header string // "authorization" or "x-api-key"
	reason string // "" when key is usable, else reasonKeyMissing or reasonKeyMalformed
	detail string
}

// bearerCredential reads "Authorization: Bearer <key>".
func bearerCredential(h []byte) credential {
	c := credential{header: "authorization"}
	h = bytes.TrimSpace(h)
	switch {
	case len(h) == 0:
		c.reason, c.detail = reasonKeyMissing, "missing: send Authorization: Bearer <key>"
	case len(h) < 7 || !bytes.EqualFold(h[:7], []byte("bearer ")):
		c.reason, c.detail = reasonKeyMalformed, "malformed: the scheme must be Bearer (Authorization: Bearer <key>)"
	default:
		k := bytes.TrimSpace(h[7:])
		switch {
		case len(k) == 0:
			c.reason, c.detail = reasonKeyMalformed, "malformed: no key after Bearer"
		case !wellFormedKey(k):
			c.reason, c.detail = reasonKeyMalformed, "malformed: not a Supplyplan key (keys look like sp_<kind>_<token>)"
		default:
			c.key = string(k)
		}
	}
	return c
}

// apiKeyCredential reads "x-api-key: <key>"; missingDetail says where the key belongs.
func apiKeyCredential(h []byte, missingDetail string) credential {
	c := credential{header: "x-api-key"}
	k := bytes.TrimSpace(h)
	switch {
	case len(k) == 0:
		c.reason, c.detail = reasonKeyMissing, "missing: "+missingDetail
	case !wellFormedKey(k):
		c.reason, c.detail = reasonKeyMalformed, "malformed: not a Supplyplan key (keys look like sp_<kind>_<token>)"
	default:
		c.key = string(k)
	}
	return c
}

// err is the REST API's 401 for a credential without a usable key.
func (c credential) err() error {
	return unauthorized(c.reason, c.header, "Unauthorized", c.detail)
}

// unknownKey is the REST API's 401 for a well-formed key that no live key matches.
func unknownKey(header string) error {
	return unauthorized(reasonKeyUnknown, header, "Unauthorized", "unknown or revoked key")
}

// authenticate resolves the bearer key into r.Principal. It reads headers only: nothing of the
// body has been read when it runs.
func (s *Server) authenticate(r *Request) error {
	h := r.Ctx.Request.Header.Peek("Authorization")
	// A connection's requests usually carry one key: its principal is kept on the connection while
	// the platform's keys and organizations stay as they were (connAuth).
	lc, _ := r.Ctx.Conn().(*lingerConn)
	var version uint64
	if av, ok := s.svc.Auth.(supplyplan.AuthVersioner); ok && lc != nil {
		version = av.AuthVersion()
		if p, ok := lc.auth.principal(h, version); ok {
			r.Principal = p
			return nil
		}
	}
	c := bearerCredential(h)
	if c.reason != "" {
		return c.err()
	}
	p, ok := s.svc.Auth.Authenticate(c.key)
	if !ok {
		return unknownKey(c.header)
	}
	r.Principal = p
	if version != 0 {
		lc.auth.keep(h, version, p)
	}
	return nil
}

// connAuth is the principal of the Authorization header a connection sent last, as resolved at
// an AuthVersion of the platform. It saves a keyed request the key's SHA-256 and the lookups
// (about 4 % of a small GET's CPU). A connection's requests are served one at a time, on one
// goroutine: no lock. The header (the key) stays in memory for the connection's life, as it does
// in the connection's read buffer.
type connAuth struct {
	header  []byte
	version uint64 // 0: none kept
	p       supplyplan.Principal
}

// principal returns the kept principal when header is the one it was resolved from and version
// is still the platform's.
func (a *connAuth) principal(header []byte, version uint64) (supplyplan.Principal, bool) {
	if a.version == 0 || a.version != version || len(header) == 0 || subtle.ConstantTimeCompare(a.header, header) != 1 {
		return supplyplan.Principal{}, false
	}
	p := a.p
	if len(p.Scopes) > 0 {
		p.Scopes = slices.Clone(p.Scopes)
	}
	return p, true
}

func (a *connAuth) keep(header []byte, version uint64, p supplyplan.Principal) {
	a.header = append(a.header[:0], header...)
	a.version = version
	a.p = p
	a.p.Scopes = slices.Clone(p.Scopes)
}

// feature is an entitlement that gates a group of endpoints.
type feature struct{ name, entitlement string }

var featureForecasting = &feature{name: "forecasting", entitlement: supplyplan.EntitlementForecasting}

// tenant wraps h for a tenant endpoint: bearer key, not the platform key, a role key (not an import
// key), the feature's entitlement, then the permission.
func (s *Server) tenant(perm supplyplan.Permission, feat *feature, h handlerFunc) handlerFunc {
	return func(r *Request) error {
		if err := s.tenantAccess(r, perm, feat, 0); err != nil {
			return err
		}
		return s.run(r, h)
	}
}

// tenantAccess is tenant's check: it sets r.Principal and r.Org, from the headers only. Once the
// check passes the body limit becomes bodyLimit (0: unchanged) and, in the distributed mode, a
// request of an organization owned elsewhere is forwarded there (errForwarded): it is rate limited
// by its owner only.
func (s *Server) tenantAccess(r *Request, perm supplyplan.Permission, feat *feature, bodyLimit int) error {
	if err := s.authenticate(r); err != nil {
		return err
	}
	org, err := tenantCheck(s.svc.Auth, r.Principal, perm, feat)
	r.Org = org
	if err != nil {
		return err
	}
	if bodyLimit > 0 {
		r.bodyLimit = bodyLimit
	}
	if err := s.route(r, r.Principal.OrgID); err != nil {
		return err
	}
	return s.limit(r, classOf(r.Ctx.Method()), &r.Org)
}

// route forwards r to the owner of org when that is another node (errForwarded), or answers 503
// while no node can serve it; nil: served here (always in the embedded mode).
func (s *Server) route(r *Request, org string) error {
	if s.fwd == nil {
		return nil
	}
	deadline, _ := r.Context.Deadline()
	return s.fwd.route(r.Ctx, org, r.requestID, deadline, r.Body)
}

// tenantCheck is the rule of every tenant endpoint for an authenticated principal: not the platform
// key, a live organization, a role key (not an import key), the feature's entitlement, then the
// permission. The REST API and the operator console both call it.
func tenantCheck(auth supplyplan.Authenticator, p supplyplan.Principal, perm supplyplan.Permission, feat *feature) (supplyplan.Organization, error) {
	if p.Platform {
		return supplyplan.Organization{}, &supplyplan.Error{Code: supplyplan.ETENANTREQUIRED, Message: "Forbidden"}
	}
	org, ok := auth.Organization(p.OrgID)
	if !ok {
		return org, unknownKey("authorization")
	}
	if p.Role == "" {
		return org, &supplyplan.Error{Code: supplyplan.EFORBIDDEN, Message: "Forbidden",
			Details: map[string][]string{"authorization": {"import keys are accepted only by the import endpoints (x-api-key)"}}}
	}
	if feat != nil {
		if err := supplyplan.RequireEntitlement(&org, feat.name, feat.entitlement); err != nil {
			return org, err
		}
	}
	return org, supplyplan.Authorize(p, perm)
}

// platform wraps h for a platform endpoint: only the platform (super-administrator) key.
func (s *Server) platform(h handlerFunc) handlerFunc {
	return func(r *Request) error {
		if err := s.authenticate(r); err != nil {
			return err
		}
		if !r.Principal.Platform {
			return &supplyplan.Error{Code: supplyplan.EFORBIDDEN, Message: "Forbidden",
				Details: map[string][]string{"authorization": {"requires the platform key"}}}
		}
		// The platform's state is one stream, "platform", owned like an organization's.
		if err := s.route(r, PlatformOwnerKey); err != nil {
			return err
		}
		return s.run(r, h)
	}
}
