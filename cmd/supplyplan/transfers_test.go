package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// seedStock imports product P (price 10, cost 4) and its stock at DC (500, reorder point 20) and
// STORE (5, reorder point 30).
func seedStock(t *testing.T, s *testServer) {
	t.Helper()
	s.Import("catalog", map[string]any{"products": []any{map[string]any{"externalId": "P", "name": "Orange juice", "unitPrice": 10, "unitCost": 4}}})
	job := s.Import("inventory", map[string]any{"levels": []any{
		map[string]any{"skuId": "P", "locationId": "DC", "quantityOnHand": 500, "reorderPoint": 20, "binId": "A-1"},
		map[string]any{"skuId": "P", "locationId": "STORE", "quantityOnHand": 5, "reorderPoint": 30},
	}})
	checkCounts(t, job, 2, 0)
}

func level(t *testing.T, s *testServer, loc string) map[string]any {
	t.Helper()
	l := list(s.Do("GET", "/api/inventory/levels?skuId=P&locationId="+loc, s.Key("VIEWER"), nil).Must(t, 200), "levels")
	if len(l) != 1 {
		t.Fatalf("levels of P at %s: %v", loc, l)
	}
	return l[0].(map[string]any)
}

func TestRecommendationWorkflowAndStock(t *testing.T) {
	s := MustStart(t, "")
	seedStock(t, s)
	planner, manager, viewer := s.Key("PLANNER"), s.Key("MANAGER"), s.Key("VIEWER")

	if r := s.Do("POST", "/api/transfers/recommendations", viewer, map[string]any{}); r.Status != 403 {
		t.Fatalf("viewer generates: %d", r.Status)
	}
	gen := s.Do("POST", "/api/transfers/recommendations", planner, map[string]any{"unitMargin": 6}).Must(t, 200)
	if gen["success"] != true || num(gen, "created") != 1 {
		t.Fatalf("generate = %v", gen)
	}
	rec := list(gen, "recommendations")[0].(map[string]any)
	id := rec["id"].(string)
	if rec["sourceLocationId"] != "DC" || rec["destLocationId"] != "STORE" || rec["quantity"] != 25.0 || rec["status"] != "PENDING" ||
		rec["productMasterId"] != "P" || !strings.Contains(rec["reason"].(string), "STORE") || rec["explanation"] == nil {
		t.Fatalf("recommendation = %v", rec)
	}
	// Generation is idempotent while the recommendation is pending.
	again := s.Do("POST", "/api/transfers/recommendations", planner, nil).Must(t, 200)
	if num(again, "created") != 0 || num(s.Do("GET", "/api/transfers/recommendations", viewer, nil).Must(t, 200), "total") != 1 {
		t.Fatalf("second generate = %v", again)
	}
	pending := s.Do("GET", "/api/transfers/recommendations/pending", viewer, nil).Must(t, 200)
	if num(pending, "total") != 1 {
		t.Fatalf("pending = %v", pending)
	}

	if r := s.Do("POST", "/api/transfers/recommendations/"+id+"/approve", planner, nil); r.Status != 403 {
		t.Fatalf("planner approves: %d", r.Status)
	}
	if r := s.Do("POST", "/api/transfers/recommendations/"+id+"/execute", manager, nil); r.Status != 409 {
		t.Fatalf("execute before approve: %d %s", r.Status, r.Body)
	}
	ap := s.Do("POST", "/api/transfers/recommendations/"+id+"/approve", manager, map[string]any{"comment": "go"}).Must(t, 200)
	if ap["success"] != true || str(ap, "recommendation", "status") != "APPROVED" || str(ap, "recommendation", "approvedBy") == "" || str(ap, "recommendation", "approvedAt") == "" {
		t.Fatalf("approve = %v", ap)
	}
	if r := s.Do("POST", "/api/transfers/recommendations/"+id+"/approve", manager, nil); r.Status != 409 || r.Code() != "INVALID_STATE_TRANSITION" {
		t.Fatalf("approve twice: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", "/api/transfers/recommendations/"+id+"/execute", planner, nil); r.Status != 403 {
		t.Fatalf("planner executes: %d", r.Status)
	}
	ex := s.Do("POST", "/api/transfers/recommendations/"+id+"/execute", manager, nil).Must(t, 200)
	trf := ex["transfer"].(map[string]any)
	if str(ex, "recommendation", "status") != "EXECUTED" || str(ex, "recommendation", "executedAt") == "" || trf["status"] != "DRAFT" ||
		trf["quantity"] != 25.0 || trf["recommendationId"] != id {
		t.Fatalf("execute = %v", ex)
	}
	// The quantity left the source's available stock (reserved), not yet its shelf.
	if dc := level(t, s, "DC"); dc["quantityOnHand"] != 500.0 || dc["quantityReserved"] != 25.0 {
		t.Fatalf("DC after execute = %v", dc)
	}
	if r := s.Do("POST", "/api/transfers/recommendations/"+id+"/reject", manager, nil); r.Status != 409 {
		t.Fatalf("reject executed: %d", r.Status)
	}
	tid := trf["id"].(string)
	if r := s.Do("POST", "/api/inventory/transfers/"+tid, planner, map[string]any{"status": "RECEIVED"}); r.Status != 409 {
		t.Fatalf("DRAFT -> RECEIVED: %d %s", r.Status, r.Body)
	}
	shipped := s.Do("POST", "/api/inventory/transfers/"+tid, planner, map[string]any{"status": "IN_TRANSIT"}).Must(t, 200)["transfer"].(map[string]any)
	if picks := shipped["picks"].([]any); len(picks) != 1 || picks[0].(map[string]any)["binId"] != "A-1" {
		t.Fatalf("picks = %v", shipped["picks"])
	}
	if dc := level(t, s, "DC"); dc["quantityOnHand"] != 475.0 || dc["quantityReserved"] != 0.0 {
		t.Fatalf("DC in transit = %v", dc)
	}
	if st := level(t, s, "STORE"); st["quantityOnHand"] != 5.0 {
		t.Fatalf("STORE before receipt = %v", st)
	}
	s.Do("POST", "/api/inventory/transfers/"+tid, planner, map[string]any{"status": "RECEIVED"}).Must(t, 200)
	if st := level(t, s, "STORE"); st["quantityOnHand"] != 30.0 {
		t.Fatalf("STORE after receipt = %v", st)
	}
	for _, next := range []string{"CANCELLED", "IN_TRANSIT", "DRAFT"} {
		if r := s.Do("POST", "/api/inventory/transfers/"+tid, planner, map[string]any{"status": next}); r.Status != 409 {
			t.Errorf("RECEIVED -> %s: %d", next, r.Status)
		}
	}
	// The situation is fixed: nothing more to propose.
	if g := s.Do("POST", "/api/transfers/recommendations", planner, nil).Must(t, 200); num(g, "created") != 0 {
		t.Fatalf("after receipt: %v", g)
	}
	// Durable across restart.
	s2 := s.Restart()
	if st := level(t, s2, "STORE"); st["quantityOnHand"] != 30.0 {
		t.Fatalf("STORE after restart = %v", st)
	}
	got := s2.Do("GET", "/api/transfers/recommendations/"+id, viewer, nil).Must(t, 200)
	if str(got, "recommendation", "status") != "EXECUTED" || str(got, "recommendation", "transferId") != tid {
		t.Fatalf("after restart = %v", got)
	}
	if tr := s2.Do("GET", "/api/inventory/transfers/"+tid, viewer, nil).Must(t, 200); str(tr, "transfer", "status") != "RECEIVED" {
		t.Fatalf("transfer after restart = %v", tr)
	}
}

func TestRejectAndCancelPaths(t *testing.T) {
	s := MustStart(t, "")
	seedStock(t, s)
	admin := s.Key("ADMIN")
	id := list(s.Do("POST", "/api/transfers/recommendations", admin, nil).Must(t, 200), "recommendations")[0].(map[string]any)["id"].(string)
	rj := s.Do("POST", "/api/transfers/recommendations/"+id+"/reject", admin, map[string]any{"comment": "not now"}).Must(t, 200)
	r := rj["recommendation"].(map[string]any)
	if rj["success"] != true || r["status"] != "REJECTED" || r["rejectedAt"] == nil || r["rejectedBy"] == "" || r["comment"] != "not now" || len(r) != 5 {
		t.Fatalf("reject = %v", rj)
	}
	// Rejected moves are not proposed again for 14 days while the situation is unchanged.
	if g := s.Do("POST", "/api/transfers/recommendations", admin, nil).Must(t, 200); num(g, "created") != 0 || num(g, "skippedRecentlyRejected") != 1 {
		t.Fatalf("after reject: %v", g)
	}
	for _, action := range []string{"approve", "execute", "reject"} {
		if r := s.Do("POST", "/api/transfers/recommendations/"+id+"/"+action, admin, nil); r.Status != 409 {
			t.Errorf("%s rejected: %d", action, r.Status)
		}
	}
	// Manual transfers: DRAFT reserves, cancel releases; IN_TRANSIT cancel returns the stock.
	mk := func(q float64) string {
		return str(s.Do("POST", "/api/inventory/transfers", admin, map[string]any{"productMasterId": "P", "sourceLocationId": "DC",
			"destLocationId": "STORE", "quantity": q, "notes": "manual"}).Must(t, 201), "transfer", "id")
	}
	a := mk(100)
	if dc := level(t, s, "DC"); dc["quantityReserved"] != 100.0 {
		t.Fatalf("draft reservation: %v", dc)
	}
	s.Do("POST", "/api/inventory/transfers/"+a, admin, map[string]any{"status": "CANCELLED"}).Must(t, 200)
	if dc := level(t, s, "DC"); dc["quantityReserved"] != 0.0 || dc["quantityOnHand"] != 500.0 {
		t.Fatalf("after draft cancel: %v", dc)
	}
	b := mk(50)
	s.Do("POST", "/api/inventory/transfers/"+b, admin, map[string]any{"status": "IN_TRANSIT"}).Must(t, 200)
	if dc := level(t, s, "DC"); dc["quantityOnHand"] != 450.0 {
		t.Fatalf("in transit: %v", dc)
	}
	s.Do("POST", "/api/inventory/transfers/"+b, admin, map[string]any{"status": "CANCELLED"}).Must(t, 200)
	if dc := level(t, s, "DC"); dc["quantityOnHand"] != 500.0 || dc["quantityReserved"] != 0.0 {
		t.Fatalf("after in-transit cancel: %v", dc)
	}
	bins := s.Do("GET", "/api/inventory/transfers/bins?locationId=DC", admin, nil).Must(t, 200)
	bl := list(bins, "bins")
	if len(bl) != 1 || bl[0].(map[string]any)["binId"] != "A-1" || bl[0].(map[string]any)["totalQuantity"] != 500.0 {
		t.Fatalf("DC bins = %v", bins)
	}
	store := list(s.Do("GET", "/api/inventory/transfers/bins?locationId=STORE", admin, nil).Must(t, 200), "bins")
	if len(store) != 1 || store[0].(map[string]any)["binId"] != "DEFAULT" {
		t.Fatalf("STORE bins = %v", store)
	}
	for _, bad := range []map[string]any{
		{"productMasterId": "P", "sourceLocationId": "DC", "destLocationId": "STORE", "quantity": 100000},
		{"productMasterId": "P", "sourceLocationId": "DC", "destLocationId": "DC", "quantity": 1},
		{"productMasterId": "NOPE", "sourceLocationId": "DC", "destLocationId": "STORE", "quantity": 1},
		{"productMasterId": "P", "sourceLocationId": "DC", "destLocationId": "STORE", "quantity": -1},
		{"productMasterId": "P", "sourceLocationId": "DC", "destLocationId": "STORE"},
	} {
		if r := s.Do("POST", "/api/inventory/transfers", admin, bad); r.Status != 400 {
			t.Errorf("create %v: %d %s", bad, r.Status, r.Body)
		}
	}
	if r := s.Do("GET", "/api/inventory/transfers/bins", admin, nil); r.Status != 400 {
		t.Errorf("bins without location: %d", r.Status)
	}
	l := s.Do("GET", "/api/inventory/transfers?status=CANCELLED&sourceLocationId=DC", admin, nil).Must(t, 200)
	if num(l, "total") != 2 {
		t.Fatalf("cancelled transfers = %v", l)
	}
}

func TestRecommendationListingAndLimits(t *testing.T) {
	s := MustStart(t, "")
	s.Import("catalog", map[string]any{"products": []any{map[string]any{"externalId": "A"}, map[string]any{"externalId": "B"}}})
	var levels []any
	for _, p := range []string{"A", "B"} {
		levels = append(levels, map[string]any{"skuId": p, "locationId": "DC", "quantityOnHand": 1000, "reorderPoint": 10},
			map[string]any{"skuId": p, "locationId": "S1", "quantityOnHand": 0, "reorderPoint": 40},
			map[string]any{"skuId": p, "locationId": "S2", "quantityOnHand": 0, "reorderPoint": 40})
	}
	s.Import("inventory", map[string]any{"levels": levels})
	k := s.Key("ADMIN")
	if g := s.Do("POST", "/api/transfers/recommendations", k, map[string]any{"productMasterId": "A", "locationId": "S1"}).Must(t, 200); num(g, "created") != 1 {
		t.Fatalf("filtered generate = %v", g)
	}
	if g := s.Do("POST", "/api/transfers/recommendations", k, nil).Must(t, 200); num(g, "created") != 3 {
		t.Fatalf("full generate = %v", g)
	}
	count := func(q string) float64 {
		return num(s.Do("GET", "/api/transfers/recommendations"+q, k, nil).Must(t, 200), "total")
	}
	for q, want := range map[string]float64{"": 4, "?productMasterId=A": 2, "?destLocationId=S2": 2, "?sourceLocationId=DC": 4,
		"?status=PENDING": 4, "?status=APPROVED": 0, "?priority=LOW": 4, "?validOnly=true": 4} {
		if got := count(q); got != want {
			t.Errorf("list%s total = %v, want %v", q, got, want)
		}
	}
	page := s.Do("GET", "/api/transfers/recommendations?limit=3&offset=2", k, nil).Must(t, 200)
	if len(list(page, "recommendations")) != 2 || num(page, "limit") != 3 || num(page, "offset") != 2 {
		t.Fatalf("page = %v", page)
	}
	if d := s.Do("GET", "/api/transfers/recommendations", k, nil).Must(t, 200); num(d, "limit") != 50 || num(d, "offset") != 0 {
		t.Fatalf("defaults = %v", d)
	}
	for _, q := range []string{"?limit=101", "?limit=0", "?offset=-1", "?status=DONE", "?priority=NOW", "?validOnly=maybe"} {
		if r := s.Do("GET", "/api/transfers/recommendations"+q, k, nil); r.Status != 400 {
			t.Errorf("%s: %d", q, r.Status)
		}
	}
	s.Do("GET", "/api/transfers/recommendations?limit=100", k, nil).Must(t, 200)
	for _, body := range []map[string]any{{"minStockDifferencePct": 1.5}, {"unitMargin": 0}, {"unitMargin": -2}, {"requirePositiveROI": "yes"}, {"productMasterId": "NOPE"}} {
		if r := s.Do("POST", "/api/transfers/recommendations", k, body); r.Status != 400 {
			t.Errorf("generate %v: %d %s", body, r.Status, r.Body)
		}
	}
	// Isolation: another tenant sees none of it.
	p := s.Key("platform")
	org := str(s.Do("POST", "/api/platform/organizations", p, map[string]any{"name": "B", "slug": "b"}).Must(t, 201), "organization", "id")
	b := s.Do("POST", "/api/platform/organizations/"+org+"/api-keys", p, map[string]any{"role": "ADMIN"}).Must(t, 201)["key"].(string)
	any1 := list(s.Do("GET", "/api/transfers/recommendations", k, nil).Must(t, 200), "recommendations")[0].(map[string]any)["id"].(string)
	if n := num(s.Do("GET", "/api/transfers/recommendations", b, nil).Must(t, 200), "total"); n != 0 {
		t.Errorf("org B lists %v recommendations", n)
	}
	for _, path := range []string{"", "/approve", "/reject", "/execute"} {
		method := "POST"
		if path == "" {
			method = "GET"
		}
		if r := s.Do(method, "/api/transfers/recommendations/"+any1+path, b, nil); r.Status != 404 {
			t.Errorf("org B %s %s: %d", method, path, r.Status)
		}
	}
}

func TestRecommendationExpiry(t *testing.T) {
	s := MustStart(t, "", func(c *Config) { c.RecommendationExpiry = 500 * time.Millisecond })
	seedStock(t, s)
	k := s.Key("ADMIN")
	id := list(s.Do("POST", "/api/transfers/recommendations", k, nil).Must(t, 200), "recommendations")[0].(map[string]any)["id"].(string)
	eventually(t, 10*time.Second, func() error {
		got := s.Do("GET", "/api/transfers/recommendations/"+id, k, nil).Must(t, 200)
		if st := str(got, "recommendation", "status"); st != "EXPIRED" {
			return fmt.Errorf("status %s", st)
		}
		return nil
	})
	if r := s.Do("POST", "/api/transfers/recommendations/"+id+"/approve", k, nil); r.Status != 409 {
		t.Fatalf("approve expired: %d", r.Status)
	}
	if n := num(s.Do("GET", "/api/transfers/recommendations?validOnly=true", k, nil).Must(t, 200), "total"); n != 0 {
		t.Fatalf("validOnly lists expired: %v", n)
	}
	// An expired recommendation does not block a new one for the same move.
	if g := s.Do("POST", "/api/transfers/recommendations", k, nil).Must(t, 200); num(g, "created") != 1 {
		t.Fatalf("after expiry: %v", g)
	}
}
