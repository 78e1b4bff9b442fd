package http

import (
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/telemetry"
)

// Rate limits of the REST API (docs/operations.md#rate-limits). A tenant request takes a token
// from its key's bucket and from its organization's bucket of its class (read: GET and HEAD,
// write: everything else, import: POST /api/import/...), once its key is checked. Responses carry
// the IETF draft's RateLimit-Policy and RateLimit headers; a refusal is 429 RATE_LIMITED with
// Retry-After. With a store (Redis) the buckets are shared by every node; without, each node
// keeps its own.

// RateLimiterConfig configures a RateLimiter.
type RateLimiterConfig struct {
	// Defaults are the limits of organizations whose plan sets none (the --rate-limit-* flags).
	Defaults supplyplan.RateLimits
	// Plans are the plans' overrides (plans.json "rateLimits"), by plan name.
	Plans map[string]*supplyplan.RateLimits
	// Store shares the buckets between nodes; nil: in this process.
	Store supplyplan.RateLimitStore
	// Metrics counts refusals; Logger says when the store fails (requests are then let through).
	Metrics *telemetry.Metrics
	Logger  *slog.Logger
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// RateLimiter decides whether a request may run now.
type RateLimiter struct {
	cfg      RateLimiterConfig
	defaults *planLimits
	plans    map[string]*planLimits
	shards   [32]bucketShard
	warned   atomic.Int64 // unix seconds of the last "store failed" warning
}

// planLimits are one plan's limits by class, with the RateLimit-Policy header values made once.
type planLimits struct {
	key, org [3]supplyplan.RateLimit
	policy   [3][]byte
}

// NewRateLimiter returns a limiter; nil when no limit of any plan is on.
func NewRateLimiter(cfg RateLimiterConfig) *RateLimiter {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	rl := &RateLimiter{cfg: cfg, defaults: newPlanLimits(cfg.Defaults), plans: map[string]*planLimits{}}
	on := rl.defaults.on()
	for name, o := range cfg.Plans {
		if o != nil {
			rl.plans[name] = newPlanLimits(cfg.Defaults.Over(o))
			on = on || rl.plans[name].on()
		}
	}
	for i := range rl.shards {
		rl.shards[i].m = map[bucketID]*memBucket{}
	}
	if !on {
		return nil
	}
	return rl
}

func newPlanLimits(l supplyplan.RateLimits) *planLimits {
	p := &planLimits{}
	for _, c := range []supplyplan.RateClass{supplyplan.RateRead, supplyplan.RateWrite, supplyplan.RateImport} {
		p.key[c], p.org[c] = l.Key(c), l.Org(c)
		var b []byte
		for i, lim := range []supplyplan.RateLimit{p.key[c], p.org[c]} {
			if !lim.On() {
				continue
			}
			if len(b) > 0 {
				b = append(b, ", "...)
			}
			b = appendPolicyName(b, i == 1, c)
			b = append(b, ";q="...)
			b = strconv.AppendInt(b, int64(lim.Burst), 10)
			b = append(b, ";w="...)
			b = strconv.AppendInt(b, int64(max(1, ceilSeconds(time.Duration(float64(lim.Burst)/lim.RPS*1e9)))), 10)
		}
		p.policy[c] = b
	}
	return p
}

func (p *planLimits) on() bool {
	for c := range p.key {
		if p.key[c].On() || p.org[c].On() {
			return true
		}
	}
	return false
}

// appendPolicyName appends the quoted policy name: "key-read", "org-import", ...
func appendPolicyName(b []byte, org bool, c supplyplan.RateClass) []byte {
	b = append(b, '"')
	if org {
		b = append(b, "org-"...)
	} else {
		b = append(b, "key-"...)
	}
	b = append(b, c.String()...)
	return append(b, '"')
}

func ceilSeconds(d time.Duration) int {
	s := int(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return s
}

// rateState is what the limiter decided for a request, for its response headers.
type rateState struct {
	pl    *planLimits
	class supplyplan.RateClass
	org   [2]bool // which bucket each taken entry is (false: the key's)
	taken [2]supplyplan.RateTaken
	n     int
}

// classOf is the bucket class of a request of method on an ordinary (non-import) route.
func classOf(method []byte) supplyplan.RateClass {
	switch string(method) {
	case "GET", "HEAD":
		return supplyplan.RateRead
	}
	return supplyplan.RateWrite
}

// take takes a token for r from its key's and its organization's bucket of class: nil, or the
// 429 to answer. Either way r's response gets the RateLimit headers.
func (rl *RateLimiter) take(r *Request, class supplyplan.RateClass, keyID, orgID, plan string) error {
	pl := rl.defaults
	if p, ok := rl.plans[plan]; ok {
		pl = p
	}
	st := &r.rate
	st.pl, st.class, st.n = pl, class, 0
	var limits [2]supplyplan.RateLimit
	var ids [2]bucketID
	if l := pl.key[class]; l.On() && keyID != "" {
		limits[st.n], ids[st.n], st.org[st.n] = l, bucketID{id: keyID, class: class}, false
		st.n++
	}
	if l := pl.org[class]; l.On() && orgID != "" {
		limits[st.n], ids[st.n], st.org[st.n] = l, bucketID{id: orgID, class: class, org: true}, true
		st.n++
	}
	if st.n == 0 {
		return nil
	}
	now := r.start
	switch {
	case rl.cfg.Now != nil:
		now = rl.cfg.Now()
	case now.IsZero():
		now = time.Now()
	}
	var ok bool
	if rl.cfg.Store != nil {
		bs := make([]supplyplan.RateBucket, st.n)
		for i := range bs {
			bs[i] = supplyplan.RateBucket{Key: ids[i].storeKey(), Limit: limits[i]}
		}
		var err error
		if ok, err = rl.cfg.Store.TakeTokens(r.Context, bs, now, st.taken[:st.n]); err != nil {
			// A rate limit is a protection, not a dependency: without the store, requests run.
			if sec := now.Unix(); rl.warned.Swap(sec) != sec {
				rl.cfg.Logger.Warn("rate limit store failed; requests are not limited meanwhile", "err", err)
			}
			st.n = 0
			return nil
		}
	} else {
		var memo *connBuckets
		if lc, isConn := r.Ctx.Conn().(*lingerConn); isConn {
			memo = &lc.buckets
		}
		ok = rl.takeLocal(ids[:st.n], limits[:st.n], now.UnixNano(), st.taken[:st.n], memo)
	}
	if ok {
		return nil
	}
	scope, wait := "key", time.Duration(0)
	for i := range st.n {
		if st.taken[i].Wait > wait {
			wait = st.taken[i].Wait
			scope = "key"
			if st.org[i] {
				scope = "organization"
			}
		}
	}
	label := "key"
	if scope == "organization" {
		label = "org"
	}
	rl.cfg.Metrics.RateLimited(label, class.String())
	return supplyplan.RateLimited(scope, wait)
}

// writeHeaders sets RateLimit-Policy and RateLimit on the response (IETF
// draft-ietf-httpapi-ratelimit-headers): one list item per bucket the request took from. They are
// sent once one of the buckets is half empty, and on every 429: a client far from its limits gets
// no extra bytes (the draft lets a server omit them), and the common request costs no header work.
func (st *rateState) writeHeaders(h *fasthttp.ResponseHeader) {
	if st.pl == nil || st.n == 0 {
		return
	}
	show := false
	for i := range st.n {
		lim := st.pl.key[st.class]
		if st.org[i] {
			lim = st.pl.org[st.class]
		}
		show = show || 2*st.taken[i].Remaining <= lim.Burst
	}
	if !show {
		return
	}
	h.SetBytesV("RateLimit-Policy", st.pl.policy[st.class])
	var buf [160]byte
	b := buf[:0]
	for i := range st.n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendPolicyName(b, st.org[i], st.class)
		b = append(b, ";r="...)
		b = strconv.AppendInt(b, int64(max(st.taken[i].Remaining, 0)), 10)
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, int64(ceilSeconds(st.taken[i].Full)), 10)
	}
	h.SetBytesV("RateLimit", b)
}

// bucketID names one bucket of this process.
type bucketID struct {
	id    string
	class supplyplan.RateClass
	org   bool
}

// storeKey is the bucket's key in the shared store: rl:<k|o>:<class>:<id>.
func (b bucketID) storeKey() string {
	kind := "k:"
	if b.org {
		kind = "o:"
	}
	return "rl:" + kind + b.class.String() + ":" + b.id
}

type memBucket struct {
	mu sync.Mutex
	b  supplyplan.TokenBucket
}

type bucketShard struct {
	mu sync.RWMutex
	m  map[bucketID]*memBucket
}

func (rl *RateLimiter) bucket(id bucketID) *memBucket {
	h := uint32(2166136261)
	for i := 0; i < len(id.id); i++ {
		h = (h ^ uint32(id.id[i])) * 16777619
	}
	sh := &rl.shards[h%uint32(len(rl.shards))]
	sh.mu.RLock()
	b := sh.m[id]
	sh.mu.RUnlock()
	if b != nil {
		return b
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if b = sh.m[id]; b == nil {
		b = &memBucket{}
		sh.m[id] = b
	}
	return b
}

// connBuckets are the buckets a connection's last request of each class took from: a
// connection's requests usually carry one key, and a bucket, once made, is never replaced, so the
// next request finds them without the shard's hash, lock and map (the shared read lock was a
// cache line both cores wrote at every request). Used by the connection's goroutine only.
type connBuckets struct {
	rl  *RateLimiter
	ids [3][2]bucketID
	bs  [3][2]*memBucket
}

// of returns the i-th bucket id of a request, remembered.
func (m *connBuckets) of(rl *RateLimiter, i int, id bucketID) *memBucket {
	if m == nil || int(id.class) >= len(m.bs) {
		return rl.bucket(id)
	}
	if m.rl != rl {
		*m = connBuckets{rl: rl}
	}
	if b := m.bs[id.class][i]; b != nil && m.ids[id.class][i] == id {
		return b
	}
	b := rl.bucket(id)
	m.ids[id.class][i], m.bs[id.class][i] = id, b
	return b
}

// takeLocal is TakeTokens on this process's buckets: each bucket's lock held (the key's before the
// organization's, always in that order) while it decides. memo (nil: none) remembers the
// connection's buckets.
func (rl *RateLimiter) takeLocal(ids []bucketID, limits []supplyplan.RateLimit, now int64, out []supplyplan.RateTaken, memo *connBuckets) bool {
	var bs [2]*memBucket
	var states [2]supplyplan.TokenBucket
	for i, id := range ids {
		bs[i] = memo.of(rl, i, id)
		bs[i].mu.Lock()
		states[i] = bs[i].b
	}
	ok := supplyplan.TakeTokens(states[:len(ids)], limits, now, out)
	for i := len(ids) - 1; i >= 0; i-- {
		bs[i].b = states[i]
		bs[i].mu.Unlock()
	}
	return ok
}

// limit applies the rate limits to a request whose key is checked (nil limiter: none).
func (s *Server) limit(r *Request, class supplyplan.RateClass, org *supplyplan.Organization) error {
	rl := s.cfg.RateLimits
	if rl == nil {
		return nil
	}
	plan := ""
	if org != nil {
		plan = org.Plan
	}
	return rl.take(r, class, r.Principal.KeyID, r.Principal.OrgID, plan)
}
