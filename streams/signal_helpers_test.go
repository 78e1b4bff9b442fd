package streams

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/supplyplan/supplyplan"
)

// MustKafka starts an in-process Kafka-protocol broker (kfake) with the given topics and returns
// its bootstrap addresses.
func MustKafka(tb testing.TB, partitions int, topics ...string) []string {
	tb.Helper()
	return MustKafkaCluster(tb, partitions, topics...).ListenAddrs()
}

// MustKafkaCluster is MustKafka returning the cluster, for tests that intercept requests.
func MustKafkaCluster(tb testing.TB, partitions int, topics ...string) *kfake.Cluster {
	tb.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), topics...),
		kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		tb.Fatalf("start kfake: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

// testLogger logs to stderr when SUPPLYPLAN_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("SUPPLYPLAN_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

var testEpoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) // a Monday

// makeSignals returns n distinct signals spread over orgs organizations, 40 SKUs, 4 locations,
// 3 channels and 10 weeks. Quantities are multiples of 0.5, so sums are exact in any order.
func makeSignals(prefix string, n, orgs int) []supplyplan.DemandSignal {
	out := make([]supplyplan.DemandSignal, n)
	channels := []string{"web", "store", "ALL"}
	for i := range out {
		out[i] = supplyplan.DemandSignal{
			SignalID:       fmt.Sprintf("%s-%08d", prefix, i),
			OrganizationID: fmt.Sprintf("org_%02d", i%orgs),
			SKU:            fmt.Sprintf("SKU-%02d", (i/orgs)%40),
			Location:       fmt.Sprintf("WH-%d", i%4),
			Channel:        channels[i%3],
			Quantity:       float64(1+(i*7919)%40) / 2,
			OccurredAt:     testEpoch.Add(time.Duration(i%70)*24*time.Hour + time.Duration(i%86400)*time.Second),
		}
	}
	return out
}

// MustProduce writes signals to topic, keyed by organization.
func MustProduce(tb testing.TB, brokers []string, topic string, signals []supplyplan.DemandSignal) {
	tb.Helper()
	p := NewSignalProducer(SignalProducerConfig{Brokers: brokers, Topic: topic, BatchSize: 5000})
	if err := p.Open(); err != nil {
		tb.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const chunk = 20000
	for i := 0; i < len(signals); i += chunk {
		if err := p.Publish(ctx, signals[i:min(i+chunk, len(signals))]); err != nil {
			tb.Fatalf("produce: %v", err)
		}
	}
}

type totalKey struct {
	org, sku, loc string
	week          int64
}

// sumSignals is what a correct pipeline must end with: per (org, sku, location, week) totals.
func sumSignals(signals []supplyplan.DemandSignal) map[totalKey]float64 {
	out := map[totalKey]float64{}
	for _, s := range signals {
		out[totalKey{s.OrganizationID, s.SKU, s.Location, supplyplan.WeekStart(s.OccurredAt).Unix()}] += s.Quantity
	}
	return out
}

// memSink is a test SignalSink: "durable" in memory, idempotent by signal id, like the real one.
type memSink struct {
	mu      sync.Mutex
	seen    map[string]struct{}
	totals  map[totalKey]float64
	dups    int
	calls   int
	active  int
	maxAct  int
	wrongOr int // signals handed in under another organization's call

	// Behaviour; change it with set while the sink is in use.
	delay  time.Duration
	reject func(supplyplan.DemandSignal) (reason string, rejected bool)
	// hook runs before applying; it may apply only the first n signals and fail the call.
	hook func(ctx context.Context, org string, signals []supplyplan.DemandSignal) (n int, err error)
}

func newMemSink() *memSink {
	return &memSink{seen: map[string]struct{}{}, totals: map[totalKey]float64{}}
}

func (s *memSink) ApplySignals(ctx context.Context, org string, signals []supplyplan.DemandSignal) ([]supplyplan.SignalOutcome, error) {
	s.mu.Lock()
	s.calls++
	s.active++
	s.maxAct = max(s.maxAct, s.active)
	delay, hook := s.delay, s.hook
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.active--; s.mu.Unlock() }()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	n, failErr := len(signals), error(nil)
	if hook != nil {
		n, failErr = hook(ctx, org, signals)
	}
	out := make([]supplyplan.SignalOutcome, len(signals))
	s.mu.Lock()
	for i, sig := range signals[:n] {
		if sig.OrganizationID != org {
			s.wrongOr++
		}
		if s.reject != nil {
			if reason, bad := s.reject(sig); bad {
				out[i] = supplyplan.Rejected(reason, "rejected by the test sink")
				continue
			}
		}
		if _, ok := s.seen[sig.SignalID]; ok {
			s.dups++
			out[i].Status = supplyplan.SignalDuplicate
			continue
		}
		s.seen[sig.SignalID] = struct{}{}
		s.totals[totalKey{org, sig.SKU, sig.Location, supplyplan.WeekStart(sig.OccurredAt).Unix()}] += sig.Quantity
		out[i].Status = supplyplan.SignalApplied
	}
	s.mu.Unlock()
	if failErr != nil {
		return nil, failErr
	}
	return out, nil
}

// set changes the sink's behaviour while it is in use.
func (s *memSink) set(f func(*memSink)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *memSink) applied() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// checkTotals compares the sink's totals with want, exactly.
func (s *memSink) checkTotals(tb testing.TB, want map[totalKey]float64) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrongOr > 0 {
		tb.Errorf("%d signals were applied under another organization", s.wrongOr)
	}
	if got, want := len(s.totals), len(want); got != want {
		tb.Errorf("got %d (org, sku, location, week) totals, want %d", got, want)
	}
	bad := 0
	for k, w := range want {
		if g := s.totals[k]; g != w {
			if bad++; bad <= 5 {
				tb.Errorf("total %+v: got %v, want %v", k, g, w)
			}
		}
	}
	if bad > 0 {
		tb.Errorf("%d totals differ", bad)
	}
}

// eventually polls cond until it holds or timeout passes; msg describes the state on failure.
func eventually(tb testing.TB, timeout time.Duration, cond func() bool, msg func() string) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v: %s", timeout, msg())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// MustConsumer opens a consumer with test-friendly group timings and closes it at cleanup.
func MustConsumer(tb testing.TB, cfg SignalConsumerConfig, sink supplyplan.SignalSink) *SignalConsumer {
	tb.Helper()
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = 200 * time.Millisecond
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 3 * time.Second
	}
	if cfg.RebalanceTimeout == 0 {
		cfg.RebalanceTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	c := NewSignalConsumer(cfg, sink)
	if err := c.Open(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			tb.Errorf("close consumer: %v", err)
		}
	})
	return c
}
