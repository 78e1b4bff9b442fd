package actors

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
)

// The loop runtime's state lives in one journaled actor per organization (stream
// loopruns-<org id>), each owning one supplyplan.LoopRunState: instances, their audit events, the
// definitions they are bound to, the Idempotency-Keys of their requests and the outbox of their
// outbound events. A change is one journal entry (instance, event, outbound event, key), so an
// acknowledged transition is durable with its audit event and its webhook. Timeouts are due times
// in the instances: a ticker asks each actor for the due ones, so they fire after a restart too.
// Effects on planning data (the procurement loop's receipts) are recorded PENDING with the
// transition, applied through the tenant's actor (once, by effect id), then recorded APPLIED; the
// ones a crash interrupted are applied at start.

func loopRunsStream(orgID string) string { return "loopruns-" + orgID }

// loopRuns returns the runtime actor of an organization, spawning it on first use.
func (c *Core) loopRuns(orgID string, afterApply func(string, *supplyplan.LoopRunState)) (*actor.PID, error) {
	if err := c.gate(loopRunsStream(orgID)); err != nil {
		return nil, err
	}
	if pid, ok := c.runs.Load(orgID); ok {
		return pid.(*actor.PID), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "The service is shutting down")
	}
	if pid, ok := c.runs.Load(orgID); ok {
		return pid.(*actor.PID), nil
	}
	if err := c.spawnGate(loopRunsStream(orgID), false); err != nil {
		return nil, err
	}
	if !c.hasOrg(orgID) {
		return nil, supplyplan.NotFound("Organization")
	}
	d := &durable[*supplyplan.LoopRunState]{
		stream: loopRunsStream(orgID), journal: c.cfg.Journal, log: c.log, snapEvery: c.cfg.SnapshotEvery, now: c.cfg.Now,
		newState: func() *supplyplan.LoopRunState { return supplyplan.NewLoopRunState(orgID) },
	}
	if afterApply != nil {
		d.afterApply = func(st *supplyplan.LoopRunState) { afterApply(orgID, st) }
	}
	pid := spawnJournaled(c, d, "loopruns", orgID)
	c.runStates.Store(orgID, d)
	c.runs.Store(orgID, pid)
	return pid, nil
}

// LoopRefs answers the catalog whether an instance is bound to a version (by digest). The runtime
// fills it as definitions are journaled; it is read from the catalog's actor without blocking.
type LoopRefs struct{ digests sync.Map }

// LoopVersionReferenced reports whether an instance of any organization is bound to v's digest.
func (r *LoopRefs) LoopVersionReferenced(v supplyplan.LoopVersion) bool {
	_, ok := r.digests.Load(v.Digest)
	return ok
}

// LoopRuntimeConfig configures the loop runtime service.
type LoopRuntimeConfig struct {
	// Refs records the digests instances are bound to (shared with the catalog); nil: a new one.
	Refs *LoopRefs
	// TimerTick is how often due timeouts are looked for (default 1s).
	TimerTick time.Duration
	// Now is the clock of instances and timeouts (tests); nil: supplyplan.Now.
	Now func() time.Time
	// Commitment is an organization's monthly commitment of loop transitions (its plan's); nil:
	// none.
	Commitment func(orgID string) int64
	// Retention is how long a closed instance and its audit events stay after it closed
	// (0: supplyplan.DefaultLoopRetention; negative: forever).
	Retention time.Duration
}

// purgeBatch is the most closed instances one tick deletes per organization (the first tick after
// an upgrade may find many).
const purgeBatch = 500

// LoopRuntime is the loop runtime service: workflow instances per organization on the runtime
// actors of the core, bound to definitions of the loop catalog, with effects on the tenants'
// planning data and events on the bus (the webhooks relay them from the runtime's outbox).
type LoopRuntime struct {
	core    *Core
	cfg     LoopRuntimeConfig
	catalog supplyplan.LoopCatalogService
	events  supplyplan.EventPublisher
	stop    func()
	defs    sync.Map // org id -> number of definitions recorded in Refs
}

// NewLoopRuntime returns the loop runtime service.
func NewLoopRuntime(core *Core, cfg LoopRuntimeConfig, catalog supplyplan.LoopCatalogService, events supplyplan.EventPublisher) *LoopRuntime {
	if cfg.Refs == nil {
		cfg.Refs = &LoopRefs{}
	}
	if cfg.TimerTick <= 0 {
		cfg.TimerTick = time.Second
	}
	return &LoopRuntime{core: core, cfg: cfg, catalog: catalog, events: events}
}

var _ supplyplan.LoopRuntimeService = (*LoopRuntime)(nil)

func (s *LoopRuntime) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now().UTC().Truncate(time.Millisecond)
	}
	return supplyplan.Now()
}

// afterApply records the digests an organization's instances are bound to.
func (s *LoopRuntime) afterApply(orgID string, st *supplyplan.LoopRunState) {
	if n, ok := s.defs.Load(orgID); ok && n.(int) == len(st.Definitions) {
		return
	}
	for d := range st.Definitions {
		s.cfg.Refs.digests.Store(d, true)
	}
	s.defs.Store(orgID, len(st.Definitions))
}

func (s *LoopRuntime) actor(orgID string) (*actor.PID, error) {
	return s.core.loopRuns(orgID, s.afterApply)
}

// runTx runs fn in the runtime actor of orgID.
func runTx[T any](ctx context.Context, s *LoopRuntime, orgID string, fn func(*supplyplan.LoopRunState) (T, []supplyplan.Record, error)) (T, error) {
	pid, err := s.actor(orgID)
	if err != nil {
		var zero T
		return zero, err
	}
	var commitment int64
	if s.cfg.Commitment != nil {
		commitment = s.cfg.Commitment(orgID)
	}
	return ask(ctx, s.core, pid, func(st *supplyplan.LoopRunState) (T, []supplyplan.Record, error) {
		st.SetCommitment(commitment)
		return fn(st)
	})
}

// runRead runs a read of an organization's instances: on the caller's goroutine under the read
// lock when every applied write is durable, else as a transaction.
func runRead[T any](ctx context.Context, s *LoopRuntime, orgID string, fn func(*supplyplan.LoopRunState) (T, error)) (T, error) {
	if d, ok := s.core.runStates.Load(orgID); ok {
		var v T
		var err error
		if d.(*durable[*supplyplan.LoopRunState]).read(func(st *supplyplan.LoopRunState) { v, err = fn(st) }) {
			return v, err
		}
	}
	return runTx(ctx, s, orgID, func(st *supplyplan.LoopRunState) (T, []supplyplan.Record, error) {
		v, err := fn(st)
		return v, nil, err
	})
}

// Open starts the runtime actor of every organization (loading its instances), applies the
// effects a stop interrupted, and starts the timer ticker.
func (s *LoopRuntime) Open(ctx context.Context) error {
	if err := s.resume(ctx, s.core.orgs()); err != nil {
		return err
	}
	s.core.onRestore("loop effects", s.resume)
	s.stop = s.core.every(s.cfg.TimerTick, s.tick)
	return nil
}

// resume applies the effects a stop interrupted, of orgs (at start, and in distributed mode
// when their partition is restored here).
func (s *LoopRuntime) resume(ctx context.Context, orgs []string) error {
	for _, org := range orgs {
		if org == supplyplan.PlatformOwner {
			continue
		}
		pending, err := runTx(ctx, s, org, func(st *supplyplan.LoopRunState) ([]supplyplan.LoopTenantEffect, []supplyplan.Record, error) {
			return pendingEffects(st), nil, nil
		})
		if s.core.servedElsewhere(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("loop runtime of %s: %w", org, err)
		}
		s.applyEffects(ctx, org, pending)
	}
	return nil
}

// Close stops the ticker; the actors are drained by the core.
func (s *LoopRuntime) Close(context.Context) error {
	if s.stop != nil {
		s.stop()
	}
	return nil
}

// pendingEffects lists the effects recorded but not applied yet.
func pendingEffects(st *supplyplan.LoopRunState) []supplyplan.LoopTenantEffect {
	var out []supplyplan.LoopTenantEffect
	for _, in := range st.Instances {
		for _, e := range in.Effects {
			if e.Status == supplyplan.LoopEffectPending {
				out = append(out, e.Tenant(in))
			}
		}
	}
	return out
}

// tick fires the due timeouts of every organization; once a minute it also prunes expired
// Idempotency-Keys and deletes the instances closed longer than the retention.
func (s *LoopRuntime) tick(ctx context.Context) {
	now := s.now()
	prune := now.Second() == 0 || s.cfg.TimerTick >= time.Minute
	s.core.runs.Range(func(k, _ any) bool {
		org := k.(string)
		pruneOrg := prune // once per organization, in its first transaction
		var purged map[string]bool
		for {
			res, err := runTx(ctx, s, org, func(st *supplyplan.LoopRunState) (supplyplan.LoopResult, []supplyplan.Record, error) {
				var recs []supplyplan.Record
				if pruneOrg {
					recs = st.PruneIdem(now)
					if s.cfg.Retention >= 0 {
						gone := st.PurgeClosed(now, cmp.Or(s.cfg.Retention, supplyplan.DefaultLoopRetention), purgeBatch)
						for _, r := range gone {
							if r.Kind == supplyplan.KindLoopInstance {
								if purged == nil {
									purged = map[string]bool{}
								}
								purged[r.ID] = true
							}
						}
						recs = append(recs, gone...)
					}
				}
				ids := st.DueTimers(now, 500)
				if len(ids) == 0 {
					return supplyplan.LoopResult{}, recs, nil
				}
				res, more, err := st.FireTimeouts(ids, supplyplan.PlanLoopEffects, now)
				return res, append(recs, more...), err
			})
			if err != nil {
				s.core.log.Warn("loop timeouts", "org", org, "err", err)
				return true
			}
			if len(purged) > 0 { // durable: the tenant may forget the purged instances' effect ids
				s.forgetEffects(ctx, org, purged)
				purged = nil
			}
			pruneOrg = false
			if len(res.Events) == 0 {
				return true
			}
			s.finish(ctx, org, res)
		}
	})
}

// forgetEffects deletes the tenant's applied-effect ids of purged instances (a failure leaves them,
// which costs memory only: nothing sends those effects again).
func (s *LoopRuntime) forgetEffects(ctx context.Context, org string, instances map[string]bool) {
	if _, err := tenantTx(ctx, s.core, org, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		return struct{}{}, st.ForgetInstances(instances), nil
	}); err != nil {
		s.core.log.Warn("forget the effects of purged loop instances", "org", org, "err", err)
	}
}

// finish applies a committed change's effects and publishes its events.
func (s *LoopRuntime) finish(ctx context.Context, org string, res supplyplan.LoopResult) supplyplan.LoopResult {
	if len(res.Effects) > 0 {
		if in, ok := s.applyEffects(ctx, org, res.Effects); ok {
			res.Instance = in
		}
	}
	if s.events != nil {
		for _, e := range res.Events {
			s.events.Publish(e)
		}
	}
	return res
}

// applyEffects applies effects through the tenants' actors and records the outcome on their
// instances. It returns the last instance changed.
func (s *LoopRuntime) applyEffects(ctx context.Context, org string, effs []supplyplan.LoopTenantEffect) (supplyplan.LoopInstance, bool) {
	var last supplyplan.LoopInstance
	changed := false
	for _, e := range effs {
		now := s.now()
		type applied struct {
			evs    []supplyplan.DomainEvent
			result string
		}
		out, err := tenantTx(ctx, s.core, org, func(st *supplyplan.TenantState) (applied, []supplyplan.Record, error) {
			if e.OrderID != "" {
				recs, evs, result, err := st.ApplyLoopOrder(e, now)
				return applied{evs, result}, recs, err
			}
			recs, _, err := st.ApplyLoopEffect(e, now)
			return applied{}, recs, err
		})
		if err == nil && s.events != nil {
			for _, ev := range out.evs { // order allocation's own events, from the tenant's outbox
				s.events.Publish(ev)
			}
		}
		status, msg := supplyplan.LoopEffectApplied, ""
		if err != nil {
			if code := supplyplan.ErrorCode(err); code == supplyplan.EUNAVAILABLE || code == supplyplan.EINTERNAL {
				s.core.log.Warn("loop effect not applied; retried at the next start", "org", org, "effect", e.ID, "err", err)
				continue
			}
			status, msg = supplyplan.LoopEffectFailed, supplyplan.ErrorMessage(err)
			if de, ok := err.(*supplyplan.Error); ok && len(de.Details) > 0 {
				msg = de.Error()
			}
		}
		res, err := runTx(ctx, s, org, func(st *supplyplan.LoopRunState) (supplyplan.LoopResult, []supplyplan.Record, error) {
			return st.RecordEffect(e.InstanceID, e.ID, status, out.result, msg, now)
		})
		if err != nil {
			s.core.log.Warn("record loop effect", "org", org, "effect", e.ID, "err", err)
			continue
		}
		if s.events != nil {
			for _, ev := range res.Events {
				s.events.Publish(ev)
			}
		}
		last, changed = res.Instance, true
	}
	return last, changed
}

// Organization resolves an organization id or slug.
func (s *LoopRuntime) Organization(ref string) (supplyplan.Organization, bool) {
	return s.core.organizationByRef(ref)
}

// resolve finds the definition a start names: by digest, exact version, range or the latest.
func (s *LoopRuntime) resolve(ctx context.Context, org supplyplan.Organization, in supplyplan.LoopStartInput) (supplyplan.LoopDefinition, error) {
	lc := supplyplan.LoopCaller{OrgID: org.ID, OrgSlug: org.Slug, Role: supplyplan.RoleViewer}
	digest, version := in.Digest, in.Version
	if digest == "" && version != "" {
		v, err := s.catalog.GetLoopVersion(ctx, lc, in.Loop, version)
		if err != nil {
			return supplyplan.LoopDefinition{}, err
		}
		digest, version = v.Digest, v.Version
	} else if digest == "" {
		r, err := s.catalog.ResolveLoop(ctx, lc, in.Loop, in.Range, false)
		if err != nil {
			return supplyplan.LoopDefinition{}, err
		}
		digest, version = r.Digest, r.Version
	}
	blob, _, err := s.catalog.LoopBlob(ctx, lc, digest)
	if err != nil {
		return supplyplan.LoopDefinition{}, err
	}
	m, err := supplyplan.ParseLoopManifest(blob)
	if err != nil {
		return supplyplan.LoopDefinition{}, err
	}
	if m.Name != in.Loop {
		return supplyplan.LoopDefinition{}, supplyplan.Invalid("digest", "is the manifest of %s, not %s", m.Name, in.Loop)
	}
	if version == "" {
		version = m.Version
	}
	return supplyplan.LoopDefinition{Digest: digest, Name: m.Name, Version: version, Manifest: blob}, nil
}

// StartInstance starts an instance.
func (s *LoopRuntime) StartInstance(ctx context.Context, c supplyplan.LoopRunCaller, in supplyplan.LoopStartInput) (supplyplan.LoopResult, error) {
	if err := in.Validate(); err != nil {
		return supplyplan.LoopResult{}, err
	}
	org, ok := s.core.index.Load().orgs[c.OrgID]
	if !ok {
		return supplyplan.LoopResult{}, supplyplan.NotFound("Organization")
	}
	if r, err := s.replay(ctx, c); r != nil || err != nil {
		return supplyplan.LoopResult{Replay: r}, err
	}
	def, err := s.resolve(ctx, org, in)
	if err != nil {
		return supplyplan.LoopResult{}, err
	}
	var subject *supplyplan.LoopSubject
	if def.Name == supplyplan.BuiltinProcurementLoop || def.Name == supplyplan.BuiltinOrdersLoop {
		subject, err = tenantRead(ctx, s.core, c.OrgID, func(st *supplyplan.TenantState) (*supplyplan.LoopSubject, error) {
			return st.LoopSubjectOf(def.Name, in.Input)
		})
		if err != nil {
			return supplyplan.LoopResult{}, err
		}
	}
	now := s.now()
	res, err := runTx(ctx, s, c.OrgID, func(st *supplyplan.LoopRunState) (supplyplan.LoopResult, []supplyplan.Record, error) {
		return st.Start(supplyplan.LoopStart{Input: in, Definition: def, Subject: subject}, c.Meta(), now)
	})
	if err != nil || res.Replay != nil {
		return res, err
	}
	return s.finish(ctx, c.OrgID, res), nil
}

// replay returns the stored response of the caller's Idempotency-Key, if any, once it is durable
// (a transaction of the actor: it answers after the write that stored it is durable).
func (s *LoopRuntime) replay(ctx context.Context, c supplyplan.LoopRunCaller) (*supplyplan.LoopIdem, error) {
	if c.IdempotencyKey == "" {
		return nil, nil
	}
	now := s.now()
	if r, err := runPeek(ctx, s, c.OrgID, func(st *supplyplan.LoopRunState) (*supplyplan.LoopIdem, error) {
		return st.Replay(c.IdempotencyKey, c.Fingerprint, now)
	}); r == nil && err == nil {
		return nil, nil
	}
	return runTx(ctx, s, c.OrgID, func(st *supplyplan.LoopRunState) (*supplyplan.LoopIdem, []supplyplan.Record, error) {
		r, err := st.Replay(c.IdempotencyKey, c.Fingerprint, now)
		return r, nil, err
	})
}

// runPeek runs a check of an organization's instances on the caller's goroutine under the read
// lock, whether or not the last writes are durable yet: for the checks made before a change, which
// the change's transaction makes again (the actor answers a refused change from the same state).
// It falls back to a transaction while the actor is not loaded.
func runPeek[T any](ctx context.Context, s *LoopRuntime, orgID string, fn func(*supplyplan.LoopRunState) (T, error)) (T, error) {
	if v, ok := s.core.runStates.Load(orgID); ok {
		d := v.(*durable[*supplyplan.LoopRunState])
		d.mu.RLock()
		if d.loaded {
			defer d.mu.RUnlock()
			return fn(d.state)
		}
		d.mu.RUnlock()
	}
	return runTx(ctx, s, orgID, func(st *supplyplan.LoopRunState) (T, []supplyplan.Record, error) {
		v, err := fn(st)
		return v, nil, err
	})
}

// ListInstances lists an organization's instances.
func (s *LoopRuntime) ListInstances(ctx context.Context, orgID string, f supplyplan.LoopInstanceFilter) (supplyplan.Page[supplyplan.LoopInstance], error) {
	if err := f.Validate(); err != nil {
		return supplyplan.Page[supplyplan.LoopInstance]{}, err
	}
	return runRead(ctx, s, orgID, func(st *supplyplan.LoopRunState) (supplyplan.Page[supplyplan.LoopInstance], error) {
		return st.List(f), nil
	})
}

// GetInstance returns one instance.
func (s *LoopRuntime) GetInstance(ctx context.Context, orgID, id string) (supplyplan.LoopInstance, error) {
	return runRead(ctx, s, orgID, func(st *supplyplan.LoopRunState) (supplyplan.LoopInstance, error) { return st.Instance(id) })
}

// Transition fires a transition. A transition with effects on planning data is checked against
// the tenant's data first (unknown products or locations are 400 before anything is recorded).
func (s *LoopRuntime) Transition(ctx context.Context, c supplyplan.LoopRunCaller, id string, in supplyplan.LoopTransitionInput) (supplyplan.LoopResult, error) {
	// Check the rules (404, 412, 409, 403, 400) and plan the effect on the current instance, so that
	// the effect's lines are checked against the tenant before the transition is recorded. A
	// request whose Idempotency-Key is known goes straight to its transaction (its replay).
	now := s.now()
	eff, err := runPeek(ctx, s, c.OrgID, func(st *supplyplan.LoopRunState) (*supplyplan.LoopTenantEffect, error) {
		if r, err := st.Replay(c.IdempotencyKey, c.Fingerprint, now); r != nil || err != nil {
			return nil, nil
		}
		if cur, ok := st.Instances[id]; !ok || !supplyplan.LoopHasEffects(cur.Loop) {
			return nil, nil // no effects to check first: the transaction checks everything
		}
		cur, _, t, err := st.CheckTransition(id, in)
		if err != nil {
			return nil, err
		}
		inst := *cur
		return supplyplan.PlanLoopEffects(&inst, t.Name, in.Payload, cur.LastSeq+1)
	})
	if err != nil {
		return supplyplan.LoopResult{}, err
	}
	if eff != nil && len(eff.Lines) > 0 {
		if _, err := tenantRead(ctx, s.core, c.OrgID, func(st *supplyplan.TenantState) (struct{}, error) {
			return struct{}{}, st.CheckLoopStock(eff)
		}); err != nil {
			return supplyplan.LoopResult{}, err
		}
	}
	res, err := runTx(ctx, s, c.OrgID, func(st *supplyplan.LoopRunState) (supplyplan.LoopResult, []supplyplan.Record, error) {
		return st.Transition(id, in, c.Meta(), supplyplan.PlanLoopEffects, now)
	})
	if err != nil || res.Replay != nil {
		return res, err
	}
	return s.finish(ctx, c.OrgID, res), nil
}

// Lifecycle cancels, terminates, suspends or resumes an instance.
func (s *LoopRuntime) Lifecycle(ctx context.Context, c supplyplan.LoopRunCaller, id, action string, in supplyplan.LoopLifecycleInput) (supplyplan.LoopResult, error) {
	now := s.now()
	res, err := runTx(ctx, s, c.OrgID, func(st *supplyplan.LoopRunState) (supplyplan.LoopResult, []supplyplan.Record, error) {
		return st.Lifecycle(id, action, in, c.Meta(), supplyplan.PlanLoopEffects, now)
	})
	if err != nil || res.Replay != nil {
		return res, err
	}
	return s.finish(ctx, c.OrgID, res), nil
}

// BulkCancel cancels the open instances a filter selects.
func (s *LoopRuntime) BulkCancel(ctx context.Context, c supplyplan.LoopRunCaller, in supplyplan.LoopBulkCancelInput) (supplyplan.LoopBulkCancelResult, *supplyplan.LoopIdem, error) {
	now := s.now()
	type out struct {
		r   supplyplan.LoopBulkCancelResult
		res supplyplan.LoopResult
		idm *supplyplan.LoopIdem
	}
	o, err := runTx(ctx, s, c.OrgID, func(st *supplyplan.LoopRunState) (out, []supplyplan.Record, error) {
		if r, err := st.Replay(c.IdempotencyKey, c.Fingerprint, now); r != nil || err != nil {
			return out{idm: r}, nil, err
		}
		r, res, recs, err := st.BulkCancel(in, c.Meta(), supplyplan.PlanLoopEffects, now)
		if err != nil {
			return out{r: r}, nil, err
		}
		if !in.DryRun && c.IdempotencyKey != "" {
			rec, _, err := supplyplan.LoopIdemRecord(c.Meta(), 200, r, now)
			if err != nil {
				return out{}, nil, err
			}
			recs = append(recs, rec)
		}
		return out{r: r, res: res}, recs, nil
	})
	if err != nil || o.idm != nil {
		return o.r, o.idm, err
	}
	s.finish(ctx, c.OrgID, o.res)
	return o.r, nil, nil
}

// Events lists an instance's audit events.
func (s *LoopRuntime) Events(ctx context.Context, orgID, id string, afterSeq int64, limit int) ([]supplyplan.LoopEvent, error) {
	return runRead(ctx, s, orgID, func(st *supplyplan.LoopRunState) ([]supplyplan.LoopEvent, error) {
		return st.EventsAfter(id, afterSeq, limit)
	})
}

// VerifyAudit recomputes an instance's hash chain.
func (s *LoopRuntime) VerifyAudit(ctx context.Context, orgID, id string) (supplyplan.LoopAuditVerification, error) {
	return runRead(ctx, s, orgID, func(st *supplyplan.LoopRunState) (supplyplan.LoopAuditVerification, error) {
		return st.VerifyAudit(id)
	})
}

// loopRunsOutbox reads the pending outbound events of every runtime actor (the relay's sweep).
func (c *Core) loopRunsOutboxes(ctx context.Context, fn func(org string, evs []supplyplan.DomainEvent)) {
	c.runs.Range(func(k, v any) bool {
		org := k.(string)
		evs, err := ask(ctx, c, v.(*actor.PID), func(st *supplyplan.LoopRunState) ([]supplyplan.DomainEvent, []supplyplan.Record, error) {
			return st.PendingEventList(), nil, nil
		})
		if err != nil {
			c.log.Warn("read loop runtime outbox", "org", org, "err", err)
			return true
		}
		fn(org, evs)
		return true
	})
}

// dropLoopRunsEvents removes relayed events from an organization's runtime outbox.
func (c *Core) dropLoopRunsEvents(ctx context.Context, org string, ids []string) error {
	v, ok := c.runs.Load(org)
	if !ok {
		return nil
	}
	_, err := ask(ctx, c, v.(*actor.PID), func(st *supplyplan.LoopRunState) (struct{}, []supplyplan.Record, error) {
		var recs []supplyplan.Record
		for _, id := range ids {
			if _, ok := st.PendingEvents[id]; ok {
				recs = append(recs, supplyplan.Del(supplyplan.KindPendingEvent, id))
			}
		}
		return struct{}{}, recs, nil
	})
	return err
}

// isLoopRunEvent reports whether an event comes from a runtime outbox.
func isLoopRunEvent(t string) bool {
	return strings.HasPrefix(t, supplyplan.LoopEventPrefix) || t == supplyplan.EventLoopCommitmentThreshold
}

// loopUsage is an organization's loop usage of the month of now (zero when its runtime actor does
// not run).
func (c *Core) loopUsage(ctx context.Context, orgID string, now time.Time, commitment int64) (supplyplan.LoopUsageView, error) {
	v, ok := c.runs.Load(orgID)
	if !ok {
		return supplyplan.LoopUsageView{Period: supplyplan.LoopPeriod(now), Commitment: commitment, Reached: []int{}}, nil
	}
	return ask(ctx, c, v.(*actor.PID), func(st *supplyplan.LoopRunState) (supplyplan.LoopUsageView, []supplyplan.Record, error) {
		return st.UsageView(now, commitment), nil, nil
	})
}
