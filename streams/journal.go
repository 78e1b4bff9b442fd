// Package streams holds the logs of the service: the local append-only journal with group commit,
// the in-process event bus, demand signals on Kafka via segmentio/kafka-go, and the distributed
// mode's journal and placement directory on Kafka via franz-go (transactions and fencing).
package streams

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/fsutil"
	"github.com/supplyplan/supplyplan/internal/telemetry"
)

// ErrClosed is returned for appends after Close.
var ErrClosed = errors.New("journal closed")

// JournalConfig configures a Journal.
type JournalConfig struct {
	// Dir holds one sub-directory per stream.
	Dir string
	// SegmentBytes rolls a stream's segment file past this size (default 64 MiB).
	SegmentBytes int64
	// MaxBatch caps the entries of one group commit (default 8192).
	MaxBatch int
	// QueueLen bounds the requests waiting for the committer; Append blocks beyond it (default 16384).
	QueueLen int
	// CommitWait bounds how long a commit waits for the writers of the previous one to come back
	// with their next write (default 2 ms; never longer than the previous commit took; negative:
	// never wait). See gather.
	CommitWait time.Duration
	Logger     *slog.Logger
	// Metrics records append latency, group sizes and write+fsync times; nil: none.
	Metrics *telemetry.Metrics
}

// Journal is a set of append-only per-stream logs with snapshots. Appends from every stream are
// group-committed by one goroutine: written, fsynced, then acknowledged through their callbacks.
//
// File layout: <Dir>/<stream>/<first seq, 20 digits>.wal segments of frames
// [len uint32][crc32c uint32][seq uint64][payload], and <Dir>/<stream>/snapshot
// ([seq uint64][crc32c uint32][payload]). A torn frame at the tail of the newest segment is
// truncated on load; damage anywhere else refuses to load. Zeros after the last frame are space
// written ahead of the entries (preallocate), not damage.
type Journal struct {
	cfg  JournalConfig
	log  *slog.Logger
	reqs chan jreq
	done chan struct{}

	mu     sync.RWMutex
	closed bool

	// owned by the committer goroutine
	segs map[string]*segment
	// next is the seq the next append of a stream must have (absent: any). Entries of a stream
	// follow each other without a gap: once an entry fails, the ones appended after it (written
	// by a state that had applied it) fail too, until its writer appends that seq again (after
	// reloading what is durable).
	next map[string]uint64
	// failWrite, in tests, fails the write of a stream's segment.
	failWrite atomic.Pointer[func(stream string) error]
	// tails holds, by path, where Load found the entries of a stream's newest segment to end (a
	// loadedTail): the committer reopens the segment there rather than reading it again.
	tails sync.Map
}

// loadedTail is where the entries of a segment end, and the file's size when that was read.
type loadedTail struct{ end, fileSize int64 }

type reqKind uint8

const (
	reqAppend reqKind = iota
	reqBarrier
	reqRoll
)

type jreq struct {
	kind    reqKind
	stream  string
	seq     uint64
	payload []byte
	done    func(error)
	// at is when the entry was appended (set only when metrics are recorded).
	at time.Time
	// rolledCovered receives the first seq of the rolled segment when all its entries are <= seq.
	rolledCovered *uint64
}

// rolledSegment is a segment that a snapshot's roll request found open, with that request.
type rolledSegment struct {
	seg *segment
	req *jreq
}

type segment struct {
	f         *os.File
	first     uint64
	size      int64 // bytes durable on disk
	alloc     int64 // bytes the file holds: size, then zeros written ahead (preallocate)
	buf       []byte
	large     []largeFrame // frames written from their payload, not copied into buf
	lastSeq   uint64       // newest entry written; MaxUint64 when unknown (reopened file)
	lastErr   error
	needsRoll bool
	inject    error // tests: the next flush fails with it
}

// largeFrame is a frame whose payload (largePayload bytes or more) is written from the caller's
// slice rather than copied into the segment's buffer: an entry of 100 MB is not held twice while
// it is written. Its header and payload go after buf[:at].
type largeFrame struct {
	at      int
	header  [frameHeader]byte
	payload []byte
}

const largePayload = 1 << 20

// pending is the bytes waiting to be written.
func (s *segment) pending() int {
	n := len(s.buf)
	for _, l := range s.large {
		n += frameHeader + len(l.payload)
	}
	return n
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var streamNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

const frameHeader = 16

// OpenJournal creates the directory if needed and starts the committer.
func OpenJournal(cfg JournalConfig) (*Journal, error) {
	if cfg.SegmentBytes <= 0 {
		cfg.SegmentBytes = 64 << 20
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 8192
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = 16384
	}
	if cfg.CommitWait == 0 {
		cfg.CommitWait = 2 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create journal dir: %w", err)
	}
	j := &Journal{cfg: cfg, log: cfg.Logger, reqs: make(chan jreq, cfg.QueueLen), done: make(chan struct{}),
		segs: map[string]*segment{}, next: map[string]uint64{}}
	go j.commitLoop()
	return j, nil
}

// Append queues payload as entry seq of stream. done is called from the committer goroutine once the
// entry is durable (nil) or failed; it must not block. seq must increase within a stream.
func (j *Journal) Append(stream string, seq uint64, payload []byte, done func(error)) {
	r := jreq{kind: reqAppend, stream: stream, seq: seq, payload: payload, done: done}
	if j.cfg.Metrics != nil {
		r.at = time.Now()
	}
	j.send(r)
}

// Barrier calls done after every entry appended before it is durable: those of stream, and of
// every other stream too (one group commit covers them all).
func (j *Journal) Barrier(_ string, done func(error)) {
	j.send(jreq{kind: reqBarrier, done: done})
}

// Sync blocks until every entry appended before the call is durable.
func (j *Journal) Sync() error {
	ch := make(chan error, 1)
	j.Barrier("", func(err error) { ch <- err })
	return <-ch
}

// Ping checks that the journal commits: a barrier goes through the committer (readiness).
func (j *Journal) Ping(ctx context.Context) error {
	ch := make(chan error, 1)
	go j.Barrier("", func(err error) { ch <- err })
	select {
	case err := <-ch:
		if err != nil {
			return fmt.Errorf("journal barrier: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("journal barrier: %w", ctx.Err())
	}
}

func (j *Journal) send(r jreq) {
	j.mu.RLock()
	if j.closed {
		j.mu.RUnlock()
		if r.done != nil {
			r.done(ErrClosed)
		}
		return
	}
	j.reqs <- r // blocks when the committer is behind: that is the backpressure
	j.mu.RUnlock()
}

// Close commits what is queued, syncs and closes every file. It is idempotent.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		<-j.done
		return nil
	}
	j.closed = true
	close(j.reqs)
	j.mu.Unlock()
	<-j.done
	return nil
}

func (j *Journal) commitLoop() {
	defer close(j.done)
	batch := make([]jreq, 0, 256)
	var want int           // requests of the previous commit: their writers are about to write again
	var took time.Duration // how long the previous commit took
	for {
		r, ok := <-j.reqs
		if !ok {
			break
		}
		batch = j.gather(append(batch[:0], r), want, min(took, j.cfg.CommitWait))
		start := time.Now()
		j.commit(batch)
		took, want = time.Since(start), len(batch)
		clear(batch)
	}
	for name, s := range j.segs {
		closeSegment(s)
		delete(j.segs, name)
	}
}

// gather adds the queued requests to batch (up to MaxBatch), then, while it holds fewer than want,
// waits up to wait for more.
//
// Group commit: the writers acknowledged by the previous commit (want of them) are typically back
// within a fraction of a commit with their next write. Starting the next commit at once with the
// few requests that came in meanwhile would make the others wait for that commit and then for
// theirs; waiting for them instead (at most as long as the previous commit took, and at most
// CommitWait) keeps the group as large as the number of writers. A lone writer never waits: the
// previous commit held one request, which is here.
func (j *Journal) gather(batch []jreq, want int, wait time.Duration) []jreq {
	open := j.drain(&batch)
	if !open || len(batch) >= min(want, j.cfg.MaxBatch) || wait <= 0 {
		return batch
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for len(batch) < min(want, j.cfg.MaxBatch) {
		select {
		case r, ok := <-j.reqs:
			if !ok {
				return batch
			}
			batch = append(batch, r)
			if !j.drain(&batch) {
				return batch
			}
		case <-t.C:
			return batch
		}
	}
	return batch
}

// drain moves the requests already queued into batch (up to MaxBatch) without waiting; false
// when the queue is closed.
func (j *Journal) drain(batch *[]jreq) bool {
	for len(*batch) < j.cfg.MaxBatch {
		select {
		case r, ok := <-j.reqs:
			if !ok {
				return false
			}
			*batch = append(*batch, r)
		default:
			return true
		}
	}
	return true
}

// commit writes and syncs one batch, then acknowledges it.
func (j *Journal) commit(batch []jreq) {
	touched := make([]*segment, 0, 4)
	errs := map[string]error{}
	var refused map[int]error    // appends out of sequence, by batch index
	var rolled []rolledSegment   // segments that snapshots asked to roll
	first := map[string]uint64{} // each stream's first entry in this batch
	for i := range batch {
		r := &batch[i]
		switch r.kind {
		case reqAppend:
			if want, ok := j.next[r.stream]; ok && r.seq != want {
				if refused == nil {
					refused = map[int]error{}
				}
				refused[i] = fmt.Errorf("journal entry %d of %s out of sequence (%d expected: an entry before it failed)", r.seq, r.stream, want)
				continue
			}
			if _, ok := first[r.stream]; !ok {
				first[r.stream] = r.seq
			}
			j.next[r.stream] = r.seq + 1
			s, err := j.segmentFor(r.stream, r.seq)
			if err != nil {
				errs[r.stream] = err
				continue
			}
			if s.pending() == 0 {
				touched = append(touched, s)
			}
			if len(r.payload) >= largePayload {
				s.large = append(s.large, largeFrame{at: len(s.buf), header: frameHeaderOf(r.seq, r.payload), payload: r.payload})
			} else {
				s.buf = appendFrame(s.buf, r.seq, r.payload)
			}
			s.lastSeq = r.seq
		case reqRoll:
			if s := j.segs[r.stream]; s != nil {
				s.needsRoll = true
				if s.f != nil && r.rolledCovered != nil {
					rolled = append(rolled, rolledSegment{s, r})
				}
			} else if dir, err := j.streamDir(r.stream); err == nil {
				// Nothing open: make the next append start a new segment rather than reopen the last.
				if segs, err := listSegments(dir); err == nil && len(segs) > 0 {
					j.segs[r.stream] = &segment{f: nil, first: segs[len(segs)-1], needsRoll: true}
				}
			}
		}
	}
	flushStart := time.Now()
	if fail := j.failWrite.Load(); fail != nil {
		for name, seg := range j.segs {
			if seg.pending() > 0 {
				seg.inject = (*fail)(name)
			}
		}
	}
	j.flush(touched)
	// Whether a rolled segment holds only entries the snapshot covers is known once the whole batch
	// is placed: a segment with writes pending is not rolled mid-batch (segmentFor), so the entries
	// after the roll in this batch may have gone into it too. Deciding at the roll deleted them.
	for _, x := range rolled {
		if x.seg.lastSeq <= x.req.seq {
			*x.req.rolledCovered = x.seg.first + 1 // +1 so that zero means "none"
		}
	}
	if m := j.cfg.Metrics; m != nil && len(touched) > 0 {
		appends := 0
		for i := range batch {
			if batch[i].kind == reqAppend {
				appends++
			}
		}
		m.JournalCommit(appends, time.Since(flushStart))
	}
	for _, s := range touched {
		if s.lastErr != nil {
			for name, seg := range j.segs {
				if seg == s {
					errs[name] = s.lastErr
				}
			}
		}
	}
	for name := range errs {
		// nothing of the stream in this batch is durable: its writer appends from there again
		if seq, ok := first[name]; ok {
			j.next[name] = seq
		}
	}
	for i := range batch {
		r := &batch[i]
		if r.done != nil {
			err := errs[r.stream]
			if e, ok := refused[i]; ok {
				err = e
			}
			r.done(err)
		}
	}
	if m := j.cfg.Metrics; m != nil {
		now := time.Now()
		for i := range batch {
			if r := &batch[i]; r.kind == reqAppend && !r.at.IsZero() {
				m.JournalAppend(now.Sub(r.at))
			}
		}
	}
	for _, s := range touched {
		s.lastErr = nil
	}
}

// flush writes each touched segment's buffer and syncs it, in parallel when there are several.
func (j *Journal) flush(touched []*segment) {
	one := func(s *segment) {
		off := s.size
		write := func(b []byte) error {
			n, err := s.f.WriteAt(b, off)
			off += int64(n)
			return err
		}
		err := s.inject // a test's failure: nothing is written
		s.inject = nil
		prev := 0
		for i := 0; i < len(s.large) && err == nil; i++ {
			l := &s.large[i]
			if err = write(s.buf[prev:l.at]); err == nil {
				if err = write(l.header[:]); err == nil {
					err = write(l.payload)
				}
			}
			prev = l.at
		}
		if err == nil {
			err = write(s.buf[prev:])
		}
		if err == nil && off > s.alloc {
			err = j.preallocate(s, off)
		}
		if err == nil {
			err = fsutil.DataSync(s.f)
		}
		if err != nil {
			// Cut what may be half written back to the last durable size; the callers get the error.
			_ = s.f.Truncate(s.size)
			s.alloc = s.size
			s.lastErr = fmt.Errorf("journal write: %w", err)
		} else {
			s.size = off
		}
		clear(s.large)
		s.large = s.large[:0]
		s.buf = s.buf[:0]
		if cap(s.buf) > 8<<20 {
			s.buf = nil
		}
	}
	if len(touched) == 1 {
		one(touched[0])
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, s := range touched {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			one(s)
			<-sem
		}()
	}
	wg.Wait()
}

// Preallocation. A commit that writes past the end of its segment's file makes the file system
// commit the new size with it (fdatasync flushes the metadata needed to read the data back), which
// on ext4 took twice the time and CPU of a flush of data alone: 190-230 us per commit against
// 100-130 us, and more under load, where the file system's journal thread waits for a CPU. A
// segment's file is therefore grown ahead of its entries with zeros (written, not fallocated:
// fallocated extents are "unwritten" and their first write is again a metadata change), by its own
// size but at least preallocMin and at most preallocMax, so that most commits write inside the
// file. A reader takes zeros after the last entry as the end of the segment (readSegment); a rolled
// or closed segment is cut back to its entries (closeSegment).
const (
	preallocMin = 64 << 10
	preallocMax = 1 << 20
)

var zeros [preallocMax]byte

// preallocate grows s's file with zeros from end (where its entries now end, past s.alloc).
func (j *Journal) preallocate(s *segment, end int64) error {
	target := end + min(max(end, preallocMin), preallocMax)
	target = min(target, max(end, j.cfg.SegmentBytes)) // a segment about to roll is not grown
	for at := end; at < target; {
		n, err := s.f.WriteAt(zeros[:min(target-at, preallocMax)], at)
		if err != nil {
			return err
		}
		at += int64(n)
	}
	s.alloc = max(target, end)
	return nil
}

// closeSegment cuts the zeros written ahead off a segment no longer written, and closes it.
func closeSegment(s *segment) {
	if s.f == nil {
		return
	}
	if s.alloc > s.size {
		_ = s.f.Truncate(s.size) // if this fails, the zeros stay: readers take them as the end
	}
	_ = s.f.Close()
}

// segmentFor returns the open segment of stream, opening or rolling one starting at seq if needed.
func (j *Journal) segmentFor(stream string, seq uint64) (*segment, error) {
	s := j.segs[stream]
	forceNew := false
	if s != nil && (s.needsRoll || s.size+int64(s.pending()) >= j.cfg.SegmentBytes) && s.pending() == 0 {
		closeSegment(s)
		delete(j.segs, stream)
		s, forceNew = nil, true
	}
	if s != nil {
		return s, nil
	}
	dir, err := j.streamDir(stream)
	if err != nil {
		return nil, err
	}
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	if n := len(segs); n > 0 && !forceNew {
		last := segs[n-1]
		path := filepath.Join(dir, segmentName(last))
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("stat segment: %w", err)
		}
		end, err := j.segmentEnd(path, st.Size())
		if err != nil {
			return nil, err
		}
		if end < j.cfg.SegmentBytes {
			f, err := os.OpenFile(path, os.O_RDWR, 0o600)
			if err != nil {
				return nil, fmt.Errorf("open segment: %w", err)
			}
			s = &segment{f: f, first: last, size: end, alloc: st.Size(), lastSeq: math.MaxUint64}
			j.segs[stream] = s
			return s, nil
		}
	}
	path := filepath.Join(dir, segmentName(seq))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	if err := fsutil.SyncDir(dir); err != nil {
		_ = f.Close()
		return nil, err
	}
	s = &segment{f: f, first: seq}
	j.segs[stream] = s
	return s, nil
}

// segmentEnd returns where the entries of the segment at path (fileSize bytes) end: where Load
// found them to end if the file has not changed since, else read from the file. Zeros may follow
// (preallocate); the next entry overwrites them.
func (j *Journal) segmentEnd(path string, fileSize int64) (int64, error) {
	if v, ok := j.tails.LoadAndDelete(path); ok && v.(loadedTail).fileSize == fileSize {
		return v.(loadedTail).end, nil
	}
	end, err := readSegment(path, func(uint64, []byte) error { return nil })
	var torn *tornError
	if errors.As(err, &torn) {
		// Load cuts a torn tail before the stream's first append; without a Load, appending after
		// it would leave the damage in the middle of the segment.
		return 0, fmt.Errorf("segment %s has a torn tail at offset %d: load the stream before appending", path, torn.offset)
	}
	return end, err
}

func (j *Journal) streamDir(stream string) (string, error) {
	if !streamNameRe.MatchString(stream) {
		return "", fmt.Errorf("invalid stream name %q", stream)
	}
	dir := filepath.Join(j.cfg.Dir, stream)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create stream dir: %w", err)
	}
	return dir, nil
}

func appendFrame(buf []byte, seq uint64, payload []byte) []byte {
	h := frameHeaderOf(seq, payload)
	buf = append(buf, h[:]...)
	return append(buf, payload...)
}

// frameHeaderOf is the header of a frame: payload length, crc32c of seq and payload, seq.
func frameHeaderOf(seq uint64, payload []byte) [frameHeader]byte {
	var h [frameHeader]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint64(h[8:16], seq)
	crc := crc32.Update(crc32.Checksum(h[8:16], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(h[4:8], crc)
	return h
}

func segmentName(first uint64) string { return fmt.Sprintf("%020d.wal", first) }

func listSegments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list segments: %w", err)
	}
	var out []uint64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".wal") {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(name, ".wal"), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// Streams lists the streams that have a directory.
func (j *Journal) Streams() ([]string, error) {
	ents, err := os.ReadDir(j.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("list streams: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && streamNameRe.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// LoadResult summarizes a load.
type LoadResult = supplyplan.JournalLoad

// Journal is the local implementation of the journal the actors depend on.
var _ supplyplan.Journal = (*Journal)(nil)

// Load reads a stream: onSnapshot with the latest snapshot (if any), then onEntry for every entry
// after it, in order. It must run before the first Append to the stream.
func (j *Journal) Load(stream string, onSnapshot func(seq uint64, data []byte) error,
	onEntry func(seq uint64, payload []byte) error) (LoadResult, error) {
	var res LoadResult
	dir, err := j.streamDir(stream)
	if err != nil {
		return res, err
	}
	snapSeq, snap, err := readSnapshot(dir)
	if err != nil {
		return res, err
	}
	if snap != nil {
		if err := onSnapshot(snapSeq, snap); err != nil {
			return res, fmt.Errorf("apply snapshot of %s: %w", stream, err)
		}
	}
	res.SnapshotSeq, res.LastSeq = snapSeq, snapSeq
	segs, err := listSegments(dir)
	if err != nil {
		return res, err
	}
	for i, first := range segs {
		last := i == len(segs)-1
		path := filepath.Join(dir, segmentName(first))
		good, err := readSegment(path, func(seq uint64, payload []byte) error {
			if seq <= res.SnapshotSeq {
				return nil
			}
			if seq <= res.LastSeq && res.Entries > 0 {
				return fmt.Errorf("sequence went backwards at %d", seq)
			}
			if seq != res.LastSeq+1 {
				// Entries are appended without gaps (a failed one is appended again before any after
				// it): a gap is entries lost, and a state rebuilt over it would be silently wrong.
				return fmt.Errorf("entry %d follows entry %d: the entries between them are missing", seq, res.LastSeq)
			}
			res.LastSeq = seq
			res.Entries++
			return onEntry(seq, payload)
		})
		var torn *tornError
		if errors.As(err, &torn) {
			if !last {
				return res, fmt.Errorf("stream %s: segment %s is damaged at offset %d (not the newest segment)", stream, segmentName(first), torn.offset)
			}
			st, _ := os.Stat(path)
			if st != nil {
				res.Truncated = st.Size() - good
			}
			j.log.Warn("journal: cutting torn tail", "stream", stream, "segment", segmentName(first),
				"offset", good, "bytes", res.Truncated)
			if err := os.Truncate(path, good); err != nil {
				return res, fmt.Errorf("truncate torn tail: %w", err)
			}
			continue
		}
		if err != nil {
			return res, fmt.Errorf("load %s: %w", stream, err)
		}
		if last {
			if st, err := os.Stat(path); err == nil {
				j.tails.Store(path, loadedTail{end: good, fileSize: st.Size()})
			}
		}
	}
	return res, nil
}

type tornError struct{ offset int64 }

func (e *tornError) Error() string { return fmt.Sprintf("torn frame at offset %d", e.offset) }

// readSegment calls fn for each valid frame; it returns the offset after the last good frame and a
// *tornError when the file ends in an incomplete or corrupt frame. Zeros after the last frame (to
// the end of the file) are space written ahead (preallocate), not damage.
func readSegment(path string, fn func(seq uint64, payload []byte) error) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read segment: %w", err)
	}
	var off int64
	end := func() (int64, error) {
		for _, b := range data[off:] {
			if b != 0 {
				return off, &tornError{off}
			}
		}
		return off, nil
	}
	for int(off) < len(data) {
		rest := data[off:]
		if len(rest) < frameHeader {
			return end()
		}
		n := binary.LittleEndian.Uint32(rest[0:4])
		crc := binary.LittleEndian.Uint32(rest[4:8])
		if int64(n) > int64(len(rest)-frameHeader) {
			return end()
		}
		payload := rest[frameHeader : frameHeader+int(n)]
		if crc32.Update(crc32.Checksum(rest[8:16], castagnoli), castagnoli, payload) != crc {
			return end()
		}
		seq := binary.LittleEndian.Uint64(rest[8:16])
		if err := fn(seq, payload); err != nil {
			return off, err
		}
		off += frameHeader + int64(n)
	}
	return off, nil
}

func readSnapshot(dir string) (uint64, []byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, "snapshot"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read snapshot: %w", err)
	}
	if len(data) < 12 {
		return 0, nil, fmt.Errorf("snapshot in %s is too short", dir)
	}
	seq := binary.LittleEndian.Uint64(data[0:8])
	crc := binary.LittleEndian.Uint32(data[8:12])
	if crc32.Checksum(data[12:], castagnoli) != crc {
		return 0, nil, fmt.Errorf("snapshot in %s fails its checksum", dir)
	}
	return seq, data[12:], nil
}

// SaveSnapshot stores data as the state of stream after entry seq (atomically and durably:
// fsutil.WriteFile), rolls the stream to a new segment and deletes segments that hold only
// entries <= seq.
func (j *Journal) SaveSnapshot(stream string, seq uint64, data []byte) error {
	_, err := j.SaveSnapshotStream(stream, seq, func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// snapshotWriteBuffer is the buffer SaveSnapshotStream writes through: the snapshot reaches the
// file in pieces of this size, whatever its own size.
const snapshotWriteBuffer = 1 << 20

// SaveSnapshotStream is SaveSnapshot with the snapshot written by write, straight into the file
// (through a buffer of snapshotWriteBuffer bytes) instead of first into memory: a snapshot is the
// whole state, and holding it as one slice cost its size in fresh memory (zeroed page by page) at
// every snapshot. The checksum is taken as the bytes go by and the header written last, before the
// file is synced and renamed: a reader sees the whole snapshot or the one before. It returns the
// snapshot's size.
func (j *Journal) SaveSnapshotStream(stream string, seq uint64, write func(w *bufio.Writer) error) (int, error) {
	start := time.Now()
	dir, err := j.streamDir(stream)
	if err != nil {
		return 0, err
	}
	var size int
	err = fsutil.WriteFile(filepath.Join(dir, "snapshot"), 0o600, func(w io.Writer) error {
		f, ok := w.(io.WriterAt)
		if !ok {
			return fmt.Errorf("snapshot file %T cannot be written at an offset", w)
		}
		var h [12]byte
		if _, err := w.Write(h[:]); err != nil { // the header's place: written once the checksum is known
			return err
		}
		cw := &crcWriter{w: w}
		bw := bufio.NewWriterSize(cw, snapshotWriteBuffer)
		if err := write(bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		size = cw.n
		binary.LittleEndian.PutUint64(h[0:8], seq)
		binary.LittleEndian.PutUint32(h[8:12], cw.crc)
		_, err := f.WriteAt(h[:], 0)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("write snapshot: %w", err)
	}
	return size, j.afterSnapshot(dir, stream, seq, size, start)
}

// crcWriter passes bytes on to w, keeping their count and Castagnoli checksum.
type crcWriter struct {
	w   io.Writer
	crc uint32
	n   int
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += n
	return n, err
}

// afterSnapshot rolls stream to a new segment and deletes the segments the snapshot after entry
// seq covers.
func (j *Journal) afterSnapshot(dir, stream string, seq uint64, size int, start time.Time) error {
	// Roll so that the current segment can be deleted at the next snapshot at the latest.
	ch := make(chan error, 1)
	var covered uint64
	j.send(jreq{kind: reqRoll, stream: stream, seq: seq, rolledCovered: &covered, done: func(err error) { ch <- err }})
	if err := <-ch; err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	segs, err := listSegments(dir)
	if err != nil {
		return err
	}
	for i := range segs {
		// A segment holds only entries <= seq when the next one starts at or before seq+1, or when it
		// is the segment just rolled and its newest entry is <= seq (it is never written again).
		if (i+1 < len(segs) && segs[i+1] <= seq+1) || (covered != 0 && segs[i] == covered-1) {
			if err := os.Remove(filepath.Join(dir, segmentName(segs[i]))); err != nil {
				return fmt.Errorf("delete old segment: %w", err)
			}
		}
	}
	j.log.Debug("journal: snapshot saved", "stream", stream, "seq", seq, "bytes", size,
		"took", time.Since(start))
	return nil
}
