package actors

import (
	"context"
	"slices"

	"github.com/supplyplan/supplyplan"
)

// mcpIndex is the part of the published platform index that the registry and the tool service
// read on every request.
type mcpIndex struct {
	toolByHash    map[string]supplyplan.APIKey
	gatewayByHash map[string]supplyplan.APIKey
	bySlug        map[string]string // slug -> org id
	merchants     map[string]supplyplan.MerchantProfile
	listed        []supplyplan.Merchant // sorted by slug
}

func buildMCPIndex(st *supplyplan.PlatformState) mcpIndex {
	ix := mcpIndex{toolByHash: map[string]supplyplan.APIKey{}, gatewayByHash: map[string]supplyplan.APIKey{},
		bySlug: make(map[string]string, len(st.Orgs)), merchants: make(map[string]supplyplan.MerchantProfile, len(st.Merchants))}
	for _, k := range st.ToolKeys {
		if k.RevokedAt == nil {
			ix.toolByHash[k.Hash] = *k
		}
	}
	for _, k := range st.GatewayKeys {
		if k.RevokedAt == nil {
			ix.gatewayByHash[k.Hash] = *k
		}
	}
	for id, o := range st.Orgs {
		ix.bySlug[o.Slug] = id
	}
	for id, p := range st.Merchants {
		ix.merchants[id] = *p
	}
	ix.listed = st.ListedMerchants()
	return ix
}

// AuthenticateTool resolves a tool key secret (tool service).
func (s *System) AuthenticateTool(secret string) (supplyplan.APIKey, bool) {
	ix := s.index.Load()
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
func (s *System) OrganizationByRef(ref string) (supplyplan.Organization, bool) {
	ix := s.index.Load()
	if o, ok := ix.orgs[ref]; ok {
		return o, true
	}
	if id, ok := ix.mcp.bySlug[ref]; ok {
		o, ok := ix.orgs[id]
		return o, ok
	}
	return supplyplan.Organization{}, false
}

// MerchantProfile returns an organization's merchant profile.
func (s *System) MerchantProfile(orgID string) (supplyplan.MerchantProfile, bool) {
	p, ok := s.index.Load().mcp.merchants[orgID]
	return p, ok
}

// ListedMerchants returns the listed merchants sorted by slug (shared: do not modify).
func (s *System) ListedMerchants() []supplyplan.Merchant { return s.index.Load().mcp.listed }

// SetMerchant stores a merchant profile; its webhookUrl passes the check of every outbound
// destination (checkDestination). A change with a webhook URL writes a merchant.updated
// event into the platform outbox in the same journal entry, then hands it to the relay, which
// turns it into a signed delivery to that URL (the relay's sweep catches it after a crash).
func (s *System) SetMerchant(ctx context.Context, orgID string, in supplyplan.MerchantInput) (supplyplan.MerchantProfile, error) {
	if err := in.Validate(); err != nil {
		return supplyplan.MerchantProfile{}, err
	}
	if in.WebhookURL != nil && *in.WebhookURL != "" {
		if err := s.checkDestination(ctx, "webhookUrl", *in.WebhookURL); err != nil {
			return supplyplan.MerchantProfile{}, err
		}
	}
	now := supplyplan.Now()
	type out struct {
		p      supplyplan.MerchantProfile
		events []supplyplan.DomainEvent
	}
	o, err := platformTx(ctx, s, func(st *supplyplan.PlatformState) (out, []supplyplan.Record, error) {
		p, recs, err := st.SetMerchant(orgID, in, now)
		var evs []supplyplan.DomainEvent
		for _, r := range recs {
			if r.Kind == supplyplan.KindPendingEvent && !r.Del {
				evs = append(evs, *r.Value.(*supplyplan.DomainEvent))
			}
		}
		return out{p, evs}, recs, err
	})
	if err != nil {
		return o.p, err
	}
	for _, e := range o.events {
		s.relay.enqueue(relayItem{fromPlatform: true, ev: e})
	}
	return o.p, nil
}

// GetMerchant returns an organization's merchant profile.
func (s *System) GetMerchant(ctx context.Context, orgID string) (supplyplan.MerchantProfile, error) {
	return platformTx(ctx, s, func(st *supplyplan.PlatformState) (supplyplan.MerchantProfile, []supplyplan.Record, error) {
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
func (s *System) SetCapabilities(ctx context.Context, orgID string, caps []string) (supplyplan.Organization, error) {
	now := supplyplan.Now()
	return platformTx(ctx, s, func(st *supplyplan.PlatformState) (supplyplan.Organization, []supplyplan.Record, error) {
		return st.SetCapabilities(orgID, caps, now)
	})
}

// CreateToolKey creates a tool key of an organization and returns its secret (shown once).
func (s *System) CreateToolKey(ctx context.Context, orgID string, in supplyplan.KeyNameInput) (supplyplan.APIKey, string, error) {
	now := supplyplan.Now()
	ck, err := platformTx(ctx, s, func(st *supplyplan.PlatformState) (createdKey, []supplyplan.Record, error) {
		k, secret, recs, err := st.CreateToolKey(orgID, in, now)
		return createdKey{k, secret}, recs, err
	})
	return ck.key, ck.secret, err
}

// ListToolKeys lists the tool keys of an organization.
func (s *System) ListToolKeys(ctx context.Context, orgID string) ([]supplyplan.APIKey, error) {
	return platformTx(ctx, s, func(st *supplyplan.PlatformState) ([]supplyplan.APIKey, []supplyplan.Record, error) {
		keys, err := st.ListToolKeys(orgID)
		return keys, nil, err
	})
}

// RevokeToolKey revokes a tool key.
func (s *System) RevokeToolKey(ctx context.Context, orgID, keyID string) error {
	now := supplyplan.Now()
	_, err := platformTx(ctx, s, func(st *supplyplan.PlatformState) (supplyplan.APIKey, []supplyplan.Record, error) {
		return st.RevokeToolKey(orgID, keyID, now)
	})
	return err
}

// CreateGatewayKey creates a registry gateway key (embedded mode store).
func (s *System) CreateGatewayKey(ctx context.Context, in supplyplan.KeyNameInput) (supplyplan.APIKey, string, error) {
	now := supplyplan.Now()
	ck, err := platformTx(ctx, s, func(st *supplyplan.PlatformState) (createdKey, []supplyplan.Record, error) {
		k, secret, recs, err := st.CreateGatewayKey(in, now)
		return createdKey{k, secret}, recs, err
	})
	return ck.key, ck.secret, err
}

// ListGatewayKeys lists the gateway keys.
func (s *System) ListGatewayKeys(ctx context.Context) ([]supplyplan.APIKey, error) {
	return platformTx(ctx, s, func(st *supplyplan.PlatformState) ([]supplyplan.APIKey, []supplyplan.Record, error) {
		return st.ListGatewayKeys(), nil, nil
	})
}

// RevokeGatewayKey revokes a gateway key.
func (s *System) RevokeGatewayKey(ctx context.Context, id string) error {
	now := supplyplan.Now()
	_, err := platformTx(ctx, s, func(st *supplyplan.PlatformState) (supplyplan.APIKey, []supplyplan.Record, error) {
		return st.RevokeGatewayKey(id, now)
	})
	return err
}

// AuthenticateGateway resolves a gateway key secret from memory.
func (s *System) AuthenticateGateway(_ context.Context, secret string) (supplyplan.APIKey, bool, error) {
	k, ok := s.index.Load().mcp.gatewayByHash[supplyplan.HashKey(secret)]
	return k, ok, nil
}

// EnsureDemoMCP gives the demo organization of a data dir created before the MCP surfaces its
// merchant profile and demo tool key. writeCreds receives the new secrets before they are
// journaled (as in Bootstrap); it is not called when nothing is missing.
func (s *System) EnsureDemoMCP(ctx context.Context, writeCreds func(map[string]string) error) error {
	now := supplyplan.Now()
	_, err := platformTx(ctx, s, func(st *supplyplan.PlatformState) (struct{}, []supplyplan.Record, error) {
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
func (s *System) ClaimToolConfirmation(ctx context.Context, a supplyplan.ToolAudit) error {
	_, err := tenantTx(ctx, s, a.OrganizationID, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		recs, err := st.ClaimToolConfirmation(a)
		return struct{}{}, recs, err
	})
	return err
}

// CompleteToolAudit records the outcome of a confirmed tool call.
func (s *System) CompleteToolAudit(ctx context.Context, orgID, id, status, detail string) error {
	now := supplyplan.Now()
	_, err := tenantTx(ctx, s, orgID, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		recs, err := st.CompleteToolAudit(id, status, detail, now)
		return struct{}{}, recs, err
	})
	return err
}

// ListToolAudits lists an organization's tool audits, newest first.
func (s *System) ListToolAudits(ctx context.Context, orgID string) ([]supplyplan.ToolAudit, error) {
	return tenantTx(ctx, s, orgID, func(st *supplyplan.TenantState) ([]supplyplan.ToolAudit, []supplyplan.Record, error) {
		return slices.Clone(st.ListToolAudits()), nil, nil
	})
}

var (
	_ supplyplan.GatewayKeyStore      = (*System)(nil)
	_ supplyplan.MCPPlatformService   = (*System)(nil)
	_ supplyplan.ToolKeyAuthenticator = (*System)(nil)
	_ supplyplan.MerchantDirectory    = (*System)(nil)
	_ supplyplan.ToolAuditLog         = (*System)(nil)
)
