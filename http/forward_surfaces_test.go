package http

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/jwtauth"
	"github.com/supplyplan/supplyplan/tools"
)

// recorded serves h on a real listener at addr and keeps the headers of every request.
type recorded struct {
	mu      sync.Mutex
	headers []map[string]string
}

func (rc *recorded) seen() []map[string]string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]map[string]string(nil), rc.headers...)
}

func mustServe(tb testing.TB, name, addr string, h fasthttp.RequestHandler) *recorded {
	tb.Helper()
	rc := &recorded{}
	l := newListener(name, addr, "supplyplan", nil, nil, func(ctx *fasthttp.RequestCtx) {
		m := map[string]string{}
		for k, v := range ctx.Request.Header.All() {
			m[string(k)] = string(v)
		}
		rc.mu.Lock()
		rc.headers = append(rc.headers, m)
		rc.mu.Unlock()
		h(ctx)
	})
	if err := l.Open(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close(context.Background()) })
	return rc
}

// nodeAddrs returns the REST API and one other surface's address of two nodes: the surfaces of a
// node share its host, and each surface has one port on every node (here two loopback hosts).
func nodeAddrs(tb testing.TB) (apiA, apiB, surfaceA, surfaceB string) {
	tb.Helper()
	port := strings.TrimPrefix(reserveAddr(tb), "127.0.0.1:")
	return "127.0.0.1:1", "127.0.0.2:1", "127.0.0.1:" + port, "127.0.0.2:" + port
}

// sharedJTI is the jti store of a JWT verifier shared by the nodes: a mutating call spends its jti once.
type sharedJTI struct {
	mu    sync.Mutex
	spent map[string]bool
}

func (j *sharedJTI) Authenticate(_ context.Context, bearer string, mutating bool) (jwtauth.Claims, error) {
	org, jti, ok := strings.Cut(bearer, "/")
	if !ok {
		return jwtauth.Claims{}, &jwtauth.Error{Status: 401, Code: "invalid_token", Description: "bad token"}
	}
	if mutating {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.spent[jti] {
			return jwtauth.Claims{}, &jwtauth.Error{Status: 401, Code: "invalid_token", Description: "token replayed"}
		}
		j.spent[jti] = true
	}
	return jwtauth.Claims{Org: org, ID: jti, Subject: "agent:x", Scopes: []string{jwtauth.ScopeAdmin}}, nil
}

type fakeRuntime struct {
	supplyplan.LoopRuntimeService
	mu      sync.Mutex
	started int
}

func (f *fakeRuntime) Organization(ref string) (supplyplan.Organization, bool) {
	return supplyplan.Organization{ID: ref}, ref == "org-1"
}

func (f *fakeRuntime) StartInstance(_ context.Context, c supplyplan.LoopRunCaller, in supplyplan.LoopStartInput) (supplyplan.LoopResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started++
	return supplyplan.LoopResult{Created: true, Instance: supplyplan.LoopInstance{ID: "li_" + in.BusinessKey, OrganizationID: c.OrgID, Loop: in.Loop}}, nil
}

// TestForwardLoopRuntimeSpendsTheTokenOnce: a forwarded mutating call is verified on the node that
// takes it without spending its jti; the owner spends it, so a replay of the token is refused.
func TestForwardLoopRuntimeSpendsTheTokenOnce(t *testing.T) {
	apiA, apiB, addrA, addrB := nodeAddrs(t)
	auth := &sharedJTI{spent: map[string]bool{}}
	rtA, rtB := &fakeRuntime{}, &fakeRuntime{}
	a := NewLoopRuntimeServer(LoopRuntimeConfig{Addr: addrA, NodeID: "node-a", Owners: &fakeOwners{self: apiA, owner: map[string]string{"org-1": apiB}}},
		LoopRuntimeServices{Auth: auth, Runtime: rtA})
	b := NewLoopRuntimeServer(LoopRuntimeConfig{Addr: addrB, NodeID: "node-b", Owners: &fakeOwners{self: apiB, owner: map[string]string{"org-1": apiB}}},
		LoopRuntimeServices{Auth: auth, Runtime: rtB})
	mustServe(t, "a", addrA, a.Handler())
	recB := mustServe(t, "b", addrB, b.Handler())
	h := map[string]string{"Authorization": "Bearer org-1/jti-1", "Content-Type": "application/json"}
	r := call(t, addrA, "POST", "/v1/instances", h, `{"loop":"acme/reorder","businessKey":"k1"}`)
	if r.status != 201 || !strings.Contains(r.body, `"id":"li_k1"`) || r.headers["Location"] != "/v1/instances/li_k1" {
		t.Fatalf("forwarded start: %d %s %v", r.status, r.body, r.headers)
	}
	if rtA.started != 0 || rtB.started != 1 {
		t.Fatalf("started on a %d, on b %d", rtA.started, rtB.started)
	}
	if got := recB.seen(); len(got) != 1 || got[0][ForwardedByHeader] != "node-a" {
		t.Fatalf("owner got %v", got)
	}
	// The same token again: the owner refuses the replay, whichever node takes it.
	for _, addr := range []string{addrA, addrB} {
		r = call(t, addr, "POST", "/v1/instances", h, `{"loop":"acme/reorder","businessKey":"k2"}`)
		if r.status != 401 || !strings.Contains(r.headers["Www-Authenticate"]+r.headers["WWW-Authenticate"], "invalid_token") {
			t.Fatalf("replay via %s: %d %s %v", addr, r.status, r.body, r.headers)
		}
	}
	if rtB.started != 1 {
		t.Fatalf("a replayed token started %d instances", rtB.started-1)
	}
}

type publicMerchants struct{}

func (publicMerchants) AuthenticateTool(string) (supplyplan.APIKey, bool) {
	return supplyplan.APIKey{}, false
}
func (publicMerchants) OrganizationByRef(ref string) (supplyplan.Organization, bool) {
	return supplyplan.Organization{ID: "org-1", Slug: "acme"}, ref == "acme"
}
func (publicMerchants) MerchantProfile(string) (supplyplan.MerchantProfile, bool) {
	return supplyplan.MerchantProfile{Listed: true}, true
}

// TestForwardToolService: the tool service forwards an organization's requests (REST and MCP) to
// the owner's tool service (the owner's host, the same port) and answers 503 in its own shapes.
func TestForwardToolService(t *testing.T) {
	apiA, apiB, addrA, addrB := nodeAddrs(t)
	owners := &fakeOwners{self: apiA, owner: map[string]string{"org-1": apiB}, restoring: map[string]bool{}}
	svc := ToolsServices{Keys: publicMerchants{}, Deps: &tools.Deps{}, MCP: mcpEcho{}}
	a := NewToolServer(ToolsConfig{Addr: addrA, NodeID: "node-a", Owners: owners}, svc)
	b := NewToolServer(ToolsConfig{Addr: addrB}, svc)
	mustServe(t, "a", addrA, a.Handler())
	recB := mustServe(t, "b", addrB, b.Handler())
	direct := call(t, addrB, "GET", "/tools/list?org=acme", nil, "")
	fwd := call(t, addrA, "GET", "/tools/list?org=acme", nil, "")
	if direct.status != 200 || !strings.Contains(direct.body, `"access":"public"`) {
		t.Fatalf("direct: %d %s", direct.status, direct.body)
	}
	sameAnswer(t, "tools/list", fwd, direct)
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	mh := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	direct = call(t, addrB, "POST", "/mcp?org=acme", mh, body)
	fwd = call(t, addrA, "POST", "/mcp?org=acme", mh, body)
	if direct.status != 200 || direct.body != "echo:"+body {
		t.Fatalf("direct mcp: %d %s", direct.status, direct.body)
	}
	sameAnswer(t, "mcp", fwd, direct)
	if got := recB.seen(); len(got) != 4 || got[1][ForwardedByHeader] != "node-a" || got[3][ForwardedByHeader] != "node-a" {
		t.Fatalf("owner's requests: %v", got)
	}
	owners.mu.Lock()
	owners.restoring["org-1"] = true
	owners.mu.Unlock()
	unavailable(t, "tools/list restoring", call(t, addrA, "GET", "/tools/list?org=acme", nil, ""))
	r := call(t, addrA, "POST", "/mcp?org=acme", mh, body)
	if r.status != 503 || r.headers["Retry-After"] != "1" || r.body != "unavailable" {
		t.Fatalf("mcp restoring: %d %s %v", r.status, r.body, r.headers)
	}
}

// mcpEcho answers the body it got (or its caller error, as the rpc handler would).
type mcpEcho struct{}

func (mcpEcho) HandleMCP(ctx context.Context, req tools.MCPRequest) tools.MCPResponse {
	if _, err := req.Resolve(ctx); err != nil {
		if supplyplan.ErrorCode(err) == supplyplan.EUNAVAILABLE {
			return tools.MCPResponse{Status: 503, Body: []byte("unavailable"), Header: [][2]string{{"Retry-After", "5"}}}
		}
		return tools.MCPResponse{Status: 500, Body: []byte(err.Error())}
	}
	return tools.MCPResponse{Status: 200, Body: []byte("echo:" + string(req.Body)), Header: [][2]string{{"Content-Type", "application/json"}}}
}

// TestForwardConsoleKeepsHostAndSession: two consoles sharing a session store; a POST on a node that
// does not own the organization is forwarded with its Host, cookie and CSRF token, and the owner's
// same-origin and CSRF checks pass.
func TestForwardConsoleKeepsHostAndSession(t *testing.T) {
	apiA, apiB, addrA, addrB := nodeAddrs(t)
	shared := NewMemorySessions()
	mk := func(addr, self string) *ConsoleServer {
		c, err := NewConsoleServer(ConsoleConfig{Addr: addr, NodeID: "node-" + addr[8:9], Sessions: shared,
			Owners: &fakeOwners{self: self, owner: map[string]string{"org-1": apiB}}}, Services{Auth: keyAuth{}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := mk(addrA, apiA), mk(addrB, apiB)
	mustServe(t, "a", addrA, a.Handler())
	recB := mustServe(t, "b", addrB, b.Handler())
	st := &sessionStore{store: shared, ttl: time.Hour, idle: time.Hour, now: time.Now}
	token, sess, err := st.create(context.Background(), testAdminKey)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"Cookie": sessionCookie + "=" + token, "Origin": "http://" + addrA,
		"Content-Type": "application/x-www-form-urlencoded"}
	r := call(t, addrA, "POST", "/logout", h, csrfField+"="+sess.CSRF)
	if r.status != 303 || !strings.HasPrefix(r.headers["Location"], "/login") {
		t.Fatalf("forwarded sign-out: %d %s %v", r.status, r.body, r.headers)
	}
	got := recB.seen()
	if len(got) != 1 || got[0][ForwardedByHeader] != "node-1" || got[0]["Host"] != addrA {
		t.Fatalf("owner's request: %v", got)
	}
	if n, _ := shared.SessionCount(context.Background()); n != 0 {
		t.Fatalf("%d sessions after sign-out on the owner", n)
	}
}

type countingLoops struct {
	supplyplan.LoopCatalogService
	mu    sync.Mutex
	calls int
}

func (c *countingLoops) ListLoops(_ context.Context, lc supplyplan.LoopCaller, f supplyplan.LoopFilter) (supplyplan.Page[supplyplan.LoopSummary], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return supplyplan.Page[supplyplan.LoopSummary]{Items: []supplyplan.LoopSummary{}, Total: 0, Limit: f.Limit, Offset: f.Offset}, nil
}

// TestForwardLoopCatalog: a tenant's catalog request goes to its owner's catalog; the platform key
// (the global scope) is served where it lands.
func TestForwardLoopCatalog(t *testing.T) {
	apiA, apiB, addrA, addrB := nodeAddrs(t)
	la, lb := &countingLoops{}, &countingLoops{}
	a := NewLoopCatalogServer(LoopCatalogConfig{Addr: addrA, NodeID: "node-a", Owners: &fakeOwners{self: apiA, owner: map[string]string{"org-1": apiB}}},
		LoopCatalogServices{Auth: keyAuth{}, Loops: la})
	b := NewLoopCatalogServer(LoopCatalogConfig{Addr: addrB}, LoopCatalogServices{Auth: keyAuth{}, Loops: lb})
	mustServe(t, "a", addrA, a.Handler())
	recB := mustServe(t, "b", addrB, b.Handler())
	h := map[string]string{"Authorization": "Bearer " + testAdminKey, "X-Request-Id": "cat-1"}
	direct := call(t, addrB, "GET", "/v1/loops?limit=5", h, "")
	fwd := call(t, addrA, "GET", "/v1/loops?limit=5", h, "")
	if direct.status != 200 || !strings.Contains(direct.body, `"limit":5`) {
		t.Fatalf("direct: %d %s", direct.status, direct.body)
	}
	sameAnswer(t, "catalog", fwd, direct)
	if la.calls != 0 || lb.calls != 2 || recB.seen()[1][ForwardedByHeader] != "node-a" {
		t.Fatalf("calls a %d, b %d; owner's headers %v", la.calls, lb.calls, recB.seen())
	}
	if r := call(t, addrA, "GET", "/v1/loops", map[string]string{"Authorization": "Bearer " + testPlatformKey}, ""); r.status != 200 || la.calls != 1 {
		t.Fatalf("platform caller: %d %s (a served %d)", r.status, r.body, la.calls)
	}
}
