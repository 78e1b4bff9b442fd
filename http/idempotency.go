package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"runtime/debug"
	"slices"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// Idempotency-Key on the REST API (docs/api.md#idempotency-keys). A POST, PUT or DELETE with the
// header runs under a claim on (tenant, key): the first time, the handler runs on its own copy of
// the request in a goroutine, so that it can finish (and its response be stored) even when the
// request's deadline answers 503 first; a retry while it runs gets 409, afterwards the stored
// response with Idempotent-Replayed: true.

const (
	idempotencyHeader = "Idempotency-Key"
	replayedHeader    = "Idempotent-Replayed"
	// detachedFactor times the request timeout is how long a keyed request may run on after its
	// client got 503 (its transactions are then still waited for, see FinishIdempotent).
	detachedFactor = 10
)

// IdempotencyFingerprint identifies a request for its key: method, request URI (path and query)
// and body. The same key with another fingerprint is 422.
func IdempotencyFingerprint(method, uri string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(uri))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// idempotencyKey returns the request's key, "" when it has none; a key that is too long or holds
// anything but printable ASCII is 400.
func idempotencyKey(ctx *fasthttp.RequestCtx) (string, error) {
	raw := bytes.TrimSpace(ctx.Request.Header.Peek(idempotencyHeader))
	if len(raw) == 0 {
		return "", nil
	}
	if len(raw) > supplyplan.MaxIdempotencyKeyLen {
		return "", supplyplan.Invalid(idempotencyHeader, "must be at most %d characters", supplyplan.MaxIdempotencyKeyLen)
	}
	for _, c := range raw {
		if c < 0x20 || c > 0x7e {
			return "", supplyplan.Invalid(idempotencyHeader, "must be printable ASCII (for example a UUID)")
		}
	}
	return string(raw), nil
}

// run calls h for an authenticated request, under its Idempotency-Key when it has one.
func (s *Server) run(r *Request, h handlerFunc) error {
	if s.svc.Idempotency == nil {
		return h(r)
	}
	switch string(r.Ctx.Method()) {
	case "POST", "PUT", "DELETE":
	default:
		return h(r)
	}
	key, err := idempotencyKey(r.Ctx)
	if err != nil || key == "" {
		if err != nil {
			return err
		}
		return h(r)
	}
	body, err := r.Body()
	if err != nil {
		return err
	}
	scope := r.Principal.OrgID
	if r.Principal.Platform {
		scope = supplyplan.IdempotencyPlatformScope
	}
	claim, stored, err := s.svc.Idempotency.BeginIdempotent(r.Context, scope, key,
		IdempotencyFingerprint(string(r.Ctx.Method()), string(r.Ctx.RequestURI()), body))
	if err != nil {
		return err
	}
	if stored != nil {
		r.Ctx.SetStatusCode(stored.Status)
		if stored.ContentType != "" {
			r.Ctx.SetContentType(stored.ContentType)
		}
		r.Ctx.SetBodyString(stored.Body)
		r.Ctx.Response.Header.Set(replayedHeader, "true")
		return nil
	}
	return s.detached(r, h, claim)
}

// detached runs h on a copy of the request that outlives it: the copy owns the body (moved, not
// copied) and a context of its own, longer deadline that carries the claim. The request waits for
// it, and for its response to be stored, until its own deadline (503 then, with the claim still
// held), and copies its response.
func (s *Server) detached(r *Request, h handlerFunc, claim *supplyplan.IdempotencyClaim) error {
	pc := new(fasthttp.RequestCtx)
	r.Ctx.Request.SetBodyRaw(nil) // moved below rather than copied by Init
	pc.Init(&r.Ctx.Request, r.Ctx.RemoteAddr(), nil)
	bd := r.body
	r.body = body{}
	pc.Request.SetBodyRaw(bd.b)

	dctx, cancel := context.WithTimeout(context.Background(), detachedFactor*s.cfg.RequestTimeout)
	r.retain() // r2 is made from it and runs on after r's handler may have returned
	r2 := &Request{Ctx: pc, Context: supplyplan.WithIdempotency(dctx, claim), Principal: r.Principal, Org: r.Org,
		params: slices.Clone(r.params), server: s, budget: r.budget, decodeLimit: r.decodeLimit, bodyLimit: r.bodyLimit, body: bd, bodyRead: true}
	done := make(chan struct{})
	s.runningOn.Add(1)
	go func() {
		defer s.runningOn.Done()
		defer close(done)
		defer cancel()
		defer bd.release()
		func() {
			defer func() {
				if p := recover(); p != nil {
					s.log.Error("handler panic", "path", string(pc.Path()), "panic", p, "stack", string(debug.Stack()))
					pc.ResetBody()
					writeError(pc, supplyplan.Errorf(supplyplan.EINTERNAL, "Internal error"))
				}
			}()
			if err := h(r2); err != nil {
				if supplyplan.ErrorCode(err) == supplyplan.EINTERNAL {
					s.log.Error("request failed", "method", string(pc.Method()), "path", string(pc.Path()), "err", err)
				}
				writeError(pc, err)
			}
		}()
		<-s.svc.Idempotency.FinishIdempotent(claim, supplyplan.NewIdempotentResponse(pc.Response.StatusCode(),
			string(pc.Response.Header.ContentType()), pc.Response.Body()))
	}()
	select {
	case <-done:
		pc.Response.CopyTo(&r.Ctx.Response)
		return nil
	case <-r.Context.Done():
		return supplyplan.Errorf(supplyplan.EUNAVAILABLE,
			"The request timed out; it goes on under its Idempotency-Key: retry with the same key and body for its outcome")
	}
}
