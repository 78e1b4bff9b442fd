package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// listener is the fasthttp server and listener lifecycle the API and the tool service share.
type listener struct {
	name   string // in errors and logs: "api", "tools"
	addr   string // configured address
	log    *slog.Logger
	srv    *fasthttp.Server
	ln     net.Listener
	served chan struct{}
	// budget bounds the request-body bytes held at once (shared between servers when configured).
	budget *BodyBudget
	track  *connTracker
}

// connTracker knows the open connections and the handlers running, so that Close can close the
// connections no handler is using. fasthttp's Shutdown waits for every open connection, and counts
// one that was accepted but has not sent a request yet as active until its read timeout (60 s).
type connTracker struct {
	conns    sync.Map // net.Conn -> struct{}
	handlers atomic.Int64
}

func (t *connTracker) state(c net.Conn, st fasthttp.ConnState) {
	switch st {
	case fasthttp.StateNew:
		t.conns.Store(c, struct{}{})
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		t.conns.Delete(c)
	}
}

func (t *connTracker) handle(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		t.handlers.Add(1)
		defer t.handlers.Add(-1)
		h(ctx)
	}
}

func (t *connTracker) closeAll() {
	t.conns.Range(func(k, _ any) bool {
		_ = k.(net.Conn).Close()
		return true
	})
}

// connTimeout bounds how long a connection may take to send a request (its headers and body), to
// take a response, and stay idle between requests.
const connTimeout = 60 * time.Second

// newListener builds a fasthttp server with the service's timeouts. Bodies are not read by
// fasthttp: the handler sees the headers first (StreamRequestBody) and reads the body itself with
// readBody, under the route's limit and the budget, once the key is checked. A malformed request
// gets the one error renderer's 400.
func newListener(name, addr, serverName string, budget *BodyBudget, log *slog.Logger, h fasthttp.RequestHandler) listener {
	if budget == nil {
		budget = NewBodyBudget(0)
	}
	track := &connTracker{}
	return listener{name: name, addr: addr, log: log, budget: budget, track: track, srv: &fasthttp.Server{
		Handler:           track.handle(h),
		ConnState:         track.state,
		Name:              serverName,
		StreamRequestBody: true,
		// With StreamRequestBody fasthttp still pre-reads min(MaxRequestBodySize, Content-Length,
		// 8 KiB) body bytes before calling the handler (and waits for them). One byte keeps that
		// wait and buffer to a minimum; the limit itself is enforced by readBody.
		MaxRequestBodySize: 1,
		// The idle timeout equals the read timeout: fasthttp sets the one, then the other, at every
		// keep-alive request, and equal they are left alone for a second at a time (deadlineSlack).
		ReadTimeout:                  connTimeout,
		WriteTimeout:                 connTimeout,
		IdleTimeout:                  connTimeout,
		DisablePreParseMultipartForm: true,
		NoDefaultContentType:         true,
		CloseOnShutdown:              true,
		ErrorHandler: func(ctx *fasthttp.RequestCtx, err error) {
			if errors.Is(err, fasthttp.ErrBodyTooLarge) {
				writeError(ctx, &supplyplan.Error{Code: supplyplan.ETOOLARGE, Message: "Payload too large"})
				return
			}
			writeError(ctx, supplyplan.Errorf(supplyplan.EVALIDATION, "Malformed HTTP request"))
		},
	}}
}

// Open listens on the configured address and serves in the background.
func (l *listener) Open() error {
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		return fmt.Errorf("listen %s on %s: %w", l.name, l.addr, err)
	}
	l.ln = lingerListener{ln}
	l.served = make(chan struct{})
	go func() {
		defer close(l.served)
		if err := l.srv.Serve(l.ln); err != nil {
			l.log.Error(l.name+" server stopped", "err", err)
		}
	}()
	return nil
}

// Addr is the address the server listens on (useful with port 0).
func (l *listener) Addr() string {
	if l.ln == nil {
		return l.addr
	}
	return l.ln.Addr().String()
}

// Close stops accepting connections and waits for in-flight requests. Once no handler runs, the
// connections left are idle or have not sent a request: they are closed rather than waited for.
func (l *listener) Close(ctx context.Context) error {
	if l.ln == nil {
		return nil
	}
	errc := make(chan error, 1)
	go func() { errc <- l.srv.ShutdownWithContext(ctx) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
wait:
	for {
		select {
		case err = <-errc:
			break wait
		case <-tick.C:
			if l.track.handlers.Load() == 0 {
				l.track.closeAll()
			}
		}
	}
	// fasthttp's Shutdown returns at once when Serve has not registered the listener yet; closing it
	// ourselves makes such a late Serve return instead of blocking forever.
	_ = l.ln.Close()
	<-l.served
	l.ln = nil
	return err
}
