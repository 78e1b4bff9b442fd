package http

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

func (s *Server) listOrganizations(r *Request) error {
	orgs, err := s.svc.Platform.ListOrganizations(r.Context)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"organizations": orgs})
}

func (s *Server) createOrganization(r *Request) error {
	var in supplyplan.OrganizationInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	o, err := s.svc.Platform.CreateOrganization(r.Context, in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusCreated, map[string]any{"organization": o})
}

func (s *Server) getOrganization(r *Request) error {
	o, err := s.svc.Platform.GetOrganization(r.Context, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"organization": o})
}

func (s *Server) setEntitlements(r *Request) error {
	var in struct {
		Entitlements *[]string `json:"entitlements"`
	}
	if err := r.Decode(&in); err != nil {
		return err
	}
	if in.Entitlements == nil {
		return supplyplan.Invalid("entitlements", "is required (an array of entitlement names)")
	}
	o, err := s.svc.Platform.SetEntitlements(r.Context, r.Param("id"), *in.Entitlements)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"organization": o})
}

// apiKeyView is a key as the API shows it: never the hash.
type apiKeyView struct {
	ID        string             `json:"id"`
	Name      string             `json:"name,omitempty"`
	Prefix    string             `json:"prefix"`
	Role      supplyplan.Role    `json:"role,omitempty"`
	Scopes    []supplyplan.Scope `json:"scopes,omitempty"`
	CreatedAt time.Time          `json:"createdAt"`
	RevokedAt *time.Time         `json:"revokedAt,omitempty"`
}

func viewKey(k supplyplan.APIKey) apiKeyView {
	return apiKeyView{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Role: k.Role, Scopes: k.Scopes,
		CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
}

func (s *Server) createAPIKey(r *Request) error {
	var in supplyplan.APIKeyInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	k, secret, err := s.svc.Platform.CreateAPIKey(r.Context, r.Param("id"), in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusCreated, map[string]any{"apiKey": viewKey(k), "key": secret})
}

func (s *Server) listAPIKeys(r *Request) error {
	keys, err := s.svc.Platform.ListAPIKeys(r.Context, r.Param("id"))
	if err != nil {
		return err
	}
	out := make([]apiKeyView, len(keys))
	for i, k := range keys {
		out[i] = viewKey(k)
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"apiKeys": out})
}

func (s *Server) revokeAPIKey(r *Request) error {
	if err := s.svc.Platform.RevokeAPIKey(r.Context, r.Param("id"), r.Param("keyId")); err != nil {
		return err
	}
	return r.NoContent()
}

func (s *Server) listGlobalEvents(r *Request) error {
	evs, err := s.svc.Platform.ListGlobalEvents(r.Context)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"events": evs})
}

func (s *Server) createGlobalEvent(r *Request) error {
	var in supplyplan.EventInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	e, err := s.svc.Platform.CreateGlobalEvent(r.Context, in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusCreated, e)
}

func (s *Server) deleteGlobalEvent(r *Request) error {
	if err := s.svc.Platform.DeleteGlobalEvent(r.Context, r.Param("id")); err != nil {
		return err
	}
	return r.NoContent()
}
