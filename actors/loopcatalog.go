package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
)

// The loop catalog's state lives in one journaled actor per scope (docs/decisions.md, "Loop
// catalog"): the global scope's (`supplyplan/...` loops, stream loops-supplyplan) and one per
// organization that uses the catalog (its private loops, stream loops-<org id>). Each owns one
// supplyplan.LoopCatalogState, so a private loop lives only in its organization's stream and the
// scopes never wait on each other.

// loopGlobalOwner is the owner key of the global scope's actor (organization ids start with
// "org_", so it never collides with one).
const loopGlobalOwner = supplyplan.GlobalLoopScope

func loopStream(owner string) string { return "loops-" + owner }

// loopCatalog returns the catalog actor of owner (an organization id, or loopGlobalOwner),
// spawning it on first use.
func (c *Core) loopCatalog(owner string) (*actor.PID, error) {
	if err := c.gate(loopStream(owner)); err != nil {
		return nil, err
	}
	if pid, ok := c.loops.Load(owner); ok {
		return pid.(*actor.PID), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "The service is shutting down")
	}
	if pid, ok := c.loops.Load(owner); ok {
		return pid.(*actor.PID), nil
	}
	if err := c.spawnGate(loopStream(owner), false); err != nil {
		return nil, err
	}
	scope := supplyplan.GlobalLoopScope
	if owner != loopGlobalOwner {
		o, ok := c.index.Load().orgs[owner]
		if !ok {
			return nil, supplyplan.NotFound("Organization")
		}
		scope = o.Slug
	}
	pid := spawnJournaled(c, &durable[*supplyplan.LoopCatalogState]{
		stream: loopStream(owner), journal: c.cfg.Journal, log: c.log, snapEvery: c.cfg.SnapshotEvery, now: c.cfg.Now,
		newState: func() *supplyplan.LoopCatalogState { return supplyplan.NewLoopCatalogState(scope) },
	}, "loops", owner)
	c.loops.Store(owner, pid)
	return pid, nil
}

// loopTx runs fn in the catalog actor of owner.
func loopTx[T any](ctx context.Context, c *Core, owner string, fn func(*supplyplan.LoopCatalogState) (T, []supplyplan.Record, error)) (T, error) {
	pid, err := c.loopCatalog(owner)
	if err != nil {
		var zero T
		return zero, err
	}
	return askQueued(ctx, c, pid, c.queuedLoops, fn)
}

// LoopCatalogConfig configures the loop catalog service.
type LoopCatalogConfig struct {
	// Signer signs every published version (required).
	Signer *supplyplan.LoopSigner
	// Keys is the key set the catalog publishes: the signer's key and the keys it retired
	// (default: the signer's key alone).
	Keys supplyplan.JWKS
	// References tells a removal whether loop instances reference the version (default:
	// supplyplan.NoLoopInstances).
	References supplyplan.LoopReferences
	// Now is the clock of publish times and of the removal window (tests); nil: supplyplan.Now.
	Now func() time.Time
}

// LoopCatalog is the loop catalog service: published loop versions per scope, their lifecycle,
// resolution and blobs, on the catalog actors of the core.
type LoopCatalog struct {
	core *Core
	cfg  LoopCatalogConfig
}

// NewLoopCatalog returns the loop catalog service.
func NewLoopCatalog(core *Core, cfg LoopCatalogConfig) *LoopCatalog {
	if len(cfg.Keys.Keys) == 0 && cfg.Signer != nil {
		cfg.Keys = supplyplan.JWKS{Keys: []supplyplan.JWK{cfg.Signer.PublicJWK()}}
	}
	if cfg.References == nil {
		cfg.References = supplyplan.NoLoopInstances{}
	}
	return &LoopCatalog{core: core, cfg: cfg}
}

var _ supplyplan.LoopCatalogService = (*LoopCatalog)(nil)

// Open publishes the built-in loops into the global scope as 1.0.0 (nothing when they are there
// already). A built-in manifest changed without a new version stops the start. In distributed
// mode the node that serves the global catalog publishes them: at Open when it serves it then,
// and whenever the catalog's partition is restored on a node (Core.Resume).
func (s *LoopCatalog) Open(ctx context.Context) error {
	if s.cfg.Signer == nil {
		return fmt.Errorf("loop catalog: no signing key")
	}
	s.core.onRestoreStreams("built-in loops", func(ctx context.Context, in func(string) bool) error {
		if !in(loopStream(loopGlobalOwner)) {
			return nil
		}
		return s.publishBuiltins(ctx)
	})
	return s.publishBuiltins(ctx)
}

// publishBuiltins publishes the built-in loops that are missing from the global scope; nothing
// when another node serves the global catalog.
func (s *LoopCatalog) publishBuiltins(ctx context.Context) error {
	n, err := loopTx(ctx, s.core, loopGlobalOwner, func(st *supplyplan.LoopCatalogState) (int, []supplyplan.Record, error) {
		recs, err := st.EnsureBuiltinLoops(s.cfg.Signer, s.now())
		return len(recs), recs, err
	})
	if s.core.servedElsewhere(err) {
		return nil // distributed: published by the node that serves the global catalog
	}
	if err != nil {
		return fmt.Errorf("loop catalog: %w", err)
	}
	if n > 0 {
		s.core.log.Info("published the built-in loops", "records", n)
	}
	return nil
}

// Close does nothing: the catalog's actors are drained by the core.
func (s *LoopCatalog) Close(context.Context) error { return nil }

func (s *LoopCatalog) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now().UTC()
	}
	return supplyplan.Now()
}

// owner is the actor that holds scope's loops for c: the global one, or c's organization's.
// c must have been checked for scope first.
func (s *LoopCatalog) owner(c supplyplan.LoopCaller, scope string) string {
	if scope == supplyplan.GlobalLoopScope {
		return loopGlobalOwner
	}
	return c.OrgID
}

// readOwner checks that c may read name and returns the actor holding it.
func (s *LoopCatalog) readOwner(c supplyplan.LoopCaller, name string) (string, error) {
	scope, err := supplyplan.LoopScopeOf(name)
	if err != nil {
		return "", err
	}
	if err := c.CheckRead(scope); err != nil {
		return "", err
	}
	return s.owner(c, scope), nil
}

// writeOwner checks that c may publish or manage name and returns the actor holding it.
func (s *LoopCatalog) writeOwner(c supplyplan.LoopCaller, name string) (string, error) {
	scope, err := supplyplan.LoopScopeOf(name)
	if err != nil {
		return "", err
	}
	if err := c.CheckWrite(scope); err != nil {
		return "", err
	}
	return s.owner(c, scope), nil
}

// loopRead runs a read of name's scope.
func loopRead[T any](ctx context.Context, s *LoopCatalog, c supplyplan.LoopCaller, name string, fn func(*supplyplan.LoopCatalogState) (T, error)) (T, error) {
	owner, err := s.readOwner(c, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return loopTx(ctx, s.core, owner, func(st *supplyplan.LoopCatalogState) (T, []supplyplan.Record, error) {
		v, err := fn(st)
		return v, nil, err
	})
}

// loopWrite runs a change of name's scope: fn returns the reply and the records to journal.
func loopWrite[T any](ctx context.Context, s *LoopCatalog, c supplyplan.LoopCaller, name string, fn func(*supplyplan.LoopCatalogState, time.Time) (T, []supplyplan.Record, error)) (T, error) {
	owner, err := s.writeOwner(c, name)
	if err != nil {
		var zero T
		return zero, err
	}
	now := s.now()
	return loopTx(ctx, s.core, owner, func(st *supplyplan.LoopCatalogState) (T, []supplyplan.Record, error) {
		return fn(st, now)
	})
}

// PublishLoop publishes name@version. The manifest is canonicalized, validated and signed on the
// caller's goroutine; the scope's actor only decides against its state (exists, compatible,
// within the limits) and journals. manifest must not change afterwards.
func (s *LoopCatalog) PublishLoop(ctx context.Context, c supplyplan.LoopCaller, name, version string, manifest []byte) (supplyplan.LoopPublishResult, error) {
	owner, err := s.writeOwner(c, name)
	if err != nil {
		return supplyplan.LoopPublishResult{}, err
	}
	prep := supplyplan.PrepareLoopPublish(supplyplan.LoopPublishRequest{Name: name, Version: version, Manifest: manifest,
		Publisher: c.Actor()}, s.cfg.Signer)
	now := s.now()
	return loopTx(ctx, s.core, owner, func(st *supplyplan.LoopCatalogState) (supplyplan.LoopPublishResult, []supplyplan.Record, error) {
		return st.PublishPrepared(prep, now)
	})
}

// ListLoops lists the loops of the caller's readable scopes, merged by name.
func (s *LoopCatalog) ListLoops(ctx context.Context, c supplyplan.LoopCaller, f supplyplan.LoopFilter) (supplyplan.Page[supplyplan.LoopSummary], error) {
	if err := f.Validate(); err != nil {
		return supplyplan.Page[supplyplan.LoopSummary]{}, err
	}
	var lists [][]supplyplan.LoopSummary
	for _, scope := range c.ReadableScopes() {
		l, err := loopTx(ctx, s.core, s.owner(c, scope), func(st *supplyplan.LoopCatalogState) ([]supplyplan.LoopSummary, []supplyplan.Record, error) {
			return st.LoopSummaries(f), nil, nil
		})
		if err != nil {
			return supplyplan.Page[supplyplan.LoopSummary]{}, err
		}
		lists = append(lists, l)
	}
	return supplyplan.PageLoopSummaries(f, lists...), nil
}

// view returns the immutable view of name from its scope's actor (O(1) there once built); what
// is computed from it runs on the caller's goroutine, so reads of one scope do not queue behind
// each other's work.
func (s *LoopCatalog) view(ctx context.Context, c supplyplan.LoopCaller, name string) (*supplyplan.LoopView, error) {
	return loopRead(ctx, s, c, name, func(st *supplyplan.LoopCatalogState) (*supplyplan.LoopView, error) { return st.View(name) })
}

// GetLoop returns a loop with its versions and dist-tags.
func (s *LoopCatalog) GetLoop(ctx context.Context, c supplyplan.LoopCaller, name string) (supplyplan.LoopDocument, error) {
	v, err := s.view(ctx, c, name)
	if err != nil {
		return supplyplan.LoopDocument{}, err
	}
	return v.Document(), nil
}

// GetLoopVersion returns one version (a yanked one too).
func (s *LoopCatalog) GetLoopVersion(ctx context.Context, c supplyplan.LoopCaller, name, version string) (supplyplan.LoopVersion, error) {
	return loopRead(ctx, s, c, name, func(st *supplyplan.LoopCatalogState) (supplyplan.LoopVersion, error) {
		return st.Version(name, version)
	})
}

// ResolveLoop resolves a dist-tag or range.
func (s *LoopCatalog) ResolveLoop(ctx context.Context, c supplyplan.LoopCaller, name, spec string, includePrerelease bool) (supplyplan.LoopResolution, error) {
	v, err := s.view(ctx, c, name)
	if err != nil {
		return supplyplan.LoopResolution{}, err
	}
	return v.Resolve(spec, includePrerelease)
}

// LoopBlob finds digest in the caller's scopes. The bytes are shared with the state, which never
// changes a stored blob: the caller must not modify them.
func (s *LoopCatalog) LoopBlob(ctx context.Context, c supplyplan.LoopCaller, digest string) ([]byte, string, error) {
	if err := supplyplan.ValidateLoopDigest(digest); err != nil {
		return nil, "", err
	}
	for _, scope := range c.ReadableScopes() {
		b, err := loopTx(ctx, s.core, s.owner(c, scope), func(st *supplyplan.LoopCatalogState) ([]byte, []supplyplan.Record, error) {
			b, _ := st.Blob(digest)
			return b, nil, nil
		})
		if err != nil {
			return nil, "", err
		}
		if b != nil {
			return b, scope, nil
		}
	}
	return nil, "", supplyplan.NotFound("Blob")
}

// DistTags returns a loop's dist-tags.
func (s *LoopCatalog) DistTags(ctx context.Context, c supplyplan.LoopCaller, name string) (map[string]string, error) {
	v, err := s.view(ctx, c, name)
	if err != nil {
		return nil, err
	}
	return v.DistTags(), nil
}

// SetDistTag points tag at version.
func (s *LoopCatalog) SetDistTag(ctx context.Context, c supplyplan.LoopCaller, name, tag, version string) (map[string]string, error) {
	return loopWrite(ctx, s, c, name, func(st *supplyplan.LoopCatalogState, now time.Time) (map[string]string, []supplyplan.Record, error) {
		return st.SetDistTag(name, tag, version, c.Actor(), now)
	})
}

// RemoveDistTag removes a dist-tag (not latest).
func (s *LoopCatalog) RemoveDistTag(ctx context.Context, c supplyplan.LoopCaller, name, tag string) (map[string]string, error) {
	return loopWrite(ctx, s, c, name, func(st *supplyplan.LoopCatalogState, now time.Time) (map[string]string, []supplyplan.Record, error) {
		return st.RemoveDistTag(name, tag, c.Actor(), now)
	})
}

// DeprecateLoopVersion sets (or, with an empty message, clears) a deprecation.
func (s *LoopCatalog) DeprecateLoopVersion(ctx context.Context, c supplyplan.LoopCaller, name, version, message string) (supplyplan.LoopVersion, error) {
	return loopWrite(ctx, s, c, name, func(st *supplyplan.LoopCatalogState, now time.Time) (supplyplan.LoopVersion, []supplyplan.Record, error) {
		return st.Deprecate(name, version, message, c.Actor(), now)
	})
}

// YankLoopVersion takes a version out of resolution.
func (s *LoopCatalog) YankLoopVersion(ctx context.Context, c supplyplan.LoopCaller, name, version, reason string) (supplyplan.LoopVersion, error) {
	return loopWrite(ctx, s, c, name, func(st *supplyplan.LoopCatalogState, now time.Time) (supplyplan.LoopVersion, []supplyplan.Record, error) {
		return st.Yank(name, version, reason, c.Actor(), now)
	})
}

// UnyankLoopVersion returns a yanked version to resolution.
func (s *LoopCatalog) UnyankLoopVersion(ctx context.Context, c supplyplan.LoopCaller, name, version string) (supplyplan.LoopVersion, error) {
	return loopWrite(ctx, s, c, name, func(st *supplyplan.LoopCatalogState, now time.Time) (supplyplan.LoopVersion, []supplyplan.Record, error) {
		return st.Unyank(name, version, c.Actor(), now)
	})
}

// RemoveLoopVersion deletes a version within the removal window, unless an instance references it.
func (s *LoopCatalog) RemoveLoopVersion(ctx context.Context, c supplyplan.LoopCaller, name, version string) (supplyplan.LoopVersion, error) {
	return loopWrite(ctx, s, c, name, func(st *supplyplan.LoopCatalogState, now time.Time) (supplyplan.LoopVersion, []supplyplan.Record, error) {
		return st.Remove(name, version, s.cfg.References.LoopVersionReferenced, c.Actor(), now)
	})
}

// LoopAudit lists a loop's audit entries, newest first.
func (s *LoopCatalog) LoopAudit(ctx context.Context, c supplyplan.LoopCaller, name string, limit, offset int) (supplyplan.Page[supplyplan.LoopAuditEntry], error) {
	return loopRead(ctx, s, c, name, func(st *supplyplan.LoopCatalogState) (supplyplan.Page[supplyplan.LoopAuditEntry], error) {
		return st.LoopAudit(name, limit, offset)
	})
}

// LoopKeys returns the published key set.
func (s *LoopCatalog) LoopKeys() supplyplan.JWKS {
	return supplyplan.JWKS{Keys: append([]supplyplan.JWK(nil), s.cfg.Keys.Keys...)}
}
