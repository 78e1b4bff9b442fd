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
	// Tokens are minted before the phases (Ed25519 signatures, on every core), so that neither phase
	// pays for them while it is measured; both phases take one per request from the same pool.
	need := 2 * int((e.duration+time.Second).Seconds()+1) * 6000
	pool, err := mintTokens(svc.Data, need+2*e.concurrency)
	if err != nil {
		return section{}, err
	}
	var next atomic.Int64
	token := func() string {
		if i := next.Add(1) - 1; int(i) < len(pool) {
			return pool[i]
		}
		t, err := jwtauth.MintLocal(svc.Data, "demo", []string{jwtauth.ScopeAdmin}, 15*time.Minute)
		if err != nil {
			panic(fmt.Sprintf("mint a token: %v", err))
		}
		return t
	}
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
	spec := func(base string) loadSpec {
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
	rb, err := runLoad(spec(bare.URL))
	if err != nil {
		return section{}, fmt.Errorf("bare handler: %w", err)
	}
	for w := range pos {
		pos[w].Store(0)
	}
	rt, err := runLoad(spec(svc.URL))
	if err != nil {
		return section{}, fmt.Errorf("transitions: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d keep-alive connections, %s measured after 1 s warm-up per phase; the runtime (`supplyplan loop-runtime`) and the bare handler each in their own process, load generator in a third, taking a fresh token of the local issuer (minted before the phases) per request. Each connection moves its own instance of `supplyplan/quality` between `inspecting` and `on_hold` (fail with a defect payload, rework), all in one organization.\n\n",
		e.concurrency, e.duration)
	b.WriteString("| endpoint | requests/s | p50 | p99 | errors |\n|---|---|---|---|---|\n")
	b.WriteString(rb.row("bare fasthttp handler, same bytes as a transition") + "\n")
	b.WriteString(rt.row("`POST /v1/instances/{id}/transitions` (JWT verified, jti recorded, durable: fsync before 200)") + "\n\n")
	fmt.Fprintf(&b, "- durable transitions of one organization: %.0f/s (target at least 5,000/s on 2 cores): **%s**; %.0f%% of the bare handler's requests/s\n",
		rt.RPS, verdict(rt.RPS >= 5000), 100*rt.RPS/rb.RPS)
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
