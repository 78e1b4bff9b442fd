package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// The loop catalog through its HTTP listener: every route, roles, isolation between
// organizations, publish idempotency and conflicts, canonical digests, resolution with yank and
// deprecate, blobs and their caching headers, the built-in loops, restarts and key rotation, and
// `supplyplan loop verify`.

// issueManifest is issue 13's example manifest.
const issueManifest = `{"name": "acme/restock", "version": "1.0.0", "domain": "PROCUREMENT", "description": "Restock a location",
 "states": ["draft", "submitted", "approved", "cancelled"], "initial": "draft",
 "terminal": ["approved", "cancelled"],
 "transitions": [{"name": "submit", "from": ["draft"], "to": "submitted", "roles": ["PLANNER", "ADMIN"],
                  "input": {"type": "object", "properties": {"note": {"type": "string"}}}},
                 {"name": "approve", "from": ["submitted"], "to": "approved"},
                 {"name": "cancel", "from": ["draft", "submitted"], "to": "cancelled"}],
 "timeouts": [{"state": "submitted", "after": "PT48H", "transition": "cancel"}]}`

// reorderedDemoManifest is loopManifest("demo/restock", "1.0.0", nil) with other member order,
// other whitespace and an escaped character: the same content.
const reorderedDemoManifest = `{
  "transitions": [
    {"to": "submitted", "from": ["draft"], "name": "submit", "roles": ["PLANNER", "ADMIN"],
     "input": {"properties": {"note": {"type": "string"}}, "type": "object"}},
    {"to": "approved", "name": "approve", "from": ["submitted"]},
    {"from": ["draft", "submitted"], "to": "cancelled", "name": "cancel"}
  ],
  "timeouts": [ { "transition": "cancel", "after": "PT48H", "state": "submitted" } ],
  "terminal": ["approved", "cancelled"],  "initial": "draft",
  "states": ["draft", "submitted", "approved", "cancelled"],
  "description": "Restock a \u006cocation", "domain": "PROCUREMENT",
  "version": "1.0.0", "name": "demo/restock"
}
`

// loopManifest is the issue's manifest named name@version, with edit applied.
func loopManifest(tb testing.TB, name, version string, edit func(m map[string]any)) []byte {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(issueManifest), &m); err != nil {
		tb.Fatal(err)
	}
	m["name"], m["version"] = name, version
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// catalogURL is the loop catalog listener of a test server.
func catalogURL(s *testServer) string { return "http://" + s.Main.Loops.Addr() }

// Loops sends a request to the loop catalog listener with a bearer key.
func (s *testServer) Loops(method, path, key string, body any) resp {
	s.t.Helper()
	return doRequest(s.t, catalogURL(s), method, path, map[string]string{"Authorization": bearerOf(key)}, body)
}

// publishLoop publishes name@version with the issue's manifest (edited) and wants status.
func (s *testServer) publishLoop(key, name, version string, edit func(map[string]any), status int) map[string]any {
	s.t.Helper()
	return s.Loops("PUT", "/v1/loops/"+name+"/versions/"+version, key, loopManifest(s.t, name, version, edit)).Must(s.t, status)
}

// wantError checks an error response's status and code.
func (r resp) wantError(tb testing.TB, status int, code string) map[string]any {
	tb.Helper()
	if r.Status != status || r.Code() != code {
		tb.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
	return r.JSON(tb)
}

func canonicalDigest(tb testing.TB, manifest []byte) string {
	tb.Helper()
	c, err := supplyplan.CanonicalJSON(manifest)
	if err != nil {
		tb.Fatal(err)
	}
	return supplyplan.LoopDigest(c)
}

func loopNames(tb testing.TB, r resp) []string {
	tb.Helper()
	var names []string
	for _, x := range list(r.Must(tb, 200), "loops") {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	return names
}

func TestLoopCatalogPublish(t *testing.T) {
	s := MustStart(t, "")
	admin := s.Key("ADMIN")
	path := "/v1/loops/demo/restock/versions/1.0.0"
	m := loopManifest(t, "demo/restock", "1.0.0", nil)

	r := s.Loops("PUT", path, admin, m)
	v := r.Must(t, 201)
	if got := r.Header.Get("Location"); got != path {
		t.Errorf("Location = %q, want %q", got, path)
	}
	digest := canonicalDigest(t, m)
	if v["digest"] != digest || v["state"] != "PUBLISHED" || v["name"] != "demo/restock" || v["version"] != "1.0.0" ||
		!strings.HasPrefix(str(v, "integrity"), "sha512-") || len(list(v, "signatures")) != 1 || v["publisher"] == "" {
		t.Fatalf("published version = %v (want digest %s)", v, digest)
	}

	// The same content again is 200 and changes nothing, also reformatted with other key order.
	if again := s.Loops("PUT", path, admin, m).Must(t, 200); again["digest"] != digest || again["publishedAt"] != v["publishedAt"] {
		t.Fatalf("republish = %v", again)
	}
	if re := s.Loops("PUT", path, admin, reorderedDemoManifest).Must(t, 200); re["digest"] != digest {
		t.Fatalf("reordered manifest digest %v, want %s", re["digest"], digest)
	}
	// Other content under the same version is 409 VERSION_EXISTS, also through build metadata.
	other := loopManifest(t, "demo/restock", "1.0.0", func(m map[string]any) { m["description"] = "changed" })
	s.Loops("PUT", path, admin, other).wantError(t, 409, "VERSION_EXISTS")
	s.Loops("PUT", path+"+build.7", admin, loopManifest(t, "demo/restock", "1.0.0+build.7", nil)).wantError(t, 409, "VERSION_EXISTS")

	// Only ADMIN publishes; every role reads.
	for _, role := range []string{"MANAGER", "PLANNER", "VIEWER"} {
		k := s.Key(role)
		s.Loops("PUT", "/v1/loops/demo/restock/versions/1.0.1", k, loopManifest(t, "demo/restock", "1.0.1", nil)).wantError(t, 403, "FORBIDDEN")
		s.Loops("GET", "/v1/loops/demo/restock", k, nil).Must(t, 200)
		s.Loops("GET", path, k, nil).Must(t, 200)
		s.Loops("GET", "/v1/loops/demo/restock/resolve?range=%5E1", k, nil).Must(t, 200)
		s.Loops("GET", "/v1/loops/demo/restock/dist-tags", k, nil).Must(t, 200)
		s.Loops("GET", "/v1/loops/demo/restock/audit", k, nil).Must(t, 200)
		s.Loops("GET", "/v1/blobs/"+digest, k, nil).Must(t, 200)
		if names := loopNames(t, s.Loops("GET", "/v1/loops", k, nil)); !slices.Contains(names, "demo/restock") {
			t.Errorf("%s lists %v", role, names)
		}
	}
	s.Loops("GET", "/v1/loops", s.Key("import"), nil).wantError(t, 403, "FORBIDDEN")
	if r := s.Loops("GET", "/v1/loops", "", nil); r.Status != 401 || !strings.Contains(string(r.Body), "KEY_MISSING") {
		t.Fatalf("no key: %d %s", r.Status, r.Body)
	}
	s.Loops("GET", "/v1/loops", "sp_admin_doesnotexist", nil).wantError(t, 401, "UNAUTHORIZED")

	// Bad manifests: 400 naming the manifest path, the name or the version; too large is 413.
	bad := loopManifest(t, "demo/restock", "1.1.0", func(m map[string]any) {
		m["transitions"].([]any)[2].(map[string]any)["from"] = []any{"drafted"}
	})
	e := s.Loops("PUT", "/v1/loops/demo/restock/versions/1.1.0", admin, bad).wantError(t, 400, "VALIDATION_ERROR")
	if _, ok := e["details"].(map[string]any)["transitions[2].from[0]"]; !ok {
		t.Errorf("unknown state not named by its path: %v", e)
	}
	e = s.Loops("PUT", "/v1/loops/demo/other/versions/1.0.0", admin, m).wantError(t, 400, "VALIDATION_ERROR")
	if _, ok := e["details"].(map[string]any)["name"]; !ok {
		t.Errorf("name mismatch not named: %v", e)
	}
	e = s.Loops("PUT", "/v1/loops/demo/restock/versions/1.1", admin, m).wantError(t, 400, "VALIDATION_ERROR")
	if _, ok := e["details"].(map[string]any)["version"]; !ok {
		t.Errorf("bad version not named: %v", e)
	}
	s.Loops("PUT", "/v1/loops/demo/restock/versions/1.2.0", admin, `{"name": "demo/restock", "version": "1.2.0",`).wantError(t, 400, "VALIDATION_ERROR")
	huge := append(bytes.Repeat([]byte(" "), supplyplan.MaxLoopManifestBytes), m...)
	s.Loops("PUT", "/v1/loops/demo/restock/versions/1.3.0", admin, huge).wantError(t, 413, "PAYLOAD_TOO_LARGE")
	// A manifest of exactly the limit is read (and then judged on its content).
	atLimit := append(bytes.Repeat([]byte(" "), supplyplan.MaxLoopManifestBytes-len(m)), m...)
	s.Loops("PUT", path, admin, atLimit).Must(t, 200)

	// Unknown routes and methods answer in the one error shape.
	s.Loops("GET", "/v1/nothing", admin, nil).wantError(t, 404, "NOT_FOUND")
	if r := s.Loops("POST", path, admin, nil); r.Status != 405 || r.Header.Get("Allow") == "" {
		t.Fatalf("POST version: %d %s", r.Status, r.Body)
	}
	s.Loops("GET", "/health", "", nil).Must(t, 200)
}

func TestLoopCatalogIsolation(t *testing.T) {
	s := MustStart(t, "")
	admin, platform := s.Key("ADMIN"), s.Key("platform")
	org := s.Do("POST", "/api/platform/organizations", platform, map[string]any{"name": "Beta", "slug": "beta"}).Must(t, 201)
	betaID := str(org, "organization", "id")
	betaAdmin := s.Do("POST", "/api/platform/organizations/"+betaID+"/api-keys", platform, map[string]any{"role": "ADMIN"}).Must(t, 201)["key"].(string)
	betaViewer := s.Do("POST", "/api/platform/organizations/"+betaID+"/api-keys", platform, map[string]any{"role": "VIEWER"}).Must(t, 201)["key"].(string)

	bv := s.publishLoop(betaAdmin, "beta/restock", "1.0.0", nil, 201)
	s.publishLoop(admin, "demo/restock", "1.0.0", nil, 201)

	// Another organization's loop is not found, by any route, for reads and writes alike.
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/loops/beta/restock"},
		{"GET", "/v1/loops/beta/restock/versions/1.0.0"},
		{"GET", "/v1/loops/beta/restock/resolve?range=%5E1"},
		{"GET", "/v1/loops/beta/restock/dist-tags"},
		{"GET", "/v1/loops/beta/restock/audit"},
		{"GET", "/v1/blobs/" + str(bv, "digest")},
		{"PUT", "/v1/loops/beta/restock/dist-tags/stable"},
		{"POST", "/v1/loops/beta/restock/versions/1.0.0/deprecate"},
		{"POST", "/v1/loops/beta/restock/versions/1.0.0/yank"},
		{"POST", "/v1/loops/beta/restock/versions/1.0.0/unyank"},
		{"DELETE", "/v1/loops/beta/restock/versions/1.0.0"},
		{"DELETE", "/v1/loops/beta/restock/dist-tags/latest"},
	} {
		var body any
		if c.method != "GET" && c.method != "DELETE" {
			body = map[string]any{"version": "1.0.0", "message": "x", "reason": "x"}
		}
		if r := s.Loops(c.method, c.path, admin, body); r.Status != 404 || r.Code() != "NOT_FOUND" {
			t.Errorf("demo %s %s: %d %s, want 404", c.method, c.path, r.Status, r.Body)
		}
	}
	s.Loops("PUT", "/v1/loops/beta/intruder/versions/1.0.0", admin, loopManifest(t, "beta/intruder", "1.0.0", nil)).wantError(t, 404, "NOT_FOUND")
	// Beta still has its loop, unchanged (its viewer reads it).
	if got := s.Loops("GET", "/v1/loops/beta/restock/versions/1.0.0", betaViewer, nil).Must(t, 200); got["state"] != "PUBLISHED" {
		t.Fatalf("beta's version after demo's attempts: %v", got)
	}

	demoNames := loopNames(t, s.Loops("GET", "/v1/loops", admin, nil))
	betaNames := loopNames(t, s.Loops("GET", "/v1/loops", betaViewer, nil))
	if slices.Contains(demoNames, "beta/restock") || !slices.Contains(demoNames, "demo/restock") ||
		slices.Contains(betaNames, "demo/restock") || !slices.Contains(betaNames, "beta/restock") {
		t.Fatalf("listings: demo %v, beta %v", demoNames, betaNames)
	}
	if got := loopNames(t, s.Loops("GET", "/v1/loops?text=restock", admin, nil)); !slices.Equal(got, []string{"demo/restock"}) {
		t.Fatalf("demo's text=restock: %v", got)
	}

	// Global loops: only the platform key publishes them; every organization reads them.
	s.Loops("GET", "/v1/loops/beta/restock", platform, nil).wantError(t, 403, "TENANT_CONTEXT_REQUIRED")
	s.Loops("PUT", "/v1/loops/demo/restock/versions/1.0.1", platform, loopManifest(t, "demo/restock", "1.0.1", nil)).wantError(t, 403, "TENANT_CONTEXT_REQUIRED")
	s.Loops("PUT", "/v1/loops/supplyplan/shared/versions/1.0.0", admin, loopManifest(t, "supplyplan/shared", "1.0.0", nil)).wantError(t, 403, "FORBIDDEN")
	s.publishLoop(platform, "supplyplan/shared", "1.0.0", nil, 201)
	for _, k := range []string{admin, betaViewer, platform} {
		s.Loops("GET", "/v1/loops/supplyplan/shared/resolve?range=1.x", k, nil).Must(t, 200)
	}
	if names := loopNames(t, s.Loops("GET", "/v1/loops", platform, nil)); slices.ContainsFunc(names, func(n string) bool {
		return !strings.HasPrefix(n, "supplyplan/")
	}) {
		t.Fatalf("the platform key lists %v", names)
	}

	// The slug of the global scope is reserved for organizations.
	e := s.Do("POST", "/api/platform/organizations", platform, map[string]any{"name": "Squat", "slug": "supplyplan"}).Must(t, 400)
	if _, ok := e["details"].(map[string]any)["slug"]; !ok {
		t.Fatalf("reserved slug: %v", e)
	}
}

func TestLoopCatalogLifecycle(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2030, 3, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	s := MustStart(t, "", func(c *Config) { c.Clock = func() time.Time { return time.Unix(0, now.Load()) } })
	admin, planner := s.Key("ADMIN"), s.Key("PLANNER")
	base := "/v1/loops/demo/restock"
	s.publishLoop(admin, "demo/restock", "1.0.0", nil, 201)
	s.publishLoop(admin, "demo/restock", "1.1.0", nil, 201)
	s.publishLoop(admin, "demo/restock", "2.0.0-beta.1", nil, 201)

	resolve := func(query string) map[string]any {
		t.Helper()
		return s.Loops("GET", base+"/resolve?"+query, planner, nil).Must(t, 200)
	}
	wantResolve := func(query, version string, deprecated any) {
		t.Helper()
		r := resolve(query)
		if r["version"] != version || r["deprecated"] != deprecated {
			t.Fatalf("resolve %s = %v, want %s (deprecated %v)", query, r, version, deprecated)
		}
	}
	r := resolve("range=%5E1")
	if r["version"] != "1.1.0" || fmt.Sprint(r["candidates"]) != "[1.1.0 1.0.0]" || r["range"] != ">=1.0.0 <2.0.0-0" ||
		r["deprecated"] != nil || !strings.HasPrefix(str(r, "digest"), "sha256:") || !strings.HasPrefix(str(r, "integrity"), "sha512-") {
		t.Fatalf("resolve ^1 = %v", r)
	}
	wantResolve("range=~1.0", "1.0.0", nil)
	wantResolve("range=", "1.1.0", nil) // latest
	s.Loops("GET", base+"/resolve?range=%5E2", planner, nil).wantError(t, 404, "NOT_FOUND")
	wantResolve("range=%5E2&includePrerelease=true", "2.0.0-beta.1", nil)
	wantResolve("range=%5E2.0.0-beta.0", "2.0.0-beta.1", nil)
	s.Loops("GET", base+"/resolve?range=%3E%3E1", planner, nil).wantError(t, 400, "VALIDATION_ERROR")
	s.Loops("GET", base+"/resolve?range=1&includePrerelease=maybe", planner, nil).wantError(t, 400, "VALIDATION_ERROR")

	// Dist-tags: ADMIN moves them, every change is audited; latest cannot be removed.
	tags := s.Loops("GET", base+"/dist-tags", planner, nil).Must(t, 200)
	if fmt.Sprint(tags) != "map[latest:1.1.0]" {
		t.Fatalf("dist-tags = %v", tags)
	}
	s.Loops("PUT", base+"/dist-tags/next", planner, map[string]any{"version": "2.0.0-beta.1"}).wantError(t, 403, "FORBIDDEN")
	tags = s.Loops("PUT", base+"/dist-tags/next", admin, map[string]any{"version": "2.0.0-beta.1"}).Must(t, 200)
	if fmt.Sprint(tags) != "map[latest:1.1.0 next:2.0.0-beta.1]" {
		t.Fatalf("dist-tags after PUT next = %v", tags)
	}
	wantResolve("range=next", "2.0.0-beta.1", nil)
	s.Loops("PUT", base+"/dist-tags/v1", admin, map[string]any{"version": "1.0.0"}).wantError(t, 400, "VALIDATION_ERROR")
	s.Loops("PUT", base+"/dist-tags/stable", admin, map[string]any{}).wantError(t, 400, "VALIDATION_ERROR")
	s.Loops("PUT", base+"/dist-tags/stable", admin, map[string]any{"version": "9.9.9"}).wantError(t, 404, "NOT_FOUND")
	s.Loops("DELETE", base+"/dist-tags/latest", admin, nil).wantError(t, 409, supplyplan.ECONFLICT)
	if tags := s.Loops("DELETE", base+"/dist-tags/next", admin, nil).Must(t, 200); fmt.Sprint(tags) != "map[latest:1.1.0]" {
		t.Fatalf("dist-tags after DELETE next = %v", tags)
	}

	// Deprecate: still resolves, with its message, when nothing better satisfies the range.
	dep := s.Loops("POST", base+"/versions/1.1.0/deprecate", admin, map[string]any{"message": "use 1.0.0"}).Must(t, 200)
	if dep["state"] != "DEPRECATED" || dep["deprecated"] != "use 1.0.0" {
		t.Fatalf("deprecate = %v", dep)
	}
	wantResolve("range=%5E1", "1.0.0", nil)
	wantResolve("range=1.1.0", "1.1.0", "use 1.0.0")
	s.Loops("POST", base+"/versions/1.1.0/deprecate", admin, map[string]any{}).wantError(t, 400, "VALIDATION_ERROR")
	s.Loops("POST", base+"/versions/1.1.0/deprecate", planner, map[string]any{"message": ""}).wantError(t, 403, "FORBIDDEN")
	if undep := s.Loops("POST", base+"/versions/1.1.0/deprecate", admin, map[string]any{"message": ""}).Must(t, 200); undep["state"] != "PUBLISHED" {
		t.Fatalf("un-deprecate = %v", undep)
	}
	wantResolve("range=%5E1", "1.1.0", nil)

	// Yank: never chosen by a range or a tag, still fetchable by exact version and digest.
	y := s.Loops("POST", base+"/versions/1.1.0/yank", admin, map[string]any{"reason": "wrong approver"}).Must(t, 200)
	if y["state"] != "YANKED" || y["yankReason"] != "wrong approver" {
		t.Fatalf("yank = %v", y)
	}
	wantResolve("range=%5E1", "1.0.0", nil)
	s.Loops("GET", base+"/resolve?range=1.1.0", planner, nil).wantError(t, 404, "NOT_FOUND")
	if tags := s.Loops("GET", base+"/dist-tags", planner, nil).Must(t, 200); tags["latest"] != "1.0.0" {
		t.Fatalf("latest after yanking 1.1.0 = %v", tags)
	}
	if v := s.Loops("GET", base+"/versions/1.1.0", planner, nil).Must(t, 200); v["state"] != "YANKED" {
		t.Fatalf("yanked version = %v", v)
	}
	s.Loops("GET", "/v1/blobs/"+str(y, "digest"), planner, nil).Must(t, 200)
	s.Loops("POST", base+"/versions/1.1.0/unyank", admin, nil).Must(t, 200)
	wantResolve("range=%5E1", "1.1.0", nil)
	if tags := s.Loops("GET", base+"/dist-tags", planner, nil).Must(t, 200); tags["latest"] != "1.1.0" {
		t.Fatalf("latest after unyank = %v", tags)
	}

	// A minor release that removes part of the previous one is refused, naming what it removes.
	narrower := func(m map[string]any) {
		m["transitions"].([]any)[2].(map[string]any)["from"] = []any{"draft"}
		delete(m, "timeouts")
	}
	e := s.Loops("PUT", base+"/versions/1.2.0", admin, loopManifest(t, "demo/restock", "1.2.0", narrower)).wantError(t, 409, "BREAKING_CHANGE")
	if fmt.Sprint(e["details"]) != "map[transitions.cancel.from:[submitted]]" || !strings.Contains(str(e, "error"), "2.0.0") {
		t.Fatalf("breaking change = %v", e)
	}
	s.publishLoop(admin, "demo/restock", "2.0.0", narrower, 201) // a new major may

	// Delete: within 72 hours of publishing, the version goes and its number stays taken.
	s.publishLoop(admin, "demo/restock", "1.1.1", nil, 201)
	s.Loops("DELETE", base+"/versions/1.1.1", planner, nil).wantError(t, 403, "FORBIDDEN")
	gone := s.Loops("DELETE", base+"/versions/1.1.1", admin, nil).Must(t, 200)
	if gone["state"] != "REMOVED" {
		t.Fatalf("delete = %v", gone)
	}
	s.Loops("GET", base+"/versions/1.1.1", planner, nil).wantError(t, 404, "NOT_FOUND")
	s.Loops("GET", "/v1/blobs/"+str(gone, "digest"), planner, nil).wantError(t, 404, "NOT_FOUND")
	s.Loops("PUT", base+"/versions/1.1.1", admin, loopManifest(t, "demo/restock", "1.1.1", nil)).wantError(t, 409, "VERSION_EXISTS")
	doc := s.Loops("GET", base, planner, nil).Must(t, 200)
	var states []string
	for _, v := range list(doc, "versions") {
		states = append(states, str(v.(map[string]any), "version")+"="+str(v.(map[string]any), "state"))
	}
	if got := strings.Join(states, " "); got != "2.0.0=PUBLISHED 2.0.0-beta.1=PUBLISHED 1.1.1=REMOVED 1.1.0=PUBLISHED 1.0.0=PUBLISHED" {
		t.Fatalf("versions = %s", got)
	}
	now.Add(int64(72*time.Hour + time.Minute))
	e = s.Loops("DELETE", base+"/versions/1.0.0", admin, nil).wantError(t, 409, supplyplan.ECONFLICT)
	if !strings.Contains(str(e, "error"), "72 hours") {
		t.Fatalf("late delete = %v", e)
	}
	s.Loops("DELETE", "/v1/loops/supplyplan/procurement/versions/1.0.0", s.Key("platform"), nil).wantError(t, 409, supplyplan.ECONFLICT)

	// The audit lists every change, newest first.
	audit := s.Loops("GET", base+"/audit?limit=100", planner, nil).Must(t, 200)
	var actions []string
	for _, x := range list(audit, "entries") {
		actions = append(actions, str(x.(map[string]any), "action"))
	}
	for _, want := range []string{"publish", "dist-tag.set", "dist-tag.remove", "deprecate", "undeprecate", "yank", "unyank", "remove"} {
		if !slices.Contains(actions, want) {
			t.Errorf("audit lacks %s: %v", want, actions)
		}
	}
	// Newest first: removing 1.1.1, publishing it, latest moving to 2.0.0 on its publish.
	if got := strings.Join(actions[:4], " "); got != "remove publish dist-tag.set publish" {
		t.Errorf("newest audit entries = %s", got)
	}
	if int(num(audit, "total")) != len(actions) {
		t.Errorf("audit total %v, %d entries", audit["total"], len(actions))
	}
	s.Loops("GET", base+"/audit?limit=1000", planner, nil).wantError(t, 400, "VALIDATION_ERROR")
}

func TestLoopCatalogBlobsAndKeys(t *testing.T) {
	s := MustStart(t, "")
	admin, viewer := s.Key("ADMIN"), s.Key("VIEWER")
	m := loopManifest(t, "demo/restock", "1.0.0", nil)
	v := s.publishLoop(admin, "demo/restock", "1.0.0", nil, 201)
	digest := str(v, "digest")

	r := s.Loops("GET", "/v1/blobs/"+digest, viewer, nil)
	r.Must(t, 200)
	canonical, _ := supplyplan.CanonicalJSON(m)
	sum := sha256.Sum256(r.Body)
	if !bytes.Equal(r.Body, canonical) || "sha256:"+hex.EncodeToString(sum[:]) != digest {
		t.Fatalf("blob bytes %q are not the canonical manifest of %s", r.Body, digest)
	}
	if got := r.Header.Get("Cache-Control"); got != "private, max-age=31536000, immutable" {
		t.Errorf("Cache-Control = %q", got)
	}
	if got := r.Header.Get("ETag"); got != `"`+digest+`"` {
		t.Errorf("ETag = %q", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	cached := doRequest(t, catalogURL(s), "GET", "/v1/blobs/"+digest, map[string]string{"Authorization": "Bearer " + viewer, "If-None-Match": `W/"x", "` + digest + `"`}, nil)
	if cached.Status != 304 || len(cached.Body) != 0 || cached.Header.Get("ETag") == "" {
		t.Fatalf("If-None-Match: %d %q", cached.Status, cached.Body)
	}
	proc := s.Loops("GET", "/v1/loops/supplyplan/procurement/versions/1.0.0", viewer, nil).Must(t, 200)
	if g := s.Loops("GET", "/v1/blobs/"+str(proc, "digest"), viewer, nil); g.Status != 200 || g.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("global blob: %d %v", g.Status, g.Header)
	}
	s.Loops("GET", "/v1/blobs/sha256:XYZ", viewer, nil).wantError(t, 400, "VALIDATION_ERROR")
	s.Loops("GET", "/v1/blobs/sha256:"+strings.Repeat("0", 64), viewer, nil).wantError(t, 404, "NOT_FOUND")

	// The key set is public; the version's signature verifies with it, a tampered blob does not.
	kr := s.Loops("GET", "/.well-known/loop-catalog/keys", "", nil)
	kr.Must(t, 200)
	var keys supplyplan.JWKS
	if err := json.Unmarshal(kr.Body, &keys); err != nil || len(keys.Keys) != 1 || keys.Keys[0].Kty != "OKP" || keys.Keys[0].Crv != "Ed25519" {
		t.Fatalf("JWKS = %s (%v)", kr.Body, err)
	}
	var dist supplyplan.LoopDist
	if err := json.Unmarshal(s.Loops("GET", "/v1/loops/demo/restock/versions/1.0.0", viewer, nil).Body, &dist); err != nil {
		t.Fatal(err)
	}
	if dist.Signatures[0].KeyID != keys.Keys[0].Kid {
		t.Fatalf("signed by %s, key set %v", dist.Signatures[0].KeyID, keys)
	}
	if _, err := supplyplan.VerifyLoopManifest(r.Body, dist, keys); err != nil {
		t.Fatalf("the served blob does not verify: %v", err)
	}
	tampered := bytes.Replace(r.Body, []byte(`"approved"`), []byte(`"approvd"`), 1)
	if _, err := supplyplan.VerifyLoopManifest(tampered, dist, keys); err == nil {
		t.Fatal("a tampered blob verifies")
	}
	// The generated signing key is private to the data dir's owner.
	if fi, err := os.Stat(filepath.Join(s.Data, loopSigningKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("signing key file: %v %v", fi, err)
	}
}

func TestLoopCatalogBuiltinsSurviveRestart(t *testing.T) {
	s := MustStart(t, "")
	platform, viewer, admin := s.Key("platform"), s.Key("VIEWER"), s.Key("ADMIN")
	builtins := []string{"supplyplan/orders", "supplyplan/procurement", "supplyplan/quality", "supplyplan/returns"}
	if got := loopNames(t, s.Loops("GET", "/v1/loops", platform, nil)); !slices.Equal(got, builtins) {
		t.Fatalf("built-in loops = %v", got)
	}
	list1 := s.Loops("GET", "/v1/loops?domain=PROCUREMENT", viewer, nil).Must(t, 200)
	if len(list(list1, "loops")) != 1 || str(list(list1, "loops")[0].(map[string]any), "latest") != "1.0.0" {
		t.Fatalf("procurement loops = %v", list1)
	}
	s.Loops("GET", "/v1/loops?domain=SALES", viewer, nil).wantError(t, 400, "VALIDATION_ERROR")
	if p := s.Loops("GET", "/v1/loops?limit=2&offset=1", platform, nil).Must(t, 200); num(p, "total") != 4 || len(list(p, "loops")) != 2 {
		t.Fatalf("page = %v", p)
	}
	proc := s.Loops("GET", "/v1/loops/supplyplan/procurement", viewer, nil).Must(t, 200)
	v0 := list(proc, "versions")[0].(map[string]any)
	if v0["version"] != "1.0.0" || v0["publisher"] != supplyplan.BuiltinLoopPublisher || v0["domain"] != "PROCUREMENT" {
		t.Fatalf("procurement = %v", proc)
	}
	auditBefore := s.Loops("GET", "/v1/loops/supplyplan/procurement/audit", viewer, nil).Body
	kid := s.Loops("GET", "/.well-known/loop-catalog/keys", "", nil).JSON(t)["keys"]

	pub := s.publishLoop(admin, "demo/restock", "1.0.0", nil, 201)
	s.Loops("POST", "/v1/loops/demo/restock/versions/1.0.0/deprecate", admin, map[string]any{"message": "old"}).Must(t, 200)

	s2 := s.Restart()
	if got := s2.Loops("GET", "/v1/loops/supplyplan/procurement/audit", viewer, nil).Body; !bytes.Equal(got, auditBefore) {
		t.Fatalf("the built-in loops were published again:\n%s\n%s", auditBefore, got)
	}
	if got := s2.Loops("GET", "/.well-known/loop-catalog/keys", "", nil).JSON(t)["keys"]; fmt.Sprint(got) != fmt.Sprint(kid) {
		t.Fatalf("key set changed over a restart: %v, %v", kid, got)
	}
	r := s2.Loops("GET", "/v1/loops/demo/restock/resolve?range=%5E1", viewer, nil).Must(t, 200)
	if r["digest"] != pub["digest"] || r["deprecated"] != "old" {
		t.Fatalf("after restart: %v", r)
	}
}

func TestLoopSigningKeyRotation(t *testing.T) {
	dir := t.TempDir()
	keyFile := func(name string) string {
		k, err := supplyplan.GenerateLoopSigningKey()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := supplyplan.MarshalLoopSigningKey(k)
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := keyFile("a.pem"), keyFile("b.pem")
	s := MustStart(t, dir, func(c *Config) { c.LoopSigningKey = a })
	v1 := s.publishLoop(s.Key("ADMIN"), "demo/restock", "1.0.0", nil, 201)
	if _, err := os.Stat(filepath.Join(dir, loopSigningKeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a configured key must not generate one: %v", err)
	}
	s.Stop()
	s = MustStart(t, dir, func(c *Config) { c.LoopSigningKey = b })
	v2 := s.publishLoop(s.Key("ADMIN"), "demo/restock", "1.0.1", nil, 201)
	var keys supplyplan.JWKS
	if err := json.Unmarshal(s.Loops("GET", "/.well-known/loop-catalog/keys", "", nil).Body, &keys); err != nil {
		t.Fatal(err)
	}
	if len(keys.Keys) != 2 || keys.Keys[0].Kid != list(v2, "signatures")[0].(map[string]any)["keyid"] {
		t.Fatalf("key set after rotation = %+v", keys)
	}
	// The version signed with the retired key still verifies.
	var dist supplyplan.LoopDist
	_ = json.Unmarshal(s.Loops("GET", "/v1/loops/demo/restock/versions/1.0.0", s.Key("VIEWER"), nil).Body, &dist)
	blob := s.Loops("GET", "/v1/blobs/"+str(v1, "digest"), s.Key("VIEWER"), nil).Body
	if res, err := supplyplan.VerifyLoopManifest(blob, dist, keys); err != nil || res.KeyID == keys.Keys[0].Kid {
		t.Fatalf("old version against the rotated key set: %+v %v", res, err)
	}
	log := s.Main.Log
	s.Stop()
	bad := filepath.Join(t.TempDir(), "bad.pem")
	_ = os.WriteFile(bad, []byte("not a key"), 0o600)
	cfg := DefaultConfig()
	cfg.DataDir, cfg.APIAddr, cfg.RegistryAddr, cfg.ToolsAddr, cfg.LoopCatalogAddr, cfg.LoopRuntimeAddr = dir, "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.ConsoleAddr = "127.0.0.1:0"
	cfg.LoopSigningKey = bad
	m := NewMain(cfg, log, nil)
	err := m.Open(t.Context())
	_ = m.Close(t.Context())
	if err == nil || !strings.Contains(err.Error(), "--loop-signing-key") {
		t.Fatalf("a bad signing key: %v", err)
	}
}

func TestLoopVerifyCommand(t *testing.T) {
	s := MustStart(t, "")
	admin, viewer := s.Key("ADMIN"), s.Key("VIEWER")
	v := s.publishLoop(admin, "demo/restock", "1.0.0", nil, 201)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	blob := s.Loops("GET", "/v1/blobs/"+str(v, "digest"), viewer, nil).Body
	verify := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(append([]string{"loop", "verify"}, args...), &out, &errb)
		return out.String() + errb.String(), err
	}
	online := []string{"--catalog", catalogURL(s), "--key", viewer}

	out, err := verify(append(online, write("blob.json", blob))...)
	if err != nil || !strings.Contains(out, "verified demo/restock@1.0.0") || !strings.Contains(out, str(v, "digest")) || strings.Contains(out, "canonical") {
		t.Fatalf("verify the downloaded blob: %v\n%s", err, out)
	}
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, blob, "", "    ")
	if out, err := verify(append(online, write("pretty.json", pretty.Bytes()))...); err != nil || !strings.Contains(out, "not in canonical form") {
		t.Fatalf("verify the reformatted manifest: %v\n%s", err, out)
	}

	// A tampered manifest fails with exit status 1, naming the checks that failed.
	tampered := write("tampered.json", bytes.Replace(blob, []byte(`"PT48H"`), []byte(`"PT1H"`), 1))
	_, err = verify(append(online, tampered)...)
	var ex exitError
	if !errors.As(err, &ex) || ex.code != 1 || !strings.Contains(err.Error(), "digest:") || !strings.Contains(err.Error(), "integrity:") {
		t.Fatalf("tampered manifest: %v", err)
	}

	// Offline, from the version's JSON and the key set saved as files.
	distFile := write("dist.json", s.Loops("GET", "/v1/loops/demo/restock/versions/1.0.0", viewer, nil).Body)
	keysFile := write("keys.json", s.Loops("GET", "/.well-known/loop-catalog/keys", "", nil).Body)
	offline := []string{"--catalog", "http://127.0.0.1:1", "--dist", distFile, "--keys", keysFile}
	if out, err := verify(append(offline, write("blob2.json", blob))...); err != nil || !strings.Contains(out, "verified demo/restock@1.0.0") {
		t.Fatalf("offline verify: %v\n%s", err, out)
	}
	if _, err := verify(append(offline, tampered)...); !errors.As(err, &ex) || ex.code != 1 {
		t.Fatalf("offline tampered: %v", err)
	}
	// Another catalog's keys, or a forged signature, fail the signature check.
	other, _ := supplyplan.GenerateLoopSigningKey()
	otherSigner, _ := supplyplan.NewLoopSigner(other)
	otherKeys, _ := json.Marshal(supplyplan.JWKS{Keys: []supplyplan.JWK{otherSigner.PublicJWK()}})
	_, err = verify("--dist", distFile, "--keys", write("other-keys.json", otherKeys), write("blob3.json", blob))
	if !errors.As(err, &ex) || ex.code != 1 || !strings.Contains(err.Error(), "signatures") {
		t.Fatalf("foreign key set: %v", err)
	}
	var forged map[string]any
	_ = json.Unmarshal(mustRead(t, distFile), &forged)
	forged["signatures"].([]any)[0].(map[string]any)["sig"] = otherSigner.Sign("demo/restock", "1.0.0", str(v, "integrity")).Sig
	forgedB, _ := json.Marshal(forged)
	_, err = verify("--dist", write("forged.json", forgedB), "--keys", keysFile, write("blob4.json", blob))
	if !errors.As(err, &ex) || ex.code != 1 || !strings.Contains(err.Error(), "signatures[0]") {
		t.Fatalf("forged signature: %v", err)
	}

	// What cannot be checked is another error (exit status 2): an unknown version, a mismatched
	// --dist, a missing file, no manifest argument.
	for _, args := range [][]string{
		append(online, "--loop", "demo/restock@9.9.9", write("blob5.json", blob)),
		{"--dist", distFile, "--keys", keysFile, "--loop", "demo/restock@2.0.0", write("blob6.json", blob)},
		append(online, filepath.Join(dir, "missing.json")),
		online,
	} {
		if _, err := verify(args...); err == nil || errors.As(err, &ex) {
			t.Errorf("verify %v: %v, want an error other than a failed verification", args, err)
		}
	}
	if _, err := verify("--help"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestLoopCatalogAlone: `supplyplan loop-catalog` runs the catalog without the other listeners,
// and its subcommand takes the catalog's flags.
func TestLoopCatalogAlone(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Surfaces, cfg.LoopCatalogAddr, cfg.RedisAddr = t.TempDir(), Surfaces{LoopCatalog: true}, "127.0.0.1:0", ""
	var out bytes.Buffer
	m := NewMain(cfg, slog.New(slog.DiscardHandler), &out)
	if err := m.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	if m.API != nil || m.Tools != nil || m.Registry != nil || !strings.HasPrefix(out.String(), "listening loop-catalog http://") {
		t.Fatalf("loop-catalog started %q", out.String())
	}
	s := &testServer{t: t, Main: m, Data: cfg.DataDir, Creds: mustReadCreds(t, cfg.DataDir)}
	s.Loops("GET", "/health", "", nil).Must(t, 200)
	s.publishLoop(s.Key("ADMIN"), "demo/restock", "1.0.0", nil, 201)
	var stderr bytes.Buffer
	if err := run([]string{"loop-catalog", "--help"}, io.Discard, &stderr); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "-loop-catalog-addr") {
		t.Fatalf("loop-catalog --help: %v %s", err, stderr.String())
	}
}
