package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/tools"
)

// NetHTTP adapts the MCP core to net/http. resolve authenticates one request and returns its
// tools (see tools.MCPRequest.Resolve).
func (h *Handler) NetHTTP(resolve func(r *http.Request) func(context.Context) (tools.Set, error), timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		var body []byte
		if r.Method == http.MethodPost {
			var b []byte
			var err error
			if n := r.ContentLength; n >= 0 && n <= int64(h.cfg.MaxBody) {
				b = make([]byte, n) // the common case: one exact read, no growing buffer
				_, err = io.ReadFull(r.Body, b)
			} else {
				b, err = io.ReadAll(http.MaxBytesReader(w, r.Body, int64(h.cfg.MaxBody)+1))
			}
			if err != nil {
				var mbe *http.MaxBytesError
				if !errors.As(err, &mbe) {
					return // client went away
				}
				b = make([]byte, h.cfg.MaxBody+1) // reported as 413 by the core
			}
			body = b
		}
		resp := h.HandleMCP(ctx, tools.MCPRequest{Method: r.Method, Header: r.Header.Get, Body: body, Resolve: resolve(r)})
		for _, kv := range resp.Header {
			w.Header().Add(kv[0], kv[1])
		}
		if resp.Status != http.StatusAccepted && resp.Status != http.StatusNoContent {
			// Without it net/http sends any body over 2 KiB chunked, in several writes.
			w.Header().Set("Content-Length", strconv.Itoa(len(resp.Body)))
		}
		w.WriteHeader(resp.Status)
		if len(resp.Body) > 0 {
			_, _ = w.Write(resp.Body)
		}
		if resp.Release != nil {
			resp.Release() // net/http has written or copied the body by now
		}
	})
}

// Bearer returns the key of an "Authorization: Bearer <key>" header value.
func Bearer(h string) (string, bool) {
	h = strings.TrimSpace(h)
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return "", false
	}
	k := strings.TrimSpace(h[7:])
	return k, k != ""
}

// RegistryConfig configures the registry discovery server.
type RegistryConfig struct {
	Addr           string
	MCP            Config
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// RegistryServer is the registry discovery endpoint: POST /mcp (gateway keys) and GET /health.
type RegistryServer struct {
	cfg    RegistryConfig
	log    *slog.Logger
	keys   supplyplan.GatewayKeyStore
	tools  tools.Set
	health map[string]func(context.Context) error
	mux    *http.ServeMux
	srv    *http.Server
	ln     net.Listener
	served chan struct{}
}

// NewRegistryServer builds the registry server. health names the dependencies GET /health checks.
func NewRegistryServer(cfg RegistryConfig, keys supplyplan.GatewayKeyStore, dir Directory, health map[string]func(context.Context) error) *RegistryServer {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.MCP.Logger == nil {
		cfg.MCP.Logger = cfg.Logger
	}
	s := &RegistryServer{cfg: cfg, log: cfg.Logger, keys: keys, tools: RegistryTools(dir), health: health, mux: http.NewServeMux()}
	mcp := NewHandler(cfg.MCP)
	s.mux.Handle("/mcp", mcp.NetHTTP(s.resolve, cfg.RequestTimeout))
	s.mux.HandleFunc("GET /health", s.healthz)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Not found", "code": supplyplan.ENOTFOUND})
	})
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 60 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)}
	return s
}

func (s *RegistryServer) resolve(r *http.Request) func(context.Context) (tools.Set, error) {
	return func(ctx context.Context) (tools.Set, error) {
		key, ok := Bearer(r.Header.Get("Authorization"))
		if !ok {
			return nil, &supplyplan.Error{Code: supplyplan.EUNAUTHORIZED, Message: "a gateway key is required (Authorization: Bearer <key>)"}
		}
		_, found, err := s.keys.AuthenticateGateway(ctx, key)
		if err != nil {
			s.log.Warn("gateway key lookup failed", "err", err)
			return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "the key store is unreachable")
		}
		if !found {
			return nil, &supplyplan.Error{Code: supplyplan.EUNAUTHORIZED, Message: "unknown or revoked gateway key"}
		}
		return s.tools, nil
	}
}

func (s *RegistryServer) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	status, body := Health(ctx, s.health, s.log)
	writeJSON(w, status, body)
}

// Health runs the named checks: 200 {"status":"ok"} or 503 naming the failing dependencies
// (without their errors: the endpoint takes no key; each failure is logged at warn with its error).
func Health(ctx context.Context, checks map[string]func(context.Context) error, log *slog.Logger) (int, map[string]any) {
	failing := map[string]string{}
	for name, check := range checks {
		if err := check(ctx); err != nil {
			log.Warn("health check failed", "check", name, "err", err)
			failing[name] = "unavailable"
		}
	}
	if len(failing) == 0 {
		return http.StatusOK, map[string]any{"status": "ok"}
	}
	return http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failing": failing}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Handler exposes the HTTP handler (tests).
func (s *RegistryServer) Handler() http.Handler { return s.mux }

// Open listens and serves in the background.
func (s *RegistryServer) Open() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen registry on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("registry server stopped", "err", err)
		}
	}()
	return nil
}

// Addr is the listening address.
func (s *RegistryServer) Addr() string {
	if s.ln == nil {
		return s.cfg.Addr
	}
	return s.ln.Addr().String()
}

// Close stops accepting connections and waits for in-flight requests.
func (s *RegistryServer) Close(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	<-s.served
	s.ln = nil
	return err
}
