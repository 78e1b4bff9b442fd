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
	// (context.WithTimeout in a handler) has a goroutine of the standard library that may read it
	// after the handler returned, when the Request already serves another request (Server.serve).
	dl := &deadlineCtx{deadline: time.Now().Add(d.timeout)}
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

// deadlineCtx is a request's context: context.WithTimeout(Background, timeout) whose timer is made
// only when something asks for Done (a write waiting for its actor). Most requests never do (reads
// run on the caller's goroutine), and the timer was a measurable share of a read's cost.
type deadlineCtx struct {
	deadline time.Time
	mu       sync.Mutex
	ctx      context.Context
	cancel   context.CancelFunc
	closed   bool
}

// canceledCtx is the context of a request that has returned (what cancel made it before).
var canceledCtx = func() context.Context {
	c, cancel := context.WithCancel(context.Background())
	cancel()
	return c
}()

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		if c.closed {
			c.ctx = canceledCtx
		} else {
			c.ctx, c.cancel = context.WithDeadline(context.Background(), c.deadline)
		}
	}
	return c.ctx.Done()
}

func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	ctx, closed := c.ctx, c.closed
	c.mu.Unlock()
	switch {
	case ctx != nil:
		return ctx.Err()
	case closed:
		return context.Canceled
	case !time.Now().Before(c.deadline):
		return context.DeadlineExceeded
	}
	return nil
}

func (c *deadlineCtx) Value(any) any { return nil }

// close cancels the context (the handler returned).
func (c *deadlineCtx) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.cancel != nil {
		c.cancel()
	}
}
