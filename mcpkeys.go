package supplyplan

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// Credential names written to credentials.json for the MCP surfaces.
const (
	CredDemoTool = "demoTool" // tool key of the demo organization (tool service)
	CredGateway  = "gateway"  // gateway key of the registry discovery endpoint
)

// KeyNameInput is the body of tool key and gateway key creation.
type KeyNameInput struct {
	Name *string `json:"name" max:"200"`
}

// Validate checks a key creation body.
func (in KeyNameInput) Validate() error {
	if in.Name != nil && len(*in.Name) > 200 {
		return Invalid("name", "must be at most 200 characters")
	}
	return nil
}

func newKey(kind, orgID string, in KeyNameInput, now time.Time) (APIKey, string) {
	k := APIKey{ID: NewID("key"), OrganizationID: orgID, CreatedAt: now}
	if in.Name != nil {
		k.Name = strings.TrimSpace(*in.Name)
	}
	secret, prefix := NewKeySecret(kind)
	k.Prefix, k.Hash = prefix, HashKey(secret)
	return k, secret
}

// CreateToolKey returns a new tool key of orgID (tool service only) and its secret.
func (s *PlatformState) CreateToolKey(orgID string, in KeyNameInput, now time.Time) (APIKey, string, []Record, error) {
	if _, ok := s.Orgs[orgID]; !ok {
		return APIKey{}, "", nil, NotFound("Organization")
	}
	if err := in.Validate(); err != nil {
		return APIKey{}, "", nil, err
	}
	k, secret := newKey("tool", orgID, in, now)
	return k, secret, []Record{Put(KindToolKey, k.ID, &k)}, nil
}

// ListToolKeys returns the tool keys of an organization, oldest first.
func (s *PlatformState) ListToolKeys(orgID string) ([]APIKey, error) {
	if _, ok := s.Orgs[orgID]; !ok {
		return nil, NotFound("Organization")
	}
	return sortedKeys(s.ToolKeys, func(k *APIKey) bool { return k.OrganizationID == orgID }), nil
}

// RevokeToolKey marks a tool key of orgID revoked.
func (s *PlatformState) RevokeToolKey(orgID, keyID string, now time.Time) (APIKey, []Record, error) {
	cur, ok := s.ToolKeys[keyID]
	if !ok || cur.OrganizationID != orgID {
		return APIKey{}, nil, NotFound("Tool key")
	}
	return revoke(KindToolKey, cur, now)
}

// CreateGatewayKey returns a new gateway key (registry discovery endpoint) and its secret.
func (s *PlatformState) CreateGatewayKey(in KeyNameInput, now time.Time) (APIKey, string, []Record, error) {
	if err := in.Validate(); err != nil {
		return APIKey{}, "", nil, err
	}
	k, secret := newKey("mcp", "", in, now)
	return k, secret, []Record{Put(KindGatewayKey, k.ID, &k)}, nil
}

// ListGatewayKeys returns every gateway key, oldest first.
func (s *PlatformState) ListGatewayKeys() []APIKey {
	return sortedKeys(s.GatewayKeys, func(*APIKey) bool { return true })
}

// RevokeGatewayKey marks a gateway key revoked.
func (s *PlatformState) RevokeGatewayKey(keyID string, now time.Time) (APIKey, []Record, error) {
	cur, ok := s.GatewayKeys[keyID]
	if !ok {
		return APIKey{}, nil, NotFound("Gateway key")
	}
	return revoke(KindGatewayKey, cur, now)
}

func revoke(kind string, cur *APIKey, now time.Time) (APIKey, []Record, error) {
	if cur.RevokedAt != nil {
		return *cur, nil, nil
	}
	k := *cur
	k.RevokedAt = &now
	return k, []Record{Put(kind, k.ID, &k)}, nil
}

func sortedKeys(m map[string]*APIKey, keep func(*APIKey) bool) []APIKey {
	out := []APIKey{}
	for _, k := range m {
		if keep(k) {
			out = append(out, *k)
		}
	}
	slices.SortFunc(out, func(a, b APIKey) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// SetCapabilities replaces an organization's capabilities (the tool service's gate).
func (s *PlatformState) SetCapabilities(orgID string, caps []string, now time.Time) (Organization, []Record, error) {
	cur, ok := s.Orgs[orgID]
	if !ok {
		return Organization{}, nil, NotFound("Organization")
	}
	fe := FieldErrors{}
	validateNames(fe, "capabilities", caps)
	if err := fe.Err(); err != nil {
		return Organization{}, nil, err
	}
	o := *cur
	o.Capabilities = Dedup(caps)
	o.UpdatedAt = now
	return o, []Record{Put(KindOrganization, o.ID, &o)}, nil
}

// demoMCP returns what the demo organization needs on the MCP surfaces and is missing: a listed
// merchant profile and the demo tool key (secret returned under CredDemoTool). fresh skips the
// lookups (the organization is being created in the same write).
func (s *PlatformState) demoMCP(org Organization, now time.Time, fresh bool) (map[string]string, []Record) {
	creds := map[string]string{}
	var recs []Record
	if _, ok := s.Merchants[org.ID]; fresh || !ok {
		p := MerchantProfile{OrganizationID: org.ID, Listed: true, DisplayName: "Demo Outfitters",
			Description: "Demo merchant of this Supplyplan installation: outdoor gear with live stock per store and warehouse.",
			Categories:  []string{"outdoor", "apparel", "demo"}, Region: "EU", UpdatedAt: now}
		recs = append(recs, Put(KindMerchant, org.ID, &p))
	}
	hasTool := false
	if !fresh {
		for _, k := range s.ToolKeys {
			if k.OrganizationID == org.ID && k.Name == CredDemoTool && k.RevokedAt == nil {
				hasTool = true
			}
		}
	}
	if !hasTool {
		name := CredDemoTool
		k, secret := newKey("tool", org.ID, KeyNameInput{Name: &name}, now)
		creds[CredDemoTool] = secret
		recs = append(recs, Put(KindToolKey, k.ID, &k))
	}
	return creds, recs
}

// EnsureDemoMCP returns the records that give a demo organization created before the MCP surfaces
// existed its merchant profile, its capabilities (when it has none) and its demo tool key. It
// returns nothing when there is no demo organization or nothing is missing; existing keys are
// never touched.
func (s *PlatformState) EnsureDemoMCP(now time.Time) (map[string]string, []Record) {
	org, ok := s.OrgBySlugOrID(DemoSlug)
	if !ok {
		return nil, nil
	}
	creds, recs := s.demoMCP(*org, now, false)
	if len(org.Capabilities) == 0 && len(recs) > 0 {
		o := *org
		o.Capabilities = slices.Clone(DemoCapabilities)
		o.UpdatedAt = now
		recs = append(recs, Put(KindOrganization, o.ID, &o))
	}
	return creds, recs
}

// GatewayKeyStore keeps the registry's gateway keys: the platform journal in the embedded mode,
// Redis in the distributed mode. Secrets are never stored, only their SHA-256.
type GatewayKeyStore interface {
	CreateGatewayKey(ctx context.Context, in KeyNameInput) (APIKey, string, error)
	ListGatewayKeys(ctx context.Context) ([]APIKey, error)
	RevokeGatewayKey(ctx context.Context, id string) error
	// AuthenticateGateway resolves a secret to its live key. An error means the store is unreachable.
	AuthenticateGateway(ctx context.Context, secret string) (APIKey, bool, error)
}

// MCPPlatformService manages merchant profiles, capabilities, tool keys and the outbox (platform
// key only).
type MCPPlatformService interface {
	SetMerchant(ctx context.Context, orgID string, in MerchantInput) (MerchantProfile, error)
	GetMerchant(ctx context.Context, orgID string) (MerchantProfile, error)
	SetCapabilities(ctx context.Context, orgID string, caps []string) (Organization, error)
	CreateToolKey(ctx context.Context, orgID string, in KeyNameInput) (APIKey, string, error)
	ListToolKeys(ctx context.Context, orgID string) ([]APIKey, error)
	RevokeToolKey(ctx context.Context, orgID, keyID string) error
}

// ToolKeyAuthenticator resolves tool keys and merchants from memory (never blocks).
type ToolKeyAuthenticator interface {
	// AuthenticateTool returns the live tool key of a secret.
	AuthenticateTool(secret string) (APIKey, bool)
	// OrganizationByRef finds an organization by id or slug.
	OrganizationByRef(ref string) (Organization, bool)
	// MerchantProfile returns an organization's merchant profile.
	MerchantProfile(orgID string) (MerchantProfile, bool)
}

// MerchantDirectory is what the registry searches: listed merchants, sorted by slug.
type MerchantDirectory interface {
	ListedMerchants() []Merchant
}
