package supplyplan

// Who may do what in the loop catalog. Every organization reads its own loops and the global
// ones; ADMIN keys of an organization publish and manage its loops; the platform key publishes
// and manages global loops. Another organization's loop answers 404, never 403, so names do not
// leak across tenants.

// LoopCaller is the caller of the catalog, resolved from its key.
type LoopCaller struct {
	// OrgID and OrgSlug are the caller's organization (the slug is the scope of its private
	// loops); empty for the platform key.
	OrgID   string
	OrgSlug string
	Role    Role
	// KeyID is the caller's key, recorded as the actor of its changes.
	KeyID    string
	Platform bool
}

// LoopCallerOf is the catalog's caller for an authenticated key: the platform key, or a role key
// of org.
func LoopCallerOf(p Principal, org Organization) LoopCaller {
	if p.Platform {
		return LoopCaller{Platform: true, KeyID: p.KeyID}
	}
	return LoopCaller{OrgID: org.ID, OrgSlug: org.Slug, Role: p.Role, KeyID: p.KeyID}
}

// Actor names the caller in audit entries and as a version's publisher.
func (c LoopCaller) Actor() string {
	if c.Platform {
		return "platform:apikey:" + c.KeyID
	}
	return "apikey:" + c.KeyID
}

// hasPrivateScope reports whether the caller has loops of its own: an organization whose slug is
// not the global scope (the slug is reserved; an organization created with it before it was has
// no private loops).
func (c LoopCaller) hasPrivateScope() bool {
	return !c.Platform && c.OrgSlug != "" && c.OrgSlug != GlobalLoopScope
}

// ReadableScopes are the scopes whose loops the caller lists: its own and the global one.
func (c LoopCaller) ReadableScopes() []string {
	if !c.hasPrivateScope() {
		return []string{GlobalLoopScope}
	}
	return []string{c.OrgSlug, GlobalLoopScope}
}

// CheckRead decides whether the caller may read loops of scope.
func (c LoopCaller) CheckRead(scope string) error {
	switch {
	case scope == GlobalLoopScope:
		return nil
	case c.Platform:
		return Errorf(ETENANTREQUIRED, "Organization loops need an organization's key")
	case scope != c.OrgSlug || !c.hasPrivateScope():
		return NotFound("Loop")
	}
	return nil
}

// CheckWrite decides whether the caller may publish or manage loops of scope.
func (c LoopCaller) CheckWrite(scope string) error {
	switch {
	case scope == GlobalLoopScope && c.Platform:
		return nil
	case scope == GlobalLoopScope:
		return Errorf(EFORBIDDEN, "Only the platform key publishes and manages %s/... loops", GlobalLoopScope)
	case c.Platform:
		return Errorf(ETENANTREQUIRED, "Organization loops need an organization's key")
	case scope != c.OrgSlug || !c.hasPrivateScope():
		return NotFound("Loop")
	case c.Role != RoleAdmin:
		return Errorf(EFORBIDDEN, "Publishing and managing loops needs an ADMIN key")
	}
	return nil
}
