package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/actors"
	"github.com/supplyplan/supplyplan/internal/testdeps"
	"github.com/supplyplan/supplyplan/internal/tooltest"
	"github.com/supplyplan/supplyplan/streams"
)

// env is a running service started in-process on port 0.
type env struct {
	m        *Main
	creds    supplyplan.Credentials
	api      string
	registry string
	tools    string
	planning *tooltest.Planning
	hookURL  string        // a local webhook receiver
	hooks    chan hookCall // what it received
}

type hookCall struct {
	header http.Header
	body   []byte
}

// testFederationSecret signs federation events in these tests.
const testFederationSecret = "whsec_c3VwcGx5cGxhbi1mZWRlcmF0aW9uLXRlc3Qtc2VjcmV0"

// startMain runs Main on :0 with the fake catalog and planning backends (the data plane and the
// planning services are not on this branch yet).
func startMain(t *testing.T, dir string, mutate func(*Config)) *env {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = dir
	cfg.APIAddr, cfg.RegistryAddr, cfg.ToolsAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.LoopCatalogAddr, cfg.LoopRuntimeAddr, cfg.ConsoleAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.MCPPageSize = 4
	cfg.RedisAddr = ""
	cfg.ToolsPublicURL = ""
	cfg.WebhookAllowPriv, cfg.FederationSecret = true, testFederationSecret
	hooks := make(chan hookCall, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooks <- hookCall{header: r.Header.Clone(), body: b}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	if mutate != nil {
		mutate(&cfg)
	}
	var out bytes.Buffer
	m := NewMain(cfg, slog.New(slog.DiscardHandler), &out)
	planning := tooltest.NewPlanning()
	m.Catalog, m.Planning = tooltest.NewCatalog(), planning
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		_ = m.Close(context.Background())
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	for _, want := range []string{"listening api http://", "listening tools http://", "listening registry http://"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("ready lines %q lack %q", out.String(), want)
		}
	}
	creds, err := readCredentials(filepath.Join(dir, "credentials.json"))
	if err != nil {
		t.Fatal(err)
	}
	return &env{m: m, creds: creds, api: "http://" + m.API.Addr(), registry: "http://" + m.Registry.Addr(),
		tools: "http://" + m.Tools.Addr(), planning: planning, hookURL: receiver.URL + "/federation", hooks: hooks}
}

type hresp struct {
	status int
	header http.Header
	body   []byte
}

func (r hresp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return m
}

func call(t *testing.T, method, url string, headers map[string]string, body any) hresp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return hresp{r.StatusCode, r.Header, b}
}

func bearerH(key string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key}
}

func (e *env) platform(t *testing.T, method, path string, body any) hresp {
	t.Helper()
	return call(t, method, e.api+path, bearerH(e.creds.Keys["platform"]), body)
}

// newMerchant creates an organization with capabilities, a merchant profile and a tool key.
func (e *env) newMerchant(t *testing.T, slug string, caps []string, listed bool) (orgID, toolKey string) {
	t.Helper()
	r := e.platform(t, "POST", "/api/platform/organizations", map[string]any{"name": slug, "slug": slug, "capabilities": caps})
	if r.status != 201 {
		t.Fatalf("create org: %d %s", r.status, r.body)
	}
	orgID = r.json(t)["organization"].(map[string]any)["id"].(string)
	r = e.platform(t, "PUT", "/api/platform/organizations/"+orgID+"/merchant", map[string]any{"listed": listed, "displayName": strings.ToUpper(slug),
		"description": "Merchant " + slug, "categories": []string{"test"}, "region": "EU"})
	if r.status != 200 {
		t.Fatalf("merchant: %d %s", r.status, r.body)
	}
	r = e.platform(t, "POST", "/api/platform/organizations/"+orgID+"/tool-keys", map[string]any{"name": "ci"})
	if r.status != 201 {
		t.Fatalf("tool key: %d %s", r.status, r.body)
	}
	return orgID, r.json(t)["key"].(string)
}

type bearerRT struct{ key string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func sdkSession(t *testing.T, endpoint, key, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-it", Version: "1"}, nil)
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearerRT{key}}, MaxRetries: -1}, opts)
	if err != nil {
		t.Fatalf("connect %s (%q): %v", endpoint, version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// sdkCall calls a tool through the Go SDK and returns its structured content.
func sdkCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %+v", res.Content)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

var allTools = []string{"search_products", "get_product", "check_availability", "list_locations", "get_order_status",
	"get_demand_forecast", "list_transfer_recommendations", "explain_recommendation", "approve_transfer_recommendation"}

// TestNewcomerJourney is the "done when": find the demo merchant through the registry with
// the gateway key, list its tools, call check_availability on the tool service.
func TestNewcomerJourney(t *testing.T) {
	e := startMain(t, t.TempDir(), nil)
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version="+version, func(t *testing.T) {
			reg := sdkSession(t, e.registry+"/mcp", e.creds.Keys[supplyplan.CredGateway], version)
			found := sdkCall(t, reg, "search_merchants", map[string]any{"capability": "commerce.inventory"})
			merchants := found["merchants"].([]any)
			if len(merchants) != 1 || merchants[0].(map[string]any)["slug"] != "demo" {
				t.Fatalf("merchants = %v", merchants)
			}
			got := sdkCall(t, reg, "get_merchant", map[string]any{"slug": "demo"})
			mcpURL := got["connect"].(map[string]any)["mcpUrl"].(string)
			if mcpURL != e.tools+"/mcp?org=demo" {
				t.Fatalf("mcpUrl = %s, want %s", mcpURL, e.tools+"/mcp?org=demo")
			}
			listed := sdkCall(t, reg, "list_merchant_tools", map[string]any{"slug": "demo"})
			if n := len(listed["tools"].([]any)); n != len(allTools) {
				t.Fatalf("list_merchant_tools = %d tools", n)
			}

			tools := sdkSession(t, mcpURL, e.creds.Keys[supplyplan.CredDemoTool], version)
			var names []string
			for tool, err := range tools.Tools(context.Background(), nil) { // 9 tools in pages of 4
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
			}
			if !slices.Equal(names, allTools) {
				t.Fatalf("tools = %v", names)
			}
			av := sdkCall(t, tools, "check_availability", map[string]any{"productId": "TENT-2P"})
			if av["totalAvailable"] != 49.0 || av["totalAvailableToPromise"] != 55.0 {
				t.Fatalf("availability = %v", av)
			}
		})
	}
}

func TestToolServiceAuthMatrix(t *testing.T) {
	e := startMain(t, t.TempDir(), nil)
	_, acmeKey := e.newMerchant(t, "acme", []string{supplyplan.CapCatalog}, true)
	_, hiddenKey := e.newMerchant(t, "hidden", supplyplan.AllCapabilities, false)
	demoKey := e.creds.Keys[supplyplan.CredDemoTool]
	public := []string{"search_products", "get_product", "check_availability", "list_locations"}
	tests := []struct {
		name    string
		org     string
		headers map[string]string
		status  int
		tools   []string
		access  string
	}{
		{"demo key as bearer", "demo", bearerH(demoKey), 200, allTools, "key"},
		{"demo key as x-api-key", "demo", map[string]string{"x-api-key": demoKey}, 200, allTools, "key"},
		{"demo by organization id", e.creds.Organization.ID, bearerH(demoKey), 200, allTools, "key"},
		{"org key, capability filtered", "acme", bearerH(acmeKey), 200, []string{"search_products", "get_product"}, "key"},
		{"org key by x-api-key", "acme", map[string]string{"x-api-key": acmeKey}, 200, []string{"search_products", "get_product"}, "key"},
		{"another org's key", "acme", bearerH(demoKey), 403, nil, ""},
		{"demo key on an unlisted org", "hidden", bearerH(demoKey), 403, nil, ""},
		{"no key: public tools of a listed merchant", "demo", nil, 200, public, "public"},
		{"no key: public and capability filtered", "acme", nil, 200, []string{"search_products", "get_product"}, "public"},
		{"no key on an unlisted org", "hidden", nil, 401, nil, ""},
		{"unlisted org with its key", "hidden", bearerH(hiddenKey), 200, allTools, "key"},
		{"unknown key", "demo", bearerH("sp_tool_nope"), 401, nil, ""},
		{"malformed authorization", "demo", map[string]string{"Authorization": "Basic abc"}, 401, nil, ""},
		{"a REST API key is not a tool key", "demo", bearerH(e.creds.Keys["ADMIN"]), 401, nil, ""},
		{"unknown org", "nope", bearerH(demoKey), 404, nil, ""},
		{"missing org", "", bearerH(demoKey), 400, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, "GET", e.tools+"/tools/list?org="+tt.org, tt.headers, nil)
			if r.status != tt.status {
				t.Fatalf("status = %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.status != 200 {
				if !strings.Contains(string(r.body), `"code"`) {
					t.Fatalf("error body = %s", r.body)
				}
				return
			}
			body := r.json(t)
			var names []string
			for _, x := range body["tools"].([]any) {
				names = append(names, x.(map[string]any)["name"].(string))
			}
			if !slices.Equal(names, tt.tools) || body["access"] != tt.access {
				t.Fatalf("tools = %v (%v), want %v (%s)", names, body["access"], tt.tools, tt.access)
			}
		})
	}

	// POST /tools/call follows the same rules.
	r := call(t, "POST", e.tools+"/tools/call", nil, map[string]any{"org": "demo", "name": "check_availability", "arguments": map[string]any{"productId": "BOOT-42"}})
	if r.status != 200 || !strings.Contains(string(r.body), `"totalAvailable":0`) {
		t.Fatalf("public call = %d %s", r.status, r.body)
	}
	if r := call(t, "POST", e.tools+"/tools/call", nil, map[string]any{"org": "demo", "name": "get_order_status", "arguments": map[string]any{"orderId": "SO-1001"}}); r.status != 404 {
		t.Fatalf("non-public tool without key = %d %s", r.status, r.body)
	}
	if r := call(t, "POST", e.tools+"/tools/call", bearerH(demoKey), map[string]any{"org": "demo", "name": "get_order_status", "arguments": map[string]any{"orderId": "SO-1001"}}); r.status != 200 || !strings.Contains(string(r.body), `"status":"SHIPPED"`) {
		t.Fatalf("order status = %d %s", r.status, r.body)
	}
	if r := call(t, "POST", e.tools+"/tools/call", bearerH(demoKey), map[string]any{"org": "acme", "name": "get_product", "arguments": map[string]any{"productId": "TENT-2P"}}); r.status != 403 {
		t.Fatalf("other org = %d %s", r.status, r.body)
	}
	if r := call(t, "POST", e.tools+"/tools/call", bearerH(demoKey), map[string]any{"org": "demo", "name": "get_product", "arguments": map[string]any{}}); r.status != 200 || !strings.Contains(string(r.body), `"isError":true`) {
		t.Fatalf("bad args = %d %s", r.status, r.body)
	}
	// MCP on the tool service: same rules.
	if r := call(t, "POST", e.tools+"/mcp?org=acme", bearerH(demoKey), map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}); r.status != 403 {
		t.Fatalf("mcp other org = %d %s", r.status, r.body)
	}
	if r := call(t, "POST", e.tools+"/mcp?org=hidden", nil, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}); r.status != 401 || r.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("mcp unlisted without key = %d %s", r.status, r.body)
	}
	if r := call(t, "POST", e.tools+"/mcp?org=nope", nil, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}); r.status != 404 {
		t.Fatalf("mcp unknown org = %d %s", r.status, r.body)
	}
	// A revoked tool key stops working at once.
	keys := e.platform(t, "GET", "/api/platform/organizations/"+e.creds.Organization.ID+"/tool-keys", nil).json(t)["toolKeys"].([]any)
	keyID := keys[0].(map[string]any)["id"].(string)
	if r := e.platform(t, "DELETE", "/api/platform/organizations/"+e.creds.Organization.ID+"/tool-keys/"+keyID, nil); r.status != 204 {
		t.Fatalf("revoke = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", e.tools+"/tools/list?org=demo", bearerH(demoKey), nil); r.status != 401 {
		t.Fatalf("revoked key = %d", r.status)
	}
}

func TestToolServicePagesAndConfirmation(t *testing.T) {
	e := startMain(t, t.TempDir(), nil)
	key := e.creds.Keys[supplyplan.CredDemoTool]
	if r := call(t, "GET", e.tools+"/", nil, nil); r.status != 200 || !strings.Contains(string(r.body), "Demo Outfitters") ||
		!strings.Contains(string(r.body), `/tools/list?org=demo`) {
		t.Fatalf("home = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", e.tools+"/health", nil, nil); r.status != 200 || string(r.body) != `{"status":"ok"}` {
		t.Fatalf("health = %d %s", r.status, r.body)
	}
	if r := call(t, "DELETE", e.tools+"/tools/list?org=demo", nil, nil); r.status != 405 {
		t.Fatalf("DELETE /tools/list = %d", r.status)
	}

	toolCall := func(args map[string]any) map[string]any {
		r := call(t, "POST", e.tools+"/tools/call", bearerH(key), map[string]any{"org": "demo", "name": "approve_transfer_recommendation", "arguments": args})
		if r.status != 200 {
			t.Fatalf("call = %d %s", r.status, r.body)
		}
		return r.json(t)
	}
	first := toolCall(map[string]any{"recommendationId": "REC-1"})
	sc := first["structuredContent"].(map[string]any)
	token := sc["confirmationToken"].(string)
	if sc["status"] != "confirmation_required" || e.planning.Approvals != 0 {
		t.Fatalf("first = %v", first)
	}
	if res := toolCall(map[string]any{"recommendationId": "REC-2", "confirmationToken": token}); res["isError"] != true {
		t.Fatalf("wrong args accepted: %v", res)
	}
	second := toolCall(map[string]any{"recommendationId": "REC-1", "confirmationToken": token})
	if second["structuredContent"].(map[string]any)["status"] != "approved" || e.planning.Approvals != 1 {
		t.Fatalf("second = %v", second)
	}
	if res := toolCall(map[string]any{"recommendationId": "REC-1", "confirmationToken": token}); res["isError"] != true ||
		!strings.Contains(res["content"].([]any)[0].(map[string]any)["text"].(string), "already used") {
		t.Fatalf("reuse accepted: %v", res)
	}
	audits, err := e.m.System.MCP.ListToolAudits(context.Background(), e.creds.Organization.ID)
	if err != nil || len(audits) != 1 || audits[0].Status != supplyplan.AuditSucceeded || audits[0].Tool != "approve_transfer_recommendation" {
		t.Fatalf("audits = %+v %v", audits, err)
	}
}

func TestPlatformMCPEndpoints(t *testing.T) {
	e := startMain(t, t.TempDir(), nil)
	orgID := e.creds.Organization.ID
	// Validation.
	for _, body := range []map[string]any{
		{"displayName": "x"},
		{"listed": true, "displayName": "x", "website": "javascript:alert(1)"},
		{"listed": true, "displayName": "x", "categories": "outdoor"},
	} {
		if r := e.platform(t, "PUT", "/api/platform/organizations/"+orgID+"/merchant", body); r.status != 400 {
			t.Errorf("%v: %d %s", body, r.status, r.body)
		}
	}
	if r := call(t, "PUT", e.api+"/api/platform/organizations/"+orgID+"/merchant", bearerH(e.creds.Keys["ADMIN"]), map[string]any{"listed": true, "displayName": "x"}); r.status != 403 {
		t.Fatalf("tenant key = %d", r.status)
	}
	// A change with a webhook URL is delivered as a signed merchant.updated event (the outbound
	// webhook machinery; Standard Webhooks signature with the federation secret).
	r := e.platform(t, "PUT", "/api/platform/organizations/"+orgID+"/merchant", map[string]any{"listed": true, "displayName": "Demo Outfitters",
		"description": "Outdoor gear", "categories": []string{"outdoor"}, "region": "EU", "website": "https://demo.example.com",
		"webhookUrl": e.hookURL})
	if r.status != 200 {
		t.Fatalf("set merchant = %d %s", r.status, r.body)
	}
	var got hookCall
	select {
	case got = <-e.hooks:
	case <-time.After(20 * time.Second):
		t.Fatal("no merchant.updated delivery")
	}
	if !strings.Contains(string(got.body), `"type":"merchant.updated"`) || !strings.Contains(string(got.body), `"slug":"demo"`) {
		t.Fatalf("delivery body = %s", got.body)
	}
	ts, _ := strconv.ParseInt(got.header.Get("webhook-timestamp"), 10, 64)
	want, err := supplyplan.SignWebhook([]string{testFederationSecret}, got.header.Get("webhook-id"), time.Unix(ts, 0), got.body)
	if err != nil || got.header.Get("webhook-signature") != want {
		t.Fatalf("signature %q, want %q (%v)", got.header.Get("webhook-signature"), want, err)
	}
	// The same profile again: nothing changes, nothing is sent.
	r = e.platform(t, "PUT", "/api/platform/organizations/"+orgID+"/merchant", map[string]any{"listed": true, "displayName": "Demo Outfitters",
		"description": "Outdoor gear", "categories": []string{"outdoor"}, "region": "EU", "website": "https://demo.example.com",
		"webhookUrl": e.hookURL})
	if r.status != 200 {
		t.Fatalf("same merchant = %d %s", r.status, r.body)
	}
	select {
	case extra := <-e.hooks:
		t.Fatalf("unexpected delivery %s", extra.body)
	case <-time.After(500 * time.Millisecond):
	}
	// Unlisting removes the merchant from the registry.
	r = e.platform(t, "PUT", "/api/platform/organizations/"+orgID+"/merchant", map[string]any{"listed": false, "displayName": "Demo Outfitters"})
	if r.status != 200 {
		t.Fatalf("unlist = %d %s", r.status, r.body)
	}
	reg := sdkSession(t, e.registry+"/mcp", e.creds.Keys[supplyplan.CredGateway], "2025-11-25")
	if got := sdkCall(t, reg, "search_merchants", nil); got["count"] != 0.0 {
		t.Fatalf("unlisted merchant found: %v", got)
	}
	// Gateway keys: create (shown once), list (no secret), revoke.
	r = e.platform(t, "POST", "/api/platform/gateway-keys", map[string]any{"name": "agent"})
	if r.status != 201 {
		t.Fatalf("create gateway key = %d %s", r.status, r.body)
	}
	created := r.json(t)
	secret := created["key"].(string)
	id := created["gatewayKey"].(map[string]any)["id"].(string)
	list := e.platform(t, "GET", "/api/platform/gateway-keys", nil)
	if !strings.Contains(string(list.body), id) || strings.Contains(string(list.body), secret) || strings.Contains(string(list.body), "hash") {
		t.Fatalf("list = %s", list.body)
	}
	ping := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}
	if r := call(t, "POST", e.registry+"/mcp", bearerH(secret), ping); r.status != 200 {
		t.Fatalf("new key = %d %s", r.status, r.body)
	}
	if r := e.platform(t, "DELETE", "/api/platform/gateway-keys/"+id, nil); r.status != 204 {
		t.Fatalf("revoke = %d %s", r.status, r.body)
	}
	if r := call(t, "POST", e.registry+"/mcp", bearerH(secret), ping); r.status != 401 {
		t.Fatalf("revoked key = %d", r.status)
	}
	if r := e.platform(t, "DELETE", "/api/platform/gateway-keys/key_nope", nil); r.status != 404 {
		t.Fatalf("revoke unknown = %d", r.status)
	}
}

// TestOldDataDirGetsDemoMerchant starts the service on a data dir written before the MCP surfaces
// existed: the demo organization gains a merchant profile, capabilities and a demo tool key, and
// its old keys keep working.
func TestOldDataDirGetsDemoMerchant(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	j, err := streams.OpenJournal(streams.JournalConfig{Dir: filepath.Join(dir, "journal")})
	if err != nil {
		t.Fatal(err)
	}
	core := actors.NewCore(actors.Config{Journal: j})
	if err := core.Open(ctx); err != nil {
		t.Fatal(err)
	}
	platform := actors.NewPlatform(core, nil)
	name, slug, admin := "Demo", supplyplan.DemoSlug, "ADMIN"
	org, err := platform.CreateOrganization(ctx, supplyplan.OrganizationInput{Name: &name, Slug: &slug})
	if err != nil {
		t.Fatal(err)
	}
	_, adminSecret, err := platform.CreateAPIKey(ctx, org.ID, supplyplan.APIKeyInput{Role: &admin})
	if err != nil {
		t.Fatal(err)
	}
	_ = core.Close(ctx)
	_ = j.Close()
	old := supplyplan.Credentials{Keys: map[string]string{"ADMIN": adminSecret}}
	old.Organization.ID, old.Organization.Slug = org.ID, slug
	if err := writeCredentials(filepath.Join(dir, "credentials.json"), old); err != nil {
		t.Fatal(err)
	}

	e := startMain(t, dir, nil)
	if e.creds.Keys["ADMIN"] != adminSecret || e.creds.Keys[supplyplan.CredDemoTool] == "" || e.creds.Keys[supplyplan.CredGateway] == "" {
		t.Fatalf("credentials = %v", e.creds.Keys)
	}
	if r := call(t, "GET", e.tools+"/tools/list?org=demo", bearerH(e.creds.Keys[supplyplan.CredDemoTool]), nil); r.status != 200 ||
		len(r.json(t)["tools"].([]any)) != len(allTools) {
		t.Fatalf("tools = %d %s", r.status, r.body)
	}
	if p, ok := e.m.System.MCP.MerchantProfile(org.ID); !ok || !p.Listed {
		t.Fatal("no listed demo merchant")
	}
	if _, ok := e.m.System.Platform.Authenticate(adminSecret); !ok {
		t.Fatal("the old ADMIN key stopped working")
	}
}

func TestDistributedGatewayKeysInRedis(t *testing.T) {
	addr := testdeps.Redis(t)
	prefix := "sptest:" + supplyplan.NewID("it") + ":"
	e := startMain(t, t.TempDir(), func(c *Config) { c.RedisAddr, c.RedisPrefix = addr, prefix })
	gw := e.creds.Keys[supplyplan.CredGateway]
	ping := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}
	if r := call(t, "POST", e.registry+"/mcp", bearerH(gw), ping); r.status != 200 {
		t.Fatalf("demo gateway key = %d %s", r.status, r.body)
	}
	// The key lives in Redis, not in the journal.
	if keys, _ := e.m.System.MCP.ListGatewayKeys(context.Background()); len(keys) != 0 {
		t.Fatalf("journal gateway keys = %v", keys)
	}
	keys, err := e.m.Redis.ListGatewayKeys(context.Background())
	if err != nil || len(keys) != 1 || keys[0].Name != "demo" {
		t.Fatalf("redis keys = %v %v", keys, err)
	}
	r := e.platform(t, "POST", "/api/platform/gateway-keys", map[string]any{"name": "agent"})
	if r.status != 201 {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	if r := call(t, "POST", e.registry+"/mcp", bearerH(r.json(t)["key"].(string)), ping); r.status != 200 {
		t.Fatalf("new key = %d", r.status)
	}
	if h := call(t, "GET", e.tools+"/health", nil, nil); h.status != 200 {
		t.Fatalf("health = %d %s", h.status, h.body)
	}
}

func TestHealthWithRedisDown(t *testing.T) {
	testdeps.Redis(t) // the same skip/fail rule: redis-server must be installed
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	// A private Redis that this test stops once the service is up (the service needs Redis to start).
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	redis := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := redis.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = redis.Process.Kill(); _ = redis.Wait() })
	eventually(t, 10*time.Second, func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})

	e := startMain(t, t.TempDir(), func(c *Config) { c.RedisAddr = addr })
	if r := call(t, "GET", e.tools+"/health", nil, nil); r.status != 200 {
		t.Fatalf("health with Redis up = %d %s", r.status, r.body)
	}
	_ = redis.Process.Kill()
	_ = redis.Wait()
	for _, url := range []string{e.tools + "/health", e.registry + "/health"} {
		r := call(t, "GET", url, nil, nil)
		if r.status != 503 || !strings.Contains(string(r.body), `"redis"`) || !strings.Contains(string(r.body), `"status":"unavailable"`) {
			t.Fatalf("%s = %d %s", url, r.status, r.body)
		}
	}
	r := call(t, "POST", e.registry+"/mcp", bearerH(e.creds.Keys[supplyplan.CredGateway]), map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"})
	if r.status != 503 {
		t.Fatalf("registry with Redis down = %d %s", r.status, r.body)
	}
	// The tool service does not need Redis to serve its tools.
	if r := call(t, "GET", e.tools+"/tools/list?org=demo", nil, nil); r.status != 200 {
		t.Fatalf("tools list = %d", r.status)
	}
}

// TestTypeScriptSDKClient runs the official TypeScript SDK client (scripts/mcp-client: client.mjs
// with @modelcontextprotocol/sdk bundled from the pinned npm package; node is installed by
// scripts/test-deps.sh) against both MCP endpoints.
func TestTypeScriptSDKClient(t *testing.T) {
	client, err := filepath.Abs("../../scripts/mcp-client/client.bundle.mjs")
	if err != nil {
		t.Fatal(err)
	}
	_, nodeErr := exec.LookPath("node")
	_, statErr := os.Stat(client)
	if nodeErr != nil || statErr != nil {
		testdeps.Missing(t, fmt.Sprintf("node or the MCP TypeScript client is missing: %v %v", nodeErr, statErr), "bash scripts/mcp-client.sh")
	}
	e := startMain(t, t.TempDir(), func(c *Config) { c.MCPPageSize = 2 })
	args, _ := json.Marshal(tooltest.Args)
	run := func(url, key string) map[string]any {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "node", client, url, key, string(args)).Output()
		var res map[string]any
		if jerr := json.Unmarshal(out, &res); jerr != nil || err != nil {
			t.Fatalf("node client on %s: %v %s", url, err, out)
		}
		return res
	}
	check := func(res map[string]any, wantTools []string, wantPages float64) {
		t.Helper()
		if res["protocolVersion"] != "2025-11-25" || res["toolPages"] != wantPages {
			t.Fatalf("client = %v", res)
		}
		var names []string
		for _, n := range res["tools"].([]any) {
			names = append(names, n.(string))
		}
		if !slices.Equal(names, wantTools) {
			t.Fatalf("tools = %v", names)
		}
		for name, r := range res["results"].(map[string]any) {
			r := r.(map[string]any)
			if r["isError"] != false || r["structuredContent"] == nil {
				t.Errorf("%s = %v", name, r)
			}
		}
	}
	check(run(e.registry+"/mcp", e.creds.Keys[supplyplan.CredGateway]), []string{"search_merchants", "get_merchant", "list_merchant_tools"}, 2)
	check(run(e.tools+"/mcp?org=demo", e.creds.Keys[supplyplan.CredDemoTool]), allTools, 5)
	check(run(e.tools+"/mcp?org=demo", "-"), []string{"search_products", "get_product", "check_availability", "list_locations"}, 2)

	// A wrong key fails with 401.
	out, err := exec.Command("node", client, e.registry+"/mcp", "nope").Output()
	if err == nil || !strings.Contains(string(out), `"code":401`) {
		t.Fatalf("wrong key: %v %s", err, out)
	}
}

// TestSingleSurfaces: `supplyplan registry`, `supplyplan tools` and `supplyplan loop-catalog` start
// only their server.
func TestSingleSurfaces(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Surfaces
		want string
	}{
		{"registry", Surfaces{Registry: true}, "listening registry http://"},
		{"tools", Surfaces{Tools: true}, "listening tools http://"},
		{"loop-catalog", Surfaces{LoopCatalog: true}, "listening loop-catalog http://"},
		{"loop-runtime", Surfaces{LoopRuntime: true}, "listening loop-runtime http://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DataDir, cfg.Surfaces = t.TempDir(), tc.s
			cfg.APIAddr, cfg.RegistryAddr, cfg.ToolsAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
			cfg.LoopCatalogAddr, cfg.LoopRuntimeAddr, cfg.ConsoleAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
			cfg.RedisAddr = ""
			var out bytes.Buffer
			m := NewMain(cfg, slog.New(slog.DiscardHandler), &out)
			if err := m.Open(t.Context()); err != nil {
				t.Fatal(err)
			}
			defer m.Close(context.Background())
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) || m.API != nil {
				t.Fatalf("ready lines = %q", out.String())
			}
			r := call(t, "GET", strings.TrimPrefix(lines[0], tc.want[:len(tc.want)-len("http://")])+"/health", nil, nil)
			if r.status != 200 {
				t.Fatalf("health = %d %s", r.status, r.body)
			}
		})
	}
	// The subcommands parse the same flags.
	var stderr bytes.Buffer
	if err := run([]string{"registry", "--help"}, io.Discard, &stderr); err == nil || !strings.Contains(stderr.String(), "-registry-addr") {
		t.Fatalf("registry --help: %v %s", err, stderr.String())
	}
}

// TestToolsOnRealTenantData imports a catalog, stock with reservations and an order through the
// import API, then reads them back through the tool service (no fakes): the issue's "real stock
// numbers".
func TestToolsOnRealTenantData(t *testing.T) {
	s := MustStart(t, "")
	if s.Main.Catalog == nil {
		t.Fatal("the actor system does not implement supplyplan.CatalogService")
	}
	price := 249.0
	if job := s.Import("catalog", map[string]any{"products": []map[string]any{
		{"externalId": "TENT-2P", "name": "Trail tent, 2 person", "sku": "T2P", "categoryId": "camping", "unitPrice": price},
		{"externalId": "BOOT-42", "name": "Hiking boot, size 42", "categoryId": "footwear"},
	}}); str(job, "status") != "COMPLETED" || str(job, "failedCount") != "0" {
		t.Fatalf("catalog import: %v", job)
	}
	if job := s.Import("inventory", map[string]any{"levels": []map[string]any{
		{"skuId": "TENT-2P", "locationId": "STORE-BERLIN", "locationName": "Berlin store", "quantityOnHand": 12, "quantityReserved": 3},
		{"skuId": "TENT-2P", "locationId": "WH-EAST", "locationName": "East warehouse", "quantityOnHand": 40},
	}}); str(job, "status") != "COMPLETED" || str(job, "failedCount") != "0" {
		t.Fatalf("inventory import: %v", job)
	}
	if job := s.Import("orders", map[string]any{"orders": []map[string]any{
		{"externalOrderId": "SO-1", "status": "SHIPPED", "lines": []map[string]any{{"skuId": "TENT-2P", "quantity": 1, "locationId": "WH-EAST"}}},
	}}); str(job, "status") != "COMPLETED" || str(job, "failedCount") != "0" {
		t.Fatalf("orders import: %v", job)
	}

	tools := sdkSession(t, "http://"+s.Main.Tools.Addr()+"/mcp?org=demo", s.Key(supplyplan.CredDemoTool), "")
	av := sdkCall(t, tools, "check_availability", map[string]any{"productId": "T2P"}) // by SKU
	locs := av["locations"].([]any)
	berlin := locs[0].(map[string]any)
	if av["totalAvailable"] != 49.0 || len(locs) != 2 || berlin["locationId"] != "STORE-BERLIN" ||
		berlin["quantityOnHand"] != 12.0 || berlin["quantityReserved"] != 3.0 || berlin["available"] != 9.0 {
		t.Fatalf("availability = %v", av)
	}
	found := sdkCall(t, tools, "search_products", map[string]any{"query": "tent"})
	if found["total"] != 1.0 || found["products"].([]any)[0].(map[string]any)["unitPrice"] != price {
		t.Fatalf("search = %v", found)
	}
	if got := sdkCall(t, tools, "list_locations", nil); got["total"] != 2.0 {
		t.Fatalf("locations = %v", got)
	}
	if got := sdkCall(t, tools, "get_order_status", map[string]any{"orderId": "SO-1"}); got["status"] != "SHIPPED" {
		t.Fatalf("order = %v", got)
	}
	// Every tool is wired to the real services.
	var names []string
	for tool, err := range tools.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, allTools) {
		t.Fatalf("tools = %v", names)
	}
}

// TestForecastToolOnRealData: get_demand_forecast on the forecast engine, over two years of
// imported weekly demand (the forecast tests' fixture).
func TestForecastToolOnRealData(t *testing.T) {
	s := MustStart(t, "")
	seedForecastData(t, s)
	tools := sdkSession(t, "http://"+s.Main.Tools.Addr()+"/mcp?org=demo", s.Key(supplyplan.CredDemoTool), "")
	one := sdkCall(t, tools, "get_demand_forecast", map[string]any{"productId": "Q", "locationId": "L1", "weeks": 4})
	weeks := one["weeks"].([]any)
	w0 := weeks[0].(map[string]any)
	if len(weeks) != 4 || one["model"] == "" || w0["forecast"].(float64) < 30 || w0["forecast"].(float64) > 50 || w0["lower"] == nil {
		t.Fatalf("Q@L1 = %v", one)
	}
	all := sdkCall(t, tools, "get_demand_forecast", map[string]any{"productId": "P", "weeks": 2})
	if f := all["weeks"].([]any)[0].(map[string]any)["forecast"].(float64); f < 170 || f > 240 { // L1 ~100 + L2 ~100
		t.Fatalf("P over all locations = %v", all)
	}
	if r := call(t, "POST", "http://"+s.Main.Tools.Addr()+"/tools/call", bearerH(s.Key(supplyplan.CredDemoTool)),
		map[string]any{"org": "demo", "name": "get_demand_forecast", "arguments": map[string]any{"productId": "NOPE"}}); !strings.Contains(string(r.body), `"isError":true`) {
		t.Fatalf("unknown product = %d %s", r.status, r.body)
	}
}

// TestTransferToolsOnRealRecommendations generates a transfer recommendation from imported stock
// and approves it through the tool service's two-step confirmation (no fakes).
func TestTransferToolsOnRealRecommendations(t *testing.T) {
	s := MustStart(t, "")
	if job := s.Import("catalog", map[string]any{"products": []map[string]any{{"externalId": "TENT-2P", "name": "Trail tent"}}}); str(job, "failedCount") != "0" {
		t.Fatalf("catalog: %v", job)
	}
	if job := s.Import("inventory", map[string]any{"levels": []map[string]any{
		{"skuId": "TENT-2P", "locationId": "STORE", "quantityOnHand": 1, "reorderPoint": 10},
		{"skuId": "TENT-2P", "locationId": "WH", "quantityOnHand": 60, "reorderPoint": 5},
	}}); str(job, "failedCount") != "0" {
		t.Fatalf("inventory: %v", job)
	}
	gen := s.Do("POST", "/api/transfers/recommendations", s.Key("ADMIN"), map[string]any{}).Must(t, 200)
	recs := list(gen, "recommendations")
	if len(recs) == 0 {
		t.Fatalf("the recommendation engine proposed nothing for a store below its reorder point next to a stocked warehouse: %v", gen)
	}
	id := recs[0].(map[string]any)["id"].(string)

	tools := sdkSession(t, "http://"+s.Main.Tools.Addr()+"/mcp?org=demo", s.Key(supplyplan.CredDemoTool), "2025-11-25")
	listed := sdkCall(t, tools, "list_transfer_recommendations", nil)
	if got := listed["recommendations"].([]any); len(got) == 0 || got[0].(map[string]any)["id"] != id {
		t.Fatalf("list = %v", listed)
	}
	ex := sdkCall(t, tools, "explain_recommendation", map[string]any{"recommendationId": id})
	if len(ex["factors"].([]any)) == 0 || ex["explanation"] == "" {
		t.Fatalf("explain = %v", ex)
	}
	first := sdkCall(t, tools, "approve_transfer_recommendation", map[string]any{"recommendationId": id})
	second := sdkCall(t, tools, "approve_transfer_recommendation", map[string]any{"recommendationId": id, "confirmationToken": first["confirmationToken"]})
	if second["status"] != "approved" {
		t.Fatalf("approve = %v", second)
	}
	got := s.Do("GET", "/api/transfers/recommendations/"+id, s.Key("ADMIN"), nil).Must(t, 200)
	if !strings.Contains(fmt.Sprint(got), "APPROVED") || !strings.Contains(fmt.Sprint(got), "apikey:") {
		t.Fatalf("recommendation after approval = %v", got)
	}
	audits, err := s.Main.System.MCP.ListToolAudits(context.Background(), s.Creds.Organization.ID)
	if err != nil || len(audits) != 1 || audits[0].Status != supplyplan.AuditSucceeded {
		t.Fatalf("audits = %+v %v", audits, err)
	}
}
