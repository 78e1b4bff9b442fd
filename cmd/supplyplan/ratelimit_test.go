package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/testdeps"
)

// tightLimits are limits a test reaches in a few requests: a key may make 2 reads and 2 writes at
// once and gets one more a second back (slow enough that a test's requests do not refill it); the
// organization 3 of each; 1 import.
func tightLimits(c *Config) {
	c.RateLimitRPS, c.RateLimitBurst = 0.01, 2
	c.RateLimitOrgRPS, c.RateLimitOrgBurst = 0.01, 3
	c.RateLimitImportRPS, c.RateLimitImportBurst = 0.01, 1
}

func wantRateLimited(t *testing.T, r resp, scope string) {
	t.Helper()
	if r.Status != 429 || r.Code() != supplyplan.ERATELIMITED {
		t.Fatalf("status %d %s, want 429 RATE_LIMITED", r.Status, r.Body)
	}
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	// One token comes back in 100 s at 0.01 per second.
	if err != nil || ra < 99 || ra > 100 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	b := r.JSON(t)
	d, _ := b["details"].(map[string]any)
	if b["error"] == "" || d == nil || !regexp.MustCompile(scope).MatchString(fmt.Sprint(d["rateLimit"])) {
		t.Fatalf("429 body %s, want details.rateLimit naming the %s", r.Body, scope)
	}
}

func TestRateLimitsPerKeyAndOrganization(t *testing.T) {
	s := MustStart(t, "", tightLimits)
	v := s.Key("VIEWER")
	// Reads: the key's bucket holds 2. Every answer says where the request stands.
	for i := range 2 {
		r := s.Do("GET", "/api/forecast/scenarios", v, nil)
		if r.Status != 200 {
			t.Fatalf("read %d: %d %s", i, r.Status, r.Body)
		}
		if got, want := r.Header.Get("RateLimit-Policy"), `"key-read";q=2;w=200, "org-read";q=3;w=300`; got != want {
			t.Fatalf("RateLimit-Policy %q, want %q", got, want)
		}
		if got, want := r.Header.Get("RateLimit"), fmt.Sprintf(`"key-read";r=%d;t=%d, "org-read";r=%d;t=%d`, 1-i, 100*(i+1), 2-i, 100*(i+1)); got != want {
			t.Fatalf("RateLimit %q, want %q", got, want)
		}
	}
	r := s.Do("GET", "/api/forecast/scenarios", v, nil)
	wantRateLimited(t, r, "key")
	if got := r.Header.Get("RateLimit"); got != `"key-read";r=0;t=200, "org-read";r=1;t=200` {
		t.Fatalf("RateLimit of the 429: %q (a refused request takes no token)", got)
	}
	// Writes have a bucket of their own: the key can still write.
	s.Do("POST", "/api/forecast/scenarios", s.Key("PLANNER"), map[string]any{"name": "w", "type": "PROMOTIONAL"}).Must(t, 201)
	// Another key of the organization reads once more: the organization's read bucket (3) is then
	// empty for every key.
	p := s.Key("PLANNER")
	s.Do("GET", "/api/forecast/scenarios", p, nil).Must(t, 200)
	wantRateLimited(t, s.Do("GET", "/api/forecast/scenarios", p, nil), "organization")
	// Imports are limited apart from reads: one import, then 429.
	imp := s.Key("import")
	doRequest(t, s.URL, "POST", "/api/import/catalog", map[string]string{"x-api-key": imp}, map[string]any{"products": []any{map[string]any{"externalId": "A"}}}).Must(t, 202)
	r = doRequest(t, s.URL, "POST", "/api/import/catalog", map[string]string{"x-api-key": imp}, map[string]any{"products": []any{map[string]any{"externalId": "B"}}})
	wantRateLimited(t, r, "key")
	if got := r.Header.Get("RateLimit-Policy"); got != `"key-import";q=1;w=100, "org-import";q=1;w=100` {
		t.Fatalf("import policy %q", got)
	}
	// Health and the platform key are not limited.
	for range 5 {
		s.Do("GET", "/health", "", nil).Must(t, 200)
		s.Do("GET", "/api/platform/organizations", s.Key("platform"), nil).Must(t, 200)
	}
}

// TestRateLimitsPerPlan: a plan's rateLimits in the plans file override the defaults for its
// organizations only.
func TestRateLimitsPerPlan(t *testing.T) {
	plans := filepath.Join(t.TempDir(), "plans.json")
	if err := os.WriteFile(plans, []byte(`{"downgradePlan":"free","plans":{
		"free":{"entitlements":[],"capabilities":[]},
		"metered":{"entitlements":["ai.forecasting.demand"],"capabilities":[],"rateLimits":{"rps":0.01,"burst":1}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := MustStart(t, "", func(c *Config) { c.PlansFile = plans })
	pk := s.Key("platform")
	id := str(s.Do("POST", "/api/platform/organizations", pk, map[string]any{"slug": "metered", "name": "Metered", "plan": "metered",
		"entitlements": []string{"ai.forecasting.demand"}}).Must(t, 201), "organization", "id")
	key := s.Do("POST", "/api/platform/organizations/"+id+"/api-keys", pk, map[string]any{"role": "VIEWER"}).Must(t, 201)["key"].(string)
	s.Do("GET", "/api/forecast/scenarios", key, nil).Must(t, 200)
	wantRateLimited(t, s.Do("GET", "/api/forecast/scenarios", key, nil), "key")
	// The demo organization (no plan) keeps the generous defaults.
	for range 20 {
		s.Do("GET", "/api/forecast/scenarios", s.Key("VIEWER"), nil).Must(t, 200)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, []byte(`{"downgradePlan":"free","plans":{"free":{"entitlements":[],"capabilities":[],"rateLimits":{"burst":-1}}}}`), 0o600)
	if _, err := supplyplan.ParsePlans(mustRead(t, bad)); err == nil || !regexp.MustCompile(`rateLimits\.burst`).MatchString(err.Error()) {
		t.Fatalf("negative burst: %v", err)
	}
}

// TestRateLimitsDefaultsDoNotThrottle: the defaults let a burst of requests through that is far
// beyond what the tests and the benchmark send one key.
func TestRateLimitsDefaultsDoNotThrottle(t *testing.T) {
	c := DefaultConfig()
	if c.RateLimitRPS < 50000 || c.RateLimitBurst < 100000 || c.RateLimitImportRPS < 50 || c.RateLimitImportBurst < 100 {
		t.Fatalf("defaults %+v are not generous", c)
	}
	s := MustStart(t, "")
	v := s.Key("VIEWER")
	for range 300 {
		s.Do("GET", "/api/forecast/scenarios", v, nil).Must(t, 200)
	}
}

// TestRateLimitsSharedThroughRedis: two nodes holding the same tenant draw from the same buckets
// in a real Redis, so the limit holds across them.
func TestRateLimitsSharedThroughRedis(t *testing.T) {
	addr := testdeps.Redis(t)
	prefix := "sptest:" + supplyplan.NewID("rl") + ":"
	dirA, dirB := t.TempDir(), t.TempDir()
	seed := MustStart(t, dirA)
	seed.Stop()
	copyDir(t, dirA, dirB)
	redis := func(c *Config) { c.RedisAddr, c.RedisPrefix = addr, prefix }
	a := MustStart(t, dirA, redis, tightLimits)
	b := MustStart(t, dirB, redis, tightLimits)
	v := a.Key("VIEWER")
	if v != b.Key("VIEWER") {
		t.Fatal("the nodes do not share the tenant")
	}
	a.Do("GET", "/api/forecast/scenarios", v, nil).Must(t, 200)
	b.Do("GET", "/api/forecast/scenarios", v, nil).Must(t, 200)
	// The key's two reads are spent across both nodes: the third, on either, is refused.
	wantRateLimited(t, a.Do("GET", "/api/forecast/scenarios", v, nil), "key")
	wantRateLimited(t, b.Do("GET", "/api/forecast/scenarios", v, nil), "key")
	// Writes are another bucket, shared too: two on one node, then none on the other.
	w := a.Key("PLANNER")
	body := map[string]any{"name": "w", "type": "PROMOTIONAL"}
	a.Do("POST", "/api/forecast/scenarios", w, body).Must(t, 201)
	a.Do("POST", "/api/forecast/scenarios", w, body).Must(t, 201)
	wantRateLimited(t, b.Do("POST", "/api/forecast/scenarios", w, body), "key")
}

// TestRateLimitHeadersOnlyNearTheLimit: far from its limits a response carries no RateLimit
// headers; once a bucket is half empty it does.
func TestRateLimitHeadersOnlyNearTheLimit(t *testing.T) {
	s := MustStart(t, "", func(c *Config) { c.RateLimitRPS, c.RateLimitBurst = 0.01, 4 })
	v := s.Key("VIEWER")
	if h := doRequest(t, s.URL, "GET", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer " + v}, nil); h.Header.Get("RateLimit") != "" {
		t.Fatalf("3 of 4 left: RateLimit %q", h.Header.Get("RateLimit"))
	}
	// The organization's bucket refills while the test runs: only its presence is checked.
	if h := doRequest(t, s.URL, "GET", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer " + v}, nil); !strings.HasPrefix(h.Header.Get("RateLimit"), `"key-read";r=2;t=200, "org-read";r=`) ||
		h.Header.Get("RateLimit-Policy") != `"key-read";q=4;w=400, "org-read";q=400000;w=2` {
		t.Fatalf("half empty: RateLimit %q, policy %q", h.Header.Get("RateLimit"), h.Header.Get("RateLimit-Policy"))
	}
	// A fresh key: nothing.
	if h := doRequest(t, s.URL, "GET", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer " + s.Key("ADMIN")}, nil); h.Header.Get("RateLimit") != "" || h.Header.Get("RateLimit-Policy") != "" {
		t.Fatalf("far from the limit: RateLimit %q", h.Header.Get("RateLimit"))
	}
}
