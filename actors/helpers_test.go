package actors

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/streams"
)

// services is every service of the package, wired on one core as cmd/supplyplan wires them.
type services struct {
	dir         string
	journal     supplyplan.Journal
	core        *Core
	forecasts   *Forecasts
	platform    *Platform
	forecasting *Forecasting
	catalog     *Catalog
	webhooks    *Webhooks
	alerts      *Alerts
	transfers   *Transfers
	imports     *Imports
	allocation  *Allocation
	billing     *Billing
	signals     *Signals
	mcp         *MCP
	idempotency *Idempotency
	closers     []func(context.Context) error
}

// options are what a test changes in the wiring (zero values: the defaults).
type options struct {
	dir       string             // data dir (default: a new temporary one)
	journal   supplyplan.Journal // default: a streams.Journal in dir
	demand    supplyplan.DemandStore
	events    supplyplan.EventPublisher
	imports   ImportConfig
	outbound  OutboundConfig
	alerts    AlertsConfig
	transfers TransferConfig
	now       func() time.Time
	// allocation configures the allocation service, allocSettings every tenant state's allocation.
	allocation    AllocationConfig
	allocSettings supplyplan.AllocationSettings
}

// newServices builds and opens every service on a core, in dependency order; t.Cleanup closes
// them in reverse order. It does not bootstrap an organization (see bootstrap).
func newServices(t testing.TB, o options) *services {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	s := &services{dir: o.dir, journal: o.journal}
	if s.journal == nil {
		j, err := streams.OpenJournal(streams.JournalConfig{Dir: filepath.Join(o.dir, "journal")})
		if err != nil {
			t.Fatal(err)
		}
		s.journal = j
		s.closers = append(s.closers, func(context.Context) error { return j.Close() })
	}
	if o.imports.Dir == "" {
		o.imports.Dir = filepath.Join(o.dir, "imports")
	}
	if o.alerts.EvalInterval == 0 {
		o.alerts.EvalInterval = -1 // tests evaluate when they ask
	}
	s.core = NewCore(Config{Journal: s.journal, Now: o.now, Allocation: o.allocSettings})
	s.forecasts = NewForecasts(s.core, o.demand, 0)
	s.platform = NewPlatform(s.core, s.forecasts)
	s.forecasting = NewForecasting(s.core, s.forecasts)
	s.catalog = NewCatalog(s.core, o.demand)
	s.webhooks = NewWebhooks(s.core, o.outbound)
	s.allocation = NewAllocation(s.core, o.allocation, o.events)
	s.imports = NewImports(s.core, o.imports, o.demand, s.forecasts, s.allocation, o.events)
	s.alerts = NewAlerts(s.core, o.alerts, o.demand, s.forecasts, s.webhooks, s.imports)
	s.transfers = NewTransfers(s.core, o.transfers, s.forecasts, o.events)
	s.billing = NewBilling(s.core, supplyplan.PlansConfig{}, s.webhooks)
	s.signals = NewSignals(s.core, o.demand, s.forecasts, s.alerts)
	s.mcp = NewMCP(s.core, s.webhooks)
	s.idempotency = NewIdempotency(s.core)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Cleanup(func() { s.close(t) })
	type part struct {
		open  func(context.Context) error
		close func(context.Context) error
	}
	for _, p := range []part{{s.core.Open, s.core.Close}, {s.forecasts.Open, s.forecasts.Close},
		{s.webhooks.Open, s.webhooks.Close}, {s.alerts.Open, s.alerts.Close},
		{s.transfers.Open, s.transfers.Close}, {s.allocation.Open, s.allocation.Close}, {s.imports.Open, s.imports.Close}} {
		if err := p.open(ctx); err != nil {
			t.Fatal(err)
		}
		s.closers = append(s.closers, p.close)
	}
	return s
}

// close closes what newServices opened, in reverse order (once).
func (s *services) close(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	s.closers = nil
}

// bootstrap creates the demo organization and returns an ADMIN principal of it.
func (s *services) bootstrap(t testing.TB) supplyplan.Principal {
	t.Helper()
	var creds supplyplan.Credentials
	if _, err := s.platform.Bootstrap(context.Background(), func(c supplyplan.Credentials) error { creds = c; return nil }); err != nil {
		t.Fatal(err)
	}
	return supplyplan.Principal{KeyID: "test", OrgID: creds.Organization.ID, Role: supplyplan.RoleAdmin}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
