package main

import (
	"context"
	"path/filepath"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/actors"
)

// System is the actor services, each built on one core with what it needs. Every surface gets the
// services it serves (serve.go, surfaces.go), never the whole set.
type System struct {
	Core        *actors.Core
	Forecasts   *actors.Forecasts
	Platform    *actors.Platform
	Forecasting *actors.Forecasting
	Catalog     *actors.Catalog
	Webhooks    *actors.Webhooks
	Alerts      *actors.Alerts
	Transfers   *actors.Transfers
	Imports     *actors.Imports
	Allocation  *actors.Allocation
	Billing     *actors.Billing
	Signals     *actors.Signals
	MCP         *actors.MCP
	Idempotency *actors.Idempotency
	Loops       *actors.LoopCatalog
	LoopRuntime *actors.LoopRuntime

	opened []systemPart // what Open opened, in order
}

// systemPart is a service with a lifecycle.
type systemPart struct {
	name  string
	open  func(context.Context) error
	close func(context.Context) error
}

// newSystem builds the services (unopened). A service is built after the ones it depends on.
func (m *Main) newSystem(journal supplyplan.Journal, ob actors.OutboundConfig, al actors.AlertsConfig, plans supplyplan.PlansConfig,
	loops actors.LoopCatalogConfig) *System {
	cfg := m.Config
	s := &System{}
	s.Core = actors.NewCore(actors.Config{Journal: journal, Logger: m.Log, SnapshotEvery: cfg.SnapshotEvery, Now: cfg.Clock, Metrics: m.Metrics,
		Allocation: supplyplan.AllocationSettings{HoldTTL: cfg.AllocationHoldTTL, Retention: cfg.AllocationRetention,
			CommitOnAllocate: cfg.AllocationCommitOnAllocate, SafetyStock: supplyplan.SafetyStockPolicy{ReorderPointShare: cfg.AllocationSafetyShare},
			TransferLeadTimeDays: cfg.TransferLeadTimeDays, TransferCostPerUnit: cfg.TransferCostPerUnit},
		Gate: m.gateFunc(), FollowPlatform: m.followPlatformFunc()})
	s.Forecasts = actors.NewForecasts(s.Core, m.Demand, int64(cfg.ForecastCacheMB)<<20)
	s.Platform = actors.NewPlatform(s.Core, s.Forecasts)
	s.Forecasting = actors.NewForecasting(s.Core, s.Forecasts)
	s.Catalog = actors.NewCatalog(s.Core, m.Demand)
	s.Webhooks = actors.NewWebhooks(s.Core, ob)
	s.Transfers = actors.NewTransfers(s.Core, actors.TransferConfig{Expiry: cfg.RecommendationExpiry, WindowWeeks: cfg.TransferWindowWeeks,
		LeadTimeDays: cfg.TransferLeadTimeDays, CostPerUnit: cfg.TransferCostPerUnit, MinStockDifferencePct: cfg.TransferMinStockDiffPc},
		s.Forecasts, m.Bus)
	s.Allocation = actors.NewAllocation(s.Core, actors.AllocationConfig{SweepEvery: cfg.AllocationSweepInterval, Now: cfg.Clock}, m.Bus)
	s.Imports = actors.NewImports(s.Core, actors.ImportConfig{Dir: filepath.Join(cfg.DataDir, "imports"), ChunkSize: cfg.ImportChunk,
		DemandChunkSize: cfg.ImportDemandChunk, Workers: cfg.ImportWorkers}, m.Demand, s.Forecasts, s.Allocation, m.Bus)
	s.Alerts = actors.NewAlerts(s.Core, al, m.Demand, s.Forecasts, s.Webhooks, s.Imports)
	s.Billing = actors.NewBilling(s.Core, plans, s.Webhooks)
	s.Signals = actors.NewSignals(s.Core, m.Demand, s.Forecasts, s.Alerts)
	s.MCP = actors.NewMCP(s.Core, s.Webhooks)
	s.Idempotency = actors.NewIdempotency(s.Core)
	refs := &actors.LoopRefs{}
	if loops.References == nil {
		loops.References = refs
	}
	s.Loops = actors.NewLoopCatalog(s.Core, loops)
	s.LoopRuntime = actors.NewLoopRuntime(s.Core, actors.LoopRuntimeConfig{Refs: refs, TimerTick: cfg.LoopTimerTick, Now: cfg.Clock,
		Commitment: s.Billing.LoopCommitment, Retention: cfg.LoopRetention}, s.Loops, m.Bus)
	return s
}

// Open opens the core, then the services that run in the background, in dependency order: the
// loop catalog (publishes the built-in loops), the forecasts (change-history figures left
// pending), deliveries and the relay, alert evaluation, the recommendation sweep, the reservation
// sweep, then the import jobs a stop interrupted.
func (s *System) Open(ctx context.Context) error {
	for _, p := range []systemPart{
		{"actors", s.Core.Open, s.Core.Close},
		{"loop catalog", s.Loops.Open, s.Loops.Close},
		{"forecasts", s.Forecasts.Open, s.Forecasts.Close},
		{"webhooks", s.Webhooks.Open, s.Webhooks.Close},
		{"alerts", s.Alerts.Open, s.Alerts.Close},
		{"transfers", s.Transfers.Open, s.Transfers.Close},
		{"allocation", s.Allocation.Open, s.Allocation.Close},
		{"imports", s.Imports.Open, s.Imports.Close},
		{"loop runtime", s.LoopRuntime.Open, s.LoopRuntime.Close},
	} {
		if err := p.open(ctx); err != nil {
			return err
		}
		s.opened = append(s.opened, p)
	}
	return nil
}

// Close closes what Open opened, in reverse order; the core last drains every actor (pending
// writes durable, final snapshot). step runs and logs each.
func (s *System) Close(ctx context.Context, step func(name string, fn func() error)) {
	for i := len(s.opened) - 1; i >= 0; i-- {
		p := s.opened[i]
		step(p.name, func() error { return p.close(ctx) })
	}
	s.opened = nil
}
