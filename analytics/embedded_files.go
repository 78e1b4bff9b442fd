package analytics

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/supplyplan/supplyplan/internal/fsutil"
)

func logName(gen uint64) string  { return fmt.Sprintf("log-%020d.wal", gen) }
func snapName(gen uint64) string { return fmt.Sprintf("snapshot-%020d.snap", gen) }

// parseGen returns the generation of a file named prefix<20 digits>suffix.
func parseGen(name, prefix, suffix string) (uint64, bool) {
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	g, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, prefix), suffix), 10, 64)
	return g, err == nil
}

type dirFiles struct {
	logs, snaps []uint64 // sorted generations
	tmps        []string
}

func listDir(dir string) (dirFiles, error) {
	var df dirFiles
	ents, err := os.ReadDir(dir)
	if err != nil {
		return df, fmt.Errorf("list demand dir: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if g, ok := parseGen(name, "log-", ".wal"); ok {
			df.logs = append(df.logs, g)
		} else if g, ok := parseGen(name, "snapshot-", ".snap"); ok {
			df.snaps = append(df.snaps, g)
		} else if strings.HasSuffix(name, ".tmp") {
			df.tmps = append(df.tmps, name)
		}
	}
	slices.Sort(df.logs)
	slices.Sort(df.snaps)
	return df, nil
}

// recover loads the newest snapshot, replays the logs after it, cuts a torn tail of the newest log,
// removes what a crash left behind and opens the newest log for appending.
func (s *EmbeddedStore) recover() error {
	dir := s.cfg.Dir
	df, err := listDir(dir)
	if err != nil {
		return err
	}
	for _, name := range df.tmps {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("remove leftover %s: %w", name, err)
		}
	}
	var snapGen uint64
	if n := len(df.snaps); n > 0 {
		snapGen = df.snaps[n-1]
		size, err := s.loadSnapshot(filepath.Join(dir, snapName(snapGen)))
		if err != nil {
			return err
		}
		s.snapBytes.Store(size)
	}
	// Files that the newest snapshot covers are leftovers of a compaction cut short by a crash.
	for _, g := range df.snaps[:max(len(df.snaps)-1, 0)] {
		if err := os.Remove(filepath.Join(dir, snapName(g))); err != nil {
			return fmt.Errorf("remove old snapshot: %w", err)
		}
	}
	var live []uint64
	for _, g := range df.logs {
		if g < snapGen {
			if err := os.Remove(filepath.Join(dir, logName(g))); err != nil {
				return fmt.Errorf("remove old log: %w", err)
			}
			continue
		}
		live = append(live, g)
	}
	if snapGen > 0 && (len(live) == 0 || live[0] != snapGen) {
		return fmt.Errorf("open demand store: %s has no %s", snapName(snapGen), logName(snapGen))
	}
	for i, g := range live {
		newest := i == len(live)-1
		size, err := s.replayLog(filepath.Join(dir, logName(g)), newest)
		if err != nil {
			return err
		}
		s.logBytes.Add(size)
		if newest {
			s.gen, s.size = g, size
		}
	}
	if len(live) == 0 {
		s.gen = max(snapGen, 1)
		f, err := os.OpenFile(filepath.Join(dir, logName(s.gen)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("create demand log: %w", err)
		}
		s.f = f
		return fsutil.SyncDir(dir)
	}
	f, err := os.OpenFile(filepath.Join(dir, logName(s.gen)), os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("open demand log: %w", err)
	}
	s.f = f
	return nil
}

// replayLog applies every record of a log and returns its good size. A torn tail is cut when the log
// is the newest (a crash during a write) and is an error otherwise.
func (s *EmbeddedStore) replayLog(path string, newest bool) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open demand log: %w", err)
	}
	defer f.Close()
	fr := newFrameReader(f)
	records := 0
	for {
		p, err := fr.next()
		if err == io.EOF {
			return fr.off, nil
		}
		if errors.Is(err, errTorn) {
			if !newest {
				return 0, fmt.Errorf("open demand store: %s is damaged at offset %d (not the newest log)",
					filepath.Base(path), fr.off)
			}
			st, serr := f.Stat()
			if serr != nil {
				return 0, fmt.Errorf("stat demand log: %w", serr)
			}
			s.log.Warn("demand store: cutting torn tail", "file", filepath.Base(path), "offset", fr.off,
				"bytes", st.Size()-fr.off)
			if err := os.Truncate(path, fr.off); err != nil {
				return 0, fmt.Errorf("truncate torn tail: %w", err)
			}
			return fr.off, nil
		}
		if err != nil {
			return 0, err
		}
		if len(p) > 0 && (p[0] == recCells || p[0] == recSeries || p[0] == recSigIDs || p[0] == recSigKeys || p[0] == recSigKeyDays || p[0] == recEnd) {
			return 0, fmt.Errorf("open demand store: %s holds a snapshot record at offset %d", filepath.Base(path), fr.off)
		}
		if err := s.apply(p, nil); err != nil {
			return 0, fmt.Errorf("replay %s record %d: %w", filepath.Base(path), records, err)
		}
		records++
	}
}

// loadSnapshot applies a snapshot file; it must end with its end record.
func (s *EmbeddedStore) loadSnapshot(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open demand snapshot: %w", err)
	}
	defer f.Close()
	fr := newFrameReader(f)
	for {
		p, err := fr.next()
		if err == io.EOF || errors.Is(err, errTorn) {
			return 0, fmt.Errorf("open demand store: %s is incomplete or damaged at offset %d", filepath.Base(path), fr.off)
		}
		if err != nil {
			return 0, err
		}
		if len(p) == 1 && p[0] == recEnd {
			return fr.off, nil
		}
		if p[0] != recCells && p[0] != recSeries && p[0] != recSigIDs && p[0] != recSigKeys && p[0] != recSigKeyDays {
			return 0, fmt.Errorf("open demand store: %s holds a log record", filepath.Base(path))
		}
		if err := s.apply(p, nil); err != nil {
			return 0, fmt.Errorf("load %s: %w", filepath.Base(path), err)
		}
	}
}

// maybeCompact starts a compaction when the log has grown past the threshold. It runs on the
// committer between batches: the rotation to a new log happens there, the snapshot is written by
// another goroutine while writes go on.
func (s *EmbeddedStore) maybeCompact() {
	logBytes := s.logBytes.Load()
	if s.failed != nil || s.compacting.Load() || logBytes < s.cfg.CompactBytes ||
		logBytes < s.snapBytes.Load() || logBytes < s.compactAfter.Load() {
		return
	}
	gen := s.gen + 1
	f, err := os.OpenFile(filepath.Join(s.cfg.Dir, logName(gen)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		err = fsutil.SyncDir(s.cfg.Dir)
		if err != nil {
			_ = f.Close()
			_ = os.Remove(filepath.Join(s.cfg.Dir, logName(gen)))
		}
	}
	if err != nil {
		s.log.Error("demand store: cannot start a new log; compaction postponed", "err", err)
		s.compactAfter.Store(logBytes + s.cfg.CompactBytes)
		return
	}
	_ = s.f.Close() // synced by the last commit
	s.f, s.gen, s.size = f, gen, 0
	s.compacting.Store(true)
	s.compactDone.Add(1)
	go func() {
		defer s.compactDone.Done()
		defer s.compacting.Store(false)
		if err := s.compact(gen); err != nil {
			s.log.Error("demand store: compaction failed; will retry later", "err", err)
			s.compactAfter.Store(s.logBytes.Load() + s.cfg.CompactBytes)
		}
	}()
}

var errCompactionStopped = errors.New("compaction stopped by Close")

// compact writes snapshot-<gen> and deletes the files it replaces. The logs before gen are complete
// and synced, and the index holds all of them; the snapshot copies each organization under its
// lock, so it holds, per organization, everything before gen plus a prefix of that organization's
// records in log-<gen>. Replaying log-<gen> in full on top of it is therefore still exact: an upsert
// applied twice sets the same values, and a signal already in the snapshot has its id there too,
// so its second application is a duplicate that changes nothing.
func (s *EmbeddedStore) compact(gen uint64) error {
	start := time.Now()
	dir := s.cfg.Dir
	s.mu.RLock()
	orgs := make([]string, 0, len(s.tenants))
	for org := range s.tenants {
		orgs = append(orgs, org)
	}
	s.mu.RUnlock()
	slices.Sort(orgs)
	var size int64 // bytes of the snapshot
	err := fsutil.WriteFile(filepath.Join(dir, snapName(gen)), 0o600, func(f io.Writer) error {
		w := bufio.NewWriterSize(countingWriter{f, &size}, 1<<20)
		var buf []byte
		var err error
		for _, org := range orgs {
			select {
			case <-s.stopCompaction:
				return errCompactionStopped
			default:
			}
			if buf, err = s.writeTenant(w, buf, org, s.tenant(org)); err != nil {
				return err
			}
		}
		buf, start0 := beginFrame(buf[:0])
		buf = append(buf, recEnd)
		if _, err := w.Write(endFrame(buf, start0)); err != nil {
			return err
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("write demand snapshot: %w", err)
	}
	// The snapshot is in place: the files before it are no longer needed.
	df, err := listDir(dir)
	if err != nil {
		return err
	}
	var freed int64
	for _, g := range df.logs {
		if g < gen {
			p := filepath.Join(dir, logName(g))
			if st, err := os.Stat(p); err == nil {
				freed += st.Size()
			}
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("remove compacted log: %w", err)
			}
		}
	}
	for _, g := range df.snaps {
		if g < gen {
			if err := os.Remove(filepath.Join(dir, snapName(g))); err != nil {
				return fmt.Errorf("remove old snapshot: %w", err)
			}
		}
	}
	s.logBytes.Add(-freed)
	s.snapBytes.Store(size)
	s.compactions.Add(1)
	s.log.Info("demand store: compacted", "generation", gen, "snapshot_bytes", size,
		"log_bytes_freed", freed, "took", time.Since(start))
	return nil
}

// writeTenant writes one organization as snapshot frames, as of one instant: under its lock it
// takes a view of the series pages (the slices, not the series) and the signal keys, then encodes
// the view without the lock while writes go on. The tenant is frozen meanwhile: a write copies a
// page of the view before changing a series in it, and a series' data before changing it in
// place (tenant.mut, series.setInPlace), so the view never changes under the encoder.
func (s *EmbeddedStore) writeTenant(w io.Writer, buf []byte, org string, t *tenant) ([]byte, error) {
	t.mu.Lock()
	t.epoch++
	t.frozen = true
	view := make([][]series, len(t.pages))
	for i := range t.pages {
		view[i] = t.pages[i].s
	}
	names := t.names[:len(t.names):len(t.names)]
	ids := t.signals.appendTo(make([]sigSlot, 0, t.signals.len()))
	newest, hasNewest := t.sigNewest, t.sigHasNewest
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.frozen = false
		t.mu.Unlock()
	}()

	const frameTarget = 1 << 20
	write := func(b []byte) error {
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("write demand snapshot: %w", err)
		}
		return nil
	}
	// Frames of about frameTarget bytes: [recSeries, org, count, series...]; the count is written
	// once the frame is full, so the series are encoded straight from the view.
	var body []byte
	count := 0
	flush := func() error {
		if count == 0 {
			return nil
		}
		var start int
		buf, start = beginFrame(buf[:0])
		buf = append(buf, recSeries)
		buf = putString(buf, org)
		buf = binary.AppendUvarint(buf, uint64(count))
		buf = append(buf, body...)
		body, count = body[:0], 0
		return write(endFrame(buf, start))
	}
	for _, page := range view {
		for i := range page {
			sr := &page[i]
			if sr.n == 0 {
				continue
			}
			body = putString(body, names[sr.sku])
			body = putString(body, names[sr.loc])
			body = putString(body, names[sr.ch])
			body = encodeSeries(body, sr)
			count++
			if len(body) >= frameTarget {
				if err := flush(); err != nil {
					return buf, err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return buf, err
	}
	for first := true; first && hasNewest || len(ids) > 0; first = false {
		n := min(len(ids), frameTarget/(len(sigKey{})+5))
		var start int
		buf, start = beginFrame(buf[:0])
		buf = append(buf, recSigKeyDays)
		buf = putString(buf, org)
		if hasNewest {
			buf = append(buf, 1)
			buf = binary.AppendVarint(buf, int64(newest))
		} else {
			buf = append(buf, 0)
		}
		buf = binary.AppendUvarint(buf, uint64(n))
		for _, sl := range ids[:n] {
			k := sl.key()
			buf = append(buf, k[:]...)
			buf = binary.AppendVarint(buf, int64(sl.day()))
		}
		if err := write(endFrame(buf, start)); err != nil {
			return buf, err
		}
		ids = ids[n:]
	}
	return buf, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n *int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	*c.n += int64(n)
	return n, err
}
