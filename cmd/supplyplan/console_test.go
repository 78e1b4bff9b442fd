package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/textproto"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// consoleClient is a browser-like client of the console: a cookie jar and no redirect following.
type consoleClient struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func newConsoleClient(t *testing.T, s *testServer) *consoleClient {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &consoleClient{t: t, base: "http://" + s.Main.Console.Addr(), c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type consoleResp struct {
	Status int
	Body   string
	Header http.Header
}

func (cc *consoleClient) do(method, path string, form url.Values, headers map[string]string) consoleResp {
	cc.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, cc.base+path, body)
	if err != nil {
		cc.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := cc.c.Do(req)
	if err != nil {
		cc.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return consoleResp{Status: res.StatusCode, Body: string(b), Header: res.Header}
}

var csrfMeta = regexp.MustCompile(`name="(?:csrf-token" content|_csrf" value)="([^"]+)"`)

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfMeta.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in %q", body)
	}
	return m[1]
}

// signIn signs in with key and keeps the session's CSRF token.
func (cc *consoleClient) signIn(key string) consoleResp {
	cc.t.Helper()
	form := cc.do("GET", "/login", nil, nil)
	if form.Status != 200 {
		cc.t.Fatalf("GET /login: %d", form.Status)
	}
	r := cc.do("POST", "/login", url.Values{"_csrf": {csrfOf(cc.t, form.Body)}, "apiKey": {key}, "next": {"/"}}, nil)
	if r.Status == 303 {
		home := cc.do("GET", r.Header.Get("Location"), nil, nil)
		if home.Status != 200 {
			cc.t.Fatalf("after sign-in GET %s: %d %s", r.Header.Get("Location"), home.Status, home.Body)
		}
		cc.csrf = csrfOf(cc.t, home.Body)
	}
	return r
}

func TestConsoleSignInSessionAndCSRF(t *testing.T) {
	s := MustStart(t, "")
	cc := newConsoleClient(t, s)

	// Without a session a page redirects to the sign-in form, and a POST is refused.
	if r := cc.do("GET", "/recommendations?status=PENDING", nil, nil); r.Status != 303 ||
		r.Header.Get("Location") != "/login?next=%2Frecommendations%3Fstatus%3DPENDING" {
		t.Fatalf("anonymous page: %d %v", r.Status, r.Header)
	}
	if r := cc.do("POST", "/recommendations/generate", url.Values{}, nil); r.Status != 401 {
		t.Fatalf("anonymous POST: %d", r.Status)
	}
	login := cc.do("GET", "/login", nil, nil)
	csp := login.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Fatalf("CSP = %q", csp)
	}
	if strings.Contains(login.Body, "<script>") || strings.Contains(login.Body, " style=") || strings.Contains(login.Body, "onclick") {
		t.Fatalf("inline script or style in the page: %s", login.Body)
	}
	// The sign-in form itself needs its token.
	if r := cc.do("POST", "/login", url.Values{"apiKey": {s.Key("ADMIN")}}, nil); r.Status != 403 {
		t.Fatalf("sign-in without token: %d", r.Status)
	}
	tok := csrfOf(t, login.Body)
	if r := cc.do("POST", "/login", url.Values{"_csrf": {tok}, "apiKey": {"sp_live_nope"}}, nil); r.Status != 401 || !strings.Contains(r.Body, "unknown or revoked key") {
		t.Fatalf("unknown key: %d %s", r.Status, r.Body)
	}
	if r := cc.do("POST", "/login", url.Values{"_csrf": {tok}, "apiKey": {s.Key("import")}}, nil); r.Status != 401 || !strings.Contains(r.Body, "import keys cannot sign in") {
		t.Fatalf("import key: %d %s", r.Status, r.Body)
	}
	r := cc.signIn(s.Key("ADMIN"))
	if r.Status != 303 {
		t.Fatalf("sign-in: %d %s", r.Status, r.Body)
	}
	cookie := r.Header.Get("Set-Cookie")
	for _, want := range []string{"sp_console=", "HttpOnly", "SameSite=Strict", "path=/"} {
		if !strings.Contains(strings.ToLower(cookie), strings.ToLower(want)) {
			t.Fatalf("session cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, s.Key("ADMIN")) {
		t.Fatal("the key is in the cookie")
	}
	home := cc.do("GET", "/", nil, nil)
	if home.Status != 200 || !strings.Contains(home.Body, "Demo") || home.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("home: %d %v", home.Status, home.Header)
	}

	// CSRF: a write without the token, or with a wrong one, is refused and changes nothing.
	form := url.Values{"name": {"Forged"}, "type": {"CUSTOM"}}
	if r := cc.do("POST", "/forecast/scenarios", form, nil); r.Status != 403 || !strings.Contains(r.Body, "CSRF") {
		t.Fatalf("POST without token: %d %s", r.Status, r.Body)
	}
	wrong := "x" + cc.csrf[1:]
	if cc.csrf[0] == 'x' {
		wrong = "y" + cc.csrf[1:]
	}
	form.Set("_csrf", wrong)
	if r := cc.do("POST", "/forecast/scenarios", form, nil); r.Status != 403 {
		t.Fatalf("POST with a wrong token: %d", r.Status)
	}
	// A cross-origin POST is refused even with the token.
	form.Set("_csrf", cc.csrf)
	if r := cc.do("POST", "/forecast/scenarios", form, map[string]string{"Origin": "http://evil.example"}); r.Status != 403 {
		t.Fatalf("cross-origin POST: %d", r.Status)
	}
	if got := list(s.Do("GET", "/api/forecast/scenarios", s.Key("ADMIN"), nil).Must(t, 200), "scenarios"); len(got) != 0 {
		t.Fatalf("refused POSTs created %v", got)
	}
	// With the token (form field or header) it works.
	if r := cc.do("POST", "/forecast/scenarios", form, nil); r.Status != 303 {
		t.Fatalf("POST with token: %d %s", r.Status, r.Body)
	}
	// The header htmx sends (console.js) is accepted in place of the field.
	if r := cc.do("POST", "/forecast/scenarios", url.Values{"name": {"By header"}, "type": {"CUSTOM"}},
		map[string]string{"X-CSRF-Token": cc.csrf, "HX-Request": "true"}); r.Status != 303 {
		t.Fatalf("POST with the token header: %d %s", r.Status, r.Body)
	}
	if got := list(s.Do("GET", "/api/forecast/scenarios", s.Key("ADMIN"), nil).Must(t, 200), "scenarios"); len(got) != 2 {
		t.Fatalf("scenarios = %v", got)
	}

	// Sign-out revokes the session on the server: the old cookie no longer works.
	sessions := s.Main.Console.SessionCount()
	u, _ := url.Parse(cc.base)
	old := cc.c.Jar.Cookies(u)
	if r := cc.do("POST", "/logout", url.Values{"_csrf": {cc.csrf}}, nil); r.Status != 303 {
		t.Fatalf("logout: %d", r.Status)
	}
	if got := s.Main.Console.SessionCount(); got != sessions-1 {
		t.Fatalf("sessions %d after sign-out, want %d", got, sessions-1)
	}
	cc.c.Jar.SetCookies(u, old)
	if r := cc.do("GET", "/", nil, nil); r.Status != 303 {
		t.Fatalf("old cookie after sign-out: %d", r.Status)
	}
}

func TestConsoleRolesAreEnforcedByTheServer(t *testing.T) {
	s := MustStart(t, "")
	seedStock(t, s)
	gen := s.Do("POST", "/api/transfers/recommendations", s.Key("PLANNER"), map[string]any{"unitMargin": 6}).Must(t, 200)
	id := str(list(gen, "recommendations")[0].(map[string]any), "id")

	viewer := newConsoleClient(t, s)
	if r := viewer.signIn(s.Key("VIEWER")); r.Status != 303 {
		t.Fatalf("viewer sign-in: %d", r.Status)
	}
	page := viewer.do("GET", "/recommendations?status=PENDING", nil, nil)
	if page.Status != 200 || !strings.Contains(page.Body, id) {
		t.Fatalf("viewer list: %d", page.Status)
	}
	for _, ctl := range []string{"/approve", "/reject", "/execute", "/recommendations/bulk", "/recommendations/generate"} {
		if strings.Contains(page.Body, ctl) {
			t.Fatalf("viewer page has the %s control", ctl)
		}
	}
	// A forged POST with a valid session and token is refused by the server, as the API refuses it.
	for _, path := range []string{"/recommendations/" + id + "/approve", "/recommendations/" + id + "/execute", "/recommendations/generate"} {
		if r := viewer.do("POST", path, url.Values{"_csrf": {viewer.csrf}}, nil); r.Status != 403 {
			t.Fatalf("viewer POST %s: %d %s", path, r.Status, r.Body)
		}
	}
	if r := viewer.do("POST", "/recommendations/bulk", url.Values{"_csrf": {viewer.csrf}, "action": {"approve"}, "step": {"apply"}, "id": {id}}, nil); r.Status != 403 {
		t.Fatalf("viewer bulk: %d", r.Status)
	}
	if r := viewer.do("GET", "/alerts", nil, nil); r.Status != 403 {
		t.Fatalf("viewer alerts: %d", r.Status)
	}
	if r := viewer.do("GET", "/platform", nil, nil); r.Status != 403 {
		t.Fatalf("viewer platform: %d", r.Status)
	}
	if st := str(s.Do("GET", "/api/transfers/recommendations/"+id, s.Key("VIEWER"), nil).Must(t, 200), "recommendation", "status"); st != "PENDING" {
		t.Fatalf("status after forged POSTs: %s", st)
	}

	// A PLANNER may generate but not approve, as on the API.
	planner := newConsoleClient(t, s)
	planner.signIn(s.Key("PLANNER"))
	if r := planner.do("POST", "/recommendations/"+id+"/approve", url.Values{"_csrf": {planner.csrf}}, nil); r.Status != 403 {
		t.Fatalf("planner approve: %d", r.Status)
	}

	// The platform key sees the platform screens, not the tenant ones.
	platform := newConsoleClient(t, s)
	if r := platform.signIn(s.Key("platform")); r.Status != 303 || r.Header.Get("Location") != "/platform" {
		t.Fatalf("platform sign-in: %d %v", r.Status, r.Header.Get("Location"))
	}
	if r := platform.do("GET", "/platform", nil, nil); r.Status != 200 || !strings.Contains(r.Body, "Demo") {
		t.Fatalf("platform page: %d", r.Status)
	}
	if r := platform.do("GET", "/recommendations", nil, nil); r.Status != 403 {
		t.Fatalf("platform on a tenant page: %d", r.Status)
	}

	// Revoking a key ends its console sessions at once.
	key := s.Do("POST", "/api/platform/organizations/"+s.Creds.Organization.ID+"/api-keys", s.Key("platform"),
		map[string]any{"role": "MANAGER", "name": "console"}).Must(t, 201)
	manager := newConsoleClient(t, s)
	if r := manager.signIn(str(key, "key")); r.Status != 303 {
		t.Fatalf("manager sign-in: %d %v", r.Status, key)
	}
	s.Do("DELETE", "/api/platform/organizations/"+s.Creds.Organization.ID+"/api-keys/"+str(key, "apiKey", "id"), s.Key("platform"), nil)
	if r := manager.do("GET", "/recommendations", nil, nil); r.Status != 303 {
		t.Fatalf("session of a revoked key: %d", r.Status)
	}
	if r := manager.do("POST", "/recommendations/"+id+"/approve", url.Values{"_csrf": {manager.csrf}}, nil); r.Status != 401 {
		t.Fatalf("POST of a revoked key's session: %d", r.Status)
	}
}

func TestConsoleBulkActionIsBoundToTheDryRun(t *testing.T) {
	s := MustStart(t, "")
	seedStock(t, s)
	gen := s.Do("POST", "/api/transfers/recommendations", s.Key("PLANNER"), map[string]any{"unitMargin": 6}).Must(t, 200)
	id := str(list(gen, "recommendations")[0].(map[string]any), "id")
	cc := newConsoleClient(t, s)
	cc.signIn(s.Key("MANAGER"))
	// The preview changes nothing and names the filter and the exact count.
	pre := cc.do("POST", "/recommendations/bulk", url.Values{"_csrf": {cc.csrf}, "step": {"preview"}, "action": {"approve"},
		"status": {"PENDING"}, "dest": {"STORE"}}, nil)
	if pre.Status != 200 || !strings.Contains(pre.Body, "status = PENDING, destination = STORE") ||
		!strings.Contains(pre.Body, `<strong id="bulk-count">1</strong>`) || !strings.Contains(pre.Body, `name="id" value="`+id+`"`) {
		t.Fatalf("preview: %d %s", pre.Status, pre.Body)
	}
	if st := str(s.Do("GET", "/api/transfers/recommendations/"+id, s.Key("VIEWER"), nil).Must(t, 200), "recommendation", "status"); st != "PENDING" {
		t.Fatalf("status after the dry run: %s", st)
	}
	// A filter that matches nothing has nothing to confirm.
	none := cc.do("POST", "/recommendations/bulk", url.Values{"_csrf": {cc.csrf}, "action": {"approve"}, "status": {"PENDING"}, "dest": {"ELSEWHERE"}}, nil)
	if !strings.Contains(none.Body, `<strong id="bulk-count">0</strong>`) || strings.Contains(none.Body, "Confirm") {
		t.Fatalf("empty preview: %s", none.Body)
	}
	// A recommendation created after the preview is not touched by its confirmation.
	s.Import("inventory", map[string]any{"levels": []any{map[string]any{"skuId": "P", "locationId": "SHOP", "quantityOnHand": 1, "reorderPoint": 40}}})
	gen2 := s.Do("POST", "/api/transfers/recommendations", s.Key("PLANNER"), map[string]any{"unitMargin": 6}).Must(t, 200)
	apply := cc.do("POST", "/recommendations/bulk", url.Values{"_csrf": {cc.csrf}, "step": {"apply"}, "action": {"approve"},
		"status": {"PENDING"}, "id": {id}}, nil)
	if apply.Status != 200 || !strings.Contains(apply.Body, `<strong id="bulk-done">1</strong>`) {
		t.Fatalf("apply: %d %s", apply.Status, apply.Body)
	}
	if st := str(s.Do("GET", "/api/transfers/recommendations/"+id, s.Key("VIEWER"), nil).Must(t, 200), "recommendation", "status"); st != "APPROVED" {
		t.Fatalf("status after apply: %s", st)
	}
	for _, x := range list(gen2, "recommendations") {
		other := str(x.(map[string]any), "id")
		if st := str(s.Do("GET", "/api/transfers/recommendations/"+other, s.Key("VIEWER"), nil).Must(t, 200), "recommendation", "status"); st != "PENDING" {
			t.Fatalf("a recommendation created after the preview is %s", st)
		}
	}
}

var (
	keySecretRe      = regexp.MustCompile(`id="key-secret">(sp_[A-Za-z0-9_]+)<`)
	endpointSecretRe = regexp.MustCompile(`id="endpoint-secret">(whsec_[^<]+)<`)
)

func TestConsolePlatformKeysAndWebhookEndpoints(t *testing.T) {
	s := MustStart(t, "")
	org := s.Creds.Organization.ID
	platform := newConsoleClient(t, s)
	platform.signIn(s.Key("platform"))

	// A key created on the console is shown once and works; revoked there, it stops working.
	r := platform.do("POST", "/platform/orgs/"+org+"/keys", url.Values{"_csrf": {platform.csrf}, "name": {"console"}, "role": {"VIEWER"}}, nil)
	m := keySecretRe.FindStringSubmatch(r.Body)
	if r.Status != 200 || m == nil {
		t.Fatalf("create key: %d %s", r.Status, r.Body)
	}
	secret := m[1]
	if got := s.Do("GET", "/api/transfers/recommendations", secret, nil).Status; got != 200 {
		t.Fatalf("new key: %d", got)
	}
	if again := platform.do("GET", "/platform/orgs/"+org, nil, nil); strings.Contains(again.Body, secret) {
		t.Fatal("the secret is shown again")
	}
	var keyID string
	for _, k := range list(s.Do("GET", "/api/platform/organizations/"+org+"/api-keys", s.Key("platform"), nil).Must(t, 200), "apiKeys") {
		if str(k.(map[string]any), "name") == "console" {
			keyID = str(k.(map[string]any), "id")
		}
	}
	if keyID == "" {
		t.Fatal("the created key is not listed")
	}
	if r := platform.do("POST", "/platform/orgs/"+org+"/keys/"+keyID+"/revoke", url.Values{"_csrf": {platform.csrf}}, nil); r.Status != 303 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if got := s.Do("GET", "/api/transfers/recommendations", secret, nil).Status; got != 401 {
		t.Fatalf("revoked key: %d", got)
	}
	// A tenant session cannot use the platform screens' writes.
	admin := newConsoleClient(t, s)
	admin.signIn(s.Key("ADMIN"))
	if r := admin.do("POST", "/platform/orgs/"+org+"/keys", url.Values{"_csrf": {admin.csrf}, "role": {"ADMIN"}}, nil); r.Status != 403 {
		t.Fatalf("tenant creates a key: %d", r.Status)
	}

	// Webhook endpoints: the API's validation message next to the field, the secret shown once.
	bad := admin.do("POST", "/webhooks", url.Values{"_csrf": {admin.csrf}, "url": {"ftp://example.com/x"}}, nil)
	if bad.Status != 400 || !strings.Contains(bad.Body, `class="field-error"`) {
		t.Fatalf("bad URL: %d %s", bad.Status, bad.Body)
	}
	ok := admin.do("POST", "/webhooks", url.Values{"_csrf": {admin.csrf}, "url": {"https://example.com/hook"}, "eventTypes": {"import.completed"}}, nil)
	if ok.Status != 200 || endpointSecretRe.FindStringSubmatch(ok.Body) == nil {
		t.Fatalf("create endpoint: %d %s", ok.Status, ok.Body)
	}
	eps := list(s.Do("GET", "/api/webhooks/endpoints", s.Key("ADMIN"), nil).Must(t, 200), "endpoints")
	if len(eps) != 1 || str(eps[0].(map[string]any), "url") != "https://example.com/hook" {
		t.Fatalf("endpoints = %v", eps)
	}
	if page := admin.do("GET", "/webhooks/"+str(eps[0].(map[string]any), "id"), nil, nil); page.Status != 200 || !strings.Contains(page.Body, "Deliveries (0)") {
		t.Fatalf("endpoint page: %d", page.Status)
	}
	// A MANAGER has no webhook permission: neither the screen nor the write.
	manager := newConsoleClient(t, s)
	manager.signIn(s.Key("MANAGER"))
	if r := manager.do("POST", "/webhooks", url.Values{"_csrf": {manager.csrf}, "url": {"https://example.com/2"}}, nil); r.Status != 403 {
		t.Fatalf("manager creates an endpoint: %d", r.Status)
	}
}

// upload posts a multipart form with one file part, as the imports screen's form does.
func (cc *consoleClient) upload(path string, fields map[string]string, field, filename, contentType, content string) consoleResp {
	cc.t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			cc.t.Fatal(err)
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="`+field+`"; filename="`+filename+`"`)
	h.Set("Content-Type", contentType)
	w, err := mw.CreatePart(h)
	if err != nil {
		cc.t.Fatal(err)
	}
	_, _ = w.Write([]byte(content))
	if err := mw.Close(); err != nil {
		cc.t.Fatal(err)
	}
	req, err := http.NewRequest("POST", cc.base+path, &b)
	if err != nil {
		cc.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := cc.c.Do(req)
	if err != nil {
		cc.t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return consoleResp{Status: res.StatusCode, Body: string(body), Header: res.Header}
}

// TestConsoleImportsCSVUpload uploads a CSV file on the imports screen: it is converted as the
// API converts a text/csv body, checked against the import key as the API checks it, and its job
// completes with the rows applied and the bad one rejected.
func TestConsoleImportsCSVUpload(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"P"}, []string{"STORE"})
	cc := newConsoleClient(t, s)
	if r := cc.signIn(s.Key("PLANNER")); r.Status != 303 {
		t.Fatalf("sign-in: %d %s", r.Status, r.Body)
	}
	csvFile := "skuId,locationId,weekStarting,actualDemand\nP,STORE,2026-01-05,7\nP,STORE,2026-01-12,9.5\n,STORE,2026-01-19,3\n"
	form := map[string]string{"_csrf": cc.csrf, "kind": "demand-history"}

	// A role key is not an import key: refused as the API refuses it, nothing submitted.
	form["importKey"] = s.Key("ADMIN")
	if r := cc.upload("/imports", form, "file", "demand.csv", "text/csv", csvFile); r.Status != 400 || !strings.Contains(r.Body, "must be an import key of this organization") {
		t.Fatalf("role key as import key: %d %s", r.Status, r.Body)
	}
	// A column the kind does not have: the API's message, naming the column.
	form["importKey"] = s.Key("import")
	if r := cc.upload("/imports", form, "file", "demand.csv", "text/csv", "skuId,colour\nP,red\n"); r.Status != 400 || !strings.Contains(r.Body, "is not a column of a demand-history import") {
		t.Fatalf("unknown column: %d %s", r.Status, r.Body)
	}
	// Named .csv but sent as application/octet-stream (as some browsers do): still CSV.
	r := cc.upload("/imports", form, "file", "demand.csv", "application/octet-stream", csvFile)
	if r.Status != 303 || !strings.HasPrefix(r.Header.Get("Location"), "/imports/") {
		t.Fatalf("CSV upload: %d %s", r.Status, r.Body)
	}
	jobID := strings.TrimPrefix(r.Header.Get("Location"), "/imports/")
	job := s.WaitJob(s.Key("import"), jobID)
	if str(job, "status") != "COMPLETED" || num(job, "rowCount") != 3 || num(job, "appliedCount") != 2 || num(job, "failedCount") != 1 {
		t.Fatalf("job: %v", job)
	}
	page := cc.do("GET", "/imports/"+jobID, nil, nil)
	if page.Status != 200 || !strings.Contains(page.Body, `data-status="COMPLETED"`) || !strings.Contains(page.Body, "3 of 3 rows processed") {
		t.Fatalf("job page: %d %s", page.Status, page.Body)
	}
	hist := s.Do("GET", "/api/demand/history?skuId=P&locationId=STORE", s.Key("VIEWER"), nil).Must(t, 200)
	if b, _ := json.Marshal(hist); !strings.Contains(string(b), "9.5") {
		t.Fatalf("imported history: %v", hist)
	}
}

// TestConsoleLoopInstances: an instance started and moved through the runtime's service is listed
// on the loops screen of its organization (filters in the URL) and its page shows the audit
// timeline and the verification of its hash chain; the screens are read-only.
func TestConsoleLoopInstances(t *testing.T) {
	s := startRuntime(t)
	rtm := s.Main.System.LoopRuntime
	org, ok := rtm.Organization("demo")
	if !ok {
		t.Fatal("no demo organization")
	}
	ctx := context.Background()
	c := supplyplan.LoopRunCaller{OrgID: org.ID, Actor: supplyplan.LoopActor{Type: supplyplan.LoopActorUser, Sub: "user:alice"},
		Roles: supplyplan.LoopRolesOf(false, true)}
	res, err := rtm.StartInstance(ctx, c, supplyplan.LoopStartInput{Loop: "supplyplan/procurement", BusinessKey: "T-1"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Instance.ID
	if _, err := rtm.Transition(ctx, c, id, supplyplan.LoopTransitionInput{Name: "submit", Roles: c.Roles}); err != nil {
		t.Fatal(err)
	}
	lot, err := rtm.StartInstance(ctx, c, supplyplan.LoopStartInput{Loop: "supplyplan/quality", BusinessKey: "LOT-9"})
	if err != nil {
		t.Fatal(err)
	}
	// 13 suspend/resume cycles: 27 events, a timeline of two pages.
	for i := 0; i < 13; i++ {
		for _, a := range []string{supplyplan.LoopActionSuspend, supplyplan.LoopActionResume} {
			if _, err := rtm.Lifecycle(ctx, c, lot.Instance.ID, a, supplyplan.LoopLifecycleInput{Reason: fmt.Sprintf("%s %d", a, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}

	cc := newConsoleClient(t, s)
	if r := cc.signIn(s.Key("VIEWER")); r.Status != 303 {
		t.Fatalf("sign-in: %d %s", r.Status, r.Body)
	}
	all := cc.do("GET", "/loops/instances", nil, nil)
	if all.Status != 200 || !strings.Contains(all.Body, id) || !strings.Contains(all.Body, "LOT-9") {
		t.Fatalf("instances: %d %s", all.Status, all.Body)
	}
	// The filters live in the URL.
	for _, q := range []string{"?businessKey=T-1", "?loop=supplyplan/procurement", "?status=RUNNING&businessKey=T-1"} {
		r := cc.do("GET", "/loops/instances"+q, nil, nil)
		if r.Status != 200 || !strings.Contains(r.Body, id) || strings.Contains(r.Body, "LOT-9") {
			t.Fatalf("instances%s: %d %s", q, r.Status, r.Body)
		}
	}
	if r := cc.do("GET", "/loops/instances?status=COMPLETED", nil, nil); r.Status != 200 || strings.Contains(r.Body, id) || !strings.Contains(r.Body, "No instance.") {
		t.Fatalf("completed instances: %d %s", r.Status, r.Body)
	}
	if r := cc.do("GET", "/loops/instances?status=DONE", nil, nil); r.Status != 400 || !strings.Contains(r.Body, "status") {
		t.Fatalf("bad status: %d %s", r.Status, r.Body)
	}

	page := cc.do("GET", "/loops/instances/"+id, nil, nil)
	if page.Status != 200 || !strings.Contains(page.Body, `data-valid="true"`) || !strings.Contains(page.Body, "hash chain intact up to seq 2") {
		t.Fatalf("instance page: %d %s", page.Status, page.Body)
	}
	timeline := page.Body[strings.Index(page.Body, `id="timeline"`):]
	for _, want := range []string{"<td>1</td>", "<td>2</td>", "<td>draft</td>", "<td>submit</td>", "user user:alice"} {
		if !strings.Contains(timeline, want) {
			t.Fatalf("timeline lacks %q: %s", want, timeline)
		}
	}
	if strings.Contains(page.Body, "<form method=\"post\"") && strings.Contains(page.Body, "/transitions") {
		t.Fatal("the instance page offers a write")
	}
	// The timeline a page at a time: 25 events, then the events after seq 25.
	first := cc.do("GET", "/loops/instances/"+lot.Instance.ID, nil, nil)
	if first.Status != 200 || !strings.Contains(first.Body, "<td>25</td>") || strings.Contains(first.Body, "<td>26</td>") ||
		!strings.Contains(first.Body, "hash chain intact up to seq 27") || !strings.Contains(first.Body, "?afterSeq=25") {
		t.Fatalf("first timeline page: %d %s", first.Status, first.Body)
	}
	later := cc.do("GET", "/loops/instances/"+lot.Instance.ID+"?afterSeq=25", nil, nil)
	if later.Status != 200 || !strings.Contains(later.Body, "<td>26</td>") || !strings.Contains(later.Body, "<td>27</td>") ||
		strings.Contains(later.Body, "<td>25</td>") || !strings.Contains(later.Body, "resume 12") || strings.Contains(later.Body, "Later events") {
		t.Fatalf("second timeline page: %d %s", later.Status, later.Body)
	}
	if r := cc.do("GET", "/loops/instances/nope", nil, nil); r.Status != 404 {
		t.Fatalf("unknown instance: %d", r.Status)
	}
	// Another organization's session sees none of them.
	o := s.Do("POST", "/api/platform/organizations", s.Key("platform"), map[string]any{"name": "Acme", "slug": "acme"}).Must(t, 201)
	other := s.Do("POST", "/api/platform/organizations/"+str(o, "organization", "id")+"/api-keys", s.Key("platform"), map[string]any{"role": "ADMIN"}).Must(t, 201)["key"].(string)
	oc := newConsoleClient(t, s)
	if r := oc.signIn(other); r.Status != 303 {
		t.Fatalf("other sign-in: %d %s", r.Status, r.Body)
	}
	if r := oc.do("GET", "/loops/instances", nil, nil); r.Status != 200 || strings.Contains(r.Body, id) || strings.Contains(r.Body, "LOT-9") {
		t.Fatalf("other org's instances: %d %s", r.Status, r.Body)
	}
	if r := oc.do("GET", "/loops/instances/"+id, nil, nil); r.Status != 404 {
		t.Fatalf("other org's instance: %d", r.Status)
	}
	// The platform key has no organization and no instances.
	pc := newConsoleClient(t, s)
	if r := pc.signIn(s.Key("platform")); r.Status != 303 {
		t.Fatalf("platform sign-in: %d", r.Status)
	}
	if r := pc.do("GET", "/loops/instances", nil, nil); r.Status != 403 || strings.Contains(r.Body, id) {
		t.Fatalf("platform on loop instances: %d %s", r.Status, r.Body)
	}
}
