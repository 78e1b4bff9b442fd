// Package mcpbench measures the MCP surfaces over HTTP under concurrent load, next to a bare
// fasthttp handler that returns the same bytes in the same run: requests per second, p50 and p99
// latency, and the ratio to the bare handler. bench/cmd/mcpbench prints the table; a bench runner
// can call Run directly.
package mcpbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/actors"
	sphttp "github.com/supplyplan/supplyplan/http"
	"github.com/supplyplan/supplyplan/internal/tooltest"
	"github.com/supplyplan/supplyplan/rpc"
	"github.com/supplyplan/supplyplan/streams"
	"github.com/supplyplan/supplyplan/tools"
)

// Options tune a run.
type Options struct {
	Duration    time.Duration // per measurement (default 5 s)
	Concurrency int           // parallel connections (default 32)
	Merchants   int           // listed merchants in the registry (default 50)
	Logger      *slog.Logger
}

// Result is one scenario measured next to its bare baseline.
type Result struct {
	Name         string
	Requests     int
	RPS          float64
	P50, P99     time.Duration
	BaseRPS      float64
	BaseP99      time.Duration
	Ratio        float64 // RPS / BaseRPS
	ResponseSize int
}

type scenario struct {
	name    string
	method  string
	url     string
	headers map[string]string
	body    string
}

// Run starts the registry and the tool service in-process on loopback (embedded mode, a temporary
// data dir), measures each scenario and a bare fasthttp handler serving the scenario's response
// bytes, and stops everything.
func Run(ctx context.Context, opt Options) ([]Result, error) {
	if opt.Duration <= 0 {
		opt.Duration = 5 * time.Second
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = 32
	}
	if opt.Merchants <= 0 {
		opt.Merchants = 50
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	dir, err := os.MkdirTemp("", "mcpbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	j, err := streams.OpenJournal(streams.JournalConfig{Dir: filepath.Join(dir, "journal")})
	if err != nil {
		return nil, err
	}
	defer j.Close()
	core := actors.NewCore(actors.Config{Journal: j})
	if err := core.Open(ctx); err != nil {
		return nil, err
	}
	defer core.Close(context.Background())
	platform, sys := actors.NewPlatform(core, nil), actors.NewMCP(core, actors.NewWebhooks(core, actors.OutboundConfig{}))
	var creds supplyplan.Credentials
	if _, err := platform.Bootstrap(ctx, func(c supplyplan.Credentials) error { creds = c; return nil }); err != nil {
		return nil, err
	}
	for i := range opt.Merchants - 1 {
		name, slug, yes := fmt.Sprintf("Merchant %03d", i), fmt.Sprintf("m%03d", i), true
		caps := []string{supplyplan.CapCatalog, supplyplan.CapInventory}
		o, err := platform.CreateOrganization(ctx, supplyplan.OrganizationInput{Name: &name, Slug: &slug, Capabilities: &caps})
		if err != nil {
			return nil, err
		}
		desc := "Outdoor and bike gear shop number " + slug
		if _, err := sys.SetMerchant(ctx, o.ID, supplyplan.MerchantInput{Listed: &yes, DisplayName: &name, Description: &desc,
			Categories: &[]string{"outdoor", "bikes"}}); err != nil {
			return nil, err
		}
	}
	_, gateway, err := sys.CreateGatewayKey(ctx, supplyplan.KeyNameInput{})
	if err != nil {
		return nil, err
	}

	planning := tooltest.NewPlanning()
	deps := &tools.Deps{Catalog: tooltest.NewCatalog(), Forecasts: planning, Transfers: planning, Audit: sys,
		Confirm: &tools.Confirmer{Secret: []byte("bench")}}
	tools := sphttp.NewToolServer(sphttp.ToolsConfig{Addr: "127.0.0.1:0", Logger: opt.Logger},
		sphttp.ToolsServices{Keys: sys, Merchants: sys, Deps: deps, MCP: rpc.NewHandler(rpc.Config{Name: "tools", Version: "bench", Logger: opt.Logger})})
	if err := tools.Open(); err != nil {
		return nil, err
	}
	defer tools.Close(context.Background())
	reg := rpc.NewRegistryServer(rpc.RegistryConfig{Addr: "127.0.0.1:0", Logger: opt.Logger, MCP: rpc.Config{Name: "registry", Version: "bench"}},
		sys, rpc.Directory{Merchants: sys, ToolDeps: deps, ToolsURL: func() string { return "http://" + tools.Addr() }}, nil)
	if err := reg.Open(); err != nil {
		return nil, err
	}
	defer reg.Close(context.Background())

	mcpHeaders := func(key string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": rpc.V20251125}
	}
	regURL, toolsURL := "http://"+reg.Addr()+"/mcp", "http://"+tools.Addr()
	demoTool := creds.Keys[supplyplan.CredDemoTool]
	scenarios := []scenario{
		{name: "registry tools/call search_merchants (limit 20)", method: "POST", url: regURL, headers: mcpHeaders(gateway),
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_merchants","arguments":{"query":"outdoor"}}}`},
		{name: "registry tools/list", method: "POST", url: regURL, headers: mcpHeaders(gateway),
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{name: "tool service MCP tools/list (9 tools)", method: "POST", url: toolsURL + "/mcp?org=demo", headers: mcpHeaders(demoTool),
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{name: "tool service GET /tools/list", method: "GET", url: toolsURL + "/tools/list?org=demo",
			headers: map[string]string{"x-api-key": demoTool}},
		{name: "tool service MCP tools/call check_availability", method: "POST", url: toolsURL + "/mcp?org=demo", headers: mcpHeaders(demoTool),
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_availability","arguments":{"productId":"TENT-2P"}}}`},
	}
	var out []Result
	for _, sc := range scenarios {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		status, body, err := once(sc)
		if err != nil {
			return out, fmt.Errorf("%s: %w", sc.name, err)
		}
		if status != 200 || strings.Contains(string(body), `"error"`) || strings.Contains(string(body), `"isError":true`) {
			return out, fmt.Errorf("%s: status %d: %s", sc.name, status, body)
		}
		base, stop, err := bare(body)
		if err != nil {
			return out, err
		}
		bsc := sc
		bsc.url = "http://" + base + "/mcp"
		baseline := measure(bsc, opt)
		stop()
		got := measure(sc, opt)
		r := Result{Name: sc.name, Requests: got.n, RPS: got.rps, P50: got.p50, P99: got.p99, BaseRPS: baseline.rps,
			BaseP99: baseline.p99, ResponseSize: len(body)}
		if baseline.rps > 0 {
			r.Ratio = got.rps / baseline.rps
		}
		opt.Logger.Info("measured", "scenario", sc.name, "rps", int(r.RPS), "baseRps", int(r.BaseRPS), "ratio", r.Ratio)
		out = append(out, r)
	}
	return out, nil
}

func request(sc scenario) *fasthttp.Request {
	req := fasthttp.AcquireRequest()
	req.SetRequestURI(sc.url)
	req.Header.SetMethod(sc.method)
	for k, v := range sc.headers {
		req.Header.Set(k, v)
	}
	if sc.body != "" {
		req.SetBodyString(sc.body)
	}
	return req
}

func once(sc scenario) (int, []byte, error) {
	req := request(sc)
	defer fasthttp.ReleaseRequest(req)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), nil
}

// bare serves body from a plain fasthttp handler: the ceiling of this machine for that response.
func bare(body []byte) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(body)
	}}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	return ln.Addr().String(), func() { _ = srv.Shutdown(); <-done }, nil
}

type measurement struct {
	n             int
	rps           float64
	p50, p99      time.Duration
	errs, non200s int
}

// measure runs Concurrency closed-loop workers for Duration after a short warm-up.
func measure(sc scenario, opt Options) measurement {
	client := &fasthttp.Client{MaxConnsPerHost: opt.Concurrency * 2, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	run := func(d time.Duration, record bool) ([][]time.Duration, int) {
		lat := make([][]time.Duration, opt.Concurrency)
		var errs int
		var mu sync.Mutex
		var wg sync.WaitGroup
		deadline := time.Now().Add(d)
		for w := range opt.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := request(sc)
				defer fasthttp.ReleaseRequest(req)
				resp := fasthttp.AcquireResponse()
				defer fasthttp.ReleaseResponse(resp)
				local := make([]time.Duration, 0, 1<<14)
				for time.Now().Before(deadline) {
					start := time.Now()
					err := client.Do(req, resp)
					el := time.Since(start)
					if err != nil || resp.StatusCode() != 200 {
						mu.Lock()
						errs++
						mu.Unlock()
						continue
					}
					if record {
						local = append(local, el)
					}
				}
				lat[w] = local
			}()
		}
		wg.Wait()
		return lat, errs
	}
	run(opt.Duration/5, false) // warm-up
	start := time.Now()
	lat, errs := run(opt.Duration, true)
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	m := measurement{n: len(all), errs: errs}
	if len(all) > 0 {
		m.rps = float64(len(all)) / elapsed.Seconds()
		m.p50 = all[len(all)*50/100]
		m.p99 = all[min(len(all)-1, len(all)*99/100)]
	}
	return m
}

// Markdown renders results as a table.
func Markdown(w io.Writer, res []Result, opt Options) {
	fmt.Fprintf(w, "| scenario | req/s | p50 | p99 | bare fasthttp req/s | bare p99 | ratio | response bytes |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res {
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %.0f | %s | %.0f%% | %d |\n", r.Name, r.RPS, r.P50.Round(time.Microsecond),
			r.P99.Round(time.Microsecond), r.BaseRPS, r.BaseP99.Round(time.Microsecond), 100*r.Ratio, r.ResponseSize)
	}
	fmt.Fprintf(w, "\n%d concurrent connections, %s per measurement, after a warm-up; client and server share the machine.\n",
		opt.Concurrency, opt.Duration)
}
