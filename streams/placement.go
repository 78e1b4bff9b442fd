package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultDirectoryTopic is the placement directory's compacted topic.
const DefaultDirectoryTopic = "supplyplan.directory"

// DirectoryConfig configures a Directory. Zero values take the defaults in brackets.
type DirectoryConfig struct {
	Brokers []string // bootstrap brokers (required)
	Topic   string   // compacted, one partition [DefaultDirectoryTopic]
	// Partitions is the journal's partition count [64]. It is fixed for the life of a deployment:
	// the directory records partitions, and changing the count does not move anything.
	Partitions        int
	ReplicationFactor int16 // [-1: broker default]
	Node              string
	Logger            *slog.Logger
}

// Placement is where an organization lives.
type Placement struct {
	Organization string    `json:"organization"`
	Partition    int32     `json:"partition"`
	Rule         string    `json:"rule"` // "sha256" for the first placement, "move" after a move
	At           time.Time `json:"at"`
	By           string    `json:"by"`
}

// Move is the audit record of an explicit move of an organization between partitions, with its
// state (docs/distributed.md, "Moves with state"): requested (the organization is frozen), ready
// (its owner on From drained it), done (its state copied to To and the placement switched there).
type Move struct {
	// ID is the key of the move's record ("move/<org>/<nanos>-<node>").
	ID           string    `json:"id,omitempty"`
	Organization string    `json:"organization"`
	From         int32     `json:"from"`
	To           int32     `json:"to"`
	By           string    `json:"by"`
	Reason       string    `json:"reason,omitempty"`
	At           time.Time `json:"at"`
	Node         string    `json:"node,omitempty"`
	// Applied is false when the move named a From that was no longer current when it reached the
	// directory (a concurrent move won, or one was in progress): the record stays as audit, the
	// placement is unchanged.
	Applied bool `json:"applied"`
	// State: MovePending, MoveReady, MoveDone, or MoveRefused (not applied).
	State string `json:"state,omitempty"`
	// Ready is the step of the owner of From (it drained the organization); Done the step of the
	// owner of To (it wrote the organization's state there, and the placement switched).
	Ready *MoveStep `json:"ready,omitempty"`
	Done  *MoveStep `json:"done,omitempty"`
}

// The states of a move.
const (
	MovePending = "pending" // requested: the organization is frozen, its owner on From drains it
	MoveReady   = "ready"   // drained on From: the owner of To copies its state
	MoveDone    = "done"    // copied and switched: served on To
	MoveRefused = "refused" // not applied (stale From, or another move in progress)
)

// MoveStep is a step of a move, written by a partition's owner in its own transaction (a fenced
// owner cannot write it).
type MoveStep struct {
	Node  string    `json:"node"`
	Epoch uint64    `json:"epoch"` // the writer's owner epoch of its partition
	At    time.Time `json:"at"`
	// Streams, on the done step: the streams copied and the last entry of each.
	Streams map[string]uint64 `json:"streams,omitempty"`
}

// directory records: key "org/<org>" is a placement, key "move/<org>/<nanos>-<node>" a move
// (requested), "<move key>/ready" and "<move key>/done" its steps. Every node applies them in the
// topic's order with the same rules (the first placement of an organization wins; a move applies
// only when its From is current and no other move of the organization is in progress; a step
// applies only to the move in progress, in order), so every node converges on the same directory
// whatever the races between them.
type dirRecord struct {
	Kind      string     `json:"kind"` // "place", "move", "move-ready" or "move-done"
	Placement *Placement `json:"placement,omitempty"`
	Move      *Move      `json:"move,omitempty"`
	// A step: the move's ID and organization, and the step.
	MoveID string    `json:"moveId,omitempty"`
	Org    string    `json:"org,omitempty"`
	Step   *MoveStep `json:"step,omitempty"`
}

// Directory is the placement directory: organization → journal partition, stored in a compacted
// Kafka topic and mirrored in memory by a tailing reader. A new organization gets the partition
// HashPartition gives it, recorded on first use; moving it is an explicit, audited Move. The
// journal partition count is fixed; which node owns a partition is not the directory's concern.
type Directory struct {
	cfg DirectoryConfig
	log *slog.Logger
	cl  *kgo.Client // producer and the tailing consumer

	mu      sync.Mutex
	changed *sync.Cond
	places  map[string]Placement
	moves   map[string][]Move
	moving  map[string]int // organization -> index in moves of its move in progress
	applied int64          // next offset to apply
	readErr error

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewDirectory returns an unopened directory.
func NewDirectory(cfg DirectoryConfig) *Directory {
	d := &Directory{cfg: cfg, places: map[string]Placement{}, moves: map[string][]Move{}, moving: map[string]int{}}
	d.changed = sync.NewCond(&d.mu)
	return d
}

// Open creates the topic when missing, reads it to the end and keeps tailing it.
func (d *Directory) Open() error {
	c := &d.cfg
	if len(c.Brokers) == 0 {
		return errors.New("directory: no brokers")
	}
	if c.Topic == "" {
		c.Topic = DefaultDirectoryTopic
	}
	if c.Partitions <= 0 {
		c.Partitions = DefaultJournalPartitions
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	d.log = c.Logger.With("topic", c.Topic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.Topic: {0: kgo.NewOffset().AtStart()}}),
		// The steps of moves are written in the partition owners' transactions: their commit
		// markers take offsets too, and must count as read (waitApplied) though never applied.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return fmt.Errorf("directory client: %w", err)
	}
	if err := createTopic(ctx, cl, c.Topic, 1, c.ReplicationFactor, map[string]string{"cleanup.policy": "compact"}); err != nil {
		cl.Close()
		return err
	}
	end, err := stableOffset(ctx, cl, c.Topic, 0)
	if err != nil {
		cl.Close()
		return err
	}
	d.cl = cl
	tctx, tcancel := context.WithCancel(context.Background())
	d.cancel, d.done = tcancel, make(chan struct{})
	go d.tail(tctx)
	return d.waitApplied(ctx, end)
}

// Close stops the tailing reader. It is idempotent.
func (d *Directory) Close(context.Context) error {
	d.once.Do(func() {
		if d.cancel == nil {
			return
		}
		d.cancel()
		<-d.done
		d.cl.Close()
	})
	return nil
}

func (d *Directory) tail(ctx context.Context) {
	defer close(d.done)
	for {
		fs := d.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			d.mu.Lock()
			d.readErr = errors.New("directory closed")
			d.changed.Broadcast()
			d.mu.Unlock()
			return
		}
		fs.EachError(func(_ string, _ int32, err error) {
			d.log.Warn("directory: read", "err", err)
		})
		d.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				d.apply(r)
			}
			d.applied = r.Offset + 1
		})
		d.changed.Broadcast()
		d.mu.Unlock()
	}
}

// apply folds one record into the directory. d.mu is held.
func (d *Directory) apply(r *kgo.Record) {
	var rec dirRecord
	if err := json.Unmarshal(r.Value, &rec); err != nil {
		d.log.Error("directory: undecodable record skipped", "offset", r.Offset, "err", err)
		return
	}
	switch {
	case rec.Kind == "place" && rec.Placement != nil:
		if _, ok := d.places[rec.Placement.Organization]; !ok {
			d.places[rec.Placement.Organization] = *rec.Placement
		}
	case rec.Kind == "move" && rec.Move != nil:
		m := *rec.Move
		m.ID = string(r.Key)
		cur, ok := d.places[m.Organization]
		_, busy := d.moving[m.Organization]
		m.Applied = ok && cur.Partition == m.From && m.To != m.From && !busy
		m.State, m.Ready, m.Done = MoveRefused, nil, nil
		if m.Applied {
			m.State = MovePending
			d.moving[m.Organization] = len(d.moves[m.Organization])
		}
		d.moves[m.Organization] = append(d.moves[m.Organization], m)
	case (rec.Kind == "move-ready" || rec.Kind == "move-done") && rec.Step != nil:
		i, ok := d.moving[rec.Org]
		if !ok || d.moves[rec.Org][i].ID != rec.MoveID {
			d.log.Warn("directory: step of a move not in progress ignored", "offset", r.Offset, "move", rec.MoveID, "kind", rec.Kind)
			return
		}
		m := &d.moves[rec.Org][i]
		switch {
		case rec.Kind == "move-ready" && m.State == MovePending:
			m.State, m.Ready = MoveReady, rec.Step
		case rec.Kind == "move-done" && m.State == MoveReady:
			m.State, m.Done = MoveDone, rec.Step
			d.places[m.Organization] = Placement{Organization: m.Organization, Partition: m.To, Rule: "move", At: rec.Step.At, By: m.By}
			delete(d.moving, m.Organization)
		}
	}
}

// waitApplied waits until the tailing reader has applied every record before offset end.
func (d *Directory) waitApplied(ctx context.Context, end int64) error {
	stop := context.AfterFunc(ctx, func() {
		d.mu.Lock()
		d.changed.Broadcast()
		d.mu.Unlock()
	})
	defer stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.applied < end {
		if d.readErr != nil {
			return d.readErr
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("directory: wait for offset %d: %w", end, err)
		}
		d.changed.Wait()
	}
	return nil
}

func (d *Directory) write(ctx context.Context, key string, rec dirRecord) error {
	val, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	r := &kgo.Record{Topic: d.cfg.Topic, Partition: 0, Key: []byte(key), Value: val}
	if err := d.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("directory: write %s: %w", key, err)
	}
	return d.waitApplied(ctx, r.Offset+1)
}

// Partition returns the organization's partition, placing a new organization first (recorded:
// whichever node's placement reaches the directory first wins, and every node agrees on it).
func (d *Directory) Partition(ctx context.Context, org string) (int32, error) {
	if org == "" {
		return 0, errors.New("directory: empty organization")
	}
	d.mu.Lock()
	p, ok := d.places[org]
	d.mu.Unlock()
	if ok {
		return p.Partition, nil
	}
	place := &Placement{Organization: org, Partition: HashPartition(org, int32(d.cfg.Partitions)), Rule: "sha256",
		At: time.Now().UTC(), By: d.cfg.Node}
	if err := d.write(ctx, "org/"+org, dirRecord{Kind: "place", Placement: place}); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.places[org].Partition, nil
}

// Lookup returns the organization's placement without placing it.
func (d *Directory) Lookup(org string) (Placement, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.places[org]
	return p, ok
}

// lookupMoving is Lookup, and whether a move of the organization is in progress (it is frozen).
func (d *Directory) lookupMoving(org string) (Placement, bool, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.places[org]
	_, moving := d.moving[org]
	return p, moving, ok
}

// Moving returns the move of the organization in progress, if any: until it is done, the
// organization is frozen (every node answers its requests 503 with Retry-After: 1).
func (d *Directory) Moving(org string) (Move, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i, ok := d.moving[org]
	if !ok {
		return Move{}, false
	}
	return d.moves[org][i], true
}

// PendingMoves lists the moves in progress.
func (d *Directory) PendingMoves() []Move {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Move, 0, len(d.moving))
	for org, i := range d.moving {
		out = append(out, d.moves[org][i])
	}
	return out
}

// Move moves a placed organization, with its state, to partition to: by whom (required) and why
// are recorded. It is StartMove then WaitMove: it returns once the move is done (the
// organization is served on the new partition), or with ctx's error while it goes on (the nodes
// carry it out: see Mover).
func (d *Directory) Move(ctx context.Context, org string, to int32, by, reason string) (Move, error) {
	m, err := d.StartMove(ctx, org, to, by, reason)
	if err != nil {
		return m, err
	}
	return d.WaitMove(ctx, org, m.ID)
}

// StartMove records the request to move a placed organization to partition to: from when the
// record is read, every node answers the organization's requests 503 with Retry-After: 1 (it is
// frozen) while the owner of its partition drains it and the owner of partition to copies its
// state (Mover). It fails when the placement changed concurrently or another move of the
// organization is in progress. The platform's and the global loop catalog's placement keys are
// not organizations and do not move.
func (d *Directory) StartMove(ctx context.Context, org string, to int32, by, reason string) (Move, error) {
	if to < 0 || int(to) >= d.cfg.Partitions {
		return Move{}, fmt.Errorf("directory: move %s: partition %d out of range [0, %d)", org, to, d.cfg.Partitions)
	}
	if by == "" {
		return Move{}, fmt.Errorf("directory: move %s: by is required", org)
	}
	if org == "platform" || org == "supplyplan" {
		return Move{}, fmt.Errorf("directory: move %s: only organizations move", org)
	}
	cur, moving, ok := d.lookupMoving(org)
	switch {
	case !ok:
		return Move{}, fmt.Errorf("directory: move %s: organization not placed", org)
	case cur.Partition == to:
		return Move{}, fmt.Errorf("directory: move %s: already on partition %d", org, to)
	case moving:
		return Move{}, fmt.Errorf("directory: move %s: another move is in progress", org)
	}
	m := Move{Organization: org, From: cur.Partition, To: to, By: by, Reason: reason, At: time.Now().UTC(), Node: d.cfg.Node}
	key := "move/" + org + "/" + strconv.FormatInt(m.At.UnixNano(), 10) + "-" + d.cfg.Node
	if err := d.write(ctx, key, dirRecord{Kind: "move", Move: &m}); err != nil {
		return Move{}, err
	}
	got, ok := d.move(org, key)
	switch {
	case !ok:
		return m, fmt.Errorf("directory: move %s: record not found after writing it", org)
	case !got.Applied:
		return got, fmt.Errorf("directory: move %s: placement changed or another move began concurrently", org)
	}
	return got, nil
}

// WaitMove waits until the move id of org is done (or ctx ends) and returns its record.
func (d *Directory) WaitMove(ctx context.Context, org, id string) (Move, error) {
	stop := context.AfterFunc(ctx, func() {
		d.mu.Lock()
		d.changed.Broadcast()
		d.mu.Unlock()
	})
	defer stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		m, ok := d.moveLocked(org, id)
		switch {
		case !ok:
			return m, fmt.Errorf("directory: move %s of %s not found", id, org)
		case m.State == MoveDone:
			return m, nil
		case m.State == MoveRefused:
			return m, fmt.Errorf("directory: move %s of %s was not applied", id, org)
		case d.readErr != nil:
			return m, d.readErr
		case ctx.Err() != nil:
			return m, fmt.Errorf("directory: move %s of %s still %s: %w", id, org, m.State, ctx.Err())
		}
		d.changed.Wait()
	}
}

func (d *Directory) move(org, id string) (Move, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.moveLocked(org, id)
}

func (d *Directory) moveLocked(org, id string) (Move, bool) {
	ms := d.moves[org]
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].ID == id {
			return ms[i], true
		}
	}
	return Move{}, false
}

// stepRecord is the record of a move's step (kind "move-ready" or "move-done"), written by a
// partition's owner in its transaction (KafkaJournal.CommitRecords, Import).
func (d *Directory) stepRecord(kind string, m Move, step MoveStep) (*kgo.Record, error) {
	val, err := json.Marshal(dirRecord{Kind: kind, MoveID: m.ID, Org: m.Organization, Step: &step})
	if err != nil {
		return nil, err
	}
	suffix := "/ready"
	if kind == "move-done" {
		suffix = "/done"
	}
	return &kgo.Record{Topic: d.cfg.Topic, Partition: 0, Key: []byte(m.ID + suffix), Value: val}, nil
}

// Sync waits until every record committed to the directory before the call is applied here. A
// node syncs before it serves a partition it acquired: it then knows every move in progress.
func (d *Directory) Sync(ctx context.Context) error {
	end, err := stableOffset(ctx, d.cl, d.cfg.Topic, 0)
	if err != nil {
		return err
	}
	return d.waitApplied(ctx, end)
}

// Moves returns the audit trail of the organization's moves, oldest first.
func (d *Directory) Moves(org string) []Move {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.moves[org])
}

// Locate maps a journal stream to its partition: the streams of one owner ("tenant-<org>",
// "loopruns-<org>", "outbound-<org>", "loops-<org>") follow the owner's placement, so that an
// organization's actors run on one node; "outbound-platform" follows "platform" (the platform
// stream's own key) and "loops-supplyplan" (the global loop catalog) is placed under
// "supplyplan". Organization ids ("org_...") never collide with those two.
func (d *Directory) Locate(stream string) (int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return d.Partition(ctx, PlacementKey(stream))
}

// orgStreamPrefixes are the prefixes of the streams that follow their organization.
var orgStreamPrefixes = []string{"tenant-", "loopruns-", "outbound-", "loops-"}

// OrgStreams lists the journal streams placed with an organization: what a move carries.
func OrgStreams(org string) []string {
	out := make([]string, len(orgStreamPrefixes))
	for i, p := range orgStreamPrefixes {
		out[i] = p + org
	}
	return out
}

// PlacementKey is the directory key of a journal stream (see Directory.Locate).
func PlacementKey(stream string) string {
	for _, prefix := range orgStreamPrefixes {
		if org, ok := strings.CutPrefix(stream, prefix); ok && org != "" {
			return org
		}
	}
	return stream
}
