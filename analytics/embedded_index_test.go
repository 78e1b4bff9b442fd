package analytics

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// modelCell is a week as the index of earlier versions kept it: plain float64 fields.
type modelCell struct {
	actual, forecast, signals float64
	stockout                  bool
}

// model is a reference index: per key, per day.
type model map[supplyplan.DemandKey]map[int32]*modelCell

func (m model) cell(k supplyplan.DemandKey, day int32) *modelCell {
	if m[k] == nil {
		m[k] = map[int32]*modelCell{}
	}
	c := m[k][day]
	if c == nil {
		c = &modelCell{}
		m[k][day] = c
	}
	return c
}

// weeks returns the model's served weeks of one stored key in [lo, hi], oldest first.
func (m model) weeks(k supplyplan.DemandKey, lo, hi int32) []supplyplan.WeekValue {
	var days []int32
	for d := range m[k] {
		if d >= lo && d <= hi {
			days = append(days, d)
		}
	}
	slices.Sort(days)
	var out []supplyplan.WeekValue
	for _, d := range days {
		c := m[k][d]
		if !supplyplan.WeekDemandOK(c.actual+c.signals, c.forecast) {
			continue
		}
		out = append(out, supplyplan.WeekValue{Week: dayTime(d), Actual: c.actual + c.signals, Forecasted: c.forecast, Stockout: c.stockout})
	}
	return out
}

// read is what the store answers for a query key: a stored channel as it is, channel ALL summed
// over the channels of the sku and location in creation order (order).
func (m model) read(k supplyplan.DemandKey, order []supplyplan.DemandKey, lo, hi int32) []supplyplan.WeekValue {
	if k.Channel != supplyplan.ChannelAll {
		return m.weeks(k, lo, hi)
	}
	var chans []supplyplan.DemandKey
	for _, c := range order {
		if c.SKU == k.SKU && c.Location == k.Location {
			chans = append(chans, c)
		}
	}
	switch len(chans) {
	case 0:
		return nil
	case 1:
		return m.weeks(chans[0], lo, hi)
	}
	sums := map[int64]*supplyplan.WeekValue{}
	for _, c := range chans {
		for _, w := range m.weeks(c, lo, hi) {
			v := sums[w.Week.Unix()]
			if v == nil {
				v = &supplyplan.WeekValue{Week: w.Week}
				sums[w.Week.Unix()] = v
			}
			v.Actual += w.Actual
			v.Forecasted += w.Forecasted
			v.Stockout = v.Stockout || w.Stockout
		}
	}
	var out []supplyplan.WeekValue
	for _, v := range sums {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b supplyplan.WeekValue) int { return a.Week.Compare(b.Week) })
	return out
}

// randomValue draws the numbers a store meets: mostly small whole units, and every kind of number
// a width must hold exactly (fractions, large, negative, negative zero, float32-exact, huge, NaN).
func randomValue(rng *rand.Rand) float64 {
	switch rng.IntN(12) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return float64(rng.IntN(70000))
	case 3:
		return rng.Float64() * 1000
	case 4:
		return -float64(rng.IntN(50))
	case 5:
		return float64(float32(rng.Float64() * 100))
	case 6:
		return 1e12
	case 7:
		return math.NaN()
	case 8:
		return 1.7e308
	case 9:
		return 3e9
	default:
		return float64(rng.IntN(256))
	}
}

func sameWeeks(a, b []supplyplan.WeekValue) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Week.Equal(b[i].Week) || math.Float64bits(a[i].Actual) != math.Float64bits(b[i].Actual) ||
			math.Float64bits(a[i].Forecasted) != math.Float64bits(b[i].Forecasted) || a[i].Stockout != b[i].Stockout {
			return false
		}
	}
	return true
}

// The columnar index reads back every number bit for bit, whatever the order and kind of writes
// (runs, single weeks in order, out of order, gaps, signals, widening), against a reference model.
func TestIndexMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tn := newTenant()
	ref := model{}
	keys := []supplyplan.DemandKey{{SKU: "A", Location: "L", Channel: "ALL"}, {SKU: "A", Location: "L", Channel: "WEB"},
		{SKU: "B", Location: "L", Channel: "ALL"}, {SKU: "C", Location: "M", Channel: "STORE"}}
	base := weekDay(time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC))
	day := func() int32 {
		if rng.IntN(4) == 0 {
			return base + 7*int32(rng.IntN(3000)) // sparse: wide offsets
		}
		return base + 7*int32(rng.IntN(120))
	}
	var order []supplyplan.DemandKey // keys in creation order
	for step := 0; step < 20000; step++ {
		k := keys[rng.IntN(len(keys))]
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
		si := tn.seriesFor(k)
		switch rng.IntN(5) {
		case 0, 1: // a run, as an import of several weeks of one series
			var run []cellv
			d0 := day()
			for i := 0; i < 1+rng.IntN(30); i++ {
				d := d0 + 7*int32(i)
				if rng.IntN(10) == 0 {
					d = day()
				}
				c := cellv{day: d, actual: randomValue(rng), stockout: rng.IntN(8) == 0}
				c.forecast = c.actual
				if rng.IntN(5) == 0 {
					c.forecast = randomValue(rng)
				}
				run = append(run, c)
			}
			tn.upsert(si, run)
			for _, c := range run {
				mc := ref.cell(k, c.day)
				mc.actual, mc.forecast, mc.stockout = c.actual, c.forecast, c.stockout
			}
		case 2: // the next week
			s := tn.at(si)
			d := day()
			if s.n > 0 {
				d = s.day(int(s.n)-1) + 7
			}
			v := float64(rng.IntN(300))
			tn.upsert(si, []cellv{{day: d, actual: v, forecast: v}})
			mc := ref.cell(k, d)
			mc.actual, mc.forecast, mc.stockout = v, v, false
		case 3:
			d, q := day(), randomValue(rng)
			if rng.IntN(2) == 0 {
				q = float64(rng.IntN(5))
			}
			tn.addSignal(si, d, q)
			ref.cell(k, d).signals += q
		case 4:
			c := cellv{day: day(), actual: randomValue(rng), forecast: randomValue(rng), stockout: rng.IntN(2) == 0}
			tn.upsert(si, []cellv{c})
			mc := ref.cell(k, c.day)
			mc.actual, mc.forecast, mc.stockout = c.actual, c.forecast, c.stockout
		}
		if step%500 == 0 || step == 19999 {
			for _, k := range keys {
				lo, hi := int32(math.MinInt32), int32(math.MaxInt32)
				if rng.IntN(2) == 0 {
					lo, hi = day(), day()
				}
				got, want := tn.read(k, lo, hi), ref.read(k, order, lo, hi)
				if !sameWeeks(got, want) {
					t.Fatalf("step %d: read(%v, %d, %d) = %v, want %v", step, k, lo, hi, got, want)
				}
			}
		}
	}
	// Snapshot frames load back into the same index.
	var buf bytes.Buffer
	if _, err := (&EmbeddedStore{}).writeTenant(&buf, nil, "org", tn); err != nil {
		t.Fatal(err)
	}
	s := NewEmbeddedStore(EmbeddedConfig{Dir: t.TempDir()})
	loadFrames(t, s, buf.Bytes())
	back := s.tenant("org")
	for _, k := range keys {
		if got, want := back.read(k, math.MinInt32, math.MaxInt32), ref.read(k, order, math.MinInt32, math.MaxInt32); !sameWeeks(got, want) {
			t.Fatalf("after a snapshot: read(%v) = %v, want %v", k, got, want)
		}
	}
	if !slices.Equal(back.keys(), tn.keys()) {
		t.Fatalf("keys after a snapshot = %v, want %v", back.keys(), tn.keys())
	}
}

// loadFrames applies snapshot frames as Open does.
func loadFrames(t *testing.T, s *EmbeddedStore, b []byte) {
	t.Helper()
	for len(b) > 0 {
		n := int(binary.LittleEndian.Uint32(b))
		if err := s.apply(b[frameHeaderLen:frameHeaderLen+n], nil); err != nil {
			t.Fatal(err)
		}
		b = b[frameHeaderLen+n:]
	}
}

// A series of two years of whole units below 256, imported without forecasts or signals, holds
// one byte a week, and importing the same weeks again does not make it larger.
func TestIndexBytesPerWeek(t *testing.T) {
	tn := newTenant()
	base := weekDay(time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC))
	const series, weeks = 1000, 104
	load := func() {
		for k := 0; k < series; k++ {
			si := tn.seriesFor(supplyplan.DemandKey{SKU: "P" + string(rune('a'+k%26)) + string(rune('a'+k/26)), Location: "L", Channel: "ALL"})
			run := make([]cellv, weeks)
			for w := range run {
				v := float64((k + w) % 200)
				run[w] = cellv{day: base + 7*int32(w), actual: v, forecast: v}
			}
			tn.upsert(si, run)
		}
	}
	load()
	_, data, slack := tn.memory()
	if per := float64(data) / (series * weeks); per > 1.1 {
		t.Fatalf("%.2f bytes of data a week, want about 1", per)
	}
	if slack != 0 {
		t.Fatalf("%d bytes of slack after loading whole series, want 0", slack)
	}
	load()
	if _, again, _ := tn.memory(); again != data {
		t.Fatalf("data grew from %d to %d bytes importing the same weeks again", data, again)
	}
	// Week by week (a weekly feed): the spare room stays a small fraction.
	tn = newTenant()
	si := tn.seriesFor(supplyplan.DemandKey{SKU: "P", Location: "L", Channel: "ALL"})
	for w := 0; w < weeks; w++ {
		tn.upsert(si, []cellv{{day: base + 7*int32(w), actual: 3, forecast: 3}})
	}
	if s := tn.at(si); int(s.cap) > weeks+weeks/8+2 || s.n != weeks {
		t.Fatalf("a series written a week at a time: %d cells in %d slots", s.n, s.cap)
	}
}

// An import in week order whose chunks land out of order (jobs side by side) writes its weeks in
// place (insertInPlace, grow), reads back every week, and ends, once no week is missing, without
// week offsets: about a byte a week plus the spare room.
func TestIndexWeeksOutOfOrder(t *testing.T) {
	tn := newTenant()
	base := weekDay(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	const series, weeks, perChunk = 200, 50, 3
	var chunks [][2]int // [first week, last week+1]
	for w := 0; w < weeks; w += perChunk {
		chunks = append(chunks, [2]int{w, min(w+perChunk, weeks)})
	}
	for i := 0; i+1 < len(chunks); i += 3 { // every third pair lands the later chunk first
		chunks[i], chunks[i+1] = chunks[i+1], chunks[i]
	}
	val := func(k, w int) float64 { return float64(1 + (k*7+w)%200) }
	for _, ch := range chunks {
		for w := ch[0]; w < ch[1]; w++ {
			for k := 0; k < series; k++ {
				si := tn.seriesFor(supplyplan.DemandKey{SKU: fmt.Sprintf("P%03d", k), Location: "L", Channel: "ALL"})
				tn.upsert(si, []cellv{{day: base + 7*int32(w), actual: val(k, w), forecast: val(k, w)}})
			}
		}
	}
	for k := 0; k < series; k++ {
		key := supplyplan.DemandKey{SKU: fmt.Sprintf("P%03d", k), Location: "L", Channel: "ALL"}
		got := tn.read(key, math.MinInt32, math.MaxInt32)
		if len(got) != weeks {
			t.Fatalf("series %d: %d weeks, want %d", k, len(got), weeks)
		}
		for w, v := range got {
			if v.Actual != val(k, w) || !v.Week.Equal(dayTime(base+7*int32(w))) {
				t.Fatalf("series %d week %d: %+v, want %v on %v", k, w, v, val(k, w), dayTime(base+7*int32(w)))
			}
		}
		if s := tn.at(tn.lookup(key)); s.wOff != 0 {
			t.Fatalf("series %d keeps week offsets (%d bytes a week) with no week missing", k, s.wOff)
		}
	}
	if _, data, slack := tn.memory(); float64(data-slack)/(series*weeks) > 1.1 {
		t.Fatalf("%.2f bytes a week besides the spare room, want about 1", float64(data-slack)/(series*weeks))
	}
}

// A snapshot reads a consistent view while the committer goes on writing: every write either is
// in it or not, and nothing a write changes in place is seen half-done (run with -race).
func TestSnapshotViewWhileWriting(t *testing.T) {
	tn := newTenant()
	base := weekDay(time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC))
	key := func(i int) supplyplan.DemandKey {
		return supplyplan.DemandKey{SKU: "S" + string(rune('A'+i%20)), Location: "L" + string(rune('A'+i/20)), Channel: "ALL"}
	}
	for i := 0; i < 400; i++ {
		tn.upsert(tn.seriesFor(key(i)), []cellv{{day: base, actual: 1, forecast: 1, stockout: true}})
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // the committer
		defer wg.Done()
		rng := rand.New(rand.NewPCG(3, 4))
		for w := int32(1); ; w++ {
			select {
			case <-stop:
				return
			default:
			}
			tn.mu.Lock()
			for i := 0; i < 400; i++ {
				si := tn.seriesFor(key(rng.IntN(800))) // new series too
				switch rng.IntN(3) {
				case 0:
					tn.upsert(si, []cellv{{day: base + 7*w, actual: float64(w), forecast: float64(w), stockout: w%3 == 0}})
				case 1:
					tn.addSignal(si, base, 1)
				default:
					tn.upsert(si, []cellv{{day: base, actual: float64(w % 300), forecast: 2}})
				}
			}
			tn.mu.Unlock()
		}
	}()
	s := &EmbeddedStore{}
	for i := 0; i < 20; i++ {
		var buf bytes.Buffer
		if _, err := s.writeTenant(&buf, nil, "org", tn); err != nil {
			t.Fatal(err)
		}
		back := NewEmbeddedStore(EmbeddedConfig{Dir: t.TempDir()})
		loadFrames(t, back, buf.Bytes())
	}
	close(stop)
	wg.Wait()
}

// oldSnapshotFrames encodes a tenant the way earlier versions wrote snapshots (recCells: each cell
// with its flags, float64 values).
func oldSnapshotFrames(org string, series map[supplyplan.DemandKey][]struct {
	day                       int32
	flags                     byte
	actual, forecast, signals float64
}) []byte {
	var buf []byte
	var start int
	buf, start = beginFrame(buf)
	buf = append(buf, recCells)
	buf = putString(buf, org)
	buf = binary.AppendUvarint(buf, uint64(len(series)))
	for k, cells := range series {
		buf = putString(buf, k.SKU)
		buf = putString(buf, k.Location)
		buf = putString(buf, k.Channel)
		buf = binary.AppendUvarint(buf, uint64(len(cells)))
		for _, c := range cells {
			buf = append(buf, c.flags)
			buf = binary.AppendVarint(buf, int64(c.day))
			if c.flags&oldCellImported != 0 {
				buf = putFloat(buf, c.actual)
				buf = putFloat(buf, c.forecast)
			}
			if c.flags&oldCellSignals != 0 {
				buf = putFloat(buf, c.signals)
			}
		}
	}
	buf = endFrame(buf, start)
	buf, start = beginFrame(buf)
	buf = append(buf, recEnd)
	return endFrame(buf, start)
}

// A store directory written by an earlier version (a snapshot of cells, then a log) still opens,
// reads the same, and its next snapshot is in the columnar form.
func TestEmbeddedOpensOldSnapshot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demand")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	base := weekDay(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	type c = struct {
		day                       int32
		flags                     byte
		actual, forecast, signals float64
	}
	snap := oldSnapshotFrames("org", map[supplyplan.DemandKey][]c{
		{SKU: "S", Location: "L", Channel: "ALL"}: {{base, oldCellImported, 5, 5, 0}, {base + 7, oldCellImported | oldCellStockout | oldCellSignals, 2.5, 4, 3},
			{base + 21, oldCellSignals, 0, 0, 7}},
		{SKU: "S", Location: "L", Channel: "WEB"}: {{base + 7, oldCellImported, 1, 1, 0}},
	})
	if err := os.WriteFile(filepath.Join(dir, snapName(2)), snap, 0o600); err != nil {
		t.Fatal(err)
	}
	log := encodeUpsert(nil, "org", []supplyplan.DemandRow{{SKU: "S", Location: "L", Week: dayTime(base + 28), Actual: 9, Forecasted: 9}})
	if err := os.WriteFile(filepath.Join(dir, logName(2)), log, 0o600); err != nil {
		t.Fatal(err)
	}
	want := []supplyplan.WeekValue{{Week: dayTime(base), Actual: 5, Forecasted: 5}, {Week: dayTime(base + 7), Actual: 6.5, Forecasted: 5, Stockout: true},
		{Week: dayTime(base + 21), Actual: 7}, {Week: dayTime(base + 28), Actual: 9, Forecasted: 9}}
	check := func(s *EmbeddedStore) {
		t.Helper()
		got, err := s.Series(context.Background(), "org", supplyplan.DemandKey{SKU: "S", Location: "L"}, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if !sameWeeks(got, want) {
			t.Fatalf("Series = %+v, want %+v", got, want)
		}
	}
	s := NewEmbeddedStore(EmbeddedConfig{Dir: dir, CompactBytes: 1})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	check(s)
	compactNow(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "snapshot-*.snap"))
	if len(snaps) != 1 {
		t.Fatalf("snapshots after compaction: %v", snaps)
	}
	if b, err := os.ReadFile(snaps[0]); err != nil || len(b) <= frameHeaderLen || b[frameHeaderLen] != recSeries {
		t.Fatalf("the new snapshot does not start with a columnar series frame (err %v)", err)
	}
	s = NewEmbeddedStore(EmbeddedConfig{Dir: dir})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s)
}

// compactNow makes the committer write a snapshot of the current state (the store was opened
// with CompactBytes 1) and waits for it.
func compactNow(t *testing.T, s *EmbeddedStore) {
	t.Helper()
	before := s.compactions.Load()
	rows := make([]supplyplan.DemandRow, 500) // a log larger than the snapshot so far
	for i := range rows {
		rows[i] = supplyplan.DemandRow{SKU: "X", Location: "Y", Week: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*i), Actual: 1, Forecasted: 1}
	}
	if err := s.UpsertWeeks(context.Background(), "org2", rows); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() bool { return s.compactions.Load() > before })
}

// eventually waits until cond holds.
func eventually(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("condition not met in time")
		}
	}
}
