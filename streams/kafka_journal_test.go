package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/supplyplan/supplyplan/internal/wait"
)

// MustKafkaJournal opens a Kafka journal on brokers with the given partitions and transactional
// id prefix (nodes of one deployment share it) and acquires the listed partitions.
func MustKafkaJournal(tb testing.TB, brokers []string, partitions int, node string, acquire []int32, tweak ...func(*KafkaJournalConfig)) *KafkaJournal {
	tb.Helper()
	cfg := KafkaJournalConfig{Brokers: brokers, Partitions: partitions, Node: node, TxnPrefix: "test-journal",
		TxnTimeout: 10 * time.Second, CommitTimeout: 20 * time.Second, Logger: testLogger()}
	for _, f := range tweak {
		f(&cfg)
	}
	j := NewKafkaJournal(cfg)
	if err := j.Open(); err != nil {
		tb.Fatalf("open kafka journal: %v", err)
	}
	tb.Cleanup(func() { _ = j.Close(context.Background()) })
	for _, p := range acquire {
		if _, err := j.Acquire(context.Background(), p); err != nil {
			tb.Fatalf("acquire %d: %v", p, err)
		}
	}
	return j
}

func allPartitions(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// appendWait appends and waits for done.
func appendWait(j *KafkaJournal, stream string, seq uint64, payload []byte) error {
	ch := make(chan error, 1)
	j.Append(stream, seq, payload, func(err error) { ch <- err })
	select {
	case err := <-ch:
		return err
	case <-time.After(60 * time.Second):
		return errors.New("append: no answer in 60s")
	}
}

func barrierWait(j *KafkaJournal, stream string) error {
	ch := make(chan error, 1)
	j.Barrier(stream, func(err error) { ch <- err })
	return <-ch
}

type loaded struct {
	snapSeq  uint64
	snapData []byte
	seqs     []uint64
	payloads []string
	res      LoadResult
}

func mustLoad(tb testing.TB, j *KafkaJournal, stream string) loaded {
	tb.Helper()
	l, err := tryLoad(j, stream)
	if err != nil {
		tb.Fatalf("load %s: %v", stream, err)
	}
	return l
}

func tryLoad(j *KafkaJournal, stream string) (loaded, error) {
	var l loaded
	res, err := j.Load(stream, func(seq uint64, data []byte) error {
		l.snapSeq, l.snapData = seq, slices.Clone(data)
		return nil
	}, func(seq uint64, payload []byte) error {
		l.seqs = append(l.seqs, seq)
		l.payloads = append(l.payloads, string(payload))
		return nil
	})
	l.res = res
	return l, err
}

func TestKafkaJournalAppendThenFreshLoad(t *testing.T) {
	brokers := MustKafka(t, 1)
	a := MustKafkaJournal(t, brokers, 4, "a", allPartitions(4))
	if l := mustLoad(t, a, "tenant-org1"); len(l.seqs) != 0 || l.res.LastSeq != 0 {
		t.Fatalf("empty stream loaded %+v", l)
	}
	for i := uint64(1); i <= 3; i++ {
		if err := appendWait(a, "tenant-org1", i, []byte("entry-"+strconv.FormatUint(i, 10))); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	_ = a.Close(context.Background())
	b := MustKafkaJournal(t, brokers, 4, "b", allPartitions(4))
	l := mustLoad(t, b, "tenant-org1")
	if got, want := l.payloads, []string{"entry-1", "entry-2", "entry-3"}; !slices.Equal(got, want) {
		t.Fatalf("payloads %v, want %v", got, want)
	}
	if l.res.LastSeq != 3 || l.res.Entries != 3 || l.res.SnapshotSeq != 0 {
		t.Fatalf("load result %+v", l.res)
	}
	if l := mustLoad(t, b, "tenant-org2"); len(l.seqs) != 0 {
		t.Fatalf("another stream sees %v", l.payloads)
	}
}

func TestKafkaJournalNotOwner(t *testing.T) {
	brokers := MustKafka(t, 1)
	j := MustKafkaJournal(t, brokers, 4, "a", nil)
	if err := appendWait(j, "tenant-x", 1, []byte("x")); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("append to an unowned partition: %v, want ErrNotOwner", err)
	}
	if err := barrierWait(j, "tenant-x"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("barrier on an unowned partition: %v, want ErrNotOwner", err)
	}
	if _, err := tryLoad(j, "tenant-x"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("load of an unowned partition: %v, want ErrNotOwner", err)
	}
	p := HashPartition("tenant-x", 4)
	if _, err := j.Acquire(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if err := appendWait(j, "tenant-x", 1, []byte("x")); err != nil {
		t.Fatalf("append after acquire: %v", err)
	}
	j.Release(p)
	if err := appendWait(j, "tenant-x", 2, []byte("y")); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("append after release: %v, want ErrNotOwner", err)
	}
}

func TestKafkaJournalConcurrentAppends(t *testing.T) {
	const streams, perStream, partitions = 24, 150, 8
	brokers := MustKafka(t, 1)
	a := MustKafkaJournal(t, brokers, partitions, "a", allPartitions(partitions))
	var wg sync.WaitGroup
	errs := make(chan error, streams*perStream)
	for s := range streams {
		stream := fmt.Sprintf("tenant-org%02d", s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var acks sync.WaitGroup
			for seq := uint64(1); seq <= perStream; seq++ {
				acks.Add(1)
				a.Append(stream, seq, fmt.Appendf(nil, "%s/%d", stream, seq), func(err error) {
					if err != nil {
						errs <- fmt.Errorf("%s/%d: %w", stream, seq, err)
					}
					acks.Done()
				})
			}
			acks.Wait()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("append not acknowledged: %v", err)
	}
	st := a.Stats()
	if st.Appends != streams*perStream {
		t.Fatalf("stats count %d appends, want %d", st.Appends, streams*perStream)
	}
	if st.Transactions >= st.Appends/2 {
		t.Errorf("%d transactions for %d appends: appends are not group-committed", st.Transactions, st.Appends)
	}
	t.Logf("%d appends in %d transactions", st.Appends, st.Transactions)
	_ = a.Close(context.Background())

	b := MustKafkaJournal(t, brokers, partitions, "b", allPartitions(partitions))
	for s := range streams {
		stream := fmt.Sprintf("tenant-org%02d", s)
		l := mustLoad(t, b, stream)
		if len(l.seqs) != perStream {
			t.Fatalf("%s: %d entries, want %d", stream, len(l.seqs), perStream)
		}
		for i, seq := range l.seqs {
			if seq != uint64(i+1) || l.payloads[i] != fmt.Sprintf("%s/%d", stream, seq) {
				t.Fatalf("%s entry %d: seq %d payload %q", stream, i, seq, l.payloads[i])
			}
		}
	}
}

// A zombie: two journals own the same partition; the second's Acquire fences the first, whose
// later writes fail and are never read.
func TestKafkaJournalZombieFenced(t *testing.T) {
	brokers := MustKafka(t, 1)
	const stream = "tenant-zombie"
	p := HashPartition(stream, 2)
	a := MustKafkaJournal(t, brokers, 2, "a", []int32{p})
	if err := appendWait(a, stream, 1, []byte("a1")); err != nil {
		t.Fatal(err)
	}
	b := MustKafkaJournal(t, brokers, 2, "b", []int32{p})
	if eb, ea := b.Epoch(p), a.Epoch(p); eb <= ea {
		t.Fatalf("new owner's epoch %d, old owner's %d: want greater", eb, ea)
	}
	err := appendWait(a, stream, 2, []byte("zombie"))
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie append: %v, want ErrFenced", err)
	}
	if err := barrierWait(a, stream); !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie barrier: %v, want ErrFenced", err)
	}
	if err := a.SaveSnapshot(stream, 2, []byte("zombie state")); !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie snapshot: %v, want ErrFenced", err)
	}
	if _, err := tryLoad(a, stream); !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie load: %v, want ErrFenced", err)
	}
	l := mustLoad(t, b, stream)
	if got, want := l.payloads, []string{"a1"}; !slices.Equal(got, want) {
		t.Fatalf("new owner reads %v, want %v", got, want)
	}
	if err := appendWait(b, stream, 2, []byte("b2")); err != nil {
		t.Fatalf("new owner's append: %v", err)
	}
	c := MustKafkaJournal(t, brokers, 2, "c", []int32{p})
	l = mustLoad(t, c, stream)
	if got, want := l.payloads, []string{"a1", "b2"}; !slices.Equal(got, want) || l.snapSeq != 0 {
		dumpPartition(t, brokers, DefaultJournalTopic, p)
		t.Fatalf("after failover reads %v (snapshot %d), want %v", got, l.snapSeq, want)
	}
}

// A zombie whose transaction is open when the new owner arrives: the brokers abort it, and its
// commit fails.
func TestKafkaJournalZombieOpenTransactionAborted(t *testing.T) {
	brokers := MustKafka(t, 1)
	const stream = "tenant-open"
	p := HashPartition(stream, 1)
	a := MustKafkaJournal(t, brokers, 1, "a", []int32{p})
	if err := appendWait(a, stream, 1, []byte("a1")); err != nil {
		t.Fatal(err)
	}
	// Drive a transaction of a's producer by hand, as the owner loop would, and fence it while
	// it is open.
	a.mu.RLock()
	o := a.owners[p]
	a.mu.RUnlock()
	o.sendMu.Lock() // keep the loop idle: nothing else uses the producer meanwhile
	defer o.sendMu.Unlock()
	ctx := context.Background()
	if err := o.cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	rec := &kgo.Record{Topic: DefaultJournalTopic, Partition: p, Key: []byte(stream), Value: []byte("open"),
		Headers: []kgo.RecordHeader{{Key: "stream", Value: []byte(stream)}, {Key: "seq", Value: []byte("2")}, {Key: "epoch", Value: []byte("1")}}}
	if err := o.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatalf("produce in the open transaction: %v", err)
	}
	b := MustKafkaJournal(t, brokers, 1, "b", []int32{p})
	if err := o.cl.EndTransaction(ctx, kgo.TryCommit); err == nil || !isFenced(err) {
		t.Fatalf("zombie commit after fencing: %v, want a fencing error", err)
	}
	l := mustLoad(t, b, stream)
	if got, want := l.payloads, []string{"a1"}; !slices.Equal(got, want) {
		t.Fatalf("new owner reads %v, want %v (the open transaction aborted)", got, want)
	}
}

// The owner epoch of a partition never goes back, whichever node takes it and however often.
func TestKafkaJournalEpochNeverGoesBack(t *testing.T) {
	brokers := MustKafka(t, 1)
	const stream = "tenant-epochs"
	p := HashPartition(stream, 2)
	nodes := []*KafkaJournal{
		MustKafkaJournal(t, brokers, 2, "n0", nil),
		MustKafkaJournal(t, brokers, 2, "n1", nil),
		MustKafkaJournal(t, brokers, 2, "n2", nil),
	}
	var last uint64
	seq := uint64(0)
	for round := range 7 {
		n := nodes[(round*2)%3]
		epoch, err := n.Acquire(context.Background(), p)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if epoch <= last {
			dumpPartition(t, brokers, DefaultSnapshotTopic, p)
			t.Fatalf("round %d: epoch %d after %d", round, epoch, last)
		}
		last = epoch
		l := mustLoad(t, n, stream)
		if l.res.LastSeq != seq {
			dumpPartition(t, brokers, DefaultJournalTopic, p)
			t.Fatalf("round %d: loaded up to %d, want %d", round, l.res.LastSeq, seq)
		}
		seq++
		if err := appendWait(n, stream, seq, []byte(strconv.Itoa(round))); err != nil {
			t.Fatalf("round %d: append: %v", round, err)
		}
	}
	// A node restarted from nothing continues above.
	fresh := MustKafkaJournal(t, brokers, 2, "n3", []int32{p})
	if e := fresh.Epoch(p); e <= last {
		t.Fatalf("fresh node's epoch %d after %d", e, last)
	}
	// Every record carries its writer's epoch, and they never decrease along the partition.
	var epochs []uint64
	err := readPartition(context.Background(), brokers, DefaultJournalTopic, p, 0, func(r *kgo.Record) error {
		if r.Attrs.IsControl() {
			return nil
		}
		h, err := parseJournalHeaders(r)
		epochs = append(epochs, h.epoch)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(epochs) != 7 || !slices.IsSorted(epochs) || epochs[0] == epochs[6] {
		t.Fatalf("record epochs %v: want 7, ascending", epochs)
	}
}

// foldState is a test state: the payloads applied in order, as JSON.
func foldState(payloads []string) []byte {
	b, _ := json.Marshal(payloads)
	return b
}

func TestKafkaJournalSnapshotPlusTailEqualsReplay(t *testing.T) {
	brokers := MustKafka(t, 1)
	const stream = "tenant-snap"
	p := HashPartition(stream, 2)
	small := func(c *KafkaJournalConfig) { c.SnapshotChunk = 64 } // many chunks per snapshot
	a := MustKafkaJournal(t, brokers, 2, "a", []int32{p}, small)
	var all []string
	appendN := func(from, to int) {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		for i := from; i <= to; i++ {
			payload := fmt.Sprintf("entry %d of %s", i, stream)
			all = append(all, payload)
			wg.Add(1)
			a.Append(stream, uint64(i), []byte(payload), func(err error) {
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				wg.Done()
			})
		}
		wg.Wait()
		if firstErr != nil {
			t.Fatal(firstErr)
		}
	}
	appendN(1, 20)
	if err := a.SaveSnapshot(stream, 20, foldState(all[:20])); err != nil {
		t.Fatalf("snapshot 20: %v", err)
	}
	appendN(21, 30)
	// Entries after the snapshot's seq are queued before the snapshot itself (the actor saves
	// on another goroutine while it keeps appending): the tail must still start after 30.
	state30 := foldState(all[:30])
	appendN(31, 35)
	if err := a.SaveSnapshot(stream, 30, state30); err != nil {
		t.Fatalf("snapshot 30: %v", err)
	}
	appendN(36, 50)

	b := MustKafkaJournal(t, brokers, 2, "b", []int32{p}, small)
	l := mustLoad(t, b, stream)
	if l.snapSeq != 30 || l.res.SnapshotSeq != 30 {
		t.Fatalf("snapshot seq %d, want 30", l.snapSeq)
	}
	var restored []string
	if err := json.Unmarshal(l.snapData, &restored); err != nil {
		t.Fatal(err)
	}
	restored = append(restored, l.payloads...)
	if !slices.Equal(restored, all) {
		t.Fatalf("snapshot + tail = %d entries, full replay %d:\n%v\n%v", len(restored), len(all), restored, all)
	}
	if l.res.LastSeq != 50 || l.res.Entries != 20 {
		t.Fatalf("load result %+v, want last 50 after 20 entries", l.res)
	}
	// A snapshot with no entries after it restores alone.
	if err := b.SaveSnapshot(stream, 50, foldState(all)); err != nil {
		t.Fatal(err)
	}
	c := MustKafkaJournal(t, brokers, 2, "c", []int32{p})
	l = mustLoad(t, c, stream)
	if l.snapSeq != 50 || len(l.seqs) != 0 || string(l.snapData) != string(foldState(all)) {
		t.Fatalf("snapshot %d with %d entries after it", l.snapSeq, len(l.seqs))
	}
}

func TestKafkaJournalCorruptSnapshotRefused(t *testing.T) {
	brokers := MustKafka(t, 1)
	const stream = "tenant-corrupt"
	p := HashPartition(stream, 1)
	a := MustKafkaJournal(t, brokers, 1, "a", []int32{p})
	if err := appendWait(a, stream, 1, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := a.SaveSnapshot(stream, 1, []byte(`["one"]`)); err != nil {
		t.Fatal(err)
	}
	a.mu.RLock()
	head := *a.owners[p].heads[stream]
	a.mu.RUnlock()
	_ = a.Close(context.Background())

	// Overwrite the head with one whose hash does not match its chunks.
	head.SHA256 = "00" + head.SHA256[2:]
	val, _ := json.Marshal(head)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: DefaultSnapshotTopic, Partition: p,
		Key: []byte(snapHeadPrefix + stream), Value: val}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b := MustKafkaJournal(t, brokers, 1, "b", []int32{p})
	_, err = tryLoad(b, stream)
	if !errors.Is(err, ErrSnapshotCorrupt) {
		t.Fatalf("load with a corrupt snapshot: %v, want ErrSnapshotCorrupt", err)
	}
}

// An append that failed marks its stream: a snapshot taken before the next load could hold the
// failed write, so it is refused.
func TestKafkaJournalSnapshotAfterFailedAppendRefused(t *testing.T) {
	brokers := MustKafka(t, 1)
	const stream = "tenant-big"
	p := HashPartition(stream, 1)
	// Parts larger than the broker's 1 MiB limit: the append fails.
	a := MustKafkaJournal(t, brokers, 1, "a", []int32{p}, func(c *KafkaJournalConfig) { c.EntryChunk = 4 << 20 })
	if err := appendWait(a, stream, 1, bigEntry(3<<20, 9)); err == nil {
		t.Fatal("an entry larger than the batch limit was acknowledged")
	}
	if err := a.SaveSnapshot(stream, 1, []byte("state with the failed write")); err == nil {
		t.Fatal("snapshot after a failed append accepted")
	}
	if l := mustLoad(t, a, stream); len(l.seqs) != 0 {
		t.Fatalf("failed append visible: %v", l.seqs)
	}
	if err := appendWait(a, stream, 1, []byte("small")); err != nil {
		t.Fatalf("append after reload: %v", err)
	}
	if err := a.SaveSnapshot(stream, 1, []byte(`["small"]`)); err != nil {
		t.Fatalf("snapshot after reload: %v", err)
	}
}

// A snapshot larger than Kafka's message size goes in chunks under it; the next snapshot
// tombstones the previous one's chunks so that compaction can drop them.
func TestKafkaJournalLargeSnapshotChunked(t *testing.T) {
	brokers := MustKafka(t, 1)
	const stream = "tenant-large"
	p := HashPartition(stream, 1)
	a := MustKafkaJournal(t, brokers, 1, "a", []int32{p})
	big := make([]byte, 3<<20+123)
	for i := range big {
		big[i] = byte(i * 7919 >> 8)
	}
	if err := appendWait(a, stream, 1, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := a.SaveSnapshot(stream, 1, big); err != nil {
		t.Fatalf("save a %d-byte snapshot: %v", len(big), err)
	}
	a.mu.RLock()
	chunks := len(a.owners[p].heads[stream].Chunks)
	a.mu.RUnlock()
	if want := (len(big) + (512<<10 - 1)) / (512 << 10); chunks != want {
		t.Fatalf("%d chunks, want %d", chunks, want)
	}
	b := MustKafkaJournal(t, brokers, 1, "b", []int32{p})
	l := mustLoad(t, b, stream)
	if l.snapSeq != 1 || string(l.snapData) != string(big) || len(l.seqs) != 0 {
		t.Fatalf("restored snapshot %d: %d bytes (want %d), %d entries", l.snapSeq, len(l.snapData), len(big), len(l.seqs))
	}
	if err := appendWait(b, stream, 2, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := b.SaveSnapshot(stream, 2, []byte("small")); err != nil {
		t.Fatal(err)
	}
	tombstones := 0
	err := readPartition(context.Background(), brokers, DefaultSnapshotTopic, p, 0, func(r *kgo.Record) error {
		if !r.Attrs.IsControl() && r.Value == nil && len(r.Key) > 2 && string(r.Key[:2]) == snapChunkPrefix {
			tombstones++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if tombstones != chunks {
		t.Fatalf("%d chunk tombstones, want %d", tombstones, chunks)
	}
	c := MustKafkaJournal(t, brokers, 1, "c", []int32{p})
	if l := mustLoad(t, c, stream); l.snapSeq != 2 || string(l.snapData) != "small" {
		t.Fatalf("after the second snapshot: %d %q", l.snapSeq, l.snapData)
	}
}

// A takeover while the old owner is writing: every append the old owner had acknowledged is read
// by the new owner exactly once, and none that failed is.
func TestKafkaJournalTakeoverUnderLoad(t *testing.T) {
	brokers := MustKafka(t, 1)
	const streams = 6
	a := MustKafkaJournal(t, brokers, 1, "a", []int32{0})
	type result struct {
		acked, failed []uint64
		firstErr      error
	}
	var mu sync.Mutex
	results := make([]result, streams)
	counts := func() (minAcked, minFailed int) {
		mu.Lock()
		defer mu.Unlock()
		minAcked, minFailed = 1<<30, 1<<30
		for _, r := range results {
			minAcked, minFailed = min(minAcked, len(r.acked)), min(minFailed, len(r.failed))
		}
		return
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for s := range streams {
		stream := fmt.Sprintf("tenant-load%d", s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var acks sync.WaitGroup
			for seq := uint64(1); ; seq++ {
				select {
				case <-stop:
					acks.Wait()
					return
				default:
				}
				acks.Add(1)
				a.Append(stream, seq, fmt.Appendf(nil, "%s/%d", stream, seq), func(err error) {
					mu.Lock()
					if err == nil {
						results[s].acked = append(results[s].acked, seq)
					} else {
						results[s].failed = append(results[s].failed, seq)
						if results[s].firstErr == nil {
							results[s].firstErr = err
						}
					}
					mu.Unlock()
					acks.Done()
				})
				if seq%20 == 0 {
					time.Sleep(time.Millisecond) // pace the writers: transactions interleave with the takeover
				}
			}
		}()
	}
	wait.Eventually(t, 60*time.Second, func() error {
		if acked, failed := counts(); acked < 50 || failed > 0 {
			return fmt.Errorf("before the takeover: at least %d acknowledged per stream, %d failed", acked, failed)
		}
		return nil
	})
	b := MustKafkaJournal(t, brokers, 1, "b", []int32{0})
	wait.Eventually(t, 60*time.Second, func() error {
		if _, failed := counts(); failed == 0 {
			return errors.New("the old owner's appends still succeed")
		}
		return nil
	})
	close(stop)
	wg.Wait()
	for s := range streams {
		stream := fmt.Sprintf("tenant-load%d", s)
		r := results[s]
		// The transaction in flight at the takeover may fail otherwise (kfake answers its commit
		// INVALID_TXN_STATE); the owner knows it is fenced from the next one on.
		if err := appendWait(a, stream, 1<<40, []byte("late")); !errors.Is(err, ErrFenced) {
			t.Errorf("%s: append after the takeover: %v, want ErrFenced (first failure: %v)", stream, err, r.firstErr)
		}
		slices.Sort(r.acked)
		l := mustLoad(t, b, stream)
		if !slices.Equal(l.seqs, r.acked) {
			t.Fatalf("%s: new owner reads %d entries (last %v), old owner acknowledged %d (last %v)",
				stream, len(l.seqs), l.res.LastSeq, len(r.acked), r.acked[len(r.acked)-1])
		}
		for i, seq := range l.seqs {
			if l.payloads[i] != fmt.Sprintf("%s/%d", stream, seq) {
				t.Fatalf("%s: entry %d is %q", stream, seq, l.payloads[i])
			}
		}
	}
}

// Open creates the journal topic without retention and the snapshot topic compacted.
func TestKafkaJournalTopicsConfig(t *testing.T) {
	brokers := MustKafka(t, 1)
	MustKafkaJournal(t, brokers, 3, "a", nil)
	MustDirectory(t, brokers, 3, "a")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want := map[string]map[string]string{
		DefaultJournalTopic:   {"retention.ms": "-1", "retention.bytes": "-1"},
		DefaultSnapshotTopic:  {"cleanup.policy": "compact"},
		DefaultDirectoryTopic: {"cleanup.policy": "compact"},
	}
	for topic, configs := range want {
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, res := range resp.Resources {
			for _, c := range res.Configs {
				if c.Value != nil {
					got[c.Name] = *c.Value
				}
			}
		}
		for k, v := range configs {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", topic, k, got[k], v)
			}
		}
	}
	if md, err := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), cl); err != nil {
		t.Fatal(err)
	} else {
		parts := map[string]int{}
		for _, tp := range md.Topics {
			parts[*tp.Topic] = len(tp.Partitions)
		}
		if parts[DefaultJournalTopic] != 3 || parts[DefaultSnapshotTopic] != 3 || parts[DefaultDirectoryTopic] != 1 {
			t.Fatalf("partitions %v", parts)
		}
	}
}

// dumpPartition logs every record of topic/p, read_committed then read_uncommitted (on failure).
func dumpPartition(t *testing.T, brokers []string, topic string, p int32) {
	for _, iso := range []kgo.IsolationLevel{kgo.ReadCommitted(), kgo.ReadUncommitted()} {
		cl, _ := kgo.NewClient(kgo.SeedBrokers(brokers...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords())
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				t.Logf("iso %v off %d ctrl %v pid %d epoch %d key %q val %q", iso, r.Offset, r.Attrs.IsControl(), r.ProducerID, r.ProducerEpoch, r.Key, r.Value)
			})
		}
		end, err := stableOffset(context.Background(), cl, topic, p)
		t.Logf("lso %d %v", end, err)
		cancel()
		cl.Close()
	}
}
