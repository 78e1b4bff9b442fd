package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// PartitionOwner is the newest committed owner record of a journal partition.
type PartitionOwner struct {
	Partition int32
	Epoch     uint64
	Node      string
	Addr      string // the owner's REST API host:port
	At        time.Time
}

// OwnerTable mirrors the owners topic (every Acquire commits a record there in the same
// transaction as the partition's new epoch): which node owns each partition, at which address.
// Every node tails it read_committed, so it answers for partitions owned elsewhere.
type OwnerTable struct {
	log    *slog.Logger
	cl     *kgo.Client
	mu     sync.Mutex
	owners map[int32]PartitionOwner
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// OpenOwnerTable starts tailing topic (DefaultOwnersTopic when empty) from its start. The topic is
// created by KafkaJournal.Open.
func OpenOwnerTable(brokers []string, topic string, log *slog.Logger) (*OwnerTable, error) {
	if topic == "" {
		topic = DefaultOwnersTopic
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("owner table client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &OwnerTable{log: log.With("topic", topic), cl: cl, owners: map[int32]PartitionOwner{}, cancel: cancel, done: make(chan struct{})}
	go t.tail(ctx)
	return t, nil
}

func (t *OwnerTable) tail(ctx context.Context) {
	defer close(t.done)
	for {
		fs := t.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(_ string, _ int32, err error) { t.log.Warn("owner table: read", "err", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if _, err := strconv.Atoi(string(r.Key)); err != nil || r.Value == nil {
				return
			}
			var rec ownerRecord
			if err := json.Unmarshal(r.Value, &rec); err != nil {
				t.log.Error("owner table: undecodable record skipped", "offset", r.Offset, "err", err)
				return
			}
			t.mu.Lock()
			if cur, ok := t.owners[rec.Partition]; !ok || rec.Epoch >= cur.Epoch {
				t.owners[rec.Partition] = PartitionOwner{Partition: rec.Partition, Epoch: rec.Epoch, Node: rec.Node,
					Addr: rec.Addr, At: time.UnixMilli(rec.At)}
			}
			t.mu.Unlock()
		})
	}
}

// Owner returns the newest owner record of partition p, if any.
func (t *OwnerTable) Owner(p int32) (PartitionOwner, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.owners[p]
	return o, ok
}

// Ping reports whether a broker answers (the distributed mode's journal readiness check).
func (t *OwnerTable) Ping(ctx context.Context) error { return t.cl.Ping(ctx) }

// Close stops the reader.
func (t *OwnerTable) Close() {
	t.once.Do(func() {
		t.cancel()
		<-t.done
		t.cl.Close()
	})
}

// Follow replays stream read-only, without owning its partition, and keeps following it: the
// latest snapshot, then every committed entry (read_committed) as it is written, until ctx ends.
// caughtUp is called once, when the entries committed before the call have been replayed. It is
// the platform stream's replica on the nodes that do not own the platform's partition. A gap or
// an epoch going back in the stream stops it with an error.
func (j *KafkaJournal) Follow(ctx context.Context, stream string, onSnapshot func(seq uint64, data []byte) error,
	onEntry func(seq uint64, payload []byte) error, caughtUp func()) error {
	p, err := j.cfg.Locate(stream)
	if err != nil {
		return fmt.Errorf("locate stream %s: %w", stream, err)
	}
	head, err := j.latestHead(ctx, p, stream)
	if err != nil {
		return fmt.Errorf("follow %s: %w", stream, err)
	}
	var last, lastEpoch uint64
	from := int64(0)
	if head != nil && len(head.Chunks) == 0 { // a move's head: no snapshot, the tail starts there
		last, from = head.Seq, head.Offset
	} else if head != nil {
		data, err := j.readSnapshot(ctx, p, head)
		if err != nil {
			return fmt.Errorf("follow %s: %w", stream, err)
		}
		if err := onSnapshot(head.Seq, data); err != nil {
			return fmt.Errorf("follow %s: apply snapshot: %w", stream, err)
		}
		last, from = head.Seq, head.Offset
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(j.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{j.cfg.Topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return fmt.Errorf("follow %s: %w", stream, err)
	}
	defer cl.Close()
	end, err := stableOffset(ctx, cl, j.cfg.Topic, p)
	if err != nil {
		return fmt.Errorf("follow %s: %w", stream, err)
	}
	signalled := false
	signal := func(next int64) {
		if !signalled && next >= end {
			signalled = true
			caughtUp()
		}
	}
	signal(from)
	var asm entryAssembler
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil
		}
		fs.EachError(func(_ string, _ int32, err error) { j.log.Warn("follow: read", "stream", stream, "err", err) })
		var ferr error
		fs.EachRecord(func(r *kgo.Record) {
			if ferr != nil {
				return
			}
			defer signal(r.Offset + 1)
			if r.Attrs.IsControl() || string(r.Key) != stream {
				return
			}
			h, err := parseJournalHeaders(r)
			if err != nil {
				ferr = fmt.Errorf("journal record at %d: %w", r.Offset, err)
				return
			}
			if h.epoch < lastEpoch {
				ferr = fmt.Errorf("journal record at %d: owner epoch %d after %d", r.Offset, h.epoch, lastEpoch)
				return
			}
			lastEpoch = h.epoch
			if h.seq <= last {
				return
			}
			if h.seq != last+1 {
				ferr = fmt.Errorf("journal record at %d: entry %d of %s after %d", r.Offset, h.seq, stream, last)
				return
			}
			payload, whole, err := asm.add(r, h)
			if err != nil {
				ferr = err
				return
			}
			if !whole {
				return
			}
			if err := onEntry(h.seq, payload); err != nil {
				ferr = err
				return
			}
			last = h.seq
		})
		if ferr != nil {
			return fmt.Errorf("follow %s: %w", stream, ferr)
		}
	}
}

// errStopped is what a membership callback sees once the membership is closing.
var errStopped = errors.New("membership stopped")
