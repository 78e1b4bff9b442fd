package streams

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/supplyplan/supplyplan"
)

// Topics and defaults of the Kafka journal.
const (
	DefaultJournalTopic      = "supplyplan.journal"
	DefaultSnapshotTopic     = "supplyplan.snapshots"
	DefaultJournalPartitions = 64
	DefaultJournalTxnPrefix  = "supplyplan-journal"
	// DefaultOwnersTopic is the compacted one-partition topic of the partitions' owner records
	// (key: the partition number): who owns which partition, at which address.
	DefaultOwnersTopic = "supplyplan.owners"
)

// Errors of the Kafka journal.
var (
	// ErrNotOwner: the stream's partition is not owned by this journal (Acquire it first).
	ErrNotOwner = errors.New("journal partition not owned by this node")
	// ErrFenced: another owner initialised the partition's transactional id after this one (or
	// the producer failed for good in a way a takeover causes); this owner can no longer write (a
	// zombie). It stays fenced until the partition is acquired again.
	ErrFenced = supplyplan.ErrFenced
	// ErrSnapshotCorrupt: a snapshot's chunks do not match its recorded size or state hash.
	ErrSnapshotCorrupt = errors.New("snapshot fails its state hash")
)

// KafkaJournalConfig configures a KafkaJournal. Zero values take the defaults in brackets.
type KafkaJournalConfig struct {
	Brokers []string // bootstrap brokers (required)
	// Topic is the journal topic [DefaultJournalTopic]; SnapshotTopic the compacted snapshot
	// topic [DefaultSnapshotTopic]. Both have Partitions partitions [64]; Open creates them when
	// missing (with ReplicationFactor, -1: the broker default).
	Topic             string
	SnapshotTopic     string
	Partitions        int
	ReplicationFactor int16
	// TxnPrefix names the transactional ids: "<TxnPrefix>-<partition>" ["supplyplan-journal"].
	// Every node of a deployment must use the same prefix: that is what fences a stale owner.
	TxnPrefix string
	// Node identifies this process in the owner records; Addr is the host:port other nodes reach
	// its REST API at, published with its ownership (OwnerTable reads it).
	Node string
	Addr string
	// OwnersTopic is the compacted one-partition topic the owner records are copied to, in the
	// same transaction as the epoch record [DefaultOwnersTopic].
	OwnersTopic string
	// Locate maps a stream to its partition (a Directory's Locate in production). Nil: a fixed
	// hash of the stream, for tests.
	Locate func(stream string) (int32, error)
	// MaxBatch caps the requests of one transaction [4096].
	MaxBatch int
	// QueueLen bounds the requests waiting per partition; Append blocks beyond it [16384].
	QueueLen int
	// EntryChunk is the largest journal record value [DefaultEntryChunk, 512 KiB]: a larger
	// entry is written as ordered part records in one transaction (kafka_entry.go). Keep it
	// under the brokers' message.max.bytes.
	EntryChunk int
	// SnapshotChunk is the largest snapshot chunk record [512 KiB]; keep it under the brokers'
	// message.max.bytes.
	SnapshotChunk int
	// TxnTimeout is the transaction timeout sent to the brokers [30s]; CommitTimeout bounds one
	// commit (produce, flush, end) [30s].
	TxnTimeout    time.Duration
	CommitTimeout time.Duration
	Logger        *slog.Logger
}

// KafkaJournal is the distributed mode's supplyplan.Journal: every stream lives on one partition
// of one journal topic, and the node that owns the partition writes it with a transactional,
// idempotent producer (acks=all) whose transactional id is derived from the partition. Acquiring
// a partition initialises that id, which fences the previous owner: its open transaction is
// aborted and its later writes fail, so nothing a zombie writes is read (readers are
// read_committed). Appends are group-committed: one transaction carries every request queued
// while the previous one committed, and done(nil) runs only after the commit. Snapshots go to a
// compacted topic with the same partitioning, in the owner's transactions too.
type KafkaJournal struct {
	cfg KafkaJournalConfig
	log *slog.Logger

	mu     sync.RWMutex
	owners map[int32]*partOwner
	closed bool

	txns, appends atomic.Int64

	// afterCommit, in tests, runs right after a transaction's commit returned, before its
	// snapshot heads are noted (partOwner.commitMu).
	afterCommit func()
}

// KafkaJournalStats counts committed transactions and the appends they carried.
type KafkaJournalStats struct {
	Transactions int64
	Appends      int64
}

// Stats returns the counts since Open.
func (j *KafkaJournal) Stats() KafkaJournalStats {
	return KafkaJournalStats{Transactions: j.txns.Load(), Appends: j.appends.Load()}
}

// NewKafkaJournal returns an unopened journal.
func NewKafkaJournal(cfg KafkaJournalConfig) *KafkaJournal {
	return &KafkaJournal{cfg: cfg, owners: map[int32]*partOwner{}}
}

// Open checks the configuration and creates the topics when missing. It owns no partition yet.
func (j *KafkaJournal) Open() error {
	c := &j.cfg
	if len(c.Brokers) == 0 {
		return errors.New("kafka journal: no brokers")
	}
	if c.Topic == "" {
		c.Topic = DefaultJournalTopic
	}
	if c.SnapshotTopic == "" {
		c.SnapshotTopic = DefaultSnapshotTopic
	}
	if c.OwnersTopic == "" {
		c.OwnersTopic = DefaultOwnersTopic
	}
	if c.Partitions <= 0 {
		c.Partitions = DefaultJournalPartitions
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.TxnPrefix == "" {
		c.TxnPrefix = DefaultJournalTxnPrefix
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 4096
	}
	if c.QueueLen <= 0 {
		c.QueueLen = 16384
	}
	if c.EntryChunk <= 0 {
		c.EntryChunk = DefaultEntryChunk
	}
	if c.SnapshotChunk <= 0 {
		c.SnapshotChunk = 512 << 10
	}
	if c.TxnTimeout <= 0 {
		c.TxnTimeout = 30 * time.Second
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Locate == nil {
		n := int32(c.Partitions)
		c.Locate = func(stream string) (int32, error) { return HashPartition(stream, n), nil }
	}
	j.log = c.Logger.With("topic", c.Topic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...))
	if err != nil {
		return fmt.Errorf("kafka journal client: %w", err)
	}
	defer cl.Close()
	// The journal is the record of every write: it is never deleted by time or size (a
	// snapshot's offset bounds what a load reads, not what is kept).
	if err := createTopic(ctx, cl, c.Topic, int32(c.Partitions), c.ReplicationFactor,
		map[string]string{"retention.ms": "-1", "retention.bytes": "-1"}); err != nil {
		return err
	}
	if err := createTopic(ctx, cl, c.OwnersTopic, 1, c.ReplicationFactor,
		map[string]string{"cleanup.policy": "compact"}); err != nil {
		return err
	}
	return createTopic(ctx, cl, c.SnapshotTopic, int32(c.Partitions), c.ReplicationFactor,
		map[string]string{"cleanup.policy": "compact"})
}

// createTopic creates topic unless it exists.
func createTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32, rf int16, configs map[string]string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, partitions, rf
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
	}
	return nil
}

// HashPartition is the deterministic partition of key among n: the first four bytes of its
// SHA-256, modulo n. The Directory records it for a new organization.
func HashPartition(key string, n int32) int32 {
	sum := sha256.Sum256([]byte(key))
	v := uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
	return int32(v % uint32(n))
}

// Acquire makes this journal the owner of partition p: it initialises the partition's
// transactional id (fencing any previous owner, whose open transaction the brokers abort), reads
// the snapshot index of the partition and commits the next owner epoch. It returns that epoch,
// which is greater than every earlier owner's. Acquiring an owned partition again re-initialises
// it (after ErrFenced, this is how a node takes a partition back).
func (j *KafkaJournal) Acquire(ctx context.Context, p int32) (uint64, error) {
	if p < 0 || int(p) >= j.cfg.Partitions {
		return 0, fmt.Errorf("acquire partition %d: out of range [0, %d)", p, j.cfg.Partitions)
	}
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return 0, ErrClosed
	}
	old := j.owners[p]
	delete(j.owners, p)
	j.mu.Unlock()
	if old != nil {
		old.close()
	}
	o, err := j.newOwner(ctx, p)
	if err != nil {
		return 0, err
	}
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		o.close()
		return 0, ErrClosed
	}
	j.owners[p] = o
	j.mu.Unlock()
	go o.loop()
	j.log.Info("kafka journal: partition acquired", "partition", p, "epoch", o.epoch)
	return o.epoch, nil
}

// Release gives up partition p: queued requests fail with ErrNotOwner, the producer closes.
func (j *KafkaJournal) Release(p int32) {
	j.mu.Lock()
	o := j.owners[p]
	delete(j.owners, p)
	j.mu.Unlock()
	if o != nil {
		o.close()
	}
}

// Owned lists the partitions this journal owns, ascending.
func (j *KafkaJournal) Owned() []int32 {
	j.mu.RLock()
	defer j.mu.RUnlock()
	out := make([]int32, 0, len(j.owners))
	for p := range j.owners {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Epoch is the owner epoch of partition p held here (0: not owned).
func (j *KafkaJournal) Epoch(p int32) uint64 {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if o := j.owners[p]; o != nil {
		return o.epoch
	}
	return 0
}

// Close releases every partition. It is idempotent.
func (j *KafkaJournal) Close(context.Context) error {
	j.mu.Lock()
	owners := j.owners
	j.owners = map[int32]*partOwner{}
	j.closed = true
	j.mu.Unlock()
	for _, o := range owners {
		o.close()
	}
	return nil
}

func (j *KafkaJournal) owner(stream string) (*partOwner, error) {
	p, err := j.cfg.Locate(stream)
	if err != nil {
		return nil, fmt.Errorf("locate stream %s: %w", stream, err)
	}
	j.mu.RLock()
	o, closed := j.owners[p], j.closed
	j.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if o == nil {
		return nil, fmt.Errorf("stream %s on partition %d: %w", stream, p, ErrNotOwner)
	}
	return o, nil
}

// Append queues payload as entry seq of stream; done(nil) runs once the transaction holding it
// committed.
func (j *KafkaJournal) Append(stream string, seq uint64, payload []byte, done func(error)) {
	o, err := j.owner(stream)
	if err != nil {
		done(err)
		return
	}
	o.send(kreq{kind: reqAppend, stream: stream, seq: seq, payload: payload, done: done})
}

// Barrier calls done after every request queued before it on the stream's partition has
// committed or failed (with the error of the transaction it was in).
func (j *KafkaJournal) Barrier(stream string, done func(error)) {
	o, err := j.owner(stream)
	if err != nil {
		done(err)
		return
	}
	o.send(kreq{kind: reqBarrier, stream: stream, done: done})
}

// SaveSnapshot stores data as the state of stream after entry seq, in the owner's next
// transaction, and waits for the commit.
func (j *KafkaJournal) SaveSnapshot(stream string, seq uint64, data []byte) error {
	o, err := j.owner(stream)
	if err != nil {
		return err
	}
	ch := make(chan error, 1)
	o.send(kreq{kind: reqSnapshot, stream: stream, seq: seq, payload: data, done: func(err error) { ch <- err }})
	return <-ch
}

// Load replays stream: its latest snapshot (hash checked) and every committed entry after it,
// read read_committed from the snapshot's journal offset to the partition's last stable offset.
func (j *KafkaJournal) Load(stream string, onSnapshot func(seq uint64, data []byte) error,
	onEntry func(seq uint64, payload []byte) error) (supplyplan.JournalLoad, error) {
	var res supplyplan.JournalLoad
	o, err := j.owner(stream)
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o.commitMu.RLock() // a commit visible elsewhere has noted its heads (commitMu)
	o.mu.Lock()
	head, fenced := o.heads[stream], o.fenced
	o.mu.Unlock()
	o.commitMu.RUnlock()
	if fenced != nil {
		return res, fenced
	}
	res, lastOff, err := j.replay(ctx, o.p, stream, head, onSnapshot, onEntry)
	if err != nil {
		return res, err
	}
	o.mu.Lock()
	st := o.stream(stream)
	st.broken = false
	st.offs = st.offs[:0]
	if lastOff >= 0 {
		st.offs = append(st.offs, seqOff{seq: res.LastSeq, off: lastOff})
	}
	o.mu.Unlock()
	return res, nil
}

// replay reads stream from partition p: the snapshot head names (nil: none; a head without
// chunks, written by a move, has no snapshot and only says where the tail starts) and every
// committed entry after it. It returns the offset of the last entry read (-1: none).
func (j *KafkaJournal) replay(ctx context.Context, p int32, stream string, head *snapHead,
	onSnapshot func(seq uint64, data []byte) error, onEntry func(seq uint64, payload []byte) error) (supplyplan.JournalLoad, int64, error) {
	var res supplyplan.JournalLoad
	from := int64(0)
	if head != nil && len(head.Chunks) > 0 {
		data, err := j.readSnapshot(ctx, p, head)
		if err != nil {
			return res, -1, fmt.Errorf("load snapshot of %s: %w", stream, err)
		}
		if err := onSnapshot(head.Seq, data); err != nil {
			return res, -1, fmt.Errorf("apply snapshot of %s: %w", stream, err)
		}
	}
	if head != nil {
		res.SnapshotSeq, res.LastSeq, from = head.Seq, head.Seq, head.Offset
	}
	lastOff, lastEpoch := int64(-1), uint64(0)
	var asm entryAssembler
	err := readPartition(ctx, j.cfg.Brokers, j.cfg.Topic, p, from, func(r *kgo.Record) error {
		if r.Attrs.IsControl() || string(r.Key) != stream {
			return nil
		}
		h, err := parseJournalHeaders(r)
		if err != nil {
			return fmt.Errorf("journal record at %d: %w", r.Offset, err)
		}
		if h.epoch < lastEpoch {
			return fmt.Errorf("journal record at %d: owner epoch %d after %d", r.Offset, h.epoch, lastEpoch)
		}
		lastEpoch = h.epoch
		if h.seq <= res.SnapshotSeq {
			return nil
		}
		if h.seq != res.LastSeq+1 {
			return fmt.Errorf("journal record at %d: entry %d of %s after %d", r.Offset, h.seq, stream, res.LastSeq)
		}
		payload, whole, err := asm.add(r, h)
		if err != nil || !whole {
			return err
		}
		if err := onEntry(h.seq, payload); err != nil {
			return err
		}
		res.LastSeq, lastOff = h.seq, r.Offset
		res.Entries++
		return nil
	})
	if err != nil {
		return res, -1, fmt.Errorf("load %s: %w", stream, err)
	}
	if asm.torn > 0 || asm.active {
		j.log.Warn("kafka journal: split entries without their last part skipped", "stream", stream,
			"torn", asm.torn, "incomplete_at_end", asm.active)
	}
	return res, lastOff, nil
}

// snapHead is the head record of a snapshot (key "s/<stream>" in the snapshot topic): where its
// chunks are, which journal offset its tail starts at, the owner epoch that wrote it and the
// SHA-256 of its data.
type snapHead struct {
	Stream string  `json:"stream"`
	Seq    uint64  `json:"seq"`
	Offset int64   `json:"offset"` // journal offset the tail is read from
	Epoch  uint64  `json:"epoch"`
	Size   int     `json:"size"`
	SHA256 string  `json:"sha256"`
	Chunks []int64 `json:"chunks"` // offsets of the chunk records in the snapshot partition
	At     int64   `json:"at"`     // unix ms
}

// ownerRecord is the owner epoch record of a partition (key "epoch" in the snapshot topic).
type ownerRecord struct {
	Partition int32  `json:"partition"`
	Epoch     uint64 `json:"epoch"`
	Node      string `json:"node"`
	Addr      string `json:"addr,omitempty"` // the owner's REST API host:port
	At        int64  `json:"at"`
}

const (
	snapHeadPrefix  = "s/"
	snapChunkPrefix = "c/"
	ownerKey        = "epoch"
)

func chunkKey(stream string, seq uint64, i int) string {
	return snapChunkPrefix + stream + "/" + strconv.FormatUint(seq, 10) + "/" + strconv.Itoa(i)
}

func (j *KafkaJournal) readSnapshot(ctx context.Context, p int32, h *snapHead) ([]byte, error) {
	if len(h.Chunks) == 0 {
		return nil, fmt.Errorf("snapshot at %d has no chunks: %w", h.Seq, ErrSnapshotCorrupt)
	}
	want := make(map[int64]int, len(h.Chunks))
	for i, off := range h.Chunks {
		want[off] = i
	}
	parts := make([][]byte, len(h.Chunks))
	found := 0
	errDone := errors.New("done")
	err := readPartition(ctx, j.cfg.Brokers, j.cfg.SnapshotTopic, p, slices.Min(h.Chunks), func(r *kgo.Record) error {
		i, ok := want[r.Offset]
		if !ok || r.Attrs.IsControl() {
			return nil
		}
		if string(r.Key) != chunkKey(h.Stream, h.Seq, i) {
			return fmt.Errorf("snapshot chunk %d at %d has key %q: %w", i, r.Offset, r.Key, ErrSnapshotCorrupt)
		}
		parts[i] = r.Value
		if found++; found == len(parts) {
			return errDone
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDone) {
		return nil, err
	}
	if found != len(parts) {
		return nil, fmt.Errorf("snapshot at %d: %d of %d chunks found: %w", h.Seq, found, len(parts), ErrSnapshotCorrupt)
	}
	data := make([]byte, 0, h.Size)
	for _, c := range parts {
		data = append(data, c...)
	}
	sum := sha256.Sum256(data)
	if len(data) != h.Size || hex.EncodeToString(sum[:]) != h.SHA256 {
		return nil, fmt.Errorf("snapshot of %s at %d (%d bytes, sha256 %s): %w", h.Stream, h.Seq, len(data),
			hex.EncodeToString(sum[:]), ErrSnapshotCorrupt)
	}
	return data, nil
}

// readPartition calls fn for every record of topic/p from offset from up to the partition's last
// stable offset at the call (read_committed; control records included so that the end is
// recognised). fn's error stops the read and is returned.
func readPartition(ctx context.Context, brokers []string, topic string, p int32, from int64, fn func(*kgo.Record) error) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return fmt.Errorf("read %s/%d: %w", topic, p, err)
	}
	defer cl.Close()
	end, err := stableOffset(ctx, cl, topic, p)
	if err != nil {
		return err
	}
	if end <= from {
		return nil
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %s/%d: %w", topic, p, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return fmt.Errorf("read %s/%d: %w", topic, p, ferr)
		}
		var last int64 = -1
		var cbErr error
		fs.EachRecord(func(r *kgo.Record) {
			if cbErr != nil || r.Offset >= end {
				return
			}
			last = r.Offset
			cbErr = fn(r)
		})
		if cbErr != nil {
			return cbErr
		}
		if last >= end-1 {
			return nil
		}
	}
}

// stableOffset asks the partition leader for the last stable offset (read_committed end),
// retrying retriable errors (a topic just created is not known to every broker at once) for
// up to 10 seconds.
func stableOffset(ctx context.Context, cl *kgo.Client, topic string, p int32) (int64, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		off, err := listStableOffset(ctx, cl, topic, p)
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) {
			return off, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("list offsets of %s/%d: %w", topic, p, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func listStableOffset(ctx context.Context, cl *kgo.Client, topic string, p int32) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("list offsets of %s/%d: %w", topic, p, err)
	}
	for _, t := range resp.Topics {
		for _, part := range t.Partitions {
			if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
				return 0, fmt.Errorf("list offsets of %s/%d: %w", topic, p, err)
			}
			return part.Offset, nil
		}
	}
	return 0, fmt.Errorf("list offsets of %s/%d: no answer", topic, p)
}

type journalHeaders struct {
	seq   uint64
	epoch uint64
	// part and parts: the record is part part (0-based) of parts of a split entry; parts 0: a
	// whole entry (kafka_entry.go).
	part, parts int
}

func parseJournalHeaders(r *kgo.Record) (journalHeaders, error) {
	var h journalHeaders
	var haveSeq, haveEpoch bool
	for _, hd := range r.Headers {
		var err error
		switch hd.Key {
		case "seq":
			h.seq, err = strconv.ParseUint(string(hd.Value), 10, 64)
			haveSeq = true
		case "epoch":
			h.epoch, err = strconv.ParseUint(string(hd.Value), 10, 64)
			haveEpoch = true
		case partHeader:
			h.part, h.parts, err = parsePart(hd.Value)
		case "stream":
			if string(hd.Value) != string(r.Key) {
				err = fmt.Errorf("stream header %q differs from key %q", hd.Value, r.Key)
			}
		}
		if err != nil {
			return h, err
		}
	}
	if !haveSeq || !haveEpoch {
		return h, errors.New("missing seq or epoch header")
	}
	return h, nil
}
