package supplyplan_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/stripe"
)

// The billing rules are exercised with the provider's own event bodies, read by the provider
// adapter (stripe.ParseEvent) as the webhook handler reads them: hence an external test package.

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
	st := supplyplan.NewPlatformState()
	now := time.Unix(1_700_000_000, 0).UTC()
	org, recs, _ := st.CreateOrg(supplyplan.OrganizationInput{Name: strp("Acme"), Slug: strp("acme")}, now)
	for _, r := range recs {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	applyRecs := paymentApplier(t, st, &now)
	apply := func(body []byte) supplyplan.PaymentResult { r, _ := applyRecs(body); return r }
	ents := func() []string { return st.Orgs[org.ID].Entitlements }

	// An invoice for a customer nobody knows yet waits for its organization.
	if r := apply(payEvent("evt_inv0", supplyplan.PayInvoicePaid, 90, map[string]any{"id": "in_0", "customer": "cus_1", "amount_paid": 1000, "currency": "usd"})); r.Status != "unmatched" {
		t.Fatalf("early invoice = %+v", r)
	}
	if r := apply(payEvent("evt_1", supplyplan.PaySubscriptionCreated, 100, subObj(org.ID, "cus_1", "price_growth_monthly", "active"))); r.Status != "applied" {
		t.Fatalf("created = %+v", r)
	}
	if st.Orgs[org.ID].Plan != "growth" || !slices.Contains(ents(), supplyplan.EntitlementForecasting) || !slices.Contains(st.Orgs[org.ID].Capabilities, "planning.transfers") {
		t.Fatalf("after created: %+v", st.Orgs[org.ID])
	}
	if b := st.Billing[org.ID]; b.CustomerID != "cus_1" || b.PaymentStatus != "paid" || len(st.Unmatched) != 0 {
		t.Fatalf("billing = %+v, unmatched %d (the early invoice should have applied)", b, len(st.Unmatched))
	}
	if r := apply(payEvent("evt_1", supplyplan.PaySubscriptionCreated, 100, subObj(org.ID, "cus_1", "price_growth_monthly", "active"))); r.Status != "duplicate" {
		t.Fatalf("replay = %+v", r)
	}
	// Matched by customer id alone; a plan change.
	if r := apply(payEvent("evt_2", supplyplan.PaySubscriptionUpdated, 200, subObj("", "cus_1", "price_starter_monthly", "active"))); r.Status != "applied" || st.Orgs[org.ID].Plan != "starter" {
		t.Fatalf("updated = %+v plan %s", r, st.Orgs[org.ID].Plan)
	}
	// An older update arriving late does not overwrite the newer state.
	if r := apply(payEvent("evt_old", supplyplan.PaySubscriptionUpdated, 150, subObj(org.ID, "cus_1", "price_enterprise", "active"))); r.Status != "ignored_older" || st.Orgs[org.ID].Plan != "starter" {
		t.Fatalf("older = %+v plan %s", r, st.Orgs[org.ID].Plan)
	}
	if r := apply(payEvent("evt_f", supplyplan.PayInvoiceFailed, 210, map[string]any{"id": "in_1", "customer": "cus_1", "amount_due": 4900, "currency": "usd"})); r.OpsAlert == "" {
		t.Fatalf("payment failed = %+v", r)
	}
	if b := st.Billing[org.ID]; b.PaymentStatus != "failed" || b.FailedPayments != 1 {
		t.Fatalf("after failure: %+v", b)
	}
	if r := apply(payEvent("evt_del", supplyplan.PaySubscriptionDeleted, 300, subObj(org.ID, "cus_1", "price_starter_monthly", "canceled"))); r.Status != "applied" {
		t.Fatalf("deleted = %+v", r)
	}
	if st.Orgs[org.ID].Plan != "free" || slices.Contains(ents(), supplyplan.EntitlementForecasting) {
		t.Fatalf("after delete: %+v", st.Orgs[org.ID])
	}
	// An update older than the deletion does not resurrect the plan, nor one at the same second.
	apply(payEvent("evt_late", supplyplan.PaySubscriptionUpdated, 300, subObj(org.ID, "cus_1", "price_growth_monthly", "active")))
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

// paymentApplier returns a function that applies a provider event body to st at *now, its records
// going through JSON as the journal's do, and returns the result and the records.
func paymentApplier(t *testing.T, st *supplyplan.PlatformState, now *time.Time) func(body []byte) (supplyplan.PaymentResult, []supplyplan.Record) {
	plans := supplyplan.DefaultPlans()
	return func(body []byte) (supplyplan.PaymentResult, []supplyplan.Record) {
		t.Helper()
		ev, err := stripe.ParseEvent(body)
		if err != nil {
			t.Fatal(err)
		}
		res, recs, err := st.ApplyPaymentEvent(ev, plans, *now)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(recs)
		dec, err := supplyplan.DecodeRecords(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range dec {
			if err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
		return res, recs
	}
}

func TestPlansConfig(t *testing.T) {
	p := supplyplan.DefaultPlans()
	if name, _, ok := p.Resolve([]string{"nope", "prod_growth"}); !ok || name != "growth" {
		t.Fatalf("resolve = %s %v", name, ok)
	}
	if name, _, ok := p.Resolve([]string{"enterprise"}); !ok || name != "enterprise" {
		t.Fatalf("resolve by name = %s %v", name, ok)
	}
	if _, err := supplyplan.ParsePlans([]byte(`{"downgradePlan":"x","plans":{}}`)); err == nil {
		t.Fatal("a downgrade plan that does not exist was accepted")
	}
	if _, err := supplyplan.ParsePlans([]byte(`{"downgradePlan":"f","plans":{"f":{"entitlements":[],"capabilities":[]}},"extra":1}`)); err == nil {
		t.Fatal("unknown field accepted")
	}
}

// billingFixture is a platform state with one organization whose subscription ties customer
// cus_1 to it; apply runs an event through the journal encoding like the actor does.
func billingFixture(t *testing.T) (*supplyplan.PlatformState, string, func(body []byte) (supplyplan.PaymentResult, []supplyplan.Record)) {
	t.Helper()
	st := supplyplan.NewPlatformState()
	now := time.Unix(1_700_000_000, 0).UTC()
	org, recs, _ := st.CreateOrg(supplyplan.OrganizationInput{Name: strp("Acme"), Slug: strp("acme")}, now)
	for _, r := range recs {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	apply := paymentApplier(t, st, &now)
	apply(payEvent("evt_sub", supplyplan.PaySubscriptionCreated, 1000, subObj(org.ID, "cus_1", "price_growth_monthly", "active")))
	return st, org.ID, apply
}

func invoiceEvent(id, typ string, created int64, invoice string) []byte {
	return payEvent(id, typ, created, map[string]any{"id": invoice, "customer": "cus_1", "amount_paid": 4900, "amount_due": 4900, "currency": "usd"})
}

func opsAlerts(recs []supplyplan.Record) int {
	n := 0
	for _, r := range recs {
		if r.Kind == supplyplan.KindPendingEvent && !r.Del && r.Value.(*supplyplan.DomainEvent).Type == supplyplan.OpsPaymentFailed {
			n++
		}
	}
	return n
}

// invoiceState is the part of a billing record invoice events decide.
func invoiceState(b *supplyplan.BillingRecord) string {
	j, _ := json.Marshal(struct {
		Status, PaidEvent string
		Failed            int
		Paid, FailedAt    *time.Time
		InvoiceAt         time.Time
		Unpaid            []time.Time
	}{b.PaymentStatus, b.LastPaymentEventID, b.FailedPayments, b.LastPaymentAt, b.LastPaymentFailedAt, b.InvoiceEventAt, b.UnpaidFailures})
	return string(j)
}

// TestInvoiceEventsOrderIndependent is the case: invoice.paid (created now-5 s) then
// invoice.payment_failed (created now-30 s). The late failure is superseded: no failure counted,
// no operations alert, logged as ignored_older; in the other arrival order the failure alerts
// when it arrives and the payment then clears it. Both orders end in the same record.
func TestInvoiceEventsOrderIndependent(t *testing.T) {
	const now = 2000
	paid := invoiceEvent("evt_paid", supplyplan.PayInvoicePaid, now-5, "in_1")
	failed := invoiceEvent("evt_failed", supplyplan.PayInvoiceFailed, now-30, "in_1")

	st, org, apply := billingFixture(t)
	apply(paid)
	res, recs := apply(failed)
	b := st.Billing[org]
	if res.Status != "ignored_older" || res.OpsAlert != "" || opsAlerts(recs) != 0 {
		t.Fatalf("late failure = %+v, %d ops alerts", res, opsAlerts(recs))
	}
	if b.FailedPayments != 0 || b.PaymentStatus != "paid" || b.LastPaymentFailedAt == nil || b.LastPaymentFailedAt.Unix() != now-30 {
		t.Fatalf("after paid then an older failure: %+v", b)
	}
	v, _ := st.BillingOf(org)
	actions := map[string]string{}
	for _, e := range v.AuditLog {
		actions[e.EventID] += e.Action + " "
	}
	if actions["evt_failed"] != "ignored_older " || actions["evt_paid"] != "payment_confirmed " {
		t.Fatalf("audit = %v", actions)
	}
	for _, e := range st.PendingEventList() {
		if e.Type == supplyplan.OpsPaymentFailed {
			t.Fatalf("ops alert pending for a superseded failure: %+v", e)
		}
	}
	orderA := invoiceState(b)

	st, org, apply = billingFixture(t)
	if res, recs := apply(failed); res.Status != "applied" || res.OpsAlert == "" || opsAlerts(recs) != 1 || st.Billing[org].FailedPayments != 1 {
		t.Fatalf("failure first = %+v, %d ops alerts, record %+v", res, opsAlerts(recs), st.Billing[org])
	}
	if res, _ := apply(paid); res.Status != "applied" {
		t.Fatalf("payment after the failure = %+v", res)
	}
	if orderB := invoiceState(st.Billing[org]); orderB != orderA {
		t.Fatalf("arrival order changed the record:\n paid first:   %s\n failed first: %s", orderA, orderB)
	}
}

// TestInvoiceEventsEveryOrder applies six invoice events (a tie between a payment and a failure
// included) in all 720 orders: the record always ends the same, and a failure raises an
// operations alert exactly when no payment created at or after it arrived before it.
func TestInvoiceEventsEveryOrder(t *testing.T) {
	type inv struct {
		id      string
		paid    bool
		created int64
	}
	events := []inv{{"p10", true, 1010}, {"f5", false, 1005}, {"f15", false, 1015}, {"f20", false, 1020}, {"p20", true, 1020}, {"f30", false, 1030}}
	want := ""
	perms := 0
	var permute func(k int)
	permute = func(k int) {
		if k < len(events) {
			for i := k; i < len(events); i++ {
				events[k], events[i] = events[i], events[k]
				permute(k + 1)
				events[k], events[i] = events[i], events[k]
			}
			return
		}
		perms++
		st, org, apply := billingFixture(t)
		for i, e := range events {
			typ := supplyplan.PayInvoiceFailed
			if e.paid {
				typ = supplyplan.PayInvoicePaid
			}
			res, recs := apply(invoiceEvent("evt_"+e.id, typ, e.created, "in_"+e.id))
			if e.paid {
				continue
			}
			superseded := false
			for _, earlier := range events[:i] {
				superseded = superseded || (earlier.paid && earlier.created >= e.created)
			}
			if alerted := opsAlerts(recs) == 1 && res.OpsAlert != ""; alerted == superseded {
				t.Fatalf("order %v: failure %s alerted %v, superseded %v (%+v)", events, e.id, alerted, superseded, res)
			}
		}
		got := invoiceState(st.Billing[org])
		if want == "" {
			want = got
			b := st.Billing[org]
			if b.PaymentStatus != "failed" || b.FailedPayments != 1 || b.LastPaymentAt.Unix() != 1020 || b.LastPaymentFailedAt.Unix() != 1030 ||
				b.InvoiceEventAt.Unix() != 1030 || b.LastPaymentEventID != "evt_p20" {
				t.Fatalf("final record %+v", b)
			}
		}
		if got != want {
			t.Fatalf("order %v ends in\n %s\nwant\n %s", events, got, want)
		}
	}
	permute(0)
	if perms != 720 {
		t.Fatalf("%d orders", perms)
	}
}

// TestInvoiceRecordFromAnOlderVersion: a record written before unpaid failures were kept counts
// its failures until a payment newer than them arrives.
func TestInvoiceRecordFromAnOlderVersion(t *testing.T) {
	st, org, apply := billingFixture(t)
	old := *st.Billing[org]
	failedAt := time.Unix(1500, 0).UTC()
	old.FailedPayments, old.PaymentStatus, old.LastPaymentFailedAt, old.InvoiceEventAt = 2, "failed", &failedAt, failedAt
	if err := st.Apply(supplyplan.Put(supplyplan.KindBilling, org, &old)); err != nil {
		t.Fatal(err)
	}
	apply(invoiceEvent("evt_f", supplyplan.PayInvoiceFailed, 1600, "in_2"))
	if b := st.Billing[org]; b.FailedPayments != 3 || b.PaymentStatus != "failed" {
		t.Fatalf("after one more failure: %+v", b)
	}
	apply(invoiceEvent("evt_p", supplyplan.PayInvoicePaid, 1550, "in_1"))
	if b := st.Billing[org]; b.FailedPayments != 1 || b.PaymentStatus != "failed" {
		t.Fatalf("after a payment between the failures: %+v", b)
	}
	apply(invoiceEvent("evt_p2", supplyplan.PayInvoicePaid, 1700, "in_2"))
	if b := st.Billing[org]; b.FailedPayments != 0 || b.PaymentStatus != "paid" {
		t.Fatalf("after the newest payment: %+v", b)
	}
}

// TestUnmatchedPaymentOfAnEarlierVersion: an earlier version journaled an unmatched payment as the
// provider's event body ("event"); it still decodes (through the registered provider parser) and
// applies with the next event of an organization whose customer it names.
func TestUnmatchedPaymentOfAnEarlierVersion(t *testing.T) {
	st, org, apply := billingFixture(t)
	body := payEvent("evt_early", supplyplan.PayInvoiceFailed, 900, map[string]any{"id": "in_9", "customer": "cus_1", "amount_due": 1200, "currency": "usd"})
	old := `[{"k":"paymentunmatched","i":"evt_early","v":{"customerId":"cus_1","event":` + string(body) + `,"receivedAt":"2023-11-14T22:13:20Z"}}]`
	recs, err := supplyplan.DecodeRecords([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	u := recs[0].Value.(*supplyplan.UnmatchedPayment)
	if u.Payment == nil || u.Payment.ID != "evt_early" || u.Payment.CustomerID != "cus_1" || u.Payment.AmountDue != 1200 ||
		u.Payment.Created.Unix() != 900 {
		t.Fatalf("legacy entry decoded as %+v (payment %+v)", u, u.Payment)
	}
	if err := st.Apply(recs[0]); err != nil {
		t.Fatal(err)
	}
	// The next event of the organization's customer applies the waiting failure.
	res, out := apply(payEvent("evt_sub2", supplyplan.PaySubscriptionUpdated, 1100, subObj(org, "cus_1", "price_growth_monthly", "active")))
	if res.Status != "applied" {
		t.Fatalf("subscription update = %+v", res)
	}
	if len(st.Unmatched) != 0 {
		t.Fatalf("unmatched = %v, want the legacy entry applied", st.Unmatched)
	}
	if _, seen := st.PaymentEvents["evt_early"]; !seen {
		t.Fatal("the legacy event id is not remembered as applied")
	}
	if opsAlerts(out) != 1 {
		t.Fatalf("%d ops alerts, want the legacy failure's", opsAlerts(out))
	}
}

// An organization's billing audit log keeps its newest MaxBillingAudit entries, also across a
// snapshot (the index by organization is rebuilt from the state), and an event that waited
// UnmatchedPaymentRetention for its organization is dropped unapplied.
func TestBillingRetention(t *testing.T) {
	st := supplyplan.NewPlatformState()
	now := time.Unix(1_700_000_000, 0).UTC()
	var orgs []string
	for _, name := range []string{"acme", "other"} {
		org, recs, _ := st.CreateOrg(supplyplan.OrganizationInput{Name: strp(name), Slug: strp(name)}, now)
		for _, r := range recs {
			if err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
		orgs = append(orgs, org.ID)
	}
	apply := func(body []byte) supplyplan.PaymentResult { r, _ := paymentApplier(t, st, &now)(body); return r } // st is replaced below
	update := func(org string, i int) {
		t.Helper()
		if r := apply(payEvent(fmt.Sprintf("evt_%s_%d", org, i), supplyplan.PaySubscriptionUpdated, int64(1000+i),
			subObj(org, "cus_"+org, "price_growth_monthly", "active"))); r.Status != "applied" {
			t.Fatalf("event %d: %+v", i, r)
		}
	}
	audit := func(org string) []supplyplan.BillingAuditEntry {
		v, err := st.BillingOf(org)
		if err != nil {
			t.Fatal(err)
		}
		return v.AuditLog
	}
	update(orgs[1], 0)
	for i := range supplyplan.MaxBillingAudit - 2 {
		update(orgs[0], i)
	}
	// A snapshot: the state goes through JSON and the index is built again from its entries.
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	st = supplyplan.NewPlatformState()
	if err := json.Unmarshal(b, st); err != nil {
		t.Fatal(err)
	}
	for i := supplyplan.MaxBillingAudit - 2; i < supplyplan.MaxBillingAudit+5; i++ {
		update(orgs[0], i)
	}
	log := audit(orgs[0])
	if len(log) != supplyplan.MaxBillingAudit {
		t.Fatalf("%d audit entries, want %d", len(log), supplyplan.MaxBillingAudit)
	}
	if newest, oldest := log[0].EventID, log[len(log)-1].EventID; newest != fmt.Sprintf("evt_%s_%d", orgs[0], supplyplan.MaxBillingAudit+4) ||
		oldest != fmt.Sprintf("evt_%s_5", orgs[0]) {
		t.Fatalf("audit log from %s to %s", oldest, newest)
	}
	if len(audit(orgs[1])) != 1 {
		t.Fatalf("the other organization's log: %d entries", len(audit(orgs[1])))
	}

	// An invoice for a customer nobody knows waits; past the retention it is dropped.
	if r := apply(payEvent("evt_early", supplyplan.PayInvoiceFailed, 5000, map[string]any{"id": "in_9", "customer": "cus_late", "amount_due": 100, "currency": "usd"})); r.Status != "unmatched" {
		t.Fatalf("early invoice: %+v", r)
	}
	now = now.Add(supplyplan.UnmatchedPaymentRetention + time.Hour)
	if r := apply(payEvent("evt_other", supplyplan.PayInvoicePaid, 5001, map[string]any{"id": "in_8", "customer": "cus_nobody", "amount_paid": 100, "currency": "usd"})); r.Status != "unmatched" {
		t.Fatalf("another unmatched invoice: %+v", r)
	}
	if _, ok := st.Unmatched["evt_early"]; ok || len(st.Unmatched) != 1 {
		t.Fatalf("unmatched after the retention: %d, evt_early kept %v", len(st.Unmatched), ok)
	}
	late, recs, _ := st.CreateOrg(supplyplan.OrganizationInput{Name: strp("late"), Slug: strp("late")}, now)
	for _, r := range recs {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	apply(payEvent("evt_sub", supplyplan.PaySubscriptionCreated, 6000, subObj(late.ID, "cus_late", "price_growth_monthly", "active")))
	if b := st.Billing[late.ID]; b.FailedPayments != 0 {
		t.Fatalf("the expired failure applied: %+v", b)
	}
}
