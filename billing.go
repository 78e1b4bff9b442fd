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
	"sync"
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
	// RateLimits override the --rate-limit-* defaults for the plan's organizations (ratelimit.go).
	RateLimits *RateLimits `json:"rateLimits,omitempty"`
	// LoopTransitionsMonthly is the plan's monthly commitment of loop transitions (0: none):
	// loop_commitment.threshold_reached fires at 80 % and 100 % of it (loop_commitment.go).
	LoopTransitionsMonthly int64 `json:"loopTransitionsMonthly,omitempty"`
}

// LoopCommitment is the monthly commitment of loop transitions of an organization on plan.
func (c PlansConfig) LoopCommitment(plan string) int64 {
	if p, ok := c.Plans[plan]; ok && p.LoopTransitionsMonthly > 0 {
		return p.LoopTransitionsMonthly
	}
	return 0
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
		if p.RateLimits != nil {
			p.RateLimits.validate(fe, "rateLimits.")
		}
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

// PaymentEvent is a payment-provider event in the terms of the billing rules. The provider's
// wire format is read at the edge (stripe/ParseEvent) into this shape; it is also how an event
// waiting for its organization is journaled (UnmatchedPayment).
type PaymentEvent struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	Created time.Time `json:"created"` // the provider's creation time, whole seconds
	// OrganizationIDs are the organization ids the event's metadata names, the object's first,
	// then its subscription's.
	OrganizationIDs []string `json:"organizationIds,omitempty"`
	CustomerID      string   `json:"customerId,omitempty"`
	// ObjectID is the subscription's id (subscription events) or the invoice's (invoice events).
	ObjectID string `json:"objectId,omitempty"`
	// Subscription events: the subscription's status, the end of its current period and what may
	// name its plan (plan names or PlanSpec.Match entries), most specific first.
	Status           string     `json:"status,omitempty"`
	CurrentPeriodEnd *time.Time `json:"currentPeriodEnd,omitempty"`
	PlanRefs         []string   `json:"planRefs,omitempty"`
	// Invoice events: amounts in minor units.
	AmountPaid int64  `json:"amountPaid,omitempty"`
	AmountDue  int64  `json:"amountDue,omitempty"`
	Currency   string `json:"currency,omitempty"`
}

// PaymentParser reads a provider event body into a PaymentEvent.
type PaymentParser func(body []byte) (PaymentEvent, error)

var paymentParser struct {
	sync.RWMutex
	parse PaymentParser
}

// RegisterPaymentParser declares the provider adapter's parser (stripe/ registers its ParseEvent
// in an init function, as image formats register with the image package). It reads the unmatched
// payments that journals and snapshots of earlier versions stored as the provider's event body.
func RegisterPaymentParser(p PaymentParser) {
	paymentParser.Lock()
	defer paymentParser.Unlock()
	paymentParser.parse = p
}

func parseLegacyPayment(body []byte) (PaymentEvent, error) {
	paymentParser.RLock()
	parse := paymentParser.parse
	paymentParser.RUnlock()
	if parse == nil {
		return PaymentEvent{}, fmt.Errorf("no payment parser registered")
	}
	return parse(body)
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
	CustomerID string `json:"customerId"`
	// Payment is the event; nil when an entry of an earlier version could not be read (it is then
	// dropped, unapplied, when its customer is known).
	Payment    *PaymentEvent `json:"payment,omitempty"`
	ReceivedAt time.Time     `json:"receivedAt"`
}

// UnmarshalJSON decodes an entry; one written by an earlier version holds the provider's event
// body in "event" instead of "payment", read with the registered PaymentParser.
func (u *UnmatchedPayment) UnmarshalJSON(b []byte) error {
	type plain UnmatchedPayment
	var p struct {
		plain
		Event json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*u = UnmatchedPayment(p.plain)
	if u.Payment == nil && len(p.Event) > 0 {
		if ev, err := parseLegacyPayment(p.Event); err == nil {
			u.Payment = &ev
		}
	}
	return nil
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

	// auditByOrg lists each organization's audit entry ids, oldest first: what the cap of
	// MaxBillingAudit entries per organization is kept with. Built on first use (a snapshot fills
	// BillingAudit without Apply), then kept by Apply.
	auditByOrg map[string][]string
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
		return true, b.applyAudit(r)
	case KindPaymentEventSeen:
		return true, putValue(b.PaymentEvents, r)
	case KindPaymentUnmatched:
		return true, putValue(b.Unmatched, r)
	case KindPendingEvent:
		return true, b.OutboxState.Apply(r)
	}
	return false, nil
}

// applyAudit applies a billing audit record and keeps the index by organization.
func (b *BillingState) applyAudit(r Record) error {
	old, existed := b.BillingAudit[r.ID]
	if err := putValue(b.BillingAudit, r); err != nil {
		return err
	}
	if b.auditByOrg == nil {
		return nil // built from the map when first needed
	}
	if existed {
		ids := b.auditByOrg[old.OrganizationID]
		if i, ok := slices.BinarySearch(ids, r.ID); ok {
			ids = slices.Delete(ids, i, i+1)
		}
		if len(ids) == 0 {
			delete(b.auditByOrg, old.OrganizationID)
		} else {
			b.auditByOrg[old.OrganizationID] = ids
		}
	}
	if !r.Del {
		org := b.BillingAudit[r.ID].OrganizationID
		ids := b.auditByOrg[org]
		if i, found := slices.BinarySearch(ids, r.ID); !found {
			b.auditByOrg[org] = slices.Insert(ids, i, r.ID) // ids grow with time: i is the end
		}
	}
	return nil
}

// auditIndex returns auditByOrg, built from BillingAudit the first time.
func (b *BillingState) auditIndex() map[string][]string {
	if b.auditByOrg == nil {
		b.auditByOrg = map[string][]string{}
		for id, e := range b.BillingAudit {
			b.auditByOrg[e.OrganizationID] = append(b.auditByOrg[e.OrganizationID], id)
		}
		for _, ids := range b.auditByOrg {
			slices.Sort(ids)
		}
	}
	return b.auditByOrg
}

// auditOverflow returns the deletions that keep each organization's audit log at MaxBillingAudit
// entries once recs (which add entries) are applied: its oldest entries go.
func (b *BillingState) auditOverflow(recs []Record) []Record {
	var added map[string]int
	for _, r := range recs {
		if e, ok := r.Value.(*BillingAuditEntry); ok && r.Kind == KindBillingAudit && !r.Del {
			if added == nil {
				added = map[string]int{}
			}
			added[e.OrganizationID]++
		}
	}
	var dels []Record
	for org, n := range added {
		ids := b.auditIndex()[org]
		for i := 0; i < len(ids)+n-MaxBillingAudit && i < len(ids); i++ {
			dels = append(dels, Del(KindBillingAudit, ids[i]))
		}
	}
	return dels
}

// PaymentEventRetention is how long applied event ids are remembered (the provider retries for
// up to three days).
const PaymentEventRetention = 35 * 24 * time.Hour

// MaxBillingAudit is how many billing audit entries an organization keeps: the newest (a handful
// of events a month per organization: the log covers years, and no longer grows with every
// event).
const MaxBillingAudit = 1000

// UnmatchedPaymentRetention is how long an event naming no known organization waits for a
// subscription event that ties its customer to one; older, it is dropped unapplied.
const UnmatchedPaymentRetention = 90 * 24 * time.Hour

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
func (s *PlatformState) ApplyPaymentEvent(ev PaymentEvent, plans PlansConfig, now time.Time) (PaymentResult, []Record, error) {
	s.initBilling()
	if _, seen := s.PaymentEvents[ev.ID]; seen {
		return PaymentResult{Status: "duplicate", Message: "event already applied"}, nil, nil
	}
	if _, seen := s.Unmatched[ev.ID]; seen {
		return PaymentResult{Status: "unmatched", Message: "event already received; waiting for its organization"}, nil, nil
	}
	var recs, expired []Record
	seenAt := now
	recs = append(recs, Put(KindPaymentEventSeen, ev.ID, &seenAt))
	for id, at := range s.PaymentEvents { // forget ids past the retention
		if at != nil && now.Sub(*at) > PaymentEventRetention {
			recs = append(recs, Del(KindPaymentEventSeen, id))
		}
	}
	for id, u := range s.Unmatched { // and events that waited too long for their organization
		if unmatchedExpired(u, now) {
			expired = append(expired, Del(KindPaymentUnmatched, id))
		}
	}
	recs = append(recs, expired...)
	switch ev.Type {
	case PaySubscriptionCreated, PaySubscriptionUpdated, PaySubscriptionDeleted, PayInvoicePaid, PayInvoiceFailed:
	default:
		return PaymentResult{Status: "ignored", Message: "event type not handled"}, recs, nil
	}
	orgID := s.matchOrg(ev)
	if orgID == "" {
		cust := ev.CustomerID
		if cust == "" {
			return PaymentResult{Status: "ignored", Message: "no organization matches (no metadata.organizationId, no customer)"}, recs, nil
		}
		u := UnmatchedPayment{CustomerID: cust, Payment: &ev, ReceivedAt: now}
		return PaymentResult{Status: "unmatched", Message: "no organization matches yet; kept until customer " + cust + " is known"},
			append(expired, Put(KindPaymentUnmatched, ev.ID, &u)), nil
	}
	st := &paymentTx{s: s, plans: plans, now: now, billing: map[string]*BillingRecord{}, orgs: map[string]*Organization{}}
	res := st.apply(ev, orgID)
	recs = append(recs, st.recs...)
	// Events that were waiting for this customer apply now, oldest first.
	if b := st.record(orgID); b.CustomerID != "" {
		type waitingEvent struct {
			id string
			ev *PaymentEvent // nil: an entry of an earlier version that could not be read
		}
		var waiting []waitingEvent
		for id, u := range s.Unmatched {
			if u.CustomerID == b.CustomerID && !unmatchedExpired(u, now) {
				waiting = append(waiting, waitingEvent{id, u.Payment})
			}
		}
		created := func(w waitingEvent) time.Time {
			if w.ev == nil {
				return time.Time{}
			}
			return w.ev.Created
		}
		slices.SortFunc(waiting, func(a, b waitingEvent) int { return created(a).Compare(created(b)) })
		for _, w := range waiting {
			st.recs = nil
			if w.ev != nil {
				st.apply(*w.ev, orgID)
			}
			at := now
			recs = append(recs, st.recs...)
			recs = append(recs, Del(KindPaymentUnmatched, w.id), Put(KindPaymentEventSeen, w.id, &at))
		}
	}
	for id, b := range st.billing {
		recs = append(recs, Put(KindBilling, id, b))
	}
	for id, o := range st.orgs {
		recs = append(recs, Put(KindOrganization, id, o))
	}
	return res, append(recs, s.auditOverflow(recs)...), nil
}

// unmatchedExpired reports whether an unmatched event waited past UnmatchedPaymentRetention.
func unmatchedExpired(u *UnmatchedPayment, now time.Time) bool {
	return now.Sub(u.ReceivedAt) > UnmatchedPaymentRetention
}

func (s *PlatformState) matchOrg(ev PaymentEvent) string {
	for _, id := range ev.OrganizationIDs {
		if _, ok := s.Orgs[id]; ok {
			return id
		}
	}
	if cust := ev.CustomerID; cust != "" {
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
		EventCreated: ev.Created, ReceivedAt: t.now, Action: action, Message: msg}
	if mod != nil {
		mod(&e)
	}
	t.recs = append(t.recs, Put(KindBillingAudit, e.ID, &e))
}

func (t *paymentTx) emit(orgID, typ string, data any) {
	e := DomainEvent{ID: NewID("evt"), Type: typ, OrganizationID: orgID, Timestamp: t.now, Data: data}
	t.recs = append(t.recs, Put(KindPendingEvent, e.ID, &e))
}

func (t *paymentTx) apply(ev PaymentEvent, orgID string) PaymentResult {
	b := t.record(orgID)
	created := ev.Created
	if cust := ev.CustomerID; cust != "" && b.CustomerID == "" {
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
		if ev.ObjectID != "" {
			b.SubscriptionID = ev.ObjectID
		}
		b.Status = ev.Status
		if ev.Type == PaySubscriptionDeleted && b.Status == "" {
			b.Status = "canceled"
		}
		if ev.CurrentPeriodEnd != nil {
			pe := *ev.CurrentPeriodEnd
			b.CurrentPeriodEnd = &pe
		}
		o := t.org(orgID)
		before := fmt.Sprint(o.Plan, o.Entitlements, o.Capabilities)
		planName, spec, ok := "", PlanSpec{}, false
		if ev.Type == PaySubscriptionDeleted || ended(b.Status) {
			planName, spec, ok = t.plans.DowngradePlan, t.plans.Plans[t.plans.DowngradePlan], true
		} else {
			planName, spec, ok = t.plans.Resolve(ev.PlanRefs)
		}
		if !ok {
			t.audit(orgID, ev, "unknown_plan", fmt.Sprintf("no configured plan matches %v; entitlements unchanged", ev.PlanRefs), nil)
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
		return t.applyInvoice(ev, orgID, b, created)
	}
	return res
}

// applyInvoice applies invoice.paid and invoice.payment_failed so that the record ends the same
// whatever order the events arrive in: a payment supersedes every failure created at or before
// it; a failure that a known payment already superseded changes nothing but the newest failure
// time, is logged as ignored_older and raises no operations alert.
func (t *paymentTx) applyInvoice(ev PaymentEvent, orgID string, b *BillingRecord, created time.Time) PaymentResult {
	b.upgradeFailures()
	defer b.settleInvoices()
	if created.After(b.InvoiceEventAt) {
		b.InvoiceEventAt = created
	}
	res := PaymentResult{Status: "applied", OrganizationID: orgID}
	if ev.Type == PayInvoicePaid {
		amt := ev.AmountPaid
		withAmount := func(e *BillingAuditEntry) { e.Amount, e.Curr = &amt, ev.Currency }
		if b.LastPaymentAt != nil && created.Before(*b.LastPaymentAt) {
			t.audit(orgID, ev, "ignored_older", fmt.Sprintf("invoice %s paid; older than the payment already applied (event %s of %s)",
				ev.ObjectID, b.LastPaymentEventID, b.LastPaymentAt.Format(time.RFC3339)), withAmount)
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
		t.audit(orgID, ev, "payment_confirmed", "invoice "+ev.ObjectID+" paid", withAmount)
		return res
	}
	amt := ev.AmountDue
	withAmount := func(e *BillingAuditEntry) { e.Amount, e.Curr = &amt, ev.Currency }
	b.LastPaymentFailedAt = later(b.LastPaymentFailedAt, created)
	if b.LastPaymentAt != nil && !created.After(*b.LastPaymentAt) {
		t.audit(orgID, ev, "ignored_older", fmt.Sprintf("invoice %s payment failed; superseded by the payment already applied (event %s of %s): no operations alert",
			ev.ObjectID, b.LastPaymentEventID, b.LastPaymentAt.Format(time.RFC3339)), withAmount)
		return PaymentResult{Status: "ignored_older", OrganizationID: orgID, Message: "superseded by a newer payment; no operations alert"}
	}
	i, _ := slices.BinarySearchFunc(b.UnpaidFailures, created, func(a, b time.Time) int { return a.Compare(b) })
	b.UnpaidFailures = slices.Insert(slices.Clone(b.UnpaidFailures), i, created)
	if n := len(b.UnpaidFailures); n > MaxUnpaidFailures {
		b.UnpaidFailures = b.UnpaidFailures[n-MaxUnpaidFailures:]
	}
	failed := len(b.UnpaidFailures)
	msg := fmt.Sprintf("Payment failed for organization %s: invoice %s, %d %s due", orgID, ev.ObjectID, amt, strings.ToUpper(ev.Currency))
	t.audit(orgID, ev, "payment_failed", "invoice "+ev.ObjectID+" payment failed", withAmount)
	t.audit(orgID, ev, "ops_alert", msg, nil)
	t.emit(PlatformOwner, OpsPaymentFailed, map[string]any{"organizationId": orgID, "invoiceId": ev.ObjectID,
		"amountDue": amt, "currency": ev.Currency, "failedPayments": failed, "text": msg})
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

// BillingView is an organization's billing record and audit log (platform endpoint).
type BillingView struct {
	Organization Organization        `json:"organization"`
	Billing      *BillingRecord      `json:"billing"`
	AuditLog     []BillingAuditEntry `json:"auditLog"`
	// LoopUsage is the current month's loop transitions against the plan's commitment.
	LoopUsage *LoopUsageView `json:"loopUsage,omitempty"`
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
	HandlePaymentEvent(ctx context.Context, ev PaymentEvent) (PaymentResult, error)
	GetBilling(ctx context.Context, orgID string) (BillingView, error)
}
