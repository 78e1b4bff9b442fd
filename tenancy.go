package supplyplan

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// Role is what a tenant API key may do.
type Role string

// Roles of tenant keys.
const (
	RoleAdmin   Role = "ADMIN"
	RoleManager Role = "MANAGER"
	RolePlanner Role = "PLANNER"
	RoleViewer  Role = "VIEWER"
)

// Roles lists every role in descending privilege.
var Roles = []Role{RoleAdmin, RoleManager, RolePlanner, RoleViewer}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return slices.Contains(Roles, r) }

// Permission names one capability checked by an endpoint.
type Permission string

// Permissions of the spec.
const (
	PermForecastRead     Permission = "forecast.read"
	PermForecastWrite    Permission = "forecast.write"
	PermTransfersRead    Permission = "transfers.read"
	PermTransfersWrite   Permission = "transfers.write"
	PermTransfersApprove Permission = "transfers.approve"
	PermTransfersExecute Permission = "transfers.execute"
	PermAlertsRead       Permission = "admin.alerts.read"
	PermAlertsWrite      Permission = "admin.alerts.write"
	PermWebhooksRead     Permission = "admin.webhooks.read"
	PermWebhooksWrite    Permission = "admin.webhooks.write"
	// Order allocation (docs/allocation.md): reads for every role; allocate, commit and dry runs
	// like transfers.write; runs that apply and repairs like transfers.approve.
	PermAllocationRead    Permission = "allocation.read"
	PermAllocationWrite   Permission = "allocation.write"
	PermAllocationApprove Permission = "allocation.approve"
)

var rolePermissions = map[Role][]Permission{
	RoleAdmin: {PermForecastRead, PermForecastWrite, PermTransfersRead, PermTransfersWrite,
		PermTransfersApprove, PermTransfersExecute, PermAlertsRead, PermAlertsWrite, PermWebhooksRead, PermWebhooksWrite,
		PermAllocationRead, PermAllocationWrite, PermAllocationApprove},
	RoleManager: {PermForecastRead, PermForecastWrite, PermTransfersRead, PermTransfersWrite,
		PermTransfersApprove, PermTransfersExecute, PermAllocationRead, PermAllocationWrite, PermAllocationApprove},
	RolePlanner: {PermForecastRead, PermForecastWrite, PermTransfersRead, PermTransfersWrite, PermAllocationRead, PermAllocationWrite},
	RoleViewer:  {PermForecastRead, PermTransfersRead, PermAllocationRead},
}

// Can reports whether role r holds permission p.
func (r Role) Can(p Permission) bool { return slices.Contains(rolePermissions[r], p) }

// Scope is a permission carried by an import key.
type Scope string

// Import key scopes.
const (
	ScopeImportRead  Scope = "import:read"
	ScopeImportWrite Scope = "import:write"
)

// Scopes lists every known scope.
var Scopes = []Scope{ScopeImportRead, ScopeImportWrite}

// EntitlementForecasting gates the forecasting endpoints.
const EntitlementForecasting = "ai.forecasting.demand"

// Capabilities of an organization gate the hosted tools (tools/): an organization's tools are those
// whose capability is in its capability set.
const (
	CapCatalog   = "commerce.catalog"   // search_products, get_product (public)
	CapInventory = "commerce.inventory" // check_availability, list_locations (public)
	CapOrders    = "commerce.orders"    // get_order_status
	CapForecast  = "planning.forecast"  // get_demand_forecast
	CapTransfers = "planning.transfers" // list_transfer_recommendations, explain_recommendation, approve_transfer_recommendation
)

// AllCapabilities lists every capability the tool service knows.
var AllCapabilities = []string{CapCatalog, CapInventory, CapOrders, CapForecast, CapTransfers}

// DemoCapabilities are given to the demo organization.
var DemoCapabilities = AllCapabilities

// Organization is a tenant.
type Organization struct {
	ID           string    `json:"id"`
	Slug         string    `json:"slug"`
	Name         string    `json:"name"`
	Plan         string    `json:"plan,omitempty"`
	Entitlements []string  `json:"entitlements"`
	Capabilities []string  `json:"capabilities"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// HasEntitlement reports whether the organization holds entitlement e.
func (o *Organization) HasEntitlement(e string) bool { return slices.Contains(o.Entitlements, e) }

// APIKey is a stored key. The secret itself is never stored, only its SHA-256.
type APIKey struct {
	ID             string     `json:"id"`
	OrganizationID string     `json:"organizationId,omitempty"`
	Name           string     `json:"name,omitempty"`
	Prefix         string     `json:"prefix"`
	Hash           string     `json:"hash"`
	Role           Role       `json:"role,omitempty"`
	Scopes         []Scope    `json:"scopes,omitempty"`
	Platform       bool       `json:"platform,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	RevokedAt      *time.Time `json:"revokedAt,omitempty"`
}

// HasScope reports whether the key carries scope s.
func (k *APIKey) HasScope(s Scope) bool { return slices.Contains(k.Scopes, s) }

// HashKey returns the stored form of a key secret.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// AppendKeyHash appends HashKey(secret) to dst: the lookup of every request's key hashes into a
// buffer on the stack rather than a new string.
func AppendKeyHash(dst []byte, secret string) []byte {
	// The secret's bytes, not a copy of them (the conversion escaped into the hash: an allocation
	// per request); Sum256 only reads them.
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(secret), len(secret)))
	return hex.AppendEncode(dst, sum[:])
}

// NewKeySecret returns a fresh key secret and its visible prefix.
func NewKeySecret(kind string) (secret, prefix string) {
	secret = "sp_" + kind + "_" + RandomToken(32)
	return secret, secret[:len("sp_"+kind+"_")+6]
}

// Principal is the caller resolved from a key: the spec's "session".
type Principal struct {
	KeyID    string
	OrgID    string
	Role     Role
	Scopes   []Scope
	Platform bool
}

// Actor names the caller in audit fields such as approvedBy.
func (p Principal) Actor() string { return "apikey:" + p.KeyID }

var slugRe = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// OrganizationInput is the body of organization creation.
type OrganizationInput struct {
	Name         *string   `json:"name" max:"200"`
	Slug         *string   `json:"slug" max:"200"`
	Plan         *string   `json:"plan" max:"200"`
	Entitlements *[]string `json:"entitlements" max:"200"`
	Capabilities *[]string `json:"capabilities" max:"200"`
}

// Validate checks a creation body.
func (in OrganizationInput) Validate() error {
	fe := FieldErrors{}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		fe.Add("name", "is required")
	} else if len(*in.Name) > 200 {
		fe.Add("name", "must be at most 200 characters")
	}
	if in.Slug == nil || *in.Slug == "" {
		fe.Add("slug", "is required")
	} else if !slugRe.MatchString(*in.Slug) {
		fe.Add("slug", "must be 1 to 63 lowercase letters, digits or hyphens, not starting or ending with a hyphen")
	} else if *in.Slug == GlobalLoopScope {
		fe.Add("slug", "%q is reserved: it is the scope of the loop catalog's global loops", GlobalLoopScope)
	}
	if in.Entitlements != nil {
		validateNames(fe, "entitlements", *in.Entitlements)
	}
	if in.Capabilities != nil {
		validateNames(fe, "capabilities", *in.Capabilities)
	}
	return fe.Err()
}

// validateNames checks a list of entitlement or capability names.
func validateNames(fe FieldErrors, field string, names []string) {
	if len(names) > 100 {
		fe.Add(field, "must have at most 100 items")
		return
	}
	for _, n := range names {
		if n == "" || len(n) > 100 || strings.ContainsAny(n, " \t\r\n") {
			fe.Add(field, "items must be non-empty names without spaces, at most 100 characters")
			return
		}
	}
}

// Dedup returns names without duplicates, in first-seen order, never nil.
func Dedup(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// APIKeyInput is the body of key creation: exactly one of Role or Scopes.
type APIKeyInput struct {
	Role   *string   `json:"role" max:"200"`
	Scopes *[]string `json:"scopes" max:"200"`
	Name   *string   `json:"name" max:"200"`
}

// Validate checks a key creation body.
func (in APIKeyInput) Validate() error {
	if err := CheckInput(in); err != nil {
		return err
	}
	fe := FieldErrors{}
	switch {
	case in.Role != nil && in.Scopes != nil:
		fe.Add("role", "give either role or scopes, not both")
	case in.Role == nil && in.Scopes == nil:
		fe.Add("role", "is required unless scopes are given")
	case in.Role != nil:
		if !Role(*in.Role).Valid() {
			fe.Add("role", "must be one of ADMIN, MANAGER, PLANNER, VIEWER")
		}
	default:
		if len(*in.Scopes) == 0 {
			fe.Add("scopes", "must not be empty")
		}
		for _, s := range *in.Scopes {
			if !slices.Contains(Scopes, Scope(s)) {
				fe.Add("scopes", "unknown scope %q (allowed: import:read, import:write)", s)
				break
			}
		}
	}
	if in.Name != nil && len(*in.Name) > 200 {
		fe.Add("name", "must be at most 200 characters")
	}
	return fe.Err()
}

// Authorize checks that a tenant principal holds permission perm.
func Authorize(p Principal, perm Permission) error {
	if p.Platform {
		return &Error{Code: ETENANTREQUIRED, Message: "Forbidden"}
	}
	if !p.Role.Can(perm) {
		return &Error{Code: EFORBIDDEN, Message: "Forbidden",
			Details: map[string][]string{"permission": {"requires " + string(perm)}}}
	}
	return nil
}

// RequireEntitlement checks that org holds entitlement ent for feature.
func RequireEntitlement(org *Organization, feature, ent string) error {
	if org == nil || !org.HasEntitlement(ent) {
		return &Error{Code: EFEATURE, Message: "Feature not enabled for this organization",
			Feature: feature, Entitlement: ent}
	}
	return nil
}
