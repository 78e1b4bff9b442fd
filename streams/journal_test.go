package streams

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustJournal(tb testing.TB, dir string, segBytes int64) *Journal {
	tb.Helper()
	j, err := OpenJournal(JournalConfig{Dir: dir, SegmentBytes: segBytes})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = j.Close() })
	return j
}

func appendSync(tb testing.TB, j *Journal, stream string, seq uint64, payload string) {
	tb.Helper()
	ch := make(chan error, 1)
	j.Append(stream, seq, []byte(payload), func(err error) { ch <- err })
	if err := <-ch; err != nil {
		tb.Fatalf("append %d: %v", seq, err)
	}
}

func loadAll(tb testing.TB, j *Journal, stream string) (snap string, entries []string, res LoadResult) {
	tb.Helper()
	res, err := j.Load(stream, func(seq uint64, data []byte) error {
		snap = fmt.Sprintf("%d:%s", seq, data)
		return nil
	}, func(seq uint64, payload []byte) error {
		entries = append(entries, fmt.Sprintf("%d:%s", seq, payload))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return snap, entries, res
}

func TestJournalAppendAndLoad(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 0)
	for i := uint64(1); i <= 5; i++ {
		appendSync(t, j, "a", i, fmt.Sprintf("e%d", i))
	}
	appendSync(t, j, "b", 1, "other")
	_ = j.Close()

	j2 := mustJournal(t, dir, 0)
	_, got, res := loadAll(t, j2, "a")
	want := []string{"1:e1", "2:e2", "3:e3", "4:e4", "5:e5"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if res.LastSeq != 5 {
		t.Fatalf("LastSeq = %d, want 5", res.LastSeq)
	}
	streams, _ := j2.Streams()
	if len(streams) != 2 {
		t.Fatalf("streams = %v, want a and b", streams)
	}
}

func TestJournalTornTailIsCut(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 0)
	appendSync(t, j, "a", 1, "one")
	appendSync(t, j, "a", 2, "two")
	_ = j.Close()

	path := filepath.Join(dir, "a", segmentName(1))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A frame header promising more bytes than follow: what a crash mid-write leaves.
	if _, err := f.Write([]byte{50, 0, 0, 0, 1, 2, 3, 4, 3, 0, 0, 0, 0, 0, 0, 0, 'x'}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	j2 := mustJournal(t, dir, 0)
	_, got, res := loadAll(t, j2, "a")
	if len(got) != 2 || res.Truncated != 17 {
		t.Fatalf("got %v truncated %d, want 2 entries and 17 bytes cut", got, res.Truncated)
	}
	appendSync(t, j2, "a", 3, "three")
	_ = j2.Close()
	j3 := mustJournal(t, dir, 0)
	_, got, _ = loadAll(t, j3, "a")
	if fmt.Sprint(got) != "[1:one 2:two 3:three]" {
		t.Fatalf("after repair got %v", got)
	}
}

func TestJournalCorruptMiddleSegmentRefusesToLoad(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 64) // tiny segments: one entry each
	for i := uint64(1); i <= 3; i++ {
		appendSync(t, j, "a", i, "0123456789012345678901234567890123456789012345678")
	}
	_ = j.Close()
	segs, _ := listSegments(filepath.Join(dir, "a"))
	if len(segs) < 2 {
		t.Fatalf("want several segments, got %v", segs)
	}
	path := filepath.Join(dir, "a", segmentName(segs[0]))
	data, _ := os.ReadFile(path)
	data[len(data)-1] ^= 0xff
	_ = os.WriteFile(path, data, 0o600)
	j2 := mustJournal(t, dir, 64)
	if _, err := j2.Load("a", func(uint64, []byte) error { return nil }, func(uint64, []byte) error { return nil }); err == nil {
		t.Fatal("load of a damaged older segment succeeded")
	}
}

func TestJournalSnapshotDropsOldSegments(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 1<<20)
	for i := uint64(1); i <= 10; i++ {
		appendSync(t, j, "a", i, fmt.Sprintf("e%d", i))
	}
	if err := j.SaveSnapshot("a", 10, []byte("state@10")); err != nil {
		t.Fatal(err)
	}
	for i := uint64(11); i <= 12; i++ {
		appendSync(t, j, "a", i, fmt.Sprintf("e%d", i))
	}
	if err := j.SaveSnapshot("a", 12, []byte("state@12")); err != nil {
		t.Fatal(err)
	}
	appendSync(t, j, "a", 13, "e13")
	_ = j.Close()

	segs, _ := listSegments(filepath.Join(dir, "a"))
	if len(segs) != 1 || segs[0] != 13 {
		t.Fatalf("segments after two snapshots = %v, want only the one starting at 13", segs)
	}
	j2 := mustJournal(t, dir, 1<<20)
	snap, got, res := loadAll(t, j2, "a")
	if snap != "12:state@12" || fmt.Sprint(got) != "[13:e13]" || res.LastSeq != 13 {
		t.Fatalf("snap %q entries %v last %d", snap, got, res.LastSeq)
	}
}

// A snapshot written as a stream (in pieces larger and smaller than the write buffer) loads as the
// bytes written, with its checksum; a failed stream leaves the snapshot before it in place.
func TestJournalSnapshotStream(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 1<<20)
	appendSync(t, j, "a", 1, "e1")
	var want bytes.Buffer
	for i := range 40_000 {
		fmt.Fprintf(&want, "piece %d;", i)
		if i%10_000 == 0 {
			want.Write(bytes.Repeat([]byte{'x'}, 3*snapshotWriteBuffer/2)) // one piece beyond the buffer
		}
	}
	data := want.Bytes()
	size, err := j.SaveSnapshotStream("a", 1, func(w *bufio.Writer) error {
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+len(rest)%7919)
			if _, err := w.Write(rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
	if err != nil || size != len(data) {
		t.Fatalf("SaveSnapshotStream: size %d (want %d), %v", size, len(data), err)
	}
	appendSync(t, j, "a", 2, "e2")
	if _, err := j.SaveSnapshotStream("a", 2, func(w *bufio.Writer) error {
		_, _ = w.WriteString("half a snapshot")
		return errors.New("encoding failed")
	}); err == nil {
		t.Fatal("a failed snapshot stream was reported saved")
	}
	_ = j.Close()
	snap, entries, res := loadAll(t, mustJournal(t, dir, 1<<20), "a")
	if snap != "1:"+string(data) || fmt.Sprint(entries) != "[2:e2]" || res.SnapshotSeq != 1 {
		t.Fatalf("loaded a snapshot of %d bytes (want 1:<%d bytes>, equal: %v), entries %v, snapshot seq %d", len(snap), len(data), snap == "1:"+string(data), entries, res.SnapshotSeq)
	}
}

func TestJournalGroupCommitConcurrent(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 1<<16)
	const streams, per = 8, 300
	var wg sync.WaitGroup
	for s := 0; s < streams; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("s%d", s)
			var pending sync.WaitGroup
			for i := 1; i <= per; i++ {
				pending.Add(1)
				j.Append(name, uint64(i), []byte(fmt.Sprintf("%s-%d", name, i)), func(err error) {
					if err != nil {
						t.Error(err)
					}
					pending.Done()
				})
			}
			pending.Wait()
		}()
	}
	wg.Wait()
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = j.Close()
	j2 := mustJournal(t, dir, 1<<16)
	for s := 0; s < streams; s++ {
		_, got, _ := loadAll(t, j2, fmt.Sprintf("s%d", s))
		if len(got) != per {
			t.Fatalf("stream s%d has %d entries, want %d", s, len(got), per)
		}
		for i, e := range got {
			if want := fmt.Sprintf("%d:s%d-%d", i+1, s, i+1); e != want {
				t.Fatalf("entry %d = %q, want %q", i, e, want)
			}
		}
	}
}

func TestJournalAppendAfterCloseFails(t *testing.T) {
	j := mustJournal(t, t.TempDir(), 0)
	_ = j.Close()
	ch := make(chan error, 1)
	j.Append("a", 1, []byte("x"), func(err error) { ch <- err })
	if err := <-ch; err != ErrClosed {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

func BenchmarkJournalAppendParallel(b *testing.B) {
	j := mustJournal(b, b.TempDir(), 0)
	payload := make([]byte, 300)
	var seq uint64
	var mu sync.Mutex
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ch := make(chan error, 1)
		for pb.Next() {
			mu.Lock()
			seq++
			s := seq
			j.Append("bench", s, payload, func(err error) { ch <- err })
			mu.Unlock()
			if err := <-ch; err != nil {
				b.Fatal(err)
			}
		}
	})
}

// gather waits for the writers of the previous commit (want), at most wait; a lone writer does not
// wait at all.
func TestJournalGatherWaitsForThePreviousGroup(t *testing.T) {
	newJ := func() *Journal { return &Journal{cfg: JournalConfig{MaxBatch: 8192}, reqs: make(chan jreq)} }
	req := func(seq uint64) jreq { return jreq{kind: reqAppend, stream: "s", seq: seq} }
	run := func(j *Journal, want int, wait time.Duration) <-chan []jreq {
		out := make(chan []jreq, 1)
		go func() { out <- j.gather([]jreq{req(1)}, want, wait) }()
		return out
	}

	j := newJ()
	select {
	case b := <-run(j, 1, time.Hour):
		if len(b) != 1 {
			t.Fatalf("a lone writer's batch holds %d requests", len(b))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a lone writer waited")
	}

	j = newJ()
	out := run(j, 3, time.Hour)
	go func() { // an unbuffered queue: each send is taken by gather, or by nobody once it returned
		for _, r := range []jreq{req(2), req(3)} {
			select {
			case j.reqs <- r:
			case <-time.After(5 * time.Second):
				return
			}
		}
	}()
	if b := <-out; len(b) != 3 {
		t.Fatalf("the batch holds %d requests, want the 3 writers of the previous commit", len(b))
	}

	j = newJ()
	if b := <-run(j, 3, 20*time.Millisecond); len(b) != 1 { // nobody comes: it stops waiting
		t.Fatalf("the batch holds %d requests", len(b))
	}

	j = newJ()
	out = run(j, 3, time.Hour)
	close(j.reqs)
	if b := <-out; len(b) != 1 {
		t.Fatalf("the batch holds %d requests after the queue closed", len(b))
	}
}

// An entry that fails takes the entries appended after it down with it (they were written by a
// state that had applied it) until its writer appends its seq again; the log never has a gap.
func TestJournalFailedEntryRefusesTheOnesAfterIt(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 0)
	appendSync(t, j, "s", 1, "one")
	appendAsync := func(seq uint64, payload string) chan error {
		ch := make(chan error, 1)
		j.Append("s", seq, []byte(payload), func(err error) { ch <- err })
		return ch
	}
	fail := func(string) error { return errors.New("disk on fire") }
	j.failWrite.Store(&fail)
	if err := <-appendAsync(2, "two"); err == nil {
		t.Fatal("append 2: no error from the failing write")
	}
	j.failWrite.Store(nil)
	if err := <-appendAsync(3, "three"); err == nil {
		t.Fatal("append 3 after 2 failed: no error, the log would miss 2")
	}
	appendSync(t, j, "s", 2, "two again")
	appendSync(t, j, "s", 3, "three again")
	appendSync(t, j, "other", 7, "another stream is not held back")
	_, got, _ := loadAll(t, j, "s")
	if want := []string{"1:one", "2:two again", "3:three again"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("entries %q, want %q", got, want)
	}
}

// A snapshot's roll that reaches the committer in the same batch as the snapshot's own last
// entry and entries after it: the entries after it stay in the segment being rolled (a segment
// with writes pending is not rolled mid-batch), so that segment is not covered by the snapshot
// and must not be deleted. The committer is held while the three are queued, so that it gathers
// them into one batch (what a slow commit under load does).
func TestJournalSnapshotRollInTheBatchOfLaterEntries(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 1<<20)
	for i := uint64(1); i <= 4; i++ {
		appendSync(t, j, "a", i, fmt.Sprintf("e%d", i))
	}
	held, release := make(chan struct{}), make(chan struct{})
	j.Append("b", 1, []byte("x"), func(error) { close(held); <-release }) // holds the committer
	<-held
	appendAsync := func(seq uint64) chan error {
		ch := make(chan error, 1)
		j.Append("a", seq, []byte(fmt.Sprintf("e%d", seq)), func(err error) { ch <- err })
		return ch
	}
	e5 := appendAsync(5)
	snapped := make(chan error, 1)
	go func() { snapped <- j.SaveSnapshot("a", 5, []byte("state@5")) }()
	for deadline := time.Now().Add(10 * time.Second); len(j.reqs) < 2; { // entry 5 and the roll
		if time.Now().After(deadline) {
			t.Fatal("the snapshot's roll never reached the queue")
		}
		time.Sleep(time.Millisecond)
	}
	e6 := appendAsync(6)
	close(release)
	for _, ch := range []chan error{e5, e6, snapped} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	appendSync(t, j, "a", 7, "e7")
	_ = j.Close()

	j2 := mustJournal(t, dir, 1<<20)
	snap, got, res := loadAll(t, j2, "a")
	if snap != "5:state@5" || fmt.Sprint(got) != "[6:e6 7:e7]" || res.LastSeq != 7 {
		t.Fatalf("snap %q entries %v last %d: entry 6 was acknowledged", snap, got, res.LastSeq)
	}
}

// Entries missing between two others make the load fail (naming them) rather than rebuild a state
// without them.
func TestJournalGapRefusesToLoad(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 0)
	appendSync(t, j, "a", 1, "one")
	appendSync(t, j, "a", 2, "two")
	_ = j.Close()
	j2 := mustJournal(t, dir, 0)
	appendSync(t, j2, "a", 4, "four") // a fresh journal takes any first seq: 3 never written
	_ = j2.Close()
	j3 := mustJournal(t, dir, 0)
	_, err := j3.Load("a", func(uint64, []byte) error { return nil }, func(uint64, []byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "entry 4 follows entry 2") {
		t.Fatalf("load over a gap: %v", err)
	}
}

// copyDir copies the stream directories of a journal that is still open: what a kill -9 leaves.
func copyDir(tb testing.TB, src string) string {
	tb.Helper()
	dst := tb.TempDir()
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return dst
}

// A segment is grown ahead of its entries with zeros (preallocate). Left so by a crash, the zeros
// are the end of the segment, not damage: every entry loads, nothing is cut, and the next entries
// overwrite them. A clean close cuts them off.
func TestJournalPreallocatedTail(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 0)
	for i := uint64(1); i <= 3; i++ {
		appendSync(t, j, "a", i, fmt.Sprintf("e%d", i))
	}
	path := filepath.Join("a", segmentName(1))
	frames := int64(3 * (frameHeader + 2))
	if st, err := os.Stat(filepath.Join(dir, path)); err != nil || st.Size() != frameHeader+2+preallocMin {
		t.Fatalf("open segment: %v, %v bytes, want the first entry and %d written ahead after it", err, st.Size(), preallocMin)
	}
	crashed := copyDir(t, dir)

	j2 := mustJournal(t, crashed, 0)
	_, got, res := loadAll(t, j2, "a")
	if fmt.Sprint(got) != "[1:e1 2:e2 3:e3]" || res.Truncated != 0 {
		t.Fatalf("after a crash got %v, %d bytes cut; want the three entries and nothing cut", got, res.Truncated)
	}
	appendSync(t, j2, "a", 4, "e4")
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(crashed, path)); err != nil || st.Size() != frames+frameHeader+2 {
		t.Fatalf("closed segment: %v, %v bytes, want %d (the zeros cut)", err, st.Size(), frames+frameHeader+2)
	}
	_, got, _ = loadAll(t, mustJournal(t, crashed, 0), "a")
	if fmt.Sprint(got) != "[1:e1 2:e2 3:e3 4:e4]" {
		t.Fatalf("after the restart got %v", got)
	}

	// A frame torn inside the zeros is cut as any torn tail is.
	crashed = copyDir(t, dir)
	f, err := os.OpenFile(filepath.Join(crashed, path), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{50, 0, 0, 0, 1, 2, 3, 4, 4, 0, 0, 0, 0, 0, 0, 0, 'x'}, frames); err != nil {
		t.Fatal(err)
	}
	f.Close()
	j3 := mustJournal(t, crashed, 0)
	_, got, res = loadAll(t, j3, "a")
	if want := frameHeader + 2 + preallocMin - frames; fmt.Sprint(got) != "[1:e1 2:e2 3:e3]" || res.Truncated != want {
		t.Fatalf("torn frame in the zeros: got %v, %d bytes cut; want the three entries and %d cut", got, res.Truncated, want)
	}
	appendSync(t, j3, "a", 4, "e4")
	_ = j3.Close()
	_, got, _ = loadAll(t, mustJournal(t, crashed, 0), "a")
	if fmt.Sprint(got) != "[1:e1 2:e2 3:e3 4:e4]" {
		t.Fatalf("after the repair got %v", got)
	}

	// Appending without a Load (which the actors never do) finds the entries' end in the file.
	crashed = copyDir(t, dir)
	j4 := mustJournal(t, crashed, 0)
	appendSync(t, j4, "a", 4, "e4")
	_ = j4.Close()
	_, got, _ = loadAll(t, mustJournal(t, crashed, 0), "a")
	if fmt.Sprint(got) != "[1:e1 2:e2 3:e3 4:e4]" {
		t.Fatalf("append without a load: got %v", got)
	}
}

// Segments grow ahead by their own size, from preallocMin up to preallocMax, never past the size
// at which they roll; a rolled segment keeps only its entries.
func TestJournalPreallocationGrowsWithTheSegment(t *testing.T) {
	dir := t.TempDir()
	j := mustJournal(t, dir, 3<<20)
	payload := strings.Repeat("x", 100<<10-frameHeader) // frames of 100 KiB
	path := filepath.Join(dir, "a", segmentName(1))
	size := func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	var seq uint64
	for _, want := range []struct{ frames, file int64 }{
		{1, 200 << 10},         // 100 KiB of entries, grown by as much
		{2, 200 << 10},         // inside the zeros: no growth
		{3, 600 << 10},         // 300 KiB, grown by 300 KiB
		{7, 1400 << 10},        // 700 KiB, grown by 700 KiB
		{15, 1500<<10 + 1<<20}, // 1.5 MiB, grown by the most, 1 MiB
		{26, 3 << 20},          // 2.6 MiB: grown to the roll at 3 MiB, not past it
	} {
		for seq < uint64(want.frames) {
			seq++
			appendSync(t, j, "a", seq, payload)
		}
		if got := size(); got != want.file {
			t.Fatalf("after %d frames the file holds %d bytes, want %d", want.frames, got, want.file)
		}
	}
	for seq < 32 { // the 32nd frame goes to a new segment (31 frames reach 3 MiB)
		seq++
		appendSync(t, j, "a", seq, payload)
	}
	if got := size(); got != 31*(100<<10) {
		t.Fatalf("rolled segment holds %d bytes, want its 31 frames (%d)", got, 31*(100<<10))
	}
}
