package rpc_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/rpc"
	"github.com/supplyplan/supplyplan/tools"
)

func benchDirectory(n int) directory {
	var d directory
	for i := range n {
		d = append(d, supplyplan.Merchant{Org: supplyplan.Organization{ID: fmt.Sprintf("org_%03d", i), Slug: fmt.Sprintf("m%03d", i),
			Capabilities: []string{supplyplan.CapCatalog, supplyplan.CapInventory}},
			Profile: supplyplan.MerchantProfile{Listed: true, DisplayName: fmt.Sprintf("Merchant %03d", i),
				Description: "Outdoor and bike gear", Categories: []string{"outdoor", "bikes"}}, SearchText: fmt.Sprintf("m%03d merchant %03d outdoor and bike gear outdoor bikes", i, i)})
	}
	return d
}

// BenchmarkHandleMCP measures the transport core in-process (no HTTP).
func BenchmarkHandleMCP(b *testing.B) {
	h := rpc.NewHandler(rpc.Config{Name: "bench", Version: "1"})
	registry := rpc.RegistryTools(rpc.Directory{Merchants: benchDirectory(50), ToolsURL: func() string { return "http://tools" }})
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Accept", "application/json, text/event-stream")
	hdr.Set("Mcp-Protocol-Version", rpc.V20251125)
	for _, bc := range []struct{ name, body string }{
		{"tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"search_merchants", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_merchants","arguments":{"query":"outdoor"}}}`},
		{"ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			req := tools.MCPRequest{Method: "POST", Header: hdr.Get, Body: []byte(bc.body),
				Resolve: func(context.Context) (tools.Set, error) { return registry, nil }}
			for b.Loop() {
				r := h.HandleMCP(context.Background(), req)
				if r.Status != 200 {
					b.Fatal(r.Status, string(r.Body))
				}
				if r.Release != nil {
					r.Release() // as the HTTP adapters do once the body is written
				}
			}
		})
	}
}
