package rpc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/supplyplan/supplyplan/rpc"
	"github.com/supplyplan/supplyplan/tools"
)

// FuzzHandleMCP: no body or protocol header makes the core panic, and every response body is JSON
// (or one SSE event around JSON).
func FuzzHandleMCP(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"search_merchants","arguments":{"query":"a","cursor":"bTE6ZGVtbw"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"dG9vbHM6MQ"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":-1,"result":{}}`, `[]`, `{`, `null`, `{"id":null}`,
	} {
		f.Add(seed, "")
		f.Add(seed, rpc.V20260728)
	}
	h := rpc.NewHandler(rpc.Config{Name: "fuzz", Version: "1", MaxBody: 1 << 16})
	registry := rpc.RegistryTools(rpc.Directory{Merchants: benchDirectory(5), ToolsURL: func() string { return "http://t" }})
	f.Fuzz(func(t *testing.T, body, version string) {
		hdr := http.Header{}
		hdr.Set("Content-Type", "application/json")
		hdr.Set("Mcp-Protocol-Version", version)
		if strings.Contains(body, "tools/call") {
			hdr.Set("Mcp-Method", "tools/call")
			hdr.Set("Mcp-Name", "search_merchants")
		}
		r := h.HandleMCP(context.Background(), tools.MCPRequest{Method: "POST", Header: hdr.Get, Body: []byte(body),
			Resolve: func(context.Context) (tools.Set, error) { return registry, nil }})
		if r.Status == 0 {
			t.Fatal("no status")
		}
		if len(r.Body) > 0 && !json.Valid(r.Body) {
			t.Fatalf("invalid JSON response %q for %q", r.Body, body)
		}
	})
}
