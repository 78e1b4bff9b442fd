package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/jsonscan"
	"github.com/supplyplan/supplyplan/internal/strictjson"
	"github.com/supplyplan/supplyplan/internal/telemetry"
	"github.com/supplyplan/supplyplan/jwtauth"
)

// LoopRuntimeConfig configures the loop runtime listener (default 127.0.0.1:3012).
type LoopRuntimeConfig struct {
	Addr string
	// BodyLimit caps the JSON bodies (default 1 MiB).
	BodyLimit      int
	RequestTimeout time.Duration
	Logger         *slog.Logger
	BodyBudget     *BodyBudget
	// Metrics and AccessLog are as the API's (server label "loop-runtime"; nil: none).
	Metrics   *telemetry.Metrics
	AccessLog *slog.Logger
	// Owners and NodeID route each organization's requests to its owner (see Config.Owners).
	Owners Owners
	NodeID string
}

// LoopRuntimeServices are what the loop runtime listener calls.
type LoopRuntimeServices struct {
	// Auth verifies the callers' signed JWTs.
	Auth    jwtauth.Authenticator
	Runtime supplyplan.LoopRuntimeService
}

// LoopRuntimeServer is the loop runtime's HTTP service: workflow instances, their transitions,
// cancellations and audit, called with signed JWTs (docs/loop-runtime-api.md).
type LoopRuntimeServer struct {
	cfg      LoopRuntimeConfig
	svc      LoopRuntimeServices
	log      *slog.Logger
	router   *router
	obs      observer
	dispatch dispatch
	fwd      *forwarder
	listener
}

// NewLoopRuntimeServer builds the loop runtime listener and its routes.
func NewLoopRuntimeServer(cfg LoopRuntimeConfig, svc LoopRuntimeServices) *LoopRuntimeServer {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 1 << 20
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &LoopRuntimeServer{cfg: cfg, svc: svc, log: cfg.Logger, router: newRouter()}
	s.fwd = newForwarder(cfg.Owners, cfg.NodeID, cfg.Addr, false, cfg.Logger)
	s.routes()
	s.obs.init("loop-runtime", s.router, cfg.Metrics, cfg.AccessLog)
	s.dispatch = dispatch{what: "loop runtime ", log: s.log, router: s.router, timeout: cfg.RequestTimeout, render: renderJWTError}
	s.listener = newListener("loop-runtime", cfg.Addr, "supplyplan-loop-runtime", cfg.BodyBudget, cfg.Logger, s.handle)
	return s
}

// Handler exposes the request handler (tests and benchmarks).
func (s *LoopRuntimeServer) Handler() fasthttp.RequestHandler { return s.handle }

// runCaller is an authenticated runtime request.
type runCaller struct {
	claims jwtauth.Claims
	c      supplyplan.LoopRunCaller
}

type runHandler func(r *Request, c *runCaller) error

func (s *LoopRuntimeServer) routes() {
	rt := s.router
	rt.handle("GET", "/health", func(r *Request) error {
		r.Ctx.SetStatusCode(fasthttp.StatusOK)
		r.Ctx.SetContentType("application/json")
		r.Ctx.SetBody(healthBody)
		return nil
	})
	rt.handle("GET", "/openapi.json", serveOpenAPI(loopRuntimeOpenAPI))
	const inst = "/v1/instances/:id"
	rt.handle("POST", "/v1/instances", s.authed(jwtauth.ScopeWrite, s.start))
	rt.handle("GET", "/v1/instances", s.authed(jwtauth.ScopeRead, s.list))
	rt.handle("POST", "/v1/instances/cancel", s.authed(jwtauth.ScopeAdmin, s.bulkCancel))
	rt.handle("GET", inst, s.authed(jwtauth.ScopeRead, s.get))
	rt.handle("POST", inst+"/transitions", s.authed(jwtauth.ScopeWrite, s.transition))
	rt.handle("POST", inst+"/cancel", s.authed(jwtauth.ScopeWrite, s.lifecycle(supplyplan.LoopActionCancel)))
	rt.handle("POST", inst+"/terminate", s.authed(jwtauth.ScopeAdmin, s.lifecycle(supplyplan.LoopActionTerminate)))
	rt.handle("POST", inst+"/suspend", s.authed(jwtauth.ScopeWrite, s.lifecycle(supplyplan.LoopActionSuspend)))
	rt.handle("POST", inst+"/resume", s.authed(jwtauth.ScopeWrite, s.lifecycle(supplyplan.LoopActionResume)))
	rt.handle("GET", inst+"/events", s.authed(jwtauth.ScopeRead, s.events))
	rt.handle("GET", inst+"/audit/verify", s.authed(jwtauth.ScopeRead, s.verify))
}

// handle serves one request, then echoes its request id, counts it and logs it.
func (s *LoopRuntimeServer) handle(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	var buf [requestIDMax]byte
	id := s.obs.ids.of(ctx, buf[:0])
	rt, org, code := s.serve(ctx, id)
	s.obs.served(ctx, id, rt, org, code, start)
}

// serve routes and runs one request (see Server.serve); the handlers record id in the audit.
func (s *LoopRuntimeServer) serve(ctx *fasthttp.RequestCtx, id []byte) (rt *route, org, code string) {
	return s.dispatch.serve(ctx, id, &Request{budget: s.budget, decodeLimit: s.cfg.BodyLimit, bodyLimit: s.cfg.BodyLimit, requestID: id})
}

// renderJWTError answers a jwtauth failure with its challenge (the dispatch's render).
func renderJWTError(ctx *fasthttp.RequestCtx, err error) (string, bool) {
	var ae *jwtauth.Error
	if errors.As(err, &ae) {
		return writeJWTError(ctx, ae), true
	}
	return "", false
}

// realm is the WWW-Authenticate realm of the runtime.
const loopRealm = `Bearer realm="supplyplan-loops"`

// writeJWTError renders an authentication failure: 401 (or 403 for a missing scope) with the
// WWW-Authenticate challenge naming the error. It returns the error code.
func writeJWTError(ctx *fasthttp.RequestCtx, e *jwtauth.Error) string {
	status, code, msg := e.Status, supplyplan.EUNAUTHORIZED, "Unauthorized"
	if status == fasthttp.StatusForbidden {
		code, msg = supplyplan.EFORBIDDEN, "Forbidden"
	} else if status != fasthttp.StatusUnauthorized {
		status = fasthttp.StatusUnauthorized
	}
	ctx.Response.Header.Set("WWW-Authenticate", e.WWWAuthenticate())
	writeErrorBody(ctx, status, errorBody{Error: msg, Code: code, Reason: e.Code,
		Details: map[string][]string{"authorization": {e.Description}}})
	return code
}

// authed verifies the caller's JWT (headers only: no body has been read), resolves its
// organization and checks that its scopes include scope. POSTs are mutating: the token's jti is
// then refused on another mutating call until it expires.
func (s *LoopRuntimeServer) authed(scope string, h runHandler) handlerFunc {
	return func(r *Request) error {
		hdr := bytes.TrimSpace(r.Ctx.Request.Header.Peek("Authorization"))
		if len(hdr) == 0 {
			return &jwtauth.Error{Status: fasthttp.StatusUnauthorized, Code: "invalid_request", Description: "an Authorization: Bearer <JWT> header is required"}
		}
		token, ok := bytes.CutPrefix(hdr, []byte("Bearer "))
		if !ok {
			if token, ok = bytes.CutPrefix(hdr, []byte("bearer ")); !ok {
				return &jwtauth.Error{Status: fasthttp.StatusUnauthorized, Code: "invalid_request", Description: "the Authorization header must be Bearer <JWT>"}
			}
		}
		mutating := string(r.Ctx.Method()) == "POST"
		// Distributed: the token is verified here without spending its jti (the owner, which
		// verifies it again, does that), so that a forwarded mutating call is not its own replay.
		claims, err := s.svc.Auth.Authenticate(r.Context, string(bytes.TrimSpace(token)), mutating && s.fwd == nil)
		if err != nil {
			var ae *jwtauth.Error
			if errors.As(err, &ae) {
				return ae
			}
			return &jwtauth.Error{Status: fasthttp.StatusUnauthorized, Code: "invalid_token", Description: "the token could not be verified"}
		}
		org, ok := s.svc.Runtime.Organization(claims.Org)
		if !ok || claims.Org == "" {
			return &jwtauth.Error{Status: fasthttp.StatusUnauthorized, Code: "invalid_token", Description: "the token's org claim names no organization"}
		}
		r.Principal.OrgID = org.ID // the request log's organization
		if !claims.HasScope(scope) {
			return &jwtauth.Error{Status: fasthttp.StatusForbidden, Code: "insufficient_scope",
				Description: "this call needs the scope " + scope}
		}
		if s.fwd != nil {
			deadline, _ := r.Context.Deadline()
			if err := s.fwd.route(r.Ctx, org.ID, r.requestID, deadline, r.Body); err != nil {
				return err
			}
			if mutating { // served here: now spend the jti
				if claims, err = s.svc.Auth.Authenticate(r.Context, string(bytes.TrimSpace(token)), true); err != nil {
					var ae *jwtauth.Error
					if errors.As(err, &ae) {
						return ae
					}
					return &jwtauth.Error{Status: fasthttp.StatusUnauthorized, Code: "invalid_token", Description: "the token could not be verified"}
				}
			}
		}
		reqID := string(r.requestID)
		c := &runCaller{claims: claims, c: supplyplan.LoopRunCaller{OrgID: org.ID,
			Actor: supplyplan.LoopActor{Type: supplyplan.LoopActorType(claims.Subject), Sub: claims.Subject, Iss: claims.Issuer, Jti: claims.ID},
			Roles: supplyplan.LoopRolesOf(claims.HasScope(jwtauth.ScopeAdmin), claims.HasScope(jwtauth.ScopeWrite)), RequestID: reqID}}
		if string(r.Ctx.Method()) == "POST" {
			key, err := idempotencyKey(r.Ctx)
			if err != nil {
				return err
			}
			if key != "" {
				body, err := r.Body()
				if err != nil {
					return err
				}
				c.c.IdempotencyKey = key
				c.c.Fingerprint = IdempotencyFingerprint("POST", string(r.Ctx.RequestURI()), body)
			}
		}
		return h(r, c)
	}
}

// ifMatch reads If-Match: an instance version, quoted or not (nil when absent).
func ifMatch(ctx *fasthttp.RequestCtx) (*int64, error) {
	raw := bytes.TrimSpace(ctx.Request.Header.Peek("If-Match"))
	if len(raw) == 0 {
		return nil, nil
	}
	raw = bytes.TrimPrefix(raw, []byte("W/"))
	raw = bytes.Trim(raw, `"`)
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 1 {
		return nil, supplyplan.Invalid("If-Match", "must be the instance's version (its ETag), e.g. \"3\"")
	}
	return &n, nil
}

// replayed writes an Idempotency-Key's stored response.
func replayed(r *Request, idm *supplyplan.LoopIdem) error {
	r.Ctx.SetStatusCode(idm.Status)
	r.Ctx.SetContentType("application/json")
	r.Ctx.SetBody(idm.Body)
	r.Ctx.Response.Header.Set(replayedHeader, "true")
	return nil
}

// instance writes an instance with its ETag.
func instanceResponse(r *Request, status int, in supplyplan.LoopInstance) error {
	r.Ctx.Response.Header.Set("ETag", in.ETag())
	// The hand-written encoding writes json.Marshal's bytes without its reflection (one per
	// transition); it declines what it does not handle, which encoding/json then writes.
	buf := instanceBuffers.Get().(*[]byte)
	defer instanceBuffers.Put(buf)
	if b, ok := supplyplan.AppendLoopInstanceJSON((*buf)[:0], &in); ok {
		r.Ctx.SetStatusCode(status)
		r.Ctx.SetContentType("application/json")
		r.Ctx.SetBody(b) // a copy
		if cap(b) <= maxPooledResponse {
			*buf = b
		}
		return nil
	}
	return r.JSON(status, in)
}

// instanceBuffers are the buffers instances are encoded into before SetBody copies them.
var instanceBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (s *LoopRuntimeServer) start(r *Request, c *runCaller) error {
	var in struct {
		Loop        string          `json:"loop"`
		Version     string          `json:"version" max:"256"`
		Range       string          `json:"range" max:"1024"`
		Digest      string          `json:"digest" max:"100"`
		BusinessKey string          `json:"businessKey" max:"1000"`
		Input       json.RawMessage `json:"input"`
		OnConflict  string          `json:"onConflict"`
	}
	if err := r.Decode(&in); err != nil {
		return err
	}
	res, err := s.svc.Runtime.StartInstance(r.Context, c.c, supplyplan.LoopStartInput{Loop: in.Loop, Version: in.Version, Range: in.Range,
		Digest: in.Digest, BusinessKey: in.BusinessKey, Input: bytes.Clone(in.Input), OnConflict: in.OnConflict})
	if err != nil {
		return err
	}
	if res.Replay != nil {
		return replayed(r, res.Replay)
	}
	status := fasthttp.StatusOK
	if res.Created {
		status = fasthttp.StatusCreated
		r.Ctx.Response.Header.Set("Location", "/v1/instances/"+res.Instance.ID)
	}
	return instanceResponse(r, status, res.Instance)
}

// filter reads the instance filter of the query (list) or of a bulk cancel's body.
func instanceFilter(q *Query) supplyplan.LoopInstanceFilter {
	f := supplyplan.LoopInstanceFilter{Loop: q.String("loop"),
		Status: supplyplan.LoopInstanceStatus(q.Enum("status", enumStrings(supplyplan.LoopInstanceStatuses))),
		State:  q.String("state"), BusinessKey: q.String("businessKey")}
	if t, _, ok := q.Time("createdAfter"); ok {
		f.CreatedAfter = &t
	}
	if t, _, ok := q.Time("createdBefore"); ok {
		f.CreatedBefore = &t
	}
	return f
}

func (s *LoopRuntimeServer) list(r *Request, c *runCaller) error {
	q := r.Query()
	f := instanceFilter(q)
	f.Limit, f.Offset = pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Runtime.ListInstances(r.Context, c.c.OrgID, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"instances": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *LoopRuntimeServer) get(r *Request, c *runCaller) error {
	in, err := s.svc.Runtime.GetInstance(r.Context, c.c.OrgID, r.Param("id"))
	if err != nil {
		return err
	}
	return instanceResponse(r, fasthttp.StatusOK, in)
}

func (s *LoopRuntimeServer) transition(r *Request, c *runCaller) error {
	im, err := ifMatch(r.Ctx)
	if err != nil {
		return err
	}
	in, err := decodeTransition(r)
	if err != nil {
		return err
	}
	if in.Name == "" {
		return supplyplan.Invalid("name", "is required")
	}
	res, err := s.svc.Runtime.Transition(r.Context, c.c, r.Param("id"), supplyplan.LoopTransitionInput{Name: in.Name,
		Payload: in.Payload, IfMatch: im, Roles: c.c.Roles})
	if err != nil {
		return err
	}
	if res.Replay != nil {
		return replayed(r, res.Replay)
	}
	return instanceResponse(r, fasthttp.StatusOK, res.Instance)
}

// transitionBody is the body of a transition request.
type transitionBody struct {
	Name    string          `json:"name" max:"63"`
	Payload json.RawMessage `json:"payload"`
}

var transitionBodyType = reflect.TypeFor[*transitionBody]()

// decodeTransition reads a transition body as Request.Decode does (the payload a copy of its
// bytes), without encoding/json's reflection for the common body: once the strict check has passed
// it, an object whose member names hold no escape and whose name is a string without escapes is
// read member by member (other members are ignored, as encoding/json ignores them); any other
// body goes through Decode, which then answers as before (TestDecodeTransitionMatchesDecode).
func decodeTransition(r *Request) (transitionBody, error) {
	body, err := r.Body()
	if err != nil {
		return transitionBody{}, err
	}
	return decodeTransitionBody(body, r.decodeLimit)
}

func decodeTransitionBody(body []byte, limit int) (transitionBody, error) {
	var in transitionBody
	if limit <= 0 || len(body) <= limit {
		if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '{' {
			clean, _, err := strictjson.Check(trimmed, transitionBodyType)
			if err != nil {
				return in, err
			}
			if len(clean) == len(trimmed) && &clean[0] == &trimmed[0] { // no case-variant key
				if name, payload, ok := plainTransition(clean); ok && len(name) <= 63 {
					in.Name, in.Payload = name, bytes.Clone(payload)
					return in, nil
				}
			}
		}
	}
	if err := decodeJSON(body, limit, &in); err != nil {
		return in, err
	}
	in.Payload = bytes.Clone(in.Payload)
	return in, nil
}

// plainTransition reads the name and the payload (its JSON text, nil when absent) of b, a JSON
// object strictjson checked (valid, no member twice); ok is false when a member name holds an
// escape or the name is not a string without escapes.
func plainTransition(b []byte) (name string, payload []byte, ok bool) {
	i := jsonscan.SkipWS(b, 1)
	for i < len(b) && b[i] == '"' {
		ke := jsonscan.SkipString(b, i)
		key := b[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return "", nil, false
		}
		i = jsonscan.SkipWS(b, jsonscan.SkipWS(b, ke)+1) // after ':'
		end := jsonscan.SkipValue(b, i)
		switch string(key) {
		case "name":
			if b[i] != '"' || bytes.IndexByte(b[i+1:end-1], '\\') >= 0 {
				return "", nil, false
			}
			name = string(b[i+1 : end-1])
		case "payload":
			payload = b[i:end]
		}
		if i = jsonscan.SkipWS(b, end); i < len(b) && b[i] == ',' {
			i = jsonscan.SkipWS(b, i+1)
		}
	}
	return name, payload, true
}

func (s *LoopRuntimeServer) lifecycle(action string) runHandler {
	return func(r *Request, c *runCaller) error {
		im, err := ifMatch(r.Ctx)
		if err != nil {
			return err
		}
		var in struct {
			Reason string `json:"reason" max:"1000"`
		}
		if err := r.DecodeOptional(&in); err != nil {
			return err
		}
		res, err := s.svc.Runtime.Lifecycle(r.Context, c.c, r.Param("id"), action, supplyplan.LoopLifecycleInput{Reason: in.Reason, IfMatch: im})
		if err != nil {
			return err
		}
		if res.Replay != nil {
			return replayed(r, res.Replay)
		}
		return instanceResponse(r, fasthttp.StatusOK, res.Instance)
	}
}

func (s *LoopRuntimeServer) bulkCancel(r *Request, c *runCaller) error {
	var in struct {
		Filter *struct {
			Loop          string  `json:"loop"`
			Status        string  `json:"status"`
			State         string  `json:"state"`
			BusinessKey   string  `json:"businessKey" max:"1000"`
			CreatedAfter  *string `json:"createdAfter"`
			CreatedBefore *string `json:"createdBefore"`
		} `json:"filter"`
		Reason        string `json:"reason" max:"1000"`
		DryRun        bool   `json:"dryRun"`
		ExpectedCount *int   `json:"expectedCount"`
	}
	if err := r.Decode(&in); err != nil {
		return err
	}
	if in.Filter == nil {
		return supplyplan.Invalid("filter", "is required (an empty filter never means every instance)")
	}
	f := supplyplan.LoopInstanceFilter{Loop: in.Filter.Loop, Status: supplyplan.LoopInstanceStatus(in.Filter.Status),
		State: in.Filter.State, BusinessKey: in.Filter.BusinessKey}
	for _, x := range []struct {
		field string
		v     *string
		dst   **time.Time
	}{{"filter.createdAfter", in.Filter.CreatedAfter, &f.CreatedAfter}, {"filter.createdBefore", in.Filter.CreatedBefore, &f.CreatedBefore}} {
		if x.v != nil {
			t, ok := supplyplan.ParseTime(*x.v)
			if !ok {
				return supplyplan.Invalid(x.field, "must be an ISO date-time")
			}
			*x.dst = &t
		}
	}
	res, idm, err := s.svc.Runtime.BulkCancel(r.Context, c.c, supplyplan.LoopBulkCancelInput{Filter: f, Reason: in.Reason,
		DryRun: in.DryRun, ExpectedCount: in.ExpectedCount})
	if err != nil {
		return err
	}
	if idm != nil {
		return replayed(r, idm)
	}
	return r.JSON(fasthttp.StatusOK, res)
}

func (s *LoopRuntimeServer) events(r *Request, c *runCaller) error {
	q := r.Query()
	after := q.Int("afterSeq", 0, 0, 1<<53)
	limit := q.Int("limit", supplyplan.DefaultLoopEventsLimit, 1, supplyplan.MaxLoopEventsPerList)
	if err := q.Err(); err != nil {
		return err
	}
	evs, err := s.svc.Runtime.Events(r.Context, c.c.OrgID, r.Param("id"), int64(after), limit)
	if err != nil {
		return err
	}
	next := int64(after)
	if len(evs) > 0 {
		next = evs[len(evs)-1].Seq
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"events": evs, "nextAfterSeq": next})
}

func (s *LoopRuntimeServer) verify(r *Request, c *runCaller) error {
	v, err := s.svc.Runtime.VerifyAudit(r.Context, c.c.OrgID, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, v)
}
