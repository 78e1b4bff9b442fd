package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/actors"
	"github.com/supplyplan/supplyplan/analytics"
	sphttp "github.com/supplyplan/supplyplan/http"
	"github.com/supplyplan/supplyplan/internal/fsutil"
	"github.com/supplyplan/supplyplan/internal/telemetry"
	"github.com/supplyplan/supplyplan/jwtauth"
	"github.com/supplyplan/supplyplan/outbound"
	"github.com/supplyplan/supplyplan/redisstore"
	"github.com/supplyplan/supplyplan/rpc"
	"github.com/supplyplan/supplyplan/streams"
	"github.com/supplyplan/supplyplan/tools"
)

// Main wires the adapters: it opens them in dependency order and closes them in reverse.
type Main struct {
	Config Config
	Log    *slog.Logger
	out    io.Writer
	// LogOutput is where Log writes, when the caller knows it (serve): the request log then
	// writes its lines there itself (flatHandler), in --log-format. nil: request lines go to Log.
	LogOutput io.Writer

	lock    *os.File
	ops     []io.Closer // the operations listeners (--ops-addr, --debug-addr)
	opsAddr string
	// Metrics is the process's metric set, created when an operations listener is configured.
	Metrics  *telemetry.Metrics
	Journal  *streams.Journal // embedded mode's journal (nil in distributed mode)
	Demand   demandStore
	Bus      *streams.Bus
	Signals  *streams.LocalSignalStream
	Kafka    *streams.SignalConsumer
	System   *System
	API      *sphttp.Server
	Sender   *outbound.Sender
	Redis    *redisstore.Store
	Tools    *sphttp.ToolServer
	Registry *rpc.RegistryServer
	Loops    *sphttp.LoopCatalogServer
	Runtime  *sphttp.LoopRuntimeServer

	// LoopAuth verifies the loop runtime's JWTs; Open builds it from the configuration unless set
	// (tests set a fake).
	LoopAuth  jwtauth.Authenticator
	loopAuthC func()

	Console *sphttp.ConsoleServer

	// Owners routes each organization's requests to the node that owns it, on every surface
	// (distributed mode: set before Open, with NodeID, this node's id); nil: embedded.
	Owners supplyplan.Owners
	NodeID string

	// Catalog, Forecaster and Planning back the hosted tools. Open takes the catalog, the forecaster
	// and the transfer recommendations from System.Catalog, System.Forecasts and System.Transfers
	// unless set. Tests may set Catalog, or Planning (both planning contracts).
	Catalog    supplyplan.CatalogService
	Forecaster supplyplan.Forecaster
	Planning   tools.PlanningBackend

	cluster *cluster // the distributed mode's parts (distributed.go); nil: embedded

	unsubscribe func()
	gate        *redisstore.Gate
	rateStore   *redisstore.RateLimits
	mcp         mcpParts // gateway key store, tool deps and health checks of the MCP surfaces
	// bodies bounds the request bodies held at once by the API and the tool service together.
	bodies *sphttp.BodyBudget
}

// NewMain returns an unopened Main; ready lines ("listening api http://...") go to out.
func NewMain(cfg Config, log *slog.Logger, out io.Writer) *Main {
	if out == nil {
		out = io.Discard
	}
	return &Main{Config: cfg, Log: log, out: out}
}

// Open starts every part. On error the caller still calls Close.
func (m *Main) Open(ctx context.Context) error {
	cfg := m.Config
	if cfg.BodyBudget < max(cfg.ImportMaxBytes, cfg.BodyLimit) {
		return fmt.Errorf("--body-bytes-in-flight (%d) must be at least --import-max-bytes (%d) and --body-limit (%d): a request that fits no budget could never be served",
			cfg.BodyBudget, cfg.ImportMaxBytes, cfg.BodyLimit)
	}
	if err := cfg.checkMode(); err != nil {
		return err
	}
	if err := (supplyplan.SafetyStockPolicy{ReorderPointShare: cfg.AllocationSafetyShare}).Validate(); err != nil {
		return fmt.Errorf("--allocation-safety-stock-share: %w", err)
	}
	m.bodies = sphttp.NewBodyBudget(int64(cfg.BodyBudget))
	if cfg.OpsAddr != "" || cfg.DebugAddr != "" {
		m.Metrics = telemetry.New()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}

	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	m.lock = lock

	start := time.Now()
	var j supplyplan.Journal
	if cfg.Mode == "distributed" {
		if err := m.openCluster(); err != nil {
			return err
		}
		j = m.cluster.journal
	} else {
		lj, err := streams.OpenJournal(streams.JournalConfig{Dir: filepath.Join(cfg.DataDir, "journal"), Logger: m.Log, Metrics: m.Metrics})
		if err != nil {
			return err
		}
		m.Journal, j = lj, lj
	}

	if cfg.ClickHouseAddr != "" {
		m.Demand = analytics.NewClickHouseStore(analytics.ClickHouseConfig{Addr: cfg.ClickHouseAddr,
			Database: cfg.ClickHouseDatabase, Username: cfg.ClickHouseUser, Password: cfg.ClickHousePassword, Logger: m.Log})
	} else {
		m.Demand = analytics.NewEmbeddedStore(analytics.EmbeddedConfig{Dir: filepath.Join(cfg.DataDir, "demand"), Logger: m.Log})
	}
	if err := m.Demand.Open(); err != nil {
		return fmt.Errorf("open demand store: %w", err)
	}
	m.Bus = streams.NewBus()

	ob, al, plans, err := m.outboundConfig()
	if err != nil {
		return err
	}
	loops, err := m.loopCatalogConfig()
	if err != nil {
		return err
	}
	m.System = m.newSystem(j, ob, al, plans, loops)
	unsubWebhooks := m.Bus.Subscribe(m.System.Webhooks.HandleEvent)
	unsubAlerts := m.Bus.Subscribe(m.System.Alerts.HandleEvent)
	m.unsubscribe = func() { unsubWebhooks(); unsubAlerts() }
	if err := m.System.Open(ctx); err != nil {
		return err
	}
	m.Signals = streams.NewLocalSignalStream(streams.LocalSignalConfig{Logger: m.Log}, m.System.Signals)
	if err := m.Signals.Open(); err != nil {
		return fmt.Errorf("open signal stream: %w", err)
	}
	if cfg.KafkaBrokers != "" {
		var sink supplyplan.SignalSink = m.System.Signals
		var session time.Duration // the consumer's default
		if m.cluster != nil {     // distributed: to the owner of the organization's partition
			if sink, err = m.openPlacedSignals(); err != nil {
				return err
			}
			session = cfg.NodeSessionTimeout
		}
		m.Kafka = streams.NewSignalConsumer(streams.SignalConsumerConfig{Brokers: strings.Split(cfg.KafkaBrokers, ","),
			Topic: cfg.KafkaTopic, GroupID: cfg.KafkaGroup, Logger: m.Log, Metrics: m.Metrics,
			SessionTimeout: session, HeartbeatInterval: session / 10}, sink)
		if err := m.Kafka.Open(); err != nil {
			return fmt.Errorf("open kafka signal consumer: %w", err)
		}
	}
	credsPath := filepath.Join(cfg.DataDir, "credentials.json")
	if m.cluster == nil {
		if err := m.bootstrap(ctx, credsPath); err != nil {
			return err
		}
	}
	m.Log.Info("state loaded", "took", time.Since(start))
	if err := m.openMCPStores(ctx, credsPath); err != nil {
		return err
	}

	if cfg.Surfaces.all().API {
		limiter, err := m.rateLimiter(plans)
		if err != nil {
			return fmt.Errorf("rate limits: %w", err)
		}
		access, err := m.accessLog()
		if err != nil {
			return err
		}
		m.API = sphttp.NewServer(sphttp.Config{Addr: cfg.APIAddr, BodyLimit: cfg.BodyLimit,
			ImportMaxBytes: cfg.ImportMaxBytes, ImportMaxRows: cfg.ImportMaxRows,
			RequestTimeout: cfg.RequestTimeout, Logger: m.Log, PaymentWebhookSecret: cfg.PaymentSecret, BodyBudget: m.bodies,
			Metrics: m.Metrics, AccessLog: access, RateLimits: limiter, Owners: m.Owners, NodeID: m.NodeID},
			sphttp.Services{Auth: m.System.Platform, Platform: m.System.Platform, Forecasting: m.System.Forecasting,
				Catalog: m.System.Catalog, Imports: m.System.Imports, Demand: m.System.Catalog, Transfers: m.System.Transfers,
				Forecast: m.System.Forecasts, Signals: m.Signals, Alerts: m.System.Alerts, Webhooks: m.System.Webhooks,
				Billing: m.System.Billing, MCP: m.System.MCP, Gateway: m.mcp.gateway, Idempotency: m.System.Idempotency,
				Allocation: m.System.Allocation, Readiness: m.readiness()})
		if err := m.API.Open(); err != nil {
			return err
		}
		fmt.Fprintf(m.out, "listening api http://%s\n", m.API.Addr())
	}
	if err := m.openConsole(credsPath); err != nil {
		return err
	}
	if err := m.openSurfaces(); err != nil {
		return err
	}
	for _, a := range []string{cfg.OpsAddr, cfg.DebugAddr} {
		if a == "" || (a == cfg.OpsAddr && a == cfg.DebugAddr && len(m.ops) > 0) {
			continue
		}
		c, addr, err := startOps(a, m.Metrics)
		if err != nil {
			return err
		}
		m.ops = append(m.ops, c)
		if m.opsAddr == "" {
			m.opsAddr = addr
		}
		fmt.Fprintf(m.out, "listening ops http://%s/metrics\n", addr)
	}
	if m.cluster != nil {
		// Distributed: join the nodes' group last, once the API answers at the advertised address.
		if err := m.joinCluster(); err != nil {
			return err
		}
		m.bootstrapCluster(credsPath)
	}
	return nil
}

// bootstrap creates the demo organization when there is none, and the demo merchant.
func (m *Main) bootstrap(ctx context.Context, credsPath string) error {
	created, err := m.System.Platform.Bootstrap(ctx, func(c supplyplan.Credentials) error { return writeCredentials(credsPath, c) })
	if err != nil {
		return fmt.Errorf("bootstrap demo organization: %w", err)
	}
	if created {
		m.Log.Info("created demo organization", "credentials", credsPath)
	}
	if err := m.System.MCP.EnsureDemoMCP(ctx, func(keys map[string]string) error { return mergeCredentials(credsPath, keys) }); err != nil {
		return fmt.Errorf("ensure demo merchant: %w", err)
	}
	return nil
}

// Close stops accepting requests, finishes in-flight ones, drains the actors and closes storage.
func (m *Main) Close(ctx context.Context) error {
	var errs []error
	step := func(name string, fn func() error) {
		start := time.Now()
		if err := fn(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", name, err))
		}
		m.Log.Info("closed", "part", name, "took", time.Since(start))
	}
	for _, c := range m.ops {
		_ = c.Close()
	}
	m.ops = nil
	if m.API != nil {
		step("api", func() error { return m.API.Close(ctx) })
	}
	if m.Console != nil {
		step("console", func() error { return m.Console.Close(ctx) })
	}
	if m.Registry != nil {
		step("registry", func() error { return m.Registry.Close(ctx) })
	}
	if m.Tools != nil {
		step("tools", func() error { return m.Tools.Close(ctx) })
	}
	if m.Loops != nil {
		step("loop catalog", func() error { return m.Loops.Close(ctx) })
	}
	if m.Runtime != nil {
		step("loop runtime", func() error { return m.Runtime.Close(ctx) })
	}
	if m.loopAuthC != nil {
		m.loopAuthC()
		m.loopAuthC = nil
	}
	if m.Redis != nil {
		step("redis", func() error { return m.Redis.Close(ctx) })
	}
	if m.Kafka != nil {
		step("kafka consumer", func() error { return m.Kafka.Close(ctx) })
	}
	if m.Signals != nil {
		step("signal stream", func() error { return m.Signals.Close(ctx) })
	}
	if m.cluster != nil {
		m.closeMembership(ctx, step)
	}
	if m.System != nil {
		m.System.Close(ctx, step)
	}
	if m.unsubscribe != nil {
		m.unsubscribe()
	}
	if m.Sender != nil {
		m.Sender.Close()
	}
	if m.gate != nil {
		step("redis gate", func() error { return m.gate.Close(ctx) })
	}
	if m.rateStore != nil {
		step("redis rate limits", func() error { return m.rateStore.Close(ctx) })
	}
	if m.Journal != nil {
		step("journal", m.Journal.Close)
	}
	if m.cluster != nil {
		m.closeCluster(ctx, step)
	}
	if m.Demand != nil {
		step("demand store", m.Demand.Close)
	}
	if m.lock != nil {
		_ = m.lock.Close() // releases the flock
		m.lock = nil
	}
	return errors.Join(errs...)
}

// OpsAddr is the address of the operations listener ("" when none runs).
func (m *Main) OpsAddr() string { return m.opsAddr }

// readiness names the checks of GET /ready: the journal, the demand store when it is remote, Redis
// and the Kafka brokers when they are configured.
func (m *Main) readiness() map[string]func(context.Context) error {
	checks := map[string]func(context.Context) error{}
	if m.Journal != nil {
		checks["journal"] = m.Journal.Ping
	}
	if m.cluster != nil {
		checks["journal"] = m.cluster.table.Ping
	}
	if p, ok := m.Demand.(interface{ Ping(context.Context) error }); ok {
		checks["clickhouse"] = p.Ping
	}
	if m.Redis != nil {
		checks["redis"] = m.Redis.Ping
	}
	if m.Kafka != nil {
		checks["kafka"] = m.Kafka.Ping
	}
	return checks
}

// writeCredentials writes the demo credentials file atomically and durably with mode 0600.
func writeCredentials(path string, c supplyplan.Credentials) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileBytes(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	return nil
}

// lockDataDir takes an exclusive lock on <dir>/LOCK so that two processes never write one journal.
func lockDataDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("data dir %s is in use by another supplyplan process: %w", dir, err)
	}
	return f, nil
}

// demandStore is a DemandStore with a lifecycle (both implementations).
type demandStore interface {
	supplyplan.DemandStore
	Open() error
}

// outboundConfig builds the sender and the webhook, alert and billing settings.
func (m *Main) outboundConfig() (ob actors.OutboundConfig, al actors.AlertsConfig, plans supplyplan.PlansConfig, err error) {
	cfg := m.Config
	m.Sender = outbound.New(outbound.Config{AllowPrivate: cfg.WebhookAllowPriv, Timeout: cfg.WebhookTimeout,
		SMTPAddr: cfg.SMTPAddr, SMTPFrom: cfg.SMTPFrom, SMTPUsername: cfg.SMTPUsername, SMTPPassword: cfg.SMTPPassword,
		SMTPStartTLS: cfg.SMTPStartTLS, SMTPInsecure: cfg.SMTPInsecure})
	ob = actors.OutboundConfig{Sender: m.Sender, Workers: cfg.DeliveryWorkers, AttemptTimeout: cfg.WebhookTimeout,
		OpsAlertURL: cfg.OpsAlertURL, FederationSecret: cfg.FederationSecret}
	al = actors.AlertsConfig{EvalInterval: cfg.AlertEvalInterval, SignalDebounce: cfg.AlertSignalDebounce,
		Thresholds: supplyplan.DefaultAlertThresholds()}
	plans = supplyplan.DefaultPlans()
	switch cfg.SMTPStartTLS {
	case "auto", "always", "never":
	default:
		return ob, al, plans, fmt.Errorf("--smtp-starttls must be auto, always or never")
	}
	if cfg.FederationSecret != "" {
		if _, err := supplyplan.DecodeWebhookSecret(cfg.FederationSecret); err != nil {
			return ob, al, plans, fmt.Errorf("--federation-webhook-secret: %w", err)
		}
	}
	ob.WebhookRetry, ob.AlertRetry = supplyplan.DefaultWebhookRetry, supplyplan.DefaultAlertRetry
	ob.WebhookRetry.Base, ob.AlertRetry.Base = cfg.RetryBase, cfg.RetryBase
	ob.WebhookRetry.MaxAttempts, ob.AlertRetry.MaxAttempts = max(cfg.WebhookMaxAttempts, 1), max(cfg.AlertMaxAttempts, 1)
	if cfg.AlertThresholds != "" {
		b, err := os.ReadFile(cfg.AlertThresholds)
		if err != nil {
			return ob, al, plans, fmt.Errorf("--alert-thresholds: %w", err)
		}
		if al.Thresholds, err = supplyplan.ParseAlertThresholds(b); err != nil {
			return ob, al, plans, fmt.Errorf("--alert-thresholds %s: %w", cfg.AlertThresholds, err)
		}
	}
	if cfg.PlansFile != "" {
		b, err := os.ReadFile(cfg.PlansFile)
		if err != nil {
			return ob, al, plans, fmt.Errorf("--plans-file: %w", err)
		}
		if plans, err = supplyplan.ParsePlans(b); err != nil {
			return ob, al, plans, fmt.Errorf("--plans-file %s: %w", cfg.PlansFile, err)
		}
	}
	if cfg.RedisAddr != "" {
		g := redisstore.NewGate(redisstore.Config{Addr: cfg.RedisAddr, Password: cfg.RedisPassword, Prefix: cfg.RedisPrefix})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Open(ctx); err != nil {
			return ob, al, plans, err
		}
		m.gate, al.Gate = g, g
	}
	if cfg.PaymentSecret == "" {
		m.Log.Info("payment-provider webhook disabled: PAYMENT_PROVIDER_WEBHOOK_SECRET is not set")
	}
	return ob, al, plans, nil
}

// accessLog is the request log of the listeners (nil when --request-log is off).
func (m *Main) accessLog() (*slog.Logger, error) {
	if !m.Config.RequestLog {
		return nil, nil
	}
	if m.LogOutput == nil {
		return m.Log, nil
	}
	level, err := parseLevel(m.Config.LogLevel)
	if err != nil {
		return nil, err
	}
	return slog.New(newFlatHandler(m.LogOutput, level, m.Config.LogFormat)), nil
}
