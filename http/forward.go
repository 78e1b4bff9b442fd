package http

import (
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// Routing between nodes in the distributed mode (docs/distributed.md#routing). Every surface that
// serves an organization asks Owners, once the caller is authenticated and its organization known,
// which node owns it: here (the request goes on), another node (the request is forwarded there and
// the owner's answer returned unchanged), or nobody right now (503 with Retry-After: 1).

// Owners says which node owns an organization. The root package's implementation (the consumer
// group's assignment) satisfies it; nil is the embedded mode: everything is served here.
type Owners interface {
	// Owner returns the owner's REST API address ("host:port"), whether that is this node, and
	// whether the organization is being restored here (not served yet).
	Owner(org string) (addr string, local bool, restoring bool, err error)
}

// ForwardedByHeader marks a forwarded request with the forwarding node's id. A request that carries
// it and is still not local here is answered 503 rather than forwarded a second time.
const ForwardedByHeader = "X-Supplyplan-Forwarded-By"

// errForwarded is returned by a handler whose request was forwarded: the owner's answer is already
// in the response.
var errForwarded = errors.New("forwarded to the owner")

// forwarder forwards one surface's requests to the owning node's same surface.
type forwarder struct {
	owners Owners
	node   string
	// port is the port of this surface on every node ("" for the REST API, whose address Owners
	// returns as it is): nodes listen on the same ports (one StatefulSet, one compose service).
	port   string
	client *fasthttp.Client
	log    *slog.Logger
}

// forwardTimeout bounds a forwarded request that has no deadline of its own.
const forwardTimeout = 30 * time.Second

// newForwarder returns the forwarder of a surface listening on listenAddr (nil without owners: the
// embedded mode, where routing costs one nil check). sameAddr: the surface is the REST API.
func newForwarder(owners Owners, node, listenAddr string, sameAddr bool, log *slog.Logger) *forwarder {
	if owners == nil {
		return nil
	}
	f := &forwarder{owners: owners, node: node, log: log, client: &fasthttp.Client{
		Name:                          "supplyplan-forward",
		NoDefaultUserAgentHeader:      true,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		MaxConnsPerHost:               512,
		MaxIdleConnDuration:           90 * time.Second,
		ReadTimeout:                   forwardTimeout,
		WriteTimeout:                  forwardTimeout,
		MaxConnWaitTimeout:            time.Second,
	}}
	if !sameAddr {
		if _, port, err := net.SplitHostPort(listenAddr); err == nil {
			f.port = port
		}
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	return f
}

// ownerUnavailable is the 503 of a request no node can serve right now.
func ownerUnavailable(msg string) error {
	return &supplyplan.Error{Code: supplyplan.EUNAVAILABLE, Message: msg, RetryAfter: time.Second}
}

// decision is where a request of an organization goes.
type decision struct {
	addr string // the owner's address for this surface; "" when served here
}

// decide asks Owners about org: served here (zero decision), forwarded (addr set), or an
// EUNAVAILABLE error with Retry-After: 1 (restoring, owner unknown, or already forwarded once).
func (f *forwarder) decide(ctx *fasthttp.RequestCtx, org string) (decision, error) {
	if f == nil || org == "" {
		return decision{}, nil
	}
	addr, local, restoring, err := f.owners.Owner(org)
	switch {
	case err != nil:
		f.log.Warn("owner lookup failed", "org", org, "err", err)
		return decision{}, ownerUnavailable("The organization's owner is not known yet: retry shortly")
	case restoring:
		return decision{}, ownerUnavailable("The organization is being restored: retry shortly")
	case local:
		return decision{}, nil
	case addr == "":
		return decision{}, ownerUnavailable("The organization's owner is not known yet: retry shortly")
	case len(ctx.Request.Header.Peek(ForwardedByHeader)) > 0:
		// Forwarded to us by a node that thought we own it: ownership is moving. Never twice.
		return decision{}, ownerUnavailable("The organization's ownership is moving: retry shortly")
	}
	if f.port != "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			addr = net.JoinHostPort(host, f.port)
		}
	}
	return decision{addr: addr}, nil
}

// route is decide then forward: nil when the request is served here, errForwarded when the owner's
// answer is in ctx's response, or the error to answer. body returns the request body (read under the
// route's limit); it is called only when the request is forwarded.
func (f *forwarder) route(ctx *fasthttp.RequestCtx, org string, id []byte, deadline time.Time, body func() ([]byte, error)) error {
	d, err := f.decide(ctx, org)
	if err != nil || d.addr == "" {
		return err
	}
	var b []byte
	if body != nil {
		if b, err = body(); err != nil {
			return err
		}
	}
	return f.forward(ctx, d.addr, id, deadline, b)
}

// hopHeaders are not forwarded (RFC 9110 7.6.1); fasthttp sets its own Connection and
// Content-Length.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect"}

// forward sends the request (method, URI, headers with the credentials, body) to addr and copies the
// owner's status, headers and body into ctx. The Host header is kept (the console's same-origin
// check compares it with Origin). It returns errForwarded, or a 503 when the owner cannot be reached.
func (f *forwarder) forward(ctx *fasthttp.RequestCtx, addr string, id []byte, deadline time.Time, body []byte) error {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	ctx.Request.Header.CopyTo(&req.Header)
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	req.Header.ResetConnectionClose()
	req.UseHostHeader = true
	if len(req.Header.Host()) == 0 {
		req.Header.SetHost(addr)
	}
	req.SetRequestURIBytes(ctx.Request.Header.RequestURI())
	req.URI().SetHost(addr)
	req.URI().SetScheme("http")
	req.Header.Set(ForwardedByHeader, f.node)
	if len(id) > 0 {
		req.Header.SetBytesV(requestIDHeader, id)
	}
	if len(body) > 0 {
		req.SetBodyRaw(body)
	}
	if deadline.IsZero() {
		deadline = time.Now().Add(forwardTimeout)
	}
	if err := f.client.DoDeadline(req, resp, deadline); err != nil {
		f.log.Warn("forward to owner failed", "owner", addr, "method", string(ctx.Method()), "path", string(ctx.Path()), "err", err)
		if errors.Is(err, fasthttp.ErrTimeout) {
			return ownerUnavailable("The organization's owner did not answer in time: retry shortly")
		}
		return ownerUnavailable("The organization's owner cannot be reached: retry shortly")
	}
	ctx.Response.Reset()
	resp.Header.CopyTo(&ctx.Response.Header)
	ctx.Response.Header.ResetConnectionClose()
	ctx.Response.SetBody(resp.Body())
	return errForwarded
}

// PlatformOwnerKey is the placement key Owners is asked about for the platform endpoints (the
// platform stream is placed under its own name, like an organization).
const PlatformOwnerKey = "platform"
