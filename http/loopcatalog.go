package http

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/telemetry"
)

// LoopCatalogConfig configures the loop catalog listener (default 127.0.0.1:3011).
type LoopCatalogConfig struct {
	Addr string
	// BodyLimit caps the JSON bodies of the lifecycle routes (default 1 MiB). A manifest is read
	// under supplyplan.MaxLoopManifestBytes.
	BodyLimit      int
	RequestTimeout time.Duration
	Logger         *slog.Logger
	// BodyBudget bounds the request-body bytes held at once (see Config.BodyBudget).
	BodyBudget *BodyBudget
	// Metrics and AccessLog are as the API's (server label "loop-catalog"; nil: none).
	Metrics   *telemetry.Metrics
	AccessLog *slog.Logger
	// Owners and NodeID route each organization's requests to its owner (see Config.Owners).
	Owners Owners
	NodeID string
}

// LoopCatalogServices are what the loop catalog listener calls.
type LoopCatalogServices struct {
	Auth  supplyplan.Authenticator
	Loops supplyplan.LoopCatalogService
}

// LoopCatalogServer is the loop catalog's HTTP service: published loop definitions, their
// versions, dist-tags, lifecycle, blobs and the catalog's public keys (docs/loop-catalog-api.md).
type LoopCatalogServer struct {
	cfg      LoopCatalogConfig
	svc      LoopCatalogServices
	log      *slog.Logger
	router   *router
	obs      observer
	dispatch dispatch
	fwd      *forwarder
	listener
}

// NewLoopCatalogServer builds the loop catalog listener and its routes.
func NewLoopCatalogServer(cfg LoopCatalogConfig, svc LoopCatalogServices) *LoopCatalogServer {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 1 << 20
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &LoopCatalogServer{cfg: cfg, svc: svc, log: cfg.Logger, router: newRouter()}
	s.fwd = newForwarder(cfg.Owners, cfg.NodeID, cfg.Addr, false, cfg.Logger)
	s.routes()
	s.obs.init("loop-catalog", s.router, cfg.Metrics, cfg.AccessLog)
	s.dispatch = dispatch{what: "loop catalog ", log: s.log, router: s.router, timeout: cfg.RequestTimeout}
	s.listener = newListener("loop-catalog", cfg.Addr, "supplyplan-loop-catalog", cfg.BodyBudget, cfg.Logger, s.handle)
	return s
}

// Handler exposes the request handler (tests and benchmarks).
func (s *LoopCatalogServer) Handler() fasthttp.RequestHandler { return s.handle }

// loopHandler handles a request of an authenticated caller.
type loopHandler func(r *Request, c supplyplan.LoopCaller) error

func (s *LoopCatalogServer) routes() {
	rt := s.router
	rt.handle("GET", "/health", func(r *Request) error {
		r.Ctx.SetStatusCode(fasthttp.StatusOK)
		r.Ctx.SetContentType("application/json")
		r.Ctx.SetBody(healthBody)
		return nil
	})
	rt.handle("GET", "/.well-known/loop-catalog/keys", s.keys)
	rt.handle("GET", "/openapi.json", serveOpenAPI(loopCatalogOpenAPI))

	const loop = "/v1/loops/:scope/:name"
	const version = loop + "/versions/:version"
	rt.handle("GET", "/v1/loops", s.authed(s.listLoops))
	rt.handle("GET", loop, s.authed(s.getLoop))
	rt.handle("GET", loop+"/resolve", s.authed(s.resolve))
	rt.handle("GET", loop+"/audit", s.authed(s.audit))
	rt.handle("GET", loop+"/dist-tags", s.authed(s.distTags))
	rt.handle("PUT", loop+"/dist-tags/:tag", s.authed(s.setDistTag))
	rt.handle("DELETE", loop+"/dist-tags/:tag", s.authed(s.removeDistTag))
	rt.handle("PUT", version, s.authed(s.publish))
	rt.handle("GET", version, s.authed(s.getVersion))
	rt.handle("DELETE", version, s.authed(s.removeVersion))
	rt.handle("POST", version+"/deprecate", s.authed(s.deprecate))
	rt.handle("POST", version+"/yank", s.authed(s.yank))
	rt.handle("POST", version+"/unyank", s.authed(s.unyank))
	rt.handle("GET", "/v1/blobs/:digest", s.authed(s.blob))
}

// handle serves one request, then echoes its request id, counts it and logs it.
func (s *LoopCatalogServer) handle(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	var buf [requestIDMax]byte
	id := s.obs.ids.of(ctx, buf[:0])
	rt, org, code := s.serve(ctx, id)
	s.obs.served(ctx, id, rt, org, code, start)
}

// serve routes and runs one request (see Server.serve).
func (s *LoopCatalogServer) serve(ctx *fasthttp.RequestCtx, id []byte) (rt *route, org, code string) {
	return s.dispatch.serve(ctx, id, &Request{budget: s.budget, decodeLimit: s.cfg.BodyLimit, bodyLimit: s.cfg.BodyLimit})
}

// authed resolves the caller from its bearer key (headers only: no body has been read): an
// organization's role key, or the platform key. Import keys are refused.
func (s *LoopCatalogServer) authed(h loopHandler) handlerFunc {
	return func(r *Request) error {
		cred := bearerCredential(r.Ctx.Request.Header.Peek("Authorization"))
		if cred.reason != "" {
			return cred.err()
		}
		p, ok := s.svc.Auth.Authenticate(cred.key)
		if !ok {
			return unknownKey(cred.header)
		}
		r.Principal = p // the request log's organization
		if p.Platform {
			return h(r, supplyplan.LoopCallerOf(p, supplyplan.Organization{}))
		}
		org, ok := s.svc.Auth.Organization(p.OrgID)
		if !ok {
			return unknownKey("authorization")
		}
		if p.Role == "" {
			return &supplyplan.Error{Code: supplyplan.EFORBIDDEN, Message: "Forbidden",
				Details: map[string][]string{"authorization": {"import keys are accepted only by the import endpoints (x-api-key)"}}}
		}
		if s.fwd != nil {
			deadline, _ := r.Context.Deadline()
			// A manifest (publish) may be larger than the JSON bodies: the owner applies the
			// route's own limit.
			r.bodyLimit = max(r.bodyLimit, supplyplan.MaxLoopManifestBytes)
			if err := s.fwd.route(r.Ctx, org.ID, r.requestID, deadline, r.Body); err != nil {
				return err
			}
			r.bodyLimit = s.cfg.BodyLimit
		}
		return h(r, supplyplan.LoopCallerOf(p, org))
	}
}

// loopName is the full name of the path's {scope}/{name}.
func loopName(r *Request) string { return r.Param("scope") + "/" + r.Param("name") }

func (s *LoopCatalogServer) keys(r *Request) error {
	r.Ctx.Response.Header.Set("Cache-Control", "public, max-age=300")
	return r.JSON(fasthttp.StatusOK, s.svc.Loops.LoopKeys())
}

func (s *LoopCatalogServer) listLoops(r *Request, c supplyplan.LoopCaller) error {
	q := r.Query()
	limit, offset := pageParams(q)
	f := supplyplan.LoopFilter{Domain: q.Enum("domain", enumStrings(supplyplan.LoopDomains)), Query: q.String("text"), Limit: limit, Offset: offset}
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Loops.ListLoops(r.Context, c, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"loops": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *LoopCatalogServer) getLoop(r *Request, c supplyplan.LoopCaller) error {
	doc, err := s.svc.Loops.GetLoop(r.Context, c, loopName(r))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, doc)
}

func (s *LoopCatalogServer) resolve(r *Request, c supplyplan.LoopCaller) error {
	q := r.Query()
	pre := q.Bool("includePrerelease", false)
	if err := q.Err(); err != nil {
		return err
	}
	res, err := s.svc.Loops.ResolveLoop(r.Context, c, loopName(r), q.String("range"), pre)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, res)
}

func (s *LoopCatalogServer) audit(r *Request, c supplyplan.LoopCaller) error {
	q := r.Query()
	limit, offset := pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Loops.LoopAudit(r.Context, c, loopName(r), limit, offset)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"entries": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *LoopCatalogServer) distTags(r *Request, c supplyplan.LoopCaller) error {
	tags, err := s.svc.Loops.DistTags(r.Context, c, loopName(r))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, tags)
}

func (s *LoopCatalogServer) setDistTag(r *Request, c supplyplan.LoopCaller) error {
	if err := checkWrite(c, r); err != nil {
		return err
	}
	var in struct {
		Version *string `json:"version" max:"256"`
	}
	if err := r.Decode(&in); err != nil {
		return err
	}
	if in.Version == nil || *in.Version == "" {
		return supplyplan.Invalid("version", "is required")
	}
	tags, err := s.svc.Loops.SetDistTag(r.Context, c, loopName(r), r.Param("tag"), *in.Version)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, tags)
}

func (s *LoopCatalogServer) removeDistTag(r *Request, c supplyplan.LoopCaller) error {
	tags, err := s.svc.Loops.RemoveDistTag(r.Context, c, loopName(r), r.Param("tag"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, tags)
}

// checkWrite refuses, from the path and the key alone, a write the caller may not make, so that
// its body is never read.
func checkWrite(c supplyplan.LoopCaller, r *Request) error {
	return c.CheckWrite(r.Param("scope"))
}

// publish takes the raw manifest as the body, read under the manifest limit (413 beyond, before
// reading when Content-Length says so) once the caller may publish into the scope.
func (s *LoopCatalogServer) publish(r *Request, c supplyplan.LoopCaller) error {
	if err := checkWrite(c, r); err != nil {
		return err
	}
	r.bodyLimit = supplyplan.MaxLoopManifestBytes
	b, err := r.Body()
	if err != nil {
		return err
	}
	name, version := loopName(r), r.Param("version")
	// The actor may still run the publish after this request timed out: hand it its own copy.
	res, err := s.svc.Loops.PublishLoop(r.Context, c, name, version, bytes.Clone(b))
	if err != nil {
		return err
	}
	status := fasthttp.StatusOK
	if res.Created {
		status = fasthttp.StatusCreated
		r.Ctx.Response.Header.Set("Location", "/v1/loops/"+name+"/versions/"+url.PathEscape(res.Version.Version))
	}
	return r.JSON(status, res.Version)
}

func (s *LoopCatalogServer) getVersion(r *Request, c supplyplan.LoopCaller) error {
	v, err := s.svc.Loops.GetLoopVersion(r.Context, c, loopName(r), r.Param("version"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, v)
}

func (s *LoopCatalogServer) removeVersion(r *Request, c supplyplan.LoopCaller) error {
	v, err := s.svc.Loops.RemoveLoopVersion(r.Context, c, loopName(r), r.Param("version"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, v)
}

func (s *LoopCatalogServer) deprecate(r *Request, c supplyplan.LoopCaller) error {
	if err := checkWrite(c, r); err != nil {
		return err
	}
	var in struct {
		Message *string `json:"message" max:"4096"`
	}
	if err := r.Decode(&in); err != nil {
		return err
	}
	if in.Message == nil {
		return supplyplan.Invalid("message", "is required (an empty message un-deprecates)")
	}
	v, err := s.svc.Loops.DeprecateLoopVersion(r.Context, c, loopName(r), r.Param("version"), *in.Message)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, v)
}

func (s *LoopCatalogServer) yank(r *Request, c supplyplan.LoopCaller) error {
	if err := checkWrite(c, r); err != nil {
		return err
	}
	var in struct {
		Reason string `json:"reason" max:"4096"`
	}
	if err := r.DecodeOptional(&in); err != nil {
		return err
	}
	v, err := s.svc.Loops.YankLoopVersion(r.Context, c, loopName(r), r.Param("version"), in.Reason)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, v)
}

func (s *LoopCatalogServer) unyank(r *Request, c supplyplan.LoopCaller) error {
	if err := checkWrite(c, r); err != nil {
		return err
	}
	var in struct{}
	if err := r.DecodeOptional(&in); err != nil {
		return err
	}
	v, err := s.svc.Loops.UnyankLoopVersion(r.Context, c, loopName(r), r.Param("version"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, v)
}

// blobMaxAge is how long a blob may be cached: a digest's bytes never change.
const blobMaxAge = 365 * 24 * time.Hour

// blob serves a canonical manifest by digest, byte for byte, cacheable forever (the digest is its
// ETag). A global loop's blob is public; an organization's may be cached only by the caller.
func (s *LoopCatalogServer) blob(r *Request, c supplyplan.LoopCaller) error {
	digest := r.Param("digest")
	data, scope, err := s.svc.Loops.LoopBlob(r.Context, c, digest)
	if err != nil {
		return err
	}
	h := &r.Ctx.Response.Header
	etag := `"` + digest + `"`
	visibility := "private"
	if scope == supplyplan.GlobalLoopScope {
		visibility = "public"
	}
	h.Set("Cache-Control", fmt.Sprintf("%s, max-age=%d, immutable", visibility, int(blobMaxAge/time.Second)))
	h.Set("ETag", etag)
	h.Set("X-Content-Digest", digest)
	if inm := r.Ctx.Request.Header.Peek("If-None-Match"); len(inm) > 0 && etagMatches(inm, etag) {
		r.Ctx.SetStatusCode(fasthttp.StatusNotModified)
		return nil
	}
	r.Ctx.SetStatusCode(fasthttp.StatusOK)
	r.Ctx.SetContentType("application/json")
	r.Ctx.SetBody(data)
	return nil
}

// etagMatches reports whether an If-None-Match header names etag (or is "*"); weak validators
// match too (RFC 9110's weak comparison for If-None-Match).
func etagMatches(header []byte, etag string) bool {
	for _, part := range bytes.Split(header, []byte(",")) {
		part = bytes.TrimSpace(part)
		part = bytes.TrimPrefix(part, []byte("W/"))
		if string(part) == "*" || string(part) == etag {
			return true
		}
	}
	return false
}
