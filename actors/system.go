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
)

// Config configures the actor system.
type Config struct {
	Journal supplyplan.Journal
	Logger  *slog.Logger
	// SnapshotEvery takes a snapshot of a stream after this many journal entries (default 10000).
	SnapshotEvery int
	// Demand is the demand history store (embedded or ClickHouse).
	Demand supplyplan.DemandStore
	// Events receives domain events (import.completed, ...); nil drops them.
	Events supplyplan.EventPublisher
	// Imports configures bulk import jobs.
	Imports ImportConfig
	// Outbound configures alerts, outbound webhooks and billing.
	Outbound OutboundConfig
	// Forecaster predicts demand for transfers (nil: no demand is forecast).
	Forecaster supplyplan.Forecaster
	// Transfers configures transfer recommendations.
	Transfers TransferConfig
	// Now is the clock of idempotency-key expiry (tests); nil: time.Now.
	Now func() time.Time
	// ForecastCacheBytes bounds the memory of computed forecasts kept for reuse, across tenants
	// (least recently used first out; default DefaultForecastCacheBytes).
	ForecastCacheBytes int64
}

// System owns the hollywood engine, the platform actor and the tenant actors. It implements the
// root package's Authenticator, PlatformService and ForecastingService.
type System struct {
	cfg    Config
	log    *slog.Logger
	engine *actor.Engine

	platformPID *actor.PID
	index       atomic.Pointer[platformIndex]
	imports     *importManager
	deliveries  *deliveryManager
	relay       *eventRelay
	alerts      *alertEvaluator
	outbounds   sync.Map // owner -> *actor.PID
	fc          *forecaster
	changes     *changeRecorder
	idem        idempotency
	stop        chan struct{}
	background  sync.WaitGroup

	mu      sync.Mutex
	tenants sync.Map // orgID -> *actor.PID
	closed  bool

	quarantined atomic.Int64 // stored values out of bounds left out at load (reportQuarantined)
}

const platformStream = "platform"

func tenantStream(orgID string) string { return "tenant-" + orgID }

// NewSystem returns an unopened system.
func NewSystem(cfg Config) *System {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SnapshotEvery <= 0 {
		cfg.SnapshotEvery = 10000
	}
	cfg.Transfers = cfg.Transfers.withDefaults()
	s := &System{cfg: cfg, log: cfg.Logger, stop: make(chan struct{})}
	s.index.Store(buildIndex(supplyplan.NewPlatformState()))
	s.imports = newImportManager(s, cfg.Imports)
	s.cfg.Outbound.defaults()
	s.deliveries = newDeliveryManager(s, &s.cfg.Outbound)
	s.relay = newEventRelay(s, &s.cfg.Outbound)
	s.alerts = newAlertEvaluator(s, &s.cfg.Outbound)
	s.fc = newForecaster(s, cfg.ForecastCacheBytes)
	s.changes = newChangeRecorder(s)
	if s.cfg.Forecaster == nil {
		s.cfg.Forecaster = s // the built-in engine, unless a test plugs another
	}
	return s
}

// Open starts the engine, loads the platform state and starts every known tenant's actor.
func (s *System) Open(ctx context.Context) error {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return fmt.Errorf("start actor engine: %w", err)
	}
	s.engine = e
	s.platformPID = e.Spawn(func() actor.Receiver {
		return &durable[*supplyplan.PlatformState]{
			stream: platformStream, journal: s.cfg.Journal, log: s.log, snapEvery: s.cfg.SnapshotEvery, now: s.cfg.Now,
			newState:   supplyplan.NewPlatformState,
			afterApply: func(st *supplyplan.PlatformState) { s.index.Store(buildIndex(st)) },
		}
	}, "platform", actor.WithID("root"), actor.WithMaxRestarts(1<<30))
	// Wait for the platform state: authentication needs it.
	if _, err := platformTx(ctx, s, func(*supplyplan.PlatformState) (struct{}, []supplyplan.Record, error) {
		return struct{}{}, nil, nil
	}); err != nil {
		return fmt.Errorf("load platform state: %w", err)
	}
	var orgs []string
	for id := range s.index.Load().orgs {
		if _, err := s.tenant(id); err != nil {
			return err
		}
		orgs = append(orgs, id)
	}
	// Jobs accepted before a restart continue (in the background: start-up does not wait for them).
	if err := s.imports.resume(ctx, orgs); err != nil {
		return err
	}
	s.every(s.cfg.Transfers.SweepEvery, s.sweepRecommendations)
	for _, org := range orgs { // change-history figures left pending by a stop or a crash
		s.changes.schedule(org)
	}
	return s.openOutbound(ctx, orgs)
}

// every runs fn on a ticker until Close.
func (s *System) every(d time.Duration, fn func(context.Context)) {
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), d)
				fn(ctx)
				cancel()
			}
		}
	}()
}

// Close drains every actor (pending writes durable, final snapshot) and stops them. Callers stop
// the transports first so that nothing new arrives.
func (s *System) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed || s.engine == nil {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.background.Wait()
	s.changes.close()
	if err := s.imports.close(ctx); err != nil {
		s.log.Warn("import jobs did not stop in time", "err", err)
	}
	s.closeOutbound(ctx)
	var pids []*actor.PID
	s.tenants.Range(func(_, v any) bool {
		pids = append(pids, v.(*actor.PID))
		return true
	})
	s.outbounds.Range(func(_, v any) bool {
		pids = append(pids, v.(*actor.PID))
		return true
	})
	pids = append(pids, s.platformPID)
	var wg sync.WaitGroup
	for _, pid := range pids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{})
			s.engine.Send(pid, drainMsg{done: done})
			select {
			case <-done:
			case <-ctx.Done():
			}
			// Everything queued before the drain has been handled, so Poison drops nothing.
			select {
			case <-s.engine.Poison(pid).Done():
			case <-ctx.Done():
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// tenant returns the actor of an organization, spawning it on first use.
func (s *System) tenant(orgID string) (*actor.PID, error) {
	if pid, ok := s.tenants.Load(orgID); ok {
		return pid.(*actor.PID), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "The service is shutting down")
	}
	if pid, ok := s.tenants.Load(orgID); ok {
		return pid.(*actor.PID), nil
	}
	if _, ok := s.index.Load().orgs[orgID]; !ok {
		return nil, supplyplan.NotFound("Organization")
	}
	pid := s.engine.Spawn(func() actor.Receiver {
		return &durable[*supplyplan.TenantState]{
			stream: tenantStream(orgID), journal: s.cfg.Journal, log: s.log, snapEvery: s.cfg.SnapshotEvery, now: s.cfg.Now,
			newState:   func() *supplyplan.TenantState { return supplyplan.NewTenantState(orgID) },
			afterApply: func(st *supplyplan.TenantState) { s.reportQuarantined(orgID, st.TakeQuarantined()) },
		}
	}, "tenant", actor.WithID(orgID), actor.WithMaxRestarts(1<<30))
	s.tenants.Store(orgID, pid)
	return pid, nil
}

// reportQuarantined logs the stored numbers a tenant's state left out when it loaded (written out
// of bounds by an earlier version; see supplyplan.TenantState.TakeQuarantined) and counts them.
func (s *System) reportQuarantined(orgID string, q []supplyplan.QuarantinedValue) {
	if len(q) == 0 {
		return
	}
	s.quarantined.Add(int64(len(q)))
	examples := make([]string, 0, min(len(q), 10))
	for _, v := range q[:cap(examples)] {
		examples = append(examples, v.String())
	}
	s.log.Warn("quarantined stored values out of bounds; they are treated as absent", "org", orgID,
		"values", len(q), "bound", supplyplan.MaxStored, "examples", examples)
}

// Quarantined returns how many stored values out of bounds the tenants' states left out since
// the system opened.
func (s *System) Quarantined() int64 { return s.quarantined.Load() }

// tenantTx runs fn in the tenant actor of orgID.
func tenantTx[T any](ctx context.Context, s *System, orgID string, fn func(*supplyplan.TenantState) (T, []supplyplan.Record, error)) (T, error) {
	pid, err := s.tenant(orgID)
	if err != nil {
		var zero T
		return zero, err
	}
	return ask(ctx, s.engine, pid, fn)
}

// platformTx runs fn in the platform actor.
func platformTx[T any](ctx context.Context, s *System, fn func(*supplyplan.PlatformState) (T, []supplyplan.Record, error)) (T, error) {
	return ask(ctx, s.engine, s.platformPID, fn)
}
