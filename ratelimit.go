package supplyplan

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Rate limits of the REST API (docs/operations.md#rate-limits): token buckets per API key and per
// organization, reads, writes and imports each in buckets of their own. A request takes one token
// from its key's bucket and one from its organization's, or none when either is empty (429
// RATE_LIMITED with Retry-After).

// RateLimit is one token bucket's size: RPS tokens come back a second, up to Burst.
type RateLimit struct {
	RPS   float64
	Burst int
}

// On reports whether the limit applies (a positive rate and burst).
func (l RateLimit) On() bool { return l.RPS > 0 && l.Burst > 0 }

// RateLimits are the limits an organization's requests run under: the --rate-limit-* defaults,
// or a plan's "rateLimits" in plans.json (each field it leaves out, or sets to 0, keeps the
// default).
type RateLimits struct {
	RPS         float64 `json:"rps,omitempty"`         // per key, reads and writes apart
	Burst       int     `json:"burst,omitempty"`       // per key
	OrgRPS      float64 `json:"orgRps,omitempty"`      // per organization, reads and writes apart
	OrgBurst    int     `json:"orgBurst,omitempty"`    // per organization
	ImportRPS   float64 `json:"importRps,omitempty"`   // import requests, per key and per organization
	ImportBurst int     `json:"importBurst,omitempty"` // import requests
}

// Over returns l with the fields o sets (non-zero) replacing l's.
func (l RateLimits) Over(o *RateLimits) RateLimits {
	if o == nil {
		return l
	}
	set := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	seti := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	set(&l.RPS, o.RPS)
	seti(&l.Burst, o.Burst)
	set(&l.OrgRPS, o.OrgRPS)
	seti(&l.OrgBurst, o.OrgBurst)
	set(&l.ImportRPS, o.ImportRPS)
	seti(&l.ImportBurst, o.ImportBurst)
	return l
}

// Validate refuses negative or non-finite values, naming the field.
func (l RateLimits) Validate() error {
	fe := FieldErrors{}
	l.validate(fe, "")
	return fe.Err()
}

func (l RateLimits) validate(fe FieldErrors, prefix string) {
	for name, v := range map[string]float64{"rps": l.RPS, "orgRps": l.OrgRPS, "importRps": l.ImportRPS,
		"burst": float64(l.Burst), "orgBurst": float64(l.OrgBurst), "importBurst": float64(l.ImportBurst)} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			fe.Add(prefix+name, "must be a number at least 0")
		}
	}
}

// RateClass is what a request spends: reads, writes and imports have buckets of their own.
type RateClass uint8

// Rate classes.
const (
	RateRead RateClass = iota
	RateWrite
	RateImport
)

func (c RateClass) String() string {
	switch c {
	case RateRead:
		return "read"
	case RateWrite:
		return "write"
	}
	return "import"
}

// Key returns the limit of one key's bucket of class c.
func (l RateLimits) Key(c RateClass) RateLimit {
	if c == RateImport {
		return RateLimit{RPS: l.ImportRPS, Burst: l.ImportBurst}
	}
	return RateLimit{RPS: l.RPS, Burst: l.Burst}
}

// Org returns the limit of one organization's bucket of class c.
func (l RateLimits) Org(c RateClass) RateLimit {
	if c == RateImport {
		return RateLimit{RPS: l.ImportRPS, Burst: l.ImportBurst}
	}
	return RateLimit{RPS: l.OrgRPS, Burst: l.OrgBurst}
}

// TokenBucket is a bucket's state: Tokens at At (unix nanoseconds). The zero value is a bucket
// never used (full).
type TokenBucket struct {
	Tokens float64
	At     int64
	Used   bool
}

// RateTaken is what one bucket says after a take.
type RateTaken struct {
	// Remaining is the whole tokens left.
	Remaining int
	// Wait is, when the bucket had no token, how long until it has one.
	Wait time.Duration
	// Full is how long until the bucket is full again (the draft RateLimit header's reset).
	Full time.Duration
}

// TakeTokens takes one token from each of buckets (refilled up to now at their limits) when every
// one has a token, else none: ok says which. It updates buckets and fills out (len(buckets)).
// The Redis store runs the same rule in a Lua script.
func TakeTokens(buckets []TokenBucket, limits []RateLimit, now int64, out []RateTaken) (ok bool) {
	ok = true
	for i := range buckets {
		b, l := &buckets[i], limits[i]
		if !b.Used {
			b.Tokens, b.At, b.Used = float64(l.Burst), now, true
		}
		if now > b.At {
			b.Tokens = round6(math.Min(float64(l.Burst), b.Tokens+float64(now-b.At)*l.RPS/1e9))
			b.At = now
		}
		if b.Tokens < 1 {
			ok = false
		}
	}
	for i := range buckets {
		b, l := &buckets[i], limits[i]
		if ok {
			b.Tokens = round6(b.Tokens - 1)
		}
		out[i] = RateTakenOf(b.Tokens, l)
	}
	return ok
}

// round6 keeps a millionth of a token: the Redis store keeps the same, so both decide alike.
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// RateTakenOf describes a bucket of limit l holding tokens.
func RateTakenOf(tokens float64, l RateLimit) RateTaken {
	t := RateTaken{Remaining: int(tokens), Full: secondsFor(float64(l.Burst)-tokens, l.RPS)}
	if tokens < 1 {
		t.Wait = secondsFor(1-tokens, l.RPS)
	}
	return t
}

// secondsFor is how long n tokens take to come back at rps.
func secondsFor(n, rps float64) time.Duration {
	if n <= 0 || rps <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(n / rps * 1e9))
}

// RateBucket names one shared bucket and its limit.
type RateBucket struct {
	Key   string
	Limit RateLimit
}

// RateLimitStore keeps token buckets that several nodes share (Redis): TakeTokens applies
// TakeTokens atomically to buckets.
type RateLimitStore interface {
	TakeTokens(ctx context.Context, buckets []RateBucket, now time.Time, out []RateTaken) (ok bool, err error)
}

// RateLimited is the 429 of a request refused by a rate limit: it may be made again after wait.
func RateLimited(scope string, wait time.Duration) *Error {
	return &Error{Code: ERATELIMITED, Message: "Too many requests", RetryAfter: max(wait, time.Second),
		Details: map[string][]string{"rateLimit": {fmt.Sprintf("the %s's request rate is exhausted; retry after %d s", scope,
			int(math.Ceil(max(wait, time.Second).Seconds())))}}}
}
