package supplyplan

import (
	"context"
	"regexp"
)

// LoopCatalogService is the loop catalog the transports call: publishing, reading, resolving
// and the lifecycle of loop versions (docs/loops.md, docs/loop-catalog-api.md). Every method
// takes the caller resolved from its key and applies LoopCaller's access rules: another
// organization's loop is not found. Writes return once they are durable.
type LoopCatalogService interface {
	// PublishLoop publishes name@version (create-only; Created is false when the same content
	// was published already).
	PublishLoop(ctx context.Context, c LoopCaller, name, version string, manifest []byte) (LoopPublishResult, error)
	// ListLoops lists the loops the caller reads (its organization's and the global ones).
	ListLoops(ctx context.Context, c LoopCaller, f LoopFilter) (Page[LoopSummary], error)
	GetLoop(ctx context.Context, c LoopCaller, name string) (LoopDocument, error)
	GetLoopVersion(ctx context.Context, c LoopCaller, name, version string) (LoopVersion, error)
	// ResolveLoop picks the version of name a dist-tag or semver range designates.
	ResolveLoop(ctx context.Context, c LoopCaller, name, spec string, includePrerelease bool) (LoopResolution, error)
	// LoopBlob returns the canonical manifest stored under digest in a scope the caller reads,
	// and that scope.
	LoopBlob(ctx context.Context, c LoopCaller, digest string) (data []byte, scope string, err error)
	DistTags(ctx context.Context, c LoopCaller, name string) (map[string]string, error)
	SetDistTag(ctx context.Context, c LoopCaller, name, tag, version string) (map[string]string, error)
	RemoveDistTag(ctx context.Context, c LoopCaller, name, tag string) (map[string]string, error)
	DeprecateLoopVersion(ctx context.Context, c LoopCaller, name, version, message string) (LoopVersion, error)
	YankLoopVersion(ctx context.Context, c LoopCaller, name, version, reason string) (LoopVersion, error)
	UnyankLoopVersion(ctx context.Context, c LoopCaller, name, version string) (LoopVersion, error)
	// RemoveLoopVersion deletes a version (within LoopDeleteWindow, while no instance
	// references it).
	RemoveLoopVersion(ctx context.Context, c LoopCaller, name, version string) (LoopVersion, error)
	LoopAudit(ctx context.Context, c LoopCaller, name string, limit, offset int) (Page[LoopAuditEntry], error)
	// LoopKeys is the catalog's public key set (the signing key and the retired ones).
	LoopKeys() JWKS
}

// LoopReferences tells the catalog whether loop instances reference a version, so that a
// referenced version is never deleted. The loop runtime implements it. It is asked inside the
// catalog's actor, which serializes it with the removal: it must answer from memory, without
// blocking. The runtime binds an instance to a version's digest after reading the version, so an
// instance started after a removal finds the version gone.
type LoopReferences interface {
	LoopVersionReferenced(v LoopVersion) bool
}

// NoLoopInstances is the LoopReferences of a service without a loop runtime: no instance exists,
// so none references a version.
type NoLoopInstances struct{}

// LoopVersionReferenced reports false: there are no instances.
func (NoLoopInstances) LoopVersionReferenced(LoopVersion) bool { return false }

var loopDigestRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidateLoopDigest checks a blob address: "sha256:" and 64 lowercase hex digits.
func ValidateLoopDigest(digest string) error {
	if !loopDigestRe.MatchString(digest) {
		return Invalid("digest", "must be sha256:<64 lowercase hex digits>")
	}
	return nil
}

// LoopScopeOf returns the scope of a full loop name, or a VALIDATION_ERROR naming `name`.
func LoopScopeOf(name string) (string, error) {
	scope, _, err := ParseLoopName(name)
	if err != nil {
		return "", Invalid("name", "%v", err)
	}
	return scope, nil
}
