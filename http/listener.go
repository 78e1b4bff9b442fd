package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
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
}

// newListener builds a fasthttp server with the service's timeouts, reading bodies up to
// maxBody bytes; a larger or malformed request gets the one error renderer's 413 or 400.
func newListener(name, addr, serverName string, maxBody int, log *slog.Logger, h fasthttp.RequestHandler) listener {
	return listener{name: name, addr: addr, log: log, srv: &fasthttp.Server{
		Handler:                      h,
		Name:                         serverName,
		MaxRequestBodySize:           maxBody,
		ReadTimeout:                  60 * time.Second,
		WriteTimeout:                 60 * time.Second,
		IdleTimeout:                  120 * time.Second,
		DisablePreParseMultipartForm: true,
		NoDefaultContentType:         true,
		CloseOnShutdown:              true,
		ErrorHandler: func(ctx *fasthttp.RequestCtx, err error) {
			if errors.Is(err, fasthttp.ErrBodyTooLarge) {
				writeError(ctx, &supplyplan.Error{Code: supplyplan.ETOOLARGE, Message: "Payload too large",
					Details: map[string][]string{"body": {fmt.Sprintf("must be at most %d bytes", maxBody)}}})
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
	l.ln = ln
	l.served = make(chan struct{})
	go func() {
		defer close(l.served)
		if err := l.srv.Serve(ln); err != nil {
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

// Close stops accepting connections and waits for in-flight requests.
func (l *listener) Close(ctx context.Context) error {
	if l.ln == nil {
		return nil
	}
	err := l.srv.ShutdownWithContext(ctx)
	// fasthttp's Shutdown returns at once when Serve has not registered the listener yet; closing it
	// ourselves makes such a late Serve return instead of blocking forever.
	_ = l.ln.Close()
	<-l.served
	l.ln = nil
	return err
}
