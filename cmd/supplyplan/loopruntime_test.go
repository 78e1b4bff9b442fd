package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/jwtauth"
)

// The loop runtime through its HTTP listener: the procurement loop from a purchase order to
// on-hand stock, Idempotency-Keys, If-Match, the transition rules, lifecycle actions, bulk cancel,
// the audit trail and its verification, the signed loop.* webhooks, authentication failures,
// isolation between organizations, and timeouts that fire after a restart. JWT verification
// itself is jwtauth's (tested there): these tests use fakeLoopAuth, which speaks the same
// Authenticator contract.

// fakeLoopAuth accepts tokens "fake|<org>|<scopes>|<jti>|<sub>" (scopes separated by commas) and,
// like the real verifier, refuses a jti already used on a mutating call.
type fakeLoopAuth struct {
	mu   sync.Mutex
	used map[string]bool
}

func newFakeLoopAuth() *fakeLoopAuth { return &fakeLoopAuth{used: map[string]bool{}} }

func (f *fakeLoopAuth) Authenticate(_ context.Context, bearer string, mutating bool) (jwtauth.Claims, error) {
	parts := strings.Split(bearer, "|")
	if len(parts) != 5 || parts[0] != "fake" {
		return jwtauth.Claims{}, &jwtauth.Error{Status: 401, Code: "invalid_token", Description: "malformed token"}
	}
	if mutating {
		f.mu.Lock()
		seen := f.used[parts[3]]
		f.used[parts[3]] = true
		f.mu.Unlock()
		if seen {
			return jwtauth.Claims{}, &jwtauth.Error{Status: 401, Code: "invalid_token", Description: "token id (jti) already used"}
		}
	}
	return jwtauth.Claims{Issuer: "fake-issuer", Subject: parts[4], Audience: "supplyplan-loops", ID: parts[3], Org: parts[1],
		Scopes: strings.Split(parts[2], ",")}, nil
}

var fakeJTI atomic.Int64

// fakeToken mints a fresh token of the fake verifier.
func fakeToken(org, scopes, sub string) string {
	return fmt.Sprintf("fake|%s|%s|jti-%d|%s", org, scopes, fakeJTI.Add(1), sub)
}

// runtimeURL is the loop runtime listener of a test server.
func runtimeURL(s *testServer) string { return "http://" + s.Main.Runtime.Addr() }

// Run sends a request to the loop runtime with a fresh token of scopes for the demo organization.
func (s *testServer) Run(method, path, scopes string, body any, headers ...string) resp {
	s.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + fakeToken("demo", scopes, "user:alice")}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	return doRequest(s.t, runtimeURL(s), method, path, h, body)
}

func startRuntime(t *testing.T, mutate ...func(*Config)) *testServer {
	t.Helper()
	return MustStart(t, "", append([]func(*Config){outboundTestConfig(""), func(c *Config) { c.LoopAuth = newFakeLoopAuth() }}, mutate...)...)
}

// onHand is the on-hand quantity of sku at location, through the REST API.
func onHand(t *testing.T, s *testServer, sku, loc string) float64 {
	t.Helper()
	var body struct {
		Levels []supplyplan.InventoryLevel `json:"levels"`
	}
	r := s.Do("GET", "/api/inventory/levels?skuId="+sku+"&locationId="+loc, s.Key("VIEWER"), nil)
	r.Must(t, 200)
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	for _, l := range body.Levels {
		if l.LocationID == loc {
			return l.QuantityOnHand
		}
	}
	return 0
}

func TestLoopRuntimeProcurementFromPurchaseOrder(t *testing.T) {
	s := startRuntime(t)
	rcv := startReceiver(t)
	_, secret := createEndpoint(t, s, rcv.URL, "loop.procurement.*")
	rcv.SetSecrets(secret)
	checkCounts(t, s.Import("catalog", map[string]any{"products": []any{map[string]any{"externalId": "W1", "name": "Widget"}}}), 1, 0)
	checkCounts(t, s.Import("inventory", map[string]any{"levels": []any{map[string]any{"skuId": "W1", "locationId": "DC", "quantityOnHand": 5}}}), 1, 0)
	checkCounts(t, s.Import("suppliers", map[string]any{"suppliers": []any{map[string]any{"externalId": "S"}}}), 1, 0)
	checkCounts(t, s.Import("purchase-orders", map[string]any{"purchaseOrders": []any{map[string]any{"externalPoNumber": "PO-7", "supplierId": "S",
		"destinationLocationId": "DC", "lines": []any{map[string]any{"skuId": "W1", "quantity": 10, "unitCost": 2}}}}}), 1, 0)

	// The event types are listed for webhook endpoints.
	types := s.Do("GET", "/api/webhooks/event-types", s.Key("ADMIN"), nil).Must(t, 200)
	if !strings.Contains(fmt.Sprint(types["eventTypes"]), "loop.procurement.receive") {
		t.Fatalf("event types %v", types)
	}

	start := map[string]any{"loop": "supplyplan/procurement", "businessKey": "PO-7", "input": map[string]any{"purchaseOrderId": "PO-7"}}
	r := s.Run("POST", "/v1/instances", "loops:write", start, "Idempotency-Key", "start-po-7")
	inst := r.Must(t, 201)
	id := str(inst, "id")
	if str(inst, "status") != "RUNNING" || str(inst, "state") != "draft" || r.Header.Get("ETag") != `"1"` ||
		str(inst, "subject", "destinationLocationId") != "DC" || !strings.HasPrefix(str(inst, "definitionDigest"), "sha256:") ||
		r.Header.Get("Location") != "/v1/instances/"+id {
		t.Fatalf("start = %s %v", r.Body, r.Header)
	}
	// Idempotency-Key: the same request replays its response; another body is 422.
	again := s.Run("POST", "/v1/instances", "loops:write", start, "Idempotency-Key", "start-po-7")
	if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" || str(again.JSON(t), "id") != id {
		t.Fatalf("replay = %d %s", again.Status, again.Body)
	}
	other := map[string]any{"loop": "supplyplan/procurement", "businessKey": "PO-8"}
	if r := s.Run("POST", "/v1/instances", "loops:write", other, "Idempotency-Key", "start-po-7"); r.Status != 422 {
		t.Fatalf("reused key = %d %s", r.Status, r.Body)
	}
	// One open instance per business key: FAIL (default) or USE_EXISTING.
	if r := s.Run("POST", "/v1/instances", "loops:write", start); r.Status != 409 || r.Code() != "INSTANCE_EXISTS" {
		t.Fatalf("second start = %d %s", r.Status, r.Body)
	}
	start["onConflict"] = "USE_EXISTING"
	if r := s.Run("POST", "/v1/instances", "loops:write", start); r.Status != 200 || str(r.JSON(t), "id") != id {
		t.Fatalf("USE_EXISTING = %d %s", r.Status, r.Body)
	}
	// An unknown purchase order is 400 naming it.
	if r := s.Run("POST", "/v1/instances", "loops:write", map[string]any{"loop": "supplyplan/procurement", "businessKey": "X",
		"input": map[string]any{"purchaseOrderId": "nope"}}); r.Status != 400 || !strings.Contains(string(r.Body), "input.purchaseOrderId") {
		t.Fatalf("unknown PO = %d %s", r.Status, r.Body)
	}

	fire := func(scopes, name string, payload any, ifMatch string) resp {
		t.Helper()
		h := []string{}
		if ifMatch != "" {
			h = append(h, "If-Match", ifMatch)
		}
		return s.Run("POST", "/v1/instances/"+id+"/transitions", scopes, map[string]any{"name": name, "payload": payload}, h...)
	}
	if r := fire("loops:write", "submit", map[string]any{"note": "restock"}, `"1"`); r.Status != 200 || r.Header.Get("ETag") != `"2"` {
		t.Fatalf("submit = %d %s", r.Status, r.Body)
	}
	if r := fire("loops:write", "approve", nil, `"1"`); r.Status != 412 || r.Code() != "PRECONDITION_FAILED" {
		t.Fatalf("stale If-Match = %d %s", r.Status, r.Body)
	}
	if r := fire("loops:write", "receive", nil, ""); r.Status != 409 || !strings.Contains(string(r.Body), "allowed from submitted: approve, reject, withdraw") {
		t.Fatalf("not from this state = %d %s", r.Status, r.Body)
	}
	if r := fire("loops:write", "approve", nil, ""); r.Status != 403 {
		t.Fatalf("approve with loops:write = %d %s", r.Status, r.Body)
	}
	fire("loops:admin", "approve", map[string]any{"note": "ok"}, `"2"`).Must(t, 200)
	if r := fire("loops:write", "place_order", map[string]any{"purchaseOrderId": 7}, ""); r.Status != 400 || !strings.Contains(string(r.Body), "payload.purchaseOrderId") {
		t.Fatalf("payload schema = %d %s", r.Status, r.Body)
	}
	fire("loops:write", "place_order", map[string]any{"supplierId": "S", "purchaseOrderId": "PO-7"}, "").Must(t, 200)
	// An unknown product is refused before anything is recorded.
	if r := fire("loops:write", "receive_partial", map[string]any{"lines": []any{map[string]any{"sku": "NOPE", "quantity": 1}}}, ""); r.Status != 400 ||
		!strings.Contains(string(r.Body), "payload.lines[0].sku") {
		t.Fatalf("unknown sku = %d %s", r.Status, r.Body)
	}
	// Receipts add to on-hand at the purchase order's destination, through the tenant.
	part := fire("loops:write", "receive_partial", map[string]any{"lines": []any{map[string]any{"sku": "W1", "quantity": 4}}}, `"4"`).Must(t, 200)
	if effs := list(part, "effects"); len(effs) != 1 || str(effs[0].(map[string]any), "status") != "APPLIED" {
		t.Fatalf("effects %v", part["effects"])
	}
	if got := onHand(t, s, "W1", "DC"); got != 9 {
		t.Fatalf("on hand after the partial receipt = %v, want 9", got)
	}
	done := fire("loops:write", "receive", map[string]any{"lines": []any{map[string]any{"sku": "W1", "quantity": 6, "lotId": "LOT-1", "expiresAt": "2027-06-30"}}}, "").Must(t, 200)
	if str(done, "status") != "COMPLETED" || str(done, "state") != "received" {
		t.Fatalf("after receive %v", done)
	}
	if got := onHand(t, s, "W1", "DC"); got != 15 {
		t.Fatalf("on hand after the receipt = %v, want 15", got)
	}
	if r := fire("loops:write", "receive", nil, ""); r.Status != 409 {
		t.Fatalf("transition of a completed instance = %d %s", r.Status, r.Body)
	}

	// The audit trail: one event per change, chained.
	evs := s.Run("GET", "/v1/instances/"+id+"/events", "loops:read", nil).Must(t, 200)
	if n := len(list(evs, "events")); n != 6 {
		t.Fatalf("%d events: %s", n, evs)
	}
	e2 := list(evs, "events")[1].(map[string]any)
	if str(e2, "from") != "draft" || str(e2, "to") != "submitted" || str(e2, "transition") != "submit" || str(e2, "actor", "sub") != "user:alice" ||
		str(e2, "actor", "type") != "user" || str(e2, "actor", "iss") != "fake-issuer" || str(e2, "actor", "jti") == "" || str(e2, "requestId") == "" ||
		!strings.HasPrefix(str(e2, "hash"), "sha256:") || str(e2, "prevHash") != str(list(evs, "events")[0].(map[string]any), "hash") {
		t.Fatalf("event 2 %v", e2)
	}
	if tail := s.Run("GET", "/v1/instances/"+id+"/events?afterSeq=4", "loops:read", nil).Must(t, 200); len(list(tail, "events")) != 2 || str(tail, "nextAfterSeq") != "6" {
		t.Fatalf("tail %v", tail)
	}
	if v := s.Run("GET", "/v1/instances/"+id+"/audit/verify", "loops:read", nil).Must(t, 200); v["valid"] != true || str(v, "events") != "6" {
		t.Fatalf("verify %v", v)
	}
	if l := s.Run("GET", "/v1/instances?loop=supplyplan/procurement&status=COMPLETED&state=received", "loops:read", nil).Must(t, 200); str(l, "total") != "1" {
		t.Fatalf("list %v", l)
	}
	if r := s.Run("GET", "/v1/instances?status=DONE", "loops:read", nil); r.Status != 400 || !strings.Contains(string(r.Body), "status") {
		t.Fatalf("bad filter = %d %s", r.Status, r.Body)
	}

	// The signed webhooks, in seq order, with ids derived from the instance and seq.
	want := []string{"started", "submit", "approve", "place_order", "receive_partial", "receive"}
	eventually(t, 10*time.Second, func() error {
		var got []string
		for _, m := range rcv.OK() {
			var p struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(m.Body, &p)
			id0 := m.Header.Get("webhook-id")
			if !m.Verified {
				return fmt.Errorf("unverified delivery %s", m.Body)
			}
			got = append(got, strings.TrimPrefix(p.Type, "loop.procurement."))
			if want := fmt.Sprintf("evt_loop_%s_%010d", id, len(got)); id0 != want {
				return fmt.Errorf("event id (webhook-id) %s, want %s", id0, want)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			return fmt.Errorf("deliveries %v, want %v", got, want)
		}
		return nil
	})
}

func TestLoopRuntimeAuthentication(t *testing.T) {
	s := startRuntime(t)
	base := runtimeURL(s)
	r := doRequest(t, base, "GET", "/v1/instances", nil, nil)
	if r.Status != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), `Bearer realm="supplyplan-loops"`) {
		t.Fatalf("no token = %d %v %s", r.Status, r.Header, r.Body)
	}
	r = doRequest(t, base, "GET", "/v1/instances", map[string]string{"Authorization": "Bearer garbage"}, nil)
	if r.Status != 401 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("bad token = %d %v", r.Status, r.Header)
	}
	r = doRequest(t, base, "GET", "/v1/instances", map[string]string{"Authorization": "Bearer " + fakeToken("no-such-org", "loops:read", "u")}, nil)
	if r.Status != 401 {
		t.Fatalf("unknown org = %d %s", r.Status, r.Body)
	}
	// A read scope cannot write; write cannot terminate or bulk cancel (403 insufficient_scope).
	body := map[string]any{"loop": "supplyplan/quality", "businessKey": "LOT-1"}
	if r := s.Run("POST", "/v1/instances", "loops:read", body); r.Status != 403 || !strings.Contains(r.Header.Get("WWW-Authenticate"), "insufficient_scope") {
		t.Fatalf("read scope writes = %d %v", r.Status, r.Header)
	}
	id := str(s.Run("POST", "/v1/instances", "loops:write", body).Must(t, 201), "id")
	if r := s.Run("POST", "/v1/instances/"+id+"/terminate", "loops:write", map[string]any{"reason": "x"}); r.Status != 403 {
		t.Fatalf("terminate with write = %d", r.Status)
	}
	// A token's jti is refused on a second mutating call.
	tok := fakeToken("demo", "loops:admin", "u")
	h := map[string]string{"Authorization": "Bearer " + tok}
	doRequest(t, base, "POST", "/v1/instances/"+id+"/suspend", h, nil).Must(t, 200)
	if r := doRequest(t, base, "POST", "/v1/instances/"+id+"/resume", h, nil); r.Status != 401 {
		t.Fatalf("replayed jti = %d %s", r.Status, r.Body)
	}
	// The organization claim may be the slug or the id; another organization's instance is 404.
	org := s.Creds.Organization.ID
	doRequest(t, base, "GET", "/v1/instances/"+id, map[string]string{"Authorization": "Bearer " + fakeToken(org, "loops:read", "u")}, nil).Must(t, 200)
	s.Do("POST", "/api/platform/organizations", s.Key("platform"), map[string]any{"slug": "other", "name": "Other"}).Must(t, 201)
	r = doRequest(t, base, "GET", "/v1/instances/"+id, map[string]string{"Authorization": "Bearer " + fakeToken("other", "loops:admin", "u")}, nil)
	if r.Status != 404 {
		t.Fatalf("another organization's instance = %d %s", r.Status, r.Body)
	}
	if r := doRequest(t, base, "GET", "/v1/instances", map[string]string{"Authorization": "Bearer " + fakeToken("other", "loops:read", "u")}, nil).Must(t, 200); str(r, "total") != "0" {
		t.Fatalf("other org lists %v", r)
	}
}

func TestLoopRuntimeLifecycleAndBulkCancel(t *testing.T) {
	s := startRuntime(t)
	var ids []string
	for i := range 4 {
		ids = append(ids, str(s.Run("POST", "/v1/instances", "loops:write", map[string]any{"loop": "supplyplan/returns", "businessKey": "RMA-" + strconv.Itoa(i)}).Must(t, 201), "id"))
	}
	if r := s.Run("POST", "/v1/instances/"+ids[0]+"/cancel", "loops:write", map[string]any{}); r.Status != 400 || !strings.Contains(string(r.Body), "reason") {
		t.Fatalf("cancel without reason = %d %s", r.Status, r.Body)
	}
	c := s.Run("POST", "/v1/instances/"+ids[0]+"/cancel", "loops:write", map[string]any{"reason": "customer kept it"}).Must(t, 200)
	if str(c, "status") != "CANCELED" || str(c, "state") != "cancelled" || str(c, "closeReason") != "customer kept it" {
		t.Fatalf("graceful cancel %v", c)
	}
	tm := s.Run("POST", "/v1/instances/"+ids[1]+"/terminate", "loops:admin", map[string]any{"reason": "duplicate"}).Must(t, 200)
	if str(tm, "status") != "TERMINATED" || str(tm, "state") != "requested" {
		t.Fatalf("terminate %v", tm)
	}
	evs := s.Run("GET", "/v1/instances/"+ids[1]+"/events", "loops:read", nil).Must(t, 200)
	last := list(evs, "events")[1].(map[string]any)
	if str(last, "type") != "terminated" || str(last, "reason") != "duplicate" || str(last, "actor", "sub") != "user:alice" {
		t.Fatalf("who terminated and why: %v", last)
	}
	// Bulk cancel: an empty filter is refused, a dry run counts exactly, expectedCount holds.
	if r := s.Run("POST", "/v1/instances/cancel", "loops:admin", map[string]any{"filter": map[string]any{}, "reason": "x"}); r.Status != 400 {
		t.Fatalf("empty filter = %d %s", r.Status, r.Body)
	}
	dry := s.Run("POST", "/v1/instances/cancel", "loops:admin", map[string]any{"filter": map[string]any{"loop": "supplyplan/returns"}, "reason": "season over", "dryRun": true}).Must(t, 200)
	if str(dry, "count") != "2" || str(dry, "canceled") != "0" {
		t.Fatalf("dry run %v", dry)
	}
	if r := s.Run("POST", "/v1/instances/cancel", "loops:admin", map[string]any{"filter": map[string]any{"loop": "supplyplan/returns"}, "reason": "season over", "expectedCount": 3}); r.Status != 409 {
		t.Fatalf("expected count = %d %s", r.Status, r.Body)
	}
	done := s.Run("POST", "/v1/instances/cancel", "loops:admin", map[string]any{"filter": map[string]any{"loop": "supplyplan/returns"}, "reason": "season over", "expectedCount": 2}).Must(t, 200)
	if str(done, "canceled") != "2" {
		t.Fatalf("bulk cancel %v", done)
	}
	if l := s.Run("GET", "/v1/instances?status=CANCELED", "loops:read", nil).Must(t, 200); str(l, "total") != "3" {
		t.Fatalf("canceled %v", l)
	}
}

// TestLoopRuntimeTimeoutsAfterRestart: a timeout armed before a restart fires after it, from the
// due time kept in the journal.
func TestLoopRuntimeTimeoutsAfterRestart(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC).UnixMilli())
	clock := func() time.Time { return time.UnixMilli(now.Load()).UTC() }
	s := startRuntime(t, func(c *Config) { c.Clock, c.LoopTimerTick = clock, 20*time.Millisecond })
	id := str(s.Run("POST", "/v1/instances", "loops:write", map[string]any{"loop": "supplyplan/procurement", "businessKey": "T-1"}).Must(t, 201), "id")
	s.Run("POST", "/v1/instances/"+id+"/transitions", "loops:write", map[string]any{"name": "submit"}).Must(t, 200)
	s = s.Restart()
	now.Add((7*24*time.Hour + time.Minute).Milliseconds())
	eventually(t, 10*time.Second, func() error {
		in := s.Run("GET", "/v1/instances/"+id, "loops:read", nil).Must(t, 200)
		if str(in, "status") != "TIMED_OUT" || str(in, "state") != "cancelled" {
			return fmt.Errorf("instance %s/%s", str(in, "status"), str(in, "state"))
		}
		return nil
	})
	evs := s.Run("GET", "/v1/instances/"+id+"/events?afterSeq=2", "loops:read", nil).Must(t, 200)
	e := list(evs, "events")[0].(map[string]any)
	if str(e, "type") != "timeout" || str(e, "transition") != "expire" || str(e, "actor", "type") != "system" {
		t.Fatalf("timeout event %v", e)
	}
	if v := s.Run("GET", "/v1/instances/"+id+"/audit/verify", "loops:read", nil).Must(t, 200); v["valid"] != true {
		t.Fatalf("verify %v", v)
	}
}

// TestLoopRuntimeDocumentationRuns runs the examples of docs/loop-runtime-api.md. They mint tokens
// with `supplyplan token` (the local issuer); here $MINT is a script printing fresh tokens of the
// fake verifier, so the page runs against the same routes and rules.
func TestLoopRuntimeDocumentationRuns(t *testing.T) {
	s := startRuntime(t)
	mint := filepath.Join(t.TempDir(), "mint")
	script := "#!/bin/sh\necho \"fake|demo|$1|jti-$(date +%s%N)-$$|user:newcomer\"\n"
	if err := os.WriteFile(mint, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	runDocPageOn(t, s, "../../docs/loop-runtime-api.md", false, map[string]string{"R": runtimeURL(s), "MINT": mint})
}

// TestLoopRuntimeOrdersLoopAllocates: the orders loop's allocate step allocates the order through
// order allocation.
func TestLoopRuntimeOrdersLoopAllocates(t *testing.T) {
	s := startRuntime(t)
	seedAllocation(t, s)
	checkCounts(t, s.Import("orders", map[string]any{"orders": []any{map[string]any{"externalOrderId": "SO-9",
		"lines": []any{map[string]any{"skuId": "X", "quantity": 3, "locationId": "DC"}}}}}), 1, 0)
	if r := s.Run("POST", "/v1/instances", "loops:write", map[string]any{"loop": "supplyplan/orders", "businessKey": "SO-X",
		"input": map[string]any{"orderId": "nope"}}); r.Status != 400 || !strings.Contains(string(r.Body), "input.orderId") {
		t.Fatalf("unknown order = %d %s", r.Status, r.Body)
	}
	in := s.Run("POST", "/v1/instances", "loops:write", map[string]any{"loop": "supplyplan/orders", "businessKey": "SO-9",
		"input": map[string]any{"orderId": "SO-9"}}).Must(t, 201)
	id := str(in, "id")
	if str(in, "subject", "kind") != "ORDER" {
		t.Fatalf("subject %v", in["subject"])
	}
	s.Run("POST", "/v1/instances/"+id+"/transitions", "loops:write", map[string]any{"name": "confirm"}).Must(t, 200)
	got := s.Run("POST", "/v1/instances/"+id+"/transitions", "loops:write", map[string]any{"name": "allocate",
		"payload": map[string]any{"lines": []any{map[string]any{"sku": "X", "locationId": "DC", "quantity": 3}}}}).Must(t, 200)
	effs := list(got, "effects")
	if len(effs) != 1 {
		t.Fatalf("effects %v", got["effects"])
	}
	e := effs[0].(map[string]any)
	if str(e, "kind") != "ORDER_ALLOCATION" || str(e, "status") != "APPLIED" || str(e, "result") != "ALLOCATED" || str(e, "orderId") != "SO-9" {
		t.Fatalf("effect %v", e)
	}
	var o orderBody
	into(t, s.Do("GET", "/api/orders/SO-9", s.Key("VIEWER"), nil), 200, &o)
	if o.Order.Allocation == nil || o.Order.Allocation.Status != "ALLOCATED" {
		t.Fatalf("order allocation %+v", o.Order.Allocation)
	}
}

// TestLoopRuntimeCommitment: a plan's monthly commitment of loop transitions: the platform's
// billing view shows the month's usage, and loop_commitment.threshold_reached is delivered once at
// 80 % and once at 100 %, signed.
func TestLoopRuntimeCommitment(t *testing.T) {
	plans := filepath.Join(t.TempDir(), "plans.json")
	if err := os.WriteFile(plans, []byte(`{"downgradePlan": "free", "plans": {"free": {"entitlements": [], "capabilities": []},
		"demo": {"entitlements": [], "capabilities": [], "loopTransitionsMonthly": 5}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startRuntime(t, func(c *Config) { c.PlansFile = plans })
	rcv := startReceiver(t)
	_, secret := createEndpoint(t, s, rcv.URL, "loop_commitment.*")
	rcv.SetSecrets(secret)
	id := str(s.Run("POST", "/v1/instances", "loops:write", map[string]any{"loop": "supplyplan/quality", "businessKey": "LOT-C"}).Must(t, 201), "id")
	fire := func(name string, payload any) {
		t.Helper()
		s.Run("POST", "/v1/instances/"+id+"/transitions", "loops:admin", map[string]any{"name": name, "payload": payload}).Must(t, 200)
	}
	defect := map[string]any{"defects": []any{map[string]any{"code": "D"}}}
	fire("start_inspection", nil)
	for range 3 {
		fire("fail", defect)
		fire("rework", nil)
	}
	b := s.Do("GET", "/api/platform/organizations/"+s.Creds.Organization.ID+"/billing", s.Key("platform"), nil).Must(t, 200)
	u, _ := b["loopUsage"].(map[string]any)
	if str(u, "transitions") != "7" || str(u, "commitment") != "5" || fmt.Sprint(u["thresholdsReached"]) != "[80 100]" {
		t.Fatalf("billing view loopUsage %v", b["loopUsage"])
	}
	eventually(t, 10*time.Second, func() error {
		got := rcv.Typed("loop_commitment.threshold_reached")
		if len(got) != 2 {
			return fmt.Errorf("%d threshold deliveries", len(got))
		}
		for _, m := range got {
			if !m.Verified {
				return fmt.Errorf("unverified %s", m.Body)
			}
		}
		return nil
	})
	if n := len(rcv.Typed("loop_commitment.threshold_reached")); n != 2 {
		t.Fatalf("%d threshold deliveries, want 2", n)
	}
}

// TestLoopRuntimeOrdersLoopShipsAndCancels: the orders loop's ship consumes the order's
// reservations from on-hand as shipping through order allocation does, its cancel releases them
// (ATP comes back); neither applies twice, on an Idempotency-Key replay or after a restart.
func TestLoopRuntimeOrdersLoopShipsAndCancels(t *testing.T) {
	s := startRuntime(t)
	seedAllocation(t, s)
	checkCounts(t, s.Import("orders", map[string]any{"orders": []any{
		map[string]any{"externalOrderId": "SO-S", "lines": []any{map[string]any{"skuId": "X", "quantity": 3, "locationId": "DC"}}},
		map[string]any{"externalOrderId": "SO-C", "lines": []any{map[string]any{"skuId": "X", "quantity": 2, "locationId": "DC"}}},
	}}), 2, 0)
	atpDC := func() supplyplan.ATPLine {
		t.Helper()
		var atp atpBody
		into(t, s.Do("GET", "/api/inventory/atp?skuId=X&locationId=DC", s.Key("VIEWER"), nil), 200, &atp)
		return atp.ATP[0]
	}
	start := func(order string) string {
		id := str(s.Run("POST", "/v1/instances", "loops:write", map[string]any{"loop": "supplyplan/orders", "businessKey": order,
			"input": map[string]any{"orderId": order}}).Must(t, 201), "id")
		s.Run("POST", "/v1/instances/"+id+"/transitions", "loops:write", map[string]any{"name": "confirm"}).Must(t, 200)
		s.Run("POST", "/v1/instances/"+id+"/transitions", "loops:write", map[string]any{"name": "allocate",
			"payload": map[string]any{"lines": []any{map[string]any{"sku": "X", "locationId": "DC", "quantity": 1}}}}).Must(t, 200)
		return id
	}
	effect := func(in map[string]any, kind string) map[string]any {
		t.Helper()
		effs := list(in, "effects")
		e := effs[len(effs)-1].(map[string]any)
		if str(e, "kind") != kind || str(e, "status") != "APPLIED" {
			t.Fatalf("last effect %v, want %s APPLIED", e, kind)
		}
		return e
	}
	order := func(id string) supplyplan.OrderView {
		t.Helper()
		var o orderBody
		into(t, s.Do("GET", "/api/orders/"+id, s.Key("VIEWER"), nil), 200, &o)
		return o.Order
	}
	ship, cancel := start("SO-S"), start("SO-C")
	if a := atpDC(); a.OnHand != 10 || a.Reserved != 5 || a.Available != 5 {
		t.Fatalf("ATP after both allocations %+v", a)
	}

	s.Run("POST", "/v1/instances/"+ship+"/transitions", "loops:write", map[string]any{"name": "pick"}).Must(t, 200)
	shipBody := map[string]any{"name": "ship", "payload": map[string]any{"carrier": "DHL", "trackingNumber": "1Z"}}
	got := s.Run("POST", "/v1/instances/"+ship+"/transitions", "loops:write", shipBody, "Idempotency-Key", "ship-so-s").Must(t, 200)
	if e := effect(got, "ORDER_SHIPMENT"); str(e, "result") != "SHIPPED" || str(e, "orderId") != "SO-S" {
		t.Fatalf("ship effect %v", e)
	}
	if h := onHand(t, s, "X", "DC"); h != 7 {
		t.Fatalf("on hand after the shipment %g, want 7", h)
	}
	if o := order("SO-S"); o.Status != "SHIPPED" || o.Allocation == nil || o.Allocation.Status != "SHIPPED" {
		t.Fatalf("shipped order %+v", o)
	}
	var res reservationsBody
	into(t, s.Do("GET", "/api/allocation/reservations?orderId=SO-S", s.Key("VIEWER"), nil), 200, &res)
	if res.Total != 1 || res.Reservations[0].Status != "RELEASED" || res.Reservations[0].ReleaseReason != "SHIPPED" {
		t.Fatalf("reservations of the shipped order %+v", res.Reservations)
	}
	// The same request again: its stored response, nothing applied twice.
	if r := s.Run("POST", "/v1/instances/"+ship+"/transitions", "loops:write", shipBody, "Idempotency-Key", "ship-so-s"); r.Status != 200 ||
		r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay = %d %v", r.Status, r.Header)
	}
	if a := atpDC(); a.OnHand != 7 || a.Reserved != 2 || a.Available != 5 {
		t.Fatalf("ATP after the shipment %+v", a)
	}

	// A graceful cancel runs the loop's cancel transition: the order's reservation is released.
	got = s.Run("POST", "/v1/instances/"+cancel+"/cancel", "loops:admin", map[string]any{"reason": "customer withdrew"}).Must(t, 200)
	if e := effect(got, "ORDER_CANCELLATION"); str(e, "result") != "RELEASED" {
		t.Fatalf("cancel effect %v", e)
	}
	if str(got, "status") != "CANCELED" || str(got, "state") != "cancelled" {
		t.Fatalf("cancelled instance %s/%s", str(got, "status"), str(got, "state"))
	}
	if o := order("SO-C"); o.Status != "CANCELLED" || o.Allocation == nil || o.Allocation.Status != "RELEASED" {
		t.Fatalf("cancelled order %+v", o)
	}
	if a := atpDC(); a.OnHand != 7 || a.Reserved != 0 || a.Available != 7 {
		t.Fatalf("ATP after the cancellation %+v", a)
	}

	s = s.Restart()
	if a := atpDC(); a.OnHand != 7 || a.Reserved != 0 || a.Available != 7 {
		t.Fatalf("ATP after a restart %+v", a)
	}
	for _, id := range []string{ship, cancel} {
		if v := s.Run("GET", "/v1/instances/"+id+"/audit/verify", "loops:read", nil).Must(t, 200); v["valid"] != true {
			t.Fatalf("verify %v", v)
		}
	}
}

// TestLoopRuntimeReturnsLoopRestocks: the returns loop's resolve puts its restock lines back on
// hand at their locations, once; an unknown product is refused before anything is recorded.
func TestLoopRuntimeReturnsLoopRestocks(t *testing.T) {
	s := startRuntime(t)
	seedAllocation(t, s)
	id := str(s.Run("POST", "/v1/instances", "loops:write", map[string]any{"loop": "supplyplan/returns", "businessKey": "RMA-1"}).Must(t, 201), "id")
	for _, tr := range []map[string]any{
		{"name": "authorize"},
		{"name": "receive", "payload": map[string]any{"locationId": "DC", "lines": []any{map[string]any{"sku": "X", "quantity": 3}}}},
		{"name": "inspect", "payload": map[string]any{"lines": []any{map[string]any{"sku": "X", "quantity": 3, "condition": "RESELLABLE"}}}},
	} {
		s.Run("POST", "/v1/instances/"+id+"/transitions", "loops:admin", tr).Must(t, 200)
	}
	if h := onHand(t, s, "X", "DC"); h != 10 {
		t.Fatalf("on hand before the restock %g (receiving a return is not a restock)", h)
	}
	bad := s.Run("POST", "/v1/instances/"+id+"/transitions", "loops:admin", map[string]any{"name": "resolve",
		"payload": map[string]any{"resolution": "REFUND", "restock": []any{map[string]any{"sku": "NOPE", "locationId": "DC", "quantity": 1}}}})
	if bad.Status != 400 || !strings.Contains(string(bad.Body), "payload.restock[0].sku") {
		t.Fatalf("unknown product = %d %s", bad.Status, bad.Body)
	}
	got := s.Run("POST", "/v1/instances/"+id+"/transitions", "loops:admin", map[string]any{"name": "resolve",
		"payload": map[string]any{"resolution": "REFUND", "restock": []any{map[string]any{"sku": "X", "locationId": "DC", "quantity": 2}}}}).Must(t, 200)
	effs := list(got, "effects")
	if len(effs) != 1 || str(effs[0].(map[string]any), "kind") != "STOCK_RECEIPT" || str(effs[0].(map[string]any), "status") != "APPLIED" {
		t.Fatalf("effects %v", effs)
	}
	if h := onHand(t, s, "X", "DC"); h != 12 {
		t.Fatalf("on hand after the restock %g, want 12", h)
	}
	s = s.Restart()
	if h := onHand(t, s, "X", "DC"); h != 12 {
		t.Fatalf("on hand after a restart %g, want 12", h)
	}
}
