package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

const testLoopManifest = `{"name": %q, "version": %q, "domain": "PROCUREMENT",
 "states": ["draft", "submitted", "approved", "cancelled"], "initial": "draft", "terminal": ["approved", "cancelled"],
 "transitions": [{"name": "submit", "from": ["draft"], "to": "submitted"},
                 {"name": "approve", "from": ["submitted"], "to": "approved"},
                 {"name": "cancel", "from": ["draft", "submitted"], "to": "cancelled"}]}`

func testManifest(name, version string) []byte {
	return []byte(fmt.Sprintf(testLoopManifest, name, version))
}

func mustSigner(t testing.TB) *supplyplan.LoopSigner {
	t.Helper()
	key, err := supplyplan.GenerateLoopSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := supplyplan.NewLoopSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openLoopCatalog builds the catalog service on s's core and opens it (publishing the built-ins).
func openLoopCatalog(t testing.TB, s *services, cfg LoopCatalogConfig) *LoopCatalog {
	t.Helper()
	c := NewLoopCatalog(s.core, cfg)
	if err := c.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

type referencedBy struct{ digests map[string]bool }

func (r referencedBy) LoopVersionReferenced(v supplyplan.LoopVersion) bool {
	return r.digests[v.Digest]
}

func TestLoopCatalogServiceScopesAndDurability(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newServices(t, options{dir: dir})
	p := s.bootstrap(t)
	demoOrg, _ := s.platform.Organization(p.OrgID)
	beta, err := s.platform.CreateOrganization(ctx, supplyplan.OrganizationInput{Name: ptrTo("Beta"), Slug: ptrTo("beta")})
	if err != nil {
		t.Fatal(err)
	}
	signer := mustSigner(t)
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	refs := referencedBy{digests: map[string]bool{}}
	cfg := LoopCatalogConfig{Signer: signer, References: refs, Now: func() time.Time { return time.Unix(0, now.Load()) }}
	cat := openLoopCatalog(t, s, cfg)

	demo := supplyplan.LoopCallerOf(p, demoOrg)
	betaAdmin := supplyplan.LoopCaller{OrgID: beta.ID, OrgSlug: "beta", Role: supplyplan.RoleAdmin, KeyID: "key_b"}

	res, err := cat.PublishLoop(ctx, demo, "demo/restock", "1.0.0", testManifest("demo/restock", "1.0.0"))
	if err != nil || !res.Created || res.Version.Publisher != "apikey:test" {
		t.Fatalf("publish = %+v, %v", res, err)
	}
	if again, err := cat.PublishLoop(ctx, demo, "demo/restock", "1.0.0", testManifest("demo/restock", "1.0.0")); err != nil || again.Created {
		t.Fatalf("republish = %+v, %v", again, err)
	}
	if _, err := cat.PublishLoop(ctx, demo, "demo/restock", "1.1.0", testManifest("demo/restock", "1.1.0")); err != nil {
		t.Fatal(err)
	}

	// Beta sees neither demo's loop nor its blob; its listing is its own loops and the global ones.
	if _, err := cat.GetLoop(ctx, betaAdmin, "demo/restock"); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("beta reads demo's loop: %v", err)
	}
	if _, _, err := cat.LoopBlob(ctx, betaAdmin, res.Version.Digest); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("beta reads demo's blob: %v", err)
	}
	if _, _, err := cat.LoopBlob(ctx, demo, res.Version.Digest); err != nil {
		t.Fatalf("demo reads its blob: %v", err)
	}
	page, err := cat.ListLoops(ctx, betaAdmin, supplyplan.LoopFilter{})
	if err != nil || page.Total != 4 {
		t.Fatalf("beta's listing = %+v, %v (want the 4 built-in loops)", page, err)
	}
	if page, _ := cat.ListLoops(ctx, demo, supplyplan.LoopFilter{}); page.Total != 5 {
		t.Fatalf("demo's listing has %d loops, want 5", page.Total)
	}

	// The runtime's references and the removal window guard deletion.
	refs.digests[res.Version.Digest] = true
	if _, err := cat.RemoveLoopVersion(ctx, demo, "demo/restock", "1.0.0"); supplyplan.ErrorCode(err) != supplyplan.ECONFLICT {
		t.Fatalf("removing a referenced version: %v", err)
	}
	delete(refs.digests, res.Version.Digest)
	now.Add(int64(73 * time.Hour))
	if _, err := cat.RemoveLoopVersion(ctx, demo, "demo/restock", "1.0.0"); supplyplan.ErrorCode(err) != supplyplan.ECONFLICT {
		t.Fatalf("removing after 72 hours: %v", err)
	}
	if _, err := cat.YankLoopVersion(ctx, demo, "demo/restock", "1.1.0", "bad"); err != nil {
		t.Fatal(err)
	}

	// A restart (final snapshot on close, then a load) keeps every acknowledged change and does
	// not publish the built-in loops again.
	builtinAudit, err := cat.LoopAudit(ctx, demo, "supplyplan/procurement", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.close(t)
	s2 := newServices(t, options{dir: dir})
	cat2 := openLoopCatalog(t, s2, cfg)
	r, err := cat2.ResolveLoop(ctx, demo, "demo/restock", "^1", false)
	if err != nil || r.Version != "1.0.0" || r.Digest != res.Version.Digest {
		t.Fatalf("resolve after restart = %+v, %v", r, err)
	}
	if v, err := cat2.GetLoopVersion(ctx, demo, "demo/restock", "1.1.0"); err != nil || v.State != supplyplan.LoopYanked {
		t.Fatalf("yanked version after restart = %+v, %v", v, err)
	}
	after, _ := cat2.LoopAudit(ctx, demo, "supplyplan/procurement", 0, 0)
	a, _ := json.Marshal(builtinAudit)
	b, _ := json.Marshal(after)
	if string(a) != string(b) {
		t.Fatalf("built-in audit changed over a restart:\n%s\n%s", a, b)
	}
	if keys := cat2.LoopKeys(); len(keys.Keys) != 1 || keys.Keys[0].Kid != signer.KeyID() {
		t.Fatalf("keys = %+v", keys)
	}
}

func TestLoopCatalogNeedsASigner(t *testing.T) {
	s := newServices(t, options{})
	if err := NewLoopCatalog(s.core, LoopCatalogConfig{}).Open(context.Background()); err == nil {
		t.Fatal("a catalog without a signing key opened")
	}
}
