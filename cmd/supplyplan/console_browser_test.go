package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/supplyplan/supplyplan"
)

// chromiumPath finds the browser of the console's browser tests: SUPPLYPLAN_TEST_CHROMIUM (written
// by scripts/test-deps.sh), else chromium on PATH. Missing, the tests skip, unless CI is set.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SUPPLYPLAN_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is missing (CI is set): run scripts/test-deps.sh")
	}
	t.Skip("chromium is missing: run scripts/test-deps.sh (apt-get install chromium)")
	return ""
}

// browser starts a headless chromium with a fresh profile; the flags keep it off the network
// (no background fetches, no QUIC, no component updates).
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox, // root in CI containers
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// screenshotDir is bin/console-screenshots at the repository root.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "bin", "console-screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// bdo runs browser steps under a deadline, failing the test with the step that failed, the page's
// location and the start of its text.
func bdo(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		browserFail(t, ctx, what, err)
	}
}

// bget runs one browser action that returns a value.
func bget[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		browserFail(t, ctx, what, err)
	}
	return v
}

func browserFail(t *testing.T, ctx context.Context, what string, err error) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(c, chromedp.Location())
	body, _ := chromedp.Run(c, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ""`))
	t.Fatalf("%s: %v (at %s)\n%s", what, err, loc, body)
}

func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := bget(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(screenshotDir(t), name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// a11yScript checks accessibility basics of the current page: a lang, one h1, a label for every
// form control, text or a label for every button and link, no positive tabindex (which breaks the
// focus order), alt text on images.
const a11yScript = `(() => {
  const problems = [];
  if (!document.documentElement.lang) problems.push("html has no lang");
  if (document.querySelectorAll("h1").length !== 1) problems.push(document.querySelectorAll("h1").length + " h1 elements");
  document.querySelectorAll("input, select, textarea").forEach(el => {
    if (el.type === "hidden") return;
    const named = (el.labels && el.labels.length > 0) || el.getAttribute("aria-label") || el.getAttribute("aria-labelledby");
    if (!named) problems.push("unlabelled " + el.tagName.toLowerCase() + " " + (el.name || el.id));
  });
  document.querySelectorAll("button, a[href]").forEach(el => {
    if (!(el.textContent.trim() || el.getAttribute("aria-label"))) problems.push("nameless " + el.tagName.toLowerCase());
  });
  document.querySelectorAll("[tabindex]").forEach(el => {
    if (parseInt(el.getAttribute("tabindex"), 10) > 0) problems.push("positive tabindex on " + el.tagName.toLowerCase());
  });
  document.querySelectorAll("img").forEach(el => { if (!el.hasAttribute("alt")) problems.push("img without alt"); });
  return problems;
})()`

func checkA11y(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	problems := bget(t, ctx, "accessibility of "+page, chromedp.Evaluate[[]string](a11yScript))
	if len(problems) > 0 {
		t.Errorf("%s: accessibility: %s", page, strings.Join(problems, "; "))
	}
}

// checkFocusOrder presses Tab n times from the top of the page: the first stop is the skip link
// and every next stop follows the previous one in document order (the visual reading order of
// these pages).
func checkFocusOrder(t *testing.T, ctx context.Context, page string, n int) {
	t.Helper()
	bget(t, ctx, "focus reset", chromedp.Evaluate[bool](`(() => { if (document.activeElement) document.activeElement.blur(); window.__lastFocus = null; window.scrollTo(0, 0); return true; })()`))
	var first string
	for i := 0; i < n; i++ {
		bdo(t, ctx, "tab", chromedp.KeyEvent(kb.Tab))
		ok := bget(t, ctx, "focused", chromedp.Evaluate[bool](`(() => {
			const el = document.activeElement, prev = window.__lastFocus;
			window.__lastFocus = el;
			return !prev || (prev.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0;
		})()`))
		desc := bget(t, ctx, "focused element", chromedp.Evaluate[string](`(document.activeElement.className || document.activeElement.tagName) + ":" + (document.activeElement.textContent || document.activeElement.name || "").trim().slice(0, 30)`))
		if i == 0 {
			first = desc
		}
		if !ok {
			t.Errorf("%s: tab stop %d (%s) goes backwards in the document", page, i+1, desc)
		}
	}
	if !strings.HasPrefix(first, "skip") {
		t.Errorf("%s: first tab stop is %q, want the skip link", page, first)
	}
}

// seedConsole imports a product with stock and a year of weekly demand at two locations, and a
// planned promotion, so that every screen has something to show.
func seedConsole(t *testing.T, s *testServer) {
	t.Helper()
	seedStock(t, s)
	s.Import("inventory", map[string]any{"levels": []any{map[string]any{"skuId": "P", "locationId": "SHOP", "quantityOnHand": 1, "reorderPoint": 40}}})
	var recs []any
	week := supplyplan.WeekStart(time.Now())
	for i := 1; i <= 52; i++ {
		w := week.Add(-time.Duration(i) * 7 * 24 * time.Hour).Format("2006-01-02")
		recs = append(recs, map[string]any{"skuId": "P", "locationId": "STORE", "weekStarting": w, "actualDemand": 20 + (i*7)%11},
			map[string]any{"skuId": "P", "locationId": "SHOP", "weekStarting": w, "actualDemand": 15 + (i*5)%7})
	}
	if job := s.Import("demand-history", map[string]any{"records": recs}); str(job, "status") != "COMPLETED" {
		t.Fatalf("demand history: %v", job)
	}
	start := week.Add(14 * 24 * time.Hour)
	s.Do("POST", "/api/forecast/events", s.Key("PLANNER"), map[string]any{"name": "Spring sale", "type": "PROMOTION",
		"startsAt": start.Format(time.RFC3339), "endsAt": start.Add(6 * 24 * time.Hour).Format(time.RFC3339),
		"value": map[string]any{"liftPct": 0.4}, "productMasterId": "P"}).Must(t, 201)
}

func recStatus(t *testing.T, s *testServer, id string) string {
	t.Helper()
	return str(s.Do("GET", "/api/transfers/recommendations/"+id, s.Key("VIEWER"), nil).Must(t, 200), "recommendation", "status")
}

func TestConsoleInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	ctx := browser(t)
	s := MustStart(t, "")
	seedConsole(t, s)
	gen := s.Do("POST", "/api/transfers/recommendations", s.Key("PLANNER"), map[string]any{"unitMargin": 6}).Must(t, 200)
	recIDs := map[string]string{} // destination -> id
	for _, x := range list(gen, "recommendations") {
		m := x.(map[string]any)
		recIDs[str(m, "destLocationId")] = str(m, "id")
	}
	if recIDs["STORE"] == "" || recIDs["SHOP"] == "" {
		t.Fatalf("recommendations = %v", gen)
	}
	base := "http://" + s.Main.Console.Addr()
	type css = chromedp.CSS
	type id = chromedp.ID

	signIn := func(key string) {
		t.Helper()
		bdo(t, ctx, "sign in", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(id("apiKey")),
			chromedp.SendKeys(id("apiKey"), key), chromedp.Submit(id("apiKey")), chromedp.WaitVisible(css("form.signout")))
	}
	signOut := func() {
		t.Helper()
		bdo(t, ctx, "sign out", chromedp.Click(css("form.signout button")), chromedp.WaitVisible(id("apiKey")))
	}

	// Sign in, the login page first (its screenshot and accessibility too).
	bdo(t, ctx, "login page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(id("apiKey")))
	shot(t, ctx, "01-login")
	checkA11y(t, ctx, "login")
	signIn(s.Key("ADMIN"))
	bdo(t, ctx, "home", chromedp.WaitVisible(chromedp.Search(`//section[@aria-labelledby="t-acc"]/p[not(contains(., "Loading"))]`)),
		chromedp.WaitVisible(id("t-deliv")))
	homeText := bget(t, ctx, "home text", chromedp.Text(css("main")))
	if !strings.Contains(homeText, "Pending recommendations") || !strings.Contains(homeText, "demand-history") ||
		!strings.Contains(homeText, "Alerts (7 days)") {
		t.Errorf("home: %s", homeText)
	}
	shot(t, ctx, "02-home")
	checkA11y(t, ctx, "home")
	checkFocusOrder(t, ctx, "home", 12)

	// The forecast explorer draws actuals, forecast and its band into the canvas.
	bdo(t, ctx, "forecast explorer", chromedp.Navigate(base+"/forecast?sku=P&location=STORE"),
		chromedp.WaitVisible(css(`#chart[data-drawn="true"]`)))
	painted := bget(t, ctx, "chart pixels", chromedp.Evaluate[int](`(() => {
		const c = document.querySelector("#chart canvas");
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
		return n;
	})()`))
	points := bget(t, ctx, "chart points", chromedp.Evaluate[int](`parseInt(document.querySelector("#chart").dataset.points, 10)`))
	legend := bget(t, ctx, "legend", chromedp.Text(css(".u-legend")))
	if painted < 2000 || points < 52+13 {
		t.Errorf("chart: %d painted pixels, %d points", painted, points)
	}
	for _, want := range []string{"Actual", "Baseline", "Forecast", "Lower", "Upper"} {
		if !strings.Contains(legend, want) {
			t.Errorf("legend %q lacks %s", legend, want)
		}
	}
	markers := bget(t, ctx, "event markers", chromedp.Text(id("chart-legend")))
	if !strings.Contains(markers, "PROMOTION (planned lift) 40 %") {
		t.Errorf("event markers: %q", markers)
	}
	shot(t, ctx, "03-forecast")
	checkA11y(t, ctx, "forecast")

	// Create a scenario, then compare it with the baseline on one chart.
	bdo(t, ctx, "create scenario", chromedp.SendKeys(id("sc-name"), "Promo plus"),
		chromedp.SetValue(id("sc-type"), "PROMOTIONAL"), chromedp.SendKeys(id("sc-lift"), "0.2"),
		chromedp.Submit(id("sc-name")), chromedp.WaitVisible(css(".flash")))
	// The form's submit loads a new page: wait for its chart, not the one already drawn (waiting
	// on the old page's chart read its series and then screenshotted a page in mid-navigation, which
	// hung until the deadline: a failed CI run).
	bdo(t, ctx, "compare", chromedp.Click(css(`input[name="compare"]`)), chromedp.Submit(id("f-sku")),
		chromedp.WaitVisible(css(`#chart[data-drawn="true"][data-series*="Scenario: Promo plus"]`)))
	series := bget(t, ctx, "compared series", chromedp.AttributeValue(id("chart"), "data-series"))
	if !strings.Contains(series.Value, "Scenario: Promo plus") {
		t.Errorf("compared series = %q", series.Value)
	}
	shot(t, ctx, "04-forecast-compare")

	// Create a promotion on the events screen.
	from := supplyplan.WeekStart(time.Now()).Add(35 * 24 * time.Hour)
	bdo(t, ctx, "events", chromedp.Navigate(base+"/events"), chromedp.WaitVisible(id("ev-name")))
	checkA11y(t, ctx, "events")
	bdo(t, ctx, "create event", chromedp.SendKeys(id("ev-name"), "Summer promo"),
		chromedp.SetValue(id("ev-start"), from.Format("2006-01-02")),
		chromedp.SetValue(id("ev-end"), from.Add(6*24*time.Hour).Format("2006-01-02")),
		chromedp.SendKeys(id("ev-lift"), "0.3"), chromedp.SendKeys(id("ev-prod"), "P"),
		chromedp.Submit(id("ev-name")), chromedp.WaitVisible(chromedp.Search(`//h1[text()="Summer promo"]`)))
	shot(t, ctx, "05-event")
	checkA11y(t, ctx, "event")

	// Approve one recommendation in the queue: the row changes state in place (htmx).
	storeID, shopID := recIDs["STORE"], recIDs["SHOP"]
	bdo(t, ctx, "recommendations", chromedp.Navigate(base+"/recommendations?status=PENDING"),
		chromedp.WaitVisible(id("rec-"+storeID)))
	shot(t, ctx, "06-recommendations")
	writeControls := `document.querySelectorAll("main form[method=post], main [hx-post], main [hx-put], main [hx-delete]").length`
	if n := bget(t, ctx, "admin write controls", chromedp.Evaluate[int](writeControls)); n < 3 {
		t.Errorf("an ADMIN sees %d write controls on the queue", n)
	}
	checkA11y(t, ctx, "recommendations")
	// CSRF: the same approval without the token is refused, and changes nothing.
	status := bget(t, ctx, "POST without CSRF token", chromedp.Evaluate[int](fmt.Sprintf(`fetch("/recommendations/%s/approve", {method: "POST",
		headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "comment=x"}).then(r => r.status)`, storeID), chromedp.EvalAwaitPromise))
	if status != 403 || recStatus(t, s, storeID) != "PENDING" {
		t.Errorf("POST without token: %d, recommendation %s", status, recStatus(t, s, storeID))
	}
	bdo(t, ctx, "approve", chromedp.Click(css(fmt.Sprintf(`#rec-%s button[value="approve"]`, storeID))),
		chromedp.WaitVisible(css(fmt.Sprintf(`#rec-%s[data-status="APPROVED"]`, storeID))))
	if got := recStatus(t, s, storeID); got != "APPROVED" {
		t.Errorf("after approve: %s", got)
	}
	shot(t, ctx, "07-recommendation-approved")

	// Bulk: execute every APPROVED one: the dry run shows the filter and the count, then confirm.
	bdo(t, ctx, "bulk preview", chromedp.Navigate(base+"/recommendations?status=APPROVED"),
		chromedp.SetValue(id("bulk-action"), "execute"), chromedp.Submit(id("bulk-action")), chromedp.WaitVisible(id("bulk-count")))
	if count := bget(t, ctx, "count", chromedp.Text(id("bulk-count"))); count != "1" || recStatus(t, s, storeID) != "APPROVED" {
		t.Errorf("dry run count %s, status %s", count, recStatus(t, s, storeID))
	}
	shot(t, ctx, "08-bulk-preview")
	checkA11y(t, ctx, "bulk preview")
	bdo(t, ctx, "bulk confirm", chromedp.Submit(id("bulk-comment")), chromedp.WaitVisible(id("bulk-done")))
	if done := bget(t, ctx, "done", chromedp.Text(id("bulk-done"))); done != "1" || recStatus(t, s, storeID) != "EXECUTED" || recStatus(t, s, shopID) != "PENDING" {
		t.Errorf("bulk done %s: %s, other %s", done, recStatus(t, s, storeID), recStatus(t, s, shopID))
	}

	// Upload an import file and watch its job finish.
	file := filepath.Join(t.TempDir(), "demand.json")
	body, _ := json.Marshal(map[string]any{"records": []any{
		map[string]any{"skuId": "P", "locationId": "STORE", "weekStarting": "2026-01-05", "actualDemand": 7},
		map[string]any{"skuId": "P", "locationId": "STORE", "weekStarting": "2026-01-12", "actualDemand": 9},
		map[string]any{"skuId": "", "locationId": "STORE", "weekStarting": "2026-01-12"},
	}})
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	bdo(t, ctx, "imports", chromedp.Navigate(base+"/imports"), chromedp.WaitVisible(id("u-file")))
	checkA11y(t, ctx, "imports")
	bdo(t, ctx, "upload", chromedp.SetValue(id("u-kind"), "demand-history"),
		chromedp.SetUploadFiles(id("u-file"), []string{file}), chromedp.SendKeys(id("u-key"), s.Key("import")),
		chromedp.Submit(id("u-key")), chromedp.WaitVisible(css(`#job[data-status="COMPLETED"]`)))
	jobText := bget(t, ctx, "job", chromedp.Text(id("job")))
	if !strings.Contains(jobText, "3 of 3 rows processed") || !strings.Contains(jobText, "2 applied") || !strings.Contains(jobText, "1 rejected") {
		t.Errorf("job: %s", jobText)
	}
	shot(t, ctx, "09-import")
	// A CSV file: the API's CSV conversion, the import key kept from the first upload.
	csvFile := filepath.Join(t.TempDir(), "demand.csv")
	if err := os.WriteFile(csvFile, []byte("skuId,locationId,weekStarting,actualDemand\nP,STORE,2026-01-19,4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bdo(t, ctx, "csv upload", chromedp.Navigate(base+"/imports"), chromedp.WaitVisible(id("u-file")), chromedp.SetValue(id("u-kind"), "demand-history"),
		chromedp.SetUploadFiles(id("u-file"), []string{csvFile}), chromedp.Submit(id("u-file")),
		chromedp.WaitVisible(chromedp.Search(`//*[@id="job" and @data-status="COMPLETED" and contains(., "1 of 1 rows processed")]`)))
	if jobText := bget(t, ctx, "csv job", chromedp.Text(id("job"))); !strings.Contains(jobText, "1 applied") {
		t.Errorf("CSV job: %s", jobText)
	}
	shot(t, ctx, "09b-import-csv")

	// The other screens render, pass the checks, and validation messages come from the API.
	for _, p := range []struct{ path, name string }{{"/inventory?location=STORE&sku=P", "10-inventory"}, {"/alerts", "11-alerts"}, {"/webhooks", "12-webhooks"}} {
		bdo(t, ctx, p.name, chromedp.Navigate(base+p.path), chromedp.WaitVisible(css("h1")))
		shot(t, ctx, p.name)
		checkA11y(t, ctx, p.name)
	}
	bdo(t, ctx, "alert config validation", chromedp.Navigate(base+"/alerts"), chromedp.SetValue(id("c-cd"), "2"),
		chromedp.Submit(id("c-cd")), chromedp.WaitVisible(css(".field-error")))
	if alertErr := bget(t, ctx, "cooldown error", chromedp.Text(css(".field-error"))); !strings.Contains(alertErr, "1440") {
		t.Errorf("cooldown error: %q", alertErr)
	}

	// The loop catalog: the built-in loops, one loop's versions and audit timeline.
	bdo(t, ctx, "loops", chromedp.Navigate(base+"/loops"), chromedp.WaitVisible(chromedp.Search(`//a[text()="supplyplan/procurement"]`)))
	checkA11y(t, ctx, "loops")
	bdo(t, ctx, "loop", chromedp.Click(chromedp.Search(`//a[text()="supplyplan/procurement"]`)),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="supplyplan/procurement"]`)))
	if audit := bget(t, ctx, "loop audit", chromedp.Text(css("main"))); !strings.Contains(audit, "Audit timeline") || !strings.Contains(audit, "publish") {
		t.Errorf("loop page: %s", audit)
	}
	shot(t, ctx, "12b-loop")
	checkA11y(t, ctx, "loop")
	// A loop instance, started through the runtime's service, and its audit timeline.
	rtm := s.Main.System.LoopRuntime
	org, _ := rtm.Organization("demo")
	lc := supplyplan.LoopRunCaller{OrgID: org.ID, Actor: supplyplan.LoopActor{Type: supplyplan.LoopActorUser, Sub: "user:alice"},
		Roles: supplyplan.LoopRolesOf(false, true)}
	started, err := rtm.StartInstance(context.Background(), lc, supplyplan.LoopStartInput{Loop: "supplyplan/quality", BusinessKey: "LOT-1"})
	if err != nil {
		t.Fatal(err)
	}
	instLink := `//a[text()="` + started.Instance.ID + `"]`
	bdo(t, ctx, "loop instances", chromedp.Navigate(base+"/loops/instances?businessKey=LOT-1"), chromedp.WaitVisible(chromedp.Search(instLink)))
	shot(t, ctx, "12c-loop-instances")
	checkA11y(t, ctx, "loop instances")
	bdo(t, ctx, "loop instance", chromedp.Click(chromedp.Search(instLink)), chromedp.WaitVisible(id("audit-verify")))
	if v := bget(t, ctx, "audit verify", chromedp.Text(id("audit-verify"))); !strings.Contains(v, "hash chain intact") {
		t.Errorf("audit verification: %s", v)
	}
	if tl := bget(t, ctx, "timeline", chromedp.Text(id("timeline"))); !strings.Contains(tl, "user:alice") {
		t.Errorf("timeline: %s", tl)
	}
	shot(t, ctx, "12d-loop-instance")
	checkA11y(t, ctx, "loop instance")

	// Phone-sized screen.
	bdo(t, ctx, "phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/forecast?sku=P&location=SHOP"),
		chromedp.WaitVisible(css(`#chart[data-drawn="true"]`)))
	if fits := bget(t, ctx, "phone width", chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth + 1`)); !fits {
		t.Error("the forecast page scrolls sideways on a phone-sized screen")
	}
	shot(t, ctx, "13-phone-forecast")
	bdo(t, ctx, "desktop", chromedp.EmulateViewport(1280, 900))
	signOut()

	// A VIEWER sees no write control, and a forged POST (with a valid token) is refused.
	signIn(s.Key("VIEWER"))
	bdo(t, ctx, "viewer recommendations", chromedp.Navigate(base+"/recommendations?status=PENDING"), chromedp.WaitVisible(id("rec-"+shopID)))
	if n := bget(t, ctx, "write controls", chromedp.Evaluate[int](writeControls)); n != 0 {
		t.Errorf("viewer sees %d write controls", n)
	}
	shot(t, ctx, "14-viewer-recommendations")
	status = bget(t, ctx, "forged POST", chromedp.Evaluate[int](fmt.Sprintf(`(() => {
		const token = document.querySelector('meta[name="csrf-token"]').content;
		return fetch("/recommendations/%s/approve", {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": token},
			body: "_csrf=" + encodeURIComponent(token)}).then(r => r.status);
	})()`, shopID), chromedp.EvalAwaitPromise))
	if status != 403 || recStatus(t, s, shopID) != "PENDING" {
		t.Errorf("viewer's forged approve: %d, recommendation %s", status, recStatus(t, s, shopID))
	}
	signOut()

	// The platform key sees the platform screens: create a key (secret shown once).
	signIn(s.Key("platform"))
	bdo(t, ctx, "platform", chromedp.WaitVisible(chromedp.Search(`//a[text()="Demo"]`)))
	shot(t, ctx, "15-platform")
	checkA11y(t, ctx, "platform")
	bdo(t, ctx, "create key", chromedp.Click(chromedp.Search(`//a[text()="Demo"]`)), chromedp.WaitVisible(id("k-name")),
		chromedp.SendKeys(id("k-name"), "console-test"), chromedp.SetValue(id("k-role"), "VIEWER"),
		chromedp.Submit(id("k-name")), chromedp.WaitVisible(id("key-secret")))
	secret := bget(t, ctx, "secret", chromedp.Text(id("key-secret")))
	if !strings.HasPrefix(secret, "sp_") || s.Do("GET", "/api/transfers/recommendations", secret, nil).Status != 200 {
		t.Errorf("created key %q does not work", secret)
	}
	shot(t, ctx, "16-platform-org")
	checkA11y(t, ctx, "platform org")
	signOut()
}
