package streams

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// placedNode is one node's PlacedSignals and its readers.
type placedNode struct {
	ps      *PlacedSignals
	cancels map[int32]context.CancelFunc
	wg      sync.WaitGroup
}

func (n *placedNode) run(p int32) {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancels[p] = cancel
	n.wg.Add(1)
	go func() { defer n.wg.Done(); n.ps.Run(ctx, p) }()
}

func (n *placedNode) stop() {
	for _, c := range n.cancels {
		c()
	}
	n.wg.Wait()
}

// Signals written to the placed topic are applied by the reader of their organization's
// partition only; a new owner of a partition starts from the committed position (nothing the
// previous one applied and committed is applied again); a record whose organization moved is
// routed to its new partition; an unknown organization's signals are rejected, not placed.
func TestPlacedSignalsFollowPartitionOwnership(t *testing.T) {
	brokers := MustKafka(t, 1, "unused")
	var mu sync.Mutex
	place := map[string]int32{"org_a": 0, "org_b": 1}
	locate := func(_ context.Context, org string) (int32, error) {
		mu.Lock()
		defer mu.Unlock()
		p, ok := place[org]
		if !ok {
			return 0, fmt.Errorf("no placement for %s", org)
		}
		return p, nil
	}
	known := func(org string) bool { _, err := locate(context.Background(), org); return err == nil }
	sink := newMemSink() // shared, like the demand store: a signal applied twice is counted as a duplicate
	open := func() *placedNode {
		ps := NewPlacedSignals(PlacedSignalsConfig{Brokers: brokers, Topic: "signals.placed", Partitions: 4, Locate: locate,
			Known: known, CommitInterval: 20 * time.Millisecond, Logger: testLogger()}, sink)
		if err := ps.Open(); err != nil {
			t.Fatal(err)
		}
		n := &placedNode{ps: ps, cancels: map[int32]context.CancelFunc{}}
		t.Cleanup(func() { n.stop(); ps.Close() })
		return n
	}
	sigs := func(org, prefix string, n int) []supplyplan.DemandSignal {
		out := make([]supplyplan.DemandSignal, n)
		for i := range out {
			out[i] = supplyplan.DemandSignal{SignalID: fmt.Sprintf("%s-%s-%d", org, prefix, i), OrganizationID: org, SKU: "P",
				Location: "L", Quantity: 1, OccurredAt: testEpoch}
		}
		return out
	}
	route := func(n *placedNode, org string, s []supplyplan.DemandSignal) {
		t.Helper()
		out, err := n.ps.ApplySignals(context.Background(), org, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.Status != supplyplan.SignalApplied {
				t.Fatalf("placing %s's signals: %+v", org, o)
			}
		}
	}
	a := open()
	route(a, "org_a", sigs("org_a", "x", 2500)) // more than one record
	route(a, "org_b", sigs("org_b", "x", 10))
	a.run(0) // this node owns partition 0 only
	eventually(t, 10*time.Second, func() bool { return sink.applied() == 2500 && a.ps.Stats().Commits > 0 },
		func() string { return fmt.Sprintf("applied %d, stats %+v", sink.applied(), a.ps.Stats()) })
	time.Sleep(100 * time.Millisecond)
	if n := sink.applied(); n != 2500 {
		t.Fatalf("the owner of partition 0 applied %d signals, want org_a's 2500 only", n)
	}
	// Another node takes partition 0 over (a failover) and gets partition 1.
	a.stop()
	route(a, "org_a", sigs("org_a", "y", 5))
	b := open()
	b.run(0)
	b.run(1)
	eventually(t, 10*time.Second, func() bool { return sink.applied() == 2515 },
		func() string { return fmt.Sprintf("applied %d, want 2515", sink.applied()) })
	// A move: org_a's signals placed on 0 before the move reach the owner of partition 1.
	b.stop()
	route(a, "org_a", sigs("org_a", "z", 7))
	mu.Lock()
	place["org_a"] = 1
	mu.Unlock()
	c := open()
	c.run(0)
	c.run(1)
	// The rerouting node counts the signals once the brokers acknowledged them, which may be after
	// the new partition's reader applied them: wait for both.
	eventually(t, 10*time.Second, func() bool { return sink.applied() == 2522 && c.ps.Stats().Rerouted == 7 },
		func() string {
			return fmt.Sprintf("applied %d, want 2522; stats %+v, want 7 rerouted", sink.applied(), c.ps.Stats())
		})
	sink.mu.Lock()
	dups, wrong := sink.dups, sink.wrongOr
	sink.mu.Unlock()
	if dups != 0 || wrong != 0 {
		t.Errorf("%d signals applied twice, %d under another organization", dups, wrong)
	}
	// An unknown organization's signals are rejected and never placed.
	out, err := c.ps.ApplySignals(context.Background(), "org_nobody", sigs("org_nobody", "x", 2))
	if err != nil || len(out) != 2 || out[0].Status != supplyplan.SignalRejected || out[0].Reason != supplyplan.RejectUnknownTenant {
		t.Fatalf("unknown organization: %+v %v", out, err)
	}
	if st := c.ps.Stats(); st.Routed != 7 {
		t.Errorf("node c routed %d signals, want only the 7 of the move", st.Routed)
	}
}
