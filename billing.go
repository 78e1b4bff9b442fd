package supplyplan

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Record kinds of billing state (platform journal).
const (
	KindBilling          = "billing"
	KindBillingAudit     = "billingaudit"
	KindPaymentEventSeen = "paymentevent"
	KindPaymentUnmatched = "paymentunmatched"
)

func init() {
	RegisterKind(KindBilling, func() any { return new(BillingRecord) })
	RegisterKind(KindBillingAudit, func() any { return new(BillingAuditEntry) })
	RegisterKind(KindPaymentEventSeen, func() any { return new(time.Time) })
	RegisterKind(KindPaymentUnmatched, func() any { return new(UnmatchedPayment) })
}

// Payment-provider event types the service acts on.
const (
	PaySubscriptionCreated = "customer.subscription.created"
	PaySubscriptionUpdated = "customer.subscription.updated"
	PaySubscriptionDeleted = "customer.subscription.deleted"
	PayInvoicePaid         = "invoice.paid"
	PayInvoiceFailed       = "invoice.payment_failed"
)

// OpsPaymentFailed is the type of the operations alert raised by invoice.payment_failed.
const OpsPaymentFailed = "ops.payment_failed"

// PlanSpec is what a plan grants.
type PlanSpec struct {
	Entitlements []string `json:"entitlements"`
	Capabilities []string `json:"capabilities"`
	// Match lists provider price ids, price lookup keys, product ids or plan ids that mean this
	// plan (the plan's own name always matches).
	Match []string `json:"match,omitempty"`
}

// PlansConfig maps provider plans to entitlements and capabilities (--plans-file).
type PlansConfig struct {
	// DowngradePlan is applied when a subscription is deleted or ends (canceled, unpaid,
	// incomplete_expired).
	DowngradePlan string              `json:"downgradePlan"`
	Plans         map[string]PlanSpec `json:"plans"`
}

//go:embed plans.json
var defaultPlansJSON []byte

// DefaultPlans returns the embedded plan configuration (plans.json).
func DefaultPlans() PlansConfig {
	c, err := ParsePlans(defaultPlansJSON)
	if err != nil {
		panic(err)
	}
	return c
}

// ParsePlans reads and checks a plans file.
func ParsePlans(b []byte) (PlansConfig, error) {
	var c PlansConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("plans: %w", err)
	}
	if _, ok := c.Plans[c.DowngradePlan]; !ok {
		return c, fmt.Errorf("plans: downgradePlan %q is not a plan", c.DowngradePlan)
	}
	for name, p := range c.Plans {
		fe := FieldErrors{}
		validateNames(fe, "entitlements", p.Entitlements)
		validateNames(fe, "capabilities", p.Capabilities)
		if err := fe.Err(); err != nil {
			return c, fmt.Errorf("plans: plan %s: %w", name, err)
		}
	}
	return c, nil
}

// Resolve finds the plan named by any of refs (plan names first, then Match entries).
func (c PlansConfig) Resolve(refs []string) (string, PlanSpec, bool) {
	for _, r := range refs {
		if p, ok := c.Plans[r]; ok && r != "" {
			return r, p, true
		}
	}
	names := make([]string, 0, len(c.Plans))
	for n := range c.Plans {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, r := range refs {
		for _, n := range names {
			if r != "" && slices.Contains(c.Plans[n].Match, r) {
				return n, c.Plans[n], true
			}
		}
	}
	return "", PlanSpec{}, false
}

// PaymentEvent is a Stripe-shaped provider event.
type PaymentEvent struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Created int64  `json:"created"`
	Data    struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

// paymentObject holds the fields of subscription and invoice objects the service reads.
type paymentObject struct {
	ID                  string            `json:"id"`
	Object              string            `json:"object"`
	Customer            json.RawMessage   `json:"customer"`
	Status              string            `json:"status"`
	Metadata            map[string]string `json:"metadata"`
	CurrentPeriodEnd    int64             `json:"current_period_end"`
	Subscription        json.RawMessage   `json:"subscription"`
	SubscriptionDetails struct {
		Metadata map[string]string `json:"metadata"`
	} `json:"subscription_details"`
	Items struct {
		Data []struct {
			Price struct {
				ID        string `json:"id"`
				LookupKey string `json:"lookup_key"`
				Product   string `json:"product"`
			} `json:"price"`
			Plan struct {
				ID      string `json:"id"`
				Product string `json:"product"`
			} `json:"plan"`
		} `json:"data"`
	} `json:"items"`
	Plan *struct {
		ID string `json:"id"`
	} `json:"plan"`
	AmountPaid int64  `json:"amount_paid"`
	AmountDue  int64  `json:"amount_due"`
	Currency   string `json:"currency"`
}

// idOf reads a field that is either an id string or an expanded object with an id.
func idOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.ID
}

// ParsePaymentEvent decodes and checks an event body.
func ParsePaymentEvent(body []byte) (PaymentEvent, error) {
	var ev PaymentEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, Invalid("body", "must be a JSON event object")
	}
	fe := FieldErrors{}
	if ev.ID == "" {
		fe.Add("id", "is required")
	}
	if ev.Type == "" {
		fe.Add("type", "is required")
	}
	if ev.Created <= 0 {
		fe.Add("created", "is required (unix seconds)")
	}
	if len(ev.Data.Object) == 0 || ev.Data.Object[0] != '{' {
		fe.Add("data.object", "is required (an object)")
	}
	return ev, fe.Err()
}

// BillingRecord is an organization's subscription as the provider last told it.
type BillingRecord struct {
	OrganizationID   string     `json:"organizationId"`
	CustomerID       string     `json:"customerId,omitempty"`
	SubscriptionID   string     `json:"subscriptionId,omitempty"`
	Plan             string     `json:"plan,omitempty"`
	Status           string     `json:"status,omitempty"`        // provider subscription status
	PaymentStatus    string     `json:"paymentStatus,omitempty"` // paid | failed
	CurrentPeriodEnd *time.Time `json:"currentPeriodEnd,omitempty"`
	// SubscriptionEventAt (the newest applied subscription event's created) and its rank order
	// subscription events: an older event never overwrites newer state.
	SubscriptionEventAt   time.Time `json:"subscriptionEventAt"`
	SubscriptionEventID   string    `json:"subscriptionEventId,omitempty"`
	SubscriptionEventRank int       `json:"subscriptionEventRank,omitempty"`
	// Invoice events are ordered the same way, by their created time: InvoiceEventAt is the newest
	// seen, LastPaymentAt (and LastPaymentEventID) the newest invoice.paid, LastPaymentFailedAt the
	// newest invoice.payment_failed. UnpaidFailures holds the created times of the failures newer
	// than the newest payment (sorted, at most MaxUnpaidFailures): a payment at or after a failure
	// supersedes it, whichever arrives first. FailedPayments is their number and PaymentStatus
	// follows from them (failed while there is one, else paid once a payment is known).
	InvoiceEventAt      time.Time   `json:"invoiceEventAt"`
	LastPaymentAt       *time.Time  `json:"lastPaymentAt,omitempty"`
	LastPaymentEventID  string      `json:"lastPaymentEventId,omitempty"`
	LastPaymentFailedAt *time.Time  `json:"lastPaymentFailedAt,omitempty"`
	UnpaidFailures      []time.Time `json:"unpaidFailuresAt,omitempty"`
	FailedPayments      int         `json:"failedPayments"`
	CreatedAt           time.Time   `json:"createdAt"`
	UpdatedAt           time.Time   `json:"updatedAt"`
}

// MaxUnpaidFailures bounds the payment failures a billing record remembers since its newest
// payment (the provider retries an invoice a handful of times).
const MaxUnpaidFailures = 100

// BillingAuditEntry is one line of an organization's billing audit log.
type BillingAuditEntry struct {
	ID             string    `json:"id"`
	OrganizationID string    `json:"organizationId"`
	EventID        string    `json:"eventId"`
	EventType      string    `json:"eventType"`
	EventCreated   time.Time `json:"eventCreated"`
	ReceivedAt     time.Time `json:"receivedAt"`
	// Action is applied, ignored_older, unknown_plan, payment_confirmed, payment_failed or
	// ops_alert.
	Action  string `json:"action"`
	Message string `json:"message"`
	Plan    string `json:"plan,omitempty"`
	Amount  *int64 `json:"amount,omitempty"` // minor units
	Curr    string `json:"currency,omitempty"`
}

// UnmatchedPayment is an event that named no known organization yet; it is applied when a
// subscription event later ties its customer id to an organization.
type UnmatchedPayment struct {
	CustomerID string          `json:"customerId"`
	Event      json.RawMessage `json:"event"`
	ReceivedAt time.Time       `json:"receivedAt"`
}

// BillingState is the billing part of the platform state.
type BillingState struct {
	Billing       map[string]*BillingRecord     `json:"billing,omitempty"`
	BillingAudit  map[string]*BillingAuditEntry `json:"billingAudit,omitempty"`
	PaymentEvents map[string]*time.Time         `json:"paymentEvents,omitempty"`
	Unmatched     map[string]*UnmatchedPayment  `json:"unmatchedPayments,omitempty"`
	// OutboxState holds the platform's pending domain events (subscription.updated,
	// ops.payment_failed).
	OutboxState
}

func (b *BillingState) initBilling() {
	if b.Billing == nil {
		b.Billing = map[string]*BillingRecord{}
	}
	if b.BillingAudit == nil {
		b.BillingAudit = map[string]*BillingAuditEntry{}
	}
	if b.PaymentEvents == nil {
		b.PaymentEvents = map[string]*time.Time{}
	}
	if b.Unmatched == nil {
		b.Unmatched = map[string]*UnmatchedPayment{}
	}
	b.OutboxState.init()
}

// applyBilling applies the billing record kinds; handled is false for any other kind.
func (b *BillingState) applyBilling(r Record) (bool, error) {
	b.initBilling()
	switch r.Kind {
	case KindBilling:
		return true, putValue(b.Billing, r)
	case KindBillingAudit:
		return true, putValue(b.BillingAudit, r)
	case KindPaymentEventSeen:
		return true, putValue(b.PaymentEvents, r)
	case KindPaymentUnmatched:
		return true, putValue(b.Unmatched, r)
	case KindPendingEvent:
		return true, b.OutboxState.Apply(r)
	}
	return false, nil
}

// PaymentEventRetention is how long applied event ids are remembered (the provider retries for
// up to three days).
const PaymentEventRetention = 35 * 24 * time.Hour

// PaymentResult says what an inbound event did.
type PaymentResult struct {
	Status         string `json:"status"` // applied, duplicate, ignored, ignored_older, unmatched
	OrganizationID string `json:"organizationId,omitempty"`
	Message        string `json:"message,omitempty"`
	// OpsAlert is the text of the operations alert raised (invoice.payment_failed).
	OpsAlert string `json:"-"`
}

func subscriptionRank(t string) int {
	if t == PaySubscriptionDeleted {
		return 2
	}
	return 1
}

// ended reports whether a subscription status means the plan no longer applies.
func ended(status string) bool {
	switch status {
	case "canceled", "unpaid", "incomplete_expired":
		return true
	}
	return false
}

// ApplyPaymentEvent applies one verified provider event and returns its records. Every event id
// applies once; subscription events older than the state they would replace are logged and
// ignored; events naming no known organization are kept until a later subscription event
// reveals their customer.
func (s *PlatformState) ApplyPaymentEvent(ev PaymentEvent, raw []byte, plans PlansConfig, now time.Time) (PaymentResult, []Record, error) {
	s.initBilling()
	if _, seen := s.PaymentEvents[ev.ID]; seen {
		return PaymentResult{Status: "duplicate", Message: "event already applied"}, nil, nil
	}
	if _, seen := s.Unmatched[ev.ID]; seen {
		return PaymentResult{Status: "unmatched", Message: "event already received; waiting for its organization"}, nil, nil
	}
	var obj paymentObject
	if err := json.Unmarshal(ev.Data.Object, &obj); err != nil {
		return PaymentResult{}, nil, Invalid("data.object", "is not a subscription or invoice object")
	}
	var recs []Record
	seenAt := now
	recs = append(recs, Put(KindPaymentEventSeen, ev.ID, &seenAt))
	for id, at := range s.PaymentEvents { // forget ids past the retention
		if at != nil && now.Sub(*at) > PaymentEventRetention {
			recs = append(recs, Del(KindPaymentEventSeen, id))
		}
	}
	switch ev.Type {
	case PaySubscriptionCreated, PaySubscriptionUpdated, PaySubscriptionDeleted, PayInvoicePaid, PayInvoiceFailed:
	default:
		return PaymentResult{Status: "ignored", Message: "event type not handled"}, recs, nil
	}
	orgID := s.matchOrg(obj)
	if orgID == "" {
		cust := idOf(obj.Customer)
		if cust == "" {
			return PaymentResult{Status: "ignored", Message: "no organization matches (no metadata.organizationId, no customer)"}, recs, nil
		}
		u := UnmatchedPayment{CustomerID: cust, Event: json.RawMessage(slices.Clone(raw)), ReceivedAt: now}
		return PaymentResult{Status: "unmatched", Message: "no organization matches yet; kept until customer " + cust + " is known"},
			[]Record{Put(KindPaymentUnmatched, ev.ID, &u)}, nil
	}
	st := &paymentTx{s: s, plans: plans, now: now, billing: map[string]*BillingRecord{}, orgs: map[string]*Organization{}}
	res := st.apply(ev, obj, orgID)
	recs = append(recs, st.recs...)
	// Events that were waiting for this customer apply now, oldest first.
	if b := st.record(orgID); b.CustomerID != "" {
		var waiting []PaymentEvent
		raws := map[string]bool{}
		for id, u := range s.Unmatched {
			if u.CustomerID != b.CustomerID || raws[id] {
				continue
			}
			var w PaymentEvent
			if json.Unmarshal(u.Event, &w) == nil {
				waiting = append(waiting, w)
			}
			raws[id] = true
		}
		slices.SortFunc(waiting, func(a, b PaymentEvent) int { return cmp.Compare(a.Created, b.Created) })
		for _, w := range waiting {
			var wo paymentObject
			st.recs = nil
			if json.Unmarshal(w.Data.Object, &wo) == nil {
				st.apply(w, wo, orgID)
			}
			at := now
			recs = append(recs, st.recs...)
			recs = append(recs, Del(KindPaymentUnmatched, w.ID), Put(KindPaymentEventSeen, w.ID, &at))
		}
	}
	for id, b := range st.billing {
		recs = append(recs, Put(KindBilling, id, b))
	}
	for id, o := range st.orgs {
		recs = append(recs, Put(KindOrganization, id, o))
	}
	return res, recs, nil
}

func (s *PlatformState) matchOrg(obj paymentObject) string {
	for _, md := range []map[string]string{obj.Metadata, obj.SubscriptionDetails.Metadata} {
		if id := md["organizationId"]; id != "" {
			if _, ok := s.Orgs[id]; ok {
				return id
			}
		}
	}
	if cust := idOf(obj.Customer); cust != "" {
		for id, b := range s.Billing {
			if b.CustomerID == cust {
				return id
			}
		}
	}
	return ""
}

// paymentTx accumulates the changes of one inbound event (and the waiting events it unlocks).
type paymentTx struct {
	s       *PlatformState
	plans   PlansConfig
	now     time.Time
	billing map[string]*BillingRecord
	orgs    map[string]*Organization
	recs    []Record
}

func (t *paymentTx) record(orgID string) *BillingRecord {
	if b, ok := t.billing[orgID]; ok {
		return b
	}
	b := &BillingRecord{OrganizationID: orgID, CreatedAt: t.now}
	if cur, ok := t.s.Billing[orgID]; ok {
		c := *cur
		b = &c
	}
	t.billing[orgID] = b
	return b
}

func (t *paymentTx) org(orgID string) *Organization {
	if o, ok := t.orgs[orgID]; ok {
		return o
	}
	o := *t.s.Orgs[orgID]
	t.orgs[orgID] = &o
	return &o
}

func (t *paymentTx) audit(orgID string, ev PaymentEvent, action, msg string, mod func(*BillingAuditEntry)) {
	e := BillingAuditEntry{ID: NewID("bau"), OrganizationID: orgID, EventID: ev.ID, EventType: ev.Type,
		EventCreated: time.Unix(ev.Created, 0).UTC(), ReceivedAt: t.now, Action: action, Message: msg}
	if mod != nil {
		mod(&e)
	}
	t.recs = append(t.recs, Put(KindBillingAudit, e.ID, &e))
}

func (t *paymentTx) emit(orgID, typ string, data any) {
	e := DomainEvent{ID: NewID("evt"), Type: typ, OrganizationID: orgID, Timestamp: t.now, Data: data}
	t.recs = append(t.recs, Put(KindPendingEvent, e.ID, &e))
}

func (t *paymentTx) apply(ev PaymentEvent, obj paymentObject, orgID string) PaymentResult {
	b := t.record(orgID)
	created := time.Unix(ev.Created, 0).UTC()
	if cust := idOf(obj.Customer); cust != "" && b.CustomerID == "" {
		b.CustomerID = cust
	}
	b.UpdatedAt = t.now
	res := PaymentResult{Status: "applied", OrganizationID: orgID}
	switch ev.Type {
	case PaySubscriptionCreated, PaySubscriptionUpdated, PaySubscriptionDeleted:
		rank := subscriptionRank(ev.Type)
		if !b.SubscriptionEventAt.IsZero() && (created.Before(b.SubscriptionEventAt) ||
			(created.Equal(b.SubscriptionEventAt) && rank < b.SubscriptionEventRank)) {
			t.audit(orgID, ev, "ignored_older", fmt.Sprintf("older than the applied state (event %s of %s)",
				b.SubscriptionEventID, b.SubscriptionEventAt.Format(time.RFC3339)), nil)
			return PaymentResult{Status: "ignored_older", OrganizationID: orgID, Message: "older than the current subscription state"}
		}
		b.SubscriptionEventAt, b.SubscriptionEventID, b.SubscriptionEventRank = created, ev.ID, rank
		if obj.ID != "" {
			b.SubscriptionID = obj.ID
		}
		b.Status = obj.Status
		if ev.Type == PaySubscriptionDeleted && b.Status == "" {
			b.Status = "canceled"
		}
		if obj.CurrentPeriodEnd > 0 {
			pe := time.Unix(obj.CurrentPeriodEnd, 0).UTC()
			b.CurrentPeriodEnd = &pe
		}
		o := t.org(orgID)
		before := fmt.Sprint(o.Plan, o.Entitlements, o.Capabilities)
		planName, spec, ok := "", PlanSpec{}, false
		if ev.Type == PaySubscriptionDeleted || ended(b.Status) {
			planName, spec, ok = t.plans.DowngradePlan, t.plans.Plans[t.plans.DowngradePlan], true
		} else {
			planName, spec, ok = t.plans.Resolve(obj.planRefs())
		}
		if !ok {
			t.audit(orgID, ev, "unknown_plan", fmt.Sprintf("no configured plan matches %v; entitlements unchanged", obj.planRefs()), nil)
			res.Message = "subscription recorded; no configured plan matches, entitlements unchanged"
		} else {
			b.Plan = planName
			o.Plan, o.Entitlements, o.Capabilities = planName, Dedup(spec.Entitlements), Dedup(spec.Capabilities)
			o.UpdatedAt = t.now
			t.audit(orgID, ev, "applied", fmt.Sprintf("subscription %s: plan %s, status %s", strings.TrimPrefix(ev.Type, "customer.subscription."), planName, b.Status),
				func(e *BillingAuditEntry) { e.Plan = planName })
		}
		if after := fmt.Sprint(o.Plan, o.Entitlements, o.Capabilities); after != before || ev.Type != PaySubscriptionUpdated {
			t.emit(orgID, EventSubscriptionUpdated, map[string]any{"organizationId": orgID, "plan": o.Plan,
				"status": b.Status, "entitlements": o.Entitlements, "capabilities": o.Capabilities,
				"currentPeriodEnd": b.CurrentPeriodEnd, "providerEventId": ev.ID, "providerEventType": ev.Type})
		}
	case PayInvoicePaid, PayInvoiceFailed:
		return t.applyInvoice(ev, obj, orgID, b, created)
	}
	return res
}

// applyInvoice applies invoice.paid and invoice.payment_failed so that the record ends the same
// whatever order the events arrive in: a payment supersedes every failure created at or before
// it; a failure that a known payment already superseded changes nothing but the newest failure
// time, is logged as ignored_older and raises no operations alert.
func (t *paymentTx) applyInvoice(ev PaymentEvent, obj paymentObject, orgID string, b *BillingRecord, created time.Time) PaymentResult {
	b.upgradeFailures()
	defer b.settleInvoices()
	if created.After(b.InvoiceEventAt) {
		b.InvoiceEventAt = created
	}
	res := PaymentResult{Status: "applied", OrganizationID: orgID}
	if ev.Type == PayInvoicePaid {
		amt := obj.AmountPaid
		withAmount := func(e *BillingAuditEntry) { e.Amount, e.Curr = &amt, obj.Currency }
		if b.LastPaymentAt != nil && created.Before(*b.LastPaymentAt) {
			t.audit(orgID, ev, "ignored_older", fmt.Sprintf("invoice %s paid; older than the payment already applied (event %s of %s)",
				obj.ID, b.LastPaymentEventID, b.LastPaymentAt.Format(time.RFC3339)), withAmount)
			return PaymentResult{Status: "ignored_older", OrganizationID: orgID, Message: "older than the newest payment"}
		}
		b.LastPaymentAt, b.LastPaymentEventID = &created, ev.ID
		var kept []time.Time // a new slice: b shares its backing array with the applied state
		for _, f := range b.UnpaidFailures {
			if f.After(created) {
				kept = append(kept, f)
			}
		}
		b.UnpaidFailures = kept
		t.audit(orgID, ev, "payment_confirmed", "invoice "+obj.ID+" paid", withAmount)
		return res
	}
	amt := obj.AmountDue
	withAmount := func(e *BillingAuditEntry) { e.Amount, e.Curr = &amt, obj.Currency }
	b.LastPaymentFailedAt = later(b.LastPaymentFailedAt, created)
	if b.LastPaymentAt != nil && !created.After(*b.LastPaymentAt) {
		t.audit(orgID, ev, "ignored_older", fmt.Sprintf("invoice %s payment failed; superseded by the payment already applied (event %s of %s): no operations alert",
			obj.ID, b.LastPaymentEventID, b.LastPaymentAt.Format(time.RFC3339)), withAmount)
		return PaymentResult{Status: "ignored_older", OrganizationID: orgID, Message: "superseded by a newer payment; no operations alert"}
	}
	i, _ := slices.BinarySearchFunc(b.UnpaidFailures, created, func(a, b time.Time) int { return a.Compare(b) })
	b.UnpaidFailures = slices.Insert(slices.Clone(b.UnpaidFailures), i, created)
	if n := len(b.UnpaidFailures); n > MaxUnpaidFailures {
		b.UnpaidFailures = b.UnpaidFailures[n-MaxUnpaidFailures:]
	}
	failed := len(b.UnpaidFailures)
	msg := fmt.Sprintf("Payment failed for organization %s: invoice %s, %d %s due", orgID, obj.ID, amt, strings.ToUpper(obj.Currency))
	t.audit(orgID, ev, "payment_failed", "invoice "+obj.ID+" payment failed", withAmount)
	t.audit(orgID, ev, "ops_alert", msg, nil)
	t.emit(PlatformOwner, OpsPaymentFailed, map[string]any{"organizationId": orgID, "invoiceId": obj.ID,
		"amountDue": amt, "currency": obj.Currency, "failedPayments": failed, "text": msg})
	res.OpsAlert = msg
	return res
}

// upgradeFailures gives a record written before UnpaidFailures existed one entry per counted
// failure, at the newest failure time known.
func (b *BillingRecord) upgradeFailures() {
	if b.FailedPayments > 0 && len(b.UnpaidFailures) == 0 {
		at := b.InvoiceEventAt
		if b.LastPaymentFailedAt != nil {
			at = *b.LastPaymentFailedAt
		}
		for range min(b.FailedPayments, MaxUnpaidFailures) {
			b.UnpaidFailures = append(b.UnpaidFailures, at)
		}
	}
}

// settleInvoices derives the failure count and the payment status from the invoice state.
func (b *BillingRecord) settleInvoices() {
	b.FailedPayments = len(b.UnpaidFailures)
	switch {
	case b.FailedPayments > 0:
		b.PaymentStatus = "failed"
	case b.LastPaymentAt != nil:
		b.PaymentStatus = "paid"
	}
	if len(b.UnpaidFailures) == 0 {
		b.UnpaidFailures = nil
	}
}

func later(cur *time.Time, t time.Time) *time.Time {
	if cur == nil || t.After(*cur) {
		return &t
	}
	return cur
}

// planRefs lists what may name the plan: metadata.plan, then each item's price lookup key, price
// id, product and plan id, then the legacy plan id.
func (o paymentObject) planRefs() []string {
	var refs []string
	if p := o.Metadata["plan"]; p != "" {
		refs = append(refs, p)
	}
	for _, it := range o.Items.Data {
		refs = append(refs, it.Price.LookupKey, it.Price.ID, it.Price.Product, it.Plan.ID, it.Plan.Product)
	}
	if o.Plan != nil {
		refs = append(refs, o.Plan.ID)
	}
	out := refs[:0]
	for _, r := range refs {
		if r != "" {
			out = append(out, r)
		}
	}
	return out
}

// BillingView is an organization's billing record and audit log (platform endpoint).
type BillingView struct {
	Organization Organization        `json:"organization"`
	Billing      *BillingRecord      `json:"billing"`
	AuditLog     []BillingAuditEntry `json:"auditLog"`
}

// BillingOf returns an organization's billing view, audit log newest first.
func (s *PlatformState) BillingOf(orgID string) (BillingView, error) {
	s.initBilling()
	o, ok := s.Orgs[orgID]
	if !ok {
		return BillingView{}, NotFound("Organization")
	}
	v := BillingView{Organization: *o, AuditLog: []BillingAuditEntry{}}
	if b, ok := s.Billing[orgID]; ok {
		c := *b
		v.Billing = &c
	}
	for _, e := range s.BillingAudit {
		if e.OrganizationID == orgID {
			v.AuditLog = append(v.AuditLog, *e)
		}
	}
	slices.SortFunc(v.AuditLog, func(a, b BillingAuditEntry) int { return cmp.Compare(b.ID, a.ID) })
	return v, nil
}

// BillingService applies payment-provider events and shows billing state.
type BillingService interface {
	// HandlePaymentEvent applies a verified event; it returns once the effect is durable.
	HandlePaymentEvent(ctx context.Context, ev PaymentEvent, raw []byte) (PaymentResult, error)
	GetBilling(ctx context.Context, orgID string) (BillingView, error)
}
