package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/supplyplan/supplyplan/jwtauth"
)

// Config is every setting of `supplyplan serve`. Each flag falls back to an environment variable.
type Config struct {
	DataDir         string
	APIAddr         string
	LogLevel        string
	RequestTimeout  time.Duration
	ShutdownTimeout time.Duration
	BodyLimit       int
	BodyBudget      int
	SnapshotEvery   int
	DebugAddr       string
	// OpsAddr is the operations listener: /metrics, pprof, /debug/memory (off when empty).
	OpsAddr string
	// LogFormat is text or json; RequestLog writes one line per API request.
	LogFormat  string
	RequestLog bool
	// Rate limits of the REST API (docs/operations.md#rate-limits); 0 rps: no limit.
	RateLimitRPS         float64
	RateLimitBurst       int
	RateLimitOrgRPS      float64
	RateLimitOrgBurst    int
	RateLimitImportRPS   float64
	RateLimitImportBurst int
	// ForecastCacheMB bounds the memory of computed forecasts kept for reuse.
	ForecastCacheMB int
	// GCHeadroomPct bounds the heap's growth past the live data between collections (gc.go).
	GCHeadroomPct int
	// ExtraProcs is how many more Ps than the runtime's default the scheduler gets (procs.go).
	ExtraProcs int

	KafkaBrokers string
	KafkaTopic   string
	KafkaGroup   string

	// Mode is embedded (one process, local journal) or distributed (docs/distributed.md): the
	// journal on Kafka (JournalTopic, JournalPartitions), nodes in the NodeGroup consumer group,
	// each known as NodeID and reached at AdvertiseAddr (default: APIAddr).
	Mode              string
	JournalTopic      string
	JournalPartitions int
	NodeGroup         string
	NodeID            string
	AdvertiseAddr     string

	// NodeSessionTimeout is the session of a node in the nodes' group (and, in distributed
	// mode, in the demand-signal consumer's): a node silent this long loses its partitions.
	NodeSessionTimeout time.Duration

	ClickHouseAddr     string
	ClickHouseDatabase string
	ClickHouseUser     string
	ClickHousePassword string

	ImportMaxRows     int
	ImportMaxBytes    int
	ImportChunk       int
	ImportDemandChunk int
	ImportWorkers     int

	RedisAddr              string
	RedisPassword          string
	RedisPrefix            string
	SMTPAddr               string
	SMTPFrom               string
	SMTPUsername           string
	SMTPPassword           string
	SMTPStartTLS           string
	SMTPInsecure           bool
	WebhookAllowPriv       bool
	WebhookTimeout         time.Duration
	DeliveryWorkers        int
	RetryBase              time.Duration
	WebhookMaxAttempts     int
	AlertMaxAttempts       int
	AlertEvalInterval      time.Duration
	AlertThresholds        string
	AlertSignalDebounce    time.Duration
	PlansFile              string
	PaymentSecret          string
	OpsAlertURL            string
	FederationSecret       string
	RecommendationExpiry   time.Duration
	TransferWindowWeeks    int
	TransferLeadTimeDays   float64
	TransferCostPerUnit    float64
	TransferMinStockDiffPc float64

	// Order allocation (docs/allocation.md).
	AllocationHoldTTL          time.Duration
	AllocationSweepInterval    time.Duration
	AllocationRetention        time.Duration
	LoopRetention              time.Duration
	AllocationCommitOnAllocate bool
	AllocationSafetyShare      float64

	// MCP surfaces.
	RegistryAddr      string
	ToolsAddr         string
	ToolsPublicURL    string
	ToolsSecret       string
	MCPAllowedOrigins string
	MCPPageSize       int

	// Operator console (docs/console.md).
	ConsoleAddr        string
	ConsoleSessionTTL  time.Duration
	ConsoleSessionIdle time.Duration
	ConsoleSecure      bool

	// Loop catalog.
	LoopCatalogAddr string
	LoopSigningKey  string

	// Loop runtime (docs/loop-runtime-api.md).
	LoopRuntimeAddr string
	LoopJWTIssuer   string // comma-separated trusted issuers; empty: the local issuer in the data dir
	LoopJWTAudience string
	LoopJWKSURL     string
	LoopJWKSFile    string
	// LoopTimerTick is how often due loop timeouts are looked for (tests; no flag). 0: 1s.
	LoopTimerTick time.Duration
	// LoopAuth, when set, verifies the loop runtime's tokens instead of the configured issuers
	// (tests only; no flag).
	LoopAuth jwtauth.Authenticator

	envErr error // first environment variable that did not parse (EnvError)

	// Surfaces chooses what Open starts (serve: all; registry, tools: one). Zero means all.
	Surfaces Surfaces
	// Clock is the clock of idempotency-key expiry and of order allocation (reservation holds)
	// (tests only; no flag). nil: time.Now.
	Clock func() time.Time
}

// Surfaces selects the servers Main runs.
type Surfaces struct{ API, Registry, Tools, LoopCatalog, LoopRuntime, Console bool }

func (s Surfaces) all() Surfaces {
	if !s.API && !s.Registry && !s.Tools && !s.LoopCatalog && !s.LoopRuntime && !s.Console {
		return Surfaces{API: true, Registry: true, Tools: true, LoopCatalog: true, LoopRuntime: true, Console: true}
	}
	return s
}

// DefaultConfig returns the embedded defaults, overridden by the environment. A variable whose
// value does not parse is reported by EnvError rather than silently ignored.
func DefaultConfig() Config {
	var env envReader
	envString, envInt, envDuration, envFloat, envBool := env.str, env.int, env.duration, env.float, env.bool
	c := Config{
		DataDir:         envString("SUPPLYPLAN_DATA_DIR", "./data"),
		APIAddr:         envString("SUPPLYPLAN_API_ADDR", "127.0.0.1:8080"),
		LogLevel:        envString("SUPPLYPLAN_LOG_LEVEL", "info"),
		RequestTimeout:  envDuration("SUPPLYPLAN_REQUEST_TIMEOUT", 30*time.Second),
		ShutdownTimeout: envDuration("SUPPLYPLAN_SHUTDOWN_TIMEOUT", 30*time.Second),
		BodyLimit:       envInt("SUPPLYPLAN_BODY_LIMIT", 1<<20),
		BodyBudget:      envInt("SUPPLYPLAN_BODY_BYTES_IN_FLIGHT", 256<<20),
		SnapshotEvery:   envInt("SUPPLYPLAN_SNAPSHOT_EVERY", 10000),
		ForecastCacheMB: envInt("SUPPLYPLAN_FORECAST_CACHE_MB", 1024),
		GCHeadroomPct:   envInt("SUPPLYPLAN_GC_HEADROOM_PCT", 50),
		ExtraProcs:      envInt("SUPPLYPLAN_EXTRA_PROCS", 1),
		DebugAddr:       envString("SUPPLYPLAN_DEBUG_ADDR", ""),
		OpsAddr:         envString("SUPPLYPLAN_OPS_ADDR", ""),
		LogFormat:       envString("SUPPLYPLAN_LOG_FORMAT", "text"),
		RequestLog:      envBool("SUPPLYPLAN_REQUEST_LOG", true),

		RateLimitRPS:         envFloat("SUPPLYPLAN_RATE_LIMIT_RPS", 100000),
		RateLimitBurst:       envInt("SUPPLYPLAN_RATE_LIMIT_BURST", 200000),
		RateLimitOrgRPS:      envFloat("SUPPLYPLAN_RATE_LIMIT_ORG_RPS", 200000),
		RateLimitOrgBurst:    envInt("SUPPLYPLAN_RATE_LIMIT_ORG_BURST", 400000),
		RateLimitImportRPS:   envFloat("SUPPLYPLAN_RATE_LIMIT_IMPORT_RPS", 100),
		RateLimitImportBurst: envInt("SUPPLYPLAN_RATE_LIMIT_IMPORT_BURST", 200),

		KafkaBrokers: envString("SUPPLYPLAN_KAFKA_BROKERS", ""),
		KafkaTopic:   envString("SUPPLYPLAN_KAFKA_TOPIC", "supplyplan.demand-signals"),
		KafkaGroup:   envString("SUPPLYPLAN_KAFKA_GROUP", "supplyplan-demand-signals"),

		Mode:              envString("SUPPLYPLAN_MODE", "embedded"),
		JournalTopic:      envString("SUPPLYPLAN_JOURNAL_TOPIC", "supplyplan.journal"),
		JournalPartitions: envInt("SUPPLYPLAN_JOURNAL_PARTITIONS", 64),
		NodeGroup:         envString("SUPPLYPLAN_NODE_GROUP", "supplyplan-nodes"),
		NodeID:            envString("SUPPLYPLAN_NODE_ID", hostname()),
		AdvertiseAddr:     envString("SUPPLYPLAN_ADVERTISE_ADDR", ""),

		NodeSessionTimeout: envDuration("SUPPLYPLAN_NODE_SESSION_TIMEOUT", 10*time.Second),

		ClickHouseAddr:     envString("SUPPLYPLAN_CLICKHOUSE_ADDR", ""),
		ClickHouseDatabase: envString("SUPPLYPLAN_CLICKHOUSE_DATABASE", "supplyplan"),
		ClickHouseUser:     envString("SUPPLYPLAN_CLICKHOUSE_USER", "default"),
		ClickHousePassword: envString("SUPPLYPLAN_CLICKHOUSE_PASSWORD", ""),

		ImportMaxRows:     envInt("SUPPLYPLAN_IMPORT_MAX_ROWS", 50000),
		ImportMaxBytes:    envInt("SUPPLYPLAN_IMPORT_MAX_BYTES", 32<<20),
		ImportChunk:       envInt("SUPPLYPLAN_IMPORT_CHUNK", 5000),
		ImportDemandChunk: envInt("SUPPLYPLAN_IMPORT_DEMAND_CHUNK", 50000),
		ImportWorkers:     envInt("SUPPLYPLAN_IMPORT_WORKERS", 2),

		SMTPAddr:               envString("SUPPLYPLAN_SMTP_ADDR", ""),
		SMTPFrom:               envString("SUPPLYPLAN_SMTP_FROM", "supplyplan@localhost"),
		SMTPUsername:           envString("SUPPLYPLAN_SMTP_USERNAME", ""),
		SMTPPassword:           envString("SUPPLYPLAN_SMTP_PASSWORD", ""),
		SMTPStartTLS:           envString("SUPPLYPLAN_SMTP_STARTTLS", "auto"),
		SMTPInsecure:           envBool("SUPPLYPLAN_SMTP_INSECURE_SKIP_VERIFY", false),
		WebhookAllowPriv:       envBool("SUPPLYPLAN_WEBHOOK_ALLOW_PRIVATE", false),
		WebhookTimeout:         envDuration("SUPPLYPLAN_WEBHOOK_TIMEOUT", 10*time.Second),
		DeliveryWorkers:        envInt("SUPPLYPLAN_DELIVERY_WORKERS", 16),
		RetryBase:              envDuration("SUPPLYPLAN_RETRY_BASE", 30*time.Second),
		WebhookMaxAttempts:     envInt("SUPPLYPLAN_WEBHOOK_MAX_ATTEMPTS", 12),
		AlertMaxAttempts:       envInt("SUPPLYPLAN_ALERT_MAX_ATTEMPTS", 5),
		AlertEvalInterval:      envDuration("SUPPLYPLAN_ALERT_EVAL_INTERVAL", 15*time.Minute),
		AlertThresholds:        envString("SUPPLYPLAN_ALERT_THRESHOLDS", ""),
		PlansFile:              envString("SUPPLYPLAN_PLANS_FILE", ""),
		PaymentSecret:          envString("PAYMENT_PROVIDER_WEBHOOK_SECRET", ""),
		OpsAlertURL:            envString("SUPPLYPLAN_OPS_ALERT_URL", ""),
		FederationSecret:       envString("SUPPLYPLAN_FEDERATION_WEBHOOK_SECRET", ""),
		RecommendationExpiry:   envDuration("SUPPLYPLAN_RECOMMENDATION_EXPIRY", 72*time.Hour),
		TransferWindowWeeks:    envInt("SUPPLYPLAN_TRANSFER_WINDOW_WEEKS", 8),
		TransferLeadTimeDays:   envFloat("SUPPLYPLAN_TRANSFER_LEAD_TIME_DAYS", 3),
		TransferCostPerUnit:    envFloat("SUPPLYPLAN_TRANSFER_COST_PER_UNIT", 0.5),
		TransferMinStockDiffPc: envFloat("SUPPLYPLAN_TRANSFER_MIN_STOCK_DIFFERENCE_PCT", 0.2),

		AllocationHoldTTL:          envDuration("SUPPLYPLAN_ALLOCATION_HOLD_TTL", 30*time.Minute),
		AllocationSweepInterval:    envDuration("SUPPLYPLAN_ALLOCATION_SWEEP_INTERVAL", time.Minute),
		AllocationRetention:        envDuration("SUPPLYPLAN_ALLOCATION_RETENTION", 7*24*time.Hour),
		LoopRetention:              envDuration("SUPPLYPLAN_LOOP_RETENTION", 30*24*time.Hour),
		AllocationCommitOnAllocate: envBool("SUPPLYPLAN_ALLOCATION_COMMIT_ON_ALLOCATE", false),
		AllocationSafetyShare:      envFloat("SUPPLYPLAN_ALLOCATION_SAFETY_STOCK_SHARE", 0),

		RegistryAddr:       envString("SUPPLYPLAN_REGISTRY_ADDR", "127.0.0.1:3015"),
		ToolsAddr:          envString("SUPPLYPLAN_TOOLS_ADDR", "127.0.0.1:8081"),
		ToolsPublicURL:     envString("SUPPLYPLAN_TOOLS_PUBLIC_URL", ""),
		ToolsSecret:        envString("SUPPLYPLAN_TOOLS_SECRET", ""),
		MCPAllowedOrigins:  envString("SUPPLYPLAN_MCP_ALLOWED_ORIGINS", ""),
		MCPPageSize:        envInt("SUPPLYPLAN_MCP_PAGE_SIZE", 50),
		LoopCatalogAddr:    envString("SUPPLYPLAN_LOOP_CATALOG_ADDR", "127.0.0.1:3011"),
		LoopSigningKey:     envString("SUPPLYPLAN_LOOP_SIGNING_KEY", ""),
		LoopRuntimeAddr:    envString("SUPPLYPLAN_LOOP_RUNTIME_ADDR", "127.0.0.1:3012"),
		LoopJWTIssuer:      envString("SUPPLYPLAN_LOOP_JWT_ISSUER", ""),
		LoopJWTAudience:    envString("SUPPLYPLAN_LOOP_JWT_AUDIENCE", "supplyplan-loops"),
		LoopJWKSURL:        envString("SUPPLYPLAN_LOOP_JWKS_URL", ""),
		LoopJWKSFile:       envString("SUPPLYPLAN_LOOP_JWKS_FILE", ""),
		RedisAddr:          envString("SUPPLYPLAN_REDIS_ADDR", ""),
		RedisPassword:      envString("SUPPLYPLAN_REDIS_PASSWORD", ""),
		RedisPrefix:        envString("SUPPLYPLAN_REDIS_PREFIX", "supplyplan:"),
		ConsoleAddr:        envString("SUPPLYPLAN_CONSOLE_ADDR", "127.0.0.1:3000"),
		ConsoleSessionTTL:  envDuration("SUPPLYPLAN_CONSOLE_SESSION_TTL", 12*time.Hour),
		ConsoleSessionIdle: envDuration("SUPPLYPLAN_CONSOLE_SESSION_IDLE", 2*time.Hour),
		ConsoleSecure:      envBool("SUPPLYPLAN_CONSOLE_SECURE_COOKIE", false),

		AlertSignalDebounce: envDuration("SUPPLYPLAN_ALERT_SIGNAL_DEBOUNCE", 5*time.Second),
	}
	c.envErr = env.err
	return c
}

// EnvError names the first environment variable whose value could not be parsed, or is nil.
func (c Config) EnvError() error { return c.envErr }

// Bind declares the flags; their defaults are the values already in c.
func (c *Config) Bind(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data", c.DataDir, "data directory: journal, snapshots, credentials.json (SUPPLYPLAN_DATA_DIR)")
	fs.StringVar(&c.APIAddr, "api-addr", c.APIAddr, "REST API listen address (SUPPLYPLAN_API_ADDR)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (SUPPLYPLAN_LOG_LEVEL)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "deadline of each API request (SUPPLYPLAN_REQUEST_TIMEOUT)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long SIGTERM waits for in-flight work (SUPPLYPLAN_SHUTDOWN_TIMEOUT)")
	fs.IntVar(&c.BodyLimit, "body-limit", c.BodyLimit, "largest JSON body of the forecasting, transfers, alerts and platform endpoints, bytes (SUPPLYPLAN_BODY_LIMIT)")
	fs.IntVar(&c.BodyBudget, "body-bytes-in-flight", c.BodyBudget, "request-body bytes held in memory at once across every connection of the API and the tool service; beyond it requests get 503 with Retry-After; at least --import-max-bytes (SUPPLYPLAN_BODY_BYTES_IN_FLIGHT)")
	fs.StringVar(&c.OpsAddr, "ops-addr", c.OpsAddr, "operations listener: Prometheus metrics at http://<addr>/metrics, Go pprof at /debug/pprof/, /debug/memory; no authentication, keep it private (off when empty) (SUPPLYPLAN_OPS_ADDR)")
	fs.StringVar(&c.DebugAddr, "debug-addr", c.DebugAddr, "older name of --ops-addr: serves the same listener (off when empty) (SUPPLYPLAN_DEBUG_ADDR)")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log line format: text or json (SUPPLYPLAN_LOG_FORMAT)")
	fs.BoolVar(&c.RequestLog, "request-log", c.RequestLog, "log one line per REST API request at info (5xx at error) with its request id, organization, route, status and duration (SUPPLYPLAN_REQUEST_LOG)")
	fs.Float64Var(&c.RateLimitRPS, "rate-limit-rps", c.RateLimitRPS, "requests per second each API key may make, reads and writes counted apart; 0: no limit; a plan may override it (SUPPLYPLAN_RATE_LIMIT_RPS)")
	fs.IntVar(&c.RateLimitBurst, "rate-limit-burst", c.RateLimitBurst, "requests an idle API key may make at once (token bucket size) (SUPPLYPLAN_RATE_LIMIT_BURST)")
	fs.Float64Var(&c.RateLimitOrgRPS, "rate-limit-org-rps", c.RateLimitOrgRPS, "requests per second all the keys of one organization may make together, reads and writes counted apart; 0: no limit (SUPPLYPLAN_RATE_LIMIT_ORG_RPS)")
	fs.IntVar(&c.RateLimitOrgBurst, "rate-limit-org-burst", c.RateLimitOrgBurst, "token bucket size of an organization's reads and of its writes (SUPPLYPLAN_RATE_LIMIT_ORG_BURST)")
	fs.Float64Var(&c.RateLimitImportRPS, "rate-limit-import-rps", c.RateLimitImportRPS, "import requests (POST /api/import/...) per second, per key and per organization; 0: no limit (SUPPLYPLAN_RATE_LIMIT_IMPORT_RPS)")
	fs.IntVar(&c.RateLimitImportBurst, "rate-limit-import-burst", c.RateLimitImportBurst, "import requests an idle key or organization may make at once (SUPPLYPLAN_RATE_LIMIT_IMPORT_BURST)")
	fs.StringVar(&c.KafkaBrokers, "kafka-brokers", c.KafkaBrokers, "comma-separated Kafka brokers for demand signals and, in distributed mode, the journal; empty = in-process stream only (SUPPLYPLAN_KAFKA_BROKERS)")
	fs.StringVar(&c.KafkaTopic, "kafka-topic", c.KafkaTopic, "demand-signal topic, keyed by organization id; dead letters go to <topic>.dlq (SUPPLYPLAN_KAFKA_TOPIC)")
	fs.StringVar(&c.KafkaGroup, "kafka-group", c.KafkaGroup, "consumer group of the demand-signal consumer (SUPPLYPLAN_KAFKA_GROUP)")
	fs.StringVar(&c.Mode, "mode", c.Mode, "embedded (one process, journal in the data dir) or distributed (journal on Kafka, organizations spread over the nodes; requires --kafka-brokers and --clickhouse-addr; docs/distributed.md) (SUPPLYPLAN_MODE)")
	fs.StringVar(&c.JournalTopic, "journal-topic", c.JournalTopic, "distributed mode: the journal topic; its snapshots go to supplyplan.snapshots, owners to supplyplan.owners, placements to supplyplan.directory (SUPPLYPLAN_JOURNAL_TOPIC)")
	fs.IntVar(&c.JournalPartitions, "journal-partitions", c.JournalPartitions, "distributed mode: partitions of the journal topic, fixed for the life of a deployment (SUPPLYPLAN_JOURNAL_PARTITIONS)")
	fs.StringVar(&c.NodeGroup, "node-group", c.NodeGroup, "distributed mode: consumer group the nodes join to share the journal partitions (SUPPLYPLAN_NODE_GROUP)")
	fs.StringVar(&c.NodeID, "node-id", c.NodeID, "distributed mode: this node's name in the owner records (default: the hostname) (SUPPLYPLAN_NODE_ID)")
	fs.DurationVar(&c.NodeSessionTimeout, "node-session-timeout", c.NodeSessionTimeout, "distributed mode: a node silent this long loses its partitions to the others (nodes' group and demand-signal consumer; heartbeats every tenth of it) (SUPPLYPLAN_NODE_SESSION_TIMEOUT)")
	fs.StringVar(&c.AdvertiseAddr, "advertise-addr", c.AdvertiseAddr, "distributed mode: host:port other nodes reach this node's REST API at (default: --api-addr) (SUPPLYPLAN_ADVERTISE_ADDR)")
	fs.StringVar(&c.ClickHouseAddr, "clickhouse-addr", c.ClickHouseAddr, "ClickHouse native-protocol host:port for demand history; empty = embedded store in the data dir (SUPPLYPLAN_CLICKHOUSE_ADDR)")
	fs.StringVar(&c.ClickHouseDatabase, "clickhouse-database", c.ClickHouseDatabase, "ClickHouse database, created if missing (SUPPLYPLAN_CLICKHOUSE_DATABASE)")
	fs.StringVar(&c.ClickHouseUser, "clickhouse-user", c.ClickHouseUser, "ClickHouse user (SUPPLYPLAN_CLICKHOUSE_USER)")
	fs.StringVar(&c.ClickHousePassword, "clickhouse-password", c.ClickHousePassword, "ClickHouse password (SUPPLYPLAN_CLICKHOUSE_PASSWORD)")
	fs.IntVar(&c.ImportMaxRows, "import-max-rows", c.ImportMaxRows, "most rows in one import request; more is 413 (SUPPLYPLAN_IMPORT_MAX_ROWS)")
	fs.IntVar(&c.ImportMaxBytes, "import-max-bytes", c.ImportMaxBytes, "largest import request body in bytes; more is 413 (SUPPLYPLAN_IMPORT_MAX_BYTES)")
	fs.IntVar(&c.ImportChunk, "import-chunk", c.ImportChunk, "rows applied per tenant transaction by an import job (SUPPLYPLAN_IMPORT_CHUNK)")
	fs.IntVar(&c.ImportDemandChunk, "import-demand-chunk", c.ImportDemandChunk, "demand-history rows written to the demand store per batch by an import job (SUPPLYPLAN_IMPORT_DEMAND_CHUNK)")
	fs.IntVar(&c.ImportWorkers, "import-workers", c.ImportWorkers, "import jobs running at once across tenants (SUPPLYPLAN_IMPORT_WORKERS)")
	fs.DurationVar(&c.RecommendationExpiry, "recommendation-expiry", c.RecommendationExpiry, "how long a PENDING transfer recommendation stays actionable (SUPPLYPLAN_RECOMMENDATION_EXPIRY)")
	fs.IntVar(&c.TransferWindowWeeks, "transfer-window-weeks", c.TransferWindowWeeks, "weeks of stock projection behind transfer recommendations (SUPPLYPLAN_TRANSFER_WINDOW_WEEKS)")
	fs.Float64Var(&c.TransferLeadTimeDays, "transfer-lead-time-days", c.TransferLeadTimeDays, "days a transfer takes to arrive (SUPPLYPLAN_TRANSFER_LEAD_TIME_DAYS)")
	fs.Float64Var(&c.TransferCostPerUnit, "transfer-cost-per-unit", c.TransferCostPerUnit, "cost of moving one unit, for estimatedROI (SUPPLYPLAN_TRANSFER_COST_PER_UNIT)")
	fs.Float64Var(&c.TransferMinStockDiffPc, "transfer-min-stock-difference-pct", c.TransferMinStockDiffPc, "default minStockDifferencePct of recommendation requests (SUPPLYPLAN_TRANSFER_MIN_STOCK_DIFFERENCE_PCT)")
	fs.DurationVar(&c.AllocationHoldTTL, "allocation-hold-ttl", c.AllocationHoldTTL, "how long a HELD reservation lives before it expires and its stock is available again (SUPPLYPLAN_ALLOCATION_HOLD_TTL)")
	fs.DurationVar(&c.AllocationSweepInterval, "allocation-sweep-interval", c.AllocationSweepInterval, "how often expired holds are recorded EXPIRED and old reservations forgotten (SUPPLYPLAN_ALLOCATION_SWEEP_INTERVAL)")
	fs.DurationVar(&c.AllocationRetention, "allocation-retention", c.AllocationRetention, "how long RELEASED and EXPIRED reservations stay listed (SUPPLYPLAN_ALLOCATION_RETENTION)")
	fs.DurationVar(&c.LoopRetention, "loop-retention", c.LoopRetention, "how long a closed loop instance and its audit events stay after it closed; negative: forever (SUPPLYPLAN_LOOP_RETENTION)")
	fs.BoolVar(&c.AllocationCommitOnAllocate, "allocation-commit-on-allocate", c.AllocationCommitOnAllocate, "create reservations COMMITTED (no expiry) instead of HELD (SUPPLYPLAN_ALLOCATION_COMMIT_ON_ALLOCATE)")
	fs.Float64Var(&c.AllocationSafetyShare, "allocation-safety-stock-share", c.AllocationSafetyShare, "part of each level's reorder point allocation may not promise, 0 to 1 (SUPPLYPLAN_ALLOCATION_SAFETY_STOCK_SHARE)")
	fs.IntVar(&c.SnapshotEvery, "snapshot-every", c.SnapshotEvery, "journal entries between snapshots of a tenant (SUPPLYPLAN_SNAPSHOT_EVERY)")
	fs.IntVar(&c.GCHeadroomPct, "gc-headroom-pct", c.GCHeadroomPct, "how far (percent of the live heap, at least 256 MiB) the heap may grow between garbage collections; 0 leaves Go's default (GOGC=100: it doubles); ignored when GOGC or GOMEMLIMIT is set (SUPPLYPLAN_GC_HEADROOM_PCT)")
	fs.IntVar(&c.ExtraProcs, "extra-procs", c.ExtraProcs, "how many more goroutine schedulers (Ps) than CPUs the service runs with, so that a thread blocked in a journal's fsync does not hold one of the CPUs' (0 to 8; 0: Go's default); ignored when GOMAXPROCS is set (SUPPLYPLAN_EXTRA_PROCS)")
	fs.IntVar(&c.ForecastCacheMB, "forecast-cache-mb", c.ForecastCacheMB, "MiB of computed forecasts kept for reuse across tenants, least recently used out first (SUPPLYPLAN_FORECAST_CACHE_MB)")
	fs.StringVar(&c.RegistryAddr, "registry-addr", c.RegistryAddr, "MCP registry discovery endpoint listen address (SUPPLYPLAN_REGISTRY_ADDR)")
	fs.StringVar(&c.ToolsAddr, "tools-addr", c.ToolsAddr, "hosted commerce tool service listen address (SUPPLYPLAN_TOOLS_ADDR)")
	fs.StringVar(&c.ToolsPublicURL, "tools-public-url", c.ToolsPublicURL, "public base URL of the tool service that the registry hands out (default http://<tools-addr>) (SUPPLYPLAN_TOOLS_PUBLIC_URL)")
	fs.StringVar(&c.ToolsSecret, "tools-secret", c.ToolsSecret, "HMAC secret of tool confirmation tokens, the same on every node (default: generated into <data>/tools-secret) (SUPPLYPLAN_TOOLS_SECRET)")
	fs.StringVar(&c.MCPAllowedOrigins, "mcp-allowed-origins", c.MCPAllowedOrigins, "comma-separated browser origins allowed on the MCP endpoints besides loopback ones (SUPPLYPLAN_MCP_ALLOWED_ORIGINS)")
	fs.IntVar(&c.MCPPageSize, "mcp-page-size", c.MCPPageSize, "tools/list page size of the MCP endpoints (SUPPLYPLAN_MCP_PAGE_SIZE)")
	fs.StringVar(&c.ConsoleAddr, "console-addr", c.ConsoleAddr, "operator console (browser UI) listen address; empty: no console (SUPPLYPLAN_CONSOLE_ADDR)")
	fs.DurationVar(&c.ConsoleSessionTTL, "console-session-ttl", c.ConsoleSessionTTL, "absolute lifetime of a console session (SUPPLYPLAN_CONSOLE_SESSION_TTL)")
	fs.DurationVar(&c.ConsoleSessionIdle, "console-session-idle", c.ConsoleSessionIdle, "a console session unused this long ends (SUPPLYPLAN_CONSOLE_SESSION_IDLE)")
	fs.BoolVar(&c.ConsoleSecure, "console-secure-cookie", c.ConsoleSecure, "mark the console's cookies Secure (set it when a TLS proxy serves the console) (SUPPLYPLAN_CONSOLE_SECURE_COOKIE)")
	fs.StringVar(&c.LoopCatalogAddr, "loop-catalog-addr", c.LoopCatalogAddr, "loop catalog listen address (SUPPLYPLAN_LOOP_CATALOG_ADDR)")
	fs.StringVar(&c.LoopSigningKey, "loop-signing-key", c.LoopSigningKey, "Ed25519 PKCS#8 PEM file of the loop catalog's signing key (default: generated into <data>/loop-signing-key.pem) (SUPPLYPLAN_LOOP_SIGNING_KEY)")
	fs.StringVar(&c.LoopRuntimeAddr, "loop-runtime-addr", c.LoopRuntimeAddr, "loop runtime listen address (SUPPLYPLAN_LOOP_RUNTIME_ADDR)")
	fs.StringVar(&c.LoopJWTIssuer, "loop-jwt-issuer", c.LoopJWTIssuer, "comma-separated trusted iss values of loop runtime JWTs; empty: a local issuer whose key is generated into <data>/loop-issuer.jwk (mint with supplyplan token) (SUPPLYPLAN_LOOP_JWT_ISSUER)")
	fs.StringVar(&c.LoopJWTAudience, "loop-jwt-audience", c.LoopJWTAudience, "aud the loop runtime's JWTs must carry (SUPPLYPLAN_LOOP_JWT_AUDIENCE)")
	fs.StringVar(&c.LoopJWKSURL, "loop-jwks-url", c.LoopJWKSURL, "JWKS URL of the issuers' keys (cached, refreshed, refetched on an unknown kid) (SUPPLYPLAN_LOOP_JWKS_URL)")
	fs.StringVar(&c.LoopJWKSFile, "loop-jwks-file", c.LoopJWKSFile, "local JWKS or PEM public key file of the issuers' keys, instead of --loop-jwks-url (SUPPLYPLAN_LOOP_JWKS_FILE)")
	fs.StringVar(&c.RedisAddr, "redis-addr", c.RedisAddr, "Redis address (distributed mode: alert cooldown state and the registry's gateway keys live there); empty: embedded (SUPPLYPLAN_REDIS_ADDR)")
	fs.StringVar(&c.RedisPassword, "redis-password", c.RedisPassword, "Redis password (SUPPLYPLAN_REDIS_PASSWORD)")
	fs.StringVar(&c.RedisPrefix, "redis-prefix", c.RedisPrefix, "prefix of every Redis key (SUPPLYPLAN_REDIS_PREFIX)")
	fs.StringVar(&c.SMTPAddr, "smtp-addr", c.SMTPAddr, "SMTP server host:port for EMAIL alert destinations; empty: e-mail deliveries fail (SUPPLYPLAN_SMTP_ADDR)")
	fs.StringVar(&c.SMTPFrom, "smtp-from", c.SMTPFrom, "From address of alert e-mails (SUPPLYPLAN_SMTP_FROM)")
	fs.StringVar(&c.SMTPUsername, "smtp-username", c.SMTPUsername, "SMTP PLAIN auth user; empty: no auth (SUPPLYPLAN_SMTP_USERNAME)")
	fs.StringVar(&c.SMTPPassword, "smtp-password", c.SMTPPassword, "SMTP PLAIN auth password (SUPPLYPLAN_SMTP_PASSWORD)")
	fs.StringVar(&c.SMTPStartTLS, "smtp-starttls", c.SMTPStartTLS, "STARTTLS: auto (when offered), always, never (SUPPLYPLAN_SMTP_STARTTLS)")
	fs.BoolVar(&c.SMTPInsecure, "smtp-insecure-skip-verify", c.SMTPInsecure, "do not verify the SMTP server's certificate (SUPPLYPLAN_SMTP_INSECURE_SKIP_VERIFY)")
	fs.BoolVar(&c.WebhookAllowPriv, "webhook-allow-private", c.WebhookAllowPriv, "allow webhook, chat and federation destinations on addresses that are not globally reachable (loopback, private, link-local, ...) (SUPPLYPLAN_WEBHOOK_ALLOW_PRIVATE)")
	fs.DurationVar(&c.WebhookTimeout, "webhook-timeout", c.WebhookTimeout, "timeout of one delivery attempt (SUPPLYPLAN_WEBHOOK_TIMEOUT)")
	fs.IntVar(&c.DeliveryWorkers, "delivery-workers", c.DeliveryWorkers, "delivery attempts in flight at once (SUPPLYPLAN_DELIVERY_WORKERS)")
	fs.DurationVar(&c.RetryBase, "retry-base", c.RetryBase, "first retry delay; each next one is 4x longer, at most 12h, +-20% jitter (SUPPLYPLAN_RETRY_BASE)")
	fs.IntVar(&c.WebhookMaxAttempts, "webhook-max-attempts", c.WebhookMaxAttempts, "attempts of a webhook delivery (12: about three days) (SUPPLYPLAN_WEBHOOK_MAX_ATTEMPTS)")
	fs.IntVar(&c.AlertMaxAttempts, "alert-max-attempts", c.AlertMaxAttempts, "attempts of an alert delivery (SUPPLYPLAN_ALERT_MAX_ATTEMPTS)")
	fs.DurationVar(&c.AlertEvalInterval, "alert-eval-interval", c.AlertEvalInterval, "scheduled alert evaluation of every tenant; negative: only on data changes (SUPPLYPLAN_ALERT_EVAL_INTERVAL)")
	fs.DurationVar(&c.AlertSignalDebounce, "alert-signal-debounce", c.AlertSignalDebounce, "delay of the alert evaluation that live demand signals ask for; one per interval under a steady stream (SUPPLYPLAN_ALERT_SIGNAL_DEBOUNCE)")
	fs.StringVar(&c.AlertThresholds, "alert-thresholds", c.AlertThresholds, "JSON file overriding alert thresholds (docs/alerts.md) (SUPPLYPLAN_ALERT_THRESHOLDS)")
	fs.StringVar(&c.PlansFile, "plans-file", c.PlansFile, "JSON file mapping billing plans to entitlements and capabilities; empty: the embedded plans.json (SUPPLYPLAN_PLANS_FILE)")
	fs.StringVar(&c.PaymentSecret, "payment-webhook-secret", c.PaymentSecret, "signing secret of POST /webhooks/payment-provider (PAYMENT_PROVIDER_WEBHOOK_SECRET)")
	fs.StringVar(&c.OpsAlertURL, "ops-alert-url", c.OpsAlertURL, "chat incoming-hook URL receiving operations alerts such as payment failures (SUPPLYPLAN_OPS_ALERT_URL)")
	fs.StringVar(&c.FederationSecret, "federation-webhook-secret", c.FederationSecret, "whsec_ secret signing federation events to merchant webhook URLs (SUPPLYPLAN_FEDERATION_WEBHOOK_SECRET)")
}

// envReader reads typed settings from the environment and keeps the first parse error.
type envReader struct{ err error }

func (e *envReader) lookup(name string) (string, bool) {
	v, ok := os.LookupEnv(name)
	return v, ok && v != ""
}

func (e *envReader) fail(name, v, want string) {
	if e.err == nil {
		e.err = fmt.Errorf("environment variable %s=%q: want %s", name, v, want)
	}
}

func (e *envReader) str(name, def string) string {
	if v, ok := e.lookup(name); ok {
		return v
	}
	return def
}

func (e *envReader) bool(name string, def bool) bool {
	v, ok := e.lookup(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.fail(name, v, "true or false")
		return def
	}
	return b
}

func (e *envReader) int(name string, def int) int {
	v, ok := e.lookup(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.fail(name, v, "an integer")
		return def
	}
	return n
}

func (e *envReader) duration(name string, def time.Duration) time.Duration {
	v, ok := e.lookup(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.fail(name, v, "a duration such as 30s or 15m")
		return def
	}
	return d
}

func (e *envReader) float(name string, def float64) float64 {
	v, ok := e.lookup(name)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		e.fail(name, v, "a number")
		return def
	}
	return f
}

// hostname is the default --node-id ("" when the system has none).
func hostname() string {
	h, _ := os.Hostname()
	return h
}
