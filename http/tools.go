package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/tools"
)

// ToolsConfig configures the hosted commerce tool service.
type ToolsConfig struct {
	Addr           string
	BodyLimit      int // default 1 MiB
	RequestTimeout time.Duration
	Logger         *slog.Logger
	// BodyBudget bounds the request-body bytes held at once (see Config.BodyBudget).
	BodyBudget *BodyBudget
	// Owners and NodeID route each organization's requests to its owner (see Config.Owners).
	Owners Owners
	NodeID string
}

// ToolsServices are what the tool service calls.
type ToolsServices struct {
	Keys      supplyplan.ToolKeyAuthenticator
	Merchants supplyplan.MerchantDirectory
	Deps      *tools.Deps
	// MCP serves POST /mcp?org=<slug> (the rpc package's handler).
	MCP tools.MCPHandler
	// Health names the dependencies GET /health checks.
	Health map[string]func(context.Context) error
}

// ToolServer is the hosted commerce tool service: GET /, GET /health, GET /tools/list,
// POST /tools/call and MCP at /mcp.
type ToolServer struct {
	cfg ToolsConfig
	svc ToolsServices
	log *slog.Logger
	fwd *forwarder
	listener
}

// NewToolServer builds the tool service.
func NewToolServer(cfg ToolsConfig, svc ToolsServices) *ToolServer {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 1 << 20
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &ToolServer{cfg: cfg, svc: svc, log: cfg.Logger}
	s.fwd = newForwarder(cfg.Owners, cfg.NodeID, cfg.Addr, false, cfg.Logger)
	s.listener = newListener("tools", cfg.Addr, "supplyplan-tools", cfg.BodyBudget, cfg.Logger, s.handle)
	return s
}

// Handler exposes the request handler (tests and benchmarks).
func (s *ToolServer) Handler() fasthttp.RequestHandler { return s.handle }

func (s *ToolServer) handle(ctx *fasthttp.RequestCtx) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("tool handler panic", "path", string(ctx.Path()), "panic", r, "stack", string(debug.Stack()))
			ctx.ResetBody()
			writeError(ctx, supplyplan.Errorf(supplyplan.EINTERNAL, "Internal error"))
		}
	}()
	// A request refused on its headers leaves its body unread on the connection: close it.
	defer discardUnread(ctx)
	rctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	path, method := string(ctx.Path()), string(ctx.Method())
	var err error
	switch {
	case path == "/mcp":
		s.mcp(rctx, ctx)
		return
	case path == "/" && (method == "GET" || method == "HEAD"):
		s.home(ctx)
		return
	case path == "/health" && (method == "GET" || method == "HEAD"):
		s.health(rctx, ctx)
		return
	case path == "/tools/list" && (method == "GET" || method == "HEAD"):
		err = s.listTools(rctx, ctx)
	case path == "/tools/call" && method == "POST":
		err = s.callTool(rctx, ctx)
	case path == "/" || path == "/health" || path == "/tools/list":
		ctx.Response.Header.Set("Allow", "GET")
		writeErrorStatus(ctx, fasthttp.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "Method not allowed", nil)
		return
	case path == "/tools/call":
		ctx.Response.Header.Set("Allow", "POST")
		writeErrorStatus(ctx, fasthttp.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "Method not allowed", nil)
		return
	default:
		err = supplyplan.Errorf(supplyplan.ENOTFOUND, "Not found")
	}
	if err == errForwarded { // the owner's answer is the response
		return
	}
	if err != nil {
		if supplyplan.ErrorCode(err) == supplyplan.EINTERNAL {
			s.log.Error("tool request failed", "path", path, "err", err)
		}
		if supplyplan.ErrorCode(err) == supplyplan.EUNAUTHORIZED {
			ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="tools"`)
		}
		writeError(ctx, err)
	}
}

// toolCredential reads the key of "Authorization: Bearer <key>" or "x-api-key: <key>".
func toolCredential(ctx *fasthttp.RequestCtx) credential {
	if h := ctx.Request.Header.Peek("Authorization"); len(bytes.TrimSpace(h)) > 0 {
		return bearerCredential(h)
	}
	return apiKeyCredential(ctx.Request.Header.Peek("x-api-key"),
		"a tool key is required (Authorization: Bearer <key> or x-api-key: <key>)")
}

// toolKeyError is the tool service's 401 for a key that is present but malformed or unknown.
func toolKeyError(c credential) error {
	if c.reason == reasonKeyMalformed {
		return unauthorized(c.reason, c.header, "Malformed tool key", c.detail)
	}
	return unauthorized(reasonKeyUnknown, c.header, "Unknown or revoked tool key", "unknown or revoked key")
}

// checkPresentKey refuses, from the headers alone, a request whose key is present but malformed
// or unknown: such a request never gets its body read. A request without a key goes on (a listed
// merchant's public tools need none).
func (s *ToolServer) checkPresentKey(ctx *fasthttp.RequestCtx) error {
	c := toolCredential(ctx)
	switch c.reason {
	case reasonKeyMissing:
		return nil
	case reasonKeyMalformed:
		return toolKeyError(c)
	}
	if _, ok := s.svc.Keys.AuthenticateTool(c.key); !ok {
		return toolKeyError(c)
	}
	return nil
}

// access resolves the organization and what the caller may use: a tool key of the organization
// (all its tools), no key (the public tools of a listed merchant), anything else 401/403.
func (s *ToolServer) access(ctx *fasthttp.RequestCtx, ref string) (supplyplan.Organization, tools.Access, error) {
	var none tools.Access
	if ref == "" {
		return supplyplan.Organization{}, none, supplyplan.Invalid("org", "is required (organization slug or id)")
	}
	org, ok := s.svc.Keys.OrganizationByRef(ref)
	if !ok {
		return supplyplan.Organization{}, none, supplyplan.NotFound("Organization")
	}
	c := toolCredential(ctx)
	if c.reason != reasonKeyMissing {
		if c.reason != "" {
			return org, none, toolKeyError(c)
		}
		k, ok := s.svc.Keys.AuthenticateTool(c.key)
		if !ok {
			return org, none, toolKeyError(c)
		}
		if k.OrganizationID != org.ID {
			return org, none, &supplyplan.Error{Code: supplyplan.EFORBIDDEN, Message: "This key belongs to another organization"}
		}
		return org, tools.Access{Principal: supplyplan.Principal{KeyID: k.ID, OrgID: org.ID, Role: supplyplan.RoleViewer}}, nil
	}
	if p, ok := s.svc.Keys.MerchantProfile(org.ID); ok && p.Listed {
		return org, tools.Access{Public: true,
			Principal: supplyplan.Principal{KeyID: "public", OrgID: org.ID, Role: supplyplan.RoleViewer}}, nil
	}
	return org, none, unauthorized(reasonKeyMissing, "authorization",
		"A tool key is required (Authorization: Bearer <key> or x-api-key: <key>)",
		"missing: this organization's tools are not public; send its tool key")
}

func (s *ToolServer) listTools(rctx context.Context, ctx *fasthttp.RequestCtx) error {
	org, acc, err := s.access(ctx, string(ctx.QueryArgs().Peek("org")))
	if err != nil {
		return err
	}
	if err := s.route(rctx, ctx, org.ID, nil); err != nil {
		return err
	}
	mode := "key"
	if acc.Public {
		mode = "public"
	}
	head, err := json.Marshal(map[string]any{"organization": map[string]string{"id": org.ID, "slug": org.Slug}, "access": mode})
	if err != nil {
		return fmt.Errorf("encode tool list: %w", err)
	}
	// The definitions are pre-encoded (tools.PrepareDef): write them as they are.
	b := make([]byte, 0, 16<<10)
	b = append(b, head[:len(head)-1]...)
	b = append(b, `,"tools":[`...)
	for i, d := range tools.NewSet(org, acc, s.svc.Deps).Tools() {
		if i > 0 {
			b = append(b, ',')
		}
		raw := d.Raw
		if len(raw) == 0 {
			if raw, err = json.Marshal(d); err != nil {
				return fmt.Errorf("encode tool %s: %w", d.Name, err)
			}
		}
		b = append(b, raw...)
	}
	b = append(b, "]}"...)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
	return nil
}

func (s *ToolServer) callTool(rctx context.Context, ctx *fasthttp.RequestCtx) error {
	var in struct {
		Org       string          `json:"org"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := s.checkPresentKey(ctx); err != nil {
		return err
	}
	bd, err := readBody(ctx, s.cfg.BodyLimit, s.budget)
	if err != nil {
		return err
	}
	defer bd.release()
	if err := decodeJSON(bd.b, s.cfg.BodyLimit, &in); err != nil {
		return err
	}
	if in.Org == "" {
		in.Org = string(ctx.QueryArgs().Peek("org"))
	}
	if in.Name == "" {
		return supplyplan.Invalid("name", "is required")
	}
	org, acc, err := s.access(ctx, in.Org)
	if err != nil {
		return err
	}
	if err := s.route(rctx, ctx, org.ID, bd.b); err != nil {
		return err
	}
	res, err := tools.NewSet(org, acc, s.svc.Deps).Call(rctx, in.Name, in.Arguments)
	if err != nil {
		if supplyplan.ErrorCode(err) == supplyplan.ENOTFOUND {
			return supplyplan.NotFound("Tool " + in.Name)
		}
		return err
	}
	b, err := res.CallResultJSON(false)
	if err != nil {
		return fmt.Errorf("encode tool result: %w", err)
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
	return nil
}

func (s *ToolServer) mcp(rctx context.Context, ctx *fasthttp.RequestCtx) {
	ref := string(ctx.QueryArgs().Peek("org"))
	// The caller is resolved from the headers before the body is read: the MCP handler checks it
	// first and never looks at the body of a refused caller.
	org, acc, aerr := s.access(ctx, ref)
	var raw []byte
	if aerr == nil && ctx.IsPost() {
		// The rpc handler answers an oversized body itself (413 in JSON-RPC form); read a little
		// more than the limit so that it can.
		bd, err := readBody(ctx, s.cfg.BodyLimit+1024, s.budget)
		if err != nil {
			writeError(ctx, err)
			return
		}
		defer bd.release()
		// Our own allocation, not fasthttp's buffer: after a timeout the jsonrpc2 reader may still
		// run when this handler has returned.
		raw = bd.b
		if !bd.owned {
			raw = bytes.Clone(bd.b)
		}
	}
	// Distributed: a caller of an organization owned elsewhere is forwarded (the whole answer,
	// SSE-framed or not, is one buffered response); no owner now is the handler's 503, in JSON-RPC
	// form, with Retry-After: 1.
	unavailable := false
	if aerr == nil {
		switch err := s.route(rctx, ctx, org.ID, raw); {
		case err == errForwarded:
			return
		case err != nil:
			aerr, unavailable = err, supplyplan.ErrorCode(err) == supplyplan.EUNAVAILABLE
		}
	}
	req := tools.MCPRequest{
		Method: string(ctx.Method()),
		Header: func(name string) string { return string(ctx.Request.Header.Peek(name)) },
		Body:   raw,
		Resolve: func(context.Context) (tools.Set, error) {
			if aerr != nil {
				return nil, aerr
			}
			return tools.NewSet(org, acc, s.svc.Deps), nil
		},
	}
	resp := s.svc.MCP.HandleMCP(rctx, req)
	for _, kv := range resp.Header {
		if strings.EqualFold(kv[0], "Content-Type") {
			ctx.SetContentType(kv[1])
			continue
		}
		ctx.Response.Header.Add(kv[0], kv[1])
	}
	if unavailable {
		ctx.Response.Header.Set("Retry-After", "1")
	}
	ctx.SetStatusCode(resp.Status)
	ctx.SetBody(resp.Body) // copies
	if resp.Release != nil {
		resp.Release()
	}
}

func (s *ToolServer) health(rctx context.Context, ctx *fasthttp.RequestCtx) {
	hctx, cancel := context.WithTimeout(rctx, 2*time.Second)
	defer cancel()
	failing := map[string]string{}
	for name, check := range s.svc.Health {
		if err := check(hctx); err != nil {
			// The endpoint takes no key: the error goes to the log, not to the caller.
			s.log.Warn("health check failed", "check", name, "err", err)
			failing[name] = "unavailable"
		}
	}
	if len(failing) == 0 {
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetContentType("application/json")
		ctx.SetBody(healthBody)
		return
	}
	_ = writeJSON(ctx, fasthttp.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failing": failing})
}

func writeJSON(ctx *fasthttp.RequestCtx, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
	return nil
}

func (s *ToolServer) home(ctx *fasthttp.RequestCtx) {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Supplyplan tool service</title>
<style>body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
code{background:#f3f3f3;padding:0 .25rem}li{margin:.5rem 0}</style></head><body>
<h1>Supplyplan hosted commerce tools</h1>
<p>This service hosts the MCP tools of the merchants of this Supplyplan installation: catalog search, stock
availability per location, order status and planning tools, each gated by the merchant's capabilities.</p>
<p>List a merchant's tools with <code>GET /tools/list?org=&lt;slug&gt;</code>, call one with
<code>POST /tools/call</code> <code>{"org","name","arguments"}</code>, or connect an MCP client to
<code>/mcp?org=&lt;slug&gt;</code>. Send the merchant's tool key as <code>Authorization: Bearer &lt;key&gt;</code> or
<code>x-api-key: &lt;key&gt;</code>; without a key a listed merchant's public tools are available.</p>
<h2>Listed merchants</h2><ul>`)
	merchants := s.svc.Merchants.ListedMerchants()
	for _, m := range merchants {
		slug := url.QueryEscape(m.Org.Slug)
		fmt.Fprintf(&b, `<li><strong>%s</strong> (<code>%s</code>): %s<br><a href="/tools/list?org=%s">tool list</a> · MCP: <code>/mcp?org=%s</code></li>`,
			html.EscapeString(m.Profile.DisplayName), html.EscapeString(m.Org.Slug), html.EscapeString(m.Profile.Description),
			html.EscapeString(slug), html.EscapeString(slug))
	}
	if len(merchants) == 0 {
		b.WriteString("<li>No merchant is listed yet.</li>")
	}
	b.WriteString(`</ul><p><a href="/health">health</a></p></body></html>`)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBodyString(b.String())
}

// route forwards a request of org to its owner when that is another node (errForwarded), or
// answers 503 while no node can serve it; nil: served here (always in the embedded mode). body is
// the request body already read (nil: none).
func (s *ToolServer) route(rctx context.Context, ctx *fasthttp.RequestCtx, org string, body []byte) error {
	if s.fwd == nil {
		return nil
	}
	deadline, _ := rctx.Deadline()
	return s.fwd.route(ctx, org, ctx.Request.Header.Peek(requestIDHeader), deadline, func() ([]byte, error) { return body, nil })
}
