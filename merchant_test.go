package supplyplan_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

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
