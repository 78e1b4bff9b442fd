package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sphttp "github.com/supplyplan/supplyplan/http"
)

// tableOwners is a fixed ownership table: key -> owner's REST API address.
type tableOwners struct {
	mu    sync.Mutex
	self  string
	owner map[string]string
}

func (o *tableOwners) Owner(org string) (string, bool, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	a := o.owner[org]
	return a, a == "" || a == o.self, false, nil
}

func (o *tableOwners) set(key, addr string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.owner[key] = addr
}

// mustStartRouted is MustStart with Main.Owners and NodeID set before Open.
func mustStartRouted(tb testing.TB, dataDir string, owners sphttp.Owners, node string, mutate ...func(*Config)) *testServer {
	tb.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = dataDir
	cfg.APIAddr, cfg.ConsoleAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.RegistryAddr, cfg.ToolsAddr, cfg.LoopCatalogAddr, cfg.LoopRuntimeAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.RequestTimeout = 10 * time.Second
	for _, f := range mutate {
		f(&cfg)
	}
	m := NewMain(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), io.Discard)
	m.Owners, m.NodeID = owners, node
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		_ = m.Close(ctx)
		tb.Fatalf("open: %v", err)
	}
	s := &testServer{t: tb, Main: m, URL: "http://" + m.API.Addr(), Data: dataDir, Creds: mustReadCreds(tb, dataDir)}
	tb.Cleanup(func() { s.Stop() })
	return s
}

// TestServeForwardsToTheOwner: two nodes holding the same platform and tenant (a copied data dir);
// node a's Owners says node b owns the organization. A write sent to a lands on b only, reads
// through a see b's state, and once a owns the organization itself it serves its own state.
func TestServeForwardsToTheOwner(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	seed := MustStart(t, dirA)
	org := seed.Creds.Organization.ID
	seed.Stop()
	copyDir(t, dirA, dirB)
	b := MustStart(t, dirB)
	owners := &tableOwners{owner: map[string]string{org: b.Main.API.Addr()}}
	a := mustStartRouted(t, dirA, owners, "node-a")
	owners.self = a.Main.API.Addr()

	key := a.Key("ADMIN")
	sc := a.Do("POST", "/api/forecast/scenarios", key, map[string]any{"name": "Routed"}).Must(t, 201)
	id := str(sc, "scenario", "id")
	if id == "" {
		t.Fatalf("no scenario id in %v", sc)
	}
	b.Do("GET", "/api/forecast/scenarios/"+id, key, nil).Must(t, 200)
	got := a.Do("GET", "/api/forecast/scenarios/"+id, key, nil).Must(t, 200)
	if str(got, "scenario", "name") != "Routed" {
		t.Fatalf("read through a: %v", got)
	}
	// a never applied the write: with the organization its own, a serves its own state.
	owners.set(org, "")
	if r := a.Do("GET", "/api/forecast/scenarios/"+id, key, nil); r.Status != 404 {
		t.Fatalf("a's own state has the scenario: %d %s", r.Status, r.Body)
	}
	// The owner down: 503 with Retry-After: 1.
	owners.set(org, b.Main.API.Addr())
	b.Stop()
	r := a.Do("GET", "/api/forecast/scenarios/"+id, key, nil)
	if r.Status != 503 || r.Code() != "UNAVAILABLE" || r.Header.Get("Retry-After") != "1" || !strings.Contains(string(r.Body), "cannot be reached") {
		t.Fatalf("owner down: %d %s", r.Status, r.Body)
	}
}
