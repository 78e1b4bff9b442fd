package supplyplan

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Record kinds of the MCP surfaces (platform state).
const (
	KindMerchant   = "merchant"
	KindToolKey    = "toolkey"
	KindGatewayKey = "gatewaykey"
)

func init() {
	RegisterKind(KindMerchant, func() any { return new(MerchantProfile) })
	RegisterKind(KindToolKey, func() any { return new(APIKey) })
	RegisterKind(KindGatewayKey, func() any { return new(APIKey) })
}

// MCP is the part of the platform state that serves the registry and the tool service: merchant
// profiles, tool keys (per organization) and gateway keys (registry callers, embedded mode).
type MCP struct {
	Merchants   map[string]*MerchantProfile `json:"merchants,omitempty"`
	ToolKeys    map[string]*APIKey          `json:"toolKeys,omitempty"`
	GatewayKeys map[string]*APIKey          `json:"gatewayKeys,omitempty"`
}

func newMCP() MCP {
	return MCP{Merchants: map[string]*MerchantProfile{}, ToolKeys: map[string]*APIKey{}, GatewayKeys: map[string]*APIKey{}}
}

// applyMCP applies the MCP record kinds; handled is false for any other kind.
func (s *PlatformState) applyMCP(r Record) (handled bool, err error) {
	if s.Merchants == nil { // a snapshot written before these maps existed
		m := newMCP()
		s.Merchants, s.ToolKeys, s.GatewayKeys = m.Merchants, m.ToolKeys, m.GatewayKeys
	}
	switch r.Kind {
	case KindMerchant:
		return true, putValue(s.Merchants, r)
	case KindToolKey:
		return true, putValue(s.ToolKeys, r)
	case KindGatewayKey:
		return true, putValue(s.GatewayKeys, r)
	}
	return false, nil
}

// MerchantProfile is how an organization presents itself in the registry. Only a listed profile is
// discoverable.
type MerchantProfile struct {
	OrganizationID string    `json:"organizationId"`
	Listed         bool      `json:"listed"`
	DisplayName    string    `json:"displayName"`
	Description    string    `json:"description"`
	Categories     []string  `json:"categories"`
	Region         string    `json:"region,omitempty"`
	Website        string    `json:"website,omitempty"`
	WebhookURL     string    `json:"webhookUrl,omitempty"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

// MerchantInput is the body of PUT /api/platform/organizations/[id]/merchant.
type MerchantInput struct {
	Listed      *bool     `json:"listed"`
	DisplayName *string   `json:"displayName"`
	Description *string   `json:"description"`
	Categories  *[]string `json:"categories"`
	Region      *string   `json:"region"`
	Website     *string   `json:"website"`
	WebhookURL  *string   `json:"webhookUrl"`
}

// Limits of merchant profiles.
const (
	MaxDisplayName  = 100
	MaxDescription  = 1000
	MaxCategories   = 20
	MaxCategoryLen  = 50
	MaxRegionLen    = 50
	MaxURLLen       = 2048
	merchantOutType = "merchant.updated"
)

// Validate checks a profile body. Listed and displayName are required; the rest is optional.
func (in MerchantInput) Validate() error {
	fe := FieldErrors{}
	if in.Listed == nil {
		fe.Add("listed", "is required (true or false)")
	}
	if in.DisplayName == nil || strings.TrimSpace(*in.DisplayName) == "" {
		fe.Add("displayName", "is required")
	} else if len([]rune(*in.DisplayName)) > MaxDisplayName {
		fe.Add("displayName", "must be at most %d characters", MaxDisplayName)
	}
	if in.Description != nil && len([]rune(*in.Description)) > MaxDescription {
		fe.Add("description", "must be at most %d characters", MaxDescription)
	}
	if in.Categories != nil {
		if len(*in.Categories) > MaxCategories {
			fe.Add("categories", "must have at most %d items", MaxCategories)
		}
		for _, c := range *in.Categories {
			c = strings.TrimSpace(c)
			if c == "" || len([]rune(c)) > MaxCategoryLen {
				fe.Add("categories", "items must be non-empty strings of at most %d characters", MaxCategoryLen)
				break
			}
		}
	}
	if in.Region != nil && len([]rune(*in.Region)) > MaxRegionLen {
		fe.Add("region", "must be at most %d characters", MaxRegionLen)
	}
	validateURL(fe, "website", in.Website)
	validateURL(fe, "webhookUrl", in.WebhookURL)
	return fe.Err()
}

// validateURL checks an optional URL field with the rule every outbound destination uses
// (CheckHTTPURL); whether a webhookUrl is reachable is checked where DNS can be asked (the
// outbound sender), like alert destinations and webhook endpoints.
func validateURL(fe FieldErrors, field string, v *string) {
	if v == nil || *v == "" {
		return
	}
	if msg := CheckHTTPURL(*v); msg != "" {
		fe.Add(field, "%s", msg)
	}
}

// normalizeCategories lowercases, trims and deduplicates categories.
func normalizeCategories(in []string) []string {
	out := make([]string, 0, len(in))
	for _, c := range in {
		c = strings.ToLower(strings.TrimSpace(c))
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// SetMerchant validates in and returns the new profile, its record and, when the profile changed
// and has a webhook URL, a merchant.updated event in the platform outbox (same journal entry: the
// outbound relay turns it into a signed delivery to that URL, see MerchantEventURL).
func (s *PlatformState) SetMerchant(orgID string, in MerchantInput, now time.Time) (MerchantProfile, []Record, error) {
	org, ok := s.Orgs[orgID]
	if !ok {
		return MerchantProfile{}, nil, NotFound("Organization")
	}
	if err := in.Validate(); err != nil {
		return MerchantProfile{}, nil, err
	}
	p := MerchantProfile{OrganizationID: orgID, Listed: *in.Listed, DisplayName: strings.TrimSpace(*in.DisplayName),
		Categories: []string{}, UpdatedAt: now}
	if in.Description != nil {
		p.Description = strings.TrimSpace(*in.Description)
	}
	if in.Categories != nil {
		p.Categories = normalizeCategories(*in.Categories)
	}
	if in.Region != nil {
		p.Region = strings.TrimSpace(*in.Region)
	}
	if in.Website != nil {
		p.Website = *in.Website
	}
	if in.WebhookURL != nil {
		p.WebhookURL = *in.WebhookURL
	}
	if cur, ok := s.Merchants[orgID]; ok && sameProfile(*cur, p) {
		return *cur, nil, nil // unchanged: no write, no event
	}
	recs := []Record{Put(KindMerchant, orgID, &p)}
	if p.WebhookURL != "" {
		recs = append(recs, EventRecord(merchantUpdatedEvent(*org, p, now)))
	}
	return p, recs, nil
}

func sameProfile(a, b MerchantProfile) bool {
	a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// merchantUpdatedEvent builds the merchant.updated federation event, owned by the platform. Its
// data is the public view of the merchant plus the webhook URL it is delivered to.
func merchantUpdatedEvent(org Organization, p MerchantProfile, now time.Time) DomainEvent {
	caps := org.Capabilities
	if caps == nil {
		caps = []string{}
	}
	return DomainEvent{ID: NewID("evt"), Type: EventMerchantUpdated, OrganizationID: PlatformOwner, Timestamp: now,
		Data: map[string]any{
			"organizationId": org.ID, "slug": org.Slug, "listed": p.Listed, "displayName": p.DisplayName,
			"description": p.Description, "categories": p.Categories, "region": p.Region, "website": p.Website,
			"capabilities": caps, "updatedAt": p.UpdatedAt, "webhookUrl": p.WebhookURL,
		}}
}

// MerchantEventURL returns the webhook URL a merchant.updated event is delivered to ("" for any
// other event).
func MerchantEventURL(e DomainEvent) string {
	if e.Type != EventMerchantUpdated {
		return ""
	}
	switch d := e.Data.(type) {
	case map[string]any:
		u, _ := d["webhookUrl"].(string)
		return u
	}
	b, err := json.Marshal(e.Data)
	if err != nil {
		return ""
	}
	var v struct {
		WebhookURL string `json:"webhookUrl"`
	}
	_ = json.Unmarshal(b, &v)
	return v.WebhookURL
}

// Merchant is a listed organization with its profile: what the registry shows.
type Merchant struct {
	Org     Organization
	Profile MerchantProfile
	// SearchText is the lowercase text search_merchants matches words against (filled by
	// ListedMerchants; computed on the fly when empty).
	SearchText string
}

func merchantSearchText(m Merchant) string {
	return strings.ToLower(strings.Join(append([]string{m.Org.Slug, m.Org.Name, m.Profile.DisplayName,
		m.Profile.Description, m.Profile.Region}, m.Profile.Categories...), " "))
}

// MerchantQuery filters search_merchants. Cursor is the opaque value of a previous page.
type MerchantQuery struct {
	Query      string
	Category   string
	Capability string
	Region     string
	Limit      int
	Cursor     string
}

// Merchant search limits.
const (
	DefaultMerchantPage = 20
	MaxMerchantPage     = 100
)

// SearchMerchants filters merchants (already listed and sorted by slug) and returns one page in
// slug order with the cursor of the next page ("" on the last page). The cursor is the base64 of
// the last slug returned, so pages stay stable when merchants are added or removed.
func SearchMerchants(all []Merchant, q MerchantQuery) ([]Merchant, string, error) {
	idx, next, err := SearchMerchantIndexes(all, q)
	if err != nil {
		return nil, "", err
	}
	out := make([]Merchant, len(idx))
	for i, j := range idx {
		out[i] = all[j]
	}
	return out, next, nil
}

// SearchMerchantIndexes is SearchMerchants returning positions in all (no copies).
func SearchMerchantIndexes(all []Merchant, q MerchantQuery) ([]int, string, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultMerchantPage
	}
	if limit > MaxMerchantPage {
		limit = MaxMerchantPage
	}
	after := ""
	if q.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || !strings.HasPrefix(string(b), "m1:") {
			return nil, "", Invalid("cursor", "is not a cursor returned by search_merchants")
		}
		after = strings.TrimPrefix(string(b), "m1:")
	}
	words := strings.Fields(strings.ToLower(q.Query))
	category := strings.ToLower(strings.TrimSpace(q.Category))
	region := strings.ToLower(strings.TrimSpace(q.Region))
	out := make([]int, 0, min(limit, len(all)))
	next := ""
	for i := range all {
		m := &all[i]
		if after != "" && m.Org.Slug <= after {
			continue
		}
		if category != "" && !slices.Contains(m.Profile.Categories, category) {
			continue
		}
		if q.Capability != "" && !slices.Contains(m.Org.Capabilities, q.Capability) {
			continue
		}
		if region != "" && !strings.EqualFold(m.Profile.Region, region) {
			continue
		}
		if len(words) > 0 {
			text := m.SearchText
			if text == "" {
				text = merchantSearchText(*m)
			}
			if !allWords(text, words) {
				continue
			}
		}
		if len(out) == limit {
			next = base64.RawURLEncoding.EncodeToString([]byte("m1:" + all[out[len(out)-1]].Org.Slug))
			break
		}
		out = append(out, i)
	}
	return out, next, nil
}

func allWords(text string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// ListedMerchants returns the listed merchants sorted by slug.
func (s *PlatformState) ListedMerchants() []Merchant {
	out := []Merchant{}
	for id, p := range s.Merchants {
		if o, ok := s.Orgs[id]; ok && p.Listed {
			m := Merchant{Org: *o, Profile: *p}
			m.SearchText = merchantSearchText(m)
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b Merchant) int { return cmp.Compare(a.Org.Slug, b.Org.Slug) })
	return out
}
