package supplyplan

// Who may do what in the loop catalog. Every organization reads its own loops and the global
// ones; ADMIN keys of an organization publish and manage its loops; the platform key publishes
// and manages global loops. Another organization's loop answers 404, never 403, so names do not
// leak across tenants.

// LoopCaller is the caller of the catalog, resolved from its key.
type LoopCaller struct {
	// OrgSlug is the caller's organization (the scope of its private loops); empty for the
	// platform key.
	OrgSlug  string
	Role     Role
	Platform bool
}

// ReadableScopes are the scopes whose loops the caller lists: its own and the global one.
func (c LoopCaller) ReadableScopes() []string {
	if c.Platform || c.OrgSlug == "" {
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
	case scope != c.OrgSlug || c.OrgSlug == "":
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
	case scope != c.OrgSlug || c.OrgSlug == "":
		return NotFound("Loop")
	case c.Role != RoleAdmin:
		return Errorf(EFORBIDDEN, "Publishing and managing loops needs an ADMIN key")
	}
	return nil
}
