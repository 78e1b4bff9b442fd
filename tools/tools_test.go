package tools_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/tooltest"
	"github.com/supplyplan/supplyplan/tools"
)

func names(defs []tools.Def) []string {
	out := []string{}
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

func fullDeps(now *time.Time) (*tools.Deps, *tooltest.Planning, *tooltest.Audit) {
	pl, au := tooltest.NewPlanning(), tooltest.NewAudit()
	c := &tools.Confirmer{Secret: []byte("test-secret"), TTL: time.Minute}
	if now != nil {
		c.Now = func() time.Time { return *now }
	}
	return &tools.Deps{Catalog: tooltest.NewCatalog(), Forecasts: pl, Transfers: pl, Audit: au, Confirm: c}, pl, au
}

func TestToolSetFiltersByCapabilityAccessAndWiring(t *testing.T) {
	deps, _, _ := fullDeps(nil)
	key := tools.Access{Principal: supplyplan.Principal{KeyID: "k", OrgID: "o"}}
	tests := []struct {
		name   string
		caps   []string
		access tools.Access
		deps   *tools.Deps
		want   []string
	}{
		{"all capabilities with a key", supplyplan.AllCapabilities, key, deps, []string{"search_products", "get_product",
			"check_availability", "list_locations", "get_order_status", "get_demand_forecast", "list_transfer_recommendations",
			"explain_recommendation", "approve_transfer_recommendation"}},
		{"public access", supplyplan.AllCapabilities, tools.Access{Public: true}, deps,
			[]string{"search_products", "get_product", "check_availability", "list_locations"}},
		{"inventory only", []string{supplyplan.CapInventory}, key, deps, []string{"check_availability", "list_locations"}},
		{"no capability", nil, key, deps, []string{}},
		{"planning unwired", supplyplan.AllCapabilities, key, &tools.Deps{Catalog: deps.Catalog},
			[]string{"search_products", "get_product", "check_availability", "list_locations", "get_order_status"}},
		{"nothing wired", supplyplan.AllCapabilities, key, &tools.Deps{}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			org := supplyplan.Organization{ID: "o", Slug: "o", Capabilities: tt.caps}
			got := names(tools.NewSet(org, tt.access, tt.deps).Tools())
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func call(t *testing.T, ts tools.Set, name string, args any) tools.Result {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := ts.Call(context.Background(), name, b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func structured(t *testing.T, res tools.Result) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.Structured)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCommerceTools(t *testing.T) {
	deps, _, _ := fullDeps(nil)
	org := supplyplan.Organization{ID: "o", Slug: "o", Capabilities: supplyplan.AllCapabilities}
	ts := tools.NewSet(org, tools.Access{Principal: supplyplan.Principal{KeyID: "k", OrgID: "o"}}, deps)

	res := call(t, ts, "check_availability", map[string]any{"productId": "TENT-2P"})
	m := structured(t, res)
	if res.IsError || m["totalAvailable"].(float64) != 49 || m["totalAvailableToPromise"].(float64) != 55 {
		t.Fatalf("check_availability = %v %s", m, res.Text)
	}
	if !strings.Contains(res.Text, "STORE-BERLIN: 9 available (12 on hand, 3 reserved), 6 inbound, 15 available to promise") {
		t.Fatalf("text = %s", res.Text)
	}
	// Pagination of search_products: 3 products, 2 per page.
	first := structured(t, call(t, ts, "search_products", map[string]any{"limit": 2}))
	if len(first["products"].([]any)) != 2 || first["nextCursor"] == nil {
		t.Fatalf("page 1 = %v", first)
	}
	second := structured(t, call(t, ts, "search_products", map[string]any{"limit": 2, "cursor": first["nextCursor"]}))
	if len(second["products"].([]any)) != 1 || second["nextCursor"] != nil {
		t.Fatalf("page 2 = %v", second)
	}
	for _, tc := range []struct {
		tool string
		args any
		want string
	}{
		{"get_product", map[string]any{"productId": "NOPE"}, "Product not found"},
		{"get_product", map[string]any{}, "productId: is required"},
		{"get_product", map[string]any{"productId": 5}, "productId"},
		{"get_product", map[string]any{"productId": "TENT-2P", "extra": 1}, "extra: is not an argument"},
		{"search_products", map[string]any{"cursor": "bogus"}, "cursor"},
		{"check_availability", map[string]any{"productId": "NOPE"}, "Product not found"},
		{"get_order_status", map[string]any{"orderId": "X"}, "Order not found"},
	} {
		res := call(t, ts, tc.tool, tc.args)
		if !res.IsError || !strings.Contains(res.Text, tc.want) {
			t.Errorf("%s(%v) = %+v, want an error containing %q", tc.tool, tc.args, res, tc.want)
		}
	}
	if _, err := ts.Call(context.Background(), "nope", nil); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("unknown tool err = %v", err)
	}
}

func TestApproveConfirmationFlow(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	deps, planning, audit := fullDeps(&now)
	org := supplyplan.Organization{ID: "org_a", Slug: "a", Capabilities: supplyplan.AllCapabilities}
	ts := tools.NewSet(org, tools.Access{Principal: supplyplan.Principal{KeyID: "k1", OrgID: "org_a"}}, deps)
	const tool = "approve_transfer_recommendation"

	first := call(t, ts, tool, map[string]any{"recommendationId": "REC-1"})
	m := structured(t, first)
	token, _ := m["confirmationToken"].(string)
	if first.IsError || m["status"] != "confirmation_required" || token == "" {
		t.Fatalf("first call = %v %s", m, first.Text)
	}
	if planning.Approvals != 0 {
		t.Fatal("the first call must not act")
	}

	// Wrong arguments: the token is bound to REC-1.
	res := call(t, ts, tool, map[string]any{"recommendationId": "REC-2", "confirmationToken": token})
	if !res.IsError || !strings.Contains(res.Text, "different arguments") {
		t.Fatalf("wrong args = %+v", res)
	}
	// Another organization with the same token.
	other := tools.NewSet(supplyplan.Organization{ID: "org_b", Capabilities: supplyplan.AllCapabilities},
		tools.Access{Principal: supplyplan.Principal{KeyID: "k2", OrgID: "org_b"}}, deps)
	if res := call(t, other, tool, map[string]any{"recommendationId": "REC-1", "confirmationToken": token}); !res.IsError || !strings.Contains(res.Text, "another organization") {
		t.Fatalf("other org = %+v", res)
	}
	// A tampered token.
	if res := call(t, ts, tool, map[string]any{"recommendationId": "REC-1", "confirmationToken": token + "x"}); !res.IsError || !strings.Contains(res.Text, "not a valid") {
		t.Fatalf("tampered = %+v", res)
	}

	second := call(t, ts, tool, map[string]any{"recommendationId": "REC-1", "confirmationToken": token})
	m = structured(t, second)
	if second.IsError || m["status"] != "approved" || planning.Approvals != 1 {
		t.Fatalf("second call = %v %s", m, second.Text)
	}
	a := audit.Audits[m["auditId"].(string)]
	if a.Status != supplyplan.AuditSucceeded || a.Actor != "apikey:k1" || a.Tool != tool || a.OrganizationID != "org_a" {
		t.Fatalf("audit = %+v", a)
	}

	// Reuse of the token.
	if res := call(t, ts, tool, map[string]any{"recommendationId": "REC-1", "confirmationToken": token}); !res.IsError || !strings.Contains(res.Text, "already used") {
		t.Fatalf("reuse = %+v", res)
	}
	if planning.Approvals != 1 {
		t.Fatal("a reused token acted")
	}

	// Expiry.
	first = call(t, ts, tool, map[string]any{"recommendationId": "REC-2"})
	token = structured(t, first)["confirmationToken"].(string)
	now = now.Add(2 * time.Minute)
	if res := call(t, ts, tool, map[string]any{"recommendationId": "REC-2", "confirmationToken": token}); !res.IsError || !strings.Contains(res.Text, "expired") {
		t.Fatalf("expired = %+v", res)
	}
	// An already approved recommendation cannot start a confirmation.
	if res := call(t, ts, tool, map[string]any{"recommendationId": "REC-1"}); !res.IsError || !strings.Contains(res.Text, "APPROVED") {
		t.Fatalf("approved rec = %+v", res)
	}
}
