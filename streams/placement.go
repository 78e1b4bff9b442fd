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

// Move is the audit record of an explicit move of an organization between partitions.
type Move struct {
	Organization string    `json:"organization"`
	From         int32     `json:"from"`
	To           int32     `json:"to"`
	By           string    `json:"by"`
	Reason       string    `json:"reason,omitempty"`
	At           time.Time `json:"at"`
	Node         string    `json:"node,omitempty"`
	// Applied is false when the move named a From that was no longer current when it reached the
	// directory (a concurrent move won): the record stays as audit, the placement is unchanged.
	Applied bool `json:"applied"`
}

// directory records: key "org/<org>" is a placement, key "move/<org>/<nanos>-<node>" a move.
// Every node applies them in the topic's order with the same rule (the first placement of an
// organization wins; a move applies only when its From is current), so every node converges on
// the same directory whatever the races between them.
type dirRecord struct {
	Kind      string     `json:"kind"` // "place" or "move"
	Placement *Placement `json:"placement,omitempty"`
	Move      *Move      `json:"move,omitempty"`
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
	applied int64 // next offset to apply
	readErr error

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewDirectory returns an unopened directory.
func NewDirectory(cfg DirectoryConfig) *Directory {
	d := &Directory{cfg: cfg, places: map[string]Placement{}, moves: map[string][]Move{}}
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
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
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
			d.apply(r)
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
		cur, ok := d.places[m.Organization]
		m.Applied = ok && cur.Partition == m.From
		if m.Applied {
			d.places[m.Organization] = Placement{Organization: m.Organization, Partition: m.To, Rule: "move", At: m.At, By: m.By}
		}
		d.moves[m.Organization] = append(d.moves[m.Organization], m)
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

// Move records the move of a placed organization to partition to, by whom and why; it fails when
// a concurrent move changed the placement first. It moves the placement only: the journal and
// snapshot of the organization are not copied (see docs/distributed.md: a move is made with the
// organization quiesced, and copying its state is the next step).
func (d *Directory) Move(ctx context.Context, org string, to int32, by, reason string) (Move, error) {
	if to < 0 || int(to) >= d.cfg.Partitions {
		return Move{}, fmt.Errorf("directory: move %s: partition %d out of range [0, %d)", org, to, d.cfg.Partitions)
	}
	if by == "" {
		return Move{}, fmt.Errorf("directory: move %s: by is required", org)
	}
	cur, ok := d.Lookup(org)
	if !ok {
		return Move{}, fmt.Errorf("directory: move %s: organization not placed", org)
	}
	m := Move{Organization: org, From: cur.Partition, To: to, By: by, Reason: reason, At: time.Now().UTC(), Node: d.cfg.Node}
	key := "move/" + org + "/" + strconv.FormatInt(m.At.UnixNano(), 10) + "-" + d.cfg.Node
	if err := d.write(ctx, key, dirRecord{Kind: "move", Move: &m}); err != nil {
		return Move{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ms := d.moves[org]
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].At.Equal(m.At) && ms[i].By == by && ms[i].To == to {
			if !ms[i].Applied {
				return ms[i], fmt.Errorf("directory: move %s: placement changed concurrently", org)
			}
			return ms[i], nil
		}
	}
	return m, fmt.Errorf("directory: move %s: record not found after writing it", org)
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

// PlacementKey is the directory key of a journal stream (see Directory.Locate).
func PlacementKey(stream string) string {
	for _, prefix := range []string{"tenant-", "loopruns-", "outbound-", "loops-"} {
		if org, ok := strings.CutPrefix(stream, prefix); ok && org != "" {
			return org
		}
	}
	return stream
}
