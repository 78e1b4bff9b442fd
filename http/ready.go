package http

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// readyCheckTimeout bounds each readiness check.
const readyCheckTimeout = 2 * time.Second

// readyCheck is the outcome of one readiness check, as the platform key sees it.
type readyCheck struct {
	OK         bool    `json:"ok"`
	DurationMs float64 `json:"durationMs"`
	Error      string  `json:"error,omitempty"`
}

// readyBody is GET /ready: status, and for the platform key each check with its error.
type readyBody struct {
	Status string                `json:"status"`
	Checks map[string]readyCheck `json:"checks,omitempty"`
}

// ready answers whether the journal, the stores and the brokers are usable: 200 {"status":"ready"}
// or 503 {"status":"unavailable"}. Only the platform key (Authorization: Bearer) sees which check
// failed and why: a probe without a key learns nothing about the dependencies, and never a driver's
// error text. Failures are logged at warn with their error.
func (s *Server) ready(r *Request) error {
	checks := runReadiness(r.Context, s.svc.Readiness)
	status, code := "ready", fasthttp.StatusOK
	names := make([]string, 0, len(checks))
	for name, c := range checks {
		names = append(names, name)
		if !c.OK {
			status, code = "unavailable", fasthttp.StatusServiceUnavailable
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if c := checks[name]; !c.OK {
			s.log.Warn("readiness check failed", "check", name, "err", c.Error, "took_ms", c.DurationMs)
		}
	}
	body := readyBody{Status: status}
	if cred := bearerCredential(r.Ctx.Request.Header.Peek("Authorization")); cred.reason == "" {
		if p, ok := s.svc.Auth.Authenticate(cred.key); ok && p.Platform {
			body.Checks = checks
		}
	}
	r.Ctx.Response.Header.Set("Cache-Control", "no-store")
	return r.JSON(code, body)
}

// runReadiness runs the checks concurrently, each under readyCheckTimeout.
func runReadiness(ctx context.Context, checks map[string]func(context.Context) error) map[string]readyCheck {
	out := make(map[string]readyCheck, len(checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, check := range checks {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, readyCheckTimeout)
			defer cancel()
			start := time.Now()
			err := check(cctx)
			c := readyCheck{OK: err == nil, DurationMs: float64(time.Since(start).Microseconds()) / 1000}
			if err != nil {
				c.Error = err.Error()
			}
			mu.Lock()
			out[name] = c
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
