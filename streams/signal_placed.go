package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/backoff"
)

// PlacedSignalsConfig configures PlacedSignals. Zero values take the defaults in brackets.
type PlacedSignalsConfig struct {
	Brokers []string // required
	// Topic is the internal topic of placed signals [DefaultSignalTopic + ".placed"]. It has
	// Partitions partitions, the journal's: partition p holds the signals of the organizations
	// the directory places on p.
	Topic      string
	Partitions int // required: the journal's partitions
	// Group holds the owners' read positions (simple offset commits, no members)
	// [DefaultSignalGroup + "-placed"].
	Group string
	// Locate is the organization's partition (the directory's placement). Required.
	Locate func(ctx context.Context, org string) (int32, error)
	// Known, optional, reports whether the organization exists: the signals of one that does not
	// are rejected (RejectUnknownTenant, dead-lettered by the consumer) instead of placed.
	Known             func(org string) bool
	ReplicationFactor int16 // [-1: the brokers' default]
	// MaxRecord bounds the signals of one record [1000]; a larger call is split.
	MaxRecord int
	// CommitInterval is the least time between two commits of a partition's position [200ms].
	CommitInterval time.Duration
	RetryMin       time.Duration // first delay before a failed sink call is tried again [100ms]
	RetryMax       time.Duration // longest such delay [5s]
	Logger         *slog.Logger
}

// PlacedSignalStats counts what PlacedSignals did since it was opened.
type PlacedSignalStats struct {
	Routed     int64 // signals written to the placed topic
	Applied    int64 // signals the owner's sink applied
	Duplicates int64 // signals the owner's sink had seen before
	Rejected   int64 // signals the owner's sink refused (logged)
	Rerouted   int64 // signals found on a partition their organization has left (moved), routed again
	Commits    int64 // read positions committed
}

// PlacedSignals gives demand signals the nodes' partition ownership (distributed mode,
// docs/distributed.md): the demand-signal consumer (any node, its own group) hands each
// organization's signals to ApplySignals, which writes them to partition p of the placed topic,
// p being the organization's journal partition; the node that owns journal partition p reads
// placed partition p (Run, while it owns p and has restored it) and applies them to its own
// actors. The signal consumer commits its offsets once the placed record is acknowledged, the
// owner commits its read position once the signals are applied: at least once end to end, and
// the demand store's deduplication by signal id makes it count once.
type PlacedSignals struct {
	cfg     PlacedSignalsConfig
	sink    supplyplan.SignalSink
	log     *slog.Logger
	cl      *kgo.Client
	topicID [16]byte

	routed, applied, duplicates, rejected, rerouted, commits atomic.Int64

	mu      sync.Mutex
	running map[int32]chan struct{} // partition -> done of its reader
}

// NewPlacedSignals returns an unopened PlacedSignals whose owners apply signals to sink.
func NewPlacedSignals(cfg PlacedSignalsConfig, sink supplyplan.SignalSink) *PlacedSignals {
	return &PlacedSignals{cfg: cfg, sink: sink, running: map[int32]chan struct{}{}}
}

var _ supplyplan.SignalSink = (*PlacedSignals)(nil)

// Open creates the placed topic (unless it exists) and the producer.
func (s *PlacedSignals) Open() error {
	c := &s.cfg
	if len(c.Brokers) == 0 || c.Partitions <= 0 || c.Locate == nil || s.sink == nil {
		return errors.New("placed signals: brokers, partitions, locate and sink are required")
	}
	if c.Topic == "" {
		c.Topic = DefaultSignalTopic + ".placed"
	}
	if c.Group == "" {
		c.Group = DefaultSignalGroup + "-placed"
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.MaxRecord <= 0 {
		c.MaxRecord = 1000
	}
	if c.CommitInterval <= 0 {
		c.CommitInterval = 200 * time.Millisecond
	}
	if c.RetryMin <= 0 {
		c.RetryMin = 100 * time.Millisecond
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	s.log = c.Logger.With("topic", c.Topic)
	// Idempotent, acks=all (franz-go's defaults); the record's partition is chosen here.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0))
	if err != nil {
		return fmt.Errorf("placed signals client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := createTopic(ctx, cl, c.Topic, int32(c.Partitions), c.ReplicationFactor, nil); err != nil {
		cl.Close()
		return err
	}
	// Offset commits of version 10 name the topic by its id.
	for {
		req := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(c.Topic)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Topics) == 1 {
			if err = kerr.ErrorForCode(resp.Topics[0].ErrorCode); err == nil {
				s.topicID = resp.Topics[0].TopicID
				break
			}
		}
		if ctx.Err() != nil {
			cl.Close()
			return fmt.Errorf("placed signals: metadata of %s: %v", c.Topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.cl = cl
	return nil
}

// Close closes the producer (after every reader stopped: Run returns when its ctx ends).
func (s *PlacedSignals) Close() {
	if s.cl != nil {
		s.cl.Close()
	}
}

// Stats returns the counters.
func (s *PlacedSignals) Stats() PlacedSignalStats {
	return PlacedSignalStats{Routed: s.routed.Load(), Applied: s.applied.Load(), Duplicates: s.duplicates.Load(),
		Rejected: s.rejected.Load(), Rerouted: s.rerouted.Load(), Commits: s.commits.Load()}
}

// placedRecord is a placed record's value: signals of one organization.
type placedRecord struct {
	Org     string                    `json:"org"`
	Signals []supplyplan.DemandSignal `json:"signals"`
}

// ApplySignals (the demand-signal consumer's sink in distributed mode) writes the signals to
// their organization's partition of the placed topic and answers once the brokers acknowledged
// them: each outcome is SignalApplied, meaning handed to the owner (or, for an organization
// Known denies, SignalRejected). What the owner's sink
// rejects (unknown product or location) is logged and counted there, not dead-lettered.
func (s *PlacedSignals) ApplySignals(ctx context.Context, org string, signals []supplyplan.DemandSignal) ([]supplyplan.SignalOutcome, error) {
	out := make([]supplyplan.SignalOutcome, len(signals))
	if s.cfg.Known != nil && !s.cfg.Known(org) {
		for i := range out {
			out[i] = supplyplan.Rejected(supplyplan.RejectUnknownTenant, fmt.Sprintf("no organization %q", org))
		}
		return out, nil
	}
	p, err := s.cfg.Locate(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("place signals of %s: %w", org, err)
	}
	if err := s.route(ctx, p, org, signals); err != nil {
		return nil, err
	}
	for i := range out {
		out[i] = supplyplan.SignalOutcome{Status: supplyplan.SignalApplied}
	}
	return out, nil
}

func (s *PlacedSignals) route(ctx context.Context, p int32, org string, signals []supplyplan.DemandSignal) error {
	var recs []*kgo.Record
	for i := 0; i < len(signals); i += s.cfg.MaxRecord {
		v, err := json.Marshal(placedRecord{Org: org, Signals: signals[i:min(i+s.cfg.MaxRecord, len(signals))]})
		if err != nil {
			return err
		}
		recs = append(recs, &kgo.Record{Topic: s.cfg.Topic, Partition: p, Key: []byte(org), Value: v})
	}
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("write placed signals of %s to %s/%d: %w", org, s.cfg.Topic, p, err)
	}
	s.routed.Add(int64(len(signals)))
	return nil
}

// Run reads placed partition p from its committed position and applies each record's signals
// to the sink, in order, retrying a failed call until it succeeds or ctx ends; it commits the
// position past what is applied. It returns when ctx ends (the partition revoked) and is meant
// to run while this node owns journal partition p and has restored it. A second Run of the same
// partition waits for the first to return.
func (s *PlacedSignals) Run(ctx context.Context, p int32) {
	done := make(chan struct{})
	for {
		s.mu.Lock()
		prev := s.running[p]
		if prev == nil {
			s.running[p] = done
			s.mu.Unlock()
			break
		}
		s.mu.Unlock()
		select {
		case <-prev:
		case <-ctx.Done():
			return
		}
	}
	defer func() {
		s.mu.Lock()
		delete(s.running, p)
		s.mu.Unlock()
		close(done)
	}()
	log := s.log.With("partition", p)
	var start int64
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		var err error
		if start, err = s.committed(ctx, p); err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("placed signals: read position", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
	at := kgo.NewOffset().AtStart()
	if start >= 0 {
		at = kgo.NewOffset().At(start)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.Topic: {p: at}}),
		kgo.FetchMaxWait(250*time.Millisecond))
	if err != nil {
		log.Error("placed signals: reader", "err", err)
		return
	}
	defer cl.Close()
	retry := signalRetry(s.cfg.RetryMin, s.cfg.RetryMax)
	next, committed := start, start
	var lastCommit time.Time
	commit := func(ctx context.Context) {
		if next > committed {
			lastCommit = time.Now() // a failed commit is tried again after the interval
			if err := s.commit(ctx, p, next); err != nil {
				if ctx.Err() == nil {
					log.Warn("placed signals: commit read position", "offset", next, "err", err)
				}
				return
			}
			committed = next
			s.commits.Add(1)
		}
	}
	defer func() { // what is applied when the partition goes: the next owner need not read it again
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		commit(cctx)
		cancel()
	}()
	for {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if next > committed { // applied, not committed: poll only until the commit is due
			pctx, cancel = context.WithTimeout(ctx, max(s.cfg.CommitInterval-time.Since(lastCommit), time.Millisecond))
		}
		fs := cl.PollFetches(pctx)
		polled := pctx.Err() == nil
		cancel()
		if ctx.Err() != nil {
			return
		}
		if polled {
			fs.EachError(func(_ string, _ int32, err error) { log.Warn("placed signals: fetch", "err", err) })
		}
		stop := false
		fs.EachRecord(func(r *kgo.Record) {
			if stop || r.Offset < next {
				return
			}
			var pr placedRecord
			if err := json.Unmarshal(r.Value, &pr); err != nil || pr.Org == "" {
				log.Error("placed signals: undecodable record skipped", "offset", r.Offset, "err", err)
				next = r.Offset + 1
				return
			}
			if err := backoff.Retry(ctx, retry, func(int) error { return s.apply(ctx, p, pr) }); err != nil {
				stop = true // ctx ended: this record is read again by the next owner
				return
			}
			next = r.Offset + 1
		})
		if stop {
			return
		}
		if time.Since(lastCommit) >= s.cfg.CommitInterval {
			commit(ctx)
		}
	}
}

// apply hands one record's signals to the sink. Signals of an organization the directory now
// places on another partition (it moved after they were placed) are routed there.
func (s *PlacedSignals) apply(ctx context.Context, p int32, pr placedRecord) error {
	if q, err := s.cfg.Locate(ctx, pr.Org); err == nil && q != p {
		if err := s.route(ctx, q, pr.Org, pr.Signals); err != nil {
			return err
		}
		s.rerouted.Add(int64(len(pr.Signals)))
		return nil
	}
	out, err := s.sink.ApplySignals(ctx, pr.Org, pr.Signals)
	if err == nil {
		err = checkOutcomes(out, len(pr.Signals))
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("placed signals: apply failed; retrying", "partition", p, "org", pr.Org, "signals", len(pr.Signals), "err", err)
		}
		return err
	}
	for i, o := range out {
		switch o.Status {
		case supplyplan.SignalApplied:
			s.applied.Add(1)
		case supplyplan.SignalDuplicate:
			s.duplicates.Add(1)
		case supplyplan.SignalRejected:
			s.rejected.Add(1)
			s.log.Warn("placed signals: signal rejected", "org", pr.Org, "signal", pr.Signals[i].SignalID, "reason", o.Reason, "error", o.Message)
		}
	}
	return nil
}

// committed is partition p's committed read position, -1 when none.
func (s *PlacedSignals) committed(ctx context.Context, p int32) (int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = s.cfg.Group
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic, t.Partitions = s.cfg.Topic, []int32{p}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return 0, err
	}
	// kfake answers GROUP_ID_NOT_FOUND for a group nothing was committed to yet (Kafka: offset -1).
	noGroup := func(err error) bool { return errors.Is(err, kerr.GroupIDNotFound) }
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if noGroup(err) {
			return -1, nil
		}
		return 0, err
	}
	off := int64(-1)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition != p {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return 0, err
			}
			off = rp.Offset
		}
	}
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			if noGroup(err) {
				return -1, nil
			}
			return 0, err
		}
		for _, rt := range g.Topics {
			for _, rp := range rt.Partitions {
				if rp.Partition == p {
					if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
						return 0, err
					}
					off = rp.Offset
				}
			}
		}
	}
	return off, nil
}

// commit records next as partition p's read position (a simple commit: the group has no
// members).
func (s *PlacedSignals) commit(ctx context.Context, p int32, next int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = s.cfg.Group, -1
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic, t.TopicID = s.cfg.Topic, s.topicID
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = p, next, -1
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return err
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}
