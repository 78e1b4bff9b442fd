package analytics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/fsutil"
)

// ErrStoreClosed is returned by a store that is not open (before Open, after Close).
var ErrStoreClosed = errors.New("demand store closed")

// EmbeddedConfig configures an EmbeddedStore.
type EmbeddedConfig struct {
	// Dir holds the store's files (the service passes <data>/demand). Created if missing.
	Dir string
	// CompactBytes: the log is compacted into a snapshot once the log written since the last
	// snapshot exceeds both CompactBytes and the size of that snapshot (default 64 MiB).
	CompactBytes int64
	// MaxCommitBytes caps the frames of one group commit (default 32 MiB).
	MaxCommitBytes int
	// QueueLen bounds the writes waiting for the committer; writers block beyond it (default 1024).
	QueueLen int
	Logger   *slog.Logger
}

// EmbeddedStore is the default supplyplan.DemandStore: an in-memory index rebuilt at Open from a
// snapshot and a write-ahead log in Dir. Writes from every caller are group-committed by one
// goroutine (written, fdatasynced, applied to the index, then acknowledged), so a write that
// returned nil survives a crash, and a signal's dedup record and its quantity are one frame.
//
// Files: LOCK (flock against a second process), log-<gen>.wal (the records written since the
// snapshot of the same or a lower generation), snapshot-<gen>.snap (the state as of the start of
// log-<gen>, possibly with some of its records already applied: replaying them again is harmless,
// see compact). Only the newest log may end in a torn frame; Open cuts it.
type EmbeddedStore struct {
	cfg EmbeddedConfig
	log *slog.Logger

	mu      sync.RWMutex // guards tenants
	tenants map[string]*tenant

	sendMu sync.RWMutex // guards reqs against close
	closed bool
	open   atomic.Bool
	reqs   chan *writeReq
	done   chan struct{} // closed when the committer exits

	lock *os.File // the flocked LOCK file

	// Owned by the committer goroutine (and Open before it starts).
	f      *os.File // newest log
	gen    uint64   // its generation
	size   int64    // its durable size
	failed error    // a write or sync failed: refuse further writes (the page cache state is unknown)

	logBytes       atomic.Int64 // log bytes written since the newest snapshot
	snapBytes      atomic.Int64 // size of the newest snapshot
	compactAfter   atomic.Int64 // do not retry a failed compaction before logBytes passes this
	compacting     atomic.Bool
	compactDone    sync.WaitGroup
	stopCompaction chan struct{}
	compactions    atomic.Int64 // completed compactions (tests)
	quarantined    atomic.Int64 // weeks out of bounds found at Open
}

type writeReq struct {
	buf    []byte                   // frames
	writes []supplyplan.SignalWrite // AddSignals: filled by apply
	// keys are the dedup keys of AddSignals' signals, in the order buf holds them: hashed on the
	// caller's goroutine rather than in the committer, which every write waits for.
	keys []sigKey
	done chan error
}

// NewEmbeddedStore returns a store over cfg.Dir; Open loads it.
func NewEmbeddedStore(cfg EmbeddedConfig) *EmbeddedStore {
	if cfg.CompactBytes <= 0 {
		cfg.CompactBytes = 64 << 20
	}
	if cfg.MaxCommitBytes <= 0 {
		cfg.MaxCommitBytes = 32 << 20
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = 1024
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &EmbeddedStore{cfg: cfg, log: cfg.Logger, tenants: map[string]*tenant{}}
}

// Open locks the directory, loads the snapshot and the logs (cutting a torn tail) and starts the
// committer.
func (s *EmbeddedStore) Open() error {
	if s.open.Load() || s.closed {
		return errors.New("open demand store: already opened")
	}
	start := time.Now()
	if s.cfg.Dir == "" {
		return errors.New("open demand store: no directory configured")
	}
	if err := os.MkdirAll(s.cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("create demand dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(s.cfg.Dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open demand lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return fmt.Errorf("lock demand dir %s (is another process using it?): %w", s.cfg.Dir, err)
	}
	s.lock = lock
	if err := s.recover(); err != nil {
		_ = lock.Close()
		s.lock = nil
		return err
	}
	s.reportQuarantine()
	s.reqs = make(chan *writeReq, s.cfg.QueueLen)
	s.done = make(chan struct{})
	s.stopCompaction = make(chan struct{})
	s.open.Store(true)
	go s.commitLoop()
	s.log.Info("demand store opened", "dir", s.cfg.Dir, "generation", s.gen,
		"organizations", len(s.tenants), "took", time.Since(start))
	return nil
}

// reportQuarantine logs the weeks loaded out of bounds: written by an earlier version that did not
// bound numbers, they stay on disk (for inspection; a later import of the week does not clear its
// signals) and are left out of every read.
func (s *EmbeddedStore) reportQuarantine() {
	total := 0
	for org, t := range s.tenants {
		if n := t.quarantined(); n > 0 {
			total += n
			s.log.Warn("demand store: quarantined weeks out of bounds; they are left out of every read",
				"org", org, "weeks", n, "bound", supplyplan.MaxStored)
		}
	}
	s.quarantined.Store(int64(total))
}

// Quarantined returns the number of weeks found out of bounds when the store opened.
func (s *EmbeddedStore) Quarantined() int64 { return s.quarantined.Load() }

// Close stops accepting writes, commits what is queued, waits for a running compaction to stop and
// closes the files. It is idempotent.
func (s *EmbeddedStore) Close() error {
	s.sendMu.Lock()
	if s.closed || !s.open.Load() {
		s.closed = true
		s.sendMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.reqs)
	s.sendMu.Unlock()
	<-s.done
	close(s.stopCompaction)
	s.compactDone.Wait()
	s.open.Store(false)
	var err error
	if s.f != nil {
		err = s.f.Close()
	}
	if s.lock != nil {
		_ = s.lock.Close()
	}
	if err != nil {
		return fmt.Errorf("close demand log: %w", err)
	}
	return nil
}

// UpsertWeeks replaces the imported values of the rows' weeks; it returns once they are durable.
func (s *EmbeddedStore) UpsertWeeks(ctx context.Context, orgID string, rows []supplyplan.DemandRow) error {
	if err := validateRows(orgID, rows); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	r := &writeReq{buf: encodeUpsert(make([]byte, 0, 64+len(rows)*34), orgID, rows)}
	return s.submit(ctx, r)
}

// AddSignals adds each new signal to its week; it returns once they are durable.
func (s *EmbeddedStore) AddSignals(ctx context.Context, orgID string, signals []supplyplan.DemandSignal) ([]supplyplan.SignalWrite, error) {
	if err := validateSignals(orgID, signals); err != nil {
		return nil, err
	}
	if len(signals) == 0 {
		return []supplyplan.SignalWrite{}, nil
	}
	keys := make([]sigKey, len(signals))
	for i := range signals {
		keys[i] = keyOf(signals[i].SignalID)
	}
	r := &writeReq{buf: encodeSignals(make([]byte, 0, 64+len(signals)*48), orgID, signals), writes: make([]supplyplan.SignalWrite, 0, len(signals)), keys: keys}
	if err := s.submit(ctx, r); err != nil {
		return nil, err
	}
	return r.writes, nil
}

// submit hands r to the committer and waits for its outcome.
func (s *EmbeddedStore) submit(ctx context.Context, r *writeReq) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.done = make(chan error, 1)
	s.sendMu.RLock()
	if s.closed || !s.open.Load() {
		s.sendMu.RUnlock()
		return ErrStoreClosed
	}
	select {
	case s.reqs <- r: // blocks when the committer is behind: that is the backpressure
	case <-ctx.Done():
		s.sendMu.RUnlock()
		return ctx.Err()
	}
	s.sendMu.RUnlock()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		// The write may still land; it is not acknowledged.
		return ctx.Err()
	}
}

func (s *EmbeddedStore) commitLoop() {
	defer close(s.done)
	batch := make([]*writeReq, 0, 64)
	for {
		r, ok := <-s.reqs
		if !ok {
			return
		}
		batch = append(batch[:0], r)
		bytes := len(r.buf)
	drain:
		for bytes < s.cfg.MaxCommitBytes {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
				bytes += len(r.buf)
			default:
				break drain
			}
		}
		s.commit(batch)
		clear(batch)
		s.maybeCompact()
	}
}

// commit writes and syncs one batch, applies it to the index in log order, then acknowledges it.
func (s *EmbeddedStore) commit(batch []*writeReq) {
	err := s.failed
	if err == nil {
		off := s.size
		for _, r := range batch {
			var n int
			n, err = s.f.WriteAt(r.buf, off)
			off += int64(n)
			if err != nil {
				break
			}
		}
		if err == nil {
			err = fsutil.DataSync(s.f)
		}
		if err != nil {
			// Cut a partial write back; even so, never write again after a failed sync (Linux may
			// have dropped the dirty pages): the store needs a restart, which replays the file.
			_ = s.f.Truncate(s.size)
			s.failed = fmt.Errorf("write demand log: %w", err)
			s.log.Error("demand store: write failed; refusing further writes", "err", err)
			err = s.failed
		} else {
			s.logBytes.Add(off - s.size)
			s.size = off
		}
	}
	for _, r := range batch {
		if err == nil {
			if aerr := s.applyFrames(r.buf, &r.writes, r.keys); aerr != nil {
				s.failed = fmt.Errorf("apply demand record: %w", aerr)
				s.log.Error("demand store: applying a written record failed", "err", aerr)
				r.buf, r.keys = nil, nil
				r.done <- s.failed
				continue
			}
		}
		r.buf, r.keys = nil, nil
		r.done <- err
	}
}

// applyFrames applies every frame in buf (as written by encodeUpsert/encodeSignals); keys, when
// not nil, are the dedup keys of its signals in order (writeReq.keys).
func (s *EmbeddedStore) applyFrames(buf []byte, writes *[]supplyplan.SignalWrite, keys []sigKey) error {
	for len(buf) > 0 {
		if len(buf) < frameHeaderLen {
			return errCorrupt
		}
		n := int(uint32(buf[0]) | uint32(buf[1])<<8 | uint32(buf[2])<<16 | uint32(buf[3])<<24)
		if len(buf) < frameHeaderLen+n {
			return errCorrupt
		}
		if err := s.applyKeyed(buf[frameHeaderLen:frameHeaderLen+n], writes, &keys); err != nil {
			return err
		}
		buf = buf[frameHeaderLen+n:]
	}
	return nil
}

// tenantFor returns the tenant of org, creating it.
func (s *EmbeddedStore) tenantFor(org string) *tenant {
	s.mu.RLock()
	t := s.tenants[org]
	s.mu.RUnlock()
	if t != nil {
		return t
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t = s.tenants[org]; t == nil {
		t = newTenant()
		s.tenants[cloneString(org)] = t
	}
	return t
}

// tenant returns the tenant of org or nil.
func (s *EmbeddedStore) tenant(org string) *tenant {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tenants[org]
}

// apply applies one record payload to the index. For signals it appends what became of each to
// *writes when writes is not nil. The whole record is applied under the tenant's lock, so that a
// snapshot sees all of it or none of it.
func (s *EmbeddedStore) apply(p []byte, writes *[]supplyplan.SignalWrite) error {
	return s.applyKeyed(p, writes, nil)
}

// applyKeyed is apply with the dedup keys of a signals record's ids in *keys, when keys is not
// nil and holds them (it is advanced past them); else they are hashed here.
func (s *EmbeddedStore) applyKeyed(p []byte, writes *[]supplyplan.SignalWrite, keys *[]sigKey) error {
	d := dec{b: p}
	kind := d.byte()
	org := d.view()
	if d.err != nil || org == "" {
		return errCorrupt
	}
	t := s.tenantFor(org)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch kind {
	case recUpsert:
		// Consecutive rows of one series (rowSameKey) are applied together: one layout per run.
		n := d.count()
		si := int32(-1)
		run := t.run[:0]
		for i := 0; i < n && d.err == nil; i++ {
			flags := d.byte()
			if flags&rowSameKey == 0 {
				key := supplyplan.DemandKey{SKU: d.view(), Location: d.view(), Channel: d.view()}
				if d.err != nil {
					break
				}
				if len(run) > 0 {
					t.upsert(si, run)
					run = run[:0]
				}
				si = t.seriesFor(key)
			} else if si < 0 {
				return errCorrupt
			}
			c := cellv{day: d.day(), actual: d.float(), forecast: d.float(), stockout: flags&rowStockout != 0}
			if d.err != nil {
				break
			}
			run = append(run, c)
		}
		if len(run) > 0 {
			t.upsert(si, run)
		}
		t.run = run[:0]
	case recSignals:
		// Every signal of the record is judged against the window in force when it starts (the
		// ClickHouse store judges a call's records the same way), and the window moves after it.
		n := d.count()
		floor, bounded := t.sigFloor()
		newest, has := t.sigNewest, t.sigHasNewest
		var known []sigKey // the record's keys, hashed by the caller
		if keys != nil && len(*keys) >= n && d.err == nil {
			known, *keys = (*keys)[:n], (*keys)[n:]
		}
		for i := 0; i < n && d.err == nil; i++ {
			if known != nil && i%sigTouchAhead == 0 {
				t.sigTouched += t.signals.touch(known[i:min(i+sigTouchAhead, n)])
			}
			id := d.view()
			key := supplyplan.DemandKey{SKU: d.view(), Location: d.view(), Channel: d.view()}
			day, qty := d.day(), d.float()
			if d.err != nil {
				break
			}
			var k sigKey
			if known != nil {
				k = known[i]
			} else {
				k = keyOf(id)
			}
			w := supplyplan.SignalWritten
			switch {
			case bounded && day < floor:
				w = supplyplan.SignalTooLate
			// One probe of the dedup set: the insert tells a new id (a lookup then an insert cost
			// two, and the set is far larger than the CPU caches).
			case !t.signals.add(k, day):
				w = supplyplan.SignalSeen
			}
			if writes != nil {
				*writes = append(*writes, w)
			}
			if w != supplyplan.SignalWritten {
				continue
			}
			t.addSignal(t.seriesFor(key), day, qty)
			if !has || day > newest {
				newest, has = day, true
			}
		}
		if d.err == nil && has {
			t.moveSignalWindow(newest)
		}
	case recCells: // snapshots of earlier versions: a series' cells, each with its own flags
		ns := d.count()
		for i := 0; i < ns && d.err == nil; i++ {
			key := supplyplan.DemandKey{SKU: d.view(), Location: d.view(), Channel: d.view()}
			nc := d.count()
			if d.err != nil {
				break
			}
			if nc > maxCells {
				return errCorrupt
			}
			cells := t.scratch[:0]
			for j := 0; j < nc && d.err == nil; j++ {
				flags := d.byte()
				c := cellv{day: d.day(), stockout: flags&oldCellStockout != 0}
				if flags&oldCellImported != 0 {
					c.actual, c.forecast = d.float(), d.float()
				}
				if flags&oldCellSignals != 0 {
					c.signals = d.float()
				}
				if n := len(cells); n > 0 && cells[n-1].day >= c.day {
					return errCorrupt
				}
				cells = append(cells, c)
			}
			if d.err != nil {
				break
			}
			t.mut(t.seriesFor(key)).layout(cells, 0)
			t.scratch = cells[:0]
		}
	case recSeries:
		ns := d.count()
		for i := 0; i < ns && d.err == nil; i++ {
			key := supplyplan.DemandKey{SKU: d.view(), Location: d.view(), Channel: d.view()}
			s, err := decodeSeries(&d)
			if err != nil {
				return err
			}
			dst := t.mut(t.seriesFor(key))
			s.sku, s.loc, s.ch, s.next = dst.sku, dst.loc, dst.ch, dst.next
			*dst = s
		}
	case recSigIDs: // snapshots of earlier versions: no weeks (see sigSet.prune)
		n := d.count()
		for i := 0; i < n && d.err == nil; i++ {
			id := d.view()
			if d.err == nil {
				t.signals.add(keyOf(id), sigDayUnknown)
			}
		}
	case recSigKeys: // snapshots of earlier versions: no weeks
		n := d.count()
		for i := 0; i < n && d.err == nil; i++ {
			k := d.sigKey()
			if d.err == nil {
				t.signals.add(k, sigDayUnknown)
			}
		}
	case recSigKeyDays:
		if d.byte() == 1 {
			if day := d.day(); d.err == nil && (!t.sigHasNewest || day > t.sigNewest) {
				t.sigNewest, t.sigHasNewest = day, true
			}
		}
		n := d.count()
		for i := 0; i < n && d.err == nil; i++ {
			k := d.sigKey()
			day := d.day()
			if d.err == nil {
				t.signals.add(k, day)
			}
		}
	default:
		return fmt.Errorf("%w: unknown kind %d", errCorrupt, kind)
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(d.b))
	}
	return nil
}

// reader returns the tenant of org for a read, nil when it has no data.
func (s *EmbeddedStore) reader(orgID string) (*tenant, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	if !s.open.Load() {
		return nil, ErrStoreClosed
	}
	return s.tenant(orgID), nil
}

// Series returns the weeks of one series in [from, to], oldest first.
func (s *EmbeddedStore) Series(ctx context.Context, orgID string, key supplyplan.DemandKey, from, to time.Time) ([]supplyplan.WeekValue, error) {
	t, err := s.reader(orgID)
	if t == nil {
		return nil, err
	}
	lo, hi := dayRange(from, to)
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.read(normKey(key), lo, hi), nil
}

// SeriesBatch returns Series for every key that has data in [from, to]. Each series is read
// consistently; a write may land between two series.
func (s *EmbeddedStore) SeriesBatch(ctx context.Context, orgID string, keys []supplyplan.DemandKey, from, to time.Time) (map[supplyplan.DemandKey][]supplyplan.WeekValue, error) {
	t, err := s.reader(orgID)
	if err != nil {
		return nil, err
	}
	out := make(map[supplyplan.DemandKey][]supplyplan.WeekValue, len(keys))
	if t == nil {
		return out, nil
	}
	lo, hi := dayRange(from, to)
	// The lock is taken per chunk of keys: a read of every series of a big tenant must not hold
	// off the committer (and with it every tenant's writes) for its whole duration.
	const chunk = 512
	for len(keys) > 0 {
		n := min(len(keys), chunk)
		t.mu.RLock()
		for _, k := range keys[:n] {
			if v := t.read(normKey(k), lo, hi); len(v) > 0 {
				out[k] = v
			}
		}
		t.mu.RUnlock()
		keys = keys[n:]
	}
	return out, nil
}

// Keys lists the organization's series, sorted by sku, location, channel.
func (s *EmbeddedStore) Keys(ctx context.Context, orgID string) ([]supplyplan.DemandKey, error) {
	t, err := s.reader(orgID)
	if t == nil {
		return nil, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.keys(), nil
}

// KeyPage pages the organization's series from their kept order, without listing them.
func (s *EmbeddedStore) KeyPage(ctx context.Context, orgID string, f supplyplan.DemandKeyFilter, offset, limit int) ([]supplyplan.DemandKey, int, error) {
	t, err := s.reader(orgID)
	if t == nil {
		return []supplyplan.DemandKey{}, 0, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	keys, total := t.keyPage(f, offset, limit)
	return keys, total, nil
}

// Aggregate sums actual and forecasted demand over the query's weeks, grouped as asked.
func (s *EmbeddedStore) Aggregate(ctx context.Context, orgID string, q supplyplan.DemandQuery) ([]supplyplan.DemandAggregate, error) {
	group, err := parseGroupBy(q.GroupBy)
	if err != nil {
		return nil, err
	}
	t, err := s.reader(orgID)
	if err != nil {
		return nil, err
	}
	if t == nil {
		if group == 0 {
			return []supplyplan.DemandAggregate{{}}, nil
		}
		return []supplyplan.DemandAggregate{}, nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.aggregate(q, group), nil
}

var _ supplyplan.DemandStore = (*EmbeddedStore)(nil)
