package main

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/valyala/fasthttp"
)

// The two requests of the api section of the benchmark harness (bench/cmd/benchrun), through the
// API's handler in memory (no sockets): what the service itself spends per request. cpu-µs/op is
// the process's user and system CPU per request, background work (fsync, snapshots, GC) included:
// steadier than ns/op on a shared machine.
//
//	go test ./cmd/supplyplan -run '^$' -bench 'APIScenarioGet|APIEventPost' -benchtime 3s
func BenchmarkAPIScenarioGet(b *testing.B) {
	s := MustStart(b, "", noRateLimits) // in process, one key reads faster than its default limit
	r := s.Do("POST", "/api/forecast/scenarios", s.Key("PLANNER"), `{"name":"Benchmark scenario","type":"PROMOTIONAL","assumptions":{"narrative":"steady","globalLiftPct":0.05,"categoryAdjustments":[{"categoryId":"beverages","liftPct":0.1}]}}`)
	if r.Status != 201 {
		b.Fatalf("create scenario: %d %s", r.Status, r.Body)
	}
	id := str(r.JSON(b)["scenario"].(map[string]any), "id")
	h := s.Main.API.Handler()
	auth := "Bearer " + s.Key("PLANNER")
	b.ReportAllocs()
	b.ResetTimer()
	c0 := processCPU()
	defer func() { b.ReportMetric(float64(processCPU()-c0)/1e3/float64(b.N), "cpu-µs/op") }()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.SetRequestURI("/api/forecast/scenarios/" + id)
			ctx.Request.Header.SetMethod("GET")
			ctx.Request.Header.Set("Authorization", auth)
			h(&ctx)
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	})
}

// Durable writes from 64 concurrent clients (each waits for its fsync), as in the harness.
func BenchmarkAPIEventPost(b *testing.B) {
	s := MustStart(b, "")
	var products []string
	for i := range 500 {
		products = append(products, fmt.Sprintf("sku-%d", i))
	}
	s.SeedCatalog(products, nil)
	h := s.Main.API.Handler()
	auth := "Bearer " + s.Key("PLANNER")
	// Four weeks after this week, inside the change history's horizon, as bench/cmd/benchrun dates
	// its events: the write also leaves a change-history entry pending for the recorder.
	starts := supplyplan.WeekStart(time.Now()).AddDate(0, 0, 28)
	dates := fmt.Sprintf(`"startsAt":"%s","endsAt":"%s"`, starts.Format(time.RFC3339), starts.AddDate(0, 0, 7).Format(time.RFC3339))
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	c0 := processCPU()
	defer func() { b.ReportMetric(float64(processCPU()-c0)/1e3/float64(b.N), "cpu-µs/op") }()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			i := seq.Add(1)
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.SetRequestURI("/api/forecast/events")
			ctx.Request.Header.SetMethod("POST")
			ctx.Request.Header.Set("Authorization", auth)
			ctx.Request.Header.SetContentType("application/json")
			ctx.Request.SetBodyString(fmt.Sprintf(`{"name":"Promo %d","type":"PROMOTION",%s,"value":{"liftPct":0.25,"stackingMode":"MULTIPLICATIVE"},"productMasterId":"sku-%d"}`, i, dates, i%500))
			h(&ctx)
			if ctx.Response.StatusCode() != 201 {
				b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	})
}

// noRateLimits turns the REST API's rate limits off (0 rps: no limit).
func noRateLimits(c *Config) {
	c.RateLimitRPS, c.RateLimitOrgRPS, c.RateLimitImportRPS = 0, 0, 0
}
