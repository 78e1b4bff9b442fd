package supplyplan

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

// payEvent builds a Stripe-shaped event body.
func payEvent(id, typ string, created int64, obj map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "type": typ, "created": created, "data": map[string]any{"object": obj}})
	return b
}

func subObj(org, customer, price, status string) map[string]any {
	o := map[string]any{"id": "sub_1", "object": "subscription", "customer": customer, "status": status,
		"items": map[string]any{"data": []any{map[string]any{"price": map[string]any{"id": price}}}}}
	if org != "" {
		o["metadata"] = map[string]string{"organizationId": org}
	}
	return o
}

func TestPaymentEventLifecycle(t *testing.T) {
	st := NewPlatformState()
	now := time.Unix(1_700_000_000, 0).UTC()
	org, recs, _ := st.CreateOrg(OrganizationInput{Name: strp("Acme"), Slug: strp("acme")}, now)
	for _, r := range recs {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	plans := DefaultPlans()
	apply := func(body []byte) PaymentResult {
		t.Helper()
		ev, err := ParsePaymentEvent(body)
		if err != nil {
			t.Fatal(err)
		}
		res, recs, err := st.ApplyPaymentEvent(ev, body, plans, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			// Records go through JSON like the journal does.
			b, _ := json.Marshal([]Record{r})
			dec, err := DecodeRecords(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Apply(dec[0]); err != nil {
				t.Fatal(err)
			}
		}
		return res
	}
	ents := func() []string { return st.Orgs[org.ID].Entitlements }

	// An invoice for a customer nobody knows yet waits for its organization.
	if r := apply(payEvent("evt_inv0", PayInvoicePaid, 90, map[string]any{"id": "in_0", "customer": "cus_1", "amount_paid": 1000, "currency": "usd"})); r.Status != "unmatched" {
		t.Fatalf("early invoice = %+v", r)
	}
	if r := apply(payEvent("evt_1", PaySubscriptionCreated, 100, subObj(org.ID, "cus_1", "price_growth_monthly", "active"))); r.Status != "applied" {
		t.Fatalf("created = %+v", r)
	}
	if st.Orgs[org.ID].Plan != "growth" || !slices.Contains(ents(), EntitlementForecasting) || !slices.Contains(st.Orgs[org.ID].Capabilities, "planning.transfers") {
		t.Fatalf("after created: %+v", st.Orgs[org.ID])
	}
	if b := st.Billing[org.ID]; b.CustomerID != "cus_1" || b.PaymentStatus != "paid" || len(st.Unmatched) != 0 {
		t.Fatalf("billing = %+v, unmatched %d (the early invoice should have applied)", b, len(st.Unmatched))
	}
	if r := apply(payEvent("evt_1", PaySubscriptionCreated, 100, subObj(org.ID, "cus_1", "price_growth_monthly", "active"))); r.Status != "duplicate" {
		t.Fatalf("replay = %+v", r)
	}
	// Matched by customer id alone; a plan change.
	if r := apply(payEvent("evt_2", PaySubscriptionUpdated, 200, subObj("", "cus_1", "price_starter_monthly", "active"))); r.Status != "applied" || st.Orgs[org.ID].Plan != "starter" {
		t.Fatalf("updated = %+v plan %s", r, st.Orgs[org.ID].Plan)
	}
	// An older update arriving late does not overwrite the newer state.
	if r := apply(payEvent("evt_old", PaySubscriptionUpdated, 150, subObj(org.ID, "cus_1", "price_enterprise", "active"))); r.Status != "ignored_older" || st.Orgs[org.ID].Plan != "starter" {
		t.Fatalf("older = %+v plan %s", r, st.Orgs[org.ID].Plan)
	}
	if r := apply(payEvent("evt_f", PayInvoiceFailed, 210, map[string]any{"id": "in_1", "customer": "cus_1", "amount_due": 4900, "currency": "usd"})); r.OpsAlert == "" {
		t.Fatalf("payment failed = %+v", r)
	}
	if b := st.Billing[org.ID]; b.PaymentStatus != "failed" || b.FailedPayments != 1 {
		t.Fatalf("after failure: %+v", b)
	}
	if r := apply(payEvent("evt_del", PaySubscriptionDeleted, 300, subObj(org.ID, "cus_1", "price_starter_monthly", "canceled"))); r.Status != "applied" {
		t.Fatalf("deleted = %+v", r)
	}
	if st.Orgs[org.ID].Plan != "free" || slices.Contains(ents(), EntitlementForecasting) {
		t.Fatalf("after delete: %+v", st.Orgs[org.ID])
	}
	// An update older than the deletion does not resurrect the plan, nor one at the same second.
	apply(payEvent("evt_late", PaySubscriptionUpdated, 300, subObj(org.ID, "cus_1", "price_growth_monthly", "active")))
	if st.Orgs[org.ID].Plan != "free" {
		t.Fatalf("late update resurrected the plan: %s", st.Orgs[org.ID].Plan)
	}
	v, _ := st.BillingOf(org.ID)
	actions := map[string]int{}
	for _, e := range v.AuditLog {
		actions[e.Action]++
	}
	if actions["applied"] != 3 || actions["payment_confirmed"] != 1 || actions["payment_failed"] != 1 || actions["ops_alert"] != 1 || actions["ignored_older"] != 2 {
		t.Fatalf("audit actions = %v", actions)
	}
	var kinds []string
	for _, e := range st.PendingEventList() {
		kinds = append(kinds, e.Type)
	}
	if fmt.Sprint(kinds) != "[subscription.updated subscription.updated ops.payment_failed subscription.updated]" {
		t.Fatalf("pending events = %v", kinds)
	}
}

func strp(s string) *string { return &s }

func TestPlansConfig(t *testing.T) {
	p := DefaultPlans()
	if name, _, ok := p.Resolve([]string{"nope", "prod_growth"}); !ok || name != "growth" {
		t.Fatalf("resolve = %s %v", name, ok)
	}
	if name, _, ok := p.Resolve([]string{"enterprise"}); !ok || name != "enterprise" {
		t.Fatalf("resolve by name = %s %v", name, ok)
	}
	if _, err := ParsePlans([]byte(`{"downgradePlan":"x","plans":{}}`)); err == nil {
		t.Fatal("a downgrade plan that does not exist was accepted")
	}
	if _, err := ParsePlans([]byte(`{"downgradePlan":"f","plans":{"f":{"entitlements":[],"capabilities":[]}},"extra":1}`)); err == nil {
		t.Fatal("unknown field accepted")
	}
}
