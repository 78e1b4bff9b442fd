package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/testdeps"
	"github.com/supplyplan/supplyplan/redisstore"
)

func openGate(tb testing.TB) *redisstore.Gate {
	tb.Helper()
	ctx := context.Background()
	g := redisstore.NewGate(redisstore.Config{Addr: testdeps.Redis(tb), Prefix: "sptest:" + supplyplan.NewID("t") + ":"})
	if err := g.Open(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = g.Close(ctx) })
	return g
}

// TestGateMirrorsTheDomainRules runs random evaluations through Redis and through
// supplyplan.ApplyGate side by side: both must fire the same keys every time.
func TestGateMirrorsTheDomainRules(t *testing.T) {
	ctx := context.Background()
	g := openGate(t)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"stockout\x1fA\x1fL1\x1f\x1f", "lowAtp\x1fA\x1fL1\x1f\x1f", "overstock\x1fB\x1fL2\x1f\x1f", "expiry\x1fC\x1fL1\x1f\x1f"}
	entries := map[string]*supplyplan.GateEntry{}
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	cd := 30 * time.Minute
	for step := range 300 {
		now = now.Add(time.Duration(rng.IntN(20)) * time.Minute)
		var obs []supplyplan.GateObservation
		for _, k := range keys {
			switch rng.IntN(3) {
			case 1:
				obs = append(obs, supplyplan.GateObservation{Key: k, State: supplyplan.CondOn})
			case 2:
				obs = append(obs, supplyplan.GateObservation{Key: k, State: supplyplan.CondHold})
			}
		}
		want, changes := supplyplan.ApplyGate(entries, obs, cd, now)
		for k, e := range changes {
			if e == nil {
				delete(entries, k)
			} else {
				entries[k] = e
			}
		}
		got, err := g.Evaluate(ctx, "org1", obs, cd, now)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("step %d: redis fired %q, domain %q", step, got, want)
		}
	}
}

func TestGateTriggerAndScopes(t *testing.T) {
	ctx := context.Background()
	g := openGate(t)
	now := time.Now()
	k := "lowAtp\x1fP\x1fL\x1f\x1f"
	if ok, _, err := g.Trigger(ctx, "orgA", k, time.Hour, now, false); !ok || err != nil {
		t.Fatalf("first = %v %v", ok, err)
	}
	ok, wait, err := g.Trigger(ctx, "orgA", k, time.Hour, now.Add(10*time.Minute), false)
	if ok || err != nil || wait != 50*time.Minute {
		t.Fatalf("within cooldown = %v %s %v", ok, wait, err)
	}
	if ok, _, _ := g.Trigger(ctx, "orgB", k, time.Hour, now, false); !ok {
		t.Fatal("another organization shares the cooldown")
	}
	if ok, _, _ := g.Trigger(ctx, "orgA", k, time.Hour, now.Add(time.Minute), true); !ok {
		t.Fatal("bypass did not fire")
	}
	// A manual trigger puts the key in cooldown for evaluations too.
	fired, err := g.Evaluate(ctx, "orgA", []supplyplan.GateObservation{{Key: k, State: supplyplan.CondOn}}, time.Hour, now.Add(2*time.Minute))
	if err != nil || slices.Contains(fired, k) {
		t.Fatalf("evaluation after trigger fired %v %v", fired, err)
	}
}
