package stripe_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/stripe"
)

func TestParseEventSubscription(t *testing.T) {
	body := `{"id":"evt_1","type":"customer.subscription.updated","created":1700000000,"data":{"object":{
		"id":"sub_1","object":"subscription","customer":{"id":"cus_1","object":"customer"},"status":"active",
		"metadata":{"organizationId":"org_a","plan":"growth"},"current_period_end":1702592000,
		"subscription_details":{"metadata":{"organizationId":"org_b"}},
		"items":{"data":[{"price":{"id":"price_1","lookup_key":"growth_monthly","product":"prod_1"},"plan":{"id":"plan_1","product":"prod_1"}}]},
		"plan":{"id":"legacy_plan"},"unknown":{"ignored":true}}}}`
	got, err := stripe.ParseEvent([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	end := time.Unix(1702592000, 0).UTC()
	want := supplyplan.PaymentEvent{ID: "evt_1", Type: supplyplan.PaySubscriptionUpdated, Created: time.Unix(1700000000, 0).UTC(),
		OrganizationIDs: []string{"org_a", "org_b"}, CustomerID: "cus_1", ObjectID: "sub_1", Status: "active", CurrentPeriodEnd: &end,
		PlanRefs: []string{"growth", "growth_monthly", "price_1", "prod_1", "plan_1", "prod_1", "legacy_plan"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseEventInvoice(t *testing.T) {
	body := `{"id":"evt_2","type":"invoice.payment_failed","created":1700000100,"data":{"object":{
		"id":"in_1","object":"invoice","customer":"cus_1","subscription":"sub_1","amount_due":4900,"amount_paid":0,"currency":"eur"}}}`
	got, err := stripe.ParseEvent([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := supplyplan.PaymentEvent{ID: "evt_2", Type: supplyplan.PayInvoiceFailed, Created: time.Unix(1700000100, 0).UTC(),
		CustomerID: "cus_1", ObjectID: "in_1", AmountDue: 4900, Currency: "eur"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// The normalized event is how an unmatched payment is journaled: it goes through JSON intact.
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var back supplyplan.PaymentEvent
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, got) {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

func TestParseEventRefusesWithTheField(t *testing.T) {
	tests := []struct{ body, field string }{
		{`[1]`, "body"},
		{`not json`, "body"},
		{`{"type":"invoice.paid","created":1,"data":{"object":{}}}`, "id"},
		{`{"id":"e","created":1,"data":{"object":{}}}`, "type"},
		{`{"id":"e","type":"invoice.paid","data":{"object":{}}}`, "created"},
		{`{"id":"e","type":"invoice.paid","created":-5,"data":{"object":{}}}`, "created"},
		{`{"id":"e","type":"invoice.paid","created":1,"data":{}}`, "data.object"},
		{`{"id":"e","type":"invoice.paid","created":1,"data":{"object":"in_1"}}`, "data.object"},
		{`{"id":"e","type":"invoice.paid","created":1,"data":{"object":{"status":5}}}`, "data.object"},
	}
	for _, tc := range tests {
		_, err := stripe.ParseEvent([]byte(tc.body))
		var e *supplyplan.Error
		if !errors.As(err, &e) || e.Code != supplyplan.EVALIDATION || len(e.Details[tc.field]) == 0 {
			t.Errorf("%s: err = %v, want a VALIDATION_ERROR naming %s", tc.body, err, tc.field)
		}
	}
}
