package http

import (
	"bytes"
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
