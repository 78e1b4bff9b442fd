package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

const testPaymentSecret = "whsec_test_payment_provider"

func (s *testServer) payment(tb testing.TB, body []byte, header string) resp {
	tb.Helper()
	h := map[string]string{}
	if header != "" {
		h["payment-provider-signature"] = header
	}
	return doRequest(tb, s.URL, "POST", "/webhooks/payment-provider", h, body)
}

func paymentBody(id, typ string, created time.Time, obj map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "object": "event", "type": typ, "created": created.Unix(),
		"data": map[string]any{"object": obj}})
	return b
}

func subscription(org, customer, price, status string) map[string]any {
	o := map[string]any{"id": "sub_123", "object": "subscription", "customer": customer, "status": status,
		"current_period_end": time.Now().Add(30 * 24 * time.Hour).Unix(),
		"items":              map[string]any{"object": "list", "data": []any{map[string]any{"price": map[string]any{"id": price, "lookup_key": nil}}}}}
	if org != "" {
		o["metadata"] = map[string]string{"organizationId": org}
	}
	return o
}

// TestPaymentWebhookSignaturesAndEntitlements: signatures (valid, wrong secret, stale, missing),
// replays, out-of-order events and each lifecycle event's effect: after the subscription is
// deleted forecasting answers FEATURE_NOT_ENABLED; subscription.updated reaches the tenant's
// webhook endpoint; the platform endpoint shows the billing record and audit log.
func TestPaymentWebhookSignaturesAndEntitlements(t *testing.T) {
	ops := startReceiver(t)
	rcv := startReceiver(t)
	s := MustStart(t, "", outboundTestConfig(""), func(c *Config) { c.PaymentSecret, c.OpsAlertURL = testPaymentSecret, ops.URL })
	admin, plat := s.Key("ADMIN"), s.Key("platform")
	org := s.Creds.Organization.ID
	_, secret := createEndpoint(t, s, rcv.URL, "subscription.updated")
	rcv.SetSecrets(secret)
	now := time.Now()

	created := paymentBody("evt_created", supplyplan.PaySubscriptionCreated, now.Add(-time.Hour), subscription(org, "cus_9", "price_starter_monthly", "active"))
	for name, h := range map[string]string{
		"missing":      "",
		"wrong secret": supplyplan.PaymentSignatureHeader(created, now, "whsec_other"),
		"stale":        supplyplan.PaymentSignatureHeader(created, now.Add(-301*time.Second), testPaymentSecret),
		"malformed":    "t=abc,v1=zz",
	} {
		r := s.payment(t, created, h)
		if r.Status != 400 || r.Code() != "VALIDATION_ERROR" {
			t.Fatalf("%s signature: %d %s", name, r.Status, r.Body)
		}
	}
	sign := func(b []byte) string {
		return supplyplan.PaymentSignatureHeader(b, time.Now(), "whsec_rotated", testPaymentSecret)
	}
	r := s.payment(t, created, sign(created)).Must(t, 200)
	if str(r, "result", "status") != "applied" {
		t.Fatalf("created = %v", r)
	}
	o := s.Do("GET", "/api/platform/organizations/"+org, plat, nil).Must(t, 200)
	if str(o, "organization", "plan") != "starter" {
		t.Fatalf("org after created = %v", o)
	}
	// Replayed with a fresh signature: applies once.
	if r := s.payment(t, created, sign(created)).Must(t, 200); str(r, "result", "status") != "duplicate" {
		t.Fatalf("replay = %v", r)
	}
	// Deleted, then an older update arriving late: the deletion stands.
	deleted := paymentBody("evt_deleted", supplyplan.PaySubscriptionDeleted, now.Add(-time.Minute), subscription(org, "cus_9", "price_starter_monthly", "canceled"))
	s.payment(t, deleted, sign(deleted)).Must(t, 200)
	late := paymentBody("evt_late_update", supplyplan.PaySubscriptionUpdated, now.Add(-30*time.Minute), subscription("", "cus_9", "price_growth_monthly", "active"))
	if r := s.payment(t, late, sign(late)).Must(t, 200); str(r, "result", "status") != "ignored_older" {
		t.Fatalf("late update = %v", r)
	}
	fr := s.Do("GET", "/api/forecast/scenarios", admin, nil)
	if fr.Status != 403 || fr.Code() != "FEATURE_NOT_ENABLED" {
		t.Fatalf("forecasting after downgrade: %d %s", fr.Status, fr.Body)
	}
	// A new subscription (matched by the stored customer id) restores forecasting.
	again := paymentBody("evt_again", supplyplan.PaySubscriptionUpdated, now, subscription("", "cus_9", "price_growth_monthly", "active"))
	s.payment(t, again, sign(again)).Must(t, 200)
	s.Do("GET", "/api/forecast/scenarios", admin, nil).Must(t, 200)

	paid := paymentBody("evt_paid", supplyplan.PayInvoicePaid, now, map[string]any{"id": "in_1", "object": "invoice", "customer": "cus_9", "amount_paid": 4900, "currency": "eur"})
	s.payment(t, paid, sign(paid)).Must(t, 200)
	failed := paymentBody("evt_failed", supplyplan.PayInvoiceFailed, now.Add(time.Second), map[string]any{"id": "in_2", "object": "invoice", "customer": "cus_9", "amount_due": 4900, "currency": "eur"})
	s.payment(t, failed, sign(failed)).Must(t, 200)
	unknown := paymentBody("evt_other", "charge.refunded", now, map[string]any{"id": "ch_1"})
	if r := s.payment(t, unknown, sign(unknown)).Must(t, 200); str(r, "result", "status") != "ignored" {
		t.Fatalf("unhandled type = %v", r)
	}

	b := s.Do("GET", "/api/platform/organizations/"+org+"/billing", plat, nil).Must(t, 200)
	if str(b, "billing", "customerId") != "cus_9" || str(b, "billing", "plan") != "growth" || str(b, "billing", "paymentStatus") != "failed" {
		t.Fatalf("billing = %v", b)
	}
	var actions []string
	for _, e := range list(b, "auditLog") {
		actions = append(actions, str(e.(map[string]any), "action"))
	}
	for _, want := range []string{"applied", "ignored_older", "payment_confirmed", "payment_failed", "ops_alert"} {
		if !slices.Contains(actions, want) {
			t.Fatalf("audit log %v lacks %s", actions, want)
		}
	}
	if r := s.Do("GET", "/api/platform/organizations/"+org+"/billing", admin, nil); r.Status != 403 {
		t.Fatalf("tenant key on the billing endpoint: %d", r.Status)
	}
	eventually(t, 10*time.Second, func() error {
		if n := len(rcv.Typed("subscription.updated")); n != 3 { // created, deleted, updated
			return fmt.Errorf("%d subscription.updated", n)
		}
		if len(ops.OK()) != 1 {
			return fmt.Errorf("%d ops alerts", len(ops.OK()))
		}
		return nil
	})
	var ev struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(rcv.Typed("subscription.updated")[2].Body, &ev)
	if ev.Data["plan"] != "growth" || !rcv.Typed("subscription.updated")[2].Verified {
		t.Fatalf("subscription.updated = %v", ev.Data)
	}

	// The stub routes.
	for _, p := range []string{"/api/webhooks/payment-provider", "/api/webhooks/retail-provider"} {
		r := doRequest(t, s.URL, "POST", p, nil, `{}`)
		if r.Status != 501 || r.Code() != "NOT_IMPLEMENTED" {
			t.Fatalf("%s: %d %s", p, r.Status, r.Body)
		}
	}
}

// TestInvoiceEventsArrivingOutOfOrder is issue 10 item 6 through the HTTP route: invoice.paid
// (created now-5 s) then invoice.payment_failed (created now-30 s) leaves no failed payment and
// raises no operations alert; a failure newer than the payment does both. The operations hook
// receives deliveries in emission order, so the one alert it gets is the newer failure's.
func TestInvoiceEventsArrivingOutOfOrder(t *testing.T) {
	ops := startReceiver(t)
	s := MustStart(t, "", outboundTestConfig(""), func(c *Config) { c.PaymentSecret, c.OpsAlertURL = testPaymentSecret, ops.URL })
	plat, org := s.Key("platform"), s.Creds.Organization.ID
	send := func(b []byte) map[string]any {
		t.Helper()
		return s.payment(t, b, supplyplan.PaymentSignatureHeader(b, time.Now(), testPaymentSecret)).Must(t, 200)
	}
	now := time.Now()
	send(paymentBody("evt_sub", supplyplan.PaySubscriptionCreated, now.Add(-time.Hour), subscription(org, "cus_7", "price_growth_monthly", "active")))
	invoice := func(id, typ string, created time.Time, inv string) []byte {
		return paymentBody(id, typ, created, map[string]any{"id": inv, "object": "invoice", "customer": "cus_7", "amount_paid": 4900, "amount_due": 4900, "currency": "eur"})
	}
	send(invoice("evt_paid", supplyplan.PayInvoicePaid, now.Add(-5*time.Second), "in_1"))
	if r := send(invoice("evt_failed_old", supplyplan.PayInvoiceFailed, now.Add(-30*time.Second), "in_1")); str(r, "result", "status") != "ignored_older" {
		t.Fatalf("superseded failure = %v", r)
	}
	b := s.Do("GET", "/api/platform/organizations/"+org+"/billing", plat, nil).Must(t, 200)
	if f := b["billing"].(map[string]any)["failedPayments"]; f != 0.0 || str(b, "billing", "paymentStatus") != "paid" {
		t.Fatalf("billing after a superseded failure = %v", b["billing"])
	}
	actions := map[string]string{}
	for _, e := range list(b, "auditLog") {
		m := e.(map[string]any)
		actions[str(m, "eventId")] += str(m, "action") + " "
	}
	if actions["evt_failed_old"] != "ignored_older " {
		t.Fatalf("audit log = %v", actions)
	}
	send(invoice("evt_failed_new", supplyplan.PayInvoiceFailed, now, "in_2"))
	eventually(t, 10*time.Second, func() error {
		if n := len(ops.OK()); n < 1 {
			return fmt.Errorf("%d ops alerts", n)
		}
		return nil
	})
	if got := ops.OK(); len(got) != 1 || !strings.Contains(string(got[0].Body), "in_2") {
		t.Fatalf("ops alerts = %d, first %s", len(got), got[0].Body)
	}
	b = s.Do("GET", "/api/platform/organizations/"+org+"/billing", plat, nil).Must(t, 200)
	if f := b["billing"].(map[string]any)["failedPayments"]; f != 1.0 || str(b, "billing", "paymentStatus") != "failed" {
		t.Fatalf("billing after a newer failure = %v", b["billing"])
	}
}
