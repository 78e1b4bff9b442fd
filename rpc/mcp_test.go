package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/tooltest"
	"github.com/supplyplan/supplyplan/internal/wait"
	"github.com/supplyplan/supplyplan/rpc"
	"github.com/supplyplan/supplyplan/tools"
)

// keyStore is a GatewayKeyStore with one key; down makes it fail like an unreachable Redis.
type keyStore struct {
	secret string
	down   bool
}

func (k *keyStore) CreateGatewayKey(context.Context, supplyplan.KeyNameInput) (supplyplan.APIKey, string, error) {
	return supplyplan.APIKey{}, "", errors.New("not used")
}
func (k *keyStore) ListGatewayKeys(context.Context) ([]supplyplan.APIKey, error) { return nil, nil }
func (k *keyStore) RevokeGatewayKey(context.Context, string) error               { return nil }
func (k *keyStore) AuthenticateGateway(_ context.Context, s string) (supplyplan.APIKey, bool, error) {
	if k.down {
		return supplyplan.APIKey{}, false, errors.New("dial tcp: connection refused")
	}
	return supplyplan.APIKey{ID: "key_1"}, s == k.secret, nil
}

type directory []supplyplan.Merchant

func (d directory) ListedMerchants() []supplyplan.Merchant { return d }

const testKey = "sp_mcp_test"

func newRegistry(t testing.TB, pageSize int) (*httptest.Server, *keyStore) {
	t.Helper()
	keys := &keyStore{secret: testKey}
	dir := directory{
		{Org: supplyplan.Organization{ID: "org_demo", Slug: "demo", Name: "Demo", Capabilities: supplyplan.AllCapabilities},
			Profile: supplyplan.MerchantProfile{Listed: true, DisplayName: "Demo Outfitters", Description: "Outdoor gear", Categories: []string{"outdoor"}, Region: "EU"}},
		{Org: supplyplan.Organization{ID: "org_kiosk", Slug: "kiosk", Name: "Kiosk", Capabilities: []string{supplyplan.CapCatalog}},
			Profile: supplyplan.MerchantProfile{Listed: true, DisplayName: "Corner Kiosk", Categories: []string{"food"}, Region: "US"}},
	}
	deps := &tools.Deps{Catalog: tooltest.NewCatalog()}
	srv := rpc.NewRegistryServer(rpc.RegistryConfig{MCP: rpc.Config{Name: "test-registry", Version: "1", PageSize: pageSize, MaxBody: 4096,
		AllowedOrigins: []string{"https://console.example.com"}}},
		keys, rpc.Directory{Merchants: dir, ToolDeps: deps, ToolsURL: func() string { return "http://tools.test" }},
		map[string]func(context.Context) error{"keys": func(context.Context) error {
			if keys.down {
				return errors.New("down")
			}
			return nil
		}})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts, keys
}

type reply struct {
	status int
	header http.Header
	body   string
	json   map[string]any
}

func do(t *testing.T, url, method string, headers map[string]string, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testKey)
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
	_ = json.Unmarshal(b, &r.json)
	return r
}

func errCode(r reply) float64 {
	e, _ := r.json["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func modern(method, name string) map[string]string {
	h := map[string]string{"Mcp-Protocol-Version": rpc.V20260728, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func TestTransportEdgeCases(t *testing.T) {
	ts, _ := newRegistry(t, 2)
	url := ts.URL + "/mcp"
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	tests := []struct {
		name    string
		method  string
		headers map[string]string
		body    string
		status  int
		code    float64 // JSON-RPC error code, 0 for none
		check   func(t *testing.T, r reply)
	}{
		{name: "no key", method: "POST", headers: map[string]string{"Authorization": ""}, body: init, status: 401, code: -32000,
			check: func(t *testing.T, r reply) {
				if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="mcp"` {
					t.Errorf("WWW-Authenticate = %q", got)
				}
				if r.json["id"] != nil {
					t.Errorf("id = %v, want null", r.json["id"])
				}
			}},
		{name: "wrong key", method: "POST", headers: map[string]string{"Authorization": "Bearer nope"}, body: init, status: 401, code: -32000,
			check: func(t *testing.T, r reply) {
				if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="mcp", error="invalid_token"` {
					t.Errorf("WWW-Authenticate = %q", got)
				}
			}},
		{name: "GET without key is 401, not 405", method: "GET", headers: map[string]string{"Authorization": ""}, status: 401, code: -32000},
		{name: "foreign origin", method: "POST", headers: map[string]string{"Origin": "https://evil.example"}, body: init, status: 403, code: -32000},
		{name: "allowed origin", method: "POST", headers: map[string]string{"Origin": "https://console.example.com"}, body: init, status: 200,
			check: func(t *testing.T, r reply) {
				if r.header.Get("Access-Control-Allow-Origin") != "https://console.example.com" {
					t.Errorf("CORS headers = %v", r.header)
				}
			}},
		{name: "loopback origin", method: "POST", headers: map[string]string{"Origin": "http://localhost:6274"}, body: init, status: 200},
		{name: "preflight", method: "OPTIONS", headers: map[string]string{"Origin": "http://127.0.0.1:6274", "Authorization": ""}, status: 204,
			check: func(t *testing.T, r reply) {
				if !strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Mcp-Protocol-Version") {
					t.Errorf("allow headers = %q", r.header.Get("Access-Control-Allow-Headers"))
				}
			}},
		{name: "GET", method: "GET", headers: map[string]string{"Accept": "text/event-stream"}, status: 405, code: -32000,
			check: func(t *testing.T, r reply) {
				if r.header.Get("Allow") != "POST, OPTIONS" {
					t.Errorf("Allow = %q", r.header.Get("Allow"))
				}
			}},
		{name: "DELETE", method: "DELETE", headers: map[string]string{"Mcp-Session-Id": "abc"}, status: 405, code: -32000},
		{name: "GET modern", method: "GET", headers: map[string]string{"Mcp-Protocol-Version": rpc.V20260728}, status: 405, code: -32000},
		{name: "PUT", method: "PUT", body: init, status: 405, code: -32000},
		{name: "wrong content type", method: "POST", headers: map[string]string{"Content-Type": "text/plain"}, body: init, status: 415, code: -32000},
		{name: "not acceptable", method: "POST", headers: map[string]string{"Accept": "text/html"}, body: init, status: 406, code: -32000},
		{name: "SSE when the client accepts only SSE", method: "POST", headers: map[string]string{"Accept": "text/event-stream"}, body: init, status: 200,
			check: func(t *testing.T, r reply) {
				if r.header.Get("Content-Type") != "text/event-stream" || !strings.HasPrefix(r.body, "event: message\ndata: {") || !strings.HasSuffix(r.body, "}\n\n") {
					t.Errorf("SSE = %q %q", r.header.Get("Content-Type"), r.body)
				}
			}},
		{name: "too large", method: "POST", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 5000) + `"}}`, status: 413, code: -32000},
		{name: "malformed JSON", method: "POST", body: `{"jsonrpc":"2.0",`, status: 400, code: -32700},
		{name: "empty body", method: "POST", body: ``, status: 400, code: -32700},
		{name: "not an object", method: "POST", body: `"ping"`, status: 400, code: -32600},
		{name: "missing jsonrpc", method: "POST", body: `{"id":1,"method":"ping"}`, status: 400, code: -32600},
		{name: "null id", method: "POST", body: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, status: 400, code: -32600},
		{name: "fractional id", method: "POST", body: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, status: 400, code: -32600},
		{name: "params not an object", method: "POST", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}`, status: 400, code: -32602},
		{name: "batch in 2025-06-18", method: "POST", headers: map[string]string{"Mcp-Protocol-Version": rpc.V20250618}, body: `[` + list + `]`, status: 400, code: -32600},
		{name: "batch in 2025-03-26", method: "POST", body: `[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},` + list + `]`, status: 200,
			check: func(t *testing.T, r reply) {
				var arr []map[string]any
				if err := json.Unmarshal([]byte(r.body), &arr); err != nil || len(arr) != 2 || arr[0]["id"] != "a" || arr[1]["id"] != float64(2) {
					t.Errorf("batch response = %s", r.body)
				}
			}},
		{name: "batch of notifications", method: "POST", body: `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, status: 202},
		{name: "empty batch", method: "POST", body: `[]`, status: 400, code: -32600},
		{name: "notification", method: "POST", headers: map[string]string{"Mcp-Protocol-Version": rpc.V20251125}, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, status: 202,
			check: func(t *testing.T, r reply) {
				if r.body != "" {
					t.Errorf("body = %q", r.body)
				}
			}},
		{name: "client response", method: "POST", body: `{"jsonrpc":"2.0","id":7,"result":{}}`, status: 202},
		{name: "unsupported protocol version", method: "POST", headers: map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, body: list, status: 400, code: -32022,
			check: func(t *testing.T, r reply) {
				if !strings.Contains(r.body, `"requested":"1999-01-01"`) || !strings.Contains(r.body, `"supported":["2026-07-28"`) {
					t.Errorf("body = %s", r.body)
				}
			}},
		{name: "unknown method", method: "POST", body: `{"jsonrpc":"2.0","id":3,"method":"resources/list"}`, status: 200, code: -32601},
		{name: "tools/call without name", method: "POST", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}`, status: 200, code: -32602},
		{name: "tools/call with array arguments", method: "POST", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_merchant","arguments":[1]}}`, status: 200, code: -32602},
		{name: "unknown tool", method: "POST", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`, status: 200, code: -32602},
		{name: "bad cursor", method: "POST", body: `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"zzz"}}`, status: 200, code: -32602},
		{name: "initialize without version", method: "POST", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, status: 200, code: -32602},
		{name: "tool argument error is a result", method: "POST", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_merchant","arguments":{}}}`, status: 200,
			check: func(t *testing.T, r reply) {
				res, _ := r.json["result"].(map[string]any)
				if res["isError"] != true || !strings.Contains(r.body, "slug: is required") {
					t.Errorf("body = %s", r.body)
				}
			}},
		{name: "negative id echoed", method: "POST", body: `{"jsonrpc":"2.0","id":-5,"method":"ping"}`, status: 200,
			check: func(t *testing.T, r reply) {
				if r.body != `{"jsonrpc":"2.0","id":-5,"result":{}}` {
					t.Errorf("body = %s", r.body)
				}
			}},
		{name: "string id echoed byte for byte", method: "POST", body: `{"jsonrpc":"2.0","id":"a\u0041<","method":"ping"}`, status: 200,
			check: func(t *testing.T, r reply) {
				if !strings.HasPrefix(r.body, `{"jsonrpc":"2.0","id":"a\u0041<",`) {
					t.Errorf("body = %s", r.body)
				}
			}},
		{name: "version negotiation echoes a supported version", method: "POST", body: strings.Replace(init, "2025-11-25", "2025-06-18", 1), status: 200,
			check: func(t *testing.T, r reply) {
				if !strings.Contains(r.body, `"protocolVersion":"2025-06-18"`) {
					t.Errorf("body = %s", r.body)
				}
			}},
		{name: "version negotiation answers the latest otherwise", method: "POST", body: strings.Replace(init, "2025-11-25", "2024-01-01", 1), status: 200,
			check: func(t *testing.T, r reply) {
				if !strings.Contains(r.body, `"protocolVersion":"2025-11-25"`) || strings.Contains(r.body, "Mcp-Session-Id") {
					t.Errorf("body = %s", r.body)
				}
				if r.header.Get("Mcp-Session-Id") != "" {
					t.Error("a stateless server must not issue a session id")
				}
			}},
		{name: "legacy tools/list pages", method: "POST", body: list, status: 200,
			check: func(t *testing.T, r reply) {
				res := r.json["result"].(map[string]any)
				if len(res["tools"].([]any)) != 2 || res["nextCursor"] == nil || res["ttlMs"] != nil {
					t.Errorf("body = %s", r.body)
				}
			}},
		{name: "modern discover", method: "POST", headers: modern("server/discover", ""),
			body: `{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + modernMeta + `}}`, status: 200,
			check: func(t *testing.T, r reply) {
				res := r.json["result"].(map[string]any)
				if res["resultType"] != "complete" || res["cacheScope"] == nil || res["ttlMs"] == nil ||
					!strings.Contains(r.body, `"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"]`) ||
					!strings.Contains(r.body, `"io.modelcontextprotocol/serverInfo"`) {
					t.Errorf("body = %s", r.body)
				}
			}},
		{name: "modern tools/list", method: "POST", headers: modern("tools/list", ""),
			body: `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + modernMeta + `}}`, status: 200,
			check: func(t *testing.T, r reply) {
				res := r.json["result"].(map[string]any)
				if res["resultType"] != "complete" || res["ttlMs"] == nil || res["cacheScope"] != "private" {
					t.Errorf("body = %s", r.body)
				}
			}},
		{name: "modern tools/call with a base64 Mcp-Name", method: "POST", headers: modern("tools/call", "=?base64?Z2V0X21lcmNoYW50?="),
			body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_merchant","arguments":{"slug":"demo"},` + modernMeta + `}}`, status: 200,
			check: func(t *testing.T, r reply) {
				if !strings.Contains(r.body, `"resultType":"complete"`) || !strings.Contains(r.body, `"structuredContent"`) {
					t.Errorf("body = %s", r.body)
				}
			}},
		{name: "modern without Mcp-Method", method: "POST", headers: map[string]string{"Mcp-Protocol-Version": rpc.V20260728},
			body: `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + modernMeta + `}}`, status: 400, code: -32020},
		{name: "modern Mcp-Method mismatch", method: "POST", headers: modern("tools/call", ""),
			body: `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + modernMeta + `}}`, status: 400, code: -32020},
		{name: "modern Mcp-Name mismatch", method: "POST", headers: modern("tools/call", "search_merchants"),
			body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_merchant",` + modernMeta + `}}`, status: 400, code: -32020},
		{name: "modern _meta without header", method: "POST",
			body: `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + modernMeta + `}}`, status: 400, code: -32020},
		{name: "modern header without _meta", method: "POST", headers: modern("tools/list", ""),
			body: `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, status: 400, code: -32602},
		{name: "modern header and _meta disagree", method: "POST", headers: modern("tools/list", ""),
			body: `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}}}`, status: 400, code: -32022},
		{name: "modern initialize is unknown", method: "POST", headers: modern("initialize", ""),
			body: `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{` + modernMeta + `}}`, status: 404, code: -32601},
		{name: "modern ping is unknown", method: "POST", headers: modern("ping", ""),
			body: `{"jsonrpc":"2.0","id":4,"method":"ping","params":{` + modernMeta + `}}`, status: 404, code: -32601},
		{name: "server/discover in the legacy era", method: "POST", body: `{"jsonrpc":"2.0","id":4,"method":"server/discover"}`, status: 200, code: -32601},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, url, tt.method, tt.headers, tt.body)
			if r.status != tt.status {
				t.Fatalf("status = %d, want %d (body %s)", r.status, tt.status, r.body)
			}
			if tt.code != 0 && errCode(r) != tt.code {
				t.Fatalf("error code = %v, want %v (body %s)", errCode(r), tt.code, r.body)
			}
			if tt.code == 0 && r.json["error"] != nil {
				t.Fatalf("unexpected error %s", r.body)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func TestKeyStoreDown(t *testing.T) {
	ts, keys := newRegistry(t, 50)
	keys.down = true
	r := do(t, ts.URL+"/mcp", "POST", nil, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if r.status != 503 {
		t.Fatalf("status = %d %s", r.status, r.body)
	}
	h := do(t, ts.URL+"/health", "GET", nil, "")
	if h.status != 503 || !strings.Contains(h.body, `"keys"`) {
		t.Fatalf("health = %d %s", h.status, h.body)
	}
	keys.down = false
	if h := do(t, ts.URL+"/health", "GET", nil, ""); h.status != 200 || h.body != `{"status":"ok"}` {
		t.Fatalf("health = %d %s", h.status, h.body)
	}
	if r := do(t, ts.URL+"/.well-known/oauth-protected-resource", "GET", nil, ""); r.status != 404 {
		t.Fatalf("oauth metadata = %d", r.status)
	}
}

// bearer adds the gateway key to every request of the Go SDK client.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// connectSDK connects the official Go SDK client; version "" lets it probe (2026-07-28 first).
func connectSDK(t *testing.T, endpoint, key, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "0.0.1"}, nil)
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{key}}, MaxRetries: -1}, opts)
	if err != nil {
		t.Fatalf("connect (%q): %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// SDKToolNames lists every tool through the SDK's paginating iterator.
func sdkToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	return out
}

func TestGoSDKClient(t *testing.T) {
	ts, _ := newRegistry(t, 2)
	for _, version := range []string{"", rpc.V20251125, rpc.V20250618, rpc.V20250326} {
		t.Run("version="+version, func(t *testing.T) {
			cs := connectSDK(t, ts.URL+"/mcp", testKey, version)
			got := cs.InitializeResult().ProtocolVersion
			want := version
			if version == "" {
				want = rpc.V20260728 // the default client probes server/discover and stays modern
			}
			if got != want {
				t.Fatalf("protocol version = %q, want %q", got, want)
			}
			if names := sdkToolNames(t, cs); strings.Join(names, ",") != "search_merchants,get_merchant,list_merchant_tools" {
				t.Fatalf("tools = %v", names)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_merchants", Arguments: map[string]any{"limit": 1}})
			if err != nil || res.IsError {
				t.Fatalf("search_merchants = %+v, %v", res, err)
			}
			sc, _ := json.Marshal(res.StructuredContent)
			if !strings.Contains(string(sc), `"slug":"demo"`) || !strings.Contains(string(sc), `"nextCursor"`) {
				t.Fatalf("structured content = %s", sc)
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_merchant_tools", Arguments: map[string]any{"slug": "kiosk"}})
			if err != nil || res.IsError {
				t.Fatalf("list_merchant_tools = %+v, %v", res, err)
			}
			sc, _ = json.Marshal(res.StructuredContent)
			if !strings.Contains(string(sc), `"search_products"`) || strings.Contains(string(sc), `"check_availability"`) {
				t.Fatalf("kiosk tools = %s", sc)
			}
			if version != "" {
				if err := cs.Ping(context.Background(), nil); err != nil {
					t.Fatalf("ping: %v", err)
				}
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "0.0.1"}, nil)
		_, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{"nope"}}, MaxRetries: -1}, nil)
		if err == nil {
			t.Fatal("connected with a wrong key")
		}
	})
}

func TestConcurrentCallsLeaveNoGoroutines(t *testing.T) {
	ts, _ := newRegistry(t, 50)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_merchants","arguments":{}}}`
	do(t, ts.URL+"/mcp", "POST", nil, body) // warm up connections
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if r := do(t, ts.URL+"/mcp", "POST", nil, body); r.status != 200 {
					t.Errorf("status %d", r.status)
					return
				}
			}
		}()
	}
	wg.Wait()
	http.DefaultClient.CloseIdleConnections()
	wait.Eventually(t, 5*time.Second, func() error {
		if n := runtime.NumGoroutine(); n > before+2 {
			return fmt.Errorf("goroutines: before %d, after %d", before, n)
		}
		return nil
	})
}
