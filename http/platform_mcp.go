package http

import (
	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// mcpPlatformRoutes adds the platform endpoints of the MCP surfaces: merchant profiles,
// capabilities, tool keys and gateway keys.
func (s *Server) mcpPlatformRoutes() {
	rt := s.router
	if s.svc.MCP != nil {
		rt.handle("GET", "/api/platform/organizations/:id/merchant", s.platform(s.getMerchant))
		rt.handle("PUT", "/api/platform/organizations/:id/merchant", s.platform(s.setMerchant))
		rt.handle("PUT", "/api/platform/organizations/:id/capabilities", s.platform(s.setCapabilities))
		rt.handle("GET", "/api/platform/organizations/:id/tool-keys", s.platform(s.listToolKeys))
		rt.handle("POST", "/api/platform/organizations/:id/tool-keys", s.platform(s.createToolKey))
		rt.handle("DELETE", "/api/platform/organizations/:id/tool-keys/:keyId", s.platform(s.revokeToolKey))
	}
	if s.svc.Gateway != nil {
		rt.handle("GET", "/api/platform/gateway-keys", s.platform(s.listGatewayKeys))
		rt.handle("POST", "/api/platform/gateway-keys", s.platform(s.createGatewayKey))
		rt.handle("DELETE", "/api/platform/gateway-keys/:id", s.platform(s.revokeGatewayKey))
	}
}

func (s *Server) getMerchant(r *Request) error {
	p, err := s.svc.MCP.GetMerchant(r.Context, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"merchant": p})
}

func (s *Server) setMerchant(r *Request) error {
	var in supplyplan.MerchantInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	p, err := s.svc.MCP.SetMerchant(r.Context, r.Param("id"), in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"merchant": p})
}

func (s *Server) setCapabilities(r *Request) error {
	var in struct {
		Capabilities *[]string `json:"capabilities"`
	}
	if err := r.Decode(&in); err != nil {
		return err
	}
	if in.Capabilities == nil {
		return supplyplan.Invalid("capabilities", "is required (an array of capability names)")
	}
	o, err := s.svc.MCP.SetCapabilities(r.Context, r.Param("id"), *in.Capabilities)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"organization": o})
}

// namedKeyView is a tool or gateway key as the API shows it: never the hash.
type namedKeyView struct {
	ID             string `json:"id"`
	OrganizationID string `json:"organizationId,omitempty"`
	Name           string `json:"name,omitempty"`
	Prefix         string `json:"prefix"`
	CreatedAt      string `json:"createdAt"`
	RevokedAt      string `json:"revokedAt,omitempty"`
}

func viewNamedKey(k supplyplan.APIKey) namedKeyView {
	v := namedKeyView{ID: k.ID, OrganizationID: k.OrganizationID, Name: k.Name, Prefix: k.Prefix,
		CreatedAt: k.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z")}
	if k.RevokedAt != nil {
		v.RevokedAt = k.RevokedAt.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	return v
}

func viewNamedKeys(keys []supplyplan.APIKey) []namedKeyView {
	out := make([]namedKeyView, len(keys))
	for i, k := range keys {
		out[i] = viewNamedKey(k)
	}
	return out
}

func (s *Server) createToolKey(r *Request) error {
	var in supplyplan.KeyNameInput
	if err := r.DecodeOptional(&in); err != nil {
		return err
	}
	k, secret, err := s.svc.MCP.CreateToolKey(r.Context, r.Param("id"), in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusCreated, map[string]any{"toolKey": viewNamedKey(k), "key": secret})
}

func (s *Server) listToolKeys(r *Request) error {
	keys, err := s.svc.MCP.ListToolKeys(r.Context, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"toolKeys": viewNamedKeys(keys)})
}

func (s *Server) revokeToolKey(r *Request) error {
	if err := s.svc.MCP.RevokeToolKey(r.Context, r.Param("id"), r.Param("keyId")); err != nil {
		return err
	}
	return r.NoContent()
}

func (s *Server) createGatewayKey(r *Request) error {
	var in supplyplan.KeyNameInput
	if err := r.DecodeOptional(&in); err != nil {
		return err
	}
	k, secret, err := s.svc.Gateway.CreateGatewayKey(r.Context, in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusCreated, map[string]any{"gatewayKey": viewNamedKey(k), "key": secret})
}

func (s *Server) listGatewayKeys(r *Request) error {
	keys, err := s.svc.Gateway.ListGatewayKeys(r.Context)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"gatewayKeys": viewNamedKeys(keys)})
}

func (s *Server) revokeGatewayKey(r *Request) error {
	if err := s.svc.Gateway.RevokeGatewayKey(r.Context, r.Param("id")); err != nil {
		return err
	}
	return r.NoContent()
}
