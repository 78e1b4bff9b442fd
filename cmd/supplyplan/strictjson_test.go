package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// rawDo sends body as it is (bytes json.Marshal would never produce).
func rawDo(tb testing.TB, base, method, path string, headers map[string]string, body string) resp {
	tb.Helper()
	req, err := http.NewRequest(method, base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{Status: res.StatusCode, Body: b, Header: res.Header}
}

func TestRequestJSONIsStrict(t *testing.T) {
	s := MustStart(t, "")
	bearer := map[string]string{"Authorization": "Bearer " + s.Key("PLANNER")}
	imp := map[string]string{"x-api-key": s.Key("import")}
	tests := []struct {
		name, path string
		headers    map[string]string
		body       string
		field      string
	}{
		{"invalid UTF-8", "/api/forecast/scenarios", bearer, "{\"name\":\"caf\xe9\"}", "name"},
		{"invalid UTF-8 deep", "/api/forecast/scenarios", bearer, "{\"name\":\"a\",\"assumptions\":{\"categoryAdjustments\":[{\"categoryId\":\"\xff\",\"liftPct\":0.1}]}}", "assumptions.categoryAdjustments[0].categoryId"},
		{"lone surrogate", "/api/forecast/events", bearer, `{"name":"\udc00","startsAt":"2030-01-01","endsAt":"2030-01-02"}`, "name"},
		{"duplicate key", "/api/forecast/scenarios", bearer, `{"name":"first","name":"second"}`, "name"},
		{"duplicate key deep", "/api/forecast/scenarios", bearer, `{"name":"a","assumptions":{"globalLiftPct":0.1,"globalLiftPct":0.2}}`, "assumptions.globalLiftPct"},
		{"duplicate key on a platform route", "/api/platform/organizations", map[string]string{"Authorization": "Bearer " + s.Key("platform")}, `{"slug":"a","slug":"b","name":"x"}`, "slug"},
		{"case variant only", "/api/forecast/scenarios", bearer, `{"Name":"x"}`, "name"},
		{"import: duplicate key in a row", "/api/import/catalog", imp, `{"products":[{"externalId":"A","externalId":"B"}]}`, "products[0].externalId"},
		{"import: invalid UTF-8", "/api/import/demand-history", imp, "{\"records\":[{\"skuId\":\"P\",\"locationId\":\"L\xc3\",\"weekStarting\":\"2026-01-05\"}]}", "records[0].locationId"},
		{"signals: duplicate key", "/api/demand/signals", imp, `{"signals":[{"signalId":"a","signalId":"b"}]}`, "signals[0].signalId"},
	}
	for _, tc := range tests {
		r := rawDo(t, s.URL, "POST", tc.path, tc.headers, tc.body)
		m := r.JSON(t)
		details, _ := m["details"].(map[string]any)
		if r.Status != 400 || r.Code() != "VALIDATION_ERROR" || details[tc.field] == nil {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.name, r.Status, r.Body, tc.field)
		}
	}
	// Keys are exact: "Name" does not fill name, unknown keys stay ignored.
	sc := rawDo(t, s.URL, "POST", "/api/forecast/scenarios", bearer, `{"name":"right","Name":"wrong","NAME":"wrong","unknown":1}`).Must(t, 201)
	if got := str(sc, "scenario", "name"); got != "right" {
		t.Fatalf("name = %q", got)
	}
	// A signal row's keys too: "SkuId" is not skuId, so the row lacks it.
	res := rawDo(t, s.URL, "POST", "/api/demand/signals", imp, `{"signals":[{"signalId":"s1","SkuId":"P","locationId":"L","quantity":1}]}`).Must(t, 200)
	if num(res, "rejected") != 1 {
		t.Fatalf("signal with SkuId: %v", res)
	}
	// Tool arguments: a key of another case is an unknown argument.
	tools := "http://" + s.Main.Tools.Addr()
	r := rawDo(t, tools, "POST", "/tools/call", map[string]string{"Authorization": "Bearer " + s.Key("demoTool")},
		`{"org":"demo","name":"check_availability","arguments":{"ProductId":"BOOT-42"}}`)
	if !strings.Contains(string(r.Body), "ProductId") || !strings.Contains(string(r.Body), "case-sensitive") {
		t.Fatalf("tool call with ProductId: %d %s", r.Status, r.Body)
	}
	r = rawDo(t, tools, "POST", "/tools/call", map[string]string{"Authorization": "Bearer " + s.Key("demoTool")},
		`{"org":"demo","name":"check_availability","name":"get_order_status","arguments":{}}`)
	if r.Status != 400 || !strings.Contains(string(r.Body), `"name"`) {
		t.Fatalf("tool call with two names: %d %s", r.Status, r.Body)
	}
}
