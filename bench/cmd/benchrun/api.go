package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// benchAPI: GET /api/forecast/scenarios/[id] (reads) and POST /api/forecast/events (durable
// writes) under concurrent load, each next to a bare fasthttp handler returning the same bytes.
func benchAPI(_ context.Context, e *env) (section, error) {
	svc, err := startService(e)
	if err != nil {
		return section{}, err
	}
	defer svc.Stop()
	creds, err := readCreds(svc.Data)
	if err != nil {
		return section{}, err
	}
	auth := map[string]string{"Authorization": "Bearer " + creds.Keys["PLANNER"]}
	// Events name products, which must exist.
	if _, err := importAll(svc, creds.Keys["import"], "catalog", chunked("products", 500, 500, func(i int, b *bytes.Buffer) {
		fmt.Fprintf(b, `{"externalId":"sku-%d"}`, i)
	})); err != nil {
		return section{}, err
	}

	status, body, err := call("POST", svc.URL+"/api/forecast/scenarios", auth, []byte(`{"name":"Benchmark scenario","type":"PROMOTIONAL","assumptions":{"narrative":"steady","globalLiftPct":0.05,"categoryAdjustments":[{"categoryId":"beverages","liftPct":0.1}]}}`))
	if err != nil || status != 201 {
		return section{}, fmt.Errorf("create scenario: %d %s %v", status, body, err)
	}
	var created struct {
		Scenario struct{ ID string } `json:"scenario"`
	}
	_ = json.Unmarshal(body, &created)
	getURL := svc.URL + "/api/forecast/scenarios/" + created.Scenario.ID
	_, getBody, err := call("GET", getURL, auth, nil)
	if err != nil {
		return section{}, err
	}
	eventBody := func(w, i int) []byte {
		return []byte(fmt.Sprintf(`{"name":"Promo %d-%d","type":"PROMOTION","startsAt":"%s","endsAt":"%s","value":{"liftPct":0.25,"stackingMode":"MULTIPLICATIVE"},"productMasterId":"sku-%d"}`, w, i, eventStarts, eventEnds, i%500))
	}
	_, postBody, err := call("POST", svc.URL+"/api/forecast/events", auth, eventBody(0, 0))
	if err != nil {
		return section{}, err
	}

	const rounds = 3
	dur := max(e.duration/2, 2*time.Second)
	phase := func(url, method string, status int, body func(int, int) []byte) (loadResult, error) {
		// The CPU the server of the phase used per request goes to stderr: on a busy machine it is
		// steadier than the rates.
		var server *service
		for _, s := range e.started {
			if strings.HasPrefix(url, s.URL+"/") {
				server = s
			}
		}
		var c0, t0 float64
		if server != nil {
			c0 = cpuSeconds(server.cmd.Process.Pid)
			t0 = cpuSeconds(os.Getpid())
		}
		r, err := runLoad(loadSpec{URL: url, Method: method, Headers: auth, Body: body, WantStatus: status,
			Concurrency: e.concurrency, Warmup: time.Second, Duration: dur})
		if server != nil && err == nil && r.Requests > 0 {
			// The warm-up's requests are not counted: the figure is an upper bound.
			n := r.RPS * (dur + time.Second).Seconds()
			r.ServerCPU, r.HarnessCPU = 1e6*(cpuSeconds(server.cmd.Process.Pid)-c0)/n, 1e6*(cpuSeconds(os.Getpid())-t0)/n
			fmt.Fprintf(os.Stderr, "cpu %s %s (%s): %.1f µs per request, harness %.1f µs\n", method, url, server.Name, r.ServerCPU, r.HarnessCPU)
		}
		return r, err
	}
	bareGet, err := startBare(e, getBody, 200)
	if err != nil {
		return section{}, err
	}
	defer bareGet.Stop()
	barePost, err := startBare(e, postBody, 201)
	if err != nil {
		return section{}, err
	}
	defer barePost.Stop()

	// Interleaved rounds (bare GET, GET, bare POST, POST, ...) of shorter phases: other work on a
	// shared machine comes and goes, and a pair measured apart can be far off. Each figure is the
	// median of its rounds; the read ratio is the median of the rounds' ratios.
	type round struct{ rb, rg, pb, pw loadResult }
	var rs []round
	for r := range rounds {
		var x round
		if x.rb, err = phase(bareGet.URL+"/api/forecast/scenarios/"+created.Scenario.ID, "GET", 200, nil); err != nil {
			return section{}, fmt.Errorf("round %d, bare GET: %w", r+1, err)
		}
		profile(fmt.Sprintf("api-get-%d", r+1))
		if x.rg, err = phase(getURL, "GET", 200, nil); err != nil {
			return section{}, fmt.Errorf("round %d, GET scenario: %w", r+1, err)
		}
		if x.pb, err = phase(barePost.URL+"/api/forecast/events", "POST", 201, eventBody); err != nil {
			return section{}, fmt.Errorf("round %d, bare POST: %w", r+1, err)
		}
		profile(fmt.Sprintf("api-post-%d", r+1))
		if x.pw, err = phase(svc.URL+"/api/forecast/events", "POST", 201, eventBody); err != nil {
			return section{}, fmt.Errorf("round %d, POST event: %w", r+1, err)
		}
		rs = append(rs, x)
	}
	var readRatios, writes, writeRatios []float64
	for _, x := range rs {
		readRatios = append(readRatios, x.rg.RPS/x.rb.RPS)
		writes = append(writes, x.pw.RPS)
		writeRatios = append(writeRatios, x.pw.RPS/x.pb.RPS)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d keep-alive connections, %d interleaved rounds of %s measured after 1 s warm-up per phase (bare GET, GET, bare POST, POST, then again); service and bare handler each in their own process, load generator in a third. Each POST creates a promotion of one of 500 products for the week starting %s, inside the forecast horizon: the write also leaves a change-history entry pending, which the change recorder computes and writes back. The verdicts take the median of the rounds.\n\n", e.concurrency, rounds, dur, eventStarts[:10])
	b.WriteString("| round | endpoint | requests/s | p50 | p99 | errors |\n|---|---|---|---|---|---|\n")
	for i, x := range rs {
		pre := fmt.Sprintf("| %d ", i+1)
		b.WriteString(pre + x.rb.row("bare fasthttp handler, same bytes as GET scenario") + "\n")
		b.WriteString(pre + x.rg.row("`GET /api/forecast/scenarios/[id]`") + "\n")
		b.WriteString(pre + x.pb.row("bare fasthttp handler, same bytes as POST event") + "\n")
		b.WriteString(pre + x.pw.row("`POST /api/forecast/events` (durable: fsync before 201)") + "\n")
	}
	readRatio, write := median(readRatios), median(writes)
	fmt.Fprintf(&b, "\n- reads: %s of the bare handler in the three rounds, median %.0f%% (target at least 80%%): **%s**\n", percents(readRatios), 100*readRatio, verdict(readRatio >= 0.8))
	fmt.Fprintf(&b, "- durable writes: median %.0f/s (target at least 30,000/s): **%s**; %.0f%% of the bare handler\n", write, verdict(write >= 30000), 100*median(writeRatios))
	var bareCPU, svcCPU, harnessCPU []float64
	for _, x := range rs {
		bareCPU, svcCPU, harnessCPU = append(bareCPU, x.pb.ServerCPU), append(svcCPU, x.pw.ServerCPU), append(harnessCPU, x.pw.HarnessCPU)
	}
	b.WriteString(machineSpeed(bareCPU, svcCPU, harnessCPU))
	return section{Title: "Foundation: scenario reads and durable event writes", Command: "go run ./bench/cmd/benchrun -only api", Body: b.String()}, nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

type credentials struct {
	Organization struct{ ID, Slug string } `json:"organization"`
	Keys         map[string]string         `json:"keys"`
}

func readCreds(dataDir string) (credentials, error) {
	var c credentials
	b, err := os.ReadFile(filepath.Join(dataDir, "credentials.json"))
	if err != nil {
		return c, err
	}
	return c, json.Unmarshal(b, &c)
}

// call does one request and returns status and body.
func call(method, url string, headers map[string]string, body []byte) (int, []byte, error) {
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(res)
	req.SetRequestURI(url)
	req.Header.SetMethod(method)
	req.Header.SetContentType("application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	// A write carries an Idempotency-Key of its own, so that a retry after a connection lost
	// before any response byte (a keep-alive race) cannot apply it twice. A caller that passes an
	// empty key opts out (a bulk of writes whose keys would be measured as part of the work): such
	// a write is never retried.
	if k, ok := headers["Idempotency-Key"]; ok && k == "" {
		req.Header.Del("Idempotency-Key")
	} else if method != "GET" && method != "HEAD" && !ok {
		req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d-%d", os.Getpid(), callSeq.Add(1)))
	}
	if body != nil {
		req.SetBody(body)
	}
	if err := setupClient.DoTimeout(req, res, 5*time.Minute); err != nil {
		return 0, nil, err
	}
	return res.StatusCode(), bytes.Clone(res.Body()), nil
}

var callSeq atomic.Int64

// setupClient sends the harness's own requests (data loading, checks). It retries a request that
// failed at the connection only when repeating it is safe: reads, and writes with an
// Idempotency-Key (the service then applies them at most once).
var setupClient = &fasthttp.Client{
	ReadTimeout: 5 * time.Minute, WriteTimeout: 5 * time.Minute, MaxIdleConnDuration: 30 * time.Second,
	RetryIfErr: func(req *fasthttp.Request, attempts int, err error) (bool, bool) {
		if attempts >= 3 {
			return false, false
		}
		m := string(req.Header.Method())
		return false, m == "GET" || m == "HEAD" || len(req.Header.Peek("Idempotency-Key")) > 0
	},
}

// machineSpeed is the api section's line on the CPU the writes cost, round by round. The bare
// handler does the same work every round, so its CPU per request is the machine's speed: on these
// shared 2-core machines it moved by up to 40 % between rounds of one run (a host slowing the
// virtual machine down), and with it the rates, which an absolute target (30,000 writes/s) cannot
// tell apart from the service's own cost. The line says when that happened.
func machineSpeed(bare, svc, harness []float64) string {
	if len(bare) == 0 {
		return ""
	}
	lo, hi := slices.Min(bare), slices.Max(bare)
	if lo <= 0 || slices.Min(svc) <= 0 {
		return ""
	}
	line := fmt.Sprintf("- CPU per write in the rounds: the service %s µs, the load generator %s µs; the bare handler (the same work every round: the machine's speed) %s µs per request", oneDecimal(svc), oneDecimal(harness), oneDecimal(bare))
	if spread := hi/lo - 1; spread > 0.15 {
		line += fmt.Sprintf(". **The machine's speed moved by %.0f %% during this section** (a quiet machine keeps the bare handler's cost within a few %%): the rates are not a quiet machine's", 100*spread)
	}
	return line + "\n"
}

func oneDecimal(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(parts, " / ")
}
