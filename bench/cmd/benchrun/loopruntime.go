package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/supplyplan/supplyplan/jwtauth"
)

// benchLoopRuntime: durable transitions of one organization through the loop runtime
// (`supplyplan loop-runtime`, its own process), each request with a fresh token of the local issuer
// (a mutating call refuses a used jti), next to a bare fasthttp handler answering the same bytes.
// Each connection drives its own instance of the built-in quality loop around its fail/rework
// cycle, so every request is a transition: validated against the manifest, journaled with its audit
// event (hash chained) and its outbound event, fsync before the 200.
func benchLoopRuntime(_ context.Context, e *env) (section, error) {
	svc, err := startLoopRuntime(e)
	if err != nil {
		return section{}, err
	}
	defer svc.Stop()
	// Tokens are minted before the phases (Ed25519 signatures, on every core), so that the client's
	// signing does not compete with the service for the cores while it is measured. The runtime's
	// phase takes a fresh one per request (a mutating call refuses a used jti): the pool holds
	// enough for 12,000 transitions/s over the warm-up and the phase, and a token minted during the
	// phase because it ran out is counted and reported. The bare handler, which reads no token,
	// takes the same tokens round the pool (the same bytes per request) without using them up.
	need := int((e.duration + 2*time.Second).Seconds()) * 12000
	pool, err := mintTokens(svc.Data, need+2*e.concurrency)
	if err != nil {
		return section{}, err
	}
	var next, cycle, mintedLive atomic.Int64
	token := func() string {
		if i := next.Add(1) - 1; int(i) < len(pool) {
			return pool[i]
		}
		mintedLive.Add(1)
		t, err := jwtauth.MintLocal(svc.Data, "demo", []string{jwtauth.ScopeAdmin}, 15*time.Minute)
		if err != nil {
			panic(fmt.Sprintf("mint a token: %v", err))
		}
		return t
	}
	reused := func() string { return pool[int(cycle.Add(1)-1)%len(pool)] }
	auth := func() map[string]string { return map[string]string{"Authorization": "Bearer " + token()} }
	ids := make([]string, e.concurrency)
	var last []byte
	for w := range ids {
		status, body, err := call("POST", svc.URL+"/v1/instances", auth(), []byte(fmt.Sprintf(`{"loop":"supplyplan/quality","businessKey":"lot-%d"}`, w)))
		if err != nil || status != 201 {
			return section{}, fmt.Errorf("start an instance: %d %s %v", status, body, err)
		}
		var in struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return section{}, err
		}
		ids[w] = in.ID
		if status, body, err = call("POST", svc.URL+"/v1/instances/"+in.ID+"/transitions", auth(), []byte(`{"name":"start_inspection"}`)); err != nil || status != 200 {
			return section{}, fmt.Errorf("start_inspection: %d %s %v", status, body, err)
		}
		last = body
	}
	bare, err := startBare(e, last, 200)
	if err != nil {
		return section{}, err
	}
	defer bare.Stop()

	// Each worker keeps its own cycle position: a request that failed would desynchronize it, and
	// the phase reports failures as errors.
	pos := make([]atomic.Int64, e.concurrency)
	fail := []byte(`{"name":"fail","payload":{"defects":[{"code":"SCRATCH","quantity":1}]}}`)
	rework := []byte(`{"name":"rework"}`)
	spec := func(base string, token func() string) loadSpec {
		return loadSpec{URL: base + "/", Method: "POST", WantStatus: 200, Concurrency: e.concurrency, Warmup: time.Second, Duration: e.duration,
			Path:   func(w, _ int) string { return "/v1/instances/" + ids[w] + "/transitions" },
			Header: func(int, int) (string, string) { return "Authorization", "Bearer " + token() },
			Body: func(w, _ int) []byte {
				if pos[w].Add(1)%2 == 1 {
					return fail
				}
				return rework
			}}
	}
	// CPU seconds of each server over its phase, per request: steadier than the rates on a shared
	// machine. The warm-up's requests are not counted, so the figure is an upper bound.
	var harness [2]float64
	perRequest := func(pid int, run func() (loadResult, error)) (loadResult, float64, error) {
		c0, h0 := cpuSeconds(pid), cpuSeconds(os.Getpid())
		r, err := run()
		if err != nil || r.RPS == 0 {
			return r, 0, err
		}
		n := r.RPS * (e.duration + time.Second).Seconds()
		harness[0], harness[1] = harness[1], 1e6*(cpuSeconds(os.Getpid())-h0)/n
		return r, 1e6 * (cpuSeconds(pid) - c0) / n, nil
	}
	rb, bareCPU, err := perRequest(bare.cmd.Process.Pid, func() (loadResult, error) { return runLoad(spec(bare.URL, reused)) })
	if err != nil {
		return section{}, fmt.Errorf("bare handler: %w", err)
	}
	for w := range pos {
		pos[w].Store(0)
	}
	profile("loopruntime-transitions")
	rt, rtCPU, err := perRequest(svc.cmd.Process.Pid, func() (loadResult, error) { return runLoad(spec(svc.URL, token)) })
	if err != nil {
		return section{}, fmt.Errorf("transitions: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d keep-alive connections, %s measured after 1 s warm-up per phase; the runtime (`supplyplan loop-runtime`) and the bare handler each in their own process, load generator in a third, taking a fresh token of the local issuer per transition: the tokens (Ed25519) are all minted before the phases, so the client's signing does not compete with the service for the cores while it is measured (the bare handler's phase sends the same tokens again: it reads none); the service verifies every signature and refuses a used jti. Each connection moves its own instance of `supplyplan/quality` between `inspecting` and `on_hold` (fail with a defect payload, rework), all in one organization.\n\n",
		e.concurrency, e.duration)
	b.WriteString("| endpoint | requests/s | p50 | p99 | errors |\n|---|---|---|---|---|\n")
	b.WriteString(rb.row("bare fasthttp handler, same bytes as a transition") + "\n")
	b.WriteString(rt.row("`POST /v1/instances/{id}/transitions` (JWT verified, jti recorded, durable: fsync before 200)") + "\n\n")
	fmt.Fprintf(&b, "- durable transitions of one organization: %.0f/s (target at least 5,000/s on 2 cores): **%s**; %.0f%% of the bare handler's requests/s\n",
		rt.RPS, verdict(rt.RPS >= 5000), 100*rt.RPS/rb.RPS)
	if n := mintedLive.Load(); n > 0 {
		fmt.Fprintf(&b, "- the token pool ran out: %d tokens were minted during the runtime's phase, on the cores the service measured here uses\n", n)
	}
	fmt.Fprintf(&b, "- CPU per request (user+system, warm-up included, so an upper bound): runtime %.0f µs per transition, bare handler %.0f µs; the load generator %.0f µs per request of the runtime's phase (%.0f µs of the bare handler's); load average %s\n",
		rtCPU, bareCPU, harness[1], harness[0], loadAverage())
	return section{Title: "Loop runtime: durable transitions of one organization", Command: "go run ./bench/cmd/benchrun -only loopruntime", Body: b.String()}, nil
}

// startLoopRuntime starts `supplyplan loop-runtime` on a fresh data dir (the local issuer's key is
// created there) and waits for its ready line.
func startLoopRuntime(e *env) (*service, error) {
	data, err := os.MkdirTemp(e.tmp, "data-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"loop-runtime", "--data", data, "--loop-runtime-addr", "127.0.0.1:0", "--log-level", "warn"}, e.serviceArgs...)
	s, sc, err := e.spawn("supplyplan", exec.Command(e.bin, args...))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", e.bin, err)
	}
	s.Data = data
	deadline := time.Now().Add(60 * time.Second)
	for s.URL == "" && time.Now().Before(deadline) && sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "listening loop-runtime "); ok {
			s.URL = rest
		}
	}
	if s.URL == "" {
		s.Stop()
		return nil, fmt.Errorf("the loop runtime did not become ready; its last log lines:\n%s", s.tail)
	}
	go func() { _, _ = io.Copy(io.Discard, sc.rest()) }()
	return s, nil
}

// mintTokens mints n tokens of the local issuer of dataDir on every core.
func mintTokens(dataDir string, n int) ([]string, error) {
	out := make([]string, n)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				t, err := jwtauth.MintLocal(dataDir, "demo", []string{jwtauth.ScopeAdmin}, 15*time.Minute)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				out[i] = t
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return nil, fmt.Errorf("mint tokens: %w", err)
	}
	return out, nil
}
