package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
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
	// Tokens are minted ahead by two goroutines (Ed25519 signatures): the load generator takes one
	// per request, for the bare handler too, so both phases pay the same client cost.
	tokens := make(chan string, 8192)
	stop := make(chan struct{})
	defer close(stop)
	var mintErr atomic.Value
	for range 2 {
		go func() {
			for {
				t, err := jwtauth.MintLocal(svc.Data, "demo", []string{jwtauth.ScopeAdmin}, 15*time.Minute)
				if err != nil {
					mintErr.Store(err)
					return
				}
				select {
				case tokens <- t:
				case <-stop:
					return
				}
			}
		}()
	}
	auth := func() map[string]string {
		select {
		case t := <-tokens:
			return map[string]string{"Authorization": "Bearer " + t}
		case <-time.After(10 * time.Second):
			if err, ok := mintErr.Load().(error); ok {
				panic(fmt.Sprintf("mint a token: %v", err))
			}
			panic("no token minted in 10 s")
		}
	}
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
			Header: func(int, int) (string, string) { return "Authorization", auth()["Authorization"] },
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
	fmt.Fprintf(&b, "%d keep-alive connections, %s measured after 1 s warm-up per phase; the runtime (`supplyplan loop-runtime`) and the bare handler each in their own process, load generator (with two goroutines minting Ed25519 tokens of the local issuer, one per request) in a third. Each connection moves its own instance of `supplyplan/quality` between `inspecting` and `on_hold` (fail with a defect payload, rework), all in one organization.\n\n",
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
