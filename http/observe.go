package http

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan/internal/telemetry"
)

// Request ids and the request log (docs/operations.md#request-log).

const (
	requestIDHeader = "X-Request-Id"
	// requestIDMax is the longest X-Request-Id taken from a client; a longer or odd one is replaced.
	requestIDMax = 128
	// unmatchedRoute is the route of requests that matched none, in logs and metrics.
	unmatchedRoute = "unmatched"
)

// requestIDs makes request ids: a random prefix per server and a counter, so that making one costs
// neither randomness nor an allocation.
type requestIDs struct {
	prefix [16]byte // hex of 8 random bytes
	n      atomic.Uint64
}

// init draws the random prefix.
func (g *requestIDs) init() {
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	hex.Encode(g.prefix[:], raw[:])
}

// of returns the request's id: its X-Request-Id when that is 1 to 128 characters of letters,
// digits and -_.:/+=@ (a client's or a proxy's), else a new one appended to buf.
func (g *requestIDs) of(ctx *fasthttp.RequestCtx, buf []byte) []byte {
	if h := ctx.Request.Header.Peek(requestIDHeader); validRequestID(h) {
		return append(buf, h...)
	}
	buf = append(buf, g.prefix[:]...)
	buf = append(buf, '-')
	return strconv.AppendUint(buf, g.n.Add(1), 36)
}

func validRequestID(b []byte) bool {
	if len(b) == 0 || len(b) > requestIDMax {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '/', c == '+', c == '=', c == '@':
		default:
			return false
		}
	}
	return true
}

// RequestLineWriter is a log handler that writes a request's line itself, without the
// slog.Record logRequest would otherwise make: the line its Handle writes for a record of message
// "request" and the attributes requestId, method, route, status, duration, then org and code when
// set. id and method are only read during the call.
type RequestLineWriter interface {
	WriteRequestLine(t time.Time, level slog.Level, id, method []byte, route, org string, status int, code string, took time.Duration) error
}

// logRequest writes the request's log line: 5xx at ERROR, everything else at INFO; an error
// answer names its code.
func logRequest(l *slog.Logger, id, method []byte, route, org string, status int, code string, took time.Duration) {
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	ctx := context.Background()
	h := l.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	if w, ok := h.(RequestLineWriter); ok {
		_ = w.WriteRequestLine(time.Now(), level, id, method, route, org, status, code, took)
		return
	}
	// The record goes to the handler directly: Logger.LogAttrs would also walk the stack for the
	// caller's PC, which the request log does not show.
	var attrs [7]slog.Attr
	n := copy(attrs[:], []slog.Attr{slog.String("requestId", string(id)), slog.String("method", string(method)),
		slog.String("route", route), slog.Int("status", status), slog.Duration("duration", took)})
	if org != "" {
		attrs[n] = slog.String("org", org)
		n++
	}
	if code != "" {
		attrs[n] = slog.String("code", code)
		n++
	}
	r := slog.NewRecord(time.Now(), level, "request", 0)
	r.AddAttrs(attrs[:n]...)
	_ = h.Handle(ctx, r)
}

// unmatchedRoutes are the metrics of requests that matched no route, by method (any other method
// counts as OTHER, so that a client cannot make up label values).
type unmatchedRoutes struct {
	get, post, put, del, patch, head, options, other *telemetry.Route
}

func newUnmatchedRoutes(m *telemetry.Metrics, server string) unmatchedRoutes {
	r := func(method string) *telemetry.Route { return m.Route(server, method, unmatchedRoute) }
	return unmatchedRoutes{get: r("GET"), post: r("POST"), put: r("PUT"), del: r("DELETE"), patch: r("PATCH"),
		head: r("HEAD"), options: r("OPTIONS"), other: r("OTHER")}
}

func (u *unmatchedRoutes) of(method []byte) *telemetry.Route {
	switch string(method) {
	case "GET":
		return u.get
	case "POST":
		return u.post
	case "PUT":
		return u.put
	case "DELETE":
		return u.del
	case "PATCH":
		return u.patch
	case "HEAD":
		return u.head
	case "OPTIONS":
		return u.options
	}
	return u.other
}

// observer is what a listener (the API, the loop catalog, the loop runtime) does around each
// request: its request id, its metrics (supplyplan_http_requests_total and _duration_seconds with
// the listener's server label) and its request log line. Allocation-free when the log is off.
type observer struct {
	ids       requestIDs
	unmatched unmatchedRoutes
	access    *slog.Logger
}

// init draws the id prefix and resolves the metrics of every route of rt (m nil: none).
func (o *observer) init(server string, rt *router, m *telemetry.Metrics, access *slog.Logger) {
	o.ids.init()
	rt.each(func(r *route) { r.obs = m.Route(server, r.method, r.pattern) })
	o.unmatched = newUnmatchedRoutes(m, server)
	o.access = access
}

// served echoes the request id, counts the request under its route (nil: unmatched) and logs it.
func (o *observer) served(ctx *fasthttp.RequestCtx, id []byte, rt *route, org, code string, start time.Time) {
	took := time.Since(start)
	ctx.Response.Header.SetBytesV(requestIDHeader, id)
	status := ctx.Response.StatusCode()
	if rt != nil {
		rt.obs.Observe(status, took)
	} else {
		o.unmatched.of(ctx.Method()).Observe(status, took)
	}
	if o.access != nil {
		pattern := unmatchedRoute
		if rt != nil {
			pattern = rt.pattern
		}
		logRequest(o.access, id, ctx.Method(), pattern, org, status, code, took)
	}
}
