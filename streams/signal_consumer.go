package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/backoff"
	"github.com/supplyplan/supplyplan/internal/telemetry"
)

// DefaultSignalTopic is the topic demand signals are read from unless configured otherwise.
const DefaultSignalTopic = "supplyplan.demand-signals"

// DefaultSignalGroup is the consumer group of the demand-signal consumer unless configured otherwise.
const DefaultSignalGroup = "supplyplan-demand-signals"

// SignalConsumerConfig configures a SignalConsumer. Zero values take the defaults in brackets.
type SignalConsumerConfig struct {
	Brokers  []string // bootstrap brokers, host:port (required)
	Topic    string   // topic of JSON demand signals keyed by organization id [DefaultSignalTopic]
	GroupID  string   // consumer group [DefaultSignalGroup]
	DLQTopic string   // dead-letter topic [Topic + ".dlq"]

	MaxBatch int           // messages per batch of a partition [4000]
	MaxWait  time.Duration // longest a batch waits to fill once it has a message [20ms]
	// MaxInFlight bounds the batches taken from Kafka and not yet durable, across all partitions
	// [16]. When it is reached the consumer stops fetching.
	MaxInFlight int
	// ApplyConcurrency bounds the concurrent sink calls of one batch (one per organization) [8].
	ApplyConcurrency int
	// CommitInterval is the least time between two offset commits [50ms].
	CommitInterval time.Duration
	// RevokeGrace is how long a revoked partition (rebalance or Close) lets a batch already in the
	// sink finish before abandoning it [5s]. Keep it well below RebalanceTimeout.
	RevokeGrace time.Duration

	SessionTimeout    time.Duration // consumer-group session timeout [10s]
	HeartbeatInterval time.Duration // heartbeat period; a rebalance is noticed at the next one [1s]
	RebalanceTimeout  time.Duration // how long the group waits for members to rejoin [30s]
	JoinGroupBackoff  time.Duration // wait after a failed join [1s]

	FetchMaxBytes int           // largest fetch response of a partition [4 MiB]
	FetchMaxWait  time.Duration // how long the broker holds an empty fetch [250ms]
	QueueCapacity int           // unused (was kafka-go's Reader queue; the fetcher reads fetches itself)

	RetryMin time.Duration // first delay before retrying a failed sink call or DLQ write [100ms]
	RetryMax time.Duration // longest such delay [5s]

	Logger *slog.Logger
	// Metrics records per-partition lag, fetched and dead-lettered messages; nil: none.
	Metrics *telemetry.Metrics
}

func (c *SignalConsumerConfig) setDefaults() error {
	if len(c.Brokers) == 0 {
		return errors.New("signal consumer: no brokers")
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Topic == "" {
		c.Topic = DefaultSignalTopic
	}
	if c.GroupID == "" {
		c.GroupID = DefaultSignalGroup
	}
	if c.DLQTopic == "" {
		c.DLQTopic = c.Topic + ".dlq"
	}
	if c.DLQTopic == c.Topic {
		return errors.New("signal consumer: the dead-letter topic is the signal topic")
	}
	def(&c.MaxBatch, 4000)
	def(&c.MaxInFlight, 16)
	def(&c.ApplyConcurrency, 8)
	def(&c.FetchMaxBytes, 4<<20)
	def(&c.QueueCapacity, 1000)
	defD(&c.MaxWait, 20*time.Millisecond)
	defD(&c.CommitInterval, 50*time.Millisecond)
	defD(&c.RevokeGrace, 5*time.Second)
	defD(&c.SessionTimeout, 10*time.Second)
	defD(&c.HeartbeatInterval, time.Second)
	defD(&c.RebalanceTimeout, 30*time.Second)
	defD(&c.JoinGroupBackoff, time.Second)
	defD(&c.FetchMaxWait, 250*time.Millisecond)
	defD(&c.RetryMin, 100*time.Millisecond)
	defD(&c.RetryMax, 5*time.Second)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// SignalConsumer reads demand signals from a Kafka topic as a member of a consumer group and hands
// them to a supplyplan.SignalSink in batches, one call per organization. A partition's offset is
// committed only past messages that are durably applied (or durably dead-lettered), so delivery
// is at least once; the sink's idempotence by signal id makes it count once.
//
// Per assigned partition a fetcher reads and decodes messages into batches and an applier hands
// them to the sink in order. Malformed messages and signals the sink rejects go to the
// dead-letter topic with the reason in headers (see docs/kafka.md). See docs/kafka.md for
// rebalance and shutdown behaviour.
type SignalConsumer struct {
	cfg     SignalConsumerConfig
	sink    supplyplan.SignalSink
	log     *slog.Logger
	stats   signalCounters
	applier *signalApplier
	slots   chan struct{} // one token per batch in flight
	batches sync.Pool

	cg  *kafka.ConsumerGroup
	dlq *kafka.Writer

	ctx     context.Context // cancelled by an abandoning Close
	stop    context.CancelFunc
	aborted atomic.Bool

	mu        sync.Mutex
	opened    bool
	closeOnce sync.Once
	runDone   chan struct{}
	done      chan struct{}
}

// Ping checks that a bootstrap broker accepts a connection and answers a metadata request for the
// signal topic (readiness).
func (c *SignalConsumer) Ping(ctx context.Context) error {
	var errs []error
	for _, b := range c.cfg.Brokers {
		conn, err := (&kafka.Dialer{}).DialContext(ctx, "tcp", b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if dl, ok := ctx.Deadline(); ok {
			_ = conn.SetDeadline(dl)
		}
		_, err = conn.ReadPartitions(c.cfg.Topic)
		conn.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("kafka brokers: %w", errors.Join(errs...))
}

// NewSignalConsumer returns an unopened consumer feeding sink.
func NewSignalConsumer(cfg SignalConsumerConfig, sink supplyplan.SignalSink) *SignalConsumer {
	return &SignalConsumer{cfg: cfg, sink: sink, runDone: make(chan struct{}), done: make(chan struct{})}
}

// Open joins the consumer group and starts consuming in the background. Joining, like every broker
// error after it, is retried; it is logged, not returned.
func (c *SignalConsumer) Open() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.opened {
		return errors.New("signal consumer: already opened")
	}
	if err := c.cfg.setDefaults(); err != nil {
		return err
	}
	if c.sink == nil {
		return errors.New("signal consumer: no sink")
	}
	cfg := c.cfg
	c.log = cfg.Logger.With("topic", cfg.Topic, "group", cfg.GroupID)
	c.applier = &signalApplier{sink: c.sink, concurrency: cfg.ApplyConcurrency,
		retry: signalRetry(cfg.RetryMin, cfg.RetryMax), log: c.log, stats: &c.stats}
	c.slots = make(chan struct{}, cfg.MaxInFlight)
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                cfg.GroupID,
		Brokers:           cfg.Brokers,
		Topics:            []string{cfg.Topic},
		SessionTimeout:    cfg.SessionTimeout,
		HeartbeatInterval: cfg.HeartbeatInterval,
		RebalanceTimeout:  cfg.RebalanceTimeout,
		JoinGroupBackoff:  cfg.JoinGroupBackoff,
		// Partitions added to the topic trigger a rebalance that picks them up.
		WatchPartitionChanges: true,
		StartOffset:           kafka.FirstOffset,
		Logger:                kafkaLogger(c.log, slog.LevelDebug),
		ErrorLogger:           kafkaLogger(c.log, slog.LevelWarn),
	})
	if err != nil {
		return fmt.Errorf("create consumer group: %w", err)
	}
	c.cg = cg
	c.dlq = &kafka.Writer{
		Addr:                   kafka.TCP(cfg.Brokers...),
		Topic:                  cfg.DLQTopic,
		Balancer:               &kafka.Murmur2Balancer{},
		RequiredAcks:           kafka.RequireAll,
		BatchSize:              cfg.MaxBatch,
		BatchTimeout:           2 * time.Millisecond,
		AllowAutoTopicCreation: true,
		Logger:                 kafkaLogger(c.log, slog.LevelDebug),
		ErrorLogger:            kafkaLogger(c.log, slog.LevelWarn),
	}
	c.ctx, c.stop = context.WithCancel(context.Background())
	c.opened = true
	go c.run()
	return nil
}

// Close leaves the group gracefully: fetching stops, batches already in the sink finish (within
// RevokeGrace), applied offsets are committed, then the member leaves. When ctx ends first, the
// rest is abandoned: sink calls and DLQ writes are cancelled and nothing more is committed (the
// uncommitted messages are redelivered to the next owner), and Close returns ctx's error while the
// last goroutines finish in the background. Close is idempotent; a later call waits again.
func (c *SignalConsumer) Close(ctx context.Context) error {
	c.mu.Lock()
	opened := c.opened
	c.mu.Unlock()
	if !opened {
		return nil
	}
	c.closeOnce.Do(func() {
		go func() {
			_ = c.cg.Close() // ends the generation, waits for its goroutines, leaves the group
			c.stop()
			<-c.runDone
			if err := c.dlq.Close(); err != nil {
				c.log.Warn("close dead-letter writer", "err", err)
			}
			close(c.done)
		}()
	})
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		c.aborted.Store(true)
		c.stop()
		return ctx.Err()
	}
}

// Stats returns the consumer's counters.
func (c *SignalConsumer) Stats() SignalStats { return c.stats.snapshot() }

func (c *SignalConsumer) run() {
	defer close(c.runDone)
	for {
		gen, err := c.cg.Next(c.ctx)
		if err != nil {
			if errors.Is(err, kafka.ErrGroupClosed) || c.ctx.Err() != nil {
				return
			}
			c.log.Warn("join consumer group", "err", err)
			continue
		}
		c.stats.generations.Add(1)
		c.startGeneration(gen)
	}
}

// generation is this member's share of one consumer-group generation.
type generation struct {
	c           *SignalConsumer
	gen         *kafka.Generation
	applyCtx    context.Context // sink calls; outlives the generation by RevokeGrace
	cancelApply context.CancelFunc
	workers     sync.WaitGroup
	kick        chan struct{}

	mu        sync.Mutex
	applied   map[int]int64 // partition -> next offset, everything before it durable
	committed map[int]int64
	fenced    bool // a commit was refused for good: the generation is over
}

func (c *SignalConsumer) startGeneration(gen *kafka.Generation) {
	assigned := gen.Assignments[c.cfg.Topic]
	g := &generation{c: c, gen: gen, kick: make(chan struct{}, 1),
		applied: map[int]int64{}, committed: map[int]int64{}}
	g.applyCtx, g.cancelApply = context.WithCancel(c.ctx)
	parts := make([]int, 0, len(assigned))
	for _, a := range assigned {
		parts = append(parts, a.ID)
		g.committed[a.ID] = a.Offset // negative (FirstOffset) when the group has none
	}
	c.log.Info("consumer group generation", "generation", gen.ID, "member", gen.MemberID, "partitions", parts)
	g.workers.Add(len(assigned))
	for _, a := range assigned {
		gen.Start(func(ctx context.Context) {
			defer g.workers.Done()
			g.runPartition(ctx, a)
		})
	}
	gen.Start(g.runCommitter)
}

// runCommitter commits applied offsets, at most once per CommitInterval. When the generation ends
// it gives the partitions' in-flight batches RevokeGrace to finish, then commits one last time.
func (g *generation) runCommitter(ctx context.Context) {
	c := g.c
	for {
		select {
		case <-ctx.Done():
			grace := time.AfterFunc(c.cfg.RevokeGrace, g.cancelApply)
			g.workers.Wait()
			grace.Stop()
			if !c.aborted.Load() {
				g.commit()
			}
			g.cancelApply()
			return
		case <-g.kick:
			if !g.commit() {
				// The coordinator refused the generation: end it (kafka-go ends a generation when
				// one of its functions returns) so the member rejoins and starts over from the
				// committed offsets instead of applying more it cannot commit.
				c.log.Warn("offset commit fenced; ending the generation", "generation", g.gen.ID)
				time.AfterFunc(c.cfg.RevokeGrace, g.cancelApply)
				return
			}
			t := time.NewTimer(c.cfg.CommitInterval)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
	}
}

func (g *generation) markApplied(partition int, next int64) {
	g.mu.Lock()
	if next > g.applied[partition] {
		g.applied[partition] = next
	}
	g.mu.Unlock()
	g.kickCommit()
}

func (g *generation) kickCommit() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// commit commits the applied offsets not committed yet; false once the generation is fenced.
func (g *generation) commit() bool {
	c := g.c
	g.mu.Lock()
	if g.fenced {
		g.mu.Unlock()
		return false
	}
	offsets := map[int]int64{}
	for p, next := range g.applied {
		if next > g.committed[p] {
			offsets[p] = next
		}
	}
	g.mu.Unlock()
	if len(offsets) == 0 {
		return true
	}
	err := g.gen.CommitOffsets(map[string]map[int]int64{c.cfg.Topic: offsets})
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		c.log.Warn("commit offsets", "generation", g.gen.ID, "offsets", offsets, "err", err)
		if errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.UnknownMemberId) ||
			errors.Is(err, kafka.RebalanceInProgress) {
			g.fenced = true // the next generation starts from what was committed before
			return false
		}
		time.AfterFunc(time.Second, g.kickCommit) // a transient error: try again even if idle
		return true
	}
	c.stats.commits.Add(1)
	for p, next := range offsets {
		g.committed[p] = next
	}
	return true
}

// consumerBatch is a run of consecutive messages of one partition.
type consumerBatch struct {
	partition int
	next      int64           // offset after the last message
	msgs      []kafka.Message // every message, kept for dead-lettering
	bad       []deadLetter
	groups    []orgGroup
}

type deadLetter struct {
	msg     int32 // index in msgs
	reason  string
	message string
}

func (c *SignalConsumer) getBatch(partition int) *consumerBatch {
	b, _ := c.batches.Get().(*consumerBatch)
	if b == nil {
		b = &consumerBatch{msgs: make([]kafka.Message, 0, c.cfg.MaxBatch)}
	}
	b.partition = partition
	return b
}

// release returns a batch's in-flight slot and recycles it.
func (c *SignalConsumer) release(b *consumerBatch) {
	c.stats.addBuffered(-int64(len(b.msgs)))
	clear(b.msgs)
	b.msgs, b.bad, b.groups = b.msgs[:0], b.bad[:0], nil
	c.batches.Put(b)
	<-c.slots
}

// runPartition consumes one assigned partition until the generation ends.
func (g *generation) runPartition(genCtx context.Context, a kafka.PartitionAssignment) {
	c := g.c
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	stopOnGen := context.AfterFunc(genCtx, cancel)
	defer stopOnGen()

	r := newPartitionReader(ctx, c.cfg.Brokers, c.cfg.Topic, a.ID, a.Offset, c.cfg.FetchMaxBytes,
		c.cfg.FetchMaxWait, c.log)

	queue := make(chan *consumerBatch, 1)
	applierDone := make(chan struct{})
	go func() {
		defer close(applierDone)
		for b := range queue {
			if ctx.Err() == nil && g.process(b) {
				g.markApplied(b.partition, b.next)
			}
			// A batch left unprocessed (revoked, abandoned) is not committed: the partition's next
			// owner reads it again.
			c.release(b)
		}
	}()
	defer func() {
		_ = r.Close()
		close(queue)
		<-applierDone
	}()

	lag := c.cfg.Metrics.KafkaPartition(c.cfg.Topic, a.ID)
	defer lag.Close()
	p := &partitionFetcher{c: c, r: r, partition: a.ID, dec: newSignalDecoder(), grp: newSignalGrouper(), lag: lag}
	for {
		b, err := p.fetchBatch(ctx)
		if err != nil {
			if ctx.Err() == nil {
				// Ending the function ends the generation; the next one starts over from the
				// committed offsets.
				c.log.Error("fetch from partition", "partition", a.ID, "err", err)
			}
			return
		}
		select {
		case queue <- b:
		case <-ctx.Done():
			c.release(b)
			return
		}
	}
}

// process applies a batch and dead-letters what was refused; true once all of it is durable.
func (g *generation) process(b *consumerBatch) bool {
	c := g.c
	ctx := g.applyCtx
	if err := c.applier.apply(ctx, b.groups); err != nil {
		return false
	}
	for _, grp := range b.groups {
		for k, o := range grp.outcomes {
			if o.Status == supplyplan.SignalRejected {
				b.bad = append(b.bad, deadLetter{msg: grp.refs[k], reason: o.Reason, message: o.Message})
			}
		}
	}
	if len(b.bad) > 0 {
		slices.SortFunc(b.bad, func(x, y deadLetter) int { return int(x.msg - y.msg) }) // source order
		if err := c.deadLetter(ctx, b); err != nil {
			return false
		}
	}
	c.stats.batches.Add(1)
	return true
}

// partitionFetcher reads and decodes one partition's messages into batches.
type partitionFetcher struct {
	c         *SignalConsumer
	r         *partitionReader
	partition int
	dec       *signalDecoder
	grp       *signalGrouper
	lag       *telemetry.PartitionLag // nil without metrics
}

// fetchBatch waits for a message, then for an in-flight slot (this is where a slow sink stops the
// fetching), then takes more messages until MaxBatch, until the partition's end as of the last
// fetch, or until MaxWait has passed.
func (p *partitionFetcher) fetchBatch(ctx context.Context) (*consumerBatch, error) {
	c := p.c
	p.r.refresh()
	m, err := p.r.next(time.Time{})
	if err != nil {
		return nil, err
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	b := c.getBatch(p.partition)
	p.add(b, m)
	if !caughtUp(m) && len(b.msgs) < c.cfg.MaxBatch {
		p.r.refresh() // waiting for the slot may have taken long
		until := time.Now().Add(c.cfg.MaxWait)
		for len(b.msgs) < c.cfg.MaxBatch {
			m, err = p.r.next(until)
			if err != nil {
				if errors.Is(err, errWindowOver) {
					err = nil // the window is over: go with what we have
				}
				break
			}
			p.add(b, m)
			if caughtUp(m) {
				break
			}
		}
	}
	n := int64(len(b.msgs))
	c.stats.fetched.Add(n)
	c.cfg.Metrics.KafkaFetched(int(n))
	c.stats.addBuffered(n)
	b.groups = p.grp.take()
	if err != nil {
		c.release(b)
		return nil, err
	}
	return b, nil
}

// caughtUp reports whether m was the partition's last message when it was fetched.
func caughtUp(m kafka.Message) bool { return m.HighWaterMark > 0 && m.Offset+1 >= m.HighWaterMark }

func (p *partitionFetcher) add(b *consumerBatch, m kafka.Message) {
	c := p.c
	i := int32(len(b.msgs))
	b.msgs = append(b.msgs, m)
	b.next = m.Offset + 1
	if m.HighWaterMark > 0 {
		p.lag.Set(m.HighWaterMark - b.next) // messages behind the partition's end as of this fetch
	}
	if reason, msg := p.dec.decode(m.Key, m.Value, p.grp.slot()); reason != "" {
		c.stats.invalid.Add(1)
		b.bad = append(b.bad, deadLetter{msg: i, reason: reason, message: msg})
		return
	}
	p.grp.keep(i)
}

// Dead-letter headers. The message keeps its original key, value and headers.
const (
	HeaderDLQReason    = "dlq-reason"    // a Reason* or supplyplan.Reject* code
	HeaderDLQError     = "dlq-error"     // human-readable detail
	HeaderDLQTopic     = "dlq-topic"     // where the message was read
	HeaderDLQPartition = "dlq-partition" // decimal
	HeaderDLQOffset    = "dlq-offset"    // decimal
	HeaderDLQGroup     = "dlq-group"     // consumer group that refused it
	HeaderDLQTime      = "dlq-time"      // RFC 3339, when it was dead-lettered
	// HeaderDLQTruncated is set, to the original length, when the value was cut to
	// maxDeadLetterValue bytes.
	HeaderDLQTruncated = "dlq-truncated"
)

// maxDeadLetterValue bounds a dead letter's value, below kafka-go's and Kafka's 1 MiB defaults.
const maxDeadLetterValue = 512 << 10

// deadLetter writes the batch's refused messages to the DLQ topic, retrying until they are all
// acknowledged by every in-sync replica or ctx ends.
func (c *SignalConsumer) deadLetter(ctx context.Context, b *consumerBatch) error {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	out := make([]kafka.Message, 0, len(b.bad))
	for _, d := range b.bad {
		m := b.msgs[d.msg]
		h := make([]kafka.Header, 0, len(m.Headers)+7)
		h = append(h, m.Headers...)
		h = append(h,
			kafka.Header{Key: HeaderDLQReason, Value: []byte(d.reason)},
			kafka.Header{Key: HeaderDLQError, Value: []byte(d.message)},
			kafka.Header{Key: HeaderDLQTopic, Value: []byte(c.cfg.Topic)},
			kafka.Header{Key: HeaderDLQPartition, Value: strconv.AppendInt(nil, int64(m.Partition), 10)},
			kafka.Header{Key: HeaderDLQOffset, Value: strconv.AppendInt(nil, m.Offset, 10)},
			kafka.Header{Key: HeaderDLQGroup, Value: []byte(c.cfg.GroupID)},
			kafka.Header{Key: HeaderDLQTime, Value: []byte(now)},
		)
		value := m.Value
		if len(value) > maxDeadLetterValue { // a larger message could never be written: keep the head
			h = append(h, kafka.Header{Key: HeaderDLQTruncated, Value: strconv.AppendInt(nil, int64(len(value)), 10)})
			value = value[:maxDeadLetterValue]
		}
		out = append(out, kafka.Message{Key: m.Key, Value: value, Headers: h})
	}
	reasons := map[string]int{}
	for _, d := range b.bad {
		reasons[d.reason]++
	}
	return backoff.Retry(ctx, c.applier.retry, func(attempt int) error {
		err := c.dlq.WriteMessages(ctx, out...)
		if err == nil {
			c.stats.deadLettered.Add(int64(len(out)))
			c.cfg.Metrics.KafkaDeadLettered(len(out))
			c.log.Info("dead-lettered demand signals", "partition", b.partition, "count", len(b.bad),
				"reasons", reasons, "dlq", c.cfg.DLQTopic)
			for _, d := range b.bad {
				c.log.Debug("dead-lettered demand signal", "partition", b.partition,
					"offset", b.msgs[d.msg].Offset, "reason", d.reason, "error", d.message)
			}
			return nil
		}
		var werrs kafka.WriteErrors
		if errors.As(err, &werrs) && len(werrs) == len(out) {
			failed := out[:0:0]
			for i, e := range werrs {
				if e != nil {
					failed = append(failed, out[i])
				}
			}
			c.stats.deadLettered.Add(int64(len(out) - len(failed)))
			c.cfg.Metrics.KafkaDeadLettered(len(out) - len(failed))
			out = failed // only these are written again
		}
		if ctx.Err() == nil {
			c.log.Warn("write dead letters; retrying", "topic", c.cfg.DLQTopic, "messages", len(out),
				"attempt", attempt+1, "err", err)
		}
		return err
	})
}

// kafkaLogger adapts kafka-go's printf logging to slog at the given level.
func kafkaLogger(l *slog.Logger, level slog.Level) kafka.Logger {
	return kafka.LoggerFunc(func(format string, args ...any) {
		if l.Enabled(context.Background(), level) {
			l.Log(context.Background(), level, fmt.Sprintf(format, args...), "component", "kafka-go")
		}
	})
}
