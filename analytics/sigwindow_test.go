package analytics

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// The embedded store's dedup set holds the signals of the window only: as the newest week moves
// on, the ids of the weeks it left behind are dropped, so the set stays at the signals of about
// SignalDedupWeeks weeks however many weeks go by. The window and the remaining ids survive a
// compaction and a reopen (recSigKeyDays), and a replay of the log decides as the live writes did.
func TestEmbeddedSignalSetFollowsTheWindow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demand")
	s := NewEmbeddedStore(EmbeddedConfig{Dir: dir, CompactBytes: 1})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const perWeek, weeks = 200, 60
	week := func(w int) time.Time { return base.AddDate(0, 0, 7*w).Add(time.Hour) }
	for w := range weeks {
		sigs := make([]supplyplan.DemandSignal, perWeek)
		for i := range sigs {
			sigs[i] = supplyplan.DemandSignal{SignalID: fmt.Sprintf("w%d-%d", w, i), SKU: "S", Location: "L", Channel: "WEB", OccurredAt: week(w), Quantity: 1}
		}
		writes, err := s.AddSignals(ctx, "org", sigs)
		if err != nil {
			t.Fatal(err)
		}
		for i, wr := range writes {
			if wr != supplyplan.SignalWritten {
				t.Fatalf("week %d signal %d: %v", w, i, wr)
			}
		}
	}
	setLen := func(s *EmbeddedStore) int {
		tn := s.tenant("org")
		tn.mu.RLock()
		defer tn.mu.RUnlock()
		return tn.signals.len()
	}
	// The window holds the newest week and the SignalDedupWeeks before it.
	if n, want := setLen(s), perWeek*(supplyplan.SignalDedupWeeks+1); n != want {
		t.Fatalf("%d ids after %d weeks, want %d", n, weeks, want)
	}
	check := func(s *EmbeddedStore, what string) {
		t.Helper()
		newest := weeks - 1
		floor := newest - supplyplan.SignalDedupWeeks
		writes, err := s.AddSignals(ctx, "org", []supplyplan.DemandSignal{
			{SignalID: fmt.Sprintf("w%d-0", floor), SKU: "S", Location: "L", OccurredAt: week(floor), Quantity: 1},
			{SignalID: fmt.Sprintf("w%d-0", floor-1), SKU: "S", Location: "L", OccurredAt: week(floor - 1), Quantity: 1},
			{SignalID: "w0-0", SKU: "S", Location: "L", OccurredAt: week(0), Quantity: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(writes) != fmt.Sprint([]supplyplan.SignalWrite{supplyplan.SignalSeen, supplyplan.SignalTooLate, supplyplan.SignalTooLate}) {
			t.Fatalf("%s: redelivered signals at, below and far below the window: %v", what, writes)
		}
		got, err := s.Series(ctx, "org", supplyplan.DemandKey{SKU: "S", Location: "L", Channel: "WEB"}, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != weeks || got[0].Actual != perWeek || got[weeks-1].Actual != perWeek {
			t.Fatalf("%s: %d weeks, first %+v", what, len(got), got[0])
		}
	}
	check(s, "live")
	// A compaction: the log must outgrow the snapshot so far (the ids make it larger than
	// compactNow's rows).
	before := s.compactions.Load()
	for i := 0; s.compactions.Load() == before; i++ {
		if i == 200 {
			t.Fatal("no compaction")
		}
		compactRows(t, s)
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = NewEmbeddedStore(EmbeddedConfig{Dir: dir})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	if n, want := setLen(s), perWeek*(supplyplan.SignalDedupWeeks+1); n != want {
		t.Fatalf("%d ids after a compaction and a reopen, want %d", n, want)
	}
	check(s, "after a compaction and a reopen")
	_ = s.Close()

	// The same writes replayed from the log alone (no snapshot) decide the same.
	dir2 := filepath.Join(t.TempDir(), "demand")
	s = NewEmbeddedStore(EmbeddedConfig{Dir: dir2})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	for w := range weeks {
		sigs := make([]supplyplan.DemandSignal, perWeek)
		for i := range sigs {
			sigs[i] = supplyplan.DemandSignal{SignalID: fmt.Sprintf("w%d-%d", w, i), SKU: "S", Location: "L", Channel: "WEB", OccurredAt: week(w), Quantity: 1}
		}
		if _, err := s.AddSignals(ctx, "org", sigs); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Close()
	s = NewEmbeddedStore(EmbeddedConfig{Dir: dir2})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s, "replayed from the log")
}

// The signal ids of a snapshot of an earlier version (recSigKeys, no weeks) are still recognised,
// and go once the window has moved a whole window past the newest week known when it first moved.
func TestEmbeddedOldSignalKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demand")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var buf []byte
	var start int
	buf, start = beginFrame(buf)
	buf = append(buf, recSigKeys)
	buf = putString(buf, "org")
	buf = binary.AppendUvarint(buf, 2)
	for _, id := range []string{"old-1", "old-2"} {
		k := keyOf(id)
		buf = append(buf, k[:]...)
	}
	buf = endFrame(buf, start)
	buf, start = beginFrame(buf)
	buf = append(buf, recEnd)
	buf = endFrame(buf, start)
	if err := os.WriteFile(filepath.Join(dir, snapName(1)), buf, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, logName(1)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewEmbeddedStore(EmbeddedConfig{Dir: dir})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(id string, week int) supplyplan.SignalWrite {
		t.Helper()
		w, err := s.AddSignals(ctx, "org", []supplyplan.DemandSignal{{SignalID: id, SKU: "S", Location: "L", OccurredAt: base.AddDate(0, 0, 7*week), Quantity: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return w[0]
	}
	if w := add("old-1", 5); w != supplyplan.SignalSeen {
		t.Fatalf("an id of the old snapshot: %v", w)
	}
	if w := add("new", 100); w != supplyplan.SignalWritten { // the window starts at week 100
		t.Fatalf("the first new signal: %v", w)
	}
	if w := add("old-2", 100); w != supplyplan.SignalSeen {
		t.Fatalf("an old id once the window started: %v", w)
	}
	if w := add("later", 100+supplyplan.SignalDedupWeeks+1); w != supplyplan.SignalWritten {
		t.Fatalf("a signal moving the window: %v", w)
	}
	if w := add("old-2", 100+supplyplan.SignalDedupWeeks+1); w != supplyplan.SignalWritten {
		t.Fatalf("an old id a window later is forgotten: %v", w)
	}
}

// compactRows writes 500 weeks of another organization: log bytes towards a compaction.
func compactRows(t *testing.T, s *EmbeddedStore) {
	t.Helper()
	rows := make([]supplyplan.DemandRow, 500)
	for i := range rows {
		rows[i] = supplyplan.DemandRow{SKU: "X", Location: "Y", Week: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*i), Actual: 1, Forecasted: 1}
	}
	if err := s.UpsertWeeks(context.Background(), "org2", rows); err != nil {
		t.Fatal(err)
	}
}

// TestEmbeddedSignalKeysOfTheCaller: AddSignals hashes its signals' ids on the caller's goroutine
// and the committer takes the keys in order across the frames of one call (a call of more than
// maxRecordItems signals is several records); a replay of the log hashes the ids itself. Both must
// judge every id the same: the duplicates inside a call, and every id again after a reopen.
func TestEmbeddedSignalKeysOfTheCaller(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demand")
	s := NewEmbeddedStore(EmbeddedConfig{Dir: dir})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	week := time.Date(2024, 1, 1, 1, 0, 0, 0, time.UTC)
	n := maxRecordItems + 1000
	sigs := make([]supplyplan.DemandSignal, n)
	for i := range sigs {
		id := fmt.Sprintf("k-%d", i)
		if i%7 == 3 { // the id of a signal before it, in this frame or the one before
			id = fmt.Sprintf("k-%d", i-3-(i%2)*(maxRecordItems/2))
		}
		sigs[i] = supplyplan.DemandSignal{SignalID: id, SKU: "S", Location: "L", Channel: "WEB", OccurredAt: week, Quantity: 1}
	}
	want := func(i int) supplyplan.SignalWrite {
		if i%7 == 3 && i-3-(i%2)*(maxRecordItems/2) >= 0 {
			return supplyplan.SignalSeen
		}
		return supplyplan.SignalWritten
	}
	writes, err := s.AddSignals(ctx, "org", sigs)
	if err != nil {
		t.Fatal(err)
	}
	written := 0
	for i, w := range writes {
		if w != want(i) {
			t.Fatalf("signal %d (%s): %v, want %v", i, sigs[i].SignalID, w, want(i))
		}
		if w == supplyplan.SignalWritten {
			written++
		}
	}
	s = reopenEmbedded(t, s, dir)
	hist, err := s.Series(ctx, "org", supplyplan.DemandKey{SKU: "S", Location: "L", Channel: "WEB"}, time.Time{}, time.Time{})
	if err != nil || len(hist) != 1 || hist[0].Actual != float64(written) {
		t.Fatalf("history after the reopen: %+v %v, want one week of %d", hist, err, written)
	}
	again, err := s.AddSignals(ctx, "org", append(sigs[:0:0], sigs...))
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range again {
		if w != supplyplan.SignalSeen {
			t.Fatalf("signal %d (%s) after the reopen: %v, want seen", i, sigs[i].SignalID, w)
		}
	}
}

// reopenEmbedded closes s and opens the store of dir again (a restart), closed with the test.
func reopenEmbedded(t *testing.T, s *EmbeddedStore, dir string) *EmbeddedStore {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = NewEmbeddedStore(EmbeddedConfig{Dir: dir})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
