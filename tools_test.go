package supplyplan_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/tooltest"
)

func names(defs []supplyplan.ToolDef) []string {
	out := []string{}
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

func fullDeps(now *time.Time) (*supplyplan.ToolDeps, *tooltest.Planning, *tooltest.Audit) {
	pl, au := tooltest.NewPlanning(), tooltest.NewAudit()
	c := &supplyplan.Confirmer{Secret: []byte("test-secret"), TTL: time.Minute}
	if now != nil {
		c.Now = func() time.Time { return *now }
	}
	return &supplyplan.ToolDeps{Catalog: tooltest.NewCatalog(), Forecasts: pl, Transfers: pl, Audit: au, Confirm: c}, pl, au
}

func TestToolSetFiltersByCapabilityAccessAndWiring(t *testing.T) {
	deps, _, _ := fullDeps(nil)
	key := supplyplan.ToolAccess{Principal: supplyplan.Principal{KeyID: "k", OrgID: "o"}}
	tests := []struct {
		name   string
		caps   []string
		access supplyplan.ToolAccess
		deps   *supplyplan.ToolDeps
		want   []string
	}{
		{"all capabilities with a key", supplyplan.AllCapabilities, key, deps, []string{"search_products", "get_product",
			"check_availability", "list_locations", "get_order_status", "get_demand_forecast", "list_transfer_recommendations",
			"explain_recommendation", "approve_transfer_recommendation"}},
		{"public access", supplyplan.AllCapabilities, supplyplan.ToolAccess{Public: true}, deps,
			[]string{"search_products", "get_product", "check_availability", "list_locations"}},
		{"inventory only", []string{supplyplan.CapInventory}, key, deps, []string{"check_availability", "list_locations"}},
		{"no capability", nil, key, deps, []string{}},
		{"planning unwired", supplyplan.AllCapabilities, key, &supplyplan.ToolDeps{Catalog: deps.Catalog},
			[]string{"search_products", "get_product", "check_availability", "list_locations", "get_order_status"}},
		{"nothing wired", supplyplan.AllCapabilities, key, &supplyplan.ToolDeps{}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			org := supplyplan.Organization{ID: "o", Slug: "o", Capabilities: tt.caps}
			got := names(supplyplan.NewToolSet(org, tt.access, tt.deps).Tools())
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func call(t *testing.T, ts supplyplan.ToolSet, name string, args any) supplyplan.ToolResult {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := ts.Call(context.Background(), name, b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func structured(t *testing.T, res supplyplan.ToolResult) map[string]any {
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
	ts := supplyplan.NewToolSet(org, supplyplan.ToolAccess{Principal: supplyplan.Principal{KeyID: "k", OrgID: "o"}}, deps)

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
	ts := supplyplan.NewToolSet(org, supplyplan.ToolAccess{Principal: supplyplan.Principal{KeyID: "k1", OrgID: "org_a"}}, deps)
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
	other := supplyplan.NewToolSet(supplyplan.Organization{ID: "org_b", Capabilities: supplyplan.AllCapabilities},
		supplyplan.ToolAccess{Principal: supplyplan.Principal{KeyID: "k2", OrgID: "org_b"}}, deps)
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

func merchant(slug, name string, cats []string, region string, caps ...string) supplyplan.Merchant {
	return supplyplan.Merchant{Org: supplyplan.Organization{ID: "org_" + slug, Slug: slug, Name: name, Capabilities: caps},
		Profile: supplyplan.MerchantProfile{Listed: true, DisplayName: name, Categories: cats, Region: region}}
}

func TestSearchMerchants(t *testing.T) {
	all := []supplyplan.Merchant{
		merchant("alpine", "Alpine Gear", []string{"outdoor"}, "EU", supplyplan.CapCatalog),
		merchant("bolt", "Bolt Bikes", []string{"bikes", "outdoor"}, "US", supplyplan.CapCatalog, supplyplan.CapInventory),
		merchant("coffee", "Coffee Corner", []string{"food"}, "EU", supplyplan.CapInventory),
		merchant("demo", "Demo Outfitters", []string{"outdoor"}, "EU", supplyplan.AllCapabilities...),
	}
	slugs := func(ms []supplyplan.Merchant) []string {
		out := []string{}
		for _, m := range ms {
			out = append(out, m.Org.Slug)
		}
		return out
	}
	tests := []struct {
		q    supplyplan.MerchantQuery
		want []string
	}{
		{supplyplan.MerchantQuery{}, []string{"alpine", "bolt", "coffee", "demo"}},
		{supplyplan.MerchantQuery{Query: "BIKES"}, []string{"bolt"}},
		{supplyplan.MerchantQuery{Category: "outdoor", Region: "eu"}, []string{"alpine", "demo"}},
		{supplyplan.MerchantQuery{Capability: supplyplan.CapInventory}, []string{"bolt", "coffee", "demo"}},
		{supplyplan.MerchantQuery{Query: "gear alpine"}, []string{"alpine"}},
	}
	for _, tt := range tests {
		got, _, err := supplyplan.SearchMerchants(all, tt.q)
		if err != nil || !slices.Equal(slugs(got), tt.want) {
			t.Errorf("%+v: got %v %v, want %v", tt.q, slugs(got), err, tt.want)
		}
	}
	// Pages of 3 then 1, stable.
	p1, next, _ := supplyplan.SearchMerchants(all, supplyplan.MerchantQuery{Limit: 3})
	p2, next2, err := supplyplan.SearchMerchants(all, supplyplan.MerchantQuery{Limit: 3, Cursor: next})
	if err != nil || len(p1) != 3 || next == "" || !slices.Equal(slugs(p2), []string{"demo"}) || next2 != "" {
		t.Fatalf("pages %v %v %q %q %v", slugs(p1), slugs(p2), next, next2, err)
	}
	if _, _, err := supplyplan.SearchMerchants(all, supplyplan.MerchantQuery{Cursor: "!!"}); supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
		t.Fatalf("bad cursor err = %v", err)
	}
}

func strp(s string) *string { return &s }

func TestMerchantProfileValidationAndOutbox(t *testing.T) {
	st := supplyplan.NewPlatformState()
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	o, recs, _ := st.CreateOrg(supplyplan.OrganizationInput{Name: strp("Acme"), Slug: strp("acme")}, now)
	for _, r := range recs {
		_ = st.Apply(r)
	}
	yes := true
	bad := []supplyplan.MerchantInput{
		{DisplayName: strp("x")},
		{Listed: &yes},
		{Listed: &yes, DisplayName: strp("x"), Website: strp("ftp://x")},
		{Listed: &yes, DisplayName: strp("x"), WebhookURL: strp("not a url")},
		{Listed: &yes, DisplayName: strp(strings.Repeat("x", 101))},
		{Listed: &yes, DisplayName: strp("x"), Categories: &[]string{""}},
	}
	for _, in := range bad {
		if _, _, err := st.SetMerchant(o.ID, in, now); supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
			t.Errorf("%+v: err = %v", in, err)
		}
	}
	in := supplyplan.MerchantInput{Listed: &yes, DisplayName: strp("Acme"), Categories: &[]string{"Outdoor", "outdoor"},
		WebhookURL: strp("https://hooks.example.com/sp")}
	p, recs, err := st.SetMerchant(o.ID, in, now)
	if err != nil || len(recs) != 2 || !slices.Equal(p.Categories, []string{"outdoor"}) {
		t.Fatalf("set = %+v %v %v", p, recs, err)
	}
	for _, r := range recs {
		_ = st.Apply(r)
	}
	out := st.PendingEventList()
	if len(out) != 1 || out[0].Type != supplyplan.EventMerchantUpdated || out[0].OrganizationID != supplyplan.PlatformOwner ||
		supplyplan.MerchantEventURL(out[0]) != "https://hooks.example.com/sp" {
		t.Fatalf("platform outbox = %+v", out)
	}
	// After a journal round trip the event's data is a generic map: the URL is still found.
	b, _ := json.Marshal(out[0])
	var back supplyplan.DomainEvent
	_ = json.Unmarshal(b, &back)
	if supplyplan.MerchantEventURL(back) != "https://hooks.example.com/sp" {
		t.Fatalf("decoded event = %+v", back)
	}
	// The same profile again: no write, no event.
	if _, recs, _ := st.SetMerchant(o.ID, in, now.Add(time.Hour)); len(recs) != 0 {
		t.Fatalf("unchanged profile wrote %v", recs)
	}
	if _, _, err := st.SetMerchant("org_nope", in, now); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("unknown org err = %v", err)
	}
}

func TestEnsureDemoMCPOnAnOldDataDir(t *testing.T) {
	st := supplyplan.NewPlatformState()
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	// A demo organization as the foundation created it: no capabilities, no profile, no tool key.
	o, recs, _ := st.CreateOrg(supplyplan.OrganizationInput{Name: strp("Demo"), Slug: strp(supplyplan.DemoSlug)}, now)
	for _, r := range recs {
		_ = st.Apply(r)
	}
	k, _, krecs, _ := st.CreateKey(o.ID, supplyplan.APIKeyInput{Role: strp("ADMIN")}, now)
	for _, r := range krecs {
		_ = st.Apply(r)
	}
	creds, recs := st.EnsureDemoMCP(now)
	if creds[supplyplan.CredDemoTool] == "" || len(recs) != 3 {
		t.Fatalf("ensure = %v %v", creds, recs)
	}
	for _, r := range recs {
		_ = st.Apply(r)
	}
	if p := st.Merchants[o.ID]; p == nil || !p.Listed {
		t.Fatal("no listed demo merchant")
	}
	if !slices.Equal(st.Orgs[o.ID].Capabilities, supplyplan.AllCapabilities) || st.Keys[k.ID].RevokedAt != nil {
		t.Fatal("capabilities not set or existing key touched")
	}
	if creds, recs := st.EnsureDemoMCP(now); len(creds) != 0 || len(recs) != 0 {
		t.Fatalf("second ensure = %v %v", creds, recs)
	}
}
