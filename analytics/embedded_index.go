package analytics

import (
	"encoding/binary"
	"math"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"github.com/supplyplan/supplyplan"
)

// The in-memory index of the embedded store, laid out for memory: per organization, a table of
// interned strings (sku, location and channel are small integers), the series in pages of a flat
// array, and per series its weeks as columns in one byte slice, each column as narrow as its values
// allow. A week of whole units below 256, sold without signals or a forecast of its own, costs one
// byte; docs/demand-store.md has the figures.
//
// Layout of series.data, for cap slots (cells 0..n-1 are used, in week order):
//
//	offsets  cap x wOff  day of cell i - day0 (wOff 0: none, cell i is week day0 + 7i)
//	actual   cap x wAct  the imported actual
//	forecast cap x wFc   the imported forecast (wFc == fcSame: none, it equals the imported actual)
//	signals  cap x wSig  the sum of the week's distinct signals
//	stockout ceil(cap/8) one bit per cell (only when some cell is a stockout)
//
// A number column of width 0 holds zeros, 1 whole numbers 0..255, 2 whole numbers 0..65535, 4
// float32 values (numbers a float32 holds exactly), 8 float64 values: every number reads back
// bit for bit. A write that fits the widths lands in place; one that does not (a wider number, a
// week out of order, a full column) lays the series out again with the widths its cells need.

const fcSame = 0xff // wFc: the forecast column is the actual column

// cellv is one week of a series, decoded.
type cellv struct {
	day                       int32 // Unix day of the week's Monday
	actual, forecast, signals float64
	stockout                  bool
}

// series is one (sku, location, channel) of an organization. It holds no pointer besides data, so
// that the garbage collector does not walk millions of small objects.
type series struct {
	data                  []byte
	day0                  int32 // day of cell 0
	n, cap                uint16
	sku, loc, ch          uint32 // interned strings
	next                  int32  // the next channel of the same sku and location, -1 for none
	wOff, wAct, wFc, wSig uint8
	stock                 bool
}

// maxCells bounds the cells of a series: every Monday from 1970-01-05 to 2105-12-31 is about
// 7,100 of them.
const maxCells = math.MaxUint16

func fcWidth(w uint8) int {
	if w == fcSame {
		return 0
	}
	return int(w)
}

// columns returns the start of each column in data.
func (s *series) columns() (act, fc, sig, stk int) {
	c := int(s.cap)
	act = c * int(s.wOff)
	fc = act + c*int(s.wAct)
	sig = fc + c*fcWidth(s.wFc)
	stk = sig + c*int(s.wSig)
	return
}

// classOf returns the narrowest width that holds v exactly.
func classOf(v float64) uint8 {
	switch {
	case v == 0 && !math.Signbit(v):
		return 0
	case v >= 1 && v <= math.MaxUint16 && v == math.Trunc(v):
		if v <= math.MaxUint8 {
			return 1
		}
		return 2
	case float64(float32(v)) == v:
		return 4
	}
	return 8
}

func getNum(b []byte, w uint8, i int) float64 {
	switch w {
	case 1:
		return float64(b[i])
	case 2:
		return float64(binary.LittleEndian.Uint16(b[2*i:]))
	case 4:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	case 8:
		return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return 0
}

func putNum(b []byte, w uint8, i int, v float64) {
	switch w {
	case 1:
		b[i] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
	case 8:
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
}

func (s *series) day(i int) int32 {
	switch s.wOff {
	case 2:
		return s.day0 + int32(binary.LittleEndian.Uint16(s.data[2*i:]))
	case 4:
		return s.day0 + int32(binary.LittleEndian.Uint32(s.data[4*i:]))
	}
	return s.day0 + 7*int32(i)
}

// cell decodes cell i.
func (s *series) cell(i int) cellv {
	act, fc, sig, stk := s.columns()
	c := cellv{day: s.day(i), actual: getNum(s.data[act:], s.wAct, i), signals: getNum(s.data[sig:], s.wSig, i)}
	if s.wFc == fcSame {
		c.forecast = c.actual
	} else {
		c.forecast = getNum(s.data[fc:], s.wFc, i)
	}
	if s.stock {
		c.stockout = s.data[stk+i/8]&(1<<(i%8)) != 0
	}
	return c
}

// decode appends every cell to buf.
func (s *series) decode(buf []cellv) []cellv {
	for i := 0; i < int(s.n); i++ {
		buf = append(buf, s.cell(i))
	}
	return buf
}

// search returns the index of the first cell whose day is >= day.
func (s *series) search(day int32) int {
	n := int(s.n)
	if s.wOff == 0 {
		if n == 0 || day <= s.day0 {
			return 0
		}
		i := (int64(day) - int64(s.day0) + 6) / 7
		return int(min(i, int64(n)))
	}
	return sort.Search(n, func(i int) bool { return s.day(i) >= day })
}

// window returns the cells [i, j) whose days lie in [lo, hi].
func (s *series) window(lo, hi int32) (i, j int) {
	i = s.search(lo)
	if hi == math.MaxInt32 {
		return i, int(s.n)
	}
	return i, max(i, s.search(hi+1))
}

// fits reports whether c can be stored in place with the series' current widths.
func (s *series) fits(c *cellv) bool {
	if classOf(c.actual) > s.wAct || classOf(c.signals) > s.wSig || (c.stockout && !s.stock) {
		return false
	}
	if s.wFc == fcSame {
		return math.Float64bits(c.forecast) == math.Float64bits(c.actual)
	}
	return classOf(c.forecast) <= s.wFc
}

// write stores c at slot i (its day is already there or is written by the caller).
func (s *series) write(i int, c *cellv) {
	act, fc, sig, stk := s.columns()
	putNum(s.data[act:], s.wAct, i, c.actual)
	if s.wFc != fcSame {
		putNum(s.data[fc:], s.wFc, i, c.forecast)
	}
	putNum(s.data[sig:], s.wSig, i, c.signals)
	if s.stock {
		if c.stockout {
			s.data[stk+i/8] |= 1 << (i % 8)
		} else {
			s.data[stk+i/8] &^= 1 << (i % 8)
		}
	}
}

// setInPlace replaces cell i (same day) when c fits; frozen says a snapshot may be reading data,
// which is then copied first.
func (s *series) setInPlace(i int, c *cellv, frozen bool) bool {
	if !s.fits(c) {
		return false
	}
	if frozen {
		s.data = slices.Clone(s.data)
	}
	s.write(i, c)
	return true
}

// appendInPlace adds c after the last cell when it fits; a snapshot reading data only reads the
// slots below n, so the new slot is written in place unless it shares a stockout byte with them.
func (s *series) appendInPlace(c *cellv, frozen bool) bool {
	n := int(s.n)
	if n == 0 || n >= int(s.cap) || !s.fits(c) {
		return false
	}
	delta := int64(c.day) - int64(s.day0)
	switch s.wOff {
	case 0:
		if delta != 7*int64(n) {
			return false
		}
	case 2:
		if delta > math.MaxUint16 {
			return false
		}
		binary.LittleEndian.PutUint16(s.data[2*n:], uint16(delta))
	case 4:
		binary.LittleEndian.PutUint32(s.data[4*n:], uint32(delta))
	}
	if frozen && s.stock && n%8 != 0 {
		s.data = slices.Clone(s.data)
	}
	s.write(n, c)
	s.n++
	return true
}

// insertInPlace puts c, a week missing before the last, at slot i (its place in week order) when
// the series keeps week offsets, has room and c fits the widths: the cells from i move up one
// slot, column by column. Weeks of one series arrive out of order when import jobs run side by
// side; re-laying the series out for each was most of such an import's CPU.
func (s *series) insertInPlace(i int, c *cellv, frozen bool) bool {
	n := int(s.n)
	if s.wOff == 0 || s.stock || n == 0 || n >= int(s.cap) || c.day < s.day0 || !s.fits(c) {
		return false
	}
	delta := int64(c.day) - int64(s.day0)
	if s.wOff == 2 && delta > math.MaxUint16 {
		return false
	}
	if frozen { // a snapshot may be reading the slots that move
		s.data = slices.Clone(s.data)
	}
	act, fc, sig, _ := s.columns()
	shift := func(at, w int) {
		copy(s.data[at+(i+1)*w:at+(n+1)*w], s.data[at+i*w:at+n*w])
	}
	shift(0, int(s.wOff))
	shift(act, int(s.wAct))
	shift(fc, fcWidth(s.wFc))
	shift(sig, int(s.wSig))
	switch s.wOff {
	case 2:
		binary.LittleEndian.PutUint16(s.data[2*i:], uint16(delta))
	case 4:
		binary.LittleEndian.PutUint32(s.data[4*i:], uint32(delta))
	}
	s.write(i, c)
	s.n++
	return true
}

// grow moves the cells into new data with room for extra more, column by column at the same
// widths (new data: a snapshot may still be reading the old); false when the series is at
// maxCells.
func (s *series) grow(extra int) bool {
	n := int(s.n)
	newCap := min(n+extra, maxCells)
	if newCap <= int(s.cap) {
		return false
	}
	oAct, oFc, oSig, oStk := s.columns()
	old := s.data
	s.cap = uint16(newCap)
	act, fc, sig, stk := s.columns()
	size := stk
	if s.stock {
		size += (newCap + 7) / 8
	}
	data := make([]byte, size)
	wOff, wAct, wFc, wSig := n*int(s.wOff), n*int(s.wAct), n*fcWidth(s.wFc), n*int(s.wSig)
	copy(data[:wOff], old[:wOff])
	copy(data[act:act+wAct], old[oAct:oAct+wAct])
	copy(data[fc:fc+wFc], old[oFc:oFc+wFc])
	copy(data[sig:sig+wSig], old[oSig:oSig+wSig])
	if s.stock {
		copy(data[stk:], old[oStk:oStk+(n+7)/8])
	}
	s.data = data
	return true
}

// layout stores cells (sorted by day, distinct) with room for spare more, each column as narrow as
// the cells allow. It always allocates new data: a snapshot may still be reading the old.
func (s *series) layout(cells []cellv, spare int) {
	n := len(cells)
	s.n, s.cap, s.day0 = uint16(n), uint16(min(n+spare, maxCells)), 0
	s.wOff, s.wAct, s.wFc, s.wSig, s.stock = 0, 0, fcSame, 0, false
	if n == 0 {
		s.data = nil
		return
	}
	s.day0 = cells[0].day
	for i := range cells {
		c := &cells[i]
		if c.day != s.day0+7*int32(i) {
			s.wOff = 2
		}
		s.wAct = max(s.wAct, classOf(c.actual))
		s.wSig = max(s.wSig, classOf(c.signals))
		s.stock = s.stock || c.stockout
	}
	if s.wOff != 0 && int64(cells[n-1].day)-int64(s.day0) > math.MaxUint16 {
		s.wOff = 4
	}
	for i := range cells {
		if math.Float64bits(cells[i].forecast) != math.Float64bits(cells[i].actual) {
			s.wFc = 0
			break
		}
	}
	if s.wFc != fcSame {
		for i := range cells {
			s.wFc = max(s.wFc, classOf(cells[i].forecast))
		}
	}
	_, _, _, stk := s.columns()
	size := stk
	if s.stock {
		size += (int(s.cap) + 7) / 8
	}
	s.data = make([]byte, size)
	for i := range cells {
		switch s.wOff {
		case 2:
			binary.LittleEndian.PutUint16(s.data[2*i:], uint16(cells[i].day-s.day0))
		case 4:
			binary.LittleEndian.PutUint32(s.data[4*i:], uint32(cells[i].day-s.day0))
		}
		s.write(i, &cells[i])
	}
}

// spare is the room left after a layout caused by series growing: an eighth, so that a series
// written a week at a time is laid out again a logarithmic number of times.
func spare(n int) int { return max(2, n/8) }

// served reports whether the cell's week may be read: a cell out of bounds (written by an earlier
// version without bounds, see supplyplan.MaxStored) is quarantined, left out of every read.
func (c *cellv) served() bool { return supplyplan.WeekDemandOK(c.actual+c.signals, c.forecast) }

func (c *cellv) value() supplyplan.WeekValue {
	return supplyplan.WeekValue{Week: dayTime(c.day), Actual: c.actual + c.signals, Forecasted: c.forecast,
		Stockout: c.stockout}
}

type item struct{ sku, loc uint32 }

// Series are kept in pages of up to pageSize: growing a tenant never copies all of them, and a
// snapshot copies only the pages a write changes while it runs.
const (
	pageBits = 12
	pageSize = 1 << pageBits
	pageMask = pageSize - 1
)

type seriesPage struct {
	s     []series
	epoch uint64 // the tenant's epoch when s was last copied (or created)
}

// tenant is one organization's data. The committer writes under mu; readers hold it shared.
type tenant struct {
	mu         sync.RWMutex
	names      []string          // interned strings by id
	ids        map[string]uint32 // string -> id
	pages      []seriesPage
	count      int32
	items      map[item]int32 // the first series (channel) of a sku and location
	signals    sigSet         // keys of the applied signal ids of the dedup window
	sigTouched uint64         // what sigSet.touch read, kept so that its loads stay
	// sigNewest is the Unix day of the newest week of the applied signals (when sigHasNewest): the
	// dedup window (supplyplan.SignalDedupWeeks) ends there.
	sigNewest    int32
	sigHasNewest bool
	// A snapshot takes a view of the pages (view) and reads it without the lock; while it does
	// (frozen), a write copies a page it changes that predates the view, and a series' data it
	// changes in place.
	epoch   uint64
	frozen  bool
	scratch []cellv // the committer's
	run     []cellv // the committer's
	// sorted is the series in key order, built by keys and dropped when a series is added (under
	// mu held exclusively); sortedMu guards it between readers.
	sortedMu sync.Mutex
	sorted   []int32
}

func newTenant() *tenant {
	return &tenant{ids: map[string]uint32{}, items: map[item]int32{}}
}

// at returns series i for reading.
func (t *tenant) at(i int32) *series { return &t.pages[i>>pageBits].s[i&pageMask] }

// mut returns series i for writing (copying its page first when a snapshot may be reading it).
func (t *tenant) mut(i int32) *series {
	p := &t.pages[i>>pageBits]
	if t.frozen && p.epoch < t.epoch {
		p.s = slices.Clone(p.s)
		p.epoch = t.epoch
	}
	return &p.s[i&pageMask]
}

// intern returns the id of name, adding a private copy (so that the index never pins a caller's
// or a frame's buffer).
func (t *tenant) intern(name string) uint32 {
	if id, ok := t.ids[name]; ok {
		return id
	}
	name = cloneString(name)
	id := uint32(len(t.names))
	t.names = append(t.names, name)
	t.ids[name] = id
	return id
}

func cloneString(s string) string {
	if s == "" {
		return ""
	}
	return string([]byte(s))
}

// lookup returns the series of key (normalized) or -1, without changing anything.
func (t *tenant) lookup(key supplyplan.DemandKey) int32 {
	sku, ok1 := t.ids[key.SKU]
	loc, ok2 := t.ids[key.Location]
	ch, ok3 := t.ids[key.Channel]
	if !ok1 || !ok2 || !ok3 {
		return -1
	}
	head, ok := t.items[item{sku, loc}]
	if !ok {
		return -1
	}
	for i := head; i >= 0; i = t.at(i).next {
		if t.at(i).ch == ch {
			return i
		}
	}
	return -1
}

// seriesFor returns the series of key (normalized), creating it. Channels of a sku and location
// are chained in creation order.
func (t *tenant) seriesFor(key supplyplan.DemandKey) int32 {
	if i := t.lookup(key); i >= 0 {
		return i
	}
	sku, loc, ch := t.intern(key.SKU), t.intern(key.Location), t.intern(key.Channel)
	i := t.count
	if int(i>>pageBits) == len(t.pages) {
		t.pages = append(t.pages, seriesPage{epoch: t.epoch})
	}
	p := &t.pages[i>>pageBits]
	p.s = append(p.s, series{sku: sku, loc: loc, ch: ch, next: -1})
	t.count++
	t.sorted = nil
	it := item{sku, loc}
	head, ok := t.items[it]
	if !ok {
		t.items[it] = i
		return i
	}
	last := head
	for j := t.at(head).next; j >= 0; j = t.at(j).next {
		last = j
	}
	t.mut(last).next = i
	return i
}

// upsert sets the imported values of cells (sorted by nothing: the last of a day wins), keeping
// their signals.
//
// Cells after the last one and weeks already present are written in place, one by one, while they
// fit the column widths; a full series grows by copying its columns (grow) rather than by decoding
// and encoding every cell. Only what remains re-lays the series out. An import in week order
// brings each series one week after the other: re-laying it out cell by cell at each growth was
// most of an embedded import's CPU.
func (t *tenant) upsert(si int32, run []cellv) {
	s := t.mut(si)
	inPlace := 0
	for ; inPlace < len(run) && s.n > 0; inPlace++ {
		c := run[inPlace]
		if last := s.day(int(s.n) - 1); c.day > last {
			if !s.appendInPlace(&c, t.frozen) &&
				!(s.n == s.cap && s.fits(&c) && s.grow(spare(int(s.n)+1)) && s.appendInPlace(&c, false)) {
				break
			}
		} else if i := s.search(c.day); i < int(s.n) && s.day(i) == c.day {
			cur := s.cell(i)
			cur.actual, cur.forecast, cur.stockout = c.actual, c.forecast, c.stockout
			if !s.setInPlace(i, &cur, t.frozen) {
				break
			}
		} else if !s.insertInPlace(i, &c, t.frozen) {
			break
		}
	}
	if inPlace == len(run) {
		if n := int(s.n); s.wOff != 0 && int64(s.day(n-1))-int64(s.day0) == 7*int64(n-1) {
			// The missing weeks came in: consecutive again, the offsets column goes.
			cells := s.decode(t.scratch[:0])
			s.layout(cells, int(s.cap)-n)
			t.scratch = cells[:0]
		}
		return
	}
	grew := s.n > 0
	cells := s.decode(t.scratch[:0])
	for _, c := range run[inPlace:] {
		n := len(cells)
		if n == 0 || cells[n-1].day < c.day { // imports usually arrive in week order
			cells = append(cells, c)
			continue
		}
		i := sort.Search(n, func(i int) bool { return cells[i].day >= c.day })
		if cells[i].day == c.day {
			cells[i].actual, cells[i].forecast, cells[i].stockout = c.actual, c.forecast, c.stockout
			continue
		}
		cells = slices.Insert(cells, i, c)
	}
	extra := 0
	if grew && len(cells) > int(s.n) {
		extra = spare(len(cells))
	}
	s.layout(cells, extra)
	t.scratch = cells[:0]
}

// addSignal adds qty to the signals of the week day.
func (t *tenant) addSignal(si int32, day int32, qty float64) {
	s := t.mut(si)
	if s.n > 0 {
		if last := s.day(int(s.n) - 1); day > last {
			c := cellv{day: day, signals: qty}
			if s.appendInPlace(&c, t.frozen) {
				return
			}
		} else if i := s.search(day); i < int(s.n) && s.day(i) == day {
			c := s.cell(i)
			c.signals += qty
			if s.setInPlace(i, &c, t.frozen) {
				return
			}
		}
	}
	grew := s.n > 0
	cells := s.decode(t.scratch[:0])
	i := sort.Search(len(cells), func(i int) bool { return cells[i].day >= day })
	if i < len(cells) && cells[i].day == day {
		cells[i].signals += qty
	} else {
		cells = slices.Insert(cells, i, cellv{day: day, signals: qty})
	}
	extra := 0
	if grew && len(cells) > int(s.n) {
		extra = spare(len(cells))
	}
	s.layout(cells, extra)
	t.scratch = cells[:0]
}

// read returns the weeks of key in [lo, hi]; key is normalized. Callers hold t.mu shared.
func (t *tenant) read(key supplyplan.DemandKey, lo, hi int32) []supplyplan.WeekValue {
	if key.Channel != supplyplan.ChannelAll {
		i := t.lookup(key)
		if i < 0 {
			return nil
		}
		return readOne(t.at(i), lo, hi)
	}
	sku, ok1 := t.ids[key.SKU]
	loc, ok2 := t.ids[key.Location]
	if !ok1 || !ok2 {
		return nil
	}
	head, ok := t.items[item{sku, loc}]
	if !ok {
		return nil
	}
	if t.at(head).next < 0 {
		return readOne(t.at(head), lo, hi)
	}
	// Sum the channels week by week: a merge of sorted windows.
	var all []cellv
	for si := head; si >= 0; si = t.at(si).next {
		s := t.at(si)
		i, j := s.window(lo, hi)
		for ; i < j; i++ {
			if c := s.cell(i); c.served() {
				all = append(all, cellv{day: c.day, actual: c.actual + c.signals, forecast: c.forecast, stockout: c.stockout})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b cellv) int { return int(a.day) - int(b.day) })
	var out []supplyplan.WeekValue
	for i := 0; i < len(all); {
		j, v := i, supplyplan.WeekValue{Week: dayTime(all[i].day)}
		for ; j < len(all) && all[j].day == all[i].day; j++ {
			v.Actual += all[j].actual
			v.Forecasted += all[j].forecast
			v.Stockout = v.Stockout || all[j].stockout
		}
		out = append(out, v)
		i = j
	}
	return out
}

func readOne(s *series, lo, hi int32) []supplyplan.WeekValue {
	i, j := s.window(lo, hi)
	if i >= j {
		return nil
	}
	out := make([]supplyplan.WeekValue, 0, j-i)
	for ; i < j; i++ {
		if c := s.cell(i); c.served() {
			out = append(out, c.value())
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// each calls fn for every series. Callers hold t.mu (shared).
func (t *tenant) each(fn func(*series)) {
	for p := range t.pages {
		s := t.pages[p].s
		for i := range s {
			fn(&s[i])
		}
	}
}

func (t *tenant) key(s *series) supplyplan.DemandKey {
	return supplyplan.DemandKey{SKU: t.names[s.sku], Location: t.names[s.loc], Channel: t.names[s.ch]}
}

// keys returns the tenant's keys sorted. Callers hold t.mu shared. The order is kept between calls
// (4 bytes a series) until a series is added: a client paging through every series of a big
// tenant asks for it on every page.
func (t *tenant) keys() []supplyplan.DemandKey {
	t.sortedMu.Lock()
	defer t.sortedMu.Unlock()
	order := t.order()
	out := make([]supplyplan.DemandKey, 0, len(order))
	for _, si := range order {
		if s := t.at(si); s.n > 0 {
			out = append(out, t.key(s))
		}
	}
	return out
}

// order returns the series in key order, sorting them when a series was added since the last
// call. Callers hold t.mu shared and t.sortedMu.
func (t *tenant) order() []int32 {
	if t.sorted == nil {
		order := make([]int32, t.count)
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int { return compareKeys(t.key(t.at(a)), t.key(t.at(b))) })
		t.sorted = order
	}
	return t.sorted
}

// keyPage is supplyplan.PageDemandKeys over the kept order, comparing interned ids: it walks 4
// bytes a series and builds only the page's keys. Callers hold t.mu shared.
func (t *tenant) keyPage(f supplyplan.DemandKeyFilter, offset, limit int) ([]supplyplan.DemandKey, int) {
	out := []supplyplan.DemandKey{}
	id := func(name string) (uint32, bool) {
		v, ok := t.ids[name]
		return v, ok
	}
	sku, okSKU := id(f.SKU)
	loc, okLoc := id(f.Location)
	all := f.Channel == supplyplan.ChannelAll
	ch, okCh := id(f.Channel)
	if (f.SKU != "" && !okSKU) || (f.Location != "" && !okLoc) || (!all && !okCh) {
		return out, 0
	}
	t.sortedMu.Lock()
	defer t.sortedMu.Unlock()
	total := 0
	var prevSKU, prevLoc uint32
	for _, si := range t.order() {
		s := t.at(si)
		if s.n == 0 || (f.SKU != "" && s.sku != sku) || (f.Location != "" && s.loc != loc) {
			continue
		}
		if all {
			if total > 0 && s.sku == prevSKU && s.loc == prevLoc {
				continue
			}
			prevSKU, prevLoc = s.sku, s.loc
		} else if s.ch != ch {
			continue
		}
		if total >= offset && total < offset+limit {
			k := t.key(s)
			if all {
				k.Channel = supplyplan.ChannelAll
			}
			out = append(out, k)
		}
		total++
	}
	return out, total
}

type groupKey struct {
	sku, location, channel string
	day                    int32
}

// idFilter is the ids of a filter's strings; nil admits everything.
type idFilter map[uint32]struct{}

func (t *tenant) filterOf(list []string) idFilter {
	if len(list) == 0 {
		return nil
	}
	f := idFilter{}
	for _, v := range list {
		if id, ok := t.ids[v]; ok {
			f[id] = struct{}{}
		}
	}
	return f
}

func (f idFilter) has(id uint32) bool {
	if f == nil {
		return true
	}
	_, ok := f[id]
	return ok
}

// aggregate sums the cells selected by q. Callers hold t.mu shared.
func (t *tenant) aggregate(q supplyplan.DemandQuery, group int) []supplyplan.DemandAggregate {
	lo, hi := dayRange(q.From, q.To)
	skus, locs, chans := t.filterOf(q.SKUs), t.filterOf(q.Locations), t.filterOf(channelFilter(q.Channels))
	groups := map[groupKey]*supplyplan.DemandAggregate{}
	var total supplyplan.DemandAggregate
	t.each(func(s *series) {
		if !skus.has(s.sku) || !locs.has(s.loc) || !chans.has(s.ch) {
			return
		}
		i, j := s.window(lo, hi)
		if i >= j {
			return
		}
		if group == 0 {
			for ; i < j; i++ {
				if c := s.cell(i); c.served() {
					total.Actual += c.actual + c.signals
					total.Forecasted += c.forecast
					total.Weeks++
				}
			}
			return
		}
		var gk groupKey
		if group&groupSKU != 0 {
			gk.sku = t.names[s.sku]
		}
		if group&groupLocation != 0 {
			gk.location = t.names[s.loc]
		}
		if group&groupChannel != 0 {
			gk.channel = t.names[s.ch]
		}
		for ; i < j; i++ {
			c := s.cell(i)
			if !c.served() {
				continue
			}
			if group&groupWeek != 0 {
				gk.day = c.day
			}
			a := groups[gk]
			if a == nil {
				a = &supplyplan.DemandAggregate{SKU: gk.sku, Location: gk.location, Channel: gk.channel}
				if group&groupWeek != 0 {
					a.Week = dayTime(gk.day)
				}
				groups[gk] = a
			}
			a.Actual += c.actual + c.signals
			a.Forecasted += c.forecast
			a.Weeks++
		}
	})
	if group == 0 {
		return []supplyplan.DemandAggregate{total}
	}
	out := make([]supplyplan.DemandAggregate, 0, len(groups))
	for _, a := range groups {
		out = append(out, *a)
	}
	sortAggregates(out)
	return out
}

// quarantined counts the tenant's cells that are not served. Callers hold t.mu (or own t).
func (t *tenant) quarantined() int {
	n := 0
	t.each(func(s *series) {
		for i := 0; i < int(s.n); i++ {
			if c := s.cell(i); !c.served() {
				n++
			}
		}
	})
	return n
}

// memory returns the bytes the tenant's index holds, by part (tests and docs).
func (t *tenant) memory() (seriesBytes, dataBytes, slack int) {
	t.each(func(s *series) {
		dataBytes += cap(s.data)
		if s.cap > 0 {
			slack += cap(s.data) * int(s.cap-s.n) / int(s.cap)
		}
	})
	for p := range t.pages {
		seriesBytes += cap(t.pages[p].s) * int(unsafe.Sizeof(series{}))
	}
	return
}

// sigFloor returns the day of the oldest week a signal may fall in, and false while the tenant has
// applied no signal (no window yet).
func (t *tenant) sigFloor() (int32, bool) {
	if !t.sigHasNewest {
		return 0, false
	}
	return signalFloor(t.sigNewest), true
}

// signalFloor is supplyplan.SignalFloor on days.
func signalFloor(newest int32) int32 { return newest - 7*supplyplan.SignalDedupWeeks }

// moveSignalWindow makes newest the newest week of the applied signals when it is newer, and drops
// the keys the window left behind. A record moves it once at most, after all its signals were
// judged, live and on replay alike, so the window is decided by the log alone.
func (t *tenant) moveSignalWindow(newest int32) {
	if t.sigHasNewest && newest <= t.sigNewest {
		return
	}
	unknownAs := newest // keys of an earlier version's snapshot: as if of the newest week known
	if t.sigHasNewest {
		unknownAs = t.sigNewest
	}
	t.sigNewest, t.sigHasNewest = newest, true
	t.signals.prune(signalFloor(newest), unknownAs)
}
