package http

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// dispatch runs one routed request of a listener (the API, the loop catalog, the loop runtime):
// a panic answers 500, an unmatched path 404 or 405, the handler runs under the request timeout,
// and its error is answered in the one error shape (or by render first). The listener builds the
// Request with its own limits; dispatch fills in the connection, the context and the parameters.
type dispatch struct {
	what    string // prefix of the log messages ("loop runtime "; "" for the API)
	log     *slog.Logger
	router  *router
	timeout time.Duration
	// render answers an error the listener renders itself (the runtime's JWT failures) and returns
	// its code; ok false leaves it to the one error shape.
	render func(ctx *fasthttp.RequestCtx, err error) (code string, ok bool)
}

// serve returns the route (nil when none matched), the caller's organization once known and the
// error code of an error answer, for the request log and the metrics.
func (d *dispatch) serve(ctx *fasthttp.RequestCtx, id []byte, r *Request) (rt *route, org, code string) {
	defer func() {
		if p := recover(); p != nil {
			d.log.Error(d.what+"handler panic", "requestId", string(id), "path", string(ctx.Path()), "panic", p, "stack", string(debug.Stack()))
			ctx.ResetBody()
			writeError(ctx, supplyplan.Errorf(supplyplan.EINTERNAL, "Internal error"))
			code = supplyplan.EINTERNAL
		}
	}()
	// A request refused on its headers leaves its body unread on the connection: close it.
	defer discardUnread(ctx)
	rt, params, allow := d.router.matchRoute(ctx.Method(), ctx.Path(), r.paramBuf[:0])
	if rt == nil {
		if allow != "" {
			ctx.Response.Header.Set("Allow", allow)
			writeErrorStatus(ctx, fasthttp.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "Method not allowed", nil)
			return nil, "", "METHOD_NOT_ALLOWED"
		}
		writeError(ctx, supplyplan.Errorf(supplyplan.ENOTFOUND, "Not found"))
		return nil, "", supplyplan.ENOTFOUND
	}
	// The context is its own object, not a part of the Request: a context derived from it
	// (context.WithTimeout in a handler) keeps a reference to it that may outlive the handler,
	// when the Request already serves another request (Server.handle).
	arrived := r.start
	if arrived.IsZero() {
		arrived = time.Now()
	}
	dl := &deadlineCtx{deadline: arrived.Add(d.timeout)}
	defer dl.close()
	r.Ctx, r.Context, r.params = ctx, dl, params
	if r.requestID == nil {
		r.requestID = id
	}
	defer func() { r.body.release() }()
	err := rt.h(r)
	org = r.Principal.OrgID
	if err == errForwarded { // the owner's answer is the response
		return rt, org, ""
	}
	if err != nil {
		if d.render != nil {
			if c, ok := d.render(ctx, err); ok {
				return rt, org, c
			}
		}
		code = supplyplan.ErrorCode(err)
		if code == supplyplan.EINTERNAL {
			d.log.Error(d.what+"request failed", "requestId", string(id), "method", string(ctx.Method()), "path", string(ctx.Path()), "err", err)
		}
		writeError(ctx, err)
	}
	r.rate.writeHeaders(&ctx.Response.Header)
	return rt, org, code
}

// deadlineCtx is a request's context: context.WithTimeout(Background, timeout) whose channel and
// timer are made only when something asks for Done (a write waiting for its actor). Most requests
// never do (reads run on the caller's goroutine), and the timer was a measurable share of a read's
// cost. It is its own channel and timer rather than a context.WithDeadline made on demand: that
// was three more objects per durable write (the timer context, its channel, its timer's closure).
// A context derived from it is canceled through AfterFunc (the standard library then starts no
// goroutine per derived context).
type deadlineCtx struct {
	deadline time.Time
	mu       sync.Mutex
	done     chan struct{} // made by Done
	timer    *time.Timer   // closes done at the deadline
	err      error         // set when the context ended (done, when made, is closed then)
	afters   []*afterFunc
}

type afterFunc struct{ f func() }

// closedChan is the Done of a context that ended before anything asked for it.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	if c.err == nil {
		if d := time.Until(c.deadline); d > 0 {
			c.done = make(chan struct{})
			c.timer = time.AfterFunc(d, c.expire)
			return c.done
		}
		c.endLocked(context.DeadlineExceeded)
	}
	c.done = closedChan
	return c.done
}

// EndsOnlyAtDeadline reports whether, for the goroutine asking, the context can end only at its
// deadline: it has not ended and nothing made its Done channel (close runs when the handler
// returned, after any wait it made). A wait in the actors (awaitCtx) then sets a pooled timer to
// the deadline instead of asking for Done, which makes a channel and a timer.
func (c *deadlineCtx) EndsOnlyAtDeadline() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil && c.done == nil
}

func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !time.Now().Before(c.deadline) {
		c.endLocked(context.DeadlineExceeded) // the timer, if any, has not fired yet
	}
	return c.err
}

func (c *deadlineCtx) Value(any) any { return nil }

// AfterFunc is context.AfterFunc for this context (the standard library's derived contexts use it).
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	c.afters = append(c.afters, a)
	if c.done == nil { // the deadline must end it even when nothing asks for Done
		c.done = make(chan struct{})
		c.timer = time.AfterFunc(time.Until(c.deadline), c.expire)
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.afters {
			if x == a {
				c.afters = append(c.afters[:i], c.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

func (c *deadlineCtx) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked(context.DeadlineExceeded)
}

// endLocked ends the context with err unless it ended already: closes done, stops the timer and
// starts the AfterFunc functions.
func (c *deadlineCtx) endLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	for _, a := range c.afters {
		go a.f()
	}
	c.afters = nil
}

// close cancels the context (the handler returned).
func (c *deadlineCtx) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked(context.Canceled)
}
