package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// destinationRefusal decodes a 400 and returns the messages given for field.
func destinationRefusal(t *testing.T, r resp, field string) []string {
	t.Helper()
	var e struct {
		Code    string              `json:"code"`
		Details map[string][]string `json:"details"`
	}
	if r.Status != 400 || json.Unmarshal(r.Body, &e) != nil || e.Code != "VALIDATION_ERROR" || len(e.Details[field]) == 0 {
		t.Fatalf("status %d, body %s: want 400 VALIDATION_ERROR naming %s", r.Status, r.Body, field)
	}
	return e.Details[field]
}

// TestEveryDestinationUsesOneGuard: webhook endpoints, alert WEBHOOK/CHAT destinations and a
// merchant's webhookUrl go through the same check. A destination that is not globally reachable
// (loopback, NAT64 of the metadata service, a "localhost" name, benchmarking space) answers 400
// naming the field and the setting that allows it; with --webhook-allow-private all three accept it.
func TestEveryDestinationUsesOneGuard(t *testing.T) {
	s := MustStart(t, "", func(c *Config) { c.AlertEvalInterval = -1 })
	admin, plat, org := s.Key("ADMIN"), s.Key("platform"), s.Creds.Organization.ID
	for _, u := range []string{"http://127.0.0.1:9/x", "http://[64:ff9b::a9fe:a9fe]/latest", "http://localhost:8080/x", "http://198.18.0.1/x", "http://[::ffff:10.0.0.1]/"} {
		msgs := map[string][]string{}
		msgs["url"] = destinationRefusal(t, s.Do("POST", "/api/webhooks/endpoints", admin, map[string]any{"url": u}), "url")
		msgs["config.destinations[0].value"] = destinationRefusal(t, s.Do("PUT", "/api/admin/alerts/config", admin,
			alertConfigBody(60, map[string]any{"type": "WEBHOOK", "value": u})), "config.destinations[0].value")
		destinationRefusal(t, s.Do("PUT", "/api/admin/alerts/config", admin,
			alertConfigBody(60, map[string]any{"type": "CHAT", "value": u})), "config.destinations[0].value")
		msgs["webhookUrl"] = destinationRefusal(t, s.Do("PUT", "/api/platform/organizations/"+org+"/merchant", plat,
			map[string]any{"listed": true, "displayName": "Demo", "webhookUrl": u}), "webhookUrl")
		for field, m := range msgs {
			if !strings.Contains(m[0], "--webhook-allow-private") || !strings.Contains(m[0], "SUPPLYPLAN_WEBHOOK_ALLOW_PRIVATE") {
				t.Errorf("%s %s: %q does not say how to allow it", u, field, m[0])
			}
		}
	}
	// The cases and 22 spellings of loopback, through the endpoint API.
	for _, u := range []string{
		"http://[64:ff9b::a9fe:a9fe]/", "http://[2002:7f00:1::1]/", "http://[::7f00:1]/", "http://[2001:0:7f00:1::ffff:ffff]/",
		"http://198.18.0.1/", "http://240.0.0.1/", "http://255.255.255.255/",
		"http://127.0.0.1/", "http://127.0.0.1:8080/x", "http://127.1/", "http://127.0.1/", "http://0x7f000001/",
		"http://0x7f.0.0.1/", "http://2130706433/", "http://0177.0.0.1/", "http://017700000001/",
		"http://127.255.255.254/", "http://localhost/", "http://LOCALHOST:80/", "http://localhost./",
		"http://api.localhost/", "http://[::1]/", "http://[0:0:0:0:0:0:0:1]/", "http://[::ffff:127.0.0.1]/",
		"http://[::ffff:7f00:1]/", "http://[::127.0.0.1]/", "http://[::7f00:1]/", "http://0.0.0.0/", "http://[::]/",
	} {
		destinationRefusal(t, s.Do("POST", "/api/webhooks/endpoints", admin, map[string]any{"url": u}), "url")
	}
	// The profile was not changed by the refused PUTs.
	if p := s.Do("GET", "/api/platform/organizations/"+org+"/merchant", plat, nil).Must(t, 200); str(p, "merchant", "webhookUrl") != "" {
		t.Fatalf("merchant after refused PUTs = %v", p)
	}
	// A malformed merchant webhookUrl gets the same message as an endpoint's.
	if m := destinationRefusal(t, s.Do("PUT", "/api/platform/organizations/"+org+"/merchant", plat,
		map[string]any{"listed": true, "displayName": "Demo", "webhookUrl": "https://user:pw@hooks.example.com/"}), "webhookUrl"); m[0] != "must not carry credentials" {
		t.Fatalf("credentials in webhookUrl: %q", m)
	}

	open := MustStart(t, "", func(c *Config) { c.AlertEvalInterval, c.WebhookAllowPriv = -1, true })
	u := "http://127.0.0.1:9/x"
	open.Do("POST", "/api/webhooks/endpoints", open.Key("ADMIN"), map[string]any{"url": u}).Must(t, 201)
	open.Do("PUT", "/api/admin/alerts/config", open.Key("ADMIN"), alertConfigBody(60, map[string]any{"type": "WEBHOOK", "value": u})).Must(t, 200)
	p := open.Do("PUT", "/api/platform/organizations/"+open.Creds.Organization.ID+"/merchant", open.Key("platform"),
		map[string]any{"listed": true, "displayName": "Demo", "webhookUrl": u}).Must(t, 200)
	if str(p, "merchant", "webhookUrl") != u {
		t.Fatalf("merchant = %v", p)
	}
}
