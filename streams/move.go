package streams

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Mover carries out, on one node, the moves the directory records (docs/distributed.md, "Moves
// with state"). Every node runs one; each step is done by the owner of a partition, in that
// owner's transaction, and is retried (by whichever node owns the partition then) until it is
// recorded:
//
//  1. requested (Directory.StartMove): the organization is frozen everywhere (Ownership answers
//     ErrRestoring: 503 with Retry-After: 1) while
//  2. the owner of From stops the organization's actors (StopOrg: every write they accepted is
//     committed or failed; what they are sent after is refused) and writes the ready step in a
//     transaction of From (a fenced owner cannot: the next owner of From does it, and one that
//     acquires From after the request syncs the directory first, so it never serves the
//     organization); then
//  3. the owner of To reads the organization's streams as committed on From (snapshot and
//     tail) and writes them onto To, with the done step, in one transaction of To: the copy and
//     the placement switch commit together or not at all, and only while that node owns To.
//
// Nothing is written to From after the ready step, and nothing to To before the done step, so a
// write is on exactly one partition: refused while frozen, or accepted before the freeze and
// copied. A node that dies at any point leaves the move where its last committed step put it.
type Mover struct {
	Directory  *Directory
	Journal    *KafkaJournal
	Membership *Membership
	// StopOrg stops the organization's actors on this node (drained: each write they accepted
	// durable or failed; what they are sent after, refused).
	StopOrg func(ctx context.Context, org string)
	// Resumed, optional, runs on the owner of To once the move is done: the organization's
	// interrupted work to resume there (Core.Resume for its streams).
	Resumed func(ctx context.Context, org string)
	Node    string
	Logger  *slog.Logger
	// Interval between looks at the moves in progress [100ms]; StepTimeout bounds one step [60s].
	Interval, StepTimeout time.Duration
	// BeforeStep, tests only: runs before a step ("ready" on From's owner after StopOrg, "copy" on
	// To's owner); a step whose BeforeStep returns false is not done (this time).
	BeforeStep func(step string, m Move) bool

	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs the mover until Close.
func (m *Mover) Start() {
	if m.Interval <= 0 {
		m.Interval = 100 * time.Millisecond
	}
	if m.StepTimeout <= 0 {
		m.StepTimeout = 60 * time.Second
	}
	if m.Logger == nil {
		m.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.done = cancel, make(chan struct{})
	go func() {
		defer close(m.done)
		t := time.NewTicker(m.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				m.tick(ctx)
			}
		}
	}()
}

// Close stops the mover (a step in progress is abandoned: it is retried by the next owner).
func (m *Mover) Close() {
	if m.cancel != nil {
		m.cancel()
		<-m.done
	}
}

func (m *Mover) tick(ctx context.Context) {
	for _, mv := range m.Directory.PendingMoves() {
		var (
			p    int32
			step func(context.Context, Move) error
		)
		switch mv.State {
		case MovePending:
			p, step = mv.From, m.ready
		case MoveReady:
			p, step = mv.To, m.copy
		default:
			continue
		}
		if owned, active := m.Membership.State(p); !owned || !active {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, m.StepTimeout)
		err := step(sctx, mv)
		cancel()
		if err != nil && ctx.Err() == nil {
			m.Logger.Warn("move: step failed; trying again", "move", mv.ID, "organization", mv.Organization,
				"from", mv.From, "to", mv.To, "state", mv.State, "err", err)
		}
	}
}

var errStepSkipped = errors.New("step skipped")

// ready is step 2, on the owner of From.
func (m *Mover) ready(ctx context.Context, mv Move) error {
	m.StopOrg(ctx, mv.Organization)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if m.BeforeStep != nil && !m.BeforeStep("ready", mv) {
		return errStepSkipped
	}
	rec, err := m.Directory.stepRecord("move-ready", mv, MoveStep{Node: m.Node, Epoch: m.Journal.Epoch(mv.From), At: time.Now().UTC()})
	if err != nil {
		return err
	}
	if err := m.Journal.CommitRecords(mv.From, []*kgo.Record{rec}); err != nil {
		return err
	}
	m.Logger.Info("move: organization drained on its partition", "move", mv.ID, "organization", mv.Organization, "from", mv.From)
	return m.waitState(ctx, mv, MovePending)
}

// copy is step 3, on the owner of To.
func (m *Mover) copy(ctx context.Context, mv Move) error {
	if m.BeforeStep != nil && !m.BeforeStep("copy", mv) {
		return errStepSkipped
	}
	var copies []StreamCopy
	last := map[string]uint64{}
	for _, stream := range OrgStreams(mv.Organization) {
		cp, err := m.Journal.ReadStream(ctx, mv.From, stream)
		if err != nil {
			return err
		}
		if !cp.Empty() {
			copies = append(copies, cp)
			last[stream] = cp.LastSeq()
		}
	}
	rec, err := m.Directory.stepRecord("move-done", mv, MoveStep{Node: m.Node, Epoch: m.Journal.Epoch(mv.To), At: time.Now().UTC(), Streams: last})
	if err != nil {
		return err
	}
	if err := m.Journal.Import(ctx, mv.To, copies, []*kgo.Record{rec}); err != nil {
		return err
	}
	m.Logger.Info("move: organization copied and switched", "move", mv.ID, "organization", mv.Organization,
		"from", mv.From, "to", mv.To, "streams", len(copies))
	if err := m.waitState(ctx, mv, MoveReady); err != nil {
		return err
	}
	if m.Resumed != nil {
		m.Resumed(ctx, mv.Organization)
	}
	return nil
}

// waitState waits until the directory has applied the step just committed (the move left state
// was).
func (m *Mover) waitState(ctx context.Context, mv Move, was string) error {
	for {
		cur, ok := m.Directory.move(mv.Organization, mv.ID)
		if !ok || cur.State != was {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
