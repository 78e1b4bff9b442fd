package http

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// DefaultBodyBudget is the default bound on request-body bytes held at once (BodyBudget).
const DefaultBodyBudget = 256 << 20

// bodyRetryAfter is the Retry-After of a request refused because the budget is spent.
const bodyRetryAfter = time.Second

// BodyBudget bounds the bytes of request bodies held in memory at once across every connection
// of the servers that share it. A body is admitted only once its bytes are reserved (the
// Content-Length up front, or step by step for a chunked body); beyond the bound the request is
// answered 503 with Retry-After before anything is allocated. docs/fasthttp.md explains why.
type BodyBudget struct {
	max  int64
	used atomic.Int64
	// peak is the largest reservation seen since memory was last handed back to the OS.
	peak      atomic.Int64
	freeing   atomic.Bool
	lastFree  atomic.Int64 // unix nanoseconds
	freeAbove int64
}

// NewBodyBudget returns a budget of max bytes (DefaultBodyBudget when max <= 0).
func NewBodyBudget(max int64) *BodyBudget {
	if max <= 0 {
		max = DefaultBodyBudget
	}
	return &BodyBudget{max: max, freeAbove: min(64<<20, max/2)}
}

// Max is the bound in bytes.
func (b *BodyBudget) Max() int64 { return b.max }

// InFlight is the number of body bytes reserved right now.
func (b *BodyBudget) InFlight() int64 { return b.used.Load() }

func (b *BodyBudget) reserve(n int64) bool {
	if n <= 0 {
		return true
	}
	for {
		cur := b.used.Load()
		if cur+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(cur, cur+n) {
			for {
				p := b.peak.Load()
				if cur+n <= p || b.peak.CompareAndSwap(p, cur+n) {
					break
				}
			}
			return true
		}
	}
}

// release gives n bytes back. When nothing is in flight any more after a burst of large bodies,
// the freed heap is handed back to the operating system (at most every 5 s) rather than whenever
// the runtime's background scavenger gets to it.
func (b *BodyBudget) release(n int64) {
	if n <= 0 {
		return
	}
	if b.used.Add(-n) != 0 || b.peak.Load() < b.freeAbove || !b.freeing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer b.freeing.Store(false)
		if wait := time.Until(time.Unix(0, b.lastFree.Load()).Add(5 * time.Second)); wait > 0 {
			time.Sleep(wait)
		}
		b.peak.Store(b.used.Load())
		b.lastFree.Store(time.Now().UnixNano())
		debug.FreeOSMemory()
	}()
}

// body is a request body read under a limit and the budget; release gives its bytes back.
type body struct {
	b        []byte
	reserved int64
	budget   *BodyBudget
	owned    bool // b was allocated by readBody (not fasthttp's buffer): it may outlive the request
}

func (bd *body) release() {
	if bd.budget != nil {
		bd.budget.release(bd.reserved)
		bd.reserved = 0
	}
}

func tooLarge(field string, limit int) *supplyplan.Error {
	return &supplyplan.Error{Code: supplyplan.ETOOLARGE, Message: "Payload too large",
		Details: map[string][]string{field: {fmt.Sprintf("must be at most %d bytes", limit)}}}
}

func budgetSpent() *supplyplan.Error {
	return &supplyplan.Error{Code: supplyplan.EUNAVAILABLE, RetryAfter: bodyRetryAfter,
		Message: "Too many request bodies in flight; retry later"}
}

// chunkStep is the first buffer of a body without Content-Length (chunked); it doubles from there.
const chunkStep = 16 << 10

// readBody reads the body of ctx: at most limit bytes, each byte reserved in budget before it is
// allocated. The server runs with StreamRequestBody, so the body is still on the connection when
// the handler starts: a Content-Length over limit is refused before a byte is read, and a chunked
// body is refused as soon as it passes limit. On refusal the connection is closed (the rest of the
// body is never read). A body that is already in memory (in-memory handlers in tests and
// benchmarks) is only checked against limit.
func readBody(ctx *fasthttp.RequestCtx, limit int, budget *BodyBudget) (body, error) {
	stream := ctx.RequestBodyStream()
	if stream == nil {
		b := ctx.Request.Body()
		if len(b) > limit {
			return body{}, tooLarge("body", limit)
		}
		return body{b: b}, nil
	}
	cl := ctx.Request.Header.ContentLength()
	bd := body{budget: budget, owned: true}
	switch {
	case cl == 0:
		closeStream(ctx)
		return bd, nil
	case cl > limit:
		closeUnread(ctx)
		return body{}, tooLarge("body", limit)
	case cl > 0:
		if !budget.reserve(int64(cl)) {
			closeUnread(ctx)
			return body{}, budgetSpent()
		}
		bd.reserved = int64(cl)
		bd.b = make([]byte, cl)
		if _, err := io.ReadFull(stream, bd.b); err != nil {
			bd.release()
			closeUnread(ctx)
			return body{}, bodyReadError(err)
		}
	default: // chunked: grow step by step, reserving each step first
		step := min(chunkStep, limit+1)
		if !budget.reserve(int64(step)) {
			closeUnread(ctx)
			return body{}, budgetSpent()
		}
		bd.reserved = int64(step)
		bd.b = make([]byte, 0, step)
		for {
			if len(bd.b) == cap(bd.b) {
				if len(bd.b) > limit {
					bd.release()
					closeUnread(ctx)
					return body{}, tooLarge("body", limit)
				}
				grow := min(2*cap(bd.b), limit+1) - cap(bd.b)
				if !budget.reserve(int64(grow)) {
					bd.release()
					closeUnread(ctx)
					return body{}, budgetSpent()
				}
				bd.reserved += int64(grow)
				nb := make([]byte, len(bd.b), len(bd.b)+grow)
				copy(nb, bd.b)
				bd.b = nb
			}
			n, err := stream.Read(bd.b[len(bd.b):cap(bd.b)])
			bd.b = bd.b[:len(bd.b)+n]
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				bd.release()
				closeUnread(ctx)
				return body{}, bodyReadError(err)
			}
		}
		if len(bd.b) > limit {
			bd.release()
			closeUnread(ctx)
			return body{}, tooLarge("body", limit)
		}
	}
	// Handlers (and fasthttp's PostBody) see the body read here; the stream is done.
	ctx.Request.SetBodyRaw(bd.b)
	return bd, nil
}

// closeStream ends an empty body's stream so that PostBody does not read from the connection.
func closeStream(ctx *fasthttp.RequestCtx) {
	ctx.Request.SetBodyRaw(nil)
}

func bodyReadError(err error) error {
	msg := "the body ended before its Content-Length"
	if errors.Is(err, os.ErrDeadlineExceeded) {
		msg = "the body did not arrive within the read timeout"
	} else if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		msg = "the body could not be read: " + err.Error()
	}
	return &supplyplan.Error{Code: supplyplan.EVALIDATION, Message: "Malformed HTTP request",
		Details: map[string][]string{"body": {msg}}}
}

// discardUnread closes the connection after a response to a request whose body was never read
// (refused on its headers): the rest of that body is still on the wire.
func discardUnread(ctx *fasthttp.RequestCtx) {
	if ctx.Request.IsBodyStream() && ctx.Request.Header.ContentLength() != 0 {
		closeUnread(ctx)
	}
}

// closeUnread closes the connection after the response, with the rest of the request body still
// unread on it. The close lingers (see lingerConn): closing a socket with unread input makes the
// kernel answer with a reset, which can destroy the response before the client reads it.
func closeUnread(ctx *fasthttp.RequestCtx) {
	ctx.SetConnectionClose()
	if lc, ok := ctx.Conn().(*lingerConn); ok {
		lc.linger.Store(true)
	}
}
