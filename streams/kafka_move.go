package streams

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// What a move of an organization between partitions needs from the journal (docs/distributed.md,
// "Moves with state"; Mover drives it): read a stream as committed on a partition this node may
// not own, write records in the transaction of a partition's owner, and write copied streams onto
// a partition in one transaction of its owner.

// StreamEntry is one journal entry of a stream.
type StreamEntry struct {
	Seq     uint64
	Payload []byte
}

// StreamCopy is a stream as a move carries it: its latest snapshot (nil: none) at SnapshotSeq and
// every committed entry after it.
type StreamCopy struct {
	Stream      string
	SnapshotSeq uint64
	Snapshot    []byte
	Entries     []StreamEntry
}

// LastSeq is the newest entry the copy holds (0: an empty stream).
func (c StreamCopy) LastSeq() uint64 {
	if n := len(c.Entries); n > 0 {
		return c.Entries[n-1].Seq
	}
	return c.SnapshotSeq
}

// Empty reports whether the stream has nothing to carry.
func (c StreamCopy) Empty() bool { return c.Snapshot == nil && len(c.Entries) == 0 }

// latestHead reads the newest committed snapshot head of stream on partition p (nil: none).
func (j *KafkaJournal) latestHead(ctx context.Context, p int32, stream string) (*snapHead, error) {
	var head *snapHead
	key := []byte(snapHeadPrefix + stream)
	err := readPartition(ctx, j.cfg.Brokers, j.cfg.SnapshotTopic, p, 0, func(r *kgo.Record) error {
		if r.Attrs.IsControl() || !bytes.Equal(r.Key, key) {
			return nil
		}
		if r.Value == nil {
			head = nil
			return nil
		}
		h := &snapHead{}
		if err := json.Unmarshal(r.Value, h); err != nil {
			return fmt.Errorf("snapshot head at %d: %w", r.Offset, err)
		}
		head = h
		return nil
	})
	return head, err
}

// ReadStream reads stream as committed on partition p (read_committed), whether this node owns p
// or not: its latest snapshot (hash checked) and the entries after it, as Load would replay them.
func (j *KafkaJournal) ReadStream(ctx context.Context, p int32, stream string) (StreamCopy, error) {
	cp := StreamCopy{Stream: stream}
	head, err := j.latestHead(ctx, p, stream)
	if err != nil {
		return cp, fmt.Errorf("read %s on partition %d: %w", stream, p, err)
	}
	_, _, err = j.replay(ctx, p, stream, head, func(seq uint64, data []byte) error {
		cp.SnapshotSeq, cp.Snapshot = seq, slices.Clone(data)
		return nil
	}, func(seq uint64, payload []byte) error {
		cp.Entries = append(cp.Entries, StreamEntry{Seq: seq, Payload: slices.Clone(payload)})
		return nil
	})
	if err != nil {
		return cp, fmt.Errorf("read %s on partition %d: %w", stream, p, err)
	}
	if head != nil && cp.Snapshot == nil {
		cp.SnapshotSeq = head.Seq // a head without snapshot (an earlier move's): the seq it starts at
	}
	return cp, nil
}

// ownerOf returns the owner of partition p here.
func (j *KafkaJournal) ownerOf(p int32) (*partOwner, error) {
	j.mu.RLock()
	o, closed := j.owners[p], j.closed
	j.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if o == nil {
		return nil, fmt.Errorf("partition %d: %w", p, ErrNotOwner)
	}
	return o, nil
}

// CommitRecords produces recs (any topic) in the next transaction of partition p's owner and
// waits for its commit: they are written only while this node owns p (a fenced owner's commit
// fails), after everything queued on p before them.
func (j *KafkaJournal) CommitRecords(p int32, recs []*kgo.Record) error {
	o, err := j.ownerOf(p)
	if err != nil {
		return err
	}
	ch := make(chan error, 1)
	o.send(kreq{kind: reqRecords, records: recs, done: func(err error) { ch <- err }})
	return <-ch
}

// Import writes the copies onto partition p, with recs, in one transaction of p's owner: each
// stream's entries (their seq kept, this owner's epoch), its snapshot, and a snapshot head whose
// tail starts at the journal's end before the transaction (a stream without snapshot gets a head
// without chunks: what an earlier stay of the stream on p left is never replayed). Load then
// replays each stream on p as it was where it came from. The streams must not be written on p
// meanwhile (they are frozen: their organization is moving).
func (j *KafkaJournal) Import(ctx context.Context, p int32, copies []StreamCopy, recs []*kgo.Record) error {
	o, err := j.ownerOf(p)
	if err != nil {
		return err
	}
	tail, err := stableOffset(ctx, o.cl, j.cfg.Topic, p)
	if err != nil {
		return fmt.Errorf("import onto partition %d: %w", p, err)
	}
	var carry []StreamCopy
	for _, cp := range copies {
		if !cp.Empty() {
			carry = append(carry, cp)
		}
	}
	// One request: one transaction.
	ch := make(chan error, 1)
	o.send(kreq{kind: reqImport, copies: carry, records: recs, tail: tail, done: func(err error) { ch <- err }})
	if err := <-ch; err != nil {
		return fmt.Errorf("import onto partition %d: %w", p, err)
	}
	return nil
}
