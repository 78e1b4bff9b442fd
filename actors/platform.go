package actors

import (
	"context"
	"slices"

	"github.com/supplyplan/supplyplan"
)

// Platform is the platform service: organizations, their API keys and the global events, kept by
// the platform actor, and the authentication of every request from the index it publishes.
type Platform struct {
	core      *Core
	forecasts *Forecasts // global events invalidate every tenant's forecasts (nil: none kept)
}

// NewPlatform returns the platform service.
func NewPlatform(core *Core, forecasts *Forecasts) *Platform {
	return &Platform{core: core, forecasts: forecasts}
}

var (
	_ supplyplan.Authenticator   = (*Platform)(nil)
	_ supplyplan.PlatformService = (*Platform)(nil)
)

// globalEventsChanged drops what was derived from the global events.
func (s *Platform) globalEventsChanged() {
	if s.forecasts != nil {
		s.forecasts.globalEventsChanged()
	}
}

// Authenticate resolves a key secret to its principal.
func (s *Platform) Authenticate(secret string) (supplyplan.Principal, bool) {
	ix := s.core.index.Load()
	var buf [2 * 32]byte
	k, ok := ix.byHash[string(supplyplan.AppendKeyHash(buf[:0], secret))] // no string is made for the lookup
	if !ok {
		return supplyplan.Principal{}, false
	}
	if !k.Platform {
		if _, ok := ix.orgs[k.OrganizationID]; !ok {
			return supplyplan.Principal{}, false
		}
	}
	return supplyplan.Principal{KeyID: k.ID, OrgID: k.OrganizationID, Role: k.Role,
		Scopes: slices.Clone(k.Scopes), Platform: k.Platform}, true
}

// AuthVersion numbers the platform index Authenticate reads: a new number after every change of
// the platform's state. A number rather than the index itself, so that a caller keeping it (an
// idle connection) does not keep an old index alive.
func (s *Platform) AuthVersion() uint64 { return s.core.index.Load().gen }

// Organization returns an organization by id.
func (s *Platform) Organization(id string) (supplyplan.Organization, bool) {
	o, ok := s.core.index.Load().orgs[id]
	return o, ok
}

// Bootstrap creates the demo organization and its keys when the platform has no organization yet.
// writeCreds runs before the records are journaled, so a crash leaves either nothing (and the next
// start bootstraps again) or both. It returns false when the platform was not empty.
func (s *Platform) Bootstrap(ctx context.Context, writeCreds func(supplyplan.Credentials) error) (bool, error) {
	created, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (bool, []supplyplan.Record, error) {
		if len(st.Orgs) > 0 {
			return false, nil, nil
		}
		creds, recs := st.Bootstrap(supplyplan.Now())
		if err := writeCreds(creds); err != nil {
			return false, nil, err
		}
		return true, recs, nil
	})
	if err != nil || !created {
		return created, err
	}
	return true, s.core.startTenants()
}

// CreateOrganization creates a tenant and starts its actor.
func (s *Platform) CreateOrganization(ctx context.Context, in supplyplan.OrganizationInput) (supplyplan.Organization, error) {
	now := supplyplan.Now()
	o, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (supplyplan.Organization, []supplyplan.Record, error) {
		return st.CreateOrg(in, now)
	})
	if err != nil {
		return o, err
	}
	if _, err = s.core.tenant(o.ID); err != nil && s.core.cfg.Gate != nil && notServedHere(err) {
		err = nil // distributed: the organization's actor starts on the owner of its partition
	}
	return o, err
}

// ListOrganizations lists every organization.
func (s *Platform) ListOrganizations(ctx context.Context) ([]supplyplan.Organization, error) {
	return platformTx(ctx, s.core, func(st *supplyplan.PlatformState) ([]supplyplan.Organization, []supplyplan.Record, error) {
		return st.ListOrgs(), nil, nil
	})
}

// GetOrganization returns one organization.
func (s *Platform) GetOrganization(ctx context.Context, id string) (supplyplan.Organization, error) {
	return platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (supplyplan.Organization, []supplyplan.Record, error) {
		o, ok := st.Orgs[id]
		if !ok {
			return supplyplan.Organization{}, nil, supplyplan.NotFound("Organization")
		}
		return *o, nil, nil
	})
}

// SetEntitlements replaces an organization's entitlements.
func (s *Platform) SetEntitlements(ctx context.Context, orgID string, ents []string) (supplyplan.Organization, error) {
	now := supplyplan.Now()
	return platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (supplyplan.Organization, []supplyplan.Record, error) {
		return st.SetEntitlements(orgID, ents, now)
	})
}

type createdKey struct {
	key    supplyplan.APIKey
	secret string
}

// CreateAPIKey creates a key and returns it with its secret (shown once).
func (s *Platform) CreateAPIKey(ctx context.Context, orgID string, in supplyplan.APIKeyInput) (supplyplan.APIKey, string, error) {
	now := supplyplan.Now()
	ck, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (createdKey, []supplyplan.Record, error) {
		k, secret, recs, err := st.CreateKey(orgID, in, now)
		return createdKey{k, secret}, recs, err
	})
	return ck.key, ck.secret, err
}

// ListAPIKeys lists the keys of an organization (without secrets).
func (s *Platform) ListAPIKeys(ctx context.Context, orgID string) ([]supplyplan.APIKey, error) {
	return platformTx(ctx, s.core, func(st *supplyplan.PlatformState) ([]supplyplan.APIKey, []supplyplan.Record, error) {
		keys, err := st.ListKeys(orgID)
		return keys, nil, err
	})
}

// RevokeAPIKey revokes a key; it answers 401 from the moment this returns.
func (s *Platform) RevokeAPIKey(ctx context.Context, orgID, keyID string) error {
	now := supplyplan.Now()
	_, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (supplyplan.APIKey, []supplyplan.Record, error) {
		return st.RevokeKey(orgID, keyID, now)
	})
	return err
}

// CreateGlobalEvent creates an event every tenant sees.
func (s *Platform) CreateGlobalEvent(ctx context.Context, in supplyplan.EventInput) (supplyplan.ExternalEvent, error) {
	now := supplyplan.Now()
	e, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (supplyplan.ExternalEvent, []supplyplan.Record, error) {
		return st.CreateGlobalEvent(in, now)
	})
	if err == nil {
		s.globalEventsChanged()
	}
	return e, err
}

// ListGlobalEvents lists the global events.
func (s *Platform) ListGlobalEvents(ctx context.Context) ([]supplyplan.ExternalEvent, error) {
	return platformTx(ctx, s.core, func(st *supplyplan.PlatformState) ([]supplyplan.ExternalEvent, []supplyplan.Record, error) {
		return st.ListGlobalEvents(), nil, nil
	})
}

// DeleteGlobalEvent removes a global event.
func (s *Platform) DeleteGlobalEvent(ctx context.Context, id string) error {
	_, err := platformTx(ctx, s.core, func(st *supplyplan.PlatformState) (struct{}, []supplyplan.Record, error) {
		recs, err := st.DeleteGlobalEvent(id)
		return struct{}{}, recs, err
	})
	if err == nil {
		s.globalEventsChanged()
	}
	return err
}
