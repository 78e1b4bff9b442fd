package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func MustDirectory(tb testing.TB, brokers []string, partitions int, node string) *Directory {
	tb.Helper()
	d := NewDirectory(DirectoryConfig{Brokers: brokers, Partitions: partitions, Node: node, Logger: testLogger()})
	if err := d.Open(); err != nil {
		tb.Fatalf("open directory: %v", err)
	}
	tb.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

func TestDirectoryPlacementIsRecordedAndShared(t *testing.T) {
	brokers := MustKafka(t, 1)
	ctx := context.Background()
	a := MustDirectory(t, brokers, 12, "a")
	b := MustDirectory(t, brokers, 12, "b")
	// Both nodes place the same new organizations concurrently: they agree.
	orgs := make([]string, 40)
	for i := range orgs {
		orgs[i] = fmt.Sprintf("org_%02d", i)
	}
	got := map[string][2]int32{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for n, d := range []*Directory{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, org := range orgs {
				p, err := d.Partition(ctx, org)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				v := got[org]
				v[n] = p
				got[org] = v
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	used := map[int32]bool{}
	for _, org := range orgs {
		v := got[org]
		if v[0] != v[1] || v[0] != HashPartition(org, 12) {
			t.Fatalf("%s placed on %v, want both %d", org, v, HashPartition(org, 12))
		}
		used[v[0]] = true
	}
	if len(used) < 6 {
		t.Fatalf("40 organizations on %d of 12 partitions", len(used))
	}
	pl, ok := a.Lookup("org_00")
	if !ok || pl.Rule != "sha256" || pl.By == "" {
		t.Fatalf("placement record %+v", pl)
	}
	if _, ok := a.Lookup("org_unknown"); ok {
		t.Fatal("lookup placed an organization")
	}
}

func TestDirectoryMoveIsAudited(t *testing.T) {
	brokers := MustKafka(t, 1)
	ctx := context.Background()
	a := MustDirectory(t, brokers, 12, "a")
	from, err := a.Partition(ctx, "org_move")
	if err != nil {
		t.Fatal(err)
	}
	to := (from + 5) % 12
	if _, err := a.Move(ctx, "org_move", to, "", "no actor"); err == nil {
		t.Fatal("move without who accepted")
	}
	if _, err := a.Move(ctx, "org_move", 12, "ops@example.com", "out of range"); err == nil {
		t.Fatal("move to partition 12 of 12 accepted")
	}
	if _, err := a.Move(ctx, "org_never_placed", 1, "ops@example.com", ""); err == nil {
		t.Fatal("move of an unplaced organization accepted")
	}
	before := time.Now().Add(-time.Second)
	m, err := a.StartMove(ctx, "org_move", to, "ops@example.com", "rebalance")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Applied || m.State != MovePending || m.From != from || m.To != to || m.By != "ops@example.com" || m.At.Before(before) || m.ID == "" {
		t.Fatalf("move record %+v", m)
	}
	// Frozen until the partitions' owners record their steps (Mover): the placement stays, and
	// no second move begins meanwhile.
	if _, moving := a.Moving("org_move"); !moving {
		t.Fatal("organization not frozen by its move")
	}
	if p, _ := a.Partition(ctx, "org_move"); p != from {
		t.Fatalf("placement switched before the copy: %d", p)
	}
	if _, err := a.StartMove(ctx, "org_move", (to+1)%12, "ops@example.com", "second"); err == nil {
		t.Fatal("second move accepted while one is in progress")
	}
	if _, err := a.StartMove(ctx, "org_move", from, "ops@example.com", "nowhere"); err == nil {
		t.Fatal("move to the current partition accepted")
	}
	step := func(kind string) {
		t.Helper()
		rec, err := a.stepRecord(kind, m, MoveStep{Node: "n", Epoch: 1, At: time.Now().UTC()})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := a.waitApplied(ctx, rec.Offset+1); err != nil {
			t.Fatal(err)
		}
	}
	step("move-done") // out of order: ignored
	if cur, _ := a.Moving("org_move"); cur.State != MovePending {
		t.Fatalf("a done step before the ready step applied: %+v", cur)
	}
	step("move-ready")
	step("move-done")
	m, err = a.WaitMove(ctx, "org_move", m.ID)
	if err != nil || m.State != MoveDone || m.Ready == nil || m.Done == nil {
		t.Fatalf("after its steps: %+v, %v", m, err)
	}
	if p, _ := a.Partition(ctx, "org_move"); p != to {
		t.Fatalf("after the move: partition %d, want %d", p, to)
	}
	if _, moving := a.Moving("org_move"); moving {
		t.Fatal("still frozen after the move")
	}
	if _, err := a.StartMove(ctx, "platform", 1, "ops@example.com", ""); err == nil {
		t.Fatal("the platform's placement key moved")
	}
	// A second node, started later, sees the placement and the audit trail; a move naming a
	// stale From (its view predates ours) is recorded but not applied.
	b := MustDirectory(t, brokers, 12, "b")
	if p, _ := b.Partition(ctx, "org_move"); p != to {
		t.Fatalf("second node: partition %d, want %d", p, to)
	}
	if ms := b.Moves("org_move"); len(ms) != 1 || ms[0].To != to || ms[0].From != from || ms[0].Reason != "rebalance" {
		t.Fatalf("second node's audit trail %+v", ms)
	}
	// The race: a node whose view predates the move writes a move from the old partition. It is
	// recorded, applied nowhere, and every node (one started after it too) agrees.
	stale := Move{Organization: "org_move", From: from, To: (from + 1) % 12, By: "other@example.com",
		Reason: "stale", At: time.Now().UTC(), Node: "b"}
	if err := b.write(ctx, "move/org_move/stale", dirRecord{Kind: "move", Move: &stale}); err != nil {
		t.Fatal(err)
	}
	c := MustDirectory(t, brokers, 12, "c")
	for i, d := range []*Directory{a, b, c} {
		if err := d.waitApplied(ctx, 6); err != nil { // place, move, 3 steps, stale move
			t.Fatal(err)
		}
		if p, _ := d.Partition(ctx, "org_move"); p != to {
			t.Fatalf("node %d after the stale move: partition %d, want %d", i, p, to)
		}
		if ms := d.Moves("org_move"); len(ms) != 2 || !ms[0].Applied || ms[1].Applied || ms[1].By != "other@example.com" {
			t.Fatalf("node %d: audit trail after the stale move %+v", i, ms)
		}
	}
}

// The journal places its streams through the directory: an organization's streams share its
// partition, and after a move its new streams' appends go to the new partition.
func TestKafkaJournalLocatesThroughDirectory(t *testing.T) {
	brokers := MustKafka(t, 1)
	ctx := context.Background()
	d := MustDirectory(t, brokers, 4, "a")
	j := MustKafkaJournal(t, brokers, 4, "a", nil, func(c *KafkaJournalConfig) { c.Locate = d.Locate })
	p, err := d.Partition(ctx, "org_dir")
	if err != nil {
		t.Fatal(err)
	}
	if err := appendWait(j, "tenant-org_dir", 1, []byte("x")); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("append before acquiring: %v", err)
	}
	if _, err := j.Acquire(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{"tenant-org_dir", "loopruns-org_dir", "outbound-org_dir", "loops-org_dir"} {
		if got, _ := d.Locate(stream); got != p {
			t.Fatalf("%s on %d, want %d", stream, got, p)
		}
		if err := appendWait(j, stream, 1, []byte(stream)); err != nil {
			t.Fatalf("%s: %v", stream, err)
		}
	}
	if PlacementKey("platform") != "platform" || PlacementKey("outbound-platform") != "platform" || PlacementKey("x") != "x" {
		t.Fatal("the platform's streams are placed with it; any other stream under its own name")
	}
}
