package supplyplan

import (
	"context"
	"slices"
)

// LoopRunCaller is the verified caller of the loop runtime: its organization, who it is (for the
// audit), the manifest roles it acts as, and the request's identifiers.
type LoopRunCaller struct {
	OrgID string
	Actor LoopActor
	// Roles are the manifest roles the caller may fire transitions as (LoopRolesOf).
	Roles          []string
	RequestID      string
	IdempotencyKey string
	// Fingerprint identifies the request for its Idempotency-Key (method, path, body).
	Fingerprint string
}

// Meta is the caller's request identity for the audit.
func (c LoopRunCaller) Meta() LoopRequestMeta {
	return LoopRequestMeta{Actor: c.Actor, RequestID: c.RequestID, IdempotencyKey: c.IdempotencyKey, Fingerprint: c.Fingerprint}
}

// LoopRolesOf maps a token's scopes to the manifest roles it may fire transitions as:
// loops:admin acts as ADMIN, MANAGER and PLANNER; loops:write as PLANNER; loops:read as VIEWER
// (which reads only).
func LoopRolesOf(admin, write bool) []string {
	switch {
	case admin:
		return []string{string(RoleAdmin), string(RoleManager), string(RolePlanner)}
	case write:
		return []string{string(RolePlanner)}
	}
	return []string{string(RoleViewer)}
}

// LoopCanFire reports whether roles include one that transitions may be fired as.
func LoopCanFire(roles []string) bool {
	return slices.ContainsFunc(roles, func(r string) bool { return r != string(RoleViewer) })
}

// LoopRuntimeService is the loop runtime the transports call (docs/loop-runtime-api.md). Every
// method runs in the caller's organization: another organization's instance is not found. Writes
// return once they are durable.
type LoopRuntimeService interface {
	// StartInstance starts an instance bound to the resolved definition's digest (Created false:
	// USE_EXISTING returned the open one; Replay set: an Idempotency-Key's stored response).
	StartInstance(ctx context.Context, c LoopRunCaller, in LoopStartInput) (LoopResult, error)
	ListInstances(ctx context.Context, orgID string, f LoopInstanceFilter) (Page[LoopInstance], error)
	GetInstance(ctx context.Context, orgID, id string) (LoopInstance, error)
	// Transition fires a transition of the instance's loop.
	Transition(ctx context.Context, c LoopRunCaller, id string, in LoopTransitionInput) (LoopResult, error)
	// Lifecycle cancels, terminates, suspends or resumes an instance (LoopAction...).
	Lifecycle(ctx context.Context, c LoopRunCaller, id, action string, in LoopLifecycleInput) (LoopResult, error)
	// BulkCancel cancels the open instances a filter selects (or counts them, dry run).
	BulkCancel(ctx context.Context, c LoopRunCaller, in LoopBulkCancelInput) (LoopBulkCancelResult, *LoopIdem, error)
	// Events lists an instance's audit events after afterSeq.
	Events(ctx context.Context, orgID, id string, afterSeq int64, limit int) ([]LoopEvent, error)
	// VerifyAudit recomputes an instance's hash chain.
	VerifyAudit(ctx context.Context, orgID, id string) (LoopAuditVerification, error)
	// Organization resolves the token's organization claim (an id or a slug).
	Organization(ref string) (Organization, bool)
}
