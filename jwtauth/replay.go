package jwtauth

import (
	"container/heap"
	"sync"
	"time"
)

// maxReplayEntries bounds the replay cache: tokens live at most MaxLifetime plus the leeway, so
// this is room for over 900 mutating calls a second with a fresh token each, for 16 minutes.
const maxReplayEntries = 1 << 20

type replayOutcome int

const (
	firstUse replayOutcome = iota
	replayed
	replayFull
)

// replayCache remembers the jti of every token used on a mutating call until the token can no
// longer be accepted (exp plus leeway). It lives in the process: a restart forgets it, and two
// processes verifying for the same audience do not share it (docs/loop-runtime-auth.md).
type replayCache struct {
	mu    sync.Mutex
	max   int
	until map[string]time.Time
	order expiryHeap
}

func newReplayCache(max int) *replayCache {
	return &replayCache{max: max, until: map[string]time.Time{}}
}

// use records key until the given time, unless it is recorded already (replayed) or the cache is
// full of tokens still valid (replayFull: refused rather than forgetting a jti early). Entries
// whose time has passed are pruned first.
func (r *replayCache) use(key string, until, now time.Time) replayOutcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.order) > 0 && !r.order[0].until.After(now) {
		e := heap.Pop(&r.order).(expiry)
		if t, ok := r.until[e.key]; ok && !t.After(now) {
			delete(r.until, e.key)
		}
	}
	if t, ok := r.until[key]; ok && t.After(now) {
		return replayed
	}
	if len(r.until) >= r.max {
		return replayFull
	}
	r.until[key] = until
	heap.Push(&r.order, expiry{key: key, until: until})
	return firstUse
}

// len is the number of jtis remembered.
func (r *replayCache) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.until)
}

type expiry struct {
	key   string
	until time.Time
}

// expiryHeap is a min-heap of expiries, the soonest first.
type expiryHeap []expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].until.Before(h[j].until) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
