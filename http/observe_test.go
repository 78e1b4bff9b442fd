package http

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan/internal/telemetry"
)

// TestLoopRuntimeObserver: the runtime counts its requests under server="loop-runtime" and logs
// them as the API does, and what it does around a request allocates nothing when the log is off.
func TestLoopRuntimeObserver(t *testing.T) {
	m := telemetry.New()
	var logs bytes.Buffer
	s := NewLoopRuntimeServer(LoopRuntimeConfig{Metrics: m, AccessLog: slog.New(slog.NewTextHandler(&logs, nil))}, LoopRuntimeServices{})
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI("/health")
	ctx.Request.Header.Set("X-Request-Id", "obs-1")
	s.Handler()(&ctx)
	if ctx.Response.StatusCode() != 200 || string(ctx.Response.Header.Peek("X-Request-Id")) != "obs-1" {
		t.Fatalf("health = %d, X-Request-Id %q", ctx.Response.StatusCode(), ctx.Response.Header.Peek("X-Request-Id"))
	}
	line := logs.String()
	for _, want := range []string{"msg=request", "requestId=obs-1", "route=/health", "status=200", "duration="} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %s", line, want)
		}
	}
	var out bytes.Buffer
	m.WritePrometheus(&out)
	if want := `supplyplan_http_requests_total{server="loop-runtime",route="/health",method="GET",status="200"} 1`; !strings.Contains(out.String(), want) {
		t.Errorf("no %s in\n%s", want, out.String())
	}

	s.obs.access = nil
	rt, _, _ := s.router.matchRoute([]byte("GET"), []byte("/health"), nil)
	var buf [requestIDMax]byte
	if n := testing.AllocsPerRun(1000, func() {
		id := s.obs.ids.of(&ctx, buf[:0])
		s.obs.served(&ctx, id, rt, "", "", time.Now())
	}); n != 0 {
		t.Errorf("observing a request allocates %v times", n)
	}
}

// lineWriter is a log handler that writes request lines itself (RequestLineWriter); it records
// what it was given and whether a record reached Handle instead.
type lineWriter struct {
	line   string
	level  slog.Level
	record bool
}

func (w *lineWriter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (w *lineWriter) Handle(context.Context, slog.Record) error    { w.record = true; return nil }
func (w *lineWriter) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *lineWriter) WithGroup(string) slog.Handler                { return w }
func (w *lineWriter) WriteRequestLine(_ time.Time, level slog.Level, id, method []byte, route, org string, status int, code string, took time.Duration) error {
	w.level = level
	w.line = fmt.Sprint(string(id), " ", string(method), " ", route, " ", org, " ", status, " ", code, " ", took)
	return nil
}

// TestLogRequestWritesTheLineDirectly: a handler that writes request lines gets the line's fields
// (5xx at ERROR) and no record; any other handler gets the record.
func TestLogRequestWritesTheLineDirectly(t *testing.T) {
	w := &lineWriter{}
	logRequest(slog.New(w), []byte("req-1"), []byte("POST"), "/api/x", "org_1", 503, "UNAVAILABLE", 1500*time.Microsecond)
	if w.record || w.level != slog.LevelError || w.line != "req-1 POST /api/x org_1 503 UNAVAILABLE 1.5ms" {
		t.Fatalf("record %v, level %v, line %q", w.record, w.level, w.line)
	}
	var text bytes.Buffer
	logRequest(slog.New(slog.NewTextHandler(&text, nil)), []byte("req-2"), []byte("GET"), "/api/y", "", 200, "", time.Millisecond)
	if !strings.Contains(text.String(), "msg=request requestId=req-2 method=GET route=/api/y status=200 duration=1ms") {
		t.Fatalf("text handler line %q", text.String())
	}
}
