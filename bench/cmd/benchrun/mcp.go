package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// benchMCP: the MCP registry discovery endpoint (POST /mcp, net/http + jsonrpc2) under concurrent
// load: tools/call search_merchants over 50 listed merchants and tools/list, each next to a bare
// fasthttp handler returning the same bytes. The tool service's own scenarios (with fake data
// backends) are in `go run ./bench/cmd/mcpbench`.
func benchMCP(_ context.Context, e *env) (section, error) {
	port := func() (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		defer ln.Close()
		return ln.Addr().String(), nil
	}
	regAddr, err := port()
	if err != nil {
		return section{}, err
	}
	svc, err := startService(e, "--registry-addr", regAddr)
	if err != nil {
		return section{}, err
	}
	defer svc.Stop()
	creds, err := readCreds(svc.Data)
	if err != nil {
		return section{}, err
	}
	platform := map[string]string{"Authorization": "Bearer " + creds.Keys["platform"]}
	for i := range 49 {
		status, body, err := call("POST", svc.URL+"/api/platform/organizations", platform,
			[]byte(fmt.Sprintf(`{"name":"Merchant %03d","slug":"m%03d","capabilities":["commerce.catalog","commerce.inventory"]}`, i, i)))
		if err != nil || status != 201 {
			return section{}, fmt.Errorf("create org: %d %s %v", status, body, err)
		}
		id := between(string(body), `"id":"`, `"`)
		status, body, err = call("PUT", svc.URL+"/api/platform/organizations/"+id+"/merchant", platform,
			[]byte(fmt.Sprintf(`{"listed":true,"displayName":"Merchant %03d","description":"Outdoor and bike gear shop","categories":["outdoor","bikes"],"region":"EU"}`, i)))
		if err != nil || status != 200 {
			return section{}, fmt.Errorf("merchant: %d %s %v", status, body, err)
		}
	}
	mcp := map[string]string{"Authorization": "Bearer " + creds.Keys["gateway"], "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2025-11-25"}
	url := "http://" + regAddr + "/mcp"
	scenarios := []struct{ name, body string }{
		{"`tools/call search_merchants` (query outdoor, 20 of 50 merchants)", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_merchants","arguments":{"query":"outdoor"}}}`},
		{"`tools/list`", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d keep-alive connections, %s measured after 1 s warm-up per phase; service and bare handler each in their own process, load generator in a third. Registry on net/http, JSON-RPC through sourcegraph/jsonrpc2 (one Conn per message), gateway key checked on every request.\n\n", e.concurrency, e.duration)
	b.WriteString("| endpoint | requests/s | p50 | p99 | errors |\n|---|---|---|---|---|\n")
	var verdicts []string
	for _, sc := range scenarios {
		status, body, err := call("POST", url, mcp, []byte(sc.body))
		if err != nil || status != 200 || strings.Contains(string(body), `"error"`) {
			return section{}, fmt.Errorf("%s: %d %s %v", sc.name, status, body, err)
		}
		bare, err := startBare(e, body, 200)
		if err != nil {
			return section{}, err
		}
		reqBody := []byte(sc.body)
		spec := loadSpec{Method: "POST", Headers: mcp, Body: func(int, int) []byte { return reqBody }, WantStatus: 200,
			Concurrency: e.concurrency, Warmup: time.Second, Duration: e.duration}
		spec.URL = bare.URL + "/mcp"
		rb, err := runLoad(spec)
		bare.Stop()
		if err != nil {
			return section{}, fmt.Errorf("bare %s: %w", sc.name, err)
		}
		spec.URL = url
		r, err := runLoad(spec)
		if err != nil {
			return section{}, fmt.Errorf("%s: %w", sc.name, err)
		}
		b.WriteString(rb.row(fmt.Sprintf("bare fasthttp handler, same %d bytes", len(body))) + "\n")
		b.WriteString(r.row("registry "+sc.name) + "\n")
		ratio := r.RPS / rb.RPS
		verdicts = append(verdicts, fmt.Sprintf("- %s: %.0f%% of the bare handler (target at least 30%%): **%s**", sc.name, 100*ratio, verdict(ratio >= 0.3)))
	}
	b.WriteString("\n" + strings.Join(verdicts, "\n") + "\n")
	return section{Title: "MCP registry discovery endpoint", Command: "go run ./bench/cmd/benchrun -only mcp", Body: b.String()}, nil
}

// between returns the text of s between the first open and the next close.
func between(s, open, close string) string {
	_, rest, ok := strings.Cut(s, open)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, close)
	return v
}
