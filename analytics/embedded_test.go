package analytics_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics"
	"github.com/supplyplan/supplyplan/analytics/storetest"
)

// MustOpenEmbedded opens an embedded store over dir and closes it in t.Cleanup.
func MustOpenEmbedded(tb testing.TB, cfg analytics.EmbeddedConfig) *analytics.EmbeddedStore {
	tb.Helper()
	s := analytics.NewEmbeddedStore(cfg)
	if err := s.Open(); err != nil {
		tb.Fatalf("open embedded store: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func embeddedOpener(cfg analytics.EmbeddedConfig) storetest.Opener {
	return func(t *testing.T) func() supplyplan.DemandStore {
		c := cfg
		c.Dir = filepath.Join(t.TempDir(), "demand")
		return func() supplyplan.DemandStore { return MustOpenEmbedded(t, c) }
	}
}

func TestEmbeddedStore(t *testing.T) {
	storetest.Run(t, embeddedOpener(analytics.EmbeddedConfig{}))
}

// TestEmbeddedStoreCompacting runs the suite with a threshold so small that nearly every commit
// rotates the log and writes a snapshot concurrently with the writes.
func TestEmbeddedStoreCompacting(t *testing.T) {
	storetest.Run(t, embeddedOpener(analytics.EmbeddedConfig{CompactBytes: 1}))
}

func dirSize(t *testing.T, dir string) (total int64, names []string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		info, err := e.Info()
		if os.IsNotExist(err) {
			continue // removed by a compaction meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		total += info.Size()
		names = append(names, e.Name())
	}
	return total, names
}

func importRows(series, weeks int, value float64) []supplyplan.DemandRow {
	rows := make([]supplyplan.DemandRow, 0, series*weeks)
	for i := 0; i < series; i++ {
		for w := 1; w <= weeks; w++ {
			rows = append(rows, supplyplan.DemandRow{SKU: fmt.Sprintf("SKU-%05d", i), Location: "DC-1", Channel: "WEB",
				Week: storetest.Week(w), Actual: value, Forecasted: value})
		}
	}
	return rows
}

// Re-imports must not grow the directory without bound, and compaction keeps every value.
func TestEmbeddedCompactionBoundsLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demand")
	cfg := analytics.EmbeddedConfig{Dir: dir, CompactBytes: 256 << 10}
	s := MustOpenEmbedded(t, cfg)
	ctx := context.Background()
	var maxSize int64
	for round := 1; round <= 40; round++ {
		rows := importRows(100, 52, float64(round)) // about 170 KB of log per round
		for i := 0; i < len(rows); i += 1000 {
			if err := s.UpsertWeeks(ctx, "org", rows[i:min(i+1000, len(rows))]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.AddSignals(ctx, "org", []supplyplan.DemandSignal{{SignalID: fmt.Sprint("r", round), SKU: "SKU-00000",
			Location: "DC-1", Channel: "WEB", OccurredAt: storetest.Week(1), Quantity: 1}}); err != nil {
			t.Fatal(err)
		}
		size, _ := dirSize(t, dir)
		maxSize = max(maxSize, size)
	}
	// Live data is about 100 x 52 cells; the log of 40 rounds is about 7 MB.
	if maxSize > 3<<20 {
		t.Errorf("directory grew to %d bytes over 40 re-imports; compaction does not bound it", maxSize)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, names := dirSize(t, dir)
	t.Logf("max dir size %d bytes; files after close: %v", maxSize, names)
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "snapshot-") }) {
		t.Errorf("no snapshot written: %v", names)
	}
	s = MustOpenEmbedded(t, cfg)
	agg, err := s.Aggregate(ctx, "org", supplyplan.DemandQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if want := float64(100*52*40 + 40); agg[0].Actual != want || agg[0].Weeks != 100*52 {
		t.Errorf("after reopen: %+v, want actual %g over %d weeks", agg[0], want, 100*52)
	}
	fresh, err := s.AddSignals(ctx, "org", []supplyplan.DemandSignal{{SignalID: "r7", SKU: "SKU-00000", Location: "DC-1",
		Channel: "WEB", OccurredAt: storetest.Week(1), Quantity: 1}})
	if err != nil || fresh[0] != supplyplan.SignalSeen {
		t.Errorf("signal r7 after compaction and reopen: %v, err %v; want a duplicate", fresh, err)
	}
}

func newestLog(t *testing.T, dir string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "log-*.wal"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no log in %s: %v", dir, err)
	}
	slices.Sort(logs)
	return logs[len(logs)-1]
}

// A torn tail (a frame cut by a crash, or garbage after the last frame) is cut on reopen; what was
// acknowledged before it is intact and new writes land after the cut.
func TestEmbeddedTornTail(t *testing.T) {
	k := supplyplan.DemandKey{SKU: "S", Location: "L", Channel: "WEB"}
	for _, tc := range []struct {
		name string
		tear func(t *testing.T, path string, lastFrame []byte)
	}{
		{"partial frame", func(t *testing.T, path string, last []byte) {
			appendBytes(t, path, last[:len(last)/2])
		}},
		{"header only", func(t *testing.T, path string, last []byte) {
			appendBytes(t, path, last[:5])
		}},
		{"bad checksum", func(t *testing.T, path string, last []byte) {
			bad := slices.Clone(last)
			bad[len(bad)-1] ^= 0xff
			appendBytes(t, path, bad)
		}},
		{"zeros", func(t *testing.T, path string, last []byte) {
			appendBytes(t, path, make([]byte, 4096))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "demand")
			cfg := analytics.EmbeddedConfig{Dir: dir}
			s := MustOpenEmbedded(t, cfg)
			storetest.MustUpsert(t, s, "org", supplyplan.DemandRow{SKU: "S", Location: "L", Channel: "WEB", Week: storetest.Week(1), Actual: 1})
			path := newestLog(t, dir)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			storetest.MustSignals(t, s, "org", supplyplan.DemandSignal{SignalID: "a", SKU: "S", Location: "L", Channel: "WEB",
				OccurredAt: storetest.Week(1), Quantity: 2})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			good := len(after)
			// Tear: a copy of the last frame, damaged, as a crash in the middle of its write leaves it.
			tc.tear(t, path, after[len(before):])

			s = MustOpenEmbedded(t, cfg)
			if st, err := os.Stat(path); err != nil || st.Size() != int64(good) {
				t.Errorf("log size after reopen = %v (%v), want the torn tail cut at %d", st.Size(), err, good)
			}
			storetest.MustUpsert(t, s, "org", supplyplan.DemandRow{SKU: "S", Location: "L", Channel: "WEB", Week: storetest.Week(2), Actual: 5})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = MustOpenEmbedded(t, cfg)
			got := storetest.MustSeries(t, s, "org", k, time.Time{}, time.Time{})
			want := []supplyplan.WeekValue{{Week: storetest.Week(1), Actual: 3}, {Week: storetest.Week(2), Actual: 5}}
			if !slices.Equal(got, want) {
				t.Errorf("after torn tail: %v, want %v", got, want)
			}
		})
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Damage anywhere but the tail of the newest log is not a crash and must not be silently cut.
func TestEmbeddedRefusesDamagedOldLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demand")
	s := MustOpenEmbedded(t, analytics.EmbeddedConfig{Dir: dir})
	storetest.MustUpsert(t, s, "org", supplyplan.DemandRow{SKU: "S", Location: "L", Week: storetest.Week(1), Actual: 1})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	old := newestLog(t, dir)
	data, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-3] ^= 0xff
	if err := os.WriteFile(old, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A newer log makes the damaged one an old one.
	next := filepath.Join(dir, fmt.Sprintf("log-%020d.wal", 99))
	if err := os.WriteFile(next, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := analytics.NewEmbeddedStore(analytics.EmbeddedConfig{Dir: dir})
	if err := s2.Open(); err == nil {
		_ = s2.Close()
		t.Fatal("Open accepted a damaged log that is not the newest")
	}
}

// A second store (or process) on the same directory is refused.
func TestEmbeddedLocksDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demand")
	MustOpenEmbedded(t, analytics.EmbeddedConfig{Dir: dir})
	s2 := analytics.NewEmbeddedStore(analytics.EmbeddedConfig{Dir: dir})
	if err := s2.Open(); err == nil {
		_ = s2.Close()
		t.Fatal("a second store opened a locked directory")
	}
}

func TestEmbeddedClosed(t *testing.T) {
	s := analytics.NewEmbeddedStore(analytics.EmbeddedConfig{Dir: filepath.Join(t.TempDir(), "demand")})
	ctx := context.Background()
	if _, err := s.Keys(ctx, "org"); err != analytics.ErrStoreClosed {
		t.Errorf("Keys before Open: %v, want ErrStoreClosed", err)
	}
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertWeeks(ctx, "org", []supplyplan.DemandRow{{SKU: "S", Location: "L", Week: storetest.Week(1)}}); err != analytics.ErrStoreClosed {
		t.Errorf("UpsertWeeks after Close: %v, want ErrStoreClosed", err)
	}
}

// The crash test: a child process (this test binary, re-executed) writes as fast as it can from
// several goroutines and prints each acknowledged write; the parent kills it with SIGKILL at a
// random moment, reopens the directory and checks that every acknowledged write is there exactly
// once. A tiny compaction threshold makes rotations and snapshots happen all the time, so kills
// land in every phase.
const (
	crashChildEnv = "SUPPLYPLAN_DEMAND_CRASH_CHILD_DIR"
	crashBaseEnv  = "SUPPLYPLAN_DEMAND_CRASH_BASE"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

const crashWriters = 4

// crashChild runs until killed. Writer g upserts series U<g> week 1+n%100 with value n for
// n = base+1, base+2, ... and adds signal c<g>-<n> (quantity 1) to series C<g>-<n/10>, week 1+n%10 (within the dedup window), printing
// "U g n" and "S g n" after each acknowledged call.
func crashChild(dir string) {
	base, _ := strconv.Atoi(os.Getenv(crashBaseEnv))
	s := analytics.NewEmbeddedStore(analytics.EmbeddedConfig{Dir: dir, CompactBytes: 64 << 10})
	if err := s.Open(); err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	emit := func(line string) {
		mu.Lock()
		out.WriteString(line)
		out.Flush() // unbuffered in effect: the parent must see every ack before the kill
		mu.Unlock()
	}
	emit("READY\n")
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := 0; g < crashWriters; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := base + 1; ; n++ {
				row := supplyplan.DemandRow{SKU: fmt.Sprintf("U%d", g), Location: "L", Channel: "WEB",
					Week: storetest.Week(1 + n%100), Actual: float64(n), Forecasted: float64(n)}
				if err := s.UpsertWeeks(ctx, "org", []supplyplan.DemandRow{row}); err != nil {
					fmt.Fprintln(os.Stderr, "child upsert:", err)
					os.Exit(3)
				}
				emit(fmt.Sprintf("U %d %d\n", g, n))
				sig := supplyplan.DemandSignal{SignalID: fmt.Sprintf("c%d-%d", g, n), SKU: fmt.Sprintf("C%d-%d", g, n/10),
					Location: "L", Channel: "WEB", OccurredAt: storetest.Week(1 + n%10).Add(time.Hour), Quantity: 1}
				if w, err := s.AddSignals(ctx, "org", []supplyplan.DemandSignal{sig}); err != nil || w[0] != supplyplan.SignalWritten {
					fmt.Fprintln(os.Stderr, "child signal:", w, err)
					os.Exit(3)
				}
				emit(fmt.Sprintf("S %d %d\n", g, n))
			}
		}()
	}
	wg.Wait()
}

func TestEmbeddedCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test re-executes the binary")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// One directory for every round: each kill after the first lands on a store that was itself
	// recovered from a kill. Round r numbers its writes from r*1,000,000 + 1.
	dir := filepath.Join(t.TempDir(), "demand")
	delays := []time.Duration{150 * time.Millisecond, 400 * time.Millisecond, 30 * time.Millisecond, 900 * time.Millisecond, 250 * time.Millisecond}
	for round, delay := range delays {
		base := round * 1_000_000
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashBaseEnv+"="+strconv.Itoa(base))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		select {
		case l := <-lines:
			if l != "READY" {
				_ = cmd.Process.Kill()
				t.Fatalf("child said %q", l)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("child did not start")
		}
		time.Sleep(delay)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		lastU := make([]int, crashWriters) // highest acknowledged n per writer
		lastS := make([]int, crashWriters)
		acks := 0
		for l := range lines { // each complete line is a write the child saw acknowledged
			f := strings.Fields(l)
			if len(f) != 3 {
				continue // a line cut by the kill was never fully printed
			}
			g, _ := strconv.Atoi(f[1])
			n, _ := strconv.Atoi(f[2])
			switch f[0] {
			case "U":
				lastU[g] = max(lastU[g], n)
			case "S":
				lastS[g] = max(lastS[g], n)
			}
			acks++
		}
		_ = cmd.Wait()
		t.Logf("round %d: killed after %v, %d acknowledged writes", round, delay, acks)
		if acks == 0 {
			t.Fatalf("round %d: the child acknowledged nothing", round)
		}
		verifyCrash(t, dir, base, lastU, lastS)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	t.Logf("files at the end: %v", files)
}

// verifyCrash reopens dir and checks the writes of one round.
func verifyCrash(t *testing.T, dir string, base int, lastU, lastS []int) {
	t.Helper()
	s := analytics.NewEmbeddedStore(analytics.EmbeddedConfig{Dir: dir})
	if err := s.Open(); err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	for g := 0; g < crashWriters; g++ {
		// Upserts: week 1+n%100 of U<g> holds the newest n written to it. Each of the last 100
		// acknowledged writes must be there, except where the one write in flight (last+1) landed.
		weeks, err := s.Series(ctx, "org", supplyplan.DemandKey{SKU: fmt.Sprintf("U%d", g), Location: "L", Channel: "WEB"}, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int]int{}
		for _, w := range weeks {
			got[int(w.Week.Sub(storetest.Week(1))/(7*24*time.Hour))+1] = int(w.Actual)
		}
		last := lastU[g]
		for n := max(base+1, last-99); n <= last; n++ {
			week := 1 + n%100
			if v := got[week]; v != n && !(v == last+1 && (last+1)%100 == n%100) {
				t.Errorf("writer %d: week %d holds %d, want acknowledged write %d", g, week, v, n)
			}
		}
		// Signals: every acknowledged signal counts exactly once and is remembered as applied.
		series := map[string][]supplyplan.WeekValue{}
		var again []supplyplan.DemandSignal
		for n := base + 1; n <= lastS[g]; n++ {
			sku := fmt.Sprintf("C%d-%d", g, n/10)
			if _, ok := series[sku]; !ok {
				w, err := s.Series(ctx, "org", supplyplan.DemandKey{SKU: sku, Location: "L", Channel: "WEB"}, time.Time{}, time.Time{})
				if err != nil {
					t.Fatal(err)
				}
				series[sku] = w
			}
			v := -1.0
			for _, w := range series[sku] {
				if w.Week.Equal(storetest.Week(1 + n%10)) {
					v = w.Actual
				}
			}
			if v != 1 {
				t.Errorf("writer %d: acknowledged signal %d counts %g times", g, n, v)
			}
			again = append(again, supplyplan.DemandSignal{SignalID: fmt.Sprintf("c%d-%d", g, n), SKU: sku,
				Location: "L", Channel: "WEB", OccurredAt: storetest.Week(1 + n%10), Quantity: 1000})
		}
		if len(again) > 0 {
			fresh, err := s.AddSignals(ctx, "org", again)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range fresh {
				if f != supplyplan.SignalSeen {
					t.Errorf("writer %d: acknowledged signal %s was forgotten", g, again[i].SignalID)
				}
			}
		}
	}
}
