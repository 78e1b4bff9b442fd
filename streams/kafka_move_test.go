package streams

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A stream copied by a move (ReadStream on its partition, Import onto another) loads on the new
// partition exactly as it did on the old one: its snapshot and the entries after it; a stream
// without snapshot too, even over what an earlier stay on the new partition left there; and the
// records given to Import commit in the same transaction; an entry over the broker's message limit
// is split into parts again on the new partition.
func TestKafkaJournalImportCarriesStream(t *testing.T) {
	brokers := MustKafka(t, 1)
	ctx := context.Background()
	var mu sync.Mutex
	place := map[string]int32{"tenant-org_a": 0, "loops-org_a": 0}
	locate := func(stream string) (int32, error) {
		mu.Lock()
		defer mu.Unlock()
		return place[stream], nil
	}
	move := func(stream string, p int32) {
		mu.Lock()
		defer mu.Unlock()
		place[stream] = p
	}
	j := MustKafkaJournal(t, brokers, 4, "a", []int32{0, 2}, func(c *KafkaJournalConfig) { c.Locate = locate })

	// tenant-org_a on 0: entries 1-5, a snapshot at 3, entries 6-7.
	for seq := uint64(1); seq <= 5; seq++ {
		if err := appendWait(j, "tenant-org_a", seq, fmt.Appendf(nil, "e%d", seq)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.SaveSnapshot("tenant-org_a", 3, []byte("state@3")); err != nil {
		t.Fatal(err)
	}
	// Entry 7 is over the broker's message limit: written as parts, copied whole, split again.
	big := make([]byte, 3<<20)
	_, _ = crand.Read(big) // incompressible: the broker checks its limit after compression
	for seq := uint64(6); seq <= 7; seq++ {
		payload := fmt.Appendf(nil, "e%d", seq)
		if seq == 7 {
			payload = big
		}
		if err := appendWait(j, "tenant-org_a", seq, payload); err != nil {
			t.Fatal(err)
		}
	}
	// loops-org_a: an earlier stay on 2 (entries 1-2), then moved to 0 by hand (entries 1-3).
	move("loops-org_a", 2)
	for seq := uint64(1); seq <= 2; seq++ {
		if err := appendWait(j, "loops-org_a", seq, fmt.Appendf(nil, "old%d", seq)); err != nil {
			t.Fatal(err)
		}
	}
	move("loops-org_a", 0)
	for seq := uint64(1); seq <= 3; seq++ {
		if err := appendWait(j, "loops-org_a", seq, fmt.Appendf(nil, "l%d", seq)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]loaded{"tenant-org_a": mustLoad(t, j, "tenant-org_a"), "loops-org_a": mustLoad(t, j, "loops-org_a")}

	var copies []StreamCopy
	for _, s := range []string{"tenant-org_a", "loops-org_a", "outbound-org_a"} {
		cp, err := j.ReadStream(ctx, 0, s)
		if err != nil {
			t.Fatal(err)
		}
		copies = append(copies, cp)
	}
	if c := copies[0]; c.SnapshotSeq != 3 || string(c.Snapshot) != "state@3" || len(c.Entries) != 4 || c.LastSeq() != 7 {
		t.Fatalf("tenant copy: snapshot %d %q, %d entries, last %d", c.SnapshotSeq, c.Snapshot, len(c.Entries), c.LastSeq())
	}
	if c := copies[1]; c.Snapshot != nil || len(c.Entries) != 3 || c.LastSeq() != 3 || !copies[2].Empty() {
		t.Fatalf("loops copy %+v, outbound %+v", c, copies[2])
	}

	// Import needs the destination's ownership.
	if err := j.Import(ctx, 1, copies, nil); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("import onto a partition not owned: %v", err)
	}
	marker := &kgo.Record{Topic: DefaultOwnersTopic, Partition: 0, Key: []byte("test-marker"), Value: []byte("x")}
	if err := j.Import(ctx, 2, copies, []*kgo.Record{marker}); err != nil {
		t.Fatal(err)
	}
	move("tenant-org_a", 2)
	move("loops-org_a", 2)
	for s, w := range want {
		got := mustLoad(t, j, s)
		if got.snapSeq != w.snapSeq || string(got.snapData) != string(w.snapData) || !slices.Equal(got.seqs, w.seqs) ||
			!slices.Equal(got.payloads, w.payloads) || got.res.LastSeq != w.res.LastSeq {
			t.Fatalf("%s on the new partition: %+v, want %+v", s, got, w)
		}
	}
	// The extra record committed with the copy.
	found := false
	if err := readPartition(ctx, brokers, DefaultOwnersTopic, 0, 0, func(r *kgo.Record) error {
		found = found || string(r.Key) == "test-marker"
		return nil
	}); err != nil || !found {
		t.Fatalf("record of the import's transaction: found %v, %v", found, err)
	}
	// Writes go on there, and a snapshot after them covers the copy.
	if err := appendWait(j, "tenant-org_a", 8, []byte("e8")); err != nil {
		t.Fatal(err)
	}
	if err := appendWait(j, "loops-org_a", 4, []byte("l4")); err != nil {
		t.Fatal(err)
	}
	if err := j.SaveSnapshot("loops-org_a", 4, []byte("loops@4")); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, j, "tenant-org_a"); got.res.LastSeq != 8 || got.snapSeq != 3 || len(got.seqs) != 5 {
		t.Fatalf("tenant after a write on the new partition: %+v", got)
	}
	if got := mustLoad(t, j, "loops-org_a"); got.res.LastSeq != 4 || got.snapSeq != 4 || string(got.snapData) != "loops@4" || len(got.seqs) != 0 {
		t.Fatalf("loops after a snapshot on the new partition: %+v", got)
	}
	// CommitRecords too needs the ownership.
	if err := j.CommitRecords(3, []*kgo.Record{marker}); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("commit records on a partition not owned: %v", err)
	}
}

// The steps of a move are written in a partition owner's transaction, so the directory topic can
// end with a commit marker: a directory still opens (it reads to the end) and syncs past it.
func TestDirectoryReadsPastTransactionMarkers(t *testing.T) {
	brokers := MustKafka(t, 1)
	ctx := context.Background()
	d := MustDirectory(t, brokers, 4, "a")
	j := MustKafkaJournal(t, brokers, 4, "a", []int32{1})
	p, err := d.Partition(ctx, "org_tx")
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.StartMove(ctx, "org_tx", (p+1)%4, "ops@example.com", "markers")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := d.stepRecord("move-ready", m, MoveStep{Node: "a", Epoch: j.Epoch(1), At: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.CommitRecords(1, []*kgo.Record{rec}); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.Sync(sctx); err != nil {
		t.Fatalf("sync past the commit marker: %v", err)
	}
	if cur, _ := d.Moving("org_tx"); cur.State != MoveReady || cur.Ready == nil || cur.Ready.Epoch != j.Epoch(1) {
		t.Fatalf("after the transactional step: %+v", cur)
	}
	d2 := MustDirectory(t, brokers, 4, "b") // opens: reads to the end, marker included
	if cur, _ := d2.Moving("org_tx"); cur.State != MoveReady {
		t.Fatalf("a directory opened after the step: %+v", cur)
	}
}

// A stream loaded while the import that brought it is being committed loads what the import
// wrote: the commit is visible to other readers (the directory that routes the organization here)
// before the owner has noted the import's snapshot head, and a Load in that window used to replay
// the stream's earlier stay on the partition instead (TestMoveCarriesState lost every write made
// while the organization was away).
func TestKafkaJournalLoadDuringImportCommit(t *testing.T) {
	brokers := MustKafka(t, 1)
	ctx := context.Background()
	j := MustKafkaJournal(t, brokers, 2, "a", []int32{0}, func(c *KafkaJournalConfig) {
		c.Locate = func(string) (int32, error) { return 0, nil }
	})
	const stream = "tenant-org_b"
	// The earlier stay: entries 1-3 and a snapshot at 3.
	for seq := uint64(1); seq <= 3; seq++ {
		if err := appendWait(j, stream, seq, fmt.Appendf(nil, "e%d", seq)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.SaveSnapshot(stream, 3, []byte("old@3")); err != nil {
		t.Fatal(err)
	}
	var got loaded
	var loadErr error
	var wg sync.WaitGroup
	j.afterCommit = func() {
		j.afterCommit = nil
		wg.Go(func() { got, loadErr = tryLoad(j, stream) })
		time.Sleep(100 * time.Millisecond) // room for a Load that does not wait for the heads
	}
	if err := j.Import(ctx, 0, []StreamCopy{{Stream: stream, SnapshotSeq: 10, Snapshot: []byte("new@10")}}, nil); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	if got.snapSeq != 10 || string(got.snapData) != "new@10" || len(got.seqs) != 0 {
		t.Fatalf("loaded during the import's commit: snapshot %d %q, entries %v; want the imported snapshot at 10", got.snapSeq, got.snapData, got.seqs)
	}
}
