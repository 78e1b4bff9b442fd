package supplyplan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Record kinds of outbound state (one journal stream per owner: "outbound-<orgId>", and
// "outbound-platform").
const (
	KindAlertConfig     = "alertconfig"
	KindAlertHistory    = "alerthistory"
	KindAlertGate       = "alertgate"
	KindWebhookEndpoint = "webhookendpoint"
	KindDelivery        = "delivery"
)

func init() {
	RegisterKind(KindAlertConfig, func() any { return new(AlertConfig) })
	RegisterKind(KindAlertHistory, func() any { return new(Alert) })
	RegisterKind(KindAlertGate, func() any { return new(GateEntry) })
	RegisterKind(KindWebhookEndpoint, func() any { return new(WebhookEndpoint) })
	RegisterKind(KindDelivery, func() any { return new(Delivery) })
}

// Retention of outbound state.
const (
	MaxAlertHistory          = 10000 // newest alerts kept per tenant
	MaxDeliveriesPerEndpoint = 500   // newest finished deliveries kept per endpoint (pending ones always)
	DeliveryRetention        = 30 * 24 * time.Hour
)

// OutboundState is one owner's alerts and webhooks: alert configuration and history, cooldown
// state (embedded mode), webhook endpoints and every delivery with its attempts.
type OutboundState struct {
	OwnerID    string                      `json:"ownerId"`
	Config     *AlertConfig                `json:"config,omitempty"`
	Alerts     map[string]*Alert           `json:"alerts"`
	Gate       map[string]*GateEntry       `json:"gate"`
	Endpoints  map[string]*WebhookEndpoint `json:"endpoints"`
	Deliveries map[string]*Delivery        `json:"deliveries"`

	byEvent map[string]string // eventID \x00 target id -> delivery id (derived)
	// alertOrder is every alert, oldest first; byEndpoint every endpoint delivery per endpoint,
	// oldest first (derived, outbound_index.go).
	alertOrder     []*Alert
	alertsStale    bool
	byEndpoint     map[string][]*Delivery
	staleEndpoints map[string]bool
}

// NewOutboundState returns the empty state of an owner.
func NewOutboundState(owner string) *OutboundState {
	s := &OutboundState{OwnerID: owner}
	s.init()
	return s
}

func (s *OutboundState) init() {
	if s.Alerts == nil {
		s.Alerts = map[string]*Alert{}
	}
	if s.Gate == nil {
		s.Gate = map[string]*GateEntry{}
	}
	if s.Endpoints == nil {
		s.Endpoints = map[string]*WebhookEndpoint{}
	}
	if s.Deliveries == nil {
		s.Deliveries = map[string]*Delivery{}
	}
	s.byEvent = make(map[string]string, len(s.Deliveries))
	for id, d := range s.Deliveries {
		s.byEvent[d.dedupKey()] = id
	}
	s.buildIndexes()
}

// UnmarshalJSON decodes a snapshot and rebuilds the derived index.
func (s *OutboundState) UnmarshalJSON(b []byte) error {
	type plain OutboundState
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = OutboundState(p)
	s.init()
	return nil
}

// Lane names the target a delivery goes to (an endpoint, an alert destination, a fixed URL).
// Deliveries to one target are made one at a time, in the order they were created.
func (d *Delivery) Lane() string {
	switch d.Target {
	case TargetEndpoint:
		return d.Target + "\x00" + d.EndpointID
	case TargetAlert:
		return d.Target + "\x00" + d.DestinationID
	}
	return d.Target + "\x00" + d.URL
}

func (d *Delivery) dedupKey() string {
	return d.EventID + "\x00" + d.Target + "\x00" + d.EndpointID + d.DestinationID + d.AlertID + d.URL
}

// Apply applies one record.
func (s *OutboundState) Apply(r Record) error {
	switch r.Kind {
	case KindAlertConfig:
		if r.Del {
			s.Config = nil
			return nil
		}
		v, ok := r.Value.(*AlertConfig)
		if !ok {
			return fmt.Errorf("alertconfig record has value %T", r.Value)
		}
		s.Config = v
		return nil
	case KindAlertHistory:
		old := s.Alerts[r.ID]
		if err := putValue(s.Alerts, r); err != nil {
			return err
		}
		s.indexAlert(old, s.Alerts[r.ID])
		return nil
	case KindAlertGate:
		return putValue(s.Gate, r)
	case KindWebhookEndpoint:
		return putValue(s.Endpoints, r)
	case KindDelivery:
		old, had := s.Deliveries[r.ID]
		if had {
			delete(s.byEvent, old.dedupKey())
		}
		if err := putValue(s.Deliveries, r); err != nil {
			if had {
				s.byEvent[old.dedupKey()] = r.ID
			}
			return err
		}
		d := s.Deliveries[r.ID]
		if d != nil {
			s.byEvent[d.dedupKey()] = r.ID
		}
		s.indexDelivery(old, d)
		return nil
	}
	return fmt.Errorf("outbound state: unknown record kind %q", r.Kind)
}

// AlertConfig returns the stored configuration or the default one.
func (s *OutboundState) AlertConfig() AlertConfig {
	if s.Config == nil {
		return DefaultAlertConfig()
	}
	return *s.Config
}

// Policies are the retry policies of new deliveries.
type Policies struct {
	Webhook RetryPolicy
	Alert   RetryPolicy
}

func (s *OutboundState) newDelivery(d Delivery, p RetryPolicy, now time.Time) (Delivery, bool) {
	d.EventID = cmp.Or(d.EventID, d.ID)
	if _, dup := s.byEvent[d.dedupKey()]; dup {
		return Delivery{}, false
	}
	d.ID = NewID("dlv")
	d.Status, d.Attempts, d.MaxAttempts, d.CreatedAt = DeliveryPending, []DeliveryAttempt{}, p.MaxAttempts, now
	next := now
	d.NextAttemptAt = &next
	return d, true
}

// AcceptEvent creates the deliveries of a domain event to every enabled endpoint subscribed to
// its type. Accepting the same event again creates nothing new.
func (s *OutboundState) AcceptEvent(e DomainEvent, p Policies, now time.Time) ([]Delivery, []Record, error) {
	if !DeliverableEvent(e.Type) {
		return nil, nil, nil
	}
	var payload json.RawMessage
	var out []Delivery
	var recs []Record
	for _, ep := range s.sortedEndpoints() {
		if !ep.Enabled || !ep.Subscribed(e.Type) {
			continue
		}
		if payload == nil {
			b, err := EncodePayload(e)
			if err != nil {
				return nil, nil, fmt.Errorf("encode %s payload: %w", e.Type, err)
			}
			payload = b
		}
		d, ok := s.newDelivery(Delivery{Target: TargetEndpoint, EndpointID: ep.ID, EventID: e.ID, EventType: e.Type, Payload: payload}, p.Webhook, now)
		if !ok {
			continue
		}
		out = append(out, d)
		recs = append(recs, Put(KindDelivery, d.ID, &d))
	}
	return out, recs, nil
}

// AcceptURLEvent creates one delivery of an event to a fixed URL (federation events, operations
// alerts): target is TargetURL or TargetURLChat.
func (s *OutboundState) AcceptURLEvent(e DomainEvent, target, url string, p RetryPolicy, now time.Time) ([]Delivery, []Record, error) {
	b, err := EncodePayload(e)
	if err != nil {
		return nil, nil, fmt.Errorf("encode %s payload: %w", e.Type, err)
	}
	d, ok := s.newDelivery(Delivery{Target: target, URL: url, EventID: e.ID, EventType: e.Type, Payload: b}, p, now)
	if !ok {
		return nil, nil, nil
	}
	return []Delivery{d}, []Record{Put(KindDelivery, d.ID, &d)}, nil
}

func (s *OutboundState) sortedEndpoints() []*WebhookEndpoint {
	eps := make([]*WebhookEndpoint, 0, len(s.Endpoints))
	for _, e := range s.Endpoints {
		eps = append(eps, e)
	}
	slices.SortFunc(eps, func(a, b *WebhookEndpoint) int { return cmp.Compare(a.ID, b.ID) })
	return eps
}

// NewAlert builds an alert from a fired condition: one result per enabled destination.
func NewAlert(cfg AlertConfig, kind AlertKind, sev Severity, msg, product, location, channel, source string, value *float64, now time.Time) Alert {
	a := Alert{ID: NewID("alr"), Type: kind, Severity: sev, Message: msg, ProductMasterID: product, LocationID: location,
		ChannelID: channel, TriggeredAt: now, Destinations: []DestinationResult{}, Source: source, Value: value}
	for _, d := range cfg.Destinations {
		if d.Enabled {
			a.Destinations = append(a.Destinations, DestinationResult{ID: d.ID, Type: d.Type, Value: d.Value, Name: d.Name, Status: DeliveryPending})
		}
	}
	return a
}

// RecordAlert stores a new alert with its deliveries: one per destination, and an alert.triggered
// event to the subscribed endpoints.
func (s *OutboundState) RecordAlert(a Alert, p Policies, now time.Time) ([]Delivery, []Record, error) {
	ev := DomainEvent{ID: "evt_" + a.ID, Type: EventAlertTriggered, OrganizationID: s.OwnerID, Timestamp: a.TriggeredAt, Data: a}
	payload, err := EncodePayload(ev)
	if err != nil {
		return nil, nil, fmt.Errorf("encode alert payload: %w", err)
	}
	var out []Delivery
	for i, dst := range a.Destinations {
		d, ok := s.newDelivery(Delivery{Target: TargetAlert, AlertID: a.ID, DestinationID: dst.ID, EventID: ev.ID,
			EventType: EventAlertTriggered, Payload: payload}, p.Alert, now)
		if ok {
			a.Destinations[i].DeliveryID = d.ID
			out = append(out, d)
		}
	}
	eds, erecs, err := s.AcceptEvent(ev, p, now)
	if err != nil {
		return nil, nil, err
	}
	recs := []Record{Put(KindAlertHistory, a.ID, &a)}
	for i := range out {
		recs = append(recs, Put(KindDelivery, out[i].ID, &out[i]))
	}
	return append(out, eds...), append(recs, erecs...), nil
}

// Outcome classifies an attempt.
type Outcome struct {
	Success bool
	// Permanent: no further attempt (the target is gone or cannot be reached by design).
	Permanent bool
	// Disable: the target answered 404/410 (alert destinations) or 410 (endpoints, fixed URLs).
	Disable bool
}

// Classify decides what an attempt's result means for a delivery to target.
func Classify(target string, channel DestinationType, r SendResult) Outcome {
	if r.Err == nil && r.StatusCode >= 200 && r.StatusCode < 300 {
		return Outcome{Success: true}
	}
	switch {
	case channel == DestEmail:
		// SMTP 5xx replies are permanent (e.g. 550 no such mailbox); 4xx and network errors retry.
		return Outcome{Permanent: r.StatusCode >= 500 || r.StatusCode == -1}
	case r.StatusCode == 410:
		return Outcome{Permanent: true, Disable: true}
	case r.StatusCode == 404 && target == TargetAlert:
		return Outcome{Permanent: true, Disable: true}
	case r.StatusCode == -1: // refused before sending (e.g. a private address)
		return Outcome{Permanent: true}
	}
	return Outcome{}
}

// AttemptResult is what RecordAttempt changed.
type AttemptResult struct {
	Delivery Delivery
	// Disabled names the endpoint or destination disabled by this attempt.
	Disabled string
}

// RecordAttempt stores one attempt of a delivery: success, a retry time from the policy, or the
// final failure (after MaxAttempts attempts, or when the delivery is older than the policy's
// Window); a target that answered 410 (or 404 for alert destinations) is disabled and says
// why. The alert's destination result follows its delivery.
func (s *OutboundState) RecordAttempt(id string, at DeliveryAttempt, o Outcome, p RetryPolicy, now time.Time) (AttemptResult, []Record, error) {
	cur, ok := s.Deliveries[id]
	if !ok {
		return AttemptResult{}, nil, NotFound("Delivery")
	}
	d := *cur
	d.Attempts = append(slices.Clone(d.Attempts), at)
	var recs []Record
	var res AttemptResult
	switch {
	case o.Success:
		d.Status, d.NextAttemptAt, d.CompletedAt = DeliverySucceeded, nil, &now
	case o.Permanent || len(d.Attempts) >= max(d.MaxAttempts, 1) || now.Sub(d.CreatedAt) >= p.Window(d.MaxAttempts):
		// Out of attempts, or older than its attempts could ever take: it waited behind earlier
		// deliveries to its target (ordered delivery) and gives up after this attempt.
		d.Status, d.NextAttemptAt, d.CompletedAt = DeliveryFailed, nil, &now
	default:
		n := len(d.Attempts) // retries so far + 1
		next := now.Add(p.Delay(n))
		d.Status, d.NextAttemptAt = DeliveryPending, &next
	}
	if o.Disable {
		reason := fmt.Sprintf("Disabled after the target answered %d on %s; enable it again to resume delivery", at.StatusCode, now.Format(time.RFC3339))
		switch d.Target {
		case TargetEndpoint:
			if ep, ok := s.Endpoints[d.EndpointID]; ok && ep.Enabled {
				e := *ep
				e.Enabled, e.DisabledReason, e.DisabledAt, e.UpdatedAt = false, reason, &now, now
				recs = append(recs, Put(KindWebhookEndpoint, e.ID, &e))
				res.Disabled = e.ID
			}
		case TargetAlert:
			cfg := s.AlertConfig()
			dests := slices.Clone(cfg.Destinations)
			for i := range dests {
				if dests[i].ID == d.DestinationID && dests[i].Enabled {
					dests[i].Enabled, dests[i].DisabledReason, dests[i].DisabledAt = false, reason, &now
					cfg.Destinations = dests
					recs = append(recs, Put(KindAlertConfig, "config", &cfg))
					res.Disabled = d.DestinationID
				}
			}
		}
	}
	if d.Target == TargetAlert {
		if a, ok := s.Alerts[d.AlertID]; ok {
			na := *a
			na.Destinations = slices.Clone(a.Destinations)
			for i := range na.Destinations {
				r := &na.Destinations[i]
				if r.ID != d.DestinationID {
					continue
				}
				r.Attempts, r.Status = len(d.Attempts), d.Status
				if at.Success {
					r.Delivered, r.DeliveredAt, r.LastError = true, &at.AttemptedAt, ""
				} else {
					r.LastError = attemptError(at)
				}
			}
			na.Refresh()
			recs = append(recs, Put(KindAlertHistory, na.ID, &na))
		}
	}
	res.Delivery = d
	return res, append([]Record{Put(KindDelivery, d.ID, &d)}, recs...), nil
}

func attemptError(at DeliveryAttempt) string {
	if at.Error != "" {
		return at.Error
	}
	return fmt.Sprintf("HTTP %d", at.StatusCode)
}

// CancelDelivery ends a pending delivery whose target is gone or disabled.
func (s *OutboundState) CancelDelivery(id, reason string, now time.Time) ([]Record, error) {
	_, recs, err := s.RecordAttempt(id, DeliveryAttempt{AttemptedAt: now, Error: reason}, Outcome{Permanent: true}, RetryPolicy{}, now)
	return recs, err
}

// RedeliverNow makes a finished or pending delivery due now again with one more attempt allowed
// (manual redelivery).
func (s *OutboundState) RedeliverNow(id string, now time.Time) (Delivery, []Record, error) {
	cur, ok := s.Deliveries[id]
	if !ok {
		return Delivery{}, nil, NotFound("Delivery")
	}
	d := *cur
	d.Status, d.CompletedAt, d.NextAttemptAt = DeliveryPending, nil, &now
	d.MaxAttempts = max(d.MaxAttempts, len(d.Attempts)+1)
	return d, []Record{Put(KindDelivery, d.ID, &d)}, nil
}

// PendingDeliveries returns every delivery still to attempt.
func (s *OutboundState) PendingDeliveries() []Delivery {
	var out []Delivery
	for _, d := range s.Deliveries {
		if d.Status == DeliveryPending {
			out = append(out, *d)
		}
	}
	return out
}

// Prune returns the records that forget old state: alerts beyond MaxAlertHistory, finished
// deliveries beyond MaxDeliveriesPerEndpoint per endpoint or older than DeliveryRetention (those
// of alerts still kept stay), and expired previous secrets.
func (s *OutboundState) Prune(now time.Time) []Record {
	var recs []Record
	if len(s.Alerts) > MaxAlertHistory {
		ids := make([]string, 0, len(s.Alerts))
		for id := range s.Alerts {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids[:len(ids)-MaxAlertHistory] {
			recs = append(recs, Del(KindAlertHistory, id))
		}
	}
	perTarget := map[string][]*Delivery{}
	for _, d := range s.Deliveries {
		if d.Status == DeliveryPending {
			continue
		}
		if d.CompletedAt != nil && now.Sub(*d.CompletedAt) > DeliveryRetention {
			recs = append(recs, Del(KindDelivery, d.ID))
			continue
		}
		k := d.Target + d.EndpointID
		if d.Target == TargetAlert {
			if _, kept := s.Alerts[d.AlertID]; kept {
				continue
			}
			recs = append(recs, Del(KindDelivery, d.ID))
			continue
		}
		perTarget[k] = append(perTarget[k], d)
	}
	for _, ds := range perTarget {
		if len(ds) <= MaxDeliveriesPerEndpoint {
			continue
		}
		slices.SortFunc(ds, func(a, b *Delivery) int { return cmp.Compare(a.ID, b.ID) })
		for _, d := range ds[:len(ds)-MaxDeliveriesPerEndpoint] {
			recs = append(recs, Del(KindDelivery, d.ID))
		}
	}
	for _, e := range s.Endpoints {
		if e.PreviousSecret != "" && e.PreviousSecretExpiresAt != nil && !now.Before(*e.PreviousSecretExpiresAt) {
			c := *e
			c.PreviousSecret, c.PreviousSecretExpiresAt = "", nil
			recs = append(recs, Put(KindWebhookEndpoint, c.ID, &c))
		}
	}
	return recs
}
