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

	"github.com/chromedp/cdproto/runtime"
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
	if err := chromedp.Run(ctx); err != nil {
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

// brun runs browser actions under a deadline, failing the test with what step failed.
func brun(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(c, actions...); err != nil {
		var loc, body string
		_ = chromedp.Run(ctx, chromedp.Location(&loc), chromedp.Evaluate(`document.body ? document.body.innerText.slice(0, 2000) : ""`, &body))
		t.Fatalf("%s: %v (at %s)\n%s", what, err, loc, body)
	}
}

// awaitPromise makes Evaluate wait for the promise the expression returns.
func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }

func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	brun(t, ctx, "screenshot "+name, chromedp.FullScreenshot(&png, 90))
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
	var problems []string
	brun(t, ctx, "accessibility of "+page, chromedp.Evaluate(a11yScript, &problems))
	if len(problems) > 0 {
		t.Errorf("%s: accessibility: %s", page, strings.Join(problems, "; "))
	}
}

// checkFocusOrder presses Tab n times from the top of the page: the first stop is the skip link
// and every next stop follows the previous one in document order (the visual reading order of
// these pages).
func checkFocusOrder(t *testing.T, ctx context.Context, page string, n int) {
	t.Helper()
	brun(t, ctx, "focus reset", chromedp.Evaluate(`document.activeElement && document.activeElement.blur(); window.scrollTo(0,0); 0`, nil))
	var first string
	for i := 0; i < n; i++ {
		var ok bool
		var desc string
		brun(t, ctx, "tab", chromedp.KeyEvent(kb.Tab))
		brun(t, ctx, "focused", chromedp.Evaluate(`(() => {
			const el = document.activeElement;
			const prev = window.__lastFocus;
			window.__lastFocus = el;
			const ok = !prev || (prev.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0;
			return ok;
		})()`, &ok), chromedp.Evaluate(`(document.activeElement.className || document.activeElement.tagName) + ":" + (document.activeElement.textContent || document.activeElement.name || "").trim().slice(0, 30)`, &desc))
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

	signIn := func(key string) {
		t.Helper()
		brun(t, ctx, "sign in", chromedp.Navigate(base+"/login"), chromedp.WaitVisible("#apiKey", chromedp.ByID),
			chromedp.SendKeys("#apiKey", key, chromedp.ByID), chromedp.Submit("#apiKey", chromedp.ByID),
			chromedp.WaitVisible("form.signout", chromedp.ByQuery))
	}
	signOut := func() {
		t.Helper()
		brun(t, ctx, "sign out", chromedp.Click("form.signout button", chromedp.ByQuery), chromedp.WaitVisible("#apiKey", chromedp.ByID))
	}

	// Sign in, the login page first (its screenshot and accessibility too).
	brun(t, ctx, "login page", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#apiKey", chromedp.ByID))
	shot(t, ctx, "01-login")
	checkA11y(t, ctx, "login")
	signIn(s.Key("ADMIN"))
	brun(t, ctx, "home", chromedp.WaitVisible(`//section[@aria-labelledby="t-acc"]//p[not(contains(., "Loading"))]`, chromedp.BySearch))
	var homeText string
	brun(t, ctx, "home text", chromedp.Text("main", &homeText, chromedp.ByQuery))
	if !strings.Contains(homeText, "Pending recommendations") || !strings.Contains(homeText, "demand-history") {
		t.Errorf("home: %s", homeText)
	}
	shot(t, ctx, "02-home")
	checkA11y(t, ctx, "home")
	checkFocusOrder(t, ctx, "home", 12)

	// The forecast explorer draws actuals, forecast and its band into the canvas.
	brun(t, ctx, "forecast explorer", chromedp.Navigate(base+"/forecast?sku=P&location=STORE"),
		chromedp.WaitVisible(`#chart[data-drawn="true"]`, chromedp.ByQuery))
	var painted, points int
	var legend, series string
	brun(t, ctx, "chart pixels", chromedp.Evaluate(`(() => {
		const c = document.querySelector("#chart canvas");
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
		return n;
	})()`, &painted), chromedp.Evaluate(`parseInt(document.querySelector("#chart").dataset.points, 10)`, &points),
		chromedp.Text(".u-legend", &legend, chromedp.ByQuery), chromedp.AttributeValue("#chart", "data-series", &series, nil, chromedp.ByQuery))
	if painted < 2000 || points < 52+13 {
		t.Errorf("chart: %d painted pixels, %d points", painted, points)
	}
	for _, want := range []string{"Actual", "Baseline", "Forecast", "Lower", "Upper"} {
		if !strings.Contains(legend, want) {
			t.Errorf("legend %q lacks %s", legend, want)
		}
	}
	var markers string
	brun(t, ctx, "event markers", chromedp.Text("#chart-legend", &markers, chromedp.ByID))
	if !strings.Contains(markers, "PROMOTION (planned lift) 40 %") {
		t.Errorf("event markers: %q", markers)
	}
	shot(t, ctx, "03-forecast")
	checkA11y(t, ctx, "forecast")

	// Create a scenario, then compare it with the baseline on one chart.
	brun(t, ctx, "create scenario", chromedp.SendKeys("#sc-name", "Promo plus", chromedp.ByID),
		chromedp.SetValue("#sc-type", "PROMOTIONAL", chromedp.ByID), chromedp.SendKeys("#sc-lift", "0.2", chromedp.ByID),
		chromedp.Submit("#sc-name", chromedp.ByID), chromedp.WaitVisible(".flash", chromedp.ByQuery))
	brun(t, ctx, "compare", chromedp.Click(`input[name="compare"]`, chromedp.ByQuery), chromedp.Submit("#f-sku", chromedp.ByID),
		chromedp.WaitVisible(`#chart[data-drawn="true"]`, chromedp.ByQuery),
		chromedp.AttributeValue("#chart", "data-series", &series, nil, chromedp.ByQuery))
	if !strings.Contains(series, "Scenario: Promo plus") {
		t.Errorf("compared series = %q", series)
	}
	shot(t, ctx, "04-forecast-compare")

	// Create a promotion on the events screen.
	from := supplyplan.WeekStart(time.Now()).Add(35 * 24 * time.Hour)
	brun(t, ctx, "events", chromedp.Navigate(base+"/events"), chromedp.WaitVisible("#ev-name", chromedp.ByID))
	checkA11y(t, ctx, "events")
	brun(t, ctx, "create event", chromedp.SendKeys("#ev-name", "Summer promo", chromedp.ByID),
		chromedp.SetValue("#ev-start", from.Format("2006-01-02"), chromedp.ByID),
		chromedp.SetValue("#ev-end", from.Add(6*24*time.Hour).Format("2006-01-02"), chromedp.ByID),
		chromedp.SendKeys("#ev-lift", "0.3", chromedp.ByID), chromedp.SendKeys("#ev-prod", "P", chromedp.ByID),
		chromedp.Submit("#ev-name", chromedp.ByID), chromedp.WaitVisible(`//h1[text()="Summer promo"]`, chromedp.BySearch))
	shot(t, ctx, "05-event")
	checkA11y(t, ctx, "event")

	// Approve one recommendation in the queue: the row changes state in place (htmx).
	storeID, shopID := recIDs["STORE"], recIDs["SHOP"]
	brun(t, ctx, "recommendations", chromedp.Navigate(base+"/recommendations?status=PENDING"),
		chromedp.WaitVisible("#rec-"+storeID, chromedp.ByID))
	shot(t, ctx, "06-recommendations")
	checkA11y(t, ctx, "recommendations")
	// CSRF: the same approval without the token is refused, and changes nothing.
	var status int
	brun(t, ctx, "POST without CSRF token", chromedp.Evaluate(fmt.Sprintf(`fetch("/recommendations/%s/approve", {method: "POST",
		headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "comment=x"}).then(r => r.status)`, storeID), &status,
		awaitPromise))
	if status != 403 || recStatus(t, s, storeID) != "PENDING" {
		t.Errorf("POST without token: %d, recommendation %s", status, recStatus(t, s, storeID))
	}
	brun(t, ctx, "approve", chromedp.Click(fmt.Sprintf(`#rec-%s button[value="approve"]`, storeID), chromedp.ByQuery),
		chromedp.WaitVisible(fmt.Sprintf(`#rec-%s[data-status="APPROVED"]`, storeID), chromedp.ByQuery))
	if got := recStatus(t, s, storeID); got != "APPROVED" {
		t.Errorf("after approve: %s", got)
	}
	shot(t, ctx, "07-recommendation-approved")

	// Bulk: execute every APPROVED one: the dry run shows the filter and the count, then confirm.
	var count, done string
	brun(t, ctx, "bulk preview", chromedp.Navigate(base+"/recommendations?status=APPROVED"),
		chromedp.SetValue("#bulk-action", "execute", chromedp.ByID), chromedp.Submit("#bulk-action", chromedp.ByID),
		chromedp.WaitVisible("#bulk-count", chromedp.ByID), chromedp.Text("#bulk-count", &count, chromedp.ByID))
	if count != "1" || recStatus(t, s, storeID) != "APPROVED" {
		t.Errorf("dry run count %s, status %s", count, recStatus(t, s, storeID))
	}
	shot(t, ctx, "08-bulk-preview")
	checkA11y(t, ctx, "bulk preview")
	brun(t, ctx, "bulk confirm", chromedp.Submit("#bulk-comment", chromedp.ByID), chromedp.WaitVisible("#bulk-done", chromedp.ByID),
		chromedp.Text("#bulk-done", &done, chromedp.ByID))
	if done != "1" || recStatus(t, s, storeID) != "EXECUTED" || recStatus(t, s, shopID) != "PENDING" {
		t.Errorf("bulk done %s: %s, other %s", done, recStatus(t, s, storeID), recStatus(t, s, shopID))
	}

	// Upload an import file and watch its job finish.
	file := filepath.Join(t.TempDir(), "demand.json")
	body, _ := json.Marshal(map[string]any{"records": []any{
		map[string]any{"skuId": "Q", "locationId": "STORE", "weekStarting": "2026-01-05", "actualDemand": 7},
		map[string]any{"skuId": "Q", "locationId": "STORE", "weekStarting": "2026-01-12", "actualDemand": 9},
		map[string]any{"skuId": "", "locationId": "STORE", "weekStarting": "2026-01-12"},
	}})
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	brun(t, ctx, "imports", chromedp.Navigate(base+"/imports"), chromedp.WaitVisible("#u-file", chromedp.ByID))
	checkA11y(t, ctx, "imports")
	brun(t, ctx, "upload", chromedp.SetValue("#u-kind", "demand-history", chromedp.ByID),
		chromedp.SetUploadFiles("#u-file", []string{file}, chromedp.ByID), chromedp.SendKeys("#u-key", s.Key("import"), chromedp.ByID),
		chromedp.Submit("#u-file", chromedp.ByID), chromedp.WaitVisible(`#job[data-status="COMPLETED"]`, chromedp.ByQuery))
	var jobText string
	brun(t, ctx, "job", chromedp.Text("#job", &jobText, chromedp.ByID))
	if !strings.Contains(jobText, "3 of 3 rows processed") || !strings.Contains(jobText, "2 applied") || !strings.Contains(jobText, "1 rejected") {
		t.Errorf("job: %s", jobText)
	}
	shot(t, ctx, "09-import")

	// The other screens render, pass the checks, and validation messages come from the API.
	for _, p := range []struct{ path, name string }{{"/inventory?location=STORE&sku=P", "10-inventory"}, {"/alerts", "11-alerts"}, {"/webhooks", "12-webhooks"}} {
		brun(t, ctx, p.name, chromedp.Navigate(base+p.path), chromedp.WaitVisible("h1", chromedp.ByQuery))
		shot(t, ctx, p.name)
		checkA11y(t, ctx, p.name)
	}
	var alertErr string
	brun(t, ctx, "alert config validation", chromedp.Navigate(base+"/alerts"), chromedp.SetValue("#c-cd", "2", chromedp.ByID),
		chromedp.Submit("#c-cd", chromedp.ByID), chromedp.WaitVisible(".field-error", chromedp.ByQuery),
		chromedp.Text(".field-error", &alertErr, chromedp.ByQuery))
	if !strings.Contains(alertErr, "1440") {
		t.Errorf("cooldown error: %q", alertErr)
	}

	// Phone-sized screen.
	brun(t, ctx, "phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/forecast?sku=P&location=SHOP"),
		chromedp.WaitVisible(`#chart[data-drawn="true"]`, chromedp.ByQuery))
	var overflow bool
	brun(t, ctx, "phone width", chromedp.Evaluate(`document.documentElement.scrollWidth <= window.innerWidth + 1`, &overflow))
	if !overflow {
		t.Error("the forecast page scrolls sideways on a phone-sized screen")
	}
	shot(t, ctx, "13-phone-forecast")
	brun(t, ctx, "desktop", chromedp.EmulateViewport(1280, 900))
	signOut()

	// A VIEWER sees no write control, and a forged POST (with a valid token) is refused.
	signIn(s.Key("VIEWER"))
	var buttons int
	brun(t, ctx, "viewer recommendations", chromedp.Navigate(base+"/recommendations?status=PENDING"),
		chromedp.WaitVisible("#rec-"+shopID, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("main button, main form[method=post]").length`, &buttons))
	if buttons != 0 {
		t.Errorf("viewer sees %d write controls", buttons)
	}
	shot(t, ctx, "14-viewer-recommendations")
	brun(t, ctx, "forged POST", chromedp.Evaluate(fmt.Sprintf(`(() => {
		const token = document.querySelector('meta[name="csrf-token"]').content;
		return fetch("/recommendations/%s/approve", {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": token},
			body: "_csrf=" + encodeURIComponent(token)}).then(r => r.status);
	})()`, shopID), &status, awaitPromise))
	if status != 403 || recStatus(t, s, shopID) != "PENDING" {
		t.Errorf("viewer's forged approve: %d, recommendation %s", status, recStatus(t, s, shopID))
	}
	signOut()

	// The platform key sees the platform screens: create a key (secret shown once), revoke it.
	signIn(s.Key("platform"))
	brun(t, ctx, "platform", chromedp.WaitVisible(`//a[text()="Demo"]`, chromedp.BySearch))
	shot(t, ctx, "15-platform")
	checkA11y(t, ctx, "platform")
	var secret string
	brun(t, ctx, "create key", chromedp.Click(`//a[text()="Demo"]`, chromedp.BySearch), chromedp.WaitVisible("#k-name", chromedp.ByID),
		chromedp.SendKeys("#k-name", "console-test", chromedp.ByID), chromedp.SetValue("#k-role", "VIEWER", chromedp.ByID),
		chromedp.Submit("#k-name", chromedp.ByID), chromedp.WaitVisible("#key-secret", chromedp.ByID), chromedp.Text("#key-secret", &secret, chromedp.ByID))
	if !strings.HasPrefix(secret, "sp_") || s.Do("GET", "/api/transfers/recommendations", secret, nil).Status != 200 {
		t.Errorf("created key %q does not work", secret)
	}
	shot(t, ctx, "16-platform-org")
	checkA11y(t, ctx, "platform org")
	signOut()
}
