package supplyplan

import (
	"context"
	"sync"
	"time"
)

// Idempotency keys: a client sends `Idempotency-Key: <key>` on a POST, PUT or DELETE and may then
// retry it safely. The first write transaction of such a request journals a marker for the key
// (its fingerprint and time) in the same journal entry as its own records; the response is stored
// right after. So once the write is durable the key is too, and a retry is never applied twice: it
// replays the stored response, or, when the process died between the write and the response,
// answers IDEMPOTENCY_RESPONSE_LOST. docs/api.md#idempotency-keys has the contract.

const (
	// IdempotencyTTL is how long a key is kept after its request was applied.
	IdempotencyTTL = 24 * time.Hour
	// MaxIdempotencyKeyLen is the longest Idempotency-Key accepted.
	MaxIdempotencyKeyLen = 255
	// MaxIdempotentBody is the largest response body kept for replays: a larger one is not kept
	// (its key then answers EIDEMLOST, saying so). It bounds what a key costs in memory.
	MaxIdempotentBody = 64 << 10
	// KindIdempotency is the journal record of one key (an IdempotencyEntry).
	KindIdempotency = "idempotency"
	// IdempotencyPlatformScope is the scope of the keys of platform-key requests; a tenant's
	// requests use its organization id.
	IdempotencyPlatformScope = "platform"
)

// Error codes of idempotency keys.
const (
	// EIDEMINFLIGHT: a request with this key is still running (409, Retry-After).
	EIDEMINFLIGHT = "IDEMPOTENCY_KEY_IN_FLIGHT"
	// EIDEMREUSED: the key was used for another request (method, path or body differ) (422).
	EIDEMREUSED = "IDEMPOTENCY_KEY_REUSED"
	// EIDEMLOST: the request with this key was applied but its response was lost in a crash (410).
	EIDEMLOST = "IDEMPOTENCY_RESPONSE_LOST"
)

func init() {
	RegisterKind(KindIdempotency, func() any { return new(IdempotencyEntry) })
}

// IdempotentResponse is the stored outcome of a request that carried an Idempotency-Key.
type IdempotentResponse struct {
	Status      int    `json:"status"`
	ContentType string `json:"contentType,omitempty"`
	Body        string `json:"body,omitempty"`
	// Omitted is the size of a body over MaxIdempotentBody, which was not kept.
	Omitted int `json:"omitted,omitempty"`
}

// NewIdempotentResponse is the response to keep of a request: body is dropped past
// MaxIdempotentBody.
func NewIdempotentResponse(status int, contentType string, body []byte) IdempotentResponse {
	if len(body) > MaxIdempotentBody {
		return IdempotentResponse{Status: status, ContentType: contentType, Omitted: len(body)}
	}
	return IdempotentResponse{Status: status, ContentType: contentType, Body: string(body)}
}

// IdempotencyEntry is the durable state of one key. Response is nil between the request's first
// write and the storing of its response: after a crash in between it stays nil, and the key then
// answers EIDEMLOST.
type IdempotencyEntry struct {
	Scope       string              `json:"scope"`
	Key         string              `json:"key"`
	Fingerprint string              `json:"fingerprint"`
	At          time.Time           `json:"at"` // when the request's first write was applied
	Response    *IdempotentResponse `json:"response,omitempty"`
}

// IdempotencyID is the record id of a key in its scope.
func IdempotencyID(scope, key string) string { return scope + "\x00" + key }

// Expired reports whether the entry is past IdempotencyTTL at now.
func (e *IdempotencyEntry) Expired(now time.Time) bool { return !now.Before(e.At.Add(IdempotencyTTL)) }

// Outcome is what a key that is already known answers a request with fingerprint: the response to
// replay, or the error (EIDEMREUSED, EIDEMLOST).
func (e *IdempotencyEntry) Outcome(fingerprint string) (*IdempotentResponse, error) {
	switch {
	case e.Fingerprint != fingerprint:
		return nil, Errorf(EIDEMREUSED, "This Idempotency-Key was used for a different request (method, path or body)")
	case e.Response == nil:
		return nil, Errorf(EIDEMLOST, "The request with this Idempotency-Key was applied, but its response was lost (the service stopped before storing it); it will not be applied again")
	case e.Response.Omitted > 0:
		return nil, Errorf(EIDEMLOST, "The request with this Idempotency-Key was applied (status %d); its response of %d bytes was larger than the %d kept for replays; it will not be applied again",
			e.Response.Status, e.Response.Omitted, MaxIdempotentBody)
	}
	return e.Response, nil
}

// ErrIdempotencyInFlight is the answer to a request whose key is held by a running request.
func ErrIdempotencyInFlight() error {
	return &Error{Code: EIDEMINFLIGHT, RetryAfter: time.Second,
		Message: "A request with this Idempotency-Key is still in progress; retry later with the same key"}
}

// IdempotencyClaim is a request holding its key while it runs. It travels in the request's context
// (WithIdempotency), so the first write transaction the request starts carries the key's marker,
// and it counts the request's transactions so that its response is stored only once every write
// it started has its real outcome, even after the request itself stopped waiting (timeout).
type IdempotencyClaim struct {
	Scope, Key, Fingerprint string

	mu        sync.Mutex
	marked    bool // a transaction carries the marker (until it fails)
	committed bool // the marker's journal entry is durable
	abandoned bool // a transaction outlived the wait of the request that started it
	holder    any  // where the marker is (set by the actor that journaled it)
	pending   int
	idle      chan struct{}
}

// NewIdempotencyClaim returns the claim of a request.
func NewIdempotencyClaim(scope, key, fingerprint string) *IdempotencyClaim {
	return &IdempotencyClaim{Scope: scope, Key: key, Fingerprint: fingerprint, idle: make(chan struct{}, 1)}
}

// TxStarted counts a transaction sent on behalf of the request.
func (c *IdempotencyClaim) TxStarted() {
	c.mu.Lock()
	c.pending++
	c.mu.Unlock()
}

// TxDone is called by the actor once a transaction has its outcome (after TxStarted).
func (c *IdempotencyClaim) TxDone() {
	c.mu.Lock()
	c.pending--
	zero := c.pending == 0
	c.mu.Unlock()
	if zero {
		select {
		case c.idle <- struct{}{}:
		default:
		}
	}
}

// Abandon records that the request stopped waiting for a transaction it started.
func (c *IdempotencyClaim) Abandon() {
	c.mu.Lock()
	c.abandoned = true
	c.mu.Unlock()
}

// Marked reports whether a transaction already carries the marker.
func (c *IdempotencyClaim) Marked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.marked
}

// Mark takes the marker for a transaction: true for the first, false once taken.
func (c *IdempotencyClaim) Mark() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marked {
		return false
	}
	c.marked = true
	return true
}

// Unmark gives the marker back when its transaction failed (nothing of it is durable).
func (c *IdempotencyClaim) Unmark() {
	c.mu.Lock()
	c.marked = false
	c.mu.Unlock()
}

// Commit records that the marker is durable, held by holder.
func (c *IdempotencyClaim) Commit(holder any) {
	c.mu.Lock()
	c.committed, c.holder = true, holder
	c.mu.Unlock()
}

// Settle waits until every transaction the request started has its outcome (at most max), and
// reports where the marker is, whether it is durable, and whether a transaction outlived the
// request's wait (then the response the request gave is not the outcome of its write).
func (c *IdempotencyClaim) Settle(max time.Duration) (holder any, committed, abandoned bool) {
	timer := time.NewTimer(max)
	defer timer.Stop()
	for {
		c.mu.Lock()
		if c.pending <= 0 {
			defer c.mu.Unlock()
			return c.holder, c.committed, c.abandoned
		}
		c.mu.Unlock()
		select {
		case <-c.idle:
		case <-timer.C:
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.holder, c.committed, true
		}
	}
}

type idemCtxKey struct{}

// WithIdempotency returns ctx carrying the request's claim.
func WithIdempotency(ctx context.Context, c *IdempotencyClaim) context.Context {
	return context.WithValue(ctx, idemCtxKey{}, c)
}

// IdempotencyOf returns the claim ctx carries, or nil.
func IdempotencyOf(ctx context.Context) *IdempotencyClaim {
	c, _ := ctx.Value(idemCtxKey{}).(*IdempotencyClaim)
	return c
}

// IdempotencyService keeps the outcome of requests that carry an Idempotency-Key.
type IdempotencyService interface {
	// BeginIdempotent claims (scope, key) for a request with fingerprint. It returns the claim to
	// run the request under (WithIdempotency), or the stored response to replay, or an error:
	// EIDEMINFLIGHT, EIDEMREUSED, EIDEMLOST.
	BeginIdempotent(ctx context.Context, scope, key, fingerprint string) (*IdempotencyClaim, *IdempotentResponse, error)
	// FinishIdempotent stores resp as the outcome of the claimed request once every write it
	// started has its outcome, then releases the key. It returns at once; the channel is closed
	// when the key is released (a request answers its client after that, so that an immediate
	// retry gets the replay).
	FinishIdempotent(c *IdempotencyClaim, resp IdempotentResponse) <-chan struct{}
}
