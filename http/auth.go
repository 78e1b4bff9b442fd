package http

import (
	"bytes"

	"github.com/supplyplan/supplyplan"
)

var errUnauthorized = &supplyplan.Error{Code: supplyplan.EUNAUTHORIZED, Message: "Unauthorized"}

// bearer returns the key of an "Authorization: Bearer <key>" header.
func bearer(r *Request) (string, bool) {
	h := bytes.TrimSpace(r.Ctx.Request.Header.Peek("Authorization"))
	if len(h) < 7 || !bytes.EqualFold(h[:7], []byte("bearer ")) {
		return "", false
	}
	k := bytes.TrimSpace(h[7:])
	if len(k) == 0 {
		return "", false
	}
	return string(k), true
}

// authenticate resolves the bearer key into r.Principal.
func (s *Server) authenticate(r *Request) error {
	key, ok := bearer(r)
	if !ok {
		return errUnauthorized
	}
	p, ok := s.svc.Auth.Authenticate(key)
	if !ok {
		return errUnauthorized
	}
	r.Principal = p
	return nil
}

// feature is an entitlement that gates a group of endpoints.
type feature struct{ name, entitlement string }

var featureForecasting = &feature{name: "forecasting", entitlement: supplyplan.EntitlementForecasting}

// tenant wraps h for a tenant endpoint: bearer key, not the platform key, a role key (not an import
// key), the feature's entitlement, then the permission.
func (s *Server) tenant(perm supplyplan.Permission, feat *feature, h handlerFunc) handlerFunc {
	return func(r *Request) error {
		if err := s.authenticate(r); err != nil {
			return err
		}
		p := r.Principal
		if p.Platform {
			return &supplyplan.Error{Code: supplyplan.ETENANTREQUIRED, Message: "Forbidden"}
		}
		org, ok := s.svc.Auth.Organization(p.OrgID)
		if !ok {
			return errUnauthorized
		}
		r.Org = org
		if p.Role == "" {
			return &supplyplan.Error{Code: supplyplan.EFORBIDDEN, Message: "Forbidden",
				Details: map[string][]string{"authorization": {"import keys are accepted only by the import endpoints (x-api-key)"}}}
		}
		if feat != nil {
			if err := supplyplan.RequireEntitlement(&org, feat.name, feat.entitlement); err != nil {
				return err
			}
		}
		if err := supplyplan.Authorize(p, perm); err != nil {
			return err
		}
		return h(r)
	}
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
		return h(r)
	}
}
