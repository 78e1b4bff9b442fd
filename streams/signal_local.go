package streams

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/supplyplan/supplyplan"
)

// ErrStreamClosed is returned by Publish after Close.
var ErrStreamClosed = errors.New("signal stream closed")

// LocalSignalConfig configures a LocalSignalStream. Zero values take the defaults in brackets.
type LocalSignalConfig struct {
	// MaxBatch is how many signals a worker gathers from queued Publish calls into one batch [1000].
	MaxBatch int
	// QueueLen bounds the Publish calls waiting for a worker [1024]; Publish blocks beyond it.
	QueueLen int
	// Workers is how many batches are applied at once [4].
	Workers int
	// ApplyConcurrency bounds the concurrent sink calls of one batch (one per organization) [8].
	ApplyConcurrency int
	Logger           *slog.Logger
}

// LocalSignalStream is the in-process equivalent of the Kafka demand-signal topic, used when no
// brokers are configured: Publish queues signals, workers gather queued calls into batches and
// apply them exactly like the consumer does (grouped by organization, one sink call each, the same
// outcomes). Instead of a dead-letter topic, the caller gets each signal's outcome.
type LocalSignalStream struct {
	cfg     LocalSignalConfig
	sink    supplyplan.SignalSink
	log     *slog.Logger
	stats   signalCounters
	applier *signalApplier
	reqs    chan *publishReq

	ctx   context.Context // cancelled when Close gives up waiting
	abort context.CancelFunc

	mu      sync.RWMutex
	opened  bool
	closed  bool
	quit    chan struct{}
	workers sync.WaitGroup
	done    chan struct{}
}

type publishReq struct {
	ctx      context.Context
	signals  []supplyplan.DemandSignal // the valid ones
	slots    []int32                   // index in outcomes of each of signals
	outcomes []supplyplan.SignalOutcome
	err      error
	done     chan struct{}
}

// NewLocalSignalStream returns an unopened stream feeding sink.
func NewLocalSignalStream(cfg LocalSignalConfig, sink supplyplan.SignalSink) *LocalSignalStream {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 1000
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = 1024
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.ApplyConcurrency <= 0 {
		cfg.ApplyConcurrency = 8
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &LocalSignalStream{cfg: cfg, sink: sink, log: cfg.Logger, reqs: make(chan *publishReq, cfg.QueueLen),
		quit: make(chan struct{}), done: make(chan struct{})}
	s.applier = &signalApplier{sink: sink, concurrency: cfg.ApplyConcurrency, log: s.log, stats: &s.stats}
	return s
}

// Open starts the workers.
func (s *LocalSignalStream) Open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opened {
		return errors.New("signal stream: already opened")
	}
	if s.sink == nil {
		return errors.New("signal stream: no sink")
	}
	s.opened = true
	s.ctx, s.abort = context.WithCancel(context.Background())
	s.workers.Add(s.cfg.Workers)
	for range s.cfg.Workers {
		go s.work()
	}
	go func() { s.workers.Wait(); close(s.done) }()
	return nil
}

// Close stops taking signals, applies what is queued and waits for the workers. When ctx ends
// first, sink calls in progress are cancelled and Close returns ctx's error. It is idempotent.
func (s *LocalSignalStream) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.opened {
		s.mu.Unlock()
		return nil
	}
	if !s.closed {
		s.closed = true
		close(s.quit)
	}
	s.mu.Unlock()
	select {
	case <-s.done:
		s.abort()
		return nil
	case <-ctx.Done():
		s.abort()
		return ctx.Err()
	}
}

// Stats returns the stream's counters.
func (s *LocalSignalStream) Stats() SignalStats { return s.stats.snapshot() }

// Publish validates signals (any organization), applies the valid ones through the sink and returns
// once they are durable, with one outcome per signal: invalid ones are SignalRejected with reason
// supplyplan.RejectInvalidSignal. An error (sink failure, ctx, Close) means the outcome of the
// valid signals is unknown; publishing them again is safe (signal ids are deduplicated).
func (s *LocalSignalStream) Publish(ctx context.Context, signals []supplyplan.DemandSignal) ([]supplyplan.SignalOutcome, error) {
	outcomes := make([]supplyplan.SignalOutcome, len(signals))
	r := &publishReq{ctx: ctx, outcomes: outcomes, done: make(chan struct{})}
	for i := range signals {
		sig := signals[i]
		if err := supplyplan.NormalizeSignal(&sig); err != nil {
			s.stats.invalid.Add(1)
			outcomes[i] = supplyplan.Rejected(supplyplan.RejectInvalidSignal, validationMessage(err))
			continue
		}
		if r.signals == nil {
			r.signals = make([]supplyplan.DemandSignal, 0, len(signals)-i)
			r.slots = make([]int32, 0, len(signals)-i)
		}
		r.signals = append(r.signals, sig)
		r.slots = append(r.slots, int32(i))
	}
	s.stats.fetched.Add(int64(len(signals)))
	if len(r.signals) == 0 {
		return outcomes, nil
	}
	s.mu.RLock()
	closed, opened := s.closed, s.opened
	s.mu.RUnlock()
	if closed || !opened {
		return nil, ErrStreamClosed
	}
	n := int64(len(r.signals))
	select {
	case s.reqs <- r:
		s.stats.addBuffered(n)
	case <-s.quit:
		return nil, ErrStreamClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done:
		select {
		case <-r.done:
		default:
			return nil, ErrStreamClosed
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return outcomes, nil
}

func (s *LocalSignalStream) work() {
	defer s.workers.Done()
	grp := newSignalGrouper()
	var batch []*publishReq
	for {
		var first *publishReq
		select {
		case first = <-s.reqs:
		case <-s.quit:
			for { // apply what was queued before Close
				select {
				case r := <-s.reqs:
					s.serve(grp, []*publishReq{r})
				default:
					return
				}
			}
		}
		batch = append(batch[:0], first)
		n := len(first.signals)
	gather:
		for n < s.cfg.MaxBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
				n += len(r.signals)
			default:
				break gather
			}
		}
		s.serve(grp, batch)
		clear(batch)
	}
}

// serve applies the batch gathered from several Publish calls and answers each of them.
func (s *LocalSignalStream) serve(grp *signalGrouper, batch []*publishReq) {
	type owner struct {
		r    *publishReq
		slot int32
	}
	var owners []owner
	var n int64
	for _, r := range batch {
		n += int64(len(r.signals))
		if err := r.ctx.Err(); err != nil { // the caller is gone; it will publish again
			r.err = err
			continue
		}
		for i, sig := range r.signals {
			grp.add(sig, int32(len(owners)))
			owners = append(owners, owner{r, r.slots[i]})
		}
	}
	if len(owners) > 0 {
		groups := grp.take()
		if err := s.applier.apply(s.ctx, groups); err != nil {
			for _, r := range batch {
				if r.err == nil {
					r.err = err
				}
			}
		}
		for _, g := range groups {
			for k, ref := range g.refs {
				o := owners[ref]
				switch {
				case o.r.err != nil:
				case g.err != nil:
					o.r.err = g.err
				case g.outcomes != nil:
					o.r.outcomes[o.slot] = g.outcomes[k]
				}
			}
		}
		s.stats.batches.Add(1)
	}
	s.stats.addBuffered(-n)
	for _, r := range batch {
		close(r.done)
	}
}
