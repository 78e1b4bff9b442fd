package actors

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics/forecast"
)

// seriesResult is one series' forecast (Result is zero and NoHistory true without history). A
// result served from the cache keeps its periods packed in the cache entry (packed, never
// changed) rather than in Result.Periods: read them with periods, period and numPeriods.
type seriesResult struct {
	Result       forecast.Result
	NoHistory    bool
	HistoryWeeks int
	packed       *cached // when set, the first h periods of packed are the result's
	h            int
}

// truncated returns r with its first h periods (sharing them: results are never changed).
func (r seriesResult) truncated(h int) seriesResult {
	if r.packed != nil {
		r.h = min(r.h, h)
		return r
	}
	if len(r.Result.Periods) > h {
		r.Result.Periods = r.Result.Periods[:h:h]
	}
	return r
}

// numPeriods is the number of forecast weeks.
func (r *seriesResult) numPeriods() int {
	if r.packed != nil {
		return r.h
	}
	return len(r.Result.Periods)
}

// period returns week i of the forecast.
func (r *seriesResult) period(i int) forecast.Period {
	if r.packed != nil {
		return r.packed.period(i)
	}
	return r.Result.Periods[i]
}

// periods returns the forecast weeks (built from the cache entry when packed).
func (r *seriesResult) periods() []forecast.Period {
	if r.packed == nil {
		return r.Result.Periods
	}
	out := make([]forecast.Period, r.h)
	for i := range out {
		out[i] = r.packed.period(i)
	}
	return out
}

// full returns the result with its periods in Result.Periods.
func (r *seriesResult) full() forecast.Result {
	res := r.Result
	res.Periods = r.periods()
	return res
}

// resultCache is an LRU of computed forecasts bounded in bytes. Its accounting follows what an
// entry holds (entrySize, checked against the heap in TestResultCacheAccounting): the options a
// forecast was computed with are shared by every entry computed with them (cacheVariant), and the
// periods of a forecast without events are packed into one slice of numbers (cached).
type resultCache struct {
	mu       sync.Mutex
	max      int64
	size     int64
	n        int
	m        map[uint64]*cached // by hash of the entry key; entries of one hash are chained (hnext)
	seed     maphash.Seed
	lru      cached // sentinel: lru.next is the most recently used entry, lru.prev the least
	variants map[cacheVariant]*variantRef
}

// cacheKey names a computed forecast: the series and everything its forecast depends on.
type cacheKey struct {
	org       string
	key       supplyplan.DemandKey
	asOf      int64 // Unix seconds of the as-of week
	horizon   int   // computed horizon (computeHorizon)
	interval  float64
	model     string
	point     string
	transform string
	noEvents  bool
}

// cacheVariant is a cacheKey without its series.
type cacheVariant struct {
	org       string
	asOf      int64
	horizon   int
	interval  float64
	model     string
	point     string
	transform string
	noEvents  bool
}

func (k *cacheKey) variant() cacheVariant {
	return cacheVariant{org: k.org, asOf: k.asOf, horizon: k.horizon, interval: k.interval, model: k.model,
		point: k.point, transform: k.transform, noEvents: k.noEvents}
}

// variantRef is a variant shared by the entries computed with it.
type variantRef struct {
	cacheVariant
	refs int
}

type entryKey struct {
	v *variantRef
	k supplyplan.DemandKey
}

// cacheEntry is a computed forecast handed to put.
type cacheEntry struct {
	k       cacheKey
	stamp   uint64 // the tenant clock before the inputs were read
	liftGen uint64 // the lift model used (0: none)
	res     seriesResult
}

// cached is a forecast in the cache. Only the LRU links change after it is stored (under the
// cache's lock); everything else is read without it.
type cached struct {
	key        entryKey
	prev, next *cached
	hnext      *cached // the next entry of the same hash
	stamp      uint64
	liftGen    uint64

	model    string
	adi, cv2 float64 // the classification's
	interval float64
	errCorr  float64
	acc      [5]float64         // WAPE, MASE, Bias, SMAPE, MAPE where accMask has their bit
	start    int64              // Unix seconds of the week of period 0 (UTC); period i is i weeks later
	vals     []float64          // per period: baseline, lower, upper (quantity is the baseline, the multiplier 1), or with wide baseline, quantity, lower, upper, multiplier
	periods  *[]forecast.Period // the result as computed, when it does not pack

	size         int32
	accWindow    int32
	accPoints    int32
	historyWeeks int32
	n            int32 // periods
	transform    uint8 // index in transforms
	class        uint8 // index in classes
	accMask      uint8
	noHistory    bool
	wide         bool
}

func newResultCache(max int64) *resultCache {
	c := &resultCache{max: max, m: map[uint64]*cached{}, seed: maphash.MakeSeed(), variants: map[cacheVariant]*variantRef{}}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// The transforms and demand classes a result names, stored as their index.
var (
	transforms = []string{forecast.TransformNone, forecast.TransformLog, ""}
	classes    = []forecast.DemandClass{forecast.ClassSmooth, forecast.ClassErratic, forecast.ClassIntermittent, forecast.ClassLumpy, ""}
)

// cacheable reports whether a result can be cached: its transform and class are known ones.
func cacheable(r *seriesResult) bool {
	return slices.Contains(transforms, r.Result.Transform) && slices.Contains(classes, r.Result.Class.Class)
}

// weekOf is the week of period 0 as cached: UTC midnight, Unix seconds.
func weekOf(t time.Time) (int64, bool) {
	s := t.Unix()
	return s, time.Unix(s, 0).UTC() == t
}

// packable reports whether r's periods pack: no events, one week apart from a UTC week start.
func packable(r *seriesResult) (ok, wide bool) {
	ps := r.Result.Periods
	if len(ps) > 0 {
		if _, ok := weekOf(ps[0].WeekStart); !ok {
			return false, false
		}
	}
	for i := range ps {
		p := &ps[i]
		if p.Events != nil || p.WeekStart != ps[0].WeekStart.Add(time.Duration(i)*week) {
			return false, false
		}
		if math.Float64bits(p.Multiplier) != math.Float64bits(1) || math.Float64bits(p.Quantity) != math.Float64bits(p.Baseline) {
			wide = true
		}
	}
	return true, wide
}

// sizeClasses are the Go runtime's small object sizes (runtime/sizeclasses.go).
var sizeClasses = [...]uintptr{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320,
	352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200,
	3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432,
	19072, 20480, 21760, 24576, 27264, 28672, 32768}

// allocBytes is the memory an allocation of n bytes takes: its size class, or whole pages.
func allocBytes(n uintptr) int64 {
	if n == 0 {
		return 0
	}
	if i := sort.Search(len(sizeClasses), func(i int) bool { return sizeClasses[i] >= n }); i < len(sizeClasses) {
		return int64(sizeClasses[i])
	}
	return int64((n + 8191) &^ 8191)
}

// entryMapBytes is an entry's share of the map: its hash and pointer, at the load of a map that
// grows by doubling (about 3/4 full on average), plus its control byte.
var entryMapBytes = int64(8+unsafe.Sizeof(&cached{})+1) * 4 / 3

// entrySize is the memory a cached forecast holds.
func entrySize(r *seriesResult) int64 {
	n := allocBytes(unsafe.Sizeof(cached{})) + entryMapBytes // model names are shared (internModel)
	if r.NoHistory {
		return n
	}
	ok, wide := packable(r)
	if ok {
		per := uintptr(3)
		if wide {
			per = 5
		}
		return n + allocBytes(per*8*uintptr(len(r.Result.Periods)))
	}
	n += allocBytes(unsafe.Sizeof([]forecast.Period{})) + allocBytes(uintptr(cap(r.Result.Periods))*unsafe.Sizeof(forecast.Period{}))
	for i := range r.Result.Periods {
		n += allocBytes(uintptr(len(r.Result.Periods[i].Events)) * unsafe.Sizeof(forecast.AppliedEvent{}))
	}
	return n
}

// modelNames interns the model names of cached forecasts ("combination(ses+theta)" is built for
// each result), up to maxModelNames of them.
var (
	modelNames     sync.Map
	modelNameCount int64
	modelNameMu    sync.Mutex
)

const maxModelNames = 4096

func internModel(name string) string {
	if v, ok := modelNames.Load(name); ok {
		return v.(string)
	}
	modelNameMu.Lock()
	defer modelNameMu.Unlock()
	if v, ok := modelNames.Load(name); ok {
		return v.(string)
	}
	if modelNameCount >= maxModelNames {
		return name
	}
	modelNameCount++
	modelNames.Store(name, name)
	return name
}

// pack builds the cache entry of r.
func pack(r *seriesResult) *cached {
	c := &cached{noHistory: r.NoHistory, historyWeeks: int32(r.HistoryWeeks)}
	if r.NoHistory {
		return c
	}
	res := &r.Result
	c.model, c.interval, c.errCorr = internModel(res.Model), res.Interval, res.ErrorCorrelation
	c.transform = uint8(slices.Index(transforms, res.Transform))
	c.class, c.adi, c.cv2 = uint8(slices.Index(classes, res.Class.Class)), res.Class.ADI, res.Class.CV2
	for i, p := range []*float64{res.Accuracy.WAPE, res.Accuracy.MASE, res.Accuracy.Bias, res.Accuracy.SMAPE, res.Accuracy.MAPE} {
		if p != nil {
			c.acc[i], c.accMask = *p, c.accMask|1<<i
		}
	}
	c.accWindow, c.accPoints = int32(res.Accuracy.Window), int32(res.Accuracy.Points)
	c.n = int32(len(res.Periods))
	ok, wide := packable(r)
	if !ok {
		ps := res.Periods
		c.periods = &ps
		return c
	}
	c.wide = wide
	if len(res.Periods) > 0 {
		c.start, _ = weekOf(res.Periods[0].WeekStart)
	}
	per := 3
	if wide {
		per = 5
	}
	c.vals = make([]float64, 0, per*len(res.Periods))
	for _, p := range res.Periods {
		if wide {
			c.vals = append(c.vals, p.Baseline, p.Quantity, p.Lower, p.Upper, p.Multiplier)
		} else {
			c.vals = append(c.vals, p.Baseline, p.Lower, p.Upper)
		}
	}
	return c
}

// serves reports whether the entry holds the first want periods of its forecast.
func (c *cached) serves(want int) bool { return c.noHistory || int(c.n) >= want }

// period returns period i of a packed entry.
func (c *cached) period(i int) forecast.Period {
	p := forecast.Period{WeekStart: time.Unix(c.start, 0).UTC().Add(time.Duration(i) * week)}
	if c.wide {
		v := c.vals[5*i : 5*i+5]
		p.Baseline, p.Quantity, p.Lower, p.Upper, p.Multiplier = v[0], v[1], v[2], v[3], v[4]
	} else {
		v := c.vals[3*i : 3*i+3]
		p.Baseline, p.Quantity, p.Lower, p.Upper, p.Multiplier = v[0], v[0], v[1], v[2], 1
	}
	return p
}

// result is the entry as a result of want periods at most.
func (c *cached) result(want int) seriesResult {
	r := seriesResult{NoHistory: c.noHistory, HistoryWeeks: int(c.historyWeeks)}
	if c.noHistory {
		return r
	}
	r.Result = forecast.Result{Model: c.model, Transform: transforms[c.transform],
		Class: forecast.Classification{Class: classes[c.class], ADI: c.adi, CV2: c.cv2}, Interval: c.interval,
		ErrorCorrelation: c.errCorr, Accuracy: forecast.Accuracy{Window: int(c.accWindow), Points: int(c.accPoints)}}
	if c.accMask != 0 {
		acc := c.acc // one allocation for the five
		for i, p := range []**float64{&r.Result.Accuracy.WAPE, &r.Result.Accuracy.MASE, &r.Result.Accuracy.Bias,
			&r.Result.Accuracy.SMAPE, &r.Result.Accuracy.MAPE} {
			if c.accMask&(1<<i) != 0 {
				*p = &acc[i]
			}
		}
	}
	if c.periods != nil {
		r.Result.Periods = *c.periods
		return r.truncated(want)
	}
	r.packed, r.h = c, min(want, int(c.n))
	return r
}

func (c *resultCache) unlink(e *cached) {
	e.prev.next, e.next.prev = e.next, e.prev
}

func (c *resultCache) pushFront(e *cached) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

func (c *resultCache) hash(k entryKey) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(uintptr(unsafe.Pointer(k.v))))
	h.Write(b[:])
	h.WriteString(k.k.SKU)
	h.WriteByte(0)
	h.WriteString(k.k.Location)
	h.WriteByte(0)
	h.WriteString(k.k.Channel)
	return h.Sum64()
}

// find returns the entry of k, or nil (c.mu held).
func (c *resultCache) find(h uint64, k entryKey) *cached {
	e := c.m[h]
	for e != nil && e.key != k {
		e = e.hnext
	}
	return e
}

// get returns the entries of keys (nil where absent) and marks them used.
func (c *resultCache) get(keys []cacheKey) []*cached {
	out := make([]*cached, len(keys))
	c.mu.Lock()
	defer c.mu.Unlock()
	var v *variantRef
	for i := range keys {
		k := &keys[i]
		if v == nil || v.cacheVariant != k.variant() { // the keys of a call usually share one
			if v = c.variants[k.variant()]; v == nil {
				continue
			}
		}
		ek := entryKey{v, k.key}
		if e := c.find(c.hash(ek), ek); e != nil {
			c.unlink(e)
			c.pushFront(e)
			out[i] = e
		}
	}
	return out
}

// put stores entries, evicting the least recently used beyond the bound.
func (c *resultCache) put(entries []*cacheEntry) {
	packed := make([]*cached, len(entries))
	for i, e := range entries { // outside the lock
		if !cacheable(&e.res) {
			continue
		}
		p := pack(&e.res)
		p.stamp, p.liftGen, p.size = e.stamp, e.liftGen, int32(min(entrySize(&e.res), math.MaxInt32))
		packed[i] = p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range entries {
		p := packed[i]
		if p == nil || int64(p.size) > c.max {
			continue
		}
		vk := e.k.variant()
		v := c.variants[vk]
		if v == nil {
			v = &variantRef{cacheVariant: vk}
			c.variants[vk] = v
		}
		v.refs++ // before a replaced entry gives its reference back
		p.key = entryKey{v, e.k.key}
		h := c.hash(p.key)
		if old := c.find(h, p.key); old != nil {
			c.remove(old)
		}
		p.hnext = c.m[h]
		c.m[h] = p
		c.n++
		c.pushFront(p)
		c.size += int64(p.size)
		for c.size > c.max {
			c.remove(c.lru.prev)
		}
	}
}

// remove drops an entry (c.mu held).
func (c *resultCache) remove(e *cached) {
	c.unlink(e)
	h := c.hash(e.key)
	if first := c.m[h]; first == e {
		if e.hnext == nil {
			delete(c.m, h)
		} else {
			c.m[h] = e.hnext
		}
	} else {
		for p := first; p != nil; p = p.hnext {
			if p.hnext == e {
				p.hnext = e.hnext
				break
			}
		}
	}
	e.hnext = nil
	c.n--
	c.size -= int64(e.size)
	if e.key.v.refs--; e.key.v.refs == 0 {
		delete(c.variants, e.key.v.cacheVariant)
	}
}

// stats returns the number of entries and their estimated bytes.
func (c *resultCache) stats() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.size
}
