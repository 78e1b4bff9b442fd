package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// demandWeeks returns n weekly demand-history records of sku at loc ending last week.
func demandWeeks(sku, loc string, n int, qty float64) []map[string]any {
	cur := supplyplan.WeekStart(time.Now().UTC())
	var out []map[string]any
	for i := n; i >= 1; i-- {
		out = append(out, map[string]any{"skuId": sku, "locationId": loc,
			"weekStarting": cur.AddDate(0, 0, -7*i).Format("2006-01-02"), "actualDemand": qty})
	}
	return out
}

func alertConfigBody(cooldown int, dests ...map[string]any) map[string]any {
	types := map[string]bool{}
	for _, k := range supplyplan.AlertKinds {
		types[string(k)] = true
	}
	if dests == nil {
		dests = []map[string]any{}
	}
	return map[string]any{"config": map[string]any{"enabled": true, "destinations": dests, "alertTypes": types, "cooldownMinutes": cooldown}}
}

// TestAlertsEndToEnd is the "done when": an administrator configures an e-mail, a webhook
// and a chat destination, imports data that creates a stockout, receives exactly one alert on
// each, sees it in history with per-destination delivery; a webhook endpoint receives signed
// import events.
func TestAlertsEndToEnd(t *testing.T) {
	mail := startMailSink(t, true, "alerts", "s3cret")
	hook, chat, endpoint := startReceiver(t), startReceiver(t), startReceiver(t)
	s := MustStart(t, "", outboundTestConfig(mail.Addr), func(c *Config) {
		c.SMTPUsername, c.SMTPPassword, c.SMTPInsecure, c.SMTPStartTLS = "alerts", "s3cret", true, "always"
	})
	admin := s.Key("ADMIN")

	// Default configuration of a new tenant.
	def := s.Do("GET", "/api/admin/alerts/config", admin, nil).Must(t, 200)
	cfg := def["config"].(map[string]any)
	if cfg["enabled"] != true || len(cfg["destinations"].([]any)) != 0 || cfg["cooldownMinutes"] != 60.0 {
		t.Fatalf("default config = %v", cfg)
	}
	for _, k := range supplyplan.AlertKinds {
		if cfg["alertTypes"].(map[string]any)[string(k)] != true {
			t.Fatalf("default alertTypes = %v", cfg["alertTypes"])
		}
	}

	put := s.Do("PUT", "/api/admin/alerts/config", admin, alertConfigBody(30,
		map[string]any{"type": "EMAIL", "value": "planner@example.com", "name": "Planner"},
		map[string]any{"type": "WEBHOOK", "value": hook.URL + "/alerts", "enabled": true},
		map[string]any{"id": "chat-1", "type": "CHAT", "value": chat.URL + "/hook"},
	)).Must(t, 200)
	if put["success"] != true {
		t.Fatalf("put = %v", put)
	}
	dests := put["config"].(map[string]any)["destinations"].([]any)
	if len(dests) != 3 || str(dests[2].(map[string]any), "id") != "chat-1" || str(dests[0].(map[string]any), "id") == "" {
		t.Fatalf("destinations = %v", dests)
	}
	hook.SetSecrets(str(dests[1].(map[string]any), "secret"))
	got := s.Do("GET", "/api/admin/alerts/config", admin, nil).Must(t, 200)
	if g := got["config"].(map[string]any); g["cooldownMinutes"] != 30.0 || len(g["destinations"].([]any)) != 3 {
		t.Fatalf("stored config = %v", g)
	}

	ep := s.Do("POST", "/api/webhooks/endpoints", admin, map[string]any{"url": endpoint.URL + "/events",
		"eventTypes": []string{"import.*"}, "description": "ERP"}).Must(t, 201)
	secret := str(ep, "secret")
	if !strings.HasPrefix(secret, "whsec_") || str(ep, "endpoint", "secret") != "" {
		t.Fatalf("create endpoint = %v", ep)
	}
	endpoint.SetSecrets(secret)

	s.SeedCatalog([]string{"TENT"}, []string{"WH1"})
	s.Import("demand-history", map[string]any{"records": demandWeeks("TENT", "WH1", 8, 20)})
	s.Import("inventory", map[string]any{"levels": []map[string]any{{"skuId": "TENT", "locationId": "WH1", "quantityOnHand": 0, "reorderPoint": 10}}})

	eventually(t, 20*time.Second, func() error {
		if n, c, m := len(hook.OK()), len(chat.OK()), len(mail.Messages()); n < 1 || c < 1 || m < 1 {
			return fmt.Errorf("webhook %d, chat %d, mail %d", n, c, m)
		}
		return nil
	})
	// Evaluating again (and the import events still arriving) must not repeat the alert.
	s.Do("POST", "/api/admin/alerts/evaluate", admin, nil).Must(t, 200)
	time.Sleep(300 * time.Millisecond)
	if n, c, m := len(hook.OK()), len(chat.OK()), len(mail.Messages()); n != 1 || c != 1 || m != 1 {
		t.Fatalf("deliveries: webhook %d, chat %d, mail %d; want one each", n, c, m)
	}
	wh := hook.OK()[0]
	if !wh.Verified {
		t.Fatalf("alert webhook signature does not verify: %v", wh.Header)
	}
	var payload struct {
		Type string           `json:"type"`
		Data supplyplan.Alert `json:"data"`
	}
	if err := json.Unmarshal(wh.Body, &payload); err != nil || payload.Type != "alert.triggered" || payload.Data.Type != supplyplan.AlertStockout ||
		payload.Data.ProductMasterID != "TENT" || payload.Data.LocationID != "WH1" {
		t.Fatalf("alert webhook payload = %s", wh.Body)
	}
	var text struct{ Text string }
	if err := json.Unmarshal(chat.OK()[0].Body, &text); err != nil || !strings.Contains(text.Text, "stockout") {
		t.Fatalf("chat body = %s", chat.OK()[0].Body)
	}
	if m := mail.Messages()[0]; m.To != "planner@example.com" || m.From != "alerts@supplyplan.test" || !m.TLS || !m.Authed ||
		!strings.Contains(m.Data, "Stockout") {
		t.Fatalf("mail = %+v", m)
	}

	var hist map[string]any
	eventually(t, 10*time.Second, func() error {
		hist = s.Do("GET", "/api/admin/alerts/history?alertType=stockout", admin, nil).Must(t, 200)
		alerts := list(hist, "alerts")
		if len(alerts) != 1 || alerts[0].(map[string]any)["delivered"] != true {
			return fmt.Errorf("history = %v", hist)
		}
		return nil
	})
	a := list(hist, "alerts")[0].(map[string]any)
	if str(a, "severity") == "" || str(a, "deliveredAt") == "" || str(a, "triggeredAt") == "" || len(a["destinations"].([]any)) != 3 {
		t.Fatalf("alert = %v", a)
	}
	for _, d := range a["destinations"].([]any) {
		dm := d.(map[string]any)
		if dm["delivered"] != true || str(dm, "deliveredAt") == "" || str(dm, "type") == "" || str(dm, "value") == "" {
			t.Fatalf("destination result = %v", dm)
		}
	}
	if p := hist["pagination"].(map[string]any); p["page"] != 1.0 || p["pageSize"] != 50.0 || p["total"] != 1.0 || p["totalPages"] != 1.0 {
		t.Fatalf("pagination = %v", p)
	}

	// The endpoint received every import event, signed.
	eventually(t, 10*time.Second, func() error {
		if n := len(endpoint.Typed("import.completed")); n < 3 {
			return fmt.Errorf("%d import.completed", n)
		}
		return nil
	})
	for _, m := range endpoint.OK() {
		if !m.Verified {
			t.Fatalf("import event signature does not verify")
		}
		var p map[string]any
		_ = json.Unmarshal(m.Body, &p)
		if str(p, "type") != "import.completed" || str(p, "timestamp") == "" || str(p, "data", "jobId") == "" {
			t.Fatalf("import event = %s", m.Body)
		}
	}
	dl := s.Do("GET", "/api/webhooks/endpoints/"+str(ep, "endpoint", "id")+"/deliveries", admin, nil).Must(t, 200)
	for _, d := range list(dl, "deliveries") {
		dm := d.(map[string]any)
		att := dm["attempts"].([]any)
		if str(dm, "status") != "SUCCEEDED" || len(att) != 1 || att[0].(map[string]any)["statusCode"] != 200.0 {
			t.Fatalf("delivery = %v", dm)
		}
		if _, ok := att[0].(map[string]any)["latencyMs"]; !ok {
			t.Fatalf("attempt without latency: %v", att[0])
		}
	}
}

// TestDemandSignalEvents: live signals far above the usual weekly demand produce
// demand_signal.spike_detected and demand_signal.stockout_risk for a subscribed endpoint, once.
func TestDemandSignalEvents(t *testing.T) {
	rcv := startReceiver(t)
	s := MustStart(t, "", outboundTestConfig(""))
	admin := s.Key("ADMIN")
	_, secret := createEndpoint(t, s, rcv.URL, "demand_signal.*")
	rcv.SetSecrets(secret)
	s.SeedCatalog([]string{"OJ"}, []string{"S1"})
	s.Import("demand-history", map[string]any{"records": demandWeeks("OJ", "S1", 8, 10)})
	s.Import("inventory", map[string]any{"levels": []map[string]any{{"skuId": "OJ", "locationId": "S1", "quantityOnHand": 100}}})
	var sigs []map[string]any
	for i := range 30 {
		sigs = append(sigs, map[string]any{"signalId": fmt.Sprintf("pos-%d", i), "skuId": "OJ", "locationId": "S1",
			"quantity": 10, "occurredAt": time.Now().UTC().Format(time.RFC3339)})
	}
	s.Do("POST", "/api/demand/signals", admin, map[string]any{"signals": sigs}).Must(t, 200)
	eventually(t, 15*time.Second, func() error {
		if len(rcv.Typed("demand_signal.spike_detected")) != 1 || len(rcv.Typed("demand_signal.stockout_risk")) != 1 {
			return fmt.Errorf("spike %d, stockout risk %d", len(rcv.Typed("demand_signal.spike_detected")), len(rcv.Typed("demand_signal.stockout_risk")))
		}
		return nil
	})
	var spike struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(rcv.Typed("demand_signal.spike_detected")[0].Body, &spike)
	if spike.Data["skuId"] != "OJ" || spike.Data["actualDemand"] != 300.0 || !rcv.Typed("demand_signal.spike_detected")[0].Verified {
		t.Fatalf("spike = %v", spike.Data)
	}
	s.Do("POST", "/api/admin/alerts/evaluate", admin, nil).Must(t, 200)
	time.Sleep(300 * time.Millisecond)
	if len(rcv.Typed("demand_signal.spike_detected")) != 1 || len(rcv.Typed("demand_signal.stockout_risk")) != 1 {
		t.Fatal("signal events repeated")
	}
}

// TestAlertCapPerEvaluation: past maxDeliveredPerEvaluation the alerts of one evaluation are kept
// in history, suppressed, and the most severe one is the one sent.
func TestAlertCapPerEvaluation(t *testing.T) {
	chat := startReceiver(t)
	th := filepath.Join(t.TempDir(), "thresholds.json")
	if err := os.WriteFile(th, []byte(`{"maxDeliveredPerEvaluation": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := MustStart(t, "", outboundTestConfig(""), func(c *Config) { c.AlertThresholds = th })
	admin := s.Key("ADMIN")
	s.Do("PUT", "/api/admin/alerts/config", admin, map[string]any{"config": map[string]any{"enabled": false, "cooldownMinutes": 60,
		"destinations": []any{}, "alertTypes": alertConfigBody(60)["config"].(map[string]any)["alertTypes"]}}).Must(t, 200)
	s.Import("catalog", map[string]any{"products": []map[string]any{{"externalId": "A", "unitPrice": 1}, {"externalId": "B", "unitPrice": 5000}, {"externalId": "C", "unitPrice": 2}}})
	var levels, hist []map[string]any
	for _, p := range []string{"A", "B", "C"} {
		levels = append(levels, map[string]any{"skuId": p, "locationId": "W", "quantityOnHand": 0})
		hist = append(hist, demandWeeks(p, "W", 8, 10)...)
	}
	s.Import("inventory", map[string]any{"levels": levels})
	s.Import("demand-history", map[string]any{"records": hist})
	s.Do("PUT", "/api/admin/alerts/config", admin, alertConfigBody(60, map[string]any{"type": "CHAT", "value": chat.URL})).Must(t, 200)
	r := s.Do("POST", "/api/admin/alerts/evaluate", admin, nil).Must(t, 200)
	if r["evaluation"].(map[string]any)["fired"] != 3.0 {
		t.Fatalf("evaluation = %v", r)
	}
	eventually(t, 10*time.Second, func() error {
		if len(chat.OK()) != 1 {
			return fmt.Errorf("%d chat messages", len(chat.OK()))
		}
		return nil
	})
	if !strings.Contains(string(chat.OK()[0].Body), "B at W") {
		t.Fatalf("the most valuable stockout was not the one sent: %s", chat.OK()[0].Body)
	}
	h := s.Do("GET", "/api/admin/alerts/history?alertType=stockout", admin, nil).Must(t, 200)
	suppressed := 0
	for _, a := range list(h, "alerts") {
		if a.(map[string]any)["suppressed"] == true {
			suppressed++
		}
	}
	if len(list(h, "alerts")) != 3 || suppressed != 2 {
		t.Fatalf("history = %v", h)
	}
}
