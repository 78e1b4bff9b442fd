package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultMembershipGroup is the consumer group the nodes of a deployment join.
const DefaultMembershipGroup = "supplyplan-nodes"

// MembershipConfig configures a Membership. Zero values take the defaults in brackets.
type MembershipConfig struct {
	Brokers []string // required
	Group   string   // [DefaultMembershipGroup]
	// Journal is the node's journal: assigned partitions are acquired on it, revoked ones released.
	// Its topic is the group's topic.
	Journal *KafkaJournal
	// Directory, optional, is synced before an acquired partition is restored: the node then knows
	// every move begun before it acquired the partition (it serves no organization that is moving).
	Directory *Directory
	// Restore rebuilds what runs for partition p once it is acquired (the organizations placed
	// on it: snapshot + tail). It should return when they are ready or ctx ends (a revocation).
	Restore func(ctx context.Context, p int32) error
	// Resumed, optional, runs once partition p is ACTIVE (the gate open): the work to resume
	// (pending deliveries, interrupted jobs). ctx ends with the ownership.
	Resumed func(ctx context.Context, p int32)
	// Stop stops what runs for partition p (drain pending writes: each is acknowledged or fails)
	// before the partition is released. lost: the partition may already be another node's.
	Stop func(ctx context.Context, p int32, lost bool)
	// SessionTimeout [10s], RebalanceTimeout [30s] and HeartbeatInterval [1s] of the group.
	SessionTimeout, RebalanceTimeout, HeartbeatInterval time.Duration
	// StopTimeout bounds Stop for one revocation [20s].
	StopTimeout time.Duration
	Logger      *slog.Logger
	// Dialer replaces the client's dialer (tests cut a node off with it).
	Dialer func(ctx context.Context, network, host string) (net.Conn, error)
}

// Membership makes this node a member of the nodes' consumer group over the journal topic
// (cooperative-sticky): the group decides which node owns which partition. An assigned partition
// is acquired on the journal (fencing its previous owner) and restored (RESTORING, then ACTIVE);
// a revoked or lost one is stopped and released. Only ownership is consumed: the group never
// fetches the journal (its topic is paused) and commits no offsets.
type Membership struct {
	cfg MembershipConfig
	log *slog.Logger
	cl  *kgo.Client

	mu     sync.Mutex
	parts  map[int32]*memberPart
	closed bool

	pollCancel context.CancelFunc
	pollDone   chan struct{}
}

type memberPart struct {
	p      int32
	epoch  uint64
	active bool // restored
	since  time.Time
	cancel context.CancelFunc
	done   chan struct{}
}

// NewMembership returns an unopened membership.
func NewMembership(cfg MembershipConfig) *Membership {
	return &Membership{cfg: cfg, parts: map[int32]*memberPart{}}
}

// Open joins the group. Partitions arrive asynchronously (State tells).
func (m *Membership) Open() error {
	c := &m.cfg
	if len(c.Brokers) == 0 || c.Journal == nil {
		return errors.New("membership: brokers and journal are required")
	}
	if c.Group == "" {
		c.Group = DefaultMembershipGroup
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.RebalanceTimeout <= 0 {
		c.RebalanceTimeout = 30 * time.Second
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = time.Second
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = 20 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Restore == nil {
		c.Restore = func(context.Context, int32) error { return nil }
	}
	if c.Stop == nil {
		c.Stop = func(context.Context, int32, bool) {}
	}
	topic := c.Journal.cfg.Topic
	m.log = c.Logger.With("group", c.Group, "node", c.Journal.cfg.Node)
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.ConsumerGroup(c.Group), kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(c.SessionTimeout), kgo.RebalanceTimeout(c.RebalanceTimeout),
		kgo.HeartbeatInterval(c.HeartbeatInterval),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, as map[string][]int32) { m.assigned(as[topic]) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, rs map[string][]int32) { m.revoked(rs[topic], false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ls map[string][]int32) { m.revoked(ls[topic], true) }),
	}
	if c.Dialer != nil {
		opts = append(opts, kgo.Dialer(c.Dialer))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("membership client: %w", err)
	}
	// Ownership only: the journal is read by the owners' loads, never through the group.
	cl.PauseFetchTopics(topic)
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.pollCancel, m.pollDone = cancel, make(chan struct{})
	go func() {
		// Polling is what joins the group and keeps the client going; nothing is fetched.
		defer close(m.pollDone)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			fs.EachError(func(t string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					m.log.Warn("membership: poll", "topic", t, "partition", p, "err", err)
				}
			})
		}
	}()
	return nil
}

// assigned acquires and restores each new partition on its own goroutine: the group's callback
// returns at once, so that the heartbeats go on while a large partition restores.
func (m *Membership) assigned(ps []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	for _, p := range ps {
		if m.parts[p] != nil {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		mp := &memberPart{p: p, since: time.Now(), cancel: cancel, done: make(chan struct{})}
		m.parts[p] = mp
		go m.take(ctx, mp)
	}
}

// take acquires p (retrying until it succeeds or the partition is revoked) and restores it.
func (m *Membership) take(ctx context.Context, mp *memberPart) {
	defer close(mp.done)
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		epoch, err := m.cfg.Journal.Acquire(ctx, mp.p)
		if err == nil {
			m.mu.Lock()
			mp.epoch = epoch
			m.mu.Unlock()
			break
		}
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return
		}
		m.log.Warn("membership: acquire failed, trying again", "partition", mp.p, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		var err error
		if m.cfg.Directory != nil {
			err = m.cfg.Directory.Sync(ctx)
		}
		if err == nil {
			err = m.cfg.Restore(ctx, mp.p)
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		m.log.Warn("membership: restore failed, trying again", "partition", mp.p, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
	m.mu.Lock()
	mp.active = true
	took := time.Since(mp.since)
	m.mu.Unlock()
	m.log.Info("membership: partition active", "partition", mp.p, "epoch", mp.epoch, "took", took)
	if m.cfg.Resumed != nil {
		m.cfg.Resumed(ctx, mp.p)
	}
}

// revoked stops and releases the partitions: the gate closes first (State reports them not
// owned), then a restore in progress is cancelled, then Stop drains what runs, then Release
// fails whatever is still queued. The group waits for this before it gives them to another node
// (a revocation); after a loss another node may already own them, and its Acquire fenced this one.
func (m *Membership) revoked(ps []int32, lost bool) {
	var stop []*memberPart
	m.mu.Lock()
	for _, p := range ps {
		if mp := m.parts[p]; mp != nil {
			delete(m.parts, p)
			stop = append(stop, mp)
		}
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, mp := range stop {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mp.cancel()
			<-mp.done
			ctx, cancel := context.WithTimeout(context.Background(), m.cfg.StopTimeout)
			m.cfg.Stop(ctx, mp.p, lost)
			cancel()
			m.cfg.Journal.Release(mp.p)
			m.log.Info("membership: partition released", "partition", mp.p, "epoch", mp.epoch, "lost", lost)
		}()
	}
	wg.Wait()
}

// State reports whether this node owns partition p and whether it has restored it.
func (m *Membership) State(p int32) (owned, active bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.parts[p]
	if mp == nil {
		return false, false
	}
	return true, mp.active
}

// Owned lists the partitions assigned to this node, ascending, and how many are active.
func (m *Membership) Owned() (parts []int32, active int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, mp := range m.parts {
		parts = append(parts, p)
		if mp.active {
			active++
		}
	}
	slices.Sort(parts)
	return parts, active
}

// Close leaves the group: every partition is revoked (stopped and released) first.
func (m *Membership) Close(context.Context) error {
	m.mu.Lock()
	if m.closed || m.cl == nil {
		m.closed = true
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	m.pollCancel()
	<-m.pollDone
	m.cl.Close() // revokes what is owned (OnPartitionsRevoked) and leaves the group
	m.mu.Lock()
	m.closed = true
	rest := make([]int32, 0, len(m.parts))
	for p := range m.parts {
		rest = append(rest, p)
	}
	m.mu.Unlock()
	m.revoked(rest, false)
	return nil
}
