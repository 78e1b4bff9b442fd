package actors

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/telemetry"
)

// Config configures the core.
type Config struct {
	// Journal keeps every journaled actor's entries and snapshots (streams.Journal locally).
	Journal supplyplan.Journal
	Logger  *slog.Logger
	// SnapshotEvery takes a snapshot of a stream after this many journal entries (default 10000).
	SnapshotEvery int
	// Now is the clock of idempotency-key expiry (tests); nil: time.Now.
	Now func() time.Time
	// Allocation are the allocation settings every tenant state is created with (hold time,
	// protected safety stock, transfer lead time and cost): one available-to-promise for every
	// service reading a tenant.
	Allocation supplyplan.AllocationSettings
	// Metrics records the actors' figures (mailbox depth, tenants loaded, deliveries, forecasts,
	// imports); nil: none.
	Metrics *telemetry.Metrics
	// Gate is the distributed mode's ownership gate (streams.Ownership.Serve): a journaled actor
	// runs here only when Gate(stream) is nil; otherwise its error (*supplyplan.ErrNotOwner,
	// supplyplan.ErrRestoring) is returned to the caller unchanged. The actors of an owned
	// partition are started by Restore and stopped by Stop. nil: embedded mode, everything local.
	Gate func(stream string) error
	// FollowPlatform keeps a read-only replica of the platform stream (streams.KafkaJournal.Follow)
	// on a node that does not own the platform's partition: authentication and organization
	// lookups read it. Required with Gate.
	FollowPlatform func(ctx context.Context, onSnapshot func(seq uint64, data []byte) error,
		onEntry func(seq uint64, payload []byte) error, caughtUp func()) error
}

// Core is what every service of this package shares: the hollywood engine, the journal, and the
// registry of journaled actors (one per organization, the platform's, one outbound actor per
// organization and the platform's, one loop catalog actor per scope), with the transactions that
// run in them (tenantTx, platformTx, outboundTx, loopTx). It owns no business: the services
// (Platform, Forecasting, Transfers...) do, each built on the core and opened after it.
type Core struct {
	cfg    Config
	log    *slog.Logger
	engine *actor.Engine

	platformPID atomic.Pointer[actor.PID] // nil in distributed mode while another node owns it
	// platformLocal: in distributed mode, the platform actor runs here and publishes the index;
	// otherwise the replica (followPlatform) does.
	platformLocal atomic.Bool
	replicaMu     sync.Mutex
	replica       *supplyplan.PlatformState
	stopFollow    func()
	// index is the platform state as the platform actor last published it (organizations, keys,
	// global events, merchants): lock-free reads for authentication and org lookups.
	index atomic.Pointer[platformIndex]

	mu      sync.Mutex
	tenants sync.Map // orgID -> *actor.PID
	// tenantStates are the tenants' actors themselves, for reads outside them (tenantRead).
	tenantStates sync.Map // orgID -> *durable[*supplyplan.TenantState]
	outbounds    sync.Map // owner -> *actor.PID
	loops        sync.Map // loop catalog owner (an organization id or the global scope) -> *actor.PID
	runs         sync.Map // orgID -> *actor.PID of the loop runtime (loopruntime.go)
	runStates    sync.Map // orgID -> *durable[*supplyplan.LoopRunState], for reads outside the actor
	closed       bool
	// mailboxes are the journaled actors' mailboxes by PID (mailbox.go).
	mailboxes sync.Map // *actor.PID -> *mailbox
	// restoreHooks resume the services' work of what a partition restore started (distributed).
	restoreHooks []restoreHook

	quarantined atomic.Int64 // stored values out of bounds left out at load (reportQuarantined)

	metrics *telemetry.Metrics
	// Transactions waiting in the mailboxes of each kind of actor (supplyplan_actor_mailbox_depth).
	queuedTenant, queuedPlatform, queuedOutbound, queuedLoops *atomic.Int64
}

const platformStream = "platform"

func tenantStream(orgID string) string { return "tenant-" + orgID }

func outboundStream(owner string) string { return "outbound-" + owner }

// NewCore returns an unopened core.
func NewCore(cfg Config) *Core {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SnapshotEvery <= 0 {
		cfg.SnapshotEvery = 10000
	}
	c := &Core{cfg: cfg, log: cfg.Logger, metrics: cfg.Metrics}
	c.index.Store(buildIndex(supplyplan.NewPlatformState()))
	c.queuedTenant, c.queuedPlatform = cfg.Metrics.Mailbox("tenant"), cfg.Metrics.Mailbox("platform")
	c.queuedOutbound, c.queuedLoops = cfg.Metrics.Mailbox("outbound"), cfg.Metrics.Mailbox("loops")
	cfg.Metrics.Gauge("supplyplan_tenants_loaded", func() float64 { return float64(c.TenantsLoaded()) })
	return c
}

// Open starts the engine, loads the platform state and starts every known tenant's actor.
func (c *Core) Open(ctx context.Context) error {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return fmt.Errorf("start actor engine: %w", err)
	}
	c.engine = e
	if c.cfg.Gate != nil {
		// Distributed: the platform actor runs on the owner of its partition (Restore); every
		// node follows the stream meanwhile, and tenants start as their partitions are restored.
		return c.followPlatform(ctx)
	}
	if err := c.startPlatform(ctx); err != nil {
		return err
	}
	return c.startTenants()
}

// startPlatform spawns the platform actor and waits for its state: authentication needs it.
func (c *Core) startPlatform(ctx context.Context) error {
	pid := spawnJournaled(c, &durable[*supplyplan.PlatformState]{
		stream: platformStream, journal: c.cfg.Journal, log: c.log, snapEvery: c.cfg.SnapshotEvery, now: c.cfg.Now,
		newState: supplyplan.NewPlatformState,
		afterApply: func(st *supplyplan.PlatformState) {
			if c.cfg.Gate == nil || c.platformLocal.Load() {
				c.index.Store(buildIndex(st))
			}
		},
	}, "platform", "root")
	c.platformPID.Store(pid)
	if _, err := ask(ctx, c, pid, func(*supplyplan.PlatformState) (struct{}, []supplyplan.Record, error) {
		return struct{}{}, nil, nil
	}); err != nil {
		return fmt.Errorf("load platform state: %w", err)
	}
	return nil
}

// startTenants starts the actor of every organization that has none yet (in distributed mode:
// of every organization served here).
func (c *Core) startTenants() error {
	for _, id := range c.orgs() {
		if _, err := c.tenant(id); err != nil {
			if c.cfg.Gate != nil && notServedHere(err) {
				continue
			}
			return err
		}
	}
	return nil
}

// orgs returns the ids of every organization.
func (c *Core) orgs() []string {
	ix := c.index.Load()
	out := make([]string, 0, len(ix.orgs))
	for id := range ix.orgs {
		out = append(out, id)
	}
	return out
}

// hasOrg reports whether an organization exists.
func (c *Core) hasOrg(id string) bool {
	_, ok := c.index.Load().orgs[id]
	return ok
}

// every runs fn on a ticker until stop is called; stop waits for a run in progress.
func (c *Core) every(d time.Duration, fn func(context.Context)) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), d)
				fn(ctx)
				cancel()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		wg.Wait()
	}
}

// Close drains every actor (pending writes durable, final snapshot) and stops them. Callers close
// the services first (and the transports before them) so that nothing new arrives.
func (c *Core) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed || c.engine == nil {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var pids []*actor.PID
	c.tenants.Range(func(_, v any) bool {
		pids = append(pids, v.(*actor.PID))
		return true
	})
	c.outbounds.Range(func(_, v any) bool {
		pids = append(pids, v.(*actor.PID))
		return true
	})
	c.loops.Range(func(_, v any) bool {
		pids = append(pids, v.(*actor.PID))
		return true
	})
	c.runs.Range(func(_, v any) bool {
		pids = append(pids, v.(*actor.PID))
		return true
	})
	if pid := c.platformPID.Load(); pid != nil {
		pids = append(pids, pid)
	}
	if c.stopFollow != nil {
		c.stopFollow()
	}
	c.stopActors(ctx, pids)
	return ctx.Err()
}

// gate is nil when the stream's actor may run here (always in embedded mode).
func (c *Core) gate(stream string) error {
	if c.cfg.Gate == nil {
		return nil
	}
	return c.cfg.Gate(stream)
}

// tenant returns the actor of an organization, spawning it on first use.
func (c *Core) tenant(orgID string) (*actor.PID, error) {
	if c.cfg.Gate != nil && !c.hasOrg(orgID) {
		// Before the gate: placing an organization that does not exist would record it.
		return nil, supplyplan.NotFound("Organization")
	}
	if c.cfg.Gate != nil { // the stream's name is made only for a gate (a string per request otherwise)
		if err := c.gate(tenantStream(orgID)); err != nil {
			return nil, err
		}
	}
	return c.tenantActor(orgID, false)
}

// tenantActor returns or spawns the tenant's actor; restoring skips the gate (Restore starts
// the actors before the gate opens).
func (c *Core) tenantActor(orgID string, restoring bool) (*actor.PID, error) {
	if pid, ok := c.tenants.Load(orgID); ok {
		return pid.(*actor.PID), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "The service is shutting down")
	}
	if err := c.spawnGate(tenantStream(orgID), restoring); err != nil {
		return nil, err
	}
	if pid, ok := c.tenants.Load(orgID); ok {
		return pid.(*actor.PID), nil
	}
	if !c.hasOrg(orgID) {
		return nil, supplyplan.NotFound("Organization")
	}
	d := &durable[*supplyplan.TenantState]{
		stream: tenantStream(orgID), journal: c.cfg.Journal, log: c.log, snapEvery: c.cfg.SnapshotEvery, now: c.cfg.Now,
		viewSnapshots: true, // TenantState's map values are replaced, never changed in place
		newState: func() *supplyplan.TenantState {
			st := supplyplan.NewTenantState(orgID)
			st.SetAllocationSettings(c.cfg.Allocation)
			return st
		},
		afterApply: func(st *supplyplan.TenantState) { c.reportQuarantined(orgID, st.TakeQuarantined()) },
	}
	pid := spawnJournaled(c, d, "tenant", orgID)
	c.tenantStates.Store(orgID, d)
	c.tenants.Store(orgID, pid)
	return pid, nil
}

// TenantsLoaded returns how many tenants' actors hold their loaded state.
func (c *Core) TenantsLoaded() int {
	n := 0
	c.tenantStates.Range(func(_, v any) bool {
		if v.(*durable[*supplyplan.TenantState]).isLoaded() {
			n++
		}
		return true
	})
	return n
}

// eachTenant calls fn with the id of every tenant whose actor runs.
func (c *Core) eachTenant(fn func(orgID string)) {
	c.tenants.Range(func(k, _ any) bool {
		fn(k.(string))
		return true
	})
}

// outbound returns the outbound actor of an owner (an organization id or "platform").
func (c *Core) outbound(owner string) (*actor.PID, error) {
	if err := c.gate(outboundStream(owner)); err != nil {
		return nil, err
	}
	if pid, ok := c.outbounds.Load(owner); ok {
		return pid.(*actor.PID), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "The service is shutting down")
	}
	if pid, ok := c.outbounds.Load(owner); ok {
		return pid.(*actor.PID), nil
	}
	if err := c.spawnGate(outboundStream(owner), false); err != nil {
		return nil, err
	}
	if owner != supplyplan.PlatformOwner && !c.hasOrg(owner) {
		return nil, supplyplan.NotFound("Organization")
	}
	pid := spawnJournaled(c, &durable[*supplyplan.OutboundState]{
		stream: outboundStream(owner), journal: c.cfg.Journal, log: c.log, snapEvery: c.cfg.SnapshotEvery, now: c.cfg.Now,
		newState: func() *supplyplan.OutboundState { return supplyplan.NewOutboundState(owner) },
	}, "outbound", owner)
	c.outbounds.Store(owner, pid)
	return pid, nil
}

// reportQuarantined logs the stored numbers a tenant's state left out when it loaded (written out
// of bounds by an earlier version; see supplyplan.TenantState.TakeQuarantined) and counts them.
func (c *Core) reportQuarantined(orgID string, q []supplyplan.QuarantinedValue) {
	if len(q) == 0 {
		return
	}
	c.quarantined.Add(int64(len(q)))
	examples := make([]string, 0, min(len(q), 10))
	for _, v := range q[:cap(examples)] {
		examples = append(examples, v.String())
	}
	c.log.Warn("quarantined stored values out of bounds; they are treated as absent", "org", orgID,
		"values", len(q), "bound", supplyplan.MaxStored, "examples", examples)
}

// Quarantined returns how many stored values out of bounds the tenants' states left out since
// the core opened.
func (c *Core) Quarantined() int64 { return c.quarantined.Load() }

// tenantTx runs fn in the tenant actor of orgID.
func tenantTx[T any](ctx context.Context, c *Core, orgID string, fn func(*supplyplan.TenantState) (T, []supplyplan.Record, error)) (T, error) {
	pid, err := c.tenant(orgID)
	if err != nil {
		var zero T
		return zero, err
	}
	return askQueued(ctx, c, pid, c.queuedTenant, fn)
}

// tenantTxSend is tenantTx in two steps: it sends the transaction and returns at once; wait
// answers as tenantTx would. Transactions sent one after the other from one goroutine run in
// that order.
func tenantTxSend[T any](ctx context.Context, c *Core, orgID string, fn func(*supplyplan.TenantState) (T, []supplyplan.Record, error)) (wait func() (T, error)) {
	pid, err := c.tenant(orgID)
	if err != nil {
		return func() (T, error) {
			var zero T
			return zero, err
		}
	}
	return sendQueued(ctx, c, pid, c.queuedTenant, fn)
}

// tenantPeek reads a tenant's state in its actor, answered at once even when a write applied to
// the state is still waiting for its fsync: only for reads of data that no write in flight
// changes (an import job reading its own record while the tenant's previous job's last chunk is
// being made durable), never for an answer to a client.
func tenantPeek[T any](ctx context.Context, c *Core, orgID string, fn func(*supplyplan.TenantState) (T, error)) (T, error) {
	pid, err := c.tenant(orgID)
	if err != nil {
		var zero T
		return zero, err
	}
	return sendTx(ctx, c, pid, c.queuedTenant, true, func(st *supplyplan.TenantState) (T, []supplyplan.Record, error) {
		v, err := fn(st)
		return v, nil, err
	})()
}

// tenantRead runs a read of a tenant's state. It runs on the caller's goroutine under the state's
// read lock when every write applied to the state is durable (durable.read): no message to the
// actor, and reads of a tenant run in parallel. Otherwise (the actor is not started or loading, or a
// write waits for its fsync) it is a transaction of the actor, which answers once that write is
// durable. fn must not change the state nor keep references into its maps.
func tenantRead[T any](ctx context.Context, c *Core, orgID string, fn func(*supplyplan.TenantState) (T, error)) (T, error) {
	if d, ok := c.tenantStates.Load(orgID); ok {
		var v T
		var err error
		if d.(*durable[*supplyplan.TenantState]).read(func(st *supplyplan.TenantState) { v, err = fn(st) }) {
			return v, err
		}
	}
	return tenantTx(ctx, c, orgID, func(st *supplyplan.TenantState) (T, []supplyplan.Record, error) {
		v, err := fn(st)
		return v, nil, err
	})
}

// platformTx runs fn in the platform actor.
func platformTx[T any](ctx context.Context, c *Core, fn func(*supplyplan.PlatformState) (T, []supplyplan.Record, error)) (T, error) {
	pid, err := c.platform()
	if err != nil {
		var zero T
		return zero, err
	}
	return askQueued(ctx, c, pid, c.queuedPlatform, fn)
}

// outboundTx runs fn in the outbound actor of owner.
func outboundTx[T any](ctx context.Context, c *Core, owner string, fn func(*supplyplan.OutboundState) (T, []supplyplan.Record, error)) (T, error) {
	pid, err := c.outbound(owner)
	if err != nil {
		var zero T
		return zero, err
	}
	return askQueued(ctx, c, pid, c.queuedOutbound, fn)
}

// pendingEvents returns the domain events of a transaction's records that wait in an outbox (the
// relay delivers them once the transaction is durable).
func pendingEvents(recs []supplyplan.Record) []supplyplan.DomainEvent {
	var evs []supplyplan.DomainEvent
	for _, r := range recs {
		if r.Kind == supplyplan.KindPendingEvent && !r.Del {
			evs = append(evs, *r.Value.(*supplyplan.DomainEvent))
		}
	}
	return evs
}
