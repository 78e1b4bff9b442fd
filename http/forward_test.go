package http

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// fakeOwners answers Owner from a table: org -> owner address ("" with restoring, or err).
type fakeOwners struct {
	mu        sync.Mutex
	self      string
	owner     map[string]string
	restoring map[string]bool
	err       error
}

func (f *fakeOwners) Owner(org string) (string, bool, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", false, false, f.err
	}
	if f.restoring[org] {
		return f.self, true, true, nil
	}
	a := f.owner[org]
	return a, a == f.self, false, nil
}

// countingTransfers answers the transfer list and create the same way on every node and counts
// its calls (a forwarded request must not reach the forwarding node's services).
type countingTransfers struct {
	supplyplan.TransferService
	calls atomic.Int64
}

func (c *countingTransfers) ListTransfers(_ context.Context, p supplyplan.Principal, f supplyplan.TransferFilter) (supplyplan.Page[supplyplan.Transfer], error) {
	c.calls.Add(1)
	return supplyplan.Page[supplyplan.Transfer]{Items: []supplyplan.Transfer{{ID: "tr_1", ProductMasterID: p.OrgID + "/" + f.ProductMasterID,
		Quantity: 3, Status: supplyplan.TransferStatus("DRAFT")}}, Total: 1, Limit: f.Limit, Offset: f.Offset}, nil
}

func (c *countingTransfers) CreateTransfer(_ context.Context, p supplyplan.Principal, in supplyplan.TransferInput) (supplyplan.Transfer, error) {
	c.calls.Add(1)
	if in.ProductMasterID == nil || in.Quantity == nil {
		return supplyplan.Transfer{}, supplyplan.Invalid("productMasterId", "is required")
	}
	return supplyplan.Transfer{ID: "tr_" + *in.ProductMasterID, ProductMasterID: *in.ProductMasterID, Quantity: *in.Quantity,
		Status: supplyplan.TransferStatus("DRAFT")}, nil
}

// memIdempotency keeps the first outcome of each (scope, key) and replays it.
type memIdempotency struct {
	mu     sync.Mutex
	stored map[string]supplyplan.IdempotentResponse
	begun  []string
}

func (m *memIdempotency) BeginIdempotent(_ context.Context, scope, key, fp string) (*supplyplan.IdempotencyClaim, *supplyplan.IdempotentResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.begun = append(m.begun, scope+"/"+key)
	if r, ok := m.stored[scope+"/"+key]; ok {
		return nil, &r, nil
	}
	return &supplyplan.IdempotencyClaim{Scope: scope, Key: key, Fingerprint: fp}, nil, nil
}

func (m *memIdempotency) FinishIdempotent(c *supplyplan.IdempotencyClaim, resp supplyplan.IdempotentResponse) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stored[c.Scope+"/"+c.Key] = resp
	ch := make(chan struct{})
	close(ch)
	return ch
}

// apiNode is one node's REST API on a real listener, with the headers of every request it got.
type apiNode struct {
	addr      string
	owners    *fakeOwners
	transfers *countingTransfers
	idem      *memIdempotency
	mu        sync.Mutex
	headers   []map[string]string
}

func (n *apiNode) seen() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.headers)
}

func (n *apiNode) lastHeaders() map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.headers) == 0 {
		return nil
	}
	return n.headers[len(n.headers)-1]
}

// reserveAddr returns a free local address (listened on, then closed).
func reserveAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

// mustAPINode starts a node's API at addr with the shared owners table (nil: embedded).
func mustAPINode(tb testing.TB, name, addr string, owners *fakeOwners) *apiNode {
	tb.Helper()
	n := &apiNode{addr: addr, owners: owners, transfers: &countingTransfers{}, idem: &memIdempotency{stored: map[string]supplyplan.IdempotentResponse{}}}
	cfg := Config{Addr: addr, NodeID: name, RequestTimeout: 2 * time.Second}
	if owners != nil {
		cfg.Owners = owners
	}
	s := NewServer(cfg, Services{Auth: keyAuth{}, Transfers: n.transfers, Idempotency: n.idem})
	rec := func(ctx *fasthttp.RequestCtx) {
		h := map[string]string{}
		for k, v := range ctx.Request.Header.All() {
			h[string(k)] = string(v)
		}
		n.mu.Lock()
		n.headers = append(n.headers, h)
		n.mu.Unlock()
		s.Handler()(ctx)
	}
	l := newListener(name, addr, "supplyplan", nil, nil, rec)
	if err := l.Open(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close(context.Background()) })
	return n
}

type httpResult struct {
	status  int
	headers map[string]string
	body    string
}

// call sends one request to addr with a fresh client (no shared state with the nodes).
func call(tb testing.TB, addr, method, uri string, headers map[string]string, body string) httpResult {
	tb.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + uri)
	req.Header.SetMethod(method)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if body != "" {
		req.SetBodyString(body)
	}
	if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil {
		tb.Fatalf("%s %s: %v", method, uri, err)
	}
	h := map[string]string{}
	for k, v := range resp.Header.All() {
		h[string(k)] = string(v)
	}
	return httpResult{status: resp.StatusCode(), headers: h, body: string(resp.Body())}
}

// twoNodes starts nodes a and b sharing one owners table in which b owns org-1.
func twoNodes(t *testing.T) (a, b *apiNode) {
	t.Helper()
	addrA, addrB := reserveAddr(t), reserveAddr(t)
	ownersA := &fakeOwners{self: addrA, owner: map[string]string{"org-1": addrB, PlatformOwnerKey: addrB}}
	ownersB := &fakeOwners{self: addrB, owner: map[string]string{"org-1": addrB, PlatformOwnerKey: addrB}}
	return mustAPINode(t, "node-a", addrA, ownersA), mustAPINode(t, "node-b", addrB, ownersB)
}

// sameAnswer compares a forwarded answer with the direct one: status, body and every header but
// Date (and the request id, which each call gets afresh).
func sameAnswer(t *testing.T, what string, got, want httpResult) {
	t.Helper()
	if got.status != want.status || got.body != want.body {
		t.Errorf("%s: forwarded %d %s, direct %d %s", what, got.status, got.body, want.status, want.body)
	}
	for k, v := range want.headers {
		if k == "Date" || k == "X-Request-Id" {
			continue
		}
		if got.headers[k] != v {
			t.Errorf("%s: header %s forwarded %q, direct %q", what, k, got.headers[k], v)
		}
	}
	for k := range got.headers {
		if _, ok := want.headers[k]; !ok {
			t.Errorf("%s: header %s only on the forwarded answer", what, k)
		}
	}
}

func TestForwardSameAsDirect(t *testing.T) {
	a, b := twoNodes(t)
	auth := map[string]string{"Authorization": "Bearer " + testAdminKey}
	const uri = "/api/inventory/transfers?productMasterId=p%2F1&limit=7"
	direct := call(t, b.addr, "GET", uri, auth, "")
	fwd := call(t, a.addr, "GET", uri, map[string]string{"Authorization": "Bearer " + testAdminKey, "X-Request-Id": "req-fwd-1"}, "")
	if direct.status != 200 || !strings.Contains(direct.body, `"productMasterId":"org-1/p/1"`) || !strings.Contains(direct.body, `"limit":7`) {
		t.Fatalf("direct GET: %d %s", direct.status, direct.body)
	}
	sameAnswer(t, "GET", fwd, direct)
	if fwd.headers["X-Request-Id"] != "req-fwd-1" {
		t.Errorf("request id %q, want the client's", fwd.headers["X-Request-Id"])
	}
	h := b.lastHeaders()
	if h[ForwardedByHeader] != "node-a" || h["Authorization"] != "Bearer "+testAdminKey || h["X-Request-Id"] != "req-fwd-1" {
		t.Errorf("owner got headers %v", h)
	}

	const body = `{"productMasterId":"sku-9","sourceLocationId":"l1","destLocationId":"l2","quantity":4}`
	ct := map[string]string{"Authorization": "Bearer " + testAdminKey, "Content-Type": "application/json"}
	direct = call(t, b.addr, "POST", "/api/inventory/transfers", ct, body)
	fwd = call(t, a.addr, "POST", "/api/inventory/transfers", ct, body)
	if direct.status != 201 || !strings.Contains(direct.body, `"id":"tr_sku-9"`) {
		t.Fatalf("direct POST: %d %s", direct.status, direct.body)
	}
	sameAnswer(t, "POST", fwd, direct)
	// An error answer of the owner comes back as it is too.
	direct = call(t, b.addr, "POST", "/api/inventory/transfers", ct, `{"quantity":1}`)
	fwd = call(t, a.addr, "POST", "/api/inventory/transfers", ct, `{"quantity":1}`)
	if direct.status != 400 {
		t.Fatalf("direct invalid POST: %d %s", direct.status, direct.body)
	}
	sameAnswer(t, "invalid POST", fwd, direct)
	if n := a.transfers.calls.Load(); n != 0 {
		t.Errorf("the forwarding node's service was called %d times", n)
	}
	if n := b.transfers.calls.Load(); n != 6 {
		t.Errorf("owner's service called %d times, want 6", n)
	}
	// Platform endpoints go to the owner of the platform stream; refused keys are refused here.
	if r := call(t, a.addr, "GET", "/api/inventory/transfers", map[string]string{"Authorization": "Bearer sp_admin_unknown"}, ""); r.status != 401 {
		t.Errorf("unknown key: %d %s", r.status, r.body)
	}
	before := b.seen()
	if r := call(t, a.addr, "GET", "/api/inventory/transfers", map[string]string{"Authorization": "Bearer sp_admin_unknown"}, ""); r.status != 401 || b.seen() != before {
		t.Errorf("an unauthenticated request was forwarded")
	}
}

func TestForwardIdempotencyKeyPassedThrough(t *testing.T) {
	a, b := twoNodes(t)
	h := map[string]string{"Authorization": "Bearer " + testAdminKey, "Content-Type": "application/json", "Idempotency-Key": "k-77"}
	const body = `{"productMasterId":"sku-1","sourceLocationId":"l1","destLocationId":"l2","quantity":1}`
	first := call(t, a.addr, "POST", "/api/inventory/transfers", h, body)
	again := call(t, a.addr, "POST", "/api/inventory/transfers", h, body)
	if first.status != 201 || again.status != 201 || again.body != first.body {
		t.Fatalf("first %d %s, again %d %s", first.status, first.body, again.status, again.body)
	}
	if again.headers["Idempotent-Replayed"] != "true" || first.headers["Idempotent-Replayed"] != "" {
		t.Errorf("replayed header: first %q, again %q", first.headers["Idempotent-Replayed"], again.headers["Idempotent-Replayed"])
	}
	if got := strings.Join(b.idem.begun, ","); got != "org-1/k-77,org-1/k-77" {
		t.Errorf("owner's idempotency saw %q", got)
	}
	if len(a.idem.begun) != 0 || b.transfers.calls.Load() != 1 {
		t.Errorf("forwarding node claimed %v; owner ran the write %d times", a.idem.begun, b.transfers.calls.Load())
	}
}

// unavailable checks a 503 in the one error shape with Retry-After: 1.
func unavailable(t *testing.T, what string, r httpResult) {
	t.Helper()
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	if err := json.Unmarshal([]byte(r.body), &e); err != nil || r.status != 503 || e.Code != supplyplan.EUNAVAILABLE || e.Error == "" {
		t.Errorf("%s: %d %s, want 503 %s", what, r.status, r.body, supplyplan.EUNAVAILABLE)
	}
	if r.headers["Retry-After"] != "1" {
		t.Errorf("%s: Retry-After %q, want 1", what, r.headers["Retry-After"])
	}
}

func TestForwardNeverTwice(t *testing.T) {
	a, b := twoNodes(t)
	// a and b disagree: each thinks the other owns org-1 (ownership moving).
	b.owners.mu.Lock()
	b.owners.owner["org-1"] = a.addr
	b.owners.mu.Unlock()
	r := call(t, a.addr, "GET", "/api/inventory/transfers", map[string]string{"Authorization": "Bearer " + testAdminKey}, "")
	unavailable(t, "loop", r)
	if a.seen() != 1 || b.seen() != 1 {
		t.Errorf("requests seen: a %d, b %d, want 1 each", a.seen(), b.seen())
	}
	// A client that sends the header itself is not forwarded either.
	r = call(t, b.addr, "GET", "/api/inventory/transfers", map[string]string{"Authorization": "Bearer " + testAdminKey, ForwardedByHeader: "x"}, "")
	unavailable(t, "client header", r)
	if a.transfers.calls.Load()+b.transfers.calls.Load() != 0 {
		t.Error("a service was called")
	}
}

func TestForwardOwnerDownOrRestoring(t *testing.T) {
	addrA := reserveAddr(t)
	owners := &fakeOwners{self: addrA, owner: map[string]string{"org-1": reserveAddr(t)}, restoring: map[string]bool{}}
	a := mustAPINode(t, "node-a", addrA, owners)
	auth := map[string]string{"Authorization": "Bearer " + testAdminKey, "Content-Type": "application/json"}
	unavailable(t, "owner down GET", call(t, a.addr, "GET", "/api/inventory/transfers", auth, ""))
	unavailable(t, "owner down POST", call(t, a.addr, "POST", "/api/inventory/transfers", auth, `{"productMasterId":"x","quantity":1}`))
	owners.mu.Lock()
	owners.restoring["org-1"] = true
	owners.mu.Unlock()
	unavailable(t, "restoring", call(t, a.addr, "GET", "/api/inventory/transfers", auth, ""))
	owners.mu.Lock()
	owners.restoring["org-1"], owners.err = false, errors.New("no assignment yet")
	owners.mu.Unlock()
	unavailable(t, "unknown owner", call(t, a.addr, "GET", "/api/inventory/transfers", auth, ""))
	if a.transfers.calls.Load() != 0 {
		t.Error("the service was called")
	}
	// Once it owns the organization the node serves it itself.
	owners.mu.Lock()
	owners.err, owners.owner["org-1"] = nil, addrA
	owners.mu.Unlock()
	if r := call(t, a.addr, "GET", "/api/inventory/transfers", auth, ""); r.status != 200 || a.transfers.calls.Load() != 1 {
		t.Errorf("local: %d %s", r.status, r.body)
	}
}

func TestForwardEmbeddedServesLocally(t *testing.T) {
	a := mustAPINode(t, "solo", reserveAddr(t), nil)
	r := call(t, a.addr, "GET", "/api/inventory/transfers", map[string]string{"Authorization": "Bearer " + testAdminKey, ForwardedByHeader: "x"}, "")
	if r.status != 200 || a.transfers.calls.Load() != 1 {
		t.Errorf("embedded: %d %s", r.status, r.body)
	}
}
