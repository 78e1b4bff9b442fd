package streams

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// bigEntry is n incompressible bytes (a compressed batch under the limit would prove nothing).
func bigEntry(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	return b
}

// followAll replays stream with Follow until it has caught up and returns the payloads.
func followAll(t *testing.T, j *KafkaJournal, stream string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []string
	caught := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- j.Follow(ctx, stream, func(uint64, []byte) error { return nil },
			func(_ uint64, p []byte) error { got = append(got, string(p)); return nil }, func() { close(caught) })
	}()
	select {
	case <-caught:
	case err := <-errc:
		t.Fatalf("follow %s: %v", stream, err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("follow %s: %v", stream, err)
	}
	return got
}

// A 10 MB entry on a broker with the default 1 MiB message limit (kfake's): written as ordered
// part records under the limit in one transaction, read back whole by a new owner's load (a
// restart), by Follow, and as the tail after a snapshot.
func TestKafkaJournalLargeEntrySplit(t *testing.T) {
	brokers := MustKafka(t, 1)
	const stream = "tenant-bigentry"
	p := HashPartition(stream, 1)
	a := MustKafkaJournal(t, brokers, 1, "a", []int32{p})
	big := bigEntry(10<<20+77, 1)
	want := []string{"one", string(big), "three"}
	for i, pl := range want {
		if err := appendWait(a, stream, uint64(i+1), []byte(pl)); err != nil {
			t.Fatalf("append %d (%d bytes): %v", i+1, len(pl), err)
		}
	}
	// On the broker: seq 2 is 21 parts of at most 512 KiB, in order, with the entry's headers.
	var parts []string
	err := readPartition(context.Background(), brokers, DefaultJournalTopic, p, 0, func(r *kgo.Record) error {
		if r.Attrs.IsControl() || string(r.Key) != stream {
			return nil
		}
		h, err := parseJournalHeaders(r)
		if err != nil {
			return err
		}
		if len(r.Value) > DefaultEntryChunk {
			t.Errorf("record at %d holds %d bytes", r.Offset, len(r.Value))
		}
		if h.seq == 2 {
			parts = append(parts, strconv.Itoa(h.part)+"/"+strconv.Itoa(h.parts))
		} else if h.parts != 0 {
			t.Errorf("entry %d split in %d", h.seq, h.parts)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := (len(big) + DefaultEntryChunk - 1) / DefaultEntryChunk
	if len(parts) != n || parts[0] != "0/"+strconv.Itoa(n) || parts[n-1] != strconv.Itoa(n-1)+"/"+strconv.Itoa(n) {
		t.Fatalf("parts of the big entry: %v, want 0/%d..%d/%d", parts, n, n-1, n)
	}
	_ = a.Close(context.Background())

	b := MustKafkaJournal(t, brokers, 1, "b", []int32{p})
	l := mustLoad(t, b, stream)
	if !slices.Equal(l.payloads, want) || l.res.LastSeq != 3 || l.res.Entries != 3 {
		t.Fatalf("after restart: %d entries (last %d), big entry intact %v", len(l.payloads), l.res.LastSeq,
			len(l.payloads) == 3 && l.payloads[1] == string(big))
	}
	if got := followAll(t, b, stream); !slices.Equal(got, want) {
		t.Fatalf("follow reads %d entries, want the 3 written", len(got))
	}
	// Snapshot after entry 1: the big entry is part of the tail a new owner replays.
	if err := b.SaveSnapshot(stream, 1, []byte("state-1")); err != nil {
		t.Fatal(err)
	}
	c := MustKafkaJournal(t, brokers, 1, "c", []int32{p})
	l = mustLoad(t, c, stream)
	if l.snapSeq != 1 || !slices.Equal(l.payloads, want[1:]) || l.res.LastSeq != 3 {
		t.Fatalf("snapshot %d + tail of %d entries (last %d), want snapshot 1 + 2", l.snapSeq, len(l.payloads), l.res.LastSeq)
	}
	if err := appendWait(c, stream, 4, []byte("four")); err != nil {
		t.Fatal(err)
	}
}

// Parts of an entry in an aborted transaction, and a committed prefix of parts without the last
// (a torn entry), are never applied: a load and a follow see the entries before them, and the
// entry written whole afterwards replaces them.
func TestKafkaJournalPartialEntryNeverApplied(t *testing.T) {
	brokers := MustKafka(t, 1)
	const stream = "tenant-torn"
	p := HashPartition(stream, 1)
	a := MustKafkaJournal(t, brokers, 1, "a", []int32{p})
	if err := appendWait(a, stream, 1, []byte("one")); err != nil {
		t.Fatal(err)
	}
	aborted, torn := bigEntry(3<<20, 2), bigEntry(3<<20, 3)
	epoch := []byte(strconv.FormatUint(a.Epoch(p), 10))
	ctx := context.Background()

	// The owner's producer writes every part of entry 2 but the last, and aborts.
	a.mu.RLock()
	o := a.owners[p]
	a.mu.RUnlock()
	o.sendMu.Lock() // the owner loop stays idle meanwhile
	recs := entryRecords(DefaultJournalTopic, p, stream, 2, epoch, aborted, DefaultEntryChunk)
	if err := o.cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := o.cl.ProduceSync(ctx, recs[:len(recs)-1]...).FirstErr(); err != nil {
		t.Fatalf("produce parts: %v", err)
	}
	if err := o.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
	o.sendMu.Unlock()

	// A plain producer commits a prefix of another entry 2: torn, its last part never comes.
	plain, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	recs = entryRecords(DefaultJournalTopic, p, stream, 2, epoch, torn, DefaultEntryChunk)
	if len(recs) < 3 {
		t.Fatalf("%d parts", len(recs))
	}
	if err := plain.ProduceSync(ctx, recs[:len(recs)-1]...).FirstErr(); err != nil {
		t.Fatalf("produce a torn entry: %v", err)
	}
	_ = a.Close(ctx)

	b := MustKafkaJournal(t, brokers, 1, "b", []int32{p})
	if l := mustLoad(t, b, stream); !slices.Equal(l.payloads, []string{"one"}) || l.res.LastSeq != 1 {
		t.Fatalf("load sees %d entries (last %d), want only entry 1", len(l.payloads), l.res.LastSeq)
	}
	if got := followAll(t, b, stream); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("follow sees %d entries, want only entry 1", len(got))
	}
	// Entry 2 written whole now: the torn prefix before it is dropped, the entry read intact.
	whole := bigEntry(2<<20+5, 4)
	if err := appendWait(b, stream, 2, whole); err != nil {
		t.Fatal(err)
	}
	c := MustKafkaJournal(t, brokers, 1, "c", []int32{p})
	l := mustLoad(t, c, stream)
	if len(l.payloads) != 2 || l.payloads[0] != "one" || !bytes.Equal([]byte(l.payloads[1]), whole) {
		t.Fatalf("after the whole entry 2: %d entries (last %d)", len(l.payloads), l.res.LastSeq)
	}
	if got := followAll(t, c, stream); len(got) != 2 || got[1] != string(whole) {
		t.Fatalf("follow after the whole entry 2: %d entries", len(got))
	}
}

// Parts out of order are an error, not a silent drop; a torn entry is counted.
func TestEntryAssembler(t *testing.T) {
	rec := func(v string) *kgo.Record { return &kgo.Record{Value: []byte(v)} }
	var a entryAssembler
	if _, ok, err := a.add(rec("x0"), journalHeaders{seq: 5, part: 0, parts: 3}); ok || err != nil {
		t.Fatalf("part 0: %v %v", ok, err)
	}
	// Part 0 of another entry: the first is torn, dropped.
	if _, ok, err := a.add(rec("a"), journalHeaders{seq: 5, part: 0, parts: 2}); ok || err != nil || a.torn != 1 {
		t.Fatalf("restart: %v %v torn %d", ok, err, a.torn)
	}
	if got, ok, err := a.add(rec("b"), journalHeaders{seq: 5, part: 1, parts: 2}); !ok || err != nil || string(got) != "ab" {
		t.Fatalf("last part: %q %v %v", got, ok, err)
	}
	if got, ok, err := a.add(rec("w"), journalHeaders{seq: 6}); !ok || err != nil || string(got) != "w" {
		t.Fatalf("whole: %q %v %v", got, ok, err)
	}
	if _, _, err := a.add(rec("c"), journalHeaders{seq: 7, part: 1, parts: 2}); err == nil {
		t.Fatal("a part without part 0: no error")
	}
	a = entryAssembler{}
	_, _, _ = a.add(rec("a"), journalHeaders{seq: 7, part: 0, parts: 3})
	if _, _, err := a.add(rec("c"), journalHeaders{seq: 7, part: 2, parts: 3}); err == nil {
		t.Fatal("a skipped part: no error")
	}
	for _, v := range []string{"", "1", "2/2", "-1/3", "0/1", "a/b"} {
		if _, _, err := parsePart([]byte(v)); err == nil {
			t.Errorf("part header %q accepted", v)
		}
	}
}
