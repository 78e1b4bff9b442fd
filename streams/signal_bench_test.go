package streams

import (
	"context"
	"fmt"
	"hash/maphash"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/supplyplan/supplyplan"
)

// Benchmarks of the demand-signal path on kfake. Sizes come from the environment so the default
// run stays small:
//
//	SUPPLYPLAN_BENCH_SIGNALS=1000000 go test ./streams -run '^$' -bench 'Signal(Consume|Live)' -benchtime 1x
//
// BenchmarkSignalConsume reports, for one pre-filled topic in the same run, raw kafka-go
// consumption (a kafka.Reader per partition, messages counted and dropped), kafka-go's own
// consumer-group Reader, and the SignalConsumer end to end (fetch, decode, batch per tenant, an
// idempotent in-memory sink, offset commits), with the ratio of the last to the first.

const benchOrgs = 50

func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// countingSink is the cheapest sink that does what a durable one must: deduplicate by signal id
// and add each new signal to its (sku, location, week) total, per organization (like the tenant
// actors, organizations do not share a lock). It closes done once want signals are applied.
//
// SUPPLYPLAN_BENCH_SINK chooses how ids are remembered: "hash" (default) keeps a 64-bit
// fingerprint per id, as a compact in-memory index in front of a durable store would (a
// collision among a million ids has a probability around 3e-8); "strings" keeps every id string
// (exact, and the garbage collector scans them all); "noop" keeps nothing and answers "applied"
// (not a valid sink: it isolates the consumer's own cost).
type countingSink struct {
	mu     sync.RWMutex
	orgs   map[string]*countingOrg
	n      atomic.Int64
	want   int64
	perOrg int
	mode   string
	seed   maphash.Seed
	done   chan struct{}
}

type countingOrg struct {
	mu     sync.Mutex
	ids    map[string]struct{}
	hashes map[uint64]struct{}
	totals map[totalKey]float64
}

// newCountingSink expects want signals over orgs organizations; it sizes its maps for them, like a
// store that already holds the ids (no rehashing while measured).
func newCountingSink(want, orgs int) *countingSink {
	mode := os.Getenv("SUPPLYPLAN_BENCH_SINK")
	if mode == "" {
		mode = "hash"
	}
	return &countingSink{orgs: map[string]*countingOrg{}, want: int64(want), perOrg: want / orgs,
		mode: mode, seed: maphash.MakeSeed(), done: make(chan struct{})}
}

func (s *countingSink) org(id string) *countingOrg {
	s.mu.RLock()
	o := s.orgs[id]
	s.mu.RUnlock()
	if o != nil {
		return o
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if o = s.orgs[id]; o == nil {
		o = &countingOrg{totals: map[totalKey]float64{}}
		if s.mode == "strings" {
			o.ids = make(map[string]struct{}, s.perOrg)
		} else {
			o.hashes = make(map[uint64]struct{}, s.perOrg)
		}
		s.orgs[id] = o
	}
	return o
}

func (s *countingSink) ApplySignals(_ context.Context, org string, signals []supplyplan.DemandSignal) ([]supplyplan.SignalOutcome, error) {
	out := make([]supplyplan.SignalOutcome, len(signals))
	fresh := 0
	if s.mode == "noop" {
		for i := range out {
			out[i].Status = supplyplan.SignalApplied
		}
		fresh = len(signals)
	} else {
		o := s.org(org)
		o.mu.Lock()
		for i := range signals {
			sig := &signals[i]
			var n, m int // one map operation for look-up and insert
			if o.ids != nil {
				n = len(o.ids)
				o.ids[sig.SignalID] = struct{}{}
				m = len(o.ids)
			} else {
				n = len(o.hashes)
				o.hashes[maphash.String(s.seed, sig.SignalID)] = struct{}{}
				m = len(o.hashes)
			}
			if m == n {
				out[i].Status = supplyplan.SignalDuplicate
				continue
			}
			o.totals[totalKey{"", sig.SKU, sig.Location, weekIndex(sig.OccurredAt)}] += sig.Quantity
			out[i].Status = supplyplan.SignalApplied
			fresh++
		}
		o.mu.Unlock()
	}
	if s.n.Add(int64(fresh)) == s.want {
		close(s.done)
	}
	return out, nil
}

// weekIndex numbers ISO weeks (Monday to Sunday, UTC) since the Unix epoch, a Thursday.
func weekIndex(t time.Time) int64 {
	floorDiv := func(a, b int64) int64 {
		if a < 0 {
			return (a - b + 1) / b
		}
		return a / b
	}
	return floorDiv(floorDiv(t.Unix(), 86400)+3, 7) // day 0 is a Thursday: +3 counts from Monday
}

// rawReaderConsume reads the whole topic with one kafka.Reader per partition and no processing.
func rawReaderConsume(tb testing.TB, brokers []string, topic string, partitions, n int) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	var end atomic.Int64
	for p := range partitions {
		wg.Go(func() {
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p, MinBytes: 1,
				MaxBytes: 4 << 20, MaxWait: 250 * time.Millisecond, QueueCapacity: 1000})
			defer r.Close()
			var bytes int
			for {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					return
				}
				bytes += len(m.Value)
				if total.Add(1) == int64(n) {
					end.Store(int64(time.Since(start)))
					cancel()
				}
			}
		})
	}
	wg.Wait()
	if total.Load() < int64(n) {
		tb.Fatalf("raw reader read %d of %d", total.Load(), n)
	}
	return time.Duration(end.Load())
}

// rawGroupConsume reads the whole topic with kafka-go's consumer-group Reader, without commits.
func rawGroupConsume(tb testing.TB, brokers []string, topic, group string, n int) time.Duration {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, GroupID: group, MinBytes: 1,
		MaxBytes: 4 << 20, MaxWait: 250 * time.Millisecond, QueueCapacity: 1000,
		HeartbeatInterval: 200 * time.Millisecond, StartOffset: kafka.FirstOffset})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	bytes := 0
	for i := 0; i < n; i++ {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			tb.Fatalf("group reader read %d of %d: %v", i, n, err)
		}
		bytes += len(m.Value)
	}
	return time.Since(start)
}

// pipelineConsume runs a SignalConsumer over the whole topic until every signal is durable in a
// countingSink; it returns the time and the heap allocations per signal.
func pipelineConsume(tb testing.TB, brokers []string, topic, group string, n int) (time.Duration, float64) {
	sink := newCountingSink(n, benchOrgs)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	c := NewSignalConsumer(benchConsumerConfig(brokers, topic, group), sink)
	if err := c.Open(); err != nil {
		tb.Fatal(err)
	}
	select {
	case <-sink.done:
	case <-time.After(5 * time.Minute):
		tb.Fatalf("pipeline applied %d of %d", sink.n.Load(), n)
	}
	d := time.Since(start)
	runtime.ReadMemStats(&after)
	if err := c.Close(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return d, float64(after.Mallocs-before.Mallocs) / float64(n)
}

// benchConsumerConfig is the default configuration, with SUPPLYPLAN_BENCH_BATCH,
// SUPPLYPLAN_BENCH_INFLIGHT and SUPPLYPLAN_BENCH_APPLY overriding MaxBatch, MaxInFlight and
// ApplyConcurrency.
func benchConsumerConfig(brokers []string, topic, group string) SignalConsumerConfig {
	return SignalConsumerConfig{Brokers: brokers, Topic: topic, GroupID: group,
		MaxBatch:          benchEnv("SUPPLYPLAN_BENCH_BATCH", 0),
		MaxInFlight:       benchEnv("SUPPLYPLAN_BENCH_INFLIGHT", 0),
		ApplyConcurrency:  benchEnv("SUPPLYPLAN_BENCH_APPLY", 0),
		HeartbeatInterval: 200 * time.Millisecond, Logger: testLogger()}
}

// cpuTime returns the CPU time the process has used (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkSignalConsume(b *testing.B) {
	n := benchEnv("SUPPLYPLAN_BENCH_SIGNALS", 200_000)
	partitions := benchEnv("SUPPLYPLAN_BENCH_PARTITIONS", 8)
	const topic = "bench-signals"
	brokers := MustKafka(b, partitions, topic, topic+".dlq")
	MustProduce(b, brokers, topic, makeSignals("bench", n, benchOrgs))
	runtime.GC()
	b.ResetTimer()
	var raw, group, pipe, rawCPU, pipeCPU time.Duration
	var allocs float64
	for i := range b.N {
		// Each round: raw reader, pipeline, group reader, so that a change of load on the
		// machine shows in the per-round log rather than only in the totals.
		var r, g time.Duration
		c0 := cpuTime()
		c1 := c0
		pipelineOnly := os.Getenv("SUPPLYPLAN_BENCH_PIPELINE_ONLY") != "" // set it to profile the pipeline alone
		if !pipelineOnly {
			r = rawReaderConsume(b, brokers, topic, partitions, n)
			c1 = cpuTime()
		}
		runtime.GC()
		c2 := cpuTime()
		d, a := pipelineConsume(b, brokers, topic, fmt.Sprintf("bench-pipe-%d", i), n)
		c3 := cpuTime()
		if !pipelineOnly {
			g = rawGroupConsume(b, brokers, topic, fmt.Sprintf("bench-raw-%d", i), n)
		}
		raw, group, pipe = raw+r, group+g, pipe+d
		rawCPU += c1 - c0
		pipeCPU += c3 - c2
		allocs += a
		b.Logf("round %d: raw reader %.0f/s, pipeline %.0f/s (ratio %.2f), group reader %.0f/s; cpu ns/signal raw %.0f, pipeline %.0f",
			i+1, float64(n)/r.Seconds(), float64(n)/d.Seconds(), r.Seconds()/d.Seconds(), float64(n)/g.Seconds(),
			float64((c1-c0).Nanoseconds())/float64(n), float64((c3-c2).Nanoseconds())/float64(n))
	}
	rate := func(d time.Duration) float64 { return float64(n*b.N) / d.Seconds() }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(rate(raw), "raw-reader-signals/s")
	b.ReportMetric(rate(group), "raw-group-signals/s")
	b.ReportMetric(rate(pipe), "pipeline-signals/s")
	b.ReportMetric(rate(pipe)/rate(raw), "ratio-vs-reader")
	b.ReportMetric(float64(rawCPU)/float64(pipeCPU), "cpu-ratio-vs-reader")
	b.ReportMetric(allocs/float64(b.N), "pipeline-allocs/signal")
	// CPU per signal (the whole process, kfake included): steadier than rates on a shared machine.
	b.ReportMetric(float64(rawCPU.Nanoseconds())/float64(n*b.N), "raw-reader-cpu-ns/signal")
	b.ReportMetric(float64(pipeCPU.Nanoseconds())/float64(n*b.N), "pipeline-cpu-ns/signal")
}

// mustProduceParallel produces signals from workers goroutines, one producer each.
func mustProduceParallel(tb testing.TB, brokers []string, topic string, signals []supplyplan.DemandSignal, workers int) {
	var wg sync.WaitGroup
	per := (len(signals) + workers - 1) / workers
	for w := range workers {
		part := signals[min(w*per, len(signals)):min((w+1)*per, len(signals))]
		wg.Go(func() { MustProduce(tb, brokers, topic, part) })
	}
	wg.Wait()
}

// BenchmarkSignalLive measures produce → durable: the consumer is running on an empty topic, four
// producers write the signals, and the clock runs from the first produce call until the last
// signal is durable in the sink.
func BenchmarkSignalLive(b *testing.B) {
	n := benchEnv("SUPPLYPLAN_BENCH_SIGNALS", 200_000)
	partitions := benchEnv("SUPPLYPLAN_BENCH_PARTITIONS", 8)
	signals := makeSignals("live", n, benchOrgs)
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		topic := fmt.Sprintf("live-%d", i)
		brokers := MustKafka(b, partitions, topic, topic+".dlq")
		sink := newCountingSink(n, benchOrgs)
		c := NewSignalConsumer(benchConsumerConfig(brokers, topic, "live"), sink)
		if err := c.Open(); err != nil {
			b.Fatal(err)
		}
		eventually(b, 30*time.Second, func() bool { return c.Stats().Generations > 0 }, func() string { return "the consumer joined no group" })
		time.Sleep(300 * time.Millisecond) // the partition readers are connected
		start := time.Now()
		mustProduceParallel(b, brokers, topic, signals, 4)
		produced := time.Since(start)
		<-sink.done
		total += time.Since(start)
		b.Logf("round %d: produced %d in %v (%.0f/s), all durable %v after the first produce call",
			i+1, n, produced, float64(n)/produced.Seconds(), time.Since(start))
		if err := c.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "produce-to-durable-signals/s")
}

// BenchmarkSignalBatchPath measures the consumer's own work per signal, without Kafka: decode,
// group by organization, apply to a countingSink.
func BenchmarkSignalBatchPath(b *testing.B) {
	const batch = 1000
	signals := makeSignals("path", 200_000, benchOrgs)
	msgs := make([]kafka.Message, len(signals))
	for i, s := range signals {
		msgs[i] = kafka.Message{Key: []byte(s.OrganizationID), Value: AppendSignalJSON(nil, s), Offset: int64(i)}
	}
	c := &SignalConsumer{cfg: SignalConsumerConfig{MaxBatch: batch}}
	c.slots = make(chan struct{}, 1)
	p := &partitionFetcher{c: c, dec: newSignalDecoder(), grp: newSignalGrouper()}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		sink := newCountingSink(len(signals), benchOrgs)
		a := &signalApplier{sink: sink, concurrency: 8, log: testLogger(), stats: &c.stats}
		for off := 0; off < len(msgs) && i < b.N; off += batch {
			c.slots <- struct{}{}
			bt := c.getBatch(0)
			for _, m := range msgs[off : off+batch] {
				p.add(bt, m)
			}
			bt.groups = p.grp.take()
			if err := a.apply(context.Background(), bt.groups); err != nil {
				b.Fatal(err)
			}
			c.release(bt)
			i += batch
		}
	}
}

func TestWeekIndex(t *testing.T) {
	for _, d := range []time.Time{testEpoch, testEpoch.Add(-time.Second), time.Unix(-1, 0), time.Unix(0, 0),
		time.Date(1969, 12, 29, 0, 0, 0, 0, time.UTC), time.Date(1969, 12, 28, 23, 0, 0, 0, time.UTC), time.Date(2026, 3, 8, 23, 59, 59, 0, time.UTC)} {
		for _, dd := range []time.Duration{0, 24 * time.Hour, 6*24*time.Hour + 23*time.Hour} {
			a, b := d.Add(dd), supplyplan.WeekStart(d.Add(dd))
			if got, want := weekIndex(a), weekIndex(b); got != want || b.Weekday() != time.Monday {
				t.Errorf("%v: week %d, its Monday %v has %d", a, got, b, want)
			}
			if got, want := weekIndex(b)+1, weekIndex(b.AddDate(0, 0, 7)); got != want {
				t.Errorf("%v: next week %d, want %d", b, want, got)
			}
		}
	}
}

// BenchmarkLocalSignalStream publishes batches of 100 signals of one organization each (like
// POST /api/demand/signals) from 4 × GOMAXPROCS goroutines through the in-process stream into a
// countingSink.
func BenchmarkLocalSignalStream(b *testing.B) {
	const per = 100
	signals := makeSignals("localbench", 200_000, benchOrgs)
	slices.SortStableFunc(signals, func(x, y supplyplan.DemandSignal) int {
		return strings.Compare(x.OrganizationID, y.OrganizationID)
	})
	sink := newCountingSink(1<<62, benchOrgs)
	s := NewLocalSignalStream(LocalSignalConfig{}, sink)
	if err := s.Open(); err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(4) // 4 × GOMAXPROCS publishers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1)-1) * per % len(signals)
			if _, err := s.Publish(context.Background(), signals[i:i+per]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "signals/s")
}
