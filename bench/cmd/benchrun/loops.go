package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// loopBenchManifest is issue 13's example manifest, named %[1]s at version %[2]s.
const loopBenchManifest = `{"name": %q, "version": %q, "domain": "PROCUREMENT", "description": "Restock a location",
 "states": ["draft", "submitted", "approved", "cancelled"], "initial": "draft",
 "terminal": ["approved", "cancelled"],
 "transitions": [{"name": "submit", "from": ["draft"], "to": "submitted", "roles": ["PLANNER", "ADMIN"],
                  "input": {"type": "object", "properties": {"note": {"type": "string"}}}},
                 {"name": "approve", "from": ["submitted"], "to": "approved"},
                 {"name": "cancel", "from": ["draft", "submitted"], "to": "cancelled"}],
 "timeouts": [{"state": "submitted", "after": "PT48H", "transition": "cancel"}]}`

func loopBenchBody(name, version string) []byte {
	return []byte(fmt.Sprintf(loopBenchManifest, name, version))
}

// benchLoops: the loop catalog (`supplyplan loop-catalog`, its own process) resolving `^1` over a
// loop of 100 versions, and publishing new versions (durable: fsync before 201), each next to a
// bare fasthttp handler returning the same bytes.
func benchLoops(_ context.Context, e *env) (section, error) {
	svc, err := startLoopCatalog(e)
	if err != nil {
		return section{}, err
	}
	defer svc.Stop()
	creds, err := readCreds(svc.Data)
	if err != nil {
		return section{}, err
	}
	admin := map[string]string{"Authorization": "Bearer " + creds.Keys["ADMIN"]}
	viewer := map[string]string{"Authorization": "Bearer " + creds.Keys["VIEWER"]}
	scope := creds.Organization.Slug

	// A loop with 100 releases (1.0.0 .. 1.99.0), a few of them yanked or deprecated, so that
	// resolution has versions to skip.
	name := scope + "/restock"
	const versions = 100
	for i := 0; i < versions; i++ {
		v := fmt.Sprintf("1.%d.0", i)
		if status, body, err := call("PUT", svc.URL+"/v1/loops/"+name+"/versions/"+v, admin, loopBenchBody(name, v)); err != nil || status != 201 {
			return section{}, fmt.Errorf("publish %s@%s: %d %s %v", name, v, status, body, err)
		}
	}
	for _, c := range []struct{ v, action, body string }{
		{"1.99.0", "yank", `{"reason":"bench"}`}, {"1.98.0", "deprecate", `{"message":"bench"}`},
	} {
		if status, body, err := call("POST", svc.URL+"/v1/loops/"+name+"/versions/"+c.v+"/"+c.action, admin, []byte(c.body)); err != nil || status != 200 {
			return section{}, fmt.Errorf("%s %s: %d %s %v", c.action, c.v, status, body, err)
		}
	}
	resolvePath := "/v1/loops/" + name + "/resolve?range=%5E1"
	status, resolveBody, err := call("GET", svc.URL+resolvePath, viewer, nil)
	if err != nil || status != 200 || !strings.Contains(string(resolveBody), `"version":"1.97.0"`) {
		return section{}, fmt.Errorf("resolve ^1: %d %s %v", status, resolveBody, err)
	}
	// The answer of one publish, for the bare handler.
	status, publishBody, err := call("PUT", svc.URL+"/v1/loops/"+scope+"/probe/versions/1.0.0", admin, loopBenchBody(scope+"/probe", "1.0.0"))
	if err != nil || status != 201 {
		return section{}, fmt.Errorf("probe publish: %d %s %v", status, publishBody, err)
	}

	bareGet, err := startBare(e, resolveBody, 200)
	if err != nil {
		return section{}, err
	}
	defer bareGet.Stop()
	barePut, err := startBare(e, publishBody, 201)
	if err != nil {
		return section{}, err
	}
	defer barePut.Stop()

	phase := func(base string, spec loadSpec) (loadResult, error) {
		spec.URL = base + spec.URL
		spec.Concurrency, spec.Warmup, spec.Duration = e.concurrency, time.Second, e.duration
		return runLoad(spec)
	}
	resolveSpec := loadSpec{URL: resolvePath, Method: "GET", Headers: viewer, WantStatus: 200}
	// Each worker publishes its own loop, one new minor version per request (a new name@version
	// every time, so each is a create: 201).
	publishSpec := func(run string) loadSpec {
		return loadSpec{URL: "/", Method: "PUT", Headers: admin, WantStatus: 201,
			Path: func(w, i int) string {
				return fmt.Sprintf("/v1/loops/%s/%s-%d/versions/1.%d.0", scope, run, w, i)
			},
			Body: func(w, i int) []byte {
				return loopBenchBody(fmt.Sprintf("%s/%s-%d", scope, run, w), fmt.Sprintf("1.%d.0", i))
			}}
	}
	rb, err := phase(bareGet.URL, resolveSpec)
	if err != nil {
		return section{}, fmt.Errorf("bare GET: %w", err)
	}
	wait := profile("loops-resolve")
	rr, err := phase(svc.URL, resolveSpec)
	wait()
	if err != nil {
		return section{}, fmt.Errorf("resolve: %w", err)
	}
	pb, err := phase(barePut.URL, publishSpec("bare"))
	if err != nil {
		return section{}, fmt.Errorf("bare PUT: %w", err)
	}
	pp, err := phase(svc.URL, publishSpec("pub"))
	if err != nil {
		return section{}, fmt.Errorf("publish: %w", err)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%d keep-alive connections, %s measured after 1 s warm-up per phase; the catalog (`supplyplan loop-catalog`) and the bare handler each in their own process, load generator in a third. Resolution of `^1` over a loop of %d releases (one yanked, one deprecated); publishes of %d-byte manifests, each a new version of one of %d loops (one per connection) of one organization.\n\n",
		e.concurrency, e.duration, versions, len(loopBenchBody(scope+"/pub-0", "1.0.0")), e.concurrency)
	b.WriteString("| endpoint | requests/s | p50 | p99 | errors |\n|---|---|---|---|---|\n")
	b.WriteString(rb.row("bare fasthttp handler, same bytes as resolve") + "\n")
	b.WriteString(rr.row("`GET /v1/loops/{scope}/{name}/resolve?range=^1`") + "\n")
	b.WriteString(pb.row("bare fasthttp handler, same bytes as publish") + "\n")
	b.WriteString(pp.row("`PUT /v1/loops/{scope}/{name}/versions/{version}` (durable: fsync before 201)") + "\n\n")
	ratio := rr.RPS / rb.RPS
	fmt.Fprintf(&b, "- resolve: %.0f%% of the bare handler's requests/s (the API's read target: at least 50%%): **%s**; p99 %s against the bare handler's %s\n",
		100*ratio, verdict(ratio >= 0.5), fmtDur(rr.P99), fmtDur(rb.P99))
	fmt.Fprintf(&b, "- durable publishes: %.0f/s (each: RFC 8785 canonicalization, validation, SHA-256, SHA-512 and an Ed25519 signature on the request's goroutine, then the existence and compatibility checks and the journal entry in the scope's actor); %.0f%% of the bare handler\n",
		pp.RPS, 100*pp.RPS/pb.RPS)
	return section{Title: "Loop catalog: resolve and durable publishes", Command: "go run ./bench/cmd/benchrun -only loops", Body: b.String()}, nil
}

// startLoopCatalog starts `supplyplan loop-catalog` on a fresh data dir and waits for its ready line.
func startLoopCatalog(e *env) (*service, error) {
	data, err := os.MkdirTemp(e.tmp, "data-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"loop-catalog", "--data", data, "--loop-catalog-addr", "127.0.0.1:0", "--log-level", "warn"}, e.serviceArgs...)
	s, sc, err := e.spawn("supplyplan", exec.Command(e.bin, args...))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", e.bin, err)
	}
	s.Data = data
	deadline := time.Now().Add(60 * time.Second)
	for s.URL == "" && time.Now().Before(deadline) && sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "listening loop-catalog "); ok {
			s.URL = rest
		}
	}
	if s.URL == "" {
		s.Stop()
		return nil, fmt.Errorf("the loop catalog did not become ready; its last log lines:\n%s", s.tail)
	}
	go func() { _, _ = io.Copy(io.Discard, sc.rest()) }()
	return s, nil
}
