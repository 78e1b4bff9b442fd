package actors

import (
	"context"
	"slices"

	"github.com/supplyplan/supplyplan"
)

// MCP is the service behind the MCP surfaces (the registry and the hosted tool service): merchant
// profiles, capabilities, tool keys and gateway keys (kept by the platform actor), the merchant
// directory, and the audits of confirmed tool calls (kept by each tenant's actor).
type MCP struct {
	core     *Core
	webhooks *Webhooks // checks a merchant's webhookUrl and relays merchant.updated
}

// NewMCP returns the MCP service.
func NewMCP(core *Core, webhooks *Webhooks) *MCP { return &MCP{core: core, webhooks: webhooks} }

var (
	_ supplyplan.GatewayKeyStore      = (*MCP)(nil)
	_ supplyplan.MCPPlatformService   = (*MCP)(nil)
	_ supplyplan.ToolKeyAuthenticator = (*MCP)(nil)
	_ supplyplan.MerchantDirectory    = (*MCP)(nil)
	_ supplyplan.ToolAuditLog         = (*MCP)(nil)
)

// AuthenticateTool resolves a tool key secret (tool service).
func (s *MCP) AuthenticateTool(secret string) (supplyplan.APIKey, bool) {
	ix := s.core.index.Load()
	k, ok := ix.mcp.toolByHash[supplyplan.HashKey(secret)]
	if !ok {
		return supplyplan.APIKey{}, false
	}
	if _, ok := ix.orgs[k.OrganizationID]; !ok {
		return supplyplan.APIKey{}, false
	}
	return k, true
}

// OrganizationByRef finds an organization by id or slug.
func (s *MCP) OrganizationByRef(ref string) (supplyplan.Organization, bool) {
	return s.core.organizationByRef(ref)
}

// MerchantProfile returns an organization's merchant profile.
func (s *MCP) MerchantProfile(orgID string) (supplyplan.MerchantProfile, bool) {
	p, ok := s.core.index.Load().mcp.merchants[orgID]
	return p, ok
}

// ListedMerchants returns the listed merchants sorted by slug (shared: do not modify).
func (s *MCP) ListedMerchants() []supplyplan.Merchant { return s.core.index.Load().mcp.listed }

// SetMerchant stores a merchant profile; its webhookUrl passes the check of every outbound
// destination (checkDestination). A change with a webhook URL writes a merchant.updated
// event into the platform outbox in the same journal entry, then hands it to the relay, which
// turns it into a signed delivery to that URL (the relay's sweep catches it after a crash).
func (s *MCP) SetMerchant(ctx context.Context, orgID string, in supplyplan.MerchantInput) (supplyplan.MerchantProfile, error) {
	if err := in.Validate(); err != nil {
		return supplyplan.MerchantProfile{}, err
	}
	if in.WebhookURL != nil && *in.WebhookURL != "" {
		if err := s.webhooks.checkDestination(ctx, "webhookUrl", *in.WebhookURL); err != nil {
			return supplyplan.MerchantProfile{}, err
		}
	}
	now := supplyplan.Now()
	type out struct {
		p      supplyplan.MerchantProfile
		events []supplyplan.DomainEvent
	}
	o, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (out, []supplyplan.Record, error) {
		p, recs, err := st.SetMerchant(orgID, in, now)
		return out{p, pendingEvents(recs)}, recs, err
	})
	if err != nil {
		return o.p, err
	}
	s.webhooks.relayPlatform(o.events)
	return o.p, nil
}

// GetMerchant returns an organization's merchant profile.
func (s *MCP) GetMerchant(ctx context.Context, orgID string) (supplyplan.MerchantProfile, error) {
	return platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (supplyplan.MerchantProfile, []supplyplan.Record, error) {
		if _, ok := st.Orgs[orgID]; !ok {
			return supplyplan.MerchantProfile{}, nil, supplyplan.NotFound("Organization")
		}
		p, ok := st.Merchants[orgID]
		if !ok {
			return supplyplan.MerchantProfile{}, nil, supplyplan.NotFound("Merchant profile")
		}
		return *p, nil, nil
	})
}

// SetCapabilities replaces an organization's capabilities.
func (s *MCP) SetCapabilities(ctx context.Context, orgID string, caps []string) (supplyplan.Organization, error) {
	now := supplyplan.Now()
	return platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (supplyplan.Organization, []supplyplan.Record, error) {
		return st.SetCapabilities(orgID, caps, now)
	})
}

// CreateToolKey creates a tool key of an organization and returns its secret (shown once).
func (s *MCP) CreateToolKey(ctx context.Context, orgID string, in supplyplan.KeyNameInput) (supplyplan.APIKey, string, error) {
	now := supplyplan.Now()
	ck, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (createdKey, []supplyplan.Record, error) {
		k, secret, recs, err := st.CreateToolKey(orgID, in, now)
		return createdKey{k, secret}, recs, err
	})
	return ck.key, ck.secret, err
}

// ListToolKeys lists the tool keys of an organization.
func (s *MCP) ListToolKeys(ctx context.Context, orgID string) ([]supplyplan.APIKey, error) {
	return platformTx(ctx, s.core, func(st *supplyplan.PlatformState) ([]supplyplan.APIKey, []supplyplan.Record, error) {
		keys, err := st.ListToolKeys(orgID)
		return keys, nil, err
	})
}

// RevokeToolKey revokes a tool key.
func (s *MCP) RevokeToolKey(ctx context.Context, orgID, keyID string) error {
	now := supplyplan.Now()
	_, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (supplyplan.APIKey, []supplyplan.Record, error) {
		return st.RevokeToolKey(orgID, keyID, now)
	})
	return err
}

// CreateGatewayKey creates a registry gateway key (embedded mode store).
func (s *MCP) CreateGatewayKey(ctx context.Context, in supplyplan.KeyNameInput) (supplyplan.APIKey, string, error) {
	now := supplyplan.Now()
	ck, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (createdKey, []supplyplan.Record, error) {
		k, secret, recs, err := st.CreateGatewayKey(in, now)
		return createdKey{k, secret}, recs, err
	})
	return ck.key, ck.secret, err
}

// ListGatewayKeys lists the gateway keys.
func (s *MCP) ListGatewayKeys(ctx context.Context) ([]supplyplan.APIKey, error) {
	return platformTx(ctx, s.core, func(st *supplyplan.PlatformState) ([]supplyplan.APIKey, []supplyplan.Record, error) {
		return st.ListGatewayKeys(), nil, nil
	})
}

// RevokeGatewayKey revokes a gateway key.
func (s *MCP) RevokeGatewayKey(ctx context.Context, id string) error {
	now := supplyplan.Now()
	_, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (supplyplan.APIKey, []supplyplan.Record, error) {
		return st.RevokeGatewayKey(id, now)
	})
	return err
}

// AuthenticateGateway resolves a gateway key secret from memory.
func (s *MCP) AuthenticateGateway(_ context.Context, secret string) (supplyplan.APIKey, bool, error) {
	k, ok := s.core.index.Load().mcp.gatewayByHash[supplyplan.HashKey(secret)]
	return k, ok, nil
}

// EnsureDemoMCP gives the demo organization of a data dir created before the MCP surfaces its
// merchant profile and demo tool key. writeCreds receives the new secrets before they are
// journaled (as in Bootstrap); it is not called when nothing is missing.
func (s *MCP) EnsureDemoMCP(ctx context.Context, writeCreds func(map[string]string) error) error {
	now := supplyplan.Now()
	_, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (struct{}, []supplyplan.Record, error) {
		creds, recs := st.EnsureDemoMCP(now)
		if len(recs) == 0 {
			return struct{}{}, nil, nil
		}
		if len(creds) > 0 {
			if err := writeCreds(creds); err != nil {
				return struct{}{}, nil, err
			}
		}
		return struct{}{}, recs, nil
	})
	return err
}

// ClaimToolConfirmation stores a CONFIRMED tool audit in the organization's journal.
func (s *MCP) ClaimToolConfirmation(ctx context.Context, a supplyplan.ToolAudit) error {
	_, err := tenantTx(ctx, s.core, a.OrganizationID, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		recs, err := st.ClaimToolConfirmation(a)
		return struct{}{}, recs, err
	})
	return err
}

// CompleteToolAudit records the outcome of a confirmed tool call.
func (s *MCP) CompleteToolAudit(ctx context.Context, orgID, id, status, detail string) error {
	now := supplyplan.Now()
	_, err := tenantTx(ctx, s.core, orgID, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		recs, err := st.CompleteToolAudit(id, status, detail, now)
		return struct{}{}, recs, err
	})
	return err
}

// ListToolAudits lists an organization's tool audits, newest first.
func (s *MCP) ListToolAudits(ctx context.Context, orgID string) ([]supplyplan.ToolAudit, error) {
	return tenantTx(ctx, s.core, orgID, func(st *supplyplan.TenantState) ([]supplyplan.ToolAudit, []supplyplan.Record, error) {
		return slices.Clone(st.ListToolAudits()), nil, nil
	})
}

// organizationByRef finds an organization by id or slug (the MCP registry and the loop runtime
// accept both).
func (c *Core) organizationByRef(ref string) (supplyplan.Organization, bool) {
	ix := c.index.Load()
	if o, ok := ix.orgs[ref]; ok {
		return o, true
	}
	if id, ok := ix.mcp.bySlug[ref]; ok {
		o, ok := ix.orgs[id]
		return o, ok
	}
	return supplyplan.Organization{}, false
}
