package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestServeModeChecked(t *testing.T) {
	t.Setenv("SUPPLYPLAN_KAFKA_BROKERS", "")
	t.Setenv("SUPPLYPLAN_CLICKHOUSE_ADDR", "")
	for args, want := range map[string]string{
		"--mode distributed": "--mode distributed requires --kafka-brokers",
		"--mode cluster":     `--mode must be embedded or distributed, not "cluster"`,
		"--mode distributed --kafka-brokers 127.0.0.1:1 --journal-partitions 0":          "--journal-partitions must be positive",
		"--mode distributed --kafka-brokers 127.0.0.1:1 --node-id n1 --clickhouse-addr=": "--mode distributed requires --clickhouse-addr",
	} {
		err := run(append([]string{"serve", "--data", t.TempDir(), "--api-addr", "127.0.0.1:0"}, strings.Fields(args)...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve %s: %v, want %q", args, err, want)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Two `serve --mode distributed` nodes on one kfake cluster: the demo organization is created by
// the node that owns the platform stream, every node knows who serves it and at which address,
// a write on the owner is read back on the other node once the owner leaves (its partitions are
// revoked, drained and released; the other node acquires and restores them).
func TestServeDistributed(t *testing.T) {
	ch, db := distClickHouse(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "supplyplan.demand-signals"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := strings.Join(c.ListenAddrs(), ",")
	type node = distNode
	start := func(name string) *node {
		n := &node{data: t.TempDir()}
		cfg := DefaultConfig()
		cfg.DataDir = n.data
		cfg.APIAddr = freeAddr(t)
		cfg.RegistryAddr, cfg.ToolsAddr, cfg.LoopCatalogAddr, cfg.LoopRuntimeAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		cfg.ConsoleAddr = ""
		cfg.Mode, cfg.KafkaBrokers, cfg.JournalPartitions, cfg.NodeID = "distributed", brokers, 4, name
		cfg.ClickHouseAddr, cfg.ClickHouseDatabase = ch, db
		n.m = NewMain(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), io.Discard)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := n.m.Open(ctx); err != nil {
			_ = n.m.Close(ctx)
			t.Fatalf("open %s: %v", name, err)
		}
		if n.m.Owners == nil {
			t.Fatal("no Owners in distributed mode")
		}
		n.url = "http://" + n.m.API.Addr()
		t.Cleanup(func() { n.stop(t) })
		return n
	}
	a, b := start("a"), start("b")

	// The demo organization: created once, by whichever node owns the platform stream.
	var credsDir string
	eventually(t, 60*time.Second, func() error {
		for _, n := range []*node{a, b} {
			if _, err := os.Stat(filepath.Join(n.data, "credentials.json")); err == nil {
				credsDir = n.data
				return nil
			}
		}
		return fmt.Errorf("no credentials yet")
	})
	creds := mustReadCreds(t, credsDir)
	org, admin := creds.Organization.ID, creds.Keys["ADMIN"]
	auth := map[string]string{"Authorization": bearerOf(admin)}

	// Every node agrees on who serves it; the owner answers local, the other its address.
	var owner, other *node
	eventually(t, 60*time.Second, func() error {
		owner, other = nil, nil
		for _, n := range []*node{a, b} {
			addr, local, restoring, err := n.m.Owners.Owner(org)
			if err != nil {
				return err
			}
			switch {
			case local && !restoring:
				owner = n
			case !local && addr != "":
				other = n
			}
		}
		if owner == nil || other == nil {
			return fmt.Errorf("owner %v, other %v", owner != nil, other != nil)
		}
		if addr, _, _, _ := other.m.Owners.Owner(org); addr != owner.m.Config.APIAddr {
			return fmt.Errorf("other node names %s, owner is at %s", addr, owner.m.Config.APIAddr)
		}
		return nil
	})
	// The owner's platform replica knows the demo key once it has read the bootstrap (~100 ms).
	eventually(t, 30*time.Second, func() error {
		if r := doRequest(t, owner.url, "POST", "/api/forecast/scenarios", auth, map[string]any{"name": "before the move"}); r.Status != 201 {
			return fmt.Errorf("create scenario: %d %s", r.Status, r.Body)
		}
		return nil
	})
	for _, n := range []*node{owner, other} {
		if r := doRequest(t, n.url, "GET", "/ready", nil, nil); r.Status != 200 {
			t.Fatalf("ready: %d %s", r.Status, r.Body)
		}
	}

	// The owner leaves; the other node takes its partitions and serves the organization.
	owner.stop(t)
	eventually(t, 60*time.Second, func() error {
		if _, local, restoring, err := other.m.Owners.Owner(org); err != nil || !local || restoring {
			return fmt.Errorf("local %v restoring %v err %v", local, restoring, err)
		}
		return nil
	})
	names := func() []string {
		var out []string
		for _, sc := range list(doRequest(t, other.url, "GET", "/api/forecast/scenarios", auth, nil).Must(t, 200), "scenarios") {
			out = append(out, sc.(map[string]any)["name"].(string))
		}
		return out
	}
	if got := names(); len(got) != 1 || got[0] != "before the move" {
		t.Fatalf("scenarios after the move: %v", got)
	}
	doRequest(t, other.url, "POST", "/api/forecast/scenarios", auth, map[string]any{"name": "after the move"}).Must(t, 201)
	if got := names(); len(got) != 2 {
		t.Fatalf("scenarios after a write on the new owner: %v", got)
	}
}

// distNode is one in-process node of TestServeDistributed.
type distNode struct {
	m    *Main
	data string
	url  string
}

// stop closes the node (idempotent).
func (n *distNode) stop(t *testing.T) {
	if n.m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.m.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
	n.m = nil
}
