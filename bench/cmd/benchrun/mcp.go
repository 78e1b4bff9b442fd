package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// benchMCP: the MCP registry discovery endpoint (POST /mcp, net/http + jsonrpc2) under concurrent
// load: tools/call search_merchants over 50 listed merchants and tools/list, each next to a bare
// fasthttp handler returning the same bytes. The tool service's own scenarios (with fake data
// backends) are in `go run ./bench/cmd/mcpbench`.
func benchMCP(_ context.Context, e *env) (section, error) {
	const rounds = 3
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
	toolsAddr, err := port()
	if err != nil {
		return section{}, err
	}
	svc, err := startService(e, "--registry-addr", regAddr, "--tools-addr", toolsAddr)
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
	// Stock for the tool service: 200 products at 10 locations, through the import API.
	imp := map[string]string{"x-api-key": creds.Keys["import"]}
	var products, levels []string
	for i := range 200 {
		products = append(products, fmt.Sprintf(`{"externalId":"SKU-%03d","name":"Product %03d","unitPrice":%d}`, i, i, 10+i))
		for l := range 10 {
			levels = append(levels, fmt.Sprintf(`{"skuId":"SKU-%03d","locationId":"LOC-%02d","quantityOnHand":%d,"quantityReserved":%d}`, i, l, 100+l, l))
		}
	}
	for _, imp1 := range []struct{ kind, body string }{
		{"catalog", `{"products":[` + strings.Join(products, ",") + `]}`},
		{"inventory", `{"levels":[` + strings.Join(levels, ",") + `]}`},
	} {
		if err := importAndWait(svc.URL, imp, imp1.kind, imp1.body); err != nil {
			return section{}, err
		}
	}

	mcpHeaders := func(key string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + key, "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2025-11-25"}
	}
	reg, tools := "http://"+regAddr+"/mcp", "http://"+toolsAddr+"/mcp?org=demo"
	scenarios := []struct {
		name, url, body string
		headers         map[string]string
		target          bool // the 30% target applies
	}{
		{"registry `tools/call search_merchants` (query outdoor, 20 of 50 merchants)", reg,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_merchants","arguments":{"query":"outdoor"}}}`, mcpHeaders(creds.Keys["gateway"]), true},
		{"registry `tools/list`", reg, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, mcpHeaders(creds.Keys["gateway"]), true},
		{"tool service `tools/list` (9 tools)", tools, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, mcpHeaders(creds.Keys["demoTool"]), false},
		{"tool service `tools/call check_availability` (10 locations)", tools,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_availability","arguments":{"productId":"SKU-042"}}}`, mcpHeaders(creds.Keys["demoTool"]), false},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d keep-alive connections, %s measured after 1 s warm-up per phase, %d interleaved rounds per pair, best of each; service and bare handler each in their own process, load generator in a third. MCP 2025-11-25 over HTTP, JSON-RPC through sourcegraph/jsonrpc2 (one Conn per message), key checked on every request; registry on net/http, tool service on fasthttp answering from the tenant actor.\n\n", e.concurrency, max(e.duration/2, 2*time.Second), rounds)
	b.WriteString("| endpoint | requests/s | p50 | p99 | errors |\n|---|---|---|---|---|\n")
	var verdicts []string
	for _, sc := range scenarios {
		status, body, err := call("POST", sc.url, sc.headers, []byte(sc.body))
		if err != nil || status != 200 || strings.Contains(string(body), `"error"`) {
			return section{}, fmt.Errorf("%s: %d %s %v", sc.name, status, body, err)
		}
		bare, err := startBare(e, body, 200)
		if err != nil {
			return section{}, err
		}
		var bareNet *service // the registry runs on net/http: its own ceiling, for context
		if sc.url == reg {
			if bareNet, err = startBareNet(e, body); err != nil {
				bare.Stop()
				return section{}, err
			}
		}
		reqBody := []byte(sc.body)
		spec := loadSpec{Method: "POST", Headers: sc.headers, Body: func(int, int) []byte { return reqBody }, WantStatus: 200,
			Concurrency: e.concurrency, Warmup: time.Second, Duration: max(e.duration/2, 2*time.Second)}
		// Interleaved rounds (bare, service, bare, service, ...) of half-length phases, best of each:
		// other work on a shared machine comes and goes, and one pair measured apart can be far off.
		var rb, r loadResult
		for range rounds {
			spec.URL = bare.URL + "/mcp"
			x, err := runLoad(spec)
			if err != nil {
				bare.Stop()
				return section{}, fmt.Errorf("bare %s: %w", sc.name, err)
			}
			spec.URL = sc.url
			y, err := runLoad(spec)
			if err != nil {
				bare.Stop()
				return section{}, fmt.Errorf("%s: %w", sc.name, err)
			}
			if x.RPS > rb.RPS {
				rb = x
			}
			if y.RPS > r.RPS {
				r = y
			}
		}
		bare.Stop()
		b.WriteString(rb.row(fmt.Sprintf("bare fasthttp handler, same %d bytes", len(body))) + "\n")
		if bareNet != nil {
			spec.URL = bareNet.URL + "/mcp"
			rn, err := runLoad(spec)
			bareNet.Stop()
			if err != nil {
				return section{}, fmt.Errorf("bare net/http %s: %w", sc.name, err)
			}
			b.WriteString(rn.row(fmt.Sprintf("bare net/http handler, same %d bytes (%.0f%% of bare fasthttp)", len(body), 100*rn.RPS/rb.RPS)) + "\n")
		}
		b.WriteString(r.row(sc.name) + "\n")
		ratio := r.RPS / rb.RPS
		if sc.target {
			verdicts = append(verdicts, fmt.Sprintf("- %s: %.0f%% of the bare handler (target at least 30%%): **%s**", sc.name, 100*ratio, verdict(ratio >= 0.3)))
		} else {
			verdicts = append(verdicts, fmt.Sprintf("- %s: %.0f%% of the bare handler", sc.name, 100*ratio))
		}
	}
	b.WriteString("\n" + strings.Join(verdicts, "\n") + "\n")
	return section{Title: "MCP registry discovery endpoint and hosted tool service", Command: "go run ./bench/cmd/benchrun -only mcp", Body: b.String()}, nil
}

// importAndWait posts an import and polls its job until it is COMPLETED.
func importAndWait(base string, headers map[string]string, kind, body string) error {
	status, resp, err := call("POST", base+"/api/import/"+kind, headers, []byte(body))
	if err != nil || status != 202 {
		return fmt.Errorf("import %s: %d %s %v", kind, status, resp, err)
	}
	job := between(string(resp), `"jobId":"`, `"`)
	for range 600 {
		status, resp, err = call("GET", base+"/api/import/status/"+job, headers, nil)
		if err != nil {
			return err
		}
		switch between(string(resp), `"status":"`, `"`) {
		case "COMPLETED":
			if !strings.Contains(string(resp), `"failedCount":0`) {
				return fmt.Errorf("import %s: %s", kind, resp)
			}
			return nil
		case "FAILED":
			return fmt.Errorf("import %s failed: %s", kind, resp)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("import %s did not finish", kind)
}

// bareNetHTTP serves fixed bytes from a plain net/http handler (the registry's server library).
func bareNetHTTP(args []string) {
	fs := flag.NewFlagSet("barenet", flag.ExitOnError)
	bodyFile := fs.String("body", "", "file holding the response body")
	_ = fs.Parse(args)
	exitOnInterrupt()
	body, err := os.ReadFile(*bodyFile)
	must(err)
	ln, err := listen()
	must(err)
	fmt.Printf("listening bare http://%s\n", ln.Addr())
	must(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})))
}

// startBareNet starts bareNetHTTP in its own process.
func startBareNet(e *env, body []byte) (*service, error) {
	f := filepath.Join(e.tmp, fmt.Sprintf("barenet-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(f, body, 0o600); err != nil {
		return nil, err
	}
	return startBaseline(e, "barenet", "-body", f)
}
