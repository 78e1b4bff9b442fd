package streams

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// partOwner writes one owned partition: a transactional producer and the goroutine that
// group-commits the requests queued for the partition.
type partOwner struct {
	j     *KafkaJournal
	p     int32
	epoch uint64
	cl    *kgo.Client
	reqs  chan kreq
	quit  chan struct{}
	done  chan struct{}

	sendMu sync.RWMutex // held for reading while sending, for writing while closing
	closed bool

	// commitMu is held for writing from a transaction's commit until its snapshot heads are noted
	// in heads, and for reading while Load takes a stream's head. A commit is visible to other
	// readers (the directory's consumer) before EndTransaction returns here: a move's copy
	// commits the organization's imported snapshot with the record that routes it to this
	// node, and a request routed here at once spawned the actor, whose Load read the head from
	// before the import (the state of the organization's earlier stay on this partition: every
	// write since was lost; TestMoveCarriesState, about one run in fifteen on a loaded machine).
	commitMu sync.RWMutex
	mu       sync.Mutex
	heads    map[string]*snapHead // latest snapshot head per stream
	streams  map[string]*kstream
	fenced   error // ErrFenced once a newer owner took the partition
}

// kstream is what the owner remembers of a stream: the journal offsets of its entries since its
// last snapshot (to stamp the next snapshot with where its tail starts), and whether an append
// failed (a snapshot then may hold a write the journal does not: refused until the next Load).
type kstream struct {
	offs   []seqOff
	broken bool
}

type seqOff struct {
	seq uint64
	off int64
}

const (
	reqSnapshot reqKind = 100
	reqRecords  reqKind = 101 // extra records in the next transaction (a move's step: kafka_move.go)
	reqImport   reqKind = 102 // a stream copied by a move: entries, snapshot, head at tail
)

// errRetryBatch marks a transaction that failed before its commit and was aborted.
var errRetryBatch = errors.New("transaction aborted before its commit")

type kreq struct {
	kind    reqKind
	stream  string
	seq     uint64
	payload []byte
	done    func(error)
	// reqRecords: records to produce as they are; reqImport: those and the streams a move copies,
	// with the journal offset their heads point the tail at (kafka_move.go).
	records []*kgo.Record
	copies  []StreamCopy
	tail    int64
}

func (o *partOwner) stream(name string) *kstream {
	st := o.streams[name]
	if st == nil {
		st = &kstream{}
		o.streams[name] = st
	}
	return st
}

// newOwner initialises the partition's transactional id, reads the snapshot index and commits
// the next owner epoch.
func (j *KafkaJournal) newOwner(ctx context.Context, p int32) (*partOwner, error) {
	c := j.cfg
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...),
		kgo.TransactionalID(c.TxnPrefix+"-"+strconv.Itoa(int(p))),
		kgo.TransactionTimeout(c.TxnTimeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(c.MaxBatch+1024),
		kgo.ProducerBatchMaxBytes(int32(max(1<<20, c.SnapshotChunk+64<<10, c.EntryChunk+64<<10))))
	if err != nil {
		return nil, fmt.Errorf("journal producer for partition %d: %w", p, err)
	}
	fail := func(err error) (*partOwner, error) {
		cl.Close()
		return nil, fmt.Errorf("acquire partition %d: %w", p, err)
	}
	// InitProducerID: from here on, the previous owner of this transactional id is fenced and its
	// open transaction aborted.
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return fail(err)
	}
	// franz-go v1.22.2 now and then turns the commit of a transaction whose first produce to a
	// topic new to the client succeeded into an abort, and returns nil (docs/distributed.md). A
	// first transaction to both topics, aborted on purpose, takes that path harmlessly.
	if err := cl.BeginTransaction(); err != nil {
		return fail(err)
	}
	warm := cl.ProduceSync(ctx, &kgo.Record{Topic: c.Topic, Partition: p, Value: []byte{}},
		&kgo.Record{Topic: c.SnapshotTopic, Partition: p, Key: []byte("warmup"), Value: []byte{}},
		&kgo.Record{Topic: c.OwnersTopic, Partition: 0, Key: []byte("warmup"), Value: []byte{}})
	_ = cl.AbortBufferedRecords(ctx)
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fail(fmt.Errorf("abort the warm-up transaction: %w", err))
	}
	if err := warm.FirstErr(); err != nil {
		return fail(fmt.Errorf("warm-up produce: %w", err))
	}
	o := &partOwner{j: j, p: p, cl: cl, reqs: make(chan kreq, c.QueueLen), quit: make(chan struct{}),
		done: make(chan struct{}), heads: map[string]*snapHead{}, streams: map[string]*kstream{}}
	var prev uint64
	err = readPartition(ctx, c.Brokers, c.SnapshotTopic, p, 0, func(r *kgo.Record) error {
		if r.Attrs.IsControl() {
			return nil
		}
		key := string(r.Key)
		switch {
		case key == ownerKey:
			var rec ownerRecord
			if err := json.Unmarshal(r.Value, &rec); err != nil {
				return fmt.Errorf("owner record at %d: %w", r.Offset, err)
			}
			if rec.Epoch < prev {
				return fmt.Errorf("owner record at %d: epoch %d after %d", r.Offset, rec.Epoch, prev)
			}
			prev = rec.Epoch
		case len(key) > len(snapHeadPrefix) && key[:len(snapHeadPrefix)] == snapHeadPrefix:
			stream := key[len(snapHeadPrefix):]
			if r.Value == nil {
				delete(o.heads, stream)
				return nil
			}
			h := &snapHead{}
			if err := json.Unmarshal(r.Value, h); err != nil {
				return fmt.Errorf("snapshot head at %d: %w", r.Offset, err)
			}
			if h.Stream != stream {
				return fmt.Errorf("snapshot head at %d is for %q under key %q", r.Offset, h.Stream, key)
			}
			o.heads[stream] = h
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	o.epoch = prev + 1
	rec, _ := json.Marshal(ownerRecord{Partition: p, Epoch: o.epoch, Node: c.Node, Addr: c.Addr, At: time.Now().UnixMilli()})
	if err := cl.BeginTransaction(); err != nil {
		return fail(err)
	}
	// The owners topic gets a copy in the same transaction: any node's OwnerTable learns the new
	// owner's address exactly when its epoch commits.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: c.SnapshotTopic, Partition: p, Key: []byte(ownerKey), Value: rec},
		&kgo.Record{Topic: c.OwnersTopic, Partition: 0, Key: []byte(strconv.Itoa(int(p))), Value: rec}).FirstErr(); err != nil {
		_ = cl.EndTransaction(ctx, kgo.TryAbort)
		return fail(fmt.Errorf("write owner epoch: %w", err))
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fail(fmt.Errorf("commit owner epoch: %w", err))
	}
	return o, nil
}

func (o *partOwner) send(r kreq) {
	o.sendMu.RLock()
	if o.closed {
		o.sendMu.RUnlock()
		r.done(fmt.Errorf("partition %d: %w", o.p, ErrNotOwner))
		return
	}
	o.reqs <- r // blocks when the committer is behind: the backpressure
	o.sendMu.RUnlock()
}

// close stops the loop (requests queued fail with ErrNotOwner) and closes the producer.
func (o *partOwner) close() {
	o.sendMu.Lock()
	if o.closed {
		o.sendMu.Unlock()
		<-o.done
		return
	}
	o.closed = true
	close(o.quit)
	o.sendMu.Unlock()
	<-o.done
	o.cl.Close()
}

func (o *partOwner) loop() {
	defer close(o.done)
	batch := make([]kreq, 0, 64)
	for {
		select {
		case r := <-o.reqs:
			batch = append(batch[:0], r)
		case <-o.quit:
			o.failQueued()
			return
		}
	gather:
		for len(batch) < o.j.cfg.MaxBatch {
			select {
			case r := <-o.reqs:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		o.commit(batch)
		clear(batch)
	}
}

func (o *partOwner) failQueued() {
	err := fmt.Errorf("partition %d: %w", o.p, ErrNotOwner)
	for {
		select {
		case r := <-o.reqs:
			r.done(err)
		default:
			return
		}
	}
}

// isFenced reports whether err says a newer producer owns the transactional id, or leaves the
// producer unable to write again: INVALID_TXN_STATE is what kfake answers the commit of a
// transaction the new owner's initialisation aborted, and franz-go then holds the producer ID
// as fatally failed. Either way only a new Acquire can write the partition again.
func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.Is(err, kerr.InvalidProducerIDMapping) ||
		errors.Is(err, kerr.InvalidTxnState)
}

// pendingSnap is a snapshot request inside a commit: its chunk records, then its head.
type pendingSnap struct {
	req    kreq
	chunks []*kgo.Record
	head   *snapHead
}

// tailOffset is where the head's tail starts: for an imported stream, the offset the request
// names (the journal's end before the transaction: what the copy appended comes after it, and
// whatever an earlier stay of the stream left before it is not read).
func (ps *pendingSnap) tailOffset(o *partOwner) int64 {
	if ps.req.kind == reqImport {
		return ps.req.tail
	}
	return o.tailOffset(ps.req.stream, ps.req.seq)
}

// commit writes batch in one transaction and answers every request with its outcome.
func (o *partOwner) commit(batch []kreq) {
	o.mu.Lock()
	fenced := o.fenced
	o.mu.Unlock()
	if fenced != nil {
		for _, r := range batch {
			r.done(fenced)
		}
		return
	}
	err := o.transact(batch)
	// A transaction that failed before its commit was attempted, and was aborted, left nothing
	// visible: it is tried again (an idempotent producer's sequence error, a timeout). One whose
	// commit was attempted is not: it may have committed.
	for attempt := 1; attempt < 3 && err != nil && !isFenced(err) && errors.Is(err, errRetryBatch); attempt++ {
		o.j.log.Warn("kafka journal: transaction aborted, trying again", "partition", o.p, "attempt", attempt, "err", err)
		err = o.transact(batch)
	}
	if err != nil && isFenced(err) {
		o.mu.Lock()
		o.fenced = fmt.Errorf("partition %d epoch %d: %w (%v)", o.p, o.epoch, ErrFenced, err)
		err = o.fenced
		o.mu.Unlock()
		o.j.log.Warn("kafka journal: fenced", "partition", o.p, "epoch", o.epoch, "err", err)
	}
	if err != nil {
		o.mu.Lock()
		for _, r := range batch {
			if r.kind == reqAppend {
				o.stream(r.stream).broken = true
			}
		}
		o.mu.Unlock()
	}
	for _, r := range batch {
		r.done(err)
	}
}

func (o *partOwner) transact(batch []kreq) (err error) {
	c := o.j.cfg
	ctx, cancel := context.WithTimeout(context.Background(), c.CommitTimeout)
	defer cancel()
	if err := o.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	committing := false
	defer func() {
		if err == nil {
			return
		}
		_ = o.cl.AbortBufferedRecords(ctx)
		if isFenced(err) {
			// Nothing more to end: the new owner's initialisation aborted the transaction.
			// Ending it anyway would make franz-go re-initialise the producer ID with this
			// owner's stale epoch (KIP-360 recovery): Kafka refuses that, but kfake accepts it
			// and the zombie would fence the new owner.
			return
		}
		aerr := o.cl.EndTransaction(ctx, kgo.TryAbort)
		switch {
		case aerr != nil && isFenced(aerr):
			err = aerr
		case aerr == nil && !committing:
			err = fmt.Errorf("%w: %w", errRetryBatch, err)
		}
	}()
	epoch := []byte(strconv.FormatUint(o.epoch, 10))
	var (
		wg      sync.WaitGroup
		perrMu  sync.Mutex
		perr    error
		appends = make([]*kgo.Record, len(batch))
		snaps   []*pendingSnap
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			perrMu.Lock()
			if perr == nil {
				perr = err
			}
			perrMu.Unlock()
		}
		wg.Done()
	}
	produce := func(r *kgo.Record) {
		wg.Add(1)
		o.cl.Produce(ctx, r, promise)
	}
	chunks := func(ps *pendingSnap) {
		r := ps.req
		for k, at := 0, 0; at < len(r.payload) || k == 0; k++ {
			end := min(at+c.SnapshotChunk, len(r.payload))
			rec := &kgo.Record{Topic: c.SnapshotTopic, Partition: o.p, Key: []byte(chunkKey(r.stream, r.seq, k)),
				Value: r.payload[at:end]}
			ps.chunks = append(ps.chunks, rec)
			produce(rec)
			at = end
		}
	}
	o.mu.Lock()
	for i, r := range batch {
		switch r.kind {
		case reqAppend:
			// An entry over EntryChunk goes as ordered parts (kafka_entry.go); the last record's
			// offset is the entry's.
			recs := entryRecords(c.Topic, o.p, r.stream, r.seq, epoch, r.payload, c.EntryChunk)
			appends[i] = recs[len(recs)-1]
			for _, rec := range recs {
				produce(rec)
			}
		case reqSnapshot:
			if o.stream(r.stream).broken {
				batch[i].done = failOnce(r.done, fmt.Errorf("snapshot of %s: an append failed since the last load", r.stream))
				batch[i].kind = reqBarrier
				continue
			}
			ps := &pendingSnap{req: r}
			chunks(ps)
			snaps = append(snaps, ps)
		case reqRecords, reqImport:
			for _, rec := range r.records {
				cp := *rec // a record is not produced twice (a retried transaction)
				produce(&cp)
			}
			for _, sc := range r.copies {
				for _, e := range sc.Entries { // whole entries (Load): split again like an append
					for _, rec := range entryRecords(c.Topic, o.p, sc.Stream, e.Seq, epoch, e.Payload, c.EntryChunk) {
						produce(rec)
					}
				}
				ps := &pendingSnap{req: kreq{kind: reqImport, stream: sc.Stream, seq: sc.SnapshotSeq, payload: sc.Snapshot, tail: r.tail}}
				if sc.Snapshot != nil {
					chunks(ps)
				} // else a head without chunks: no snapshot, the tail starts at r.tail
				snaps = append(snaps, ps)
			}
		}
	}
	o.mu.Unlock()
	if err := o.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	wg.Wait()
	if perr != nil {
		return fmt.Errorf("produce: %w", perr)
	}
	// Offsets are known now: note each stream's entries, then write the snapshot heads.
	o.mu.Lock()
	for i, r := range batch {
		if rec := appends[i]; rec != nil {
			st := o.stream(r.stream)
			st.offs = append(st.offs, seqOff{seq: r.seq, off: rec.Offset})
		}
	}
	var heads []*kgo.Record
	for _, ps := range snaps {
		r := ps.req
		sum := sha256.Sum256(r.payload)
		h := &snapHead{Stream: r.stream, Seq: r.seq, Offset: ps.tailOffset(o), Epoch: o.epoch,
			Size: len(r.payload), SHA256: hex.EncodeToString(sum[:]), At: time.Now().UnixMilli()}
		for _, ch := range ps.chunks {
			h.Chunks = append(h.Chunks, ch.Offset)
		}
		ps.head = h
		val, _ := json.Marshal(h)
		heads = append(heads, &kgo.Record{Topic: c.SnapshotTopic, Partition: o.p, Key: []byte(snapHeadPrefix + r.stream), Value: val})
		// The previous snapshot's chunks are dead once this head commits: tombstones let
		// compaction drop them.
		if old := o.heads[r.stream]; old != nil && old.Seq != r.seq {
			for k := range old.Chunks {
				heads = append(heads, &kgo.Record{Topic: c.SnapshotTopic, Partition: o.p, Key: []byte(chunkKey(r.stream, old.Seq, k))})
			}
		}
	}
	o.mu.Unlock()
	if len(heads) > 0 {
		if err := o.cl.ProduceSync(ctx, heads...).FirstErr(); err != nil {
			return fmt.Errorf("produce snapshot heads: %w", err)
		}
	}
	committing = true
	o.commitMu.Lock()
	defer o.commitMu.Unlock()
	if err := o.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if h := o.j.afterCommit; h != nil {
		h()
	}
	n := 0
	for _, rec := range appends {
		if rec != nil {
			n++
		}
	}
	if n > 0 || len(snaps) > 0 {
		o.j.txns.Add(1)
		o.j.appends.Add(int64(n))
	}
	o.mu.Lock()
	for _, ps := range snaps {
		o.heads[ps.req.stream] = ps.head
		st := o.stream(ps.req.stream)
		keep := st.offs[:0]
		for _, so := range st.offs {
			if so.seq >= ps.req.seq {
				keep = append(keep, so)
			}
		}
		st.offs = keep
	}
	o.mu.Unlock()
	return nil
}

// tailOffset is the journal offset the tail after entry seq of stream starts at: just past the
// record of seq when it is known, else the record of the newest earlier entry known, else the
// previous snapshot's tail offset, else the start. Load skips entries up to the snapshot's seq,
// so an earlier offset is only slower, never wrong. o.mu is held.
func (o *partOwner) tailOffset(stream string, seq uint64) int64 {
	st := o.stream(stream)
	best := int64(-1)
	for _, so := range st.offs {
		if so.seq <= seq {
			best = so.off + 1
		}
	}
	if best >= 0 {
		return best
	}
	if h := o.heads[stream]; h != nil && h.Seq <= seq {
		return h.Offset
	}
	return 0
}

func failOnce(done func(error), err error) func(error) {
	return func(error) { done(err) }
}
