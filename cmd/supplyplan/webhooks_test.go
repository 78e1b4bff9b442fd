package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

func createEndpoint(t *testing.T, s *testServer, url string, types ...string) (id, secret string) {
	t.Helper()
	body := map[string]any{"url": url}
	if types != nil {
		body["eventTypes"] = types
	}
	ep := s.Do("POST", "/api/webhooks/endpoints", s.Key("ADMIN"), body).Must(t, 201)
	return str(ep, "endpoint", "id"), str(ep, "secret")
}

func TestWebhookEndpointsCRUDAndAccess(t *testing.T) {
	s := MustStart(t, "", outboundTestConfig(""))
	admin := s.Key("ADMIN")
	for _, role := range []string{"MANAGER", "PLANNER", "VIEWER"} {
		if r := s.Do("GET", "/api/webhooks/endpoints", s.Key(role), nil); r.Status != 403 {
			t.Fatalf("%s list endpoints: %d", role, r.Status)
		}
		if r := s.Do("GET", "/api/admin/alerts/config", s.Key(role), nil); r.Status != 403 {
			t.Fatalf("%s alert config: %d", role, r.Status)
		}
	}
	if r := s.Do("GET", "/api/webhooks/endpoints", s.Key("platform"), nil); r.Code() != "TENANT_CONTEXT_REQUIRED" {
		t.Fatalf("platform key: %s", r.Body)
	}
	bad := []map[string]any{
		{},
		{"url": "ftp://x.example"},
		{"url": "https://user:pw@x.example"},
		{"url": "https://x.example", "eventTypes": []string{"nope.happened"}},
		{"url": "https://x.example", "enabled": "yes"},
	}
	for _, b := range bad {
		if r := s.Do("POST", "/api/webhooks/endpoints", admin, b); r.Status != 400 {
			t.Fatalf("%v: %d %s", b, r.Status, r.Body)
		}
	}
	id, secret := createEndpoint(t, s, "https://hooks.example.com/x", "import.*", "alert.triggered")
	got := s.Do("GET", "/api/webhooks/endpoints/"+id, admin, nil).Must(t, 200)
	if str(got, "endpoint", "secret") != "" || str(got, "endpoint", "url") != "https://hooks.example.com/x" || got["endpoint"].(map[string]any)["enabled"] != true {
		t.Fatalf("get = %v", got)
	}
	upd := s.Do("PUT", "/api/webhooks/endpoints/"+id, admin, map[string]any{"enabled": false, "description": "paused"}).Must(t, 200)
	if upd["endpoint"].(map[string]any)["enabled"] != false || str(upd, "endpoint", "url") != "https://hooks.example.com/x" {
		t.Fatalf("update = %v", upd)
	}
	rot := s.Do("POST", "/api/webhooks/endpoints/"+id+"/rotate-secret", admin, nil).Must(t, 200)
	if ns := str(rot, "secret"); ns == secret || ns == "" || str(rot, "endpoint", "previousSecretExpiresAt") == "" {
		t.Fatalf("rotate = %v", rot)
	}
	if l := s.Do("GET", "/api/webhooks/endpoints", admin, nil).Must(t, 200); len(list(l, "endpoints")) != 1 {
		t.Fatalf("list = %v", l)
	}
	s.Do("DELETE", "/api/webhooks/endpoints/"+id, admin, nil).Must(t, 204)
	if r := s.Do("GET", "/api/webhooks/endpoints/"+id, admin, nil); r.Status != 404 {
		t.Fatalf("after delete: %d", r.Status)
	}
	types := s.Do("GET", "/api/webhooks/event-types", admin, nil).Must(t, 200)
	if len(list(types, "eventTypes")) < 10 {
		t.Fatalf("event types = %v", types)
	}
}

// TestWebhookPrivateDestinationsRefused: without the operator flag, loopback and private
// destinations are refused at registration.
func TestWebhookPrivateDestinationsRefused(t *testing.T) {
	s := MustStart(t, "", func(c *Config) { c.AlertEvalInterval = -1 })
	admin := s.Key("ADMIN")
	for _, u := range []string{"http://127.0.0.1:9/x", "http://10.1.2.3/x", "http://[::1]/x", "http://169.254.169.254/latest", "http://localhost:8080/x"} {
		r := s.Do("POST", "/api/webhooks/endpoints", admin, map[string]any{"url": u})
		if r.Status != 400 {
			t.Fatalf("%s: %d %s", u, r.Status, r.Body)
		}
	}
	r := s.Do("PUT", "/api/admin/alerts/config", admin, alertConfigBody(60, map[string]any{"type": "CHAT", "value": "http://192.168.1.10/hook"}))
	if r.Status != 400 {
		t.Fatalf("private chat destination: %d %s", r.Status, r.Body)
	}
}

// TestWebhookRetriesRotationAnd410: a failing receiver gets retries with backoff until it answers
// 2xx; after a secret rotation both secrets sign; a 410 disables the endpoint; manual redelivery.
func TestWebhookRetriesRotationAnd410(t *testing.T) {
	rcv := startReceiver(t)
	s := MustStart(t, "", outboundTestConfig(""))
	admin := s.Key("ADMIN")
	id, secret := createEndpoint(t, s, rcv.URL+"/in", "import.completed")
	rcv.SetSecrets(secret)
	rcv.SetStatus(func(n int) int {
		if n < 2 {
			return 500
		}
		return 204
	})
	s.SeedCatalog([]string{"A"}, nil)
	eventually(t, 10*time.Second, func() error {
		if len(rcv.OK()) != 1 {
			return fmt.Errorf("%d messages, %d ok", len(rcv.Messages()), len(rcv.OK()))
		}
		return nil
	})
	msgs := rcv.Messages()
	if len(msgs) != 3 || msgs[0].Header.Get("webhook-id") != msgs[2].Header.Get("webhook-id") || !msgs[2].Verified {
		t.Fatalf("attempts = %d, same id %v, verified %v", len(msgs), msgs[0].Header.Get("webhook-id") == msgs[2].Header.Get("webhook-id"), msgs[2].Verified)
	}
	var dl map[string]any
	eventually(t, 5*time.Second, func() error {
		dl = s.Do("GET", "/api/webhooks/endpoints/"+id+"/deliveries", admin, nil).Must(t, 200)
		if d := list(dl, "deliveries"); len(d) != 1 || str(d[0].(map[string]any), "status") != "SUCCEEDED" {
			return fmt.Errorf("deliveries = %v", dl)
		}
		return nil
	})
	d := list(dl, "deliveries")[0].(map[string]any)
	att := d["attempts"].([]any)
	if len(att) != 3 || att[0].(map[string]any)["statusCode"] != 500.0 || att[2].(map[string]any)["statusCode"] != 204.0 || att[2].(map[string]any)["success"] != true {
		t.Fatalf("attempts = %v", att)
	}
	t1, _ := time.Parse(time.RFC3339Nano, str(att[1].(map[string]any), "attemptedAt"))
	t2, _ := time.Parse(time.RFC3339Nano, str(att[2].(map[string]any), "attemptedAt"))
	t0, _ := time.Parse(time.RFC3339Nano, str(att[0].(map[string]any), "attemptedAt"))
	if t1.Sub(t0) < 35*time.Millisecond || t2.Sub(t1) < t1.Sub(t0) {
		t.Fatalf("no backoff between attempts: %s then %s", t1.Sub(t0), t2.Sub(t1))
	}

	// Manual redelivery of the succeeded delivery.
	s.Do("POST", "/api/webhooks/endpoints/"+id+"/deliveries/"+str(d, "id")+"/retry", admin, nil).Must(t, 202)
	eventually(t, 5*time.Second, func() error {
		if n := len(rcv.OK()); n != 2 {
			return fmt.Errorf("%d ok", n)
		}
		return nil
	})

	// Rotation: both the new and the old secret sign during the overlap.
	rot := s.Do("POST", "/api/webhooks/endpoints/"+id+"/rotate-secret", admin, nil).Must(t, 200)
	newSecret := str(rot, "secret")
	rcv.SetSecrets(newSecret)
	s.SeedCatalog([]string{"B"}, nil)
	eventually(t, 5*time.Second, func() error {
		if n := len(rcv.OK()); n != 3 {
			return fmt.Errorf("%d ok", n)
		}
		return nil
	})
	last := rcv.OK()[2]
	if !last.Verified || verifyStandardWebhook(secret, last.Header, last.Body, time.Now()) != nil {
		t.Fatalf("after rotation the message must verify with both secrets: %v", last.Header.Get("webhook-signature"))
	}

	// 410 Gone disables the endpoint and says so.
	rcv.SetStatus(func(int) int { return 410 })
	s.SeedCatalog([]string{"C"}, nil)
	eventually(t, 5*time.Second, func() error {
		ep := s.Do("GET", "/api/webhooks/endpoints/"+id, admin, nil).Must(t, 200)
		if ep["endpoint"].(map[string]any)["enabled"] != false || str(ep, "endpoint", "disabledReason") == "" {
			return fmt.Errorf("endpoint = %v", ep)
		}
		return nil
	})
	n := len(rcv.Messages())
	fail := s.Do("GET", "/api/webhooks/endpoints/"+id+"/deliveries?status=FAILED", admin, nil).Must(t, 200)
	if len(list(fail, "deliveries")) != 1 {
		t.Fatalf("failed deliveries = %v", fail)
	}
	fd := list(fail, "deliveries")[0].(map[string]any)
	if r := s.Do("POST", "/api/webhooks/endpoints/"+id+"/deliveries/"+str(fd, "id")+"/retry", admin, nil); r.Status != 409 {
		t.Fatalf("retry on a disabled endpoint: %d", r.Status)
	}
	s.SeedCatalog([]string{"D"}, nil)
	time.Sleep(300 * time.Millisecond)
	if len(rcv.Messages()) != n {
		t.Fatalf("a disabled endpoint received more messages")
	}
}

// TestDeliveriesSurviveRestart: a delivery that is pending (its receiver is down) when the service
// stops is delivered after the restart, and so is an event whose job finished just before.
func TestDeliveriesSurviveRestart(t *testing.T) {
	rcv := startReceiver(t)
	rcv.SetStatus(func(int) int { return 503 })
	dir := t.TempDir()
	cfg := outboundTestConfig("")
	slow := func(c *Config) { c.RetryBase = 2 * time.Second }
	s := MustStart(t, dir, cfg, slow)
	id, secret := createEndpoint(t, s, rcv.URL+"/in")
	rcv.SetSecrets(secret)
	s.SeedCatalog([]string{"A"}, []string{"L1"})
	eventually(t, 10*time.Second, func() error {
		if len(rcv.Messages()) < 2 {
			return fmt.Errorf("%d attempts", len(rcv.Messages()))
		}
		return nil
	})
	s.Stop()
	rcv.SetStatus(nil)
	s2 := MustStart(t, dir, cfg)
	// Delivery is at least once: an attempt the old process had in flight when it stopped may reach
	// the receiver after SetStatus(nil) and be answered 200 there, while the new process still
	// holds it as pending and delivers it again under the same webhook-id. So count distinct
	// messages, and wait for the new process to record both as SUCCEEDED.
	eventually(t, 20*time.Second, func() error {
		ids := map[string]bool{}
		for _, m := range rcv.Typed("import.completed") {
			ids[m.Header.Get("webhook-id")] = true
		}
		if len(ids) != 2 {
			return fmt.Errorf("%d distinct delivered: %v", len(ids), ids)
		}
		dl := s2.Do("GET", "/api/webhooks/endpoints/"+id+"/deliveries?status=SUCCEEDED", s2.Key("ADMIN"), nil).Must(t, 200)
		if n := len(list(dl, "deliveries")); n != 2 {
			return fmt.Errorf("%d deliveries SUCCEEDED after restart: %v", n, dl)
		}
		return nil
	})
	for _, m := range rcv.OK() {
		if !m.Verified {
			t.Fatal("unverified delivery after restart")
		}
	}
}

// TestAlertCooldownTriggerAndHistory: manual triggers honour the cooldown (429 with Retry-After)
// unless bypassed; history filters and pagination; 404/410 disables a destination in the config.
func TestAlertCooldownTriggerAndHistory(t *testing.T) {
	gone := startReceiver(t)
	gone.SetStatus(func(int) int { return 404 })
	chat := startReceiver(t)
	s := MustStart(t, "", outboundTestConfig(""))
	admin := s.Key("ADMIN")
	s.SeedCatalog([]string{"P1"}, []string{"L1"})
	s.Do("PUT", "/api/admin/alerts/config", admin, alertConfigBody(5,
		map[string]any{"id": "gone", "type": "WEBHOOK", "value": gone.URL},
		map[string]any{"id": "chat", "type": "CHAT", "value": chat.URL})).Must(t, 200)
	body := map[string]any{"type": "lowAtp", "severity": "HIGH", "message": "Check P1", "productMasterId": "P1", "locationId": "L1"}
	tr := s.Do("POST", "/api/admin/alerts/trigger", admin, body).Must(t, 201)
	if tr["success"] != true || str(tr, "alert", "type") != "lowAtp" || str(tr, "alert", "productMasterId") != "P1" || tr["alert"].(map[string]any)["delivered"] != false {
		t.Fatalf("trigger = %v", tr)
	}
	// The 404 destination is disabled and the config says why.
	eventually(t, 10*time.Second, func() error {
		cfg := s.Do("GET", "/api/admin/alerts/config", admin, nil).Must(t, 200)
		d := cfg["config"].(map[string]any)["destinations"].([]any)[0].(map[string]any)
		if d["enabled"] != false || str(d, "disabledReason") == "" {
			return fmt.Errorf("destination = %v", d)
		}
		return nil
	})
	r := s.Do("POST", "/api/admin/alerts/trigger", admin, body)
	if r.Status != 429 || r.Code() != "RATE_LIMITED" {
		t.Fatalf("second trigger within cooldown: %d %s", r.Status, r.Body)
	}
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 200 || ra > 300 {
		t.Fatalf("Retry-After = %q", r.Header.Get("Retry-After"))
	}
	body["bypassCooldown"] = true
	s.Do("POST", "/api/admin/alerts/trigger", admin, body).Must(t, 201)
	other := map[string]any{"type": "expiry", "severity": "LOW", "message": "Other"}
	s.Do("POST", "/api/admin/alerts/trigger", admin, other).Must(t, 201)
	for _, b := range []map[string]any{
		{"type": "nope", "severity": "LOW", "message": "x"},
		{"type": "expiry", "severity": "URGENT", "message": "x"},
		{"type": "expiry", "severity": "LOW"},
		{"type": "expiry", "severity": "LOW", "message": "x", "locationId": "NOWHERE"},
		{"type": "expiry", "severity": "LOW", "message": "x", "productMasterId": "NOPE"},
	} {
		if r := s.Do("POST", "/api/admin/alerts/trigger", admin, b); r.Status != 400 {
			t.Fatalf("%v: %d", b, r.Status)
		}
	}
	if r := s.Do("POST", "/api/admin/alerts/trigger", s.Key("MANAGER"), other); r.Status != 403 {
		t.Fatalf("manager trigger: %d", r.Status)
	}

	// The chat destination got every alert.
	eventually(t, 10*time.Second, func() error {
		if len(chat.OK()) != 3 {
			return fmt.Errorf("chat %d", len(chat.OK()))
		}
		h := s.Do("GET", "/api/admin/alerts/history?delivered=true", admin, nil).Must(t, 200)
		if len(list(h, "alerts")) != 2 {
			return fmt.Errorf("delivered = %v", h)
		}
		return nil
	})
	page := s.Do("GET", "/api/admin/alerts/history?limit=2&page=2", admin, nil).Must(t, 200)
	if p := page["pagination"].(map[string]any); p["total"] != 3.0 || p["totalPages"] != 2.0 || p["pageSize"] != 2.0 || len(list(page, "alerts")) != 1 {
		t.Fatalf("page 2 = %v", page)
	}
	if h := s.Do("GET", "/api/admin/alerts/history?severity=LOW", admin, nil).Must(t, 200); len(list(h, "alerts")) != 1 {
		t.Fatalf("severity filter = %v", h)
	}
	// The first alert's webhook destination failed (404): not delivered; the later ones only had
	// the chat destination left.
	if h := s.Do("GET", "/api/admin/alerts/history?delivered=false", admin, nil).Must(t, 200); len(list(h, "alerts")) != 1 {
		t.Fatalf("delivered=false = %v", h)
	}
	if h := s.Do("GET", "/api/admin/alerts/history?delivered=true", admin, nil).Must(t, 200); len(list(h, "alerts")) != 2 {
		t.Fatalf("delivered=true = %v", h)
	}
	today := time.Now().UTC().Format("2006-01-02")
	if h := s.Do("GET", "/api/admin/alerts/history?fromDate="+today+"&toDate="+today, admin, nil).Must(t, 200); len(list(h, "alerts")) != 3 {
		t.Fatalf("date filter = %v", h)
	}
	if h := s.Do("GET", "/api/admin/alerts/history?toDate=2000-01-01", admin, nil).Must(t, 200); len(list(h, "alerts")) != 0 {
		t.Fatalf("old toDate = %v", h)
	}
	for _, q := range []string{"limit=101", "page=0", "alertType=x", "severity=x", "delivered=maybe", "fromDate=yesterday"} {
		if r := s.Do("GET", "/api/admin/alerts/history?"+q, admin, nil); r.Status != 400 {
			t.Fatalf("%s: %d", q, r.Status)
		}
	}
	h := s.Do("GET", "/api/admin/alerts/history?alertType=lowAtp", admin, nil).Must(t, 200)
	a := list(h, "alerts")[1].(map[string]any) // newest first: the first trigger is last
	var dests []supplyplan.DestinationResult
	b, _ := json.Marshal(a["destinations"])
	_ = json.Unmarshal(b, &dests)
	if len(dests) != 2 || dests[0].Status != "FAILED" || dests[1].Delivered != true {
		t.Fatalf("destinations = %+v", dests)
	}
	// Config validation through the API.
	for _, c := range []map[string]any{
		alertConfigBody(4), alertConfigBody(1441), {"config": map[string]any{"enabled": true}}, {},
		alertConfigBody(60, map[string]any{"type": "EMAIL", "value": "not-an-email"}),
	} {
		if r := s.Do("PUT", "/api/admin/alerts/config", admin, c); r.Status != 400 {
			t.Fatalf("%v: %d %s", c, r.Status, r.Body)
		}
	}
}

// TestKill9KeepsPendingDeliveries: with the receiver failing, deliveries and import events are
// pending when the binary is killed with SIGKILL; after the restart every one arrives, signed.
func TestKill9KeepsPendingDeliveries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	rcv := startReceiver(t)
	rcv.SetStatus(func(int) int { return 503 })
	data := t.TempDir()
	flags := []string{"--webhook-allow-private", "--retry-base", "1s", "--alert-eval-interval", "-1s"}
	p := startProc(t, data, flags...)
	hdr := map[string]string{"Authorization": "Bearer " + p.Creds.Keys["ADMIN"]}
	ep := doRequest(t, p.URL, "POST", "/api/webhooks/endpoints", hdr, map[string]any{"url": rcv.URL, "eventTypes": []string{"import.*", "alert.triggered"}}).Must(t, 201)
	rcv.SetSecrets(str(ep, "secret"))
	imp := map[string]string{"x-api-key": p.Creds.Keys["import"]}
	for i := range 3 {
		doRequest(t, p.URL, "POST", "/api/import/catalog", imp, map[string]any{"products": []map[string]any{{"externalId": fmt.Sprintf("K%d", i)}}}).Must(t, 202)
	}
	for i := range 5 {
		doRequest(t, p.URL, "POST", "/api/admin/alerts/trigger", hdr, map[string]any{"type": "expiry", "severity": "LOW",
			"message": fmt.Sprintf("m%d", i), "channelId": fmt.Sprint(i)}).Must(t, 201)
	}
	// Every delivery exists and the receiver is failing them. Deliveries to one endpoint go one at
	// a time in order, so it has seen the first one's attempts, not one attempt of each.
	eventually(t, 20*time.Second, func() error {
		if n := len(rcv.Messages()); n < 1 {
			return fmt.Errorf("%d failed attempts so far", n)
		}
		dl := doRequest(t, p.URL, "GET", "/api/webhooks/endpoints/"+str(ep, "endpoint", "id")+"/deliveries?status=PENDING", hdr, nil).Must(t, 200)
		if n := len(list(dl, "deliveries")); n != 8 {
			return fmt.Errorf("%d pending deliveries", n)
		}
		return nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exit
	rcv.SetStatus(nil)
	startProc(t, data, flags...)
	eventually(t, 30*time.Second, func() error {
		imports, alerts := map[string]bool{}, map[string]bool{}
		for _, m := range rcv.OK() {
			if !m.Verified {
				return fmt.Errorf("unverified delivery")
			}
			var pl struct{ Type string }
			_ = json.Unmarshal(m.Body, &pl)
			id := m.Header.Get("webhook-id")
			if pl.Type == "alert.triggered" {
				alerts[id] = true
			} else {
				imports[id] = true
			}
		}
		if len(imports) != 3 || len(alerts) != 5 {
			return fmt.Errorf("delivered %d import events and %d alerts after the restart", len(imports), len(alerts))
		}
		return nil
	})
}

// Recommendation and transfer changes reach webhook endpoints, signed, through the tenant outbox.
func TestTransferEventsReachWebhooks(t *testing.T) {
	s := MustStart(t, "", outboundTestConfig(""))
	rcv := startReceiver(t)
	_, secret := createEndpoint(t, s, rcv.URL, "recommendation.*", "transfer.*")
	rcv.SetSecrets(secret)
	seedStock(t, s)
	m := s.Key("MANAGER")
	id := list(s.Do("POST", "/api/transfers/recommendations", m, nil).Must(t, 200), "recommendations")[0].(map[string]any)["id"].(string)
	s.Do("POST", "/api/transfers/recommendations/"+id+"/approve", m, nil).Must(t, 200)
	trf := s.Do("POST", "/api/transfers/recommendations/"+id+"/execute", m, nil).Must(t, 200)["transfer"].(map[string]any)["id"].(string)
	s.Do("POST", "/api/inventory/transfers/"+trf, m, map[string]any{"status": "IN_TRANSIT"}).Must(t, 200)
	eventually(t, 20*time.Second, func() error {
		for _, typ := range []string{"recommendation.created", "recommendation.approved", "recommendation.executed", "transfer.created", "transfer.in_transit"} {
			msgs := rcv.Typed(typ)
			if len(msgs) != 1 {
				return fmt.Errorf("%s delivered %d times", typ, len(msgs))
			}
			if !msgs[0].Verified {
				return fmt.Errorf("%s signature not verified", typ)
			}
		}
		return nil
	})
}

// TestDeliveriesKeepEmissionOrder: deliveries to one endpoint (and to one alert destination)
// arrive one at a time in the order their events were emitted, even when the receiver fails some
// attempts: a failed delivery is retried before any later one is sent.
func TestDeliveriesKeepEmissionOrder(t *testing.T) {
	var mu sync.Mutex
	var inflight, maxInflight, n int
	got := map[string][]string{} // path -> alert ids of 2xx answers, in arrival order
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		inflight++
		maxInflight = max(maxInflight, inflight)
		n++
		fail := n%3 == 0
		mu.Unlock()
		var p struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &p)
		mu.Lock()
		inflight--
		if !fail {
			got[r.URL.Path] = append(got[r.URL.Path], p.Data.ID)
		}
		mu.Unlock()
		if fail {
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(204)
	}))
	t.Cleanup(rcv.Close)
	s := MustStart(t, "", outboundTestConfig(""), func(c *Config) { c.RetryBase = 20 * time.Millisecond })
	admin := s.Key("ADMIN")
	createEndpoint(t, s, rcv.URL+"/endpoint", "alert.triggered")
	s.Do("PUT", "/api/admin/alerts/config", admin, alertConfigBody(5, map[string]any{"type": "WEBHOOK", "value": rcv.URL + "/destination"})).Must(t, 200)
	var want []string
	for i := range 15 {
		a := s.Do("POST", "/api/admin/alerts/trigger", admin, map[string]any{"type": "expiry", "severity": "LOW",
			"message": fmt.Sprintf("alert %d", i), "bypassCooldown": true}).Must(t, 201)
		want = append(want, str(a, "alert", "id"))
	}
	eventually(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(got["/endpoint"]) < len(want) || len(got["/destination"]) < len(want) {
			return fmt.Errorf("endpoint %d, destination %d of %d", len(got["/endpoint"]), len(got["/destination"]), len(want))
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	for _, path := range []string{"/endpoint", "/destination"} {
		if fmt.Sprint(got[path]) != fmt.Sprint(want) {
			t.Errorf("%s received\n %v\nwant the emission order\n %v", path, got[path], want)
		}
	}
	if maxInflight > 2 { // one per target
		t.Errorf("%d requests in flight at once to two targets", maxInflight)
	}
}
