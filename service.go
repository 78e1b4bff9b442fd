package supplyplan

import "context"

// Authenticator resolves key secrets and organizations. It answers from memory and never blocks.
type Authenticator interface {
	// Authenticate returns the principal of a live key secret.
	Authenticate(secret string) (Principal, bool)
	// Organization returns an organization by id.
	Organization(id string) (Organization, bool)
}

// AuthVersioner is an Authenticator whose answers hold while AuthVersion returns the same value
// (no key or organization changed since): a caller may keep a secret's principal until then.
type AuthVersioner interface {
	AuthVersion() uint64
}

// PlatformService manages organizations, keys and global events (platform key only).
type PlatformService interface {
	CreateOrganization(ctx context.Context, in OrganizationInput) (Organization, error)
	ListOrganizations(ctx context.Context) ([]Organization, error)
	GetOrganization(ctx context.Context, id string) (Organization, error)
	SetEntitlements(ctx context.Context, orgID string, entitlements []string) (Organization, error)
	CreateAPIKey(ctx context.Context, orgID string, in APIKeyInput) (APIKey, string, error)
	ListAPIKeys(ctx context.Context, orgID string) ([]APIKey, error)
	RevokeAPIKey(ctx context.Context, orgID, keyID string) error
	CreateGlobalEvent(ctx context.Context, in EventInput) (ExternalEvent, error)
	ListGlobalEvents(ctx context.Context) ([]ExternalEvent, error)
	DeleteGlobalEvent(ctx context.Context, id string) error
}

// ForecastingService manages a tenant's scenarios and external events.
type ForecastingService interface {
	ListScenarios(ctx context.Context, p Principal, f ScenarioFilter) ([]Scenario, error)
	CreateScenario(ctx context.Context, p Principal, in ScenarioInput) (Scenario, error)
	GetScenario(ctx context.Context, p Principal, id string) (Scenario, error)
	UpdateScenario(ctx context.Context, p Principal, id string, in ScenarioInput) (Scenario, error)
	ArchiveScenario(ctx context.Context, p Principal, id string) (Scenario, error)
	PublishScenario(ctx context.Context, p Principal, id string) (Scenario, error)

	ListEvents(ctx context.Context, p Principal, f EventFilter) ([]ExternalEvent, error)
	CreateEvent(ctx context.Context, p Principal, in EventInput) (ExternalEvent, error)
	GetEvent(ctx context.Context, p Principal, id string) (ExternalEvent, error)
	UpdateEvent(ctx context.Context, p Principal, id string, in EventInput) (ExternalEvent, error)
	DeleteEvent(ctx context.Context, p Principal, id string) error
}
