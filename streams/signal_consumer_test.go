package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/supplyplan/supplyplan"
)

// TestSignalConsumerCrashRedelivery kills a consumer in the middle of a sink call (abandoning its
// in-flight batches and uncommitted offsets) and checks that a new member of the group finishes
// the topic with exact totals: redelivered signals are not counted twice.
func TestSignalConsumerCrashRedelivery(t *testing.T) {
	const topic, n = "signals-crash", 100_000
	brokers := MustKafka(t, 8, topic, topic+".dlq")
	signals := makeSignals("crash", n, 12)
	MustProduce(t, brokers, topic, signals)

	sink := newMemSink()
	var crashed atomic.Bool
	var victim atomic.Pointer[SignalConsumer]
	sink.hook = func(ctx context.Context, org string, s []supplyplan.DemandSignal) (int, error) {
		if sink.applied() < n/5 || crashed.Swap(true) {
			return len(s), nil
		}
		// Crash: apply half of this call, abandon the consumer without a graceful commit, fail.
		dead, cancel := context.WithCancel(context.Background())
		cancel()
		_ = victim.Load().Close(dead)
		return len(s) / 2, errors.New("crashed")
	}
	cfg := SignalConsumerConfig{Brokers: brokers, Topic: topic, GroupID: "g-crash", MaxBatch: 500}
	a := MustConsumer(t, cfg, sink)
	victim.Store(a)
	eventually(t, 180*time.Second, crashed.Load, func() string {
		return fmt.Sprintf("the first consumer never crashed (applied %d of %d; it crashes after %d)", sink.applied(), n, n/5)
	})
	if err := a.Close(context.Background()); err != nil { // waits for the abandoned goroutines
		t.Fatal(err)
	}
	sink.set(func(s *memSink) { s.hook = nil })
	before := sink.applied()
	if before >= n {
		t.Fatalf("the first consumer applied all %d signals before crashing", before)
	}

	b := MustConsumer(t, cfg, sink)
	eventually(t, 120*time.Second, func() bool { return sink.applied() == n }, func() string { return fmt.Sprintf("applied %d of %d", sink.applied(), n) })
	sink.checkTotals(t, sumSignals(signals))
	st := b.Stats()
	t.Logf("first consumer applied %d; second: %+v; redelivered duplicates %d", before, st, sink.dups)
	if sink.dups == 0 {
		t.Errorf("no signal was redelivered: the crash left nothing uncommitted (test is not testing)")
	}
}

// TestSignalConsumerDeadLetters checks that malformed and rejected messages go to the DLQ with
// their reason and the original bytes, that later good messages of the same partition are
// applied, and that a graceful Close commits everything.
func TestSignalConsumerDeadLetters(t *testing.T) {
	const topic = "signals-dlq"
	brokers := MustKafka(t, 1, topic, topic+".dlq")
	good := makeSignals("good", 300, 3)
	valid := `{"signalId":"x1","organizationId":"org_00","skuId":"S","locationId":"L","quantity":1,"occurredAt":"2026-01-05T00:00:00Z"}`
	bad := []struct {
		key, value, reason string
	}{
		{"org_00", `not json`, ReasonMalformed},
		{"org_00", `{"signalId":"","organizationId":"org_00","skuId":"S","locationId":"L","quantity":1,"occurredAt":"2026-01-05T00:00:00Z"}`, ReasonInvalid},
		{"org_00", `{"signalId":"b2","organizationId":"org_00","skuId":"S","locationId":"L","quantity":"many","occurredAt":"2026-01-05T00:00:00Z"}`, ReasonInvalid},
		{"org_00", `{"signalId":"b3","organizationId":"org_00","skuId":"S","locationId":"L","quantity":1,"occurredAt":"last tuesday"}`, ReasonInvalid},
		{"org_01", valid, ReasonKeyMismatch},
		{"org_00", strings.Replace(valid, `"x1"`, `"b5"`, 1) + "}", ReasonMalformed},
		{"org_unknown", strings.NewReplacer(`"x1"`, `"b6"`, "org_00", "org_unknown").Replace(valid), supplyplan.RejectUnknownTenant},
		{"org_00", strings.NewReplacer(`"x1"`, `"b7"`, `"S"`, `"SKU-GONE"`).Replace(valid), supplyplan.RejectUnknownProduct},
		{"org_00", `{"pad":"` + strings.Repeat("x", maxDeadLetterValue) + `"}`, ReasonInvalid}, // truncated in the DLQ
	}
	p := NewSignalProducer(SignalProducerConfig{Brokers: brokers, Topic: topic})
	if err := p.Open(); err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := context.Background()
	// good, bad, good: the bad ones sit in the middle of the (single) partition.
	if err := p.Publish(ctx, good[:100]); err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		if err := p.Write(ctx, kafka.Message{Key: []byte(b.key), Value: []byte(b.value),
			Headers: []kafka.Header{{Key: "source", Value: []byte("test")}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Publish(ctx, good[100:]); err != nil {
		t.Fatal(err)
	}

	sink := newMemSink()
	sink.reject = func(s supplyplan.DemandSignal) (string, bool) {
		switch {
		case s.OrganizationID == "org_unknown":
			return supplyplan.RejectUnknownTenant, true
		case s.SKU == "SKU-GONE":
			return supplyplan.RejectUnknownProduct, true
		}
		return "", false
	}
	cfg := SignalConsumerConfig{Brokers: brokers, Topic: topic, GroupID: "g-dlq", MaxBatch: 64}
	c := MustConsumer(t, cfg, sink)
	eventually(t, 30*time.Second, func() bool { return sink.applied() == len(good) && c.Stats().DeadLettered == int64(len(bad)) },
		func() string {
			return fmt.Sprintf("applied %d of %d, dead-lettered %d of %d", sink.applied(), len(good), c.Stats().DeadLettered, len(bad))
		})
	sink.checkTotals(t, sumSignals(good))

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic + ".dlq", Partition: 0, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for i, b := range bad {
		m, err := r.ReadMessage(rctx)
		if err != nil {
			t.Fatalf("read DLQ message %d: %v", i, err)
		}
		h := map[string]string{}
		for _, x := range m.Headers {
			h[x.Key] = string(x.Value)
		}
		want := b.value
		if len(want) > maxDeadLetterValue {
			want = want[:maxDeadLetterValue]
			if got := h[HeaderDLQTruncated]; got != strconv.Itoa(len(b.value)) {
				t.Errorf("DLQ %d truncated header %q, want %d", i, got, len(b.value))
			}
		}
		if got := string(m.Value); got != want {
			t.Errorf("DLQ %d value %.80q, want the original %.80q", i, got, want)
		}
		if got, want := string(m.Key), b.key; got != want {
			t.Errorf("DLQ %d key %q, want %q", i, got, want)
		}
		if got, want := h[HeaderDLQReason], b.reason; got != want {
			t.Errorf("DLQ %d (%s) reason %q, want %q (error %q)", i, b.value, got, want, h[HeaderDLQError])
		}
		if h[HeaderDLQError] == "" || h[HeaderDLQTopic] != topic || h[HeaderDLQPartition] != "0" ||
			h[HeaderDLQOffset] == "" || h[HeaderDLQGroup] != "g-dlq" || h[HeaderDLQTime] == "" || h["source"] != "test" {
			t.Errorf("DLQ %d headers %v", i, h)
		}
	}

	// A graceful Close commits everything, the dead-lettered messages included.
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := int64(len(good) + len(bad))
	if got := committedOffset(t, brokers, "g-dlq", topic, 0); got != want {
		t.Errorf("committed offset %d, want %d", got, want)
	}
}

func committedOffset(tb testing.TB, brokers []string, group, topic string, partition int) int64 {
	tb.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	resp, err := cl.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: group,
		Topics: map[string][]int{topic: {partition}}})
	if err != nil {
		tb.Fatalf("offset fetch: %v", err)
	}
	for _, p := range resp.Topics[topic] {
		if p.Partition == partition {
			return p.CommittedOffset
		}
	}
	tb.Fatalf("no committed offset for %s/%d", topic, partition)
	return 0
}

// TestSignalConsumerBackpressure checks that a slow sink stops the fetching: what the consumer has
// taken from Kafka and not yet made durable never exceeds MaxInFlight batches.
func TestSignalConsumerBackpressure(t *testing.T) {
	const topic, n = "signals-slow", 6000
	brokers := MustKafka(t, 4, topic, topic+".dlq")
	signals := makeSignals("slow", n, 8)
	MustProduce(t, brokers, topic, signals)

	sink := newMemSink()
	sink.delay = 10 * time.Millisecond
	cfg := SignalConsumerConfig{Brokers: brokers, Topic: topic, GroupID: "g-slow", MaxBatch: 50,
		MaxInFlight: 3, ApplyConcurrency: 2, QueueCapacity: 20}
	c := MustConsumer(t, cfg, sink)
	bound := int64(cfg.MaxInFlight * cfg.MaxBatch)
	eventually(t, 30*time.Second, func() bool { return sink.applied() >= 1500 }, func() string { return fmt.Sprintf("applied %d", sink.applied()) })
	for range 20 {
		st := c.Stats()
		if inFlight := st.Fetched - st.Applied - st.Duplicates - st.DeadLettered; inFlight > bound {
			t.Fatalf("%d signals fetched and not durable, want at most %d", inFlight, bound)
		}
		time.Sleep(25 * time.Millisecond)
	}
	st := c.Stats()
	if st.Fetched >= n {
		t.Errorf("fetched all %d signals while the sink had applied %d: no backpressure", st.Fetched, sink.applied())
	}
	if st.MaxBuffered > bound {
		t.Errorf("max buffered %d, want at most %d", st.MaxBuffered, bound)
	}
	sink.mu.Lock()
	maxAct := sink.maxAct
	sink.mu.Unlock()
	if limit := cfg.MaxInFlight * cfg.ApplyConcurrency; maxAct > limit {
		t.Errorf("%d concurrent sink calls, want at most %d", maxAct, limit)
	}
	t.Logf("stats while throttled: %+v, concurrent sink calls %d", st, maxAct)
	eventually(t, 60*time.Second, func() bool { return sink.applied() == n }, func() string { return fmt.Sprintf("applied %d of %d", sink.applied(), n) })
	sink.checkTotals(t, sumSignals(signals))
}

// TestSignalConsumerRebalance runs two members of one group; the second joins mid-stream, the
// partitions are split, and every signal is applied exactly once by id.
func TestSignalConsumerRebalance(t *testing.T) {
	const topic, n = "signals-rebalance", 30_000
	brokers := MustKafka(t, 6, topic, topic+".dlq")
	signals := makeSignals("reb", n, 12)
	MustProduce(t, brokers, topic, signals)

	sink := newMemSink()
	sink.delay = time.Millisecond
	cfg := SignalConsumerConfig{Brokers: brokers, Topic: topic, GroupID: "g-reb", MaxBatch: 100, MaxInFlight: 4}
	a := MustConsumer(t, cfg, sink)
	eventually(t, 30*time.Second, func() bool { return sink.applied() >= n/10 }, func() string { return fmt.Sprintf("applied %d", sink.applied()) })
	// Slow enough (about 1,600 signals/s, 17 s for the rest) that the second member joins
	// mid-stream even when a loaded machine makes the rebalance take seconds.
	sink.set(func(s *memSink) { s.delay = 250 * time.Millisecond })
	b := MustConsumer(t, cfg, sink)
	eventually(t, 60*time.Second, func() bool { return b.Stats().Applied > 0 }, func() string { return "the second member applied nothing" })
	sink.set(func(s *memSink) { s.delay = 0 })
	eventually(t, 60*time.Second, func() bool { return sink.applied() == n }, func() string { return fmt.Sprintf("applied %d of %d", sink.applied(), n) })
	sink.checkTotals(t, sumSignals(signals))
	sa, sb := a.Stats(), b.Stats()
	if sa.Generations < 2 {
		t.Errorf("first member saw %d generations, want a rebalance", sa.Generations)
	}
	if got := sa.Applied + sb.Applied; got != n {
		t.Errorf("members applied %d signals in all, want %d", got, n)
	}
	t.Logf("first member %+v\nsecond member %+v\nredelivered duplicates %d", sa, sb, sink.dups)
}

// TestSignalConsumerFencedCommit has the coordinator refuse a commit as from a stale generation:
// the member must end its generation, rejoin, and finish from the last committed offsets, with
// the redelivered signals deduplicated.
func TestSignalConsumerFencedCommit(t *testing.T) {
	const topic, n = "signals-fenced", 20_000
	cluster := MustKafkaCluster(t, 4, topic, topic+".dlq")
	brokers := cluster.ListenAddrs()
	signals := makeSignals("fenced", n, 8)
	MustProduce(t, brokers, topic, signals)

	sink := newMemSink()
	sink.delay = time.Millisecond
	var refused atomic.Int32
	cluster.ControlKey(kmsg.OffsetCommit.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		req := r.(*kmsg.OffsetCommitRequest)
		if sink.applied() < n/4 {
			cluster.KeepControl()
			return nil, nil, false // let it through
		}
		refused.Add(1)
		cluster.DropControl() // refuse once (KeepControl above would keep it otherwise)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.IllegalGeneration.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	cfg := SignalConsumerConfig{Brokers: brokers, Topic: topic, GroupID: "g-fenced", MaxBatch: 200}
	c := MustConsumer(t, cfg, sink)
	eventually(t, 60*time.Second, func() bool { return sink.applied() == n }, func() string { return fmt.Sprintf("applied %d of %d", sink.applied(), n) })
	sink.checkTotals(t, sumSignals(signals))
	st := c.Stats()
	t.Logf("stats %+v, refused commits %d, redelivered duplicates %d", st, refused.Load(), sink.dups)
	if refused.Load() != 1 {
		t.Errorf("%d commits refused, want 1", refused.Load())
	}
	if st.Generations < 2 {
		t.Errorf("%d generations, want the fenced one ended and a new one joined", st.Generations)
	}
}
