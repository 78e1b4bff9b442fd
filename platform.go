package supplyplan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Record kinds of platform state.
const (
	KindOrganization = "org"
	KindAPIKey       = "apikey"
	KindGlobalEvent  = "globalevent"
)

func init() {
	RegisterKind(KindOrganization, func() any { return new(Organization) })
	RegisterKind(KindAPIKey, func() any { return new(APIKey) })
	RegisterKind(KindGlobalEvent, func() any { return new(ExternalEvent) })
}

// PlatformState holds organizations, keys and platform-wide (global) events. Owned by the platform
// actor; readers elsewhere use the copy-on-write index the actor publishes.
type PlatformState struct {
	Orgs         map[string]*Organization  `json:"orgs"`
	Keys         map[string]*APIKey        `json:"keys"`
	GlobalEvents map[string]*ExternalEvent `json:"globalEvents"`
	BillingState
	MCP
}

// NewPlatformState returns an empty platform state.
func NewPlatformState() *PlatformState {
	return &PlatformState{Orgs: map[string]*Organization{}, Keys: map[string]*APIKey{},
		GlobalEvents: map[string]*ExternalEvent{}, MCP: newMCP()}
}

// Apply applies one record.
func (s *PlatformState) Apply(r Record) error {
	switch r.Kind {
	case KindOrganization:
		if r.Del {
			delete(s.Orgs, r.ID)
			return nil
		}
		v, ok := r.Value.(*Organization)
		if !ok {
			return fmt.Errorf("org record %s has value %T", r.ID, r.Value)
		}
		s.Orgs[r.ID] = v
	case KindAPIKey:
		if r.Del {
			delete(s.Keys, r.ID)
			return nil
		}
		v, ok := r.Value.(*APIKey)
		if !ok {
			return fmt.Errorf("apikey record %s has value %T", r.ID, r.Value)
		}
		s.Keys[r.ID] = v
	case KindGlobalEvent:
		if r.Del {
			delete(s.GlobalEvents, r.ID)
			return nil
		}
		v, ok := r.Value.(*ExternalEvent)
		if !ok {
			return fmt.Errorf("global event record %s has value %T", r.ID, r.Value)
		}
		s.GlobalEvents[r.ID] = v
	default:
		if handled, err := s.applyBilling(r); handled {
			return err
		}
		if handled, err := s.applyMCP(r); handled {
			return err
		}
		return fmt.Errorf("platform state: unknown record kind %q", r.Kind)
	}
	return nil
}

// OrgBySlugOrID finds an organization by id or slug.
func (s *PlatformState) OrgBySlugOrID(ref string) (*Organization, bool) {
	if o, ok := s.Orgs[ref]; ok {
		return o, true
	}
	for _, o := range s.Orgs {
		if o.Slug == ref {
			return o, true
		}
	}
	return nil, false
}

// ListOrgs returns every organization, oldest first.
func (s *PlatformState) ListOrgs() []Organization {
	out := make([]Organization, 0, len(s.Orgs))
	for _, o := range s.Orgs {
		out = append(out, *o)
	}
	slices.SortFunc(out, func(a, b Organization) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// CreateOrg validates in and returns the new organization and its records.
func (s *PlatformState) CreateOrg(in OrganizationInput, now time.Time) (Organization, []Record, error) {
	if err := in.Validate(); err != nil {
		return Organization{}, nil, err
	}
	if _, taken := s.OrgBySlugOrID(*in.Slug); taken {
		return Organization{}, nil, Invalid("slug", "is already taken")
	}
	o := Organization{ID: NewID("org"), Slug: *in.Slug, Name: strings.TrimSpace(*in.Name),
		Entitlements: []string{}, Capabilities: []string{}, CreatedAt: now, UpdatedAt: now}
	if in.Plan != nil {
		o.Plan = *in.Plan
	}
	if in.Entitlements != nil {
		o.Entitlements = Dedup(*in.Entitlements)
	}
	if in.Capabilities != nil {
		o.Capabilities = Dedup(*in.Capabilities)
	}
	return o, []Record{Put(KindOrganization, o.ID, &o)}, nil
}

// SetEntitlements replaces an organization's entitlements.
func (s *PlatformState) SetEntitlements(orgID string, ents []string, now time.Time) (Organization, []Record, error) {
	cur, ok := s.Orgs[orgID]
	if !ok {
		return Organization{}, nil, NotFound("Organization")
	}
	fe := FieldErrors{}
	validateNames(fe, "entitlements", ents)
	if err := fe.Err(); err != nil {
		return Organization{}, nil, err
	}
	o := *cur
	o.Entitlements = Dedup(ents)
	o.UpdatedAt = now
	return o, []Record{Put(KindOrganization, o.ID, &o)}, nil
}

// CreateKey validates in and returns the new key record (with the secret's hash) and the secret.
func (s *PlatformState) CreateKey(orgID string, in APIKeyInput, now time.Time) (APIKey, string, []Record, error) {
	if _, ok := s.Orgs[orgID]; !ok {
		return APIKey{}, "", nil, NotFound("Organization")
	}
	if err := in.Validate(); err != nil {
		return APIKey{}, "", nil, err
	}
	kind := "live"
	k := APIKey{ID: NewID("key"), OrganizationID: orgID, CreatedAt: now}
	if in.Role != nil {
		k.Role = Role(*in.Role)
	} else {
		kind = "imp"
		for _, sc := range Dedup(*in.Scopes) {
			k.Scopes = append(k.Scopes, Scope(sc))
		}
	}
	if in.Name != nil {
		k.Name = *in.Name
	}
	secret, prefix := NewKeySecret(kind)
	k.Prefix, k.Hash = prefix, HashKey(secret)
	return k, secret, []Record{Put(KindAPIKey, k.ID, &k)}, nil
}

// RevokeKey marks a key of orgID revoked.
func (s *PlatformState) RevokeKey(orgID, keyID string, now time.Time) (APIKey, []Record, error) {
	cur, ok := s.Keys[keyID]
	if !ok || cur.OrganizationID != orgID {
		return APIKey{}, nil, NotFound("API key")
	}
	if cur.RevokedAt != nil {
		return *cur, nil, nil
	}
	k := *cur
	k.RevokedAt = &now
	return k, []Record{Put(KindAPIKey, k.ID, &k)}, nil
}

// ListKeys returns the keys of an organization, oldest first.
func (s *PlatformState) ListKeys(orgID string) ([]APIKey, error) {
	if _, ok := s.Orgs[orgID]; !ok {
		return nil, NotFound("Organization")
	}
	out := []APIKey{}
	for _, k := range s.Keys {
		if k.OrganizationID == orgID {
			out = append(out, *k)
		}
	}
	slices.SortFunc(out, func(a, b APIKey) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// CreateGlobalEvent validates in and returns a platform-wide event visible to every tenant.
func (s *PlatformState) CreateGlobalEvent(in EventInput, now time.Time) (ExternalEvent, []Record, error) {
	starts, ends, err := in.Validate(true, true)
	if err != nil {
		return ExternalEvent{}, nil, err
	}
	e, err := NewEvent(NewID("gev"), in, starts, ends, true, now)
	if err != nil {
		return ExternalEvent{}, nil, err
	}
	return e, []Record{Put(KindGlobalEvent, e.ID, &e)}, nil
}

// DeleteGlobalEvent removes a global event.
func (s *PlatformState) DeleteGlobalEvent(id string) ([]Record, error) {
	if _, ok := s.GlobalEvents[id]; !ok {
		return nil, NotFound("Event")
	}
	return []Record{Del(KindGlobalEvent, id)}, nil
}

// ListGlobalEvents returns every global event by start.
func (s *PlatformState) ListGlobalEvents() []ExternalEvent {
	out := make([]ExternalEvent, 0, len(s.GlobalEvents))
	for _, e := range s.GlobalEvents {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b ExternalEvent) int { return a.StartsAt.Compare(b.StartsAt) })
	return out
}

// Credentials is the content of <data>/credentials.json written on first start.
type Credentials struct {
	Organization struct {
		ID   string `json:"id"`
		Slug string `json:"slug"`
	} `json:"organization"`
	Keys map[string]string `json:"keys"`
}

// DemoSlug is the slug of the organization created on an empty data dir.
const DemoSlug = "demo"

// Bootstrap returns the records that create the demo organization with one key per role, an import
// key and the platform key, and the credentials that reveal the secrets.
func (s *PlatformState) Bootstrap(now time.Time) (Credentials, []Record) {
	var creds Credentials
	creds.Keys = map[string]string{}
	org := Organization{ID: NewID("org"), Slug: DemoSlug, Name: "Demo", Plan: "demo",
		Entitlements: []string{EntitlementForecasting}, Capabilities: slices.Clone(DemoCapabilities), CreatedAt: now, UpdatedAt: now}
	creds.Organization.ID, creds.Organization.Slug = org.ID, org.Slug
	recs := []Record{Put(KindOrganization, org.ID, &org)}
	add := func(name string, k APIKey, kind string) {
		secret, prefix := NewKeySecret(kind)
		k.ID, k.Name, k.Prefix, k.Hash, k.CreatedAt = NewID("key"), name, prefix, HashKey(secret), now
		creds.Keys[name] = secret
		recs = append(recs, Put(KindAPIKey, k.ID, &k))
	}
	for _, r := range Roles {
		add(string(r), APIKey{OrganizationID: org.ID, Role: r}, "live")
	}
	add("import", APIKey{OrganizationID: org.ID, Scopes: []Scope{ScopeImportRead, ScopeImportWrite}}, "imp")
	add("platform", APIKey{Platform: true}, "platform")
	// The demo merchant profile, tool key and gateway key (EnsureDemoMCP adds them to older data dirs).
	mcpCreds, mcpRecs := s.demoMCP(org, now, true)
	for k, v := range mcpCreds {
		creds.Keys[k] = v
	}
	recs = append(recs, mcpRecs...)
	return creds, recs
}
