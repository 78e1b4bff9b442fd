package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHealth(t *testing.T) {
	s := MustStart(t, "")
	r := s.Do("GET", "/health", "", nil)
	if r.Status != 200 || string(r.Body) != `{"status":"ok"}` {
		t.Fatalf("health = %d %s", r.Status, r.Body)
	}
}

func TestCredentialsFile(t *testing.T) {
	s := MustStart(t, "")
	path := filepath.Join(s.Data, "credentials.json")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", st.Mode().Perm())
	}
	var raw map[string]map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 || raw["organization"]["slug"] != "demo" || raw["organization"]["id"] == "" {
		t.Fatalf("credentials = %s", b)
	}
	var names []string
	for k, v := range raw["keys"] {
		if s, _ := v.(string); s == "" {
			t.Fatalf("key %s is empty", k)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	if got, want := strings.Join(names, ","), "ADMIN,MANAGER,PLANNER,VIEWER,import,platform"; !strings.HasPrefix(strings.NewReplacer(",demoTool", "", ",gateway", "").Replace(got), want) {
		t.Fatalf("keys = %s, want %s", got, want)
	}
	// Keys are stored hashed: no secret appears in the journal.
	err = filepath.Walk(filepath.Join(s.Data, "journal"), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		for name, key := range s.Creds.Keys {
			if strings.Contains(string(data), key) {
				t.Errorf("secret of %s found in %s", name, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A restart keeps the same organization and keys.
	s2 := s.Restart()
	if s2.Creds.Organization.ID != s.Creds.Organization.ID {
		t.Fatal("restart bootstrapped again")
	}
	s2.Do("GET", "/api/forecast/scenarios", s.Key("VIEWER"), nil).Must(t, 200)
}

func TestDataDirLock(t *testing.T) {
	s := MustStart(t, "")
	cfg := DefaultConfig()
	cfg.DataDir, cfg.APIAddr = s.Data, "127.0.0.1:0"
	m := NewMain(cfg, s.Main.Log, nil)
	err := m.Open(t.Context())
	_ = m.Close(t.Context())
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open on the same data dir: %v", err)
	}
}

func TestScenarioLifecycle(t *testing.T) {
	s := MustStart(t, "")
	k := s.Key("PLANNER")
	body := s.Do("POST", "/api/forecast/scenarios", k, map[string]any{
		"name": "Spring", "description": "d", "type": "PROMOTIONAL",
		"assumptions": map[string]any{"narrative": "n", "globalLiftPct": 0.1,
			"categoryAdjustments": []any{map[string]any{"categoryId": "bev", "liftPct": 0.2}},
			"channelAdjustments":  []any{map[string]any{"channelId": "ONLINE", "liftPct": -0.1}}},
	}).Must(t, 201)
	sc := body["scenario"].(map[string]any)
	id := sc["id"].(string)
	for field, want := range map[string]string{"name": "Spring", "description": "d", "type": "PROMOTIONAL", "status": "DRAFT"} {
		if sc[field] != want {
			t.Errorf("%s = %v, want %s", field, sc[field], want)
		}
	}
	if sc["createdAt"] == nil || sc["updatedAt"] == nil {
		t.Error("timestamps missing")
	}

	got := s.Do("GET", "/api/forecast/scenarios/"+id, s.Key("VIEWER"), nil).Must(t, 200)
	if str(got, "scenario", "name") != "Spring" {
		t.Fatalf("get = %v", got)
	}

	// Partial update: only the name changes; assumptions merge per field.
	up := s.Do("PUT", "/api/forecast/scenarios/"+id, k, map[string]any{"name": "Spring 2",
		"assumptions": map[string]any{"globalLiftPct": 0.3}}).Must(t, 200)
	if str(up, "scenario", "name") != "Spring 2" || str(up, "scenario", "description") != "d" {
		t.Fatalf("update = %v", up)
	}
	a := up["scenario"].(map[string]any)["assumptions"].(map[string]any)
	if a["globalLiftPct"] != 0.3 || a["narrative"] != "n" || len(a["categoryAdjustments"].([]any)) != 1 {
		t.Fatalf("assumptions after partial update = %v", a)
	}

	pub := s.Do("POST", "/api/forecast/scenarios/"+id+"/publish", k, nil).Must(t, 200)
	if str(pub, "scenario", "status") != "PUBLISHED" {
		t.Fatalf("publish = %v", pub)
	}
	s.Do("POST", "/api/forecast/scenarios/"+id+"/publish", k, nil).Must(t, 200) // idempotent

	del := s.Do("DELETE", "/api/forecast/scenarios/"+id, k, nil).Must(t, 200)
	if str(del, "scenario", "status") != "ARCHIVED" {
		t.Fatalf("delete = %v", del)
	}
	for _, tc := range []struct{ method, path string }{
		{"POST", "/api/forecast/scenarios/" + id + "/publish"},
		{"PUT", "/api/forecast/scenarios/" + id},
	} {
		r := s.Do(tc.method, tc.path, k, map[string]any{"name": "x"})
		if r.Status != 409 || r.Code() != "INVALID_STATE_TRANSITION" {
			t.Errorf("%s %s on archived = %d %s", tc.method, tc.path, r.Status, r.Body)
		}
	}

	// Listing hides archived ones unless asked.
	s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "Other", "type": "BASELINE"}).Must(t, 201)
	names := func(q string) string {
		l := list(s.Do("GET", "/api/forecast/scenarios"+q, k, nil).Must(t, 200), "scenarios")
		var out []string
		for _, x := range l {
			out = append(out, x.(map[string]any)["name"].(string))
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	for q, want := range map[string]string{
		"":                                     "Other",
		"?includeArchived=true":                "Other,Spring 2",
		"?status=ARCHIVED":                     "Spring 2",
		"?type=BASELINE":                       "Other",
		"?type=PROMOTIONAL&includeArchived=1":  "Spring 2",
		"?status=DRAFT":                        "Other",
		"?status=PUBLISHED&includeArchived=ok": "",
	} {
		if q == "?status=PUBLISHED&includeArchived=ok" {
			r := s.Do("GET", "/api/forecast/scenarios"+q, k, nil)
			if r.Status != 400 {
				t.Errorf("bad boolean: %d", r.Status)
			}
			continue
		}
		if got := names(q); got != want {
			t.Errorf("list%s = %q, want %q", q, got, want)
		}
	}
	r := s.Do("GET", "/api/forecast/scenarios/scn_nope", k, nil)
	if r.Status != 404 || !strings.Contains(string(r.Body), "Scenario not found") {
		t.Fatalf("missing scenario = %d %s", r.Status, r.Body)
	}
}

func TestScenarioIncludedEventsMustExist(t *testing.T) {
	s := MustStart(t, "")
	k := s.Key("ADMIN")
	r := s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "x",
		"assumptions": map[string]any{"includedEventIds": []string{"evt_missing"}}})
	if r.Status != 400 || !strings.Contains(string(r.Body), "assumptions.includedEventIds") {
		t.Fatalf("unknown event = %d %s", r.Status, r.Body)
	}
	ev := s.Do("POST", "/api/forecast/events", k, map[string]any{"name": "e", "type": "HOLIDAY",
		"startsAt": "2030-01-01", "endsAt": "2030-01-02"}).Must(t, 201)
	got := s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "x",
		"assumptions": map[string]any{"includedEventIds": []string{ev["id"].(string)}}}).Must(t, 201)
	ids := got["scenario"].(map[string]any)["assumptions"].(map[string]any)["includedEventIds"].([]any)
	if len(ids) != 1 || ids[0] != ev["id"] {
		t.Fatalf("includedEventIds = %v", ids)
	}
	// An explicitly empty list is kept (it means "no events"), distinct from absent.
	empty := s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "y",
		"assumptions": map[string]any{"includedEventIds": []string{}}}).Must(t, 201)
	if _, ok := empty["scenario"].(map[string]any)["assumptions"].(map[string]any)["includedEventIds"]; !ok {
		t.Fatalf("empty includedEventIds dropped: %v", empty)
	}
}

func TestEventLifecycle(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"sku-1"}, nil)
	k := s.Key("MANAGER")
	start := time.Now().UTC().AddDate(0, 0, 10).Format("2006-01-02")
	end := time.Now().UTC().AddDate(0, 0, 17).Format("2006-01-02")
	ev := s.Do("POST", "/api/forecast/events", k, map[string]any{
		"name": "Spring sale", "type": "PROMOTION", "startsAt": start, "endsAt": end,
		"value":           map[string]any{"liftPct": 0.35, "stackingMode": "ADDITIVE", "description": "d"},
		"productMasterId": "sku-1",
	}).Must(t, 201)
	id := ev["id"].(string)
	if ev["isGlobal"] != false || ev["isOrgWide"] != false || str(ev, "productMaster", "id") != "sku-1" || str(ev, "productMaster", "name") != "Product sku-1" {
		t.Fatalf("event = %v", ev)
	}
	if _, wrapped := ev["event"]; wrapped {
		t.Fatal("create must return the event directly")
	}
	got := s.Do("GET", "/api/forecast/events/"+id, s.Key("VIEWER"), nil).Must(t, 200)
	if got["name"] != "Spring sale" || str(got, "value", "stackingMode") != "ADDITIVE" {
		t.Fatalf("get = %v", got)
	}
	up := s.Do("PUT", "/api/forecast/events/"+id, k, map[string]any{"value": map[string]any{"liftPct": 0.5}}).Must(t, 200)
	if str(up, "value", "liftPct") != "0.5" || str(up, "value", "description") != "d" {
		t.Fatalf("update merged value = %v", up)
	}
	org := s.Do("POST", "/api/forecast/events", k, map[string]any{"name": "Org", "type": "MACRO",
		"startsAt": start, "endsAt": end}).Must(t, 201)
	if org["isOrgWide"] != true {
		t.Fatalf("org-wide event = %v", org)
	}
	r := s.Do("PUT", "/api/forecast/events/"+id, k, map[string]any{"endsAt": "2000-01-01"})
	if r.Status != 400 || !strings.Contains(string(r.Body), "endsAt") {
		t.Fatalf("endsAt before startsAt = %d %s", r.Status, r.Body)
	}
	s.Do("DELETE", "/api/forecast/events/"+id, k, nil).Must(t, 204)
	if r := s.Do("GET", "/api/forecast/events/"+id, k, nil); r.Status != 404 {
		t.Fatalf("deleted event = %d", r.Status)
	}
	if r := s.Do("DELETE", "/api/forecast/events/"+id, k, nil); r.Status != 404 {
		t.Fatalf("second delete = %d", r.Status)
	}
}

func TestEventListing(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"p1", "p2"}, []string{"l1", "l2"})
	k := s.Key("ADMIN")
	day := func(d int) string { return time.Now().UTC().AddDate(0, 0, d).Format("2006-01-02") }
	mk := func(name, typ string, from, to int, extra map[string]any) {
		b := map[string]any{"name": name, "type": typ, "startsAt": day(from), "endsAt": day(to)}
		for k, v := range extra {
			b[k] = v
		}
		s.Do("POST", "/api/forecast/events", k, b).Must(t, 201)
	}
	mk("past", "PROMOTION", -30, -20, map[string]any{"productMasterId": "p1"})
	mk("soon-p1", "PROMOTION", 5, 9, map[string]any{"productMasterId": "p1"})
	mk("soon-p2", "PROMOTION", 5, 9, map[string]any{"productMasterId": "p2"})
	mk("soon-l1", "WEATHER", 3, 4, map[string]any{"locationId": "l1"})
	mk("org", "HOLIDAY", 20, 21, nil)
	mk("far", "HOLIDAY", 120, 121, nil)
	mk("straddle", "OTHER", -5, 5, map[string]any{"productMasterId": "p1", "locationId": "l2"})
	s.Do("POST", "/api/platform/events", s.Key("platform"), map[string]any{"name": "global", "type": "HOLIDAY",
		"startsAt": day(30), "endsAt": day(31)}).Must(t, 201)

	names := func(q string) string {
		l := list(s.Do("GET", "/api/forecast/events"+q, s.Key("VIEWER"), nil).Must(t, 200), "events")
		var out []string
		for _, x := range l {
			out = append(out, x.(map[string]any)["name"].(string))
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	for q, want := range map[string]string{
		"":                                      "global,org,soon-l1,soon-p1,soon-p2,straddle",
		"?includeGlobal=false":                  "org,soon-l1,soon-p1,soon-p2,straddle",
		"?includeOrgWide=false":                 "global,soon-l1,soon-p1,soon-p2,straddle",
		"?productMasterId=p1":                   "global,org,soon-l1,soon-p1,straddle",
		"?locationId=l1":                        "global,org,soon-l1,soon-p1,soon-p2",
		"?type=HOLIDAY":                         "global,org",
		"?from=" + day(-40):                     "global,org,past,soon-l1,soon-p1,soon-p2,straddle",
		"?from=" + day(100) + "&to=" + day(130): "far",
		"?from=" + day(6) + "&to=" + day(6):     "soon-p1,soon-p2",
	} {
		if got := names(q); got != want {
			t.Errorf("events%s = %q, want %q", q, got, want)
		}
	}
	if r := s.Do("GET", "/api/forecast/events?from=tomorrow", k, nil); r.Status != 400 || !strings.Contains(string(r.Body), `"from"`) {
		t.Errorf("bad from = %d %s", r.Status, r.Body)
	}
	if r := s.Do("GET", "/api/forecast/events?type=PARTY", k, nil); r.Status != 400 {
		t.Errorf("bad type = %d", r.Status)
	}
	// A tenant can read a global event but not change it.
	gl := list(s.Do("GET", "/api/forecast/events?type=HOLIDAY&includeOrgWide=false", k, nil).Must(t, 200), "events")
	gid := gl[0].(map[string]any)["id"].(string)
	s.Do("GET", "/api/forecast/events/"+gid, k, nil).Must(t, 200)
	if r := s.Do("DELETE", "/api/forecast/events/"+gid, k, nil); r.Status != 403 {
		t.Errorf("tenant deletes global event: %d", r.Status)
	}
	if r := s.Do("POST", "/api/forecast/events", k, map[string]any{"name": "g", "startsAt": day(1), "endsAt": day(2), "isGlobal": true}); r.Status != 400 {
		t.Errorf("tenant creates global event: %d", r.Status)
	}
}

func TestAuthFailures(t *testing.T) {
	s := MustStart(t, "")
	for name, hdr := range map[string]string{
		"missing": "", "not bearer": "Basic abc", "unknown key": "Bearer sp_live_nope", "empty bearer": "Bearer ",
	} {
		r := doRequest(t, s.URL, "GET", "/api/forecast/scenarios", map[string]string{"Authorization": hdr}, nil)
		if r.Status != 401 || r.Code() != "UNAUTHORIZED" || str(r.JSON(t), "error") != "Unauthorized" {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	// The platform key is refused on tenant endpoints.
	r := s.Do("GET", "/api/forecast/scenarios", s.Key("platform"), nil)
	if r.Status != 403 || r.Code() != "TENANT_CONTEXT_REQUIRED" {
		t.Errorf("platform key on tenant endpoint: %d %s", r.Status, r.Body)
	}
	// Import keys are refused on bearer endpoints; tenant keys on platform endpoints.
	if r := s.Do("GET", "/api/forecast/scenarios", s.Key("import"), nil); r.Status != 403 {
		t.Errorf("import key on forecasting: %d", r.Status)
	}
	if r := s.Do("GET", "/api/platform/organizations", s.Key("ADMIN"), nil); r.Status != 403 {
		t.Errorf("tenant key on platform API: %d", r.Status)
	}
	if r := s.Do("GET", "/api/platform/organizations", "", nil); r.Status != 401 {
		t.Errorf("no key on platform API: %d", r.Status)
	}
}

// createPlannerKey creates a PLANNER key of the demo organization with the platform key.
func createPlannerKey(t *testing.T, s *testServer) (created map[string]any, key, keyID string) {
	t.Helper()
	created = s.Do("POST", "/api/platform/organizations/"+s.Creds.Organization.ID+"/api-keys", s.Key("platform"), map[string]any{"role": "PLANNER", "name": "ci"}).Must(t, 201)
	return created, created["key"].(string), str(created, "apiKey", "id")
}

func TestRevokedKeyIsRejectedAtOnce(t *testing.T) {
	s := MustStart(t, "")
	p, org := s.Key("platform"), s.Creds.Organization.ID
	created, key, keyID := createPlannerKey(t, s)
	if str(created, "apiKey", "role") != "PLANNER" || str(created, "apiKey", "prefix") == "" || !strings.HasPrefix(key, str(created, "apiKey", "prefix")) {
		t.Fatalf("created key = %v", created)
	}
	if strings.Contains(string(s.Do("GET", "/api/platform/organizations/"+org+"/api-keys", p, nil).Body), key) {
		t.Fatal("key listing shows the secret")
	}
	s.Do("GET", "/api/forecast/scenarios", key, nil).Must(t, 200)
	s.Do("DELETE", "/api/platform/organizations/"+org+"/api-keys/"+keyID, p, nil).Must(t, 204)
	if r := s.Do("GET", "/api/forecast/scenarios", key, nil); r.Status != 401 {
		t.Fatalf("revoked key: %d", r.Status)
	}
	s2 := s.Restart()
	if r := s2.Do("GET", "/api/forecast/scenarios", key, nil); r.Status != 401 {
		t.Fatalf("revoked key after restart: %d", r.Status)
	}
	if r := s2.Do("DELETE", "/api/platform/organizations/"+org+"/api-keys/key_nope", p, nil); r.Status != 404 {
		t.Fatalf("revoke unknown key: %d", r.Status)
	}
}

// A connection keeps the principal of the key it sent last (http connAuth): revoking the key, or
// taking the organization's entitlement, from another connection applies to the next request on it.
func TestKeyKeptOnAConnectionIsRevokedAtOnce(t *testing.T) {
	s := MustStart(t, "")
	p, org := s.Key("platform"), s.Creds.Organization.ID
	_, key, keyID := createPlannerKey(t, s)
	// One keep-alive connection for the key: every request below reuses it.
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var conns atomic.Int64
	get := func() int {
		t.Helper()
		req, _ := http.NewRequest("GET", s.URL+"/api/forecast/scenarios", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) {
				if !info.Reused {
					conns.Add(1)
				}
			}}))
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode
	}
	for range 3 {
		if st := get(); st != 200 {
			t.Fatalf("live key: %d", st)
		}
	}
	s.Do("PUT", "/api/platform/organizations/"+org+"/entitlements", p, map[string]any{"entitlements": []string{}}).Must(t, 200)
	if st := get(); st != 403 {
		t.Fatalf("key of an organization without the forecasting entitlement: %d", st)
	}
	s.Do("PUT", "/api/platform/organizations/"+org+"/entitlements", p, map[string]any{"entitlements": []string{"ai.forecasting.demand"}}).Must(t, 200)
	if st := get(); st != 200 {
		t.Fatalf("entitlement given back: %d", st)
	}
	s.Do("DELETE", "/api/platform/organizations/"+org+"/api-keys/"+keyID, p, nil).Must(t, 204)
	if st := get(); st != 401 {
		t.Fatalf("key revoked from another connection: %d on the connection that used it", st)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("the key's requests went over %d connections, want one (the test is void)", n)
	}
}

func TestPlatformOrganizationsAndEntitlements(t *testing.T) {
	s := MustStart(t, "")
	p := s.Key("platform")
	o := s.Do("POST", "/api/platform/organizations", p, map[string]any{"name": "Acme", "slug": "acme",
		"entitlements": []string{"ai.forecasting.demand"}, "capabilities": []string{"commerce.catalog"}}).Must(t, 201)
	id := str(o, "organization", "id")
	if str(o, "organization", "slug") != "acme" {
		t.Fatalf("org = %v", o)
	}
	for _, bad := range []map[string]any{
		{"name": "Dup", "slug": "acme"},
		{"name": "", "slug": "x"},
		{"name": "Bad", "slug": "Not A Slug"},
		{"slug": "noname"},
		{"name": "x", "slug": "y", "entitlements": "ai"},
	} {
		if r := s.Do("POST", "/api/platform/organizations", p, bad); r.Status != 400 {
			t.Errorf("create %v = %d %s", bad, r.Status, r.Body)
		}
	}
	orgs := list(s.Do("GET", "/api/platform/organizations", p, nil).Must(t, 200), "organizations")
	if len(orgs) != 2 {
		t.Fatalf("orgs = %v", orgs)
	}
	key := s.Do("POST", "/api/platform/organizations/"+id+"/api-keys", p, map[string]any{"role": "VIEWER"}).Must(t, 201)["key"].(string)
	s.Do("GET", "/api/forecast/events", key, nil).Must(t, 200)

	// Without the entitlement, forecasting answers FEATURE_NOT_ENABLED.
	s.Do("PUT", "/api/platform/organizations/"+id+"/entitlements", p, map[string]any{"entitlements": []string{}}).Must(t, 200)
	r := s.Do("GET", "/api/forecast/events", key, nil)
	body := r.JSON(t)
	if r.Status != 403 || body["code"] != "FEATURE_NOT_ENABLED" || body["entitlement"] != "ai.forecasting.demand" || body["feature"] == "" {
		t.Fatalf("without entitlement: %d %s", r.Status, r.Body)
	}
	s.Do("PUT", "/api/platform/organizations/"+id+"/entitlements", p, map[string]any{"entitlements": []string{"ai.forecasting.demand"}}).Must(t, 200)
	s.Do("GET", "/api/forecast/events", key, nil).Must(t, 200)

	for _, tc := range []struct {
		body any
		want int
	}{
		{map[string]any{"scopes": []string{"import:read"}}, 201},
		{map[string]any{"role": "OWNER"}, 400},
		{map[string]any{"scopes": []string{"admin"}}, 400},
		{map[string]any{"role": "ADMIN", "scopes": []string{"import:read"}}, 400},
		{map[string]any{}, 400},
	} {
		if r := s.Do("POST", "/api/platform/organizations/"+id+"/api-keys", p, tc.body); r.Status != tc.want {
			t.Errorf("key %v = %d, want %d (%s)", tc.body, r.Status, tc.want, r.Body)
		}
	}
	if r := s.Do("POST", "/api/platform/organizations/org_nope/api-keys", p, map[string]any{"role": "ADMIN"}); r.Status != 404 {
		t.Errorf("key for unknown org = %d", r.Status)
	}
}

// endpoint is one tenant endpoint of the role matrix.
type endpoint struct {
	method, path string
	body         any
	allowed      []string // roles allowed
}

func TestRoleMatrix(t *testing.T) {
	s := MustStart(t, "")
	admin := s.Key("ADMIN")
	newScenario := func() string {
		return str(s.Do("POST", "/api/forecast/scenarios", admin, map[string]any{"name": "m"}).Must(t, 201), "scenario", "id")
	}
	newEvent := func() string {
		return s.Do("POST", "/api/forecast/events", admin, map[string]any{"name": "e", "startsAt": "2030-01-01", "endsAt": "2030-01-02"}).Must(t, 201)["id"].(string)
	}
	all := []string{"ADMIN", "MANAGER", "PLANNER", "VIEWER"}
	writers := []string{"ADMIN", "MANAGER", "PLANNER"}
	for _, role := range all {
		sc, ev := newScenario(), newEvent()
		eps := []endpoint{
			{"GET", "/api/forecast/scenarios", nil, all},
			{"POST", "/api/forecast/scenarios", map[string]any{"name": "x"}, writers},
			{"GET", "/api/forecast/scenarios/" + sc, nil, all},
			{"PUT", "/api/forecast/scenarios/" + sc, map[string]any{"name": "y"}, writers},
			{"POST", "/api/forecast/scenarios/" + sc + "/publish", nil, writers},
			{"DELETE", "/api/forecast/scenarios/" + sc, nil, writers},
			{"GET", "/api/forecast/events", nil, all},
			{"POST", "/api/forecast/events", map[string]any{"name": "e", "startsAt": "2030-01-01", "endsAt": "2030-01-02"}, writers},
			{"GET", "/api/forecast/events/" + ev, nil, all},
			{"PUT", "/api/forecast/events/" + ev, map[string]any{"name": "z"}, writers},
			{"DELETE", "/api/forecast/events/" + ev, nil, writers},
		}
		for _, ep := range eps {
			r := s.Do(ep.method, ep.path, s.Key(role), ep.body)
			allowed := false
			for _, a := range ep.allowed {
				allowed = allowed || a == role
			}
			if allowed && (r.Status < 200 || r.Status > 299) {
				t.Errorf("%s %s as %s = %d, want 2xx (%s)", ep.method, ep.path, role, r.Status, r.Body)
			}
			if !allowed && (r.Status != 403 || r.Code() != "FORBIDDEN") {
				t.Errorf("%s %s as %s = %d, want 403 FORBIDDEN (%s)", ep.method, ep.path, role, r.Status, r.Body)
			}
		}
	}
}

func TestTenantIsolation(t *testing.T) {
	s := MustStart(t, "")
	p := s.Key("platform")
	id := str(s.Do("POST", "/api/platform/organizations", p, map[string]any{"name": "B", "slug": "b",
		"entitlements": []string{"ai.forecasting.demand"}}).Must(t, 201), "organization", "id")
	b := s.Do("POST", "/api/platform/organizations/"+id+"/api-keys", p, map[string]any{"role": "ADMIN"}).Must(t, 201)["key"].(string)
	a := s.Key("ADMIN")
	sc := str(s.Do("POST", "/api/forecast/scenarios", a, map[string]any{"name": "secret plan"}).Must(t, 201), "scenario", "id")
	ev := s.Do("POST", "/api/forecast/events", a, map[string]any{"name": "secret event", "startsAt": "2030-01-01", "endsAt": "2030-01-02"}).Must(t, 201)["id"].(string)

	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/forecast/scenarios/" + sc},
		{"PUT", "/api/forecast/scenarios/" + sc},
		{"POST", "/api/forecast/scenarios/" + sc + "/publish"},
		{"DELETE", "/api/forecast/scenarios/" + sc},
		{"GET", "/api/forecast/events/" + ev},
		{"PUT", "/api/forecast/events/" + ev},
		{"DELETE", "/api/forecast/events/" + ev},
	} {
		if r := s.Do(tc.method, tc.path, b, map[string]any{"name": "hijack"}); r.Status != 404 {
			t.Errorf("org B %s %s = %d, want 404", tc.method, tc.path, r.Status)
		}
	}
	if l := list(s.Do("GET", "/api/forecast/scenarios?includeArchived=true", b, nil).Must(t, 200), "scenarios"); len(l) != 0 {
		t.Errorf("org B lists A's scenarios: %v", l)
	}
	if body := s.Do("GET", "/api/forecast/events?from=2029-01-01&to=2031-01-01", b, nil).Must(t, 200); len(list(body, "events")) != 0 {
		t.Errorf("org B lists A's events: %v", body)
	}
	// A's data is untouched.
	got := s.Do("GET", "/api/forecast/scenarios/"+sc, a, nil).Must(t, 200)
	if str(got, "scenario", "name") != "secret plan" || str(got, "scenario", "status") != "DRAFT" {
		t.Fatalf("A's scenario changed: %v", got)
	}
	if e := s.Do("GET", "/api/forecast/events/"+ev, a, nil).Must(t, 200); e["name"] != "secret event" {
		t.Fatalf("A's event changed: %v", e)
	}
}

func TestBadInputsLeaveStateUnchanged(t *testing.T) {
	s := MustStart(t, "")
	k := s.Key("ADMIN")
	sc := str(s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": "keep"}).Must(t, 201), "scenario", "id")
	ev := s.Do("POST", "/api/forecast/events", k, map[string]any{"name": "keep", "startsAt": "2030-01-01", "endsAt": "2030-01-05"}).Must(t, 201)["id"].(string)
	snapshot := func() string {
		a := s.Do("GET", "/api/forecast/scenarios?includeArchived=true", k, nil).Body
		b := s.Do("GET", "/api/forecast/events?from=2000-01-01&to=2100-01-01", k, nil).Body
		return string(a) + string(b)
	}
	before := snapshot()
	huge := `{"name":"` + strings.Repeat("x", 1<<20+10) + `"}`
	cases := []struct {
		name, method, path, body string
		status                   int
		field                    string
	}{
		{"malformed", "POST", "/api/forecast/scenarios", `{"name":`, 400, "body"},
		{"not an object", "POST", "/api/forecast/scenarios", `["name"]`, 400, "body"},
		{"empty body", "POST", "/api/forecast/scenarios", ``, 400, "body"},
		{"trailing data", "POST", "/api/forecast/scenarios", `{"name":"a"} {"name":"b"}`, 400, "body"},
		{"name wrong type", "POST", "/api/forecast/scenarios", `{"name":5}`, 400, "name"},
		{"empty name", "POST", "/api/forecast/scenarios", `{"name":"  "}`, 400, "name"},
		{"missing name", "POST", "/api/forecast/scenarios", `{"type":"CUSTOM"}`, 400, "name"},
		{"unknown type", "POST", "/api/forecast/scenarios", `{"name":"a","type":"WILD"}`, 400, "type"},
		{"lift too high", "POST", "/api/forecast/scenarios", `{"name":"a","assumptions":{"globalLiftPct":5.01}}`, 400, "assumptions.globalLiftPct"},
		{"lift too low", "POST", "/api/forecast/scenarios", `{"name":"a","assumptions":{"globalLiftPct":-1.5}}`, 400, "assumptions.globalLiftPct"},
		{"lift is string", "POST", "/api/forecast/scenarios", `{"name":"a","assumptions":{"globalLiftPct":"0.1"}}`, 400, "assumptions.globalLiftPct"},
		{"category without id", "POST", "/api/forecast/scenarios", `{"name":"a","assumptions":{"categoryAdjustments":[{"liftPct":0.1}]}}`, 400, "assumptions.categoryAdjustments[0].categoryId"},
		{"status on create", "POST", "/api/forecast/scenarios", `{"name":"a","status":"PUBLISHED"}`, 400, "status"},
		{"huge body", "POST", "/api/forecast/scenarios", huge, 413, "body"},
		{"update wrong type", "PUT", "/api/forecast/scenarios/" + sc, `{"description":false}`, 400, "description"},
		{"update empty name", "PUT", "/api/forecast/scenarios/" + sc, `{"name":""}`, 400, "name"},
		{"update bad lift", "PUT", "/api/forecast/scenarios/" + sc, `{"assumptions":{"channelAdjustments":[{"channelId":"X","liftPct":9}]}}`, 400, "assumptions.channelAdjustments[0].liftPct"},
		{"event no dates", "POST", "/api/forecast/events", `{"name":"a"}`, 400, "startsAt"},
		{"event bad date", "POST", "/api/forecast/events", `{"name":"a","startsAt":"soon","endsAt":"2030-01-01"}`, 400, "startsAt"},
		{"event reversed", "POST", "/api/forecast/events", `{"name":"a","startsAt":"2030-01-02","endsAt":"2030-01-01"}`, 400, "endsAt"},
		{"event equal times", "POST", "/api/forecast/events", `{"name":"a","startsAt":"2030-01-01T00:00:00Z","endsAt":"2030-01-01T00:00:00Z"}`, 400, "endsAt"},
		{"event lift range", "POST", "/api/forecast/events", `{"name":"a","startsAt":"2030-01-01","endsAt":"2030-01-02","value":{"liftPct":-1}}`, 400, "value.liftPct"},
		{"event bad type", "POST", "/api/forecast/events", `{"name":"a","type":"PARTY","startsAt":"2030-01-01","endsAt":"2030-01-02"}`, 400, "type"},
		{"event bad stacking", "POST", "/api/forecast/events", `{"name":"a","startsAt":"2030-01-01","endsAt":"2030-01-02","value":{"stackingMode":"MAX"}}`, 400, "value.stackingMode"},
		{"event value not object", "POST", "/api/forecast/events", `{"name":"a","startsAt":"2030-01-01","endsAt":"2030-01-02","value":3}`, 400, "value"},
		{"event update reversed", "PUT", "/api/forecast/events/" + ev, `{"startsAt":"2031-01-01"}`, 400, "endsAt"},
		{"event update null lift type", "PUT", "/api/forecast/events/" + ev, `{"value":{"liftPct":"high"}}`, 400, "value.liftPct"},
		{"event huge", "POST", "/api/forecast/events", huge, 413, "body"},
	}
	for _, tc := range cases {
		r := s.Do(tc.method, tc.path, k, tc.body)
		if r.Status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, r.Status, tc.status, r.Body)
			continue
		}
		body := r.JSON(t)
		details, _ := body["details"].(map[string]any)
		if body["error"] == "" || body["code"] == "" || details[tc.field] == nil {
			t.Errorf("%s: body %s does not name field %q", tc.name, r.Body, tc.field)
		}
	}
	if after := snapshot(); after != before {
		t.Fatalf("bad inputs changed state:\nbefore %s\nafter  %s", before, after)
	}
}

func TestWritesSurviveRestart(t *testing.T) {
	s := MustStart(t, "", func(c *Config) { c.SnapshotEvery = 7 }) // exercise snapshots and replay
	k := s.Key("PLANNER")
	var ids []string
	for i := 0; i < 25; i++ {
		ids = append(ids, str(s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": fmt.Sprintf("s%d", i)}).Must(t, 201), "scenario", "id"))
	}
	s.Do("POST", "/api/forecast/scenarios/"+ids[3]+"/publish", k, nil).Must(t, 200)
	s.Do("DELETE", "/api/forecast/scenarios/"+ids[4], k, nil).Must(t, 200)
	before := s.Do("GET", "/api/forecast/scenarios?includeArchived=true", k, nil).Must(t, 200)
	s2 := s.Restart()
	after := s2.Do("GET", "/api/forecast/scenarios?includeArchived=true", k, nil).Must(t, 200)
	bb, _ := json.Marshal(before)
	ab, _ := json.Marshal(after)
	if string(bb) != string(ab) {
		t.Fatalf("state differs after restart:\n%s\n%s", bb, ab)
	}
}

func TestConcurrentWritersLoseNothing(t *testing.T) {
	s := MustStart(t, "")
	k := s.Key("ADMIN")
	const writers, each = 16, 25
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r := doRequest(t, s.URL, "POST", "/api/forecast/events", map[string]string{"Authorization": "Bearer " + k},
					map[string]any{"name": fmt.Sprintf("w%d-%d", w, i), "startsAt": "2030-01-01", "endsAt": "2030-01-02"})
				if r.Status != 201 {
					t.Errorf("write: %d %s", r.Status, r.Body)
					return
				}
				var e map[string]any
				_ = json.Unmarshal(r.Body, &e)
				mu.Lock()
				acked[e["id"].(string)] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s2 := s.Restart()
	l := list(s2.Do("GET", "/api/forecast/events?from=2029-12-01&to=2030-02-01", k, nil).Must(t, 200), "events")
	if len(l) != writers*each {
		t.Fatalf("%d events after restart, want %d", len(l), writers*each)
	}
	for _, e := range l {
		delete(acked, e.(map[string]any)["id"].(string))
	}
	if len(acked) != 0 {
		t.Fatalf("%d acknowledged events missing", len(acked))
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	s := MustStart(t, "")
	if r := s.Do("GET", "/api/nothing", s.Key("ADMIN"), nil); r.Status != 404 || r.Code() != "NOT_FOUND" {
		t.Errorf("unknown route = %d %s", r.Status, r.Body)
	}
	r := s.Do("PATCH", "/api/forecast/scenarios", s.Key("ADMIN"), nil)
	if r.Status != 405 || r.Header.Get("Allow") != "GET, POST" {
		t.Errorf("wrong method = %d allow %q", r.Status, r.Header.Get("Allow"))
	}
}
