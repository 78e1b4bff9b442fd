// Package http holds the fasthttp servers: the REST API with its inbound webhooks, and later the
// hosted tool service, loop services and operator console. Handlers are thin: decode, authorize,
// call the root package's services, encode. Only this package imports fasthttp.
package http

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/telemetry"
)

// Config configures the API server.
type Config struct {
	Addr string
	// BodyLimit caps the body of every endpoint but the import and signal ones (1 MiB).
	BodyLimit int
	// ImportMaxBytes and ImportMaxRows limit one import request (413 beyond). The import limit
	// applies only once an import key (or, on POST /api/demand/signals, a key with forecast.write)
	// has been checked; everyone else gets BodyLimit.
	ImportMaxBytes int
	ImportMaxRows  int
	// RequestTimeout is each request's deadline.
	RequestTimeout time.Duration
	Logger         *slog.Logger
	// PaymentWebhookSecret verifies POST /webhooks/payment-provider (PAYMENT_PROVIDER_WEBHOOK_SECRET).
	PaymentWebhookSecret string
	// Now is the clock of signature checks (tests); nil: time.Now.
	Now func() time.Time
	// BodyBudget bounds the request-body bytes held at once; share one between servers to bound
	// the process. nil: a budget of DefaultBodyBudget for this server alone.
	BodyBudget *BodyBudget
	// Metrics counts requests by route template, method and status, with latency histograms
	// (nil: none).
	Metrics *telemetry.Metrics
	// AccessLog writes one line per request (request id, organization, route, status, duration);
	// nil: none. Errors are logged to Logger either way.
	AccessLog *slog.Logger
	// RateLimits throttles requests per API key and per organization (nil: none).
	RateLimits *RateLimiter
	// Owners routes each organization's requests to the node that owns it (distributed mode;
	// nil: embedded, everything served here). NodeID names this node in X-Supplyplan-Forwarded-By.
	Owners Owners
	NodeID string
}

// Services are what the API calls.
type Services struct {
	Auth        supplyplan.Authenticator
	Platform    supplyplan.PlatformService
	Forecasting supplyplan.ForecastingService
	Catalog     supplyplan.CatalogService
	Imports     supplyplan.ImportService
	Demand      supplyplan.DemandReader
	Alerts      supplyplan.AlertService
	Webhooks    supplyplan.WebhookService
	Billing     supplyplan.BillingService
	Transfers   supplyplan.TransferService
	Allocation  supplyplan.AllocationService
	Forecast    supplyplan.ForecastService
	Signals     supplyplan.SignalPublisher
	// MCP and Gateway back the platform endpoints of the MCP surfaces (optional).
	MCP     supplyplan.MCPPlatformService
	Gateway supplyplan.GatewayKeyStore
	// Loops is the loop catalog (the operator console's loops screens; the REST API does not use it).
	Loops supplyplan.LoopCatalogService
	// LoopRuntime is the loop runtime (the console's loop instance screens, read-only; the runtime's
	// own listener has its own LoopRuntimeServices).
	LoopRuntime supplyplan.LoopRuntimeService
	// Idempotency keeps the outcome of requests with an Idempotency-Key (nil: the header is ignored).
	Idempotency supplyplan.IdempotencyService
	// Readiness names the checks of GET /ready (journal, stores, brokers); none: always ready.
	Readiness map[string]func(context.Context) error
}

// Server is the REST API.
type Server struct {
	cfg    Config
	svc    Services
	log    *slog.Logger
	router *router
	// detached counts keyed requests still running after their client got the timeout's 503.
	runningOn sync.WaitGroup
	listener
	// obs makes request ids, counts requests and writes the request log.
	obs      observer
	dispatch dispatch
	fwd      *forwarder
}

// Close stops the listener, waits for in-flight requests, then for keyed requests that run on
// after their timeout (so that their writes and responses are stored before the actors drain).
func (s *Server) Close(ctx context.Context) error {
	err := s.listener.Close(ctx)
	done := make(chan struct{})
	go func() {
		s.runningOn.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	return err
}

// NewServer builds the API server and its routes.
func NewServer(cfg Config, svc Services) *Server {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 1 << 20
	}
	if cfg.ImportMaxBytes <= 0 {
		cfg.ImportMaxBytes = 32 << 20
	}
	if cfg.ImportMaxRows <= 0 {
		cfg.ImportMaxRows = 50000
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, svc: svc, log: cfg.Logger, router: newRouter()}
	s.fwd = newForwarder(cfg.Owners, cfg.NodeID, cfg.Addr, true, cfg.Logger)
	s.routes()
	s.obs.init("api", s.router, cfg.Metrics, cfg.AccessLog)
	s.dispatch = dispatch{what: "", log: s.log, router: s.router, timeout: cfg.RequestTimeout}
	s.listener = newListener("api", cfg.Addr, "supplyplan", cfg.BodyBudget, cfg.Logger, s.handle)
	return s
}

// Handler exposes the request handler (for in-memory tests and benchmarks).
func (s *Server) Handler() fasthttp.RequestHandler { return s.handle }

// handle serves one request, then echoes its request id, counts it and logs it.
//
// The Request comes from a pool and goes back to it once the request is logged, unless something
// was handed a part of it that outlives the handler (Request.retain: a streamed body, a detached
// keyed request). Everything else a handler passes on is copied (the principal, Param) or is not
// a part of the Request (its context, which a context derived from it may still use after the
// handler returned).
// A Request was the largest allocation of a small GET (about 700 of its 1,070 bytes, a fifth of
// the handler's CPU with the collector's share). The request id is written into the Request's
// own buffer: an array on the handler's stack escaped through the Request (128 bytes per request).
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	r := requestPool.Get().(*Request)
	*r = Request{server: s, budget: s.budget, decodeLimit: s.cfg.BodyLimit, bodyLimit: s.cfg.BodyLimit, start: start}
	id := s.obs.ids.of(ctx, r.idBuf[:0])
	rt, org, code := s.dispatch.serve(ctx, id, r)
	s.obs.served(ctx, id, rt, org, code, start)
	if !r.retained {
		*r = Request{} // what it pointed to is not kept alive by the pool
		requestPool.Put(r)
	}
}

var requestPool = sync.Pool{New: func() any { return new(Request) }}

func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}
