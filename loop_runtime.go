package supplyplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The loop runtime's state: the workflow instances of one organization, their audit events (a
// hash chain per instance, loop_audit.go), the definitions they are bound to (by digest, so a new
// version never changes a running instance), the Idempotency-Keys of its requests and the outbox of
// its outbound events. One LoopRunState per organization, owned by one actor (stream
// loopruns-<org id>): its methods return the records of a change without applying them, and Apply
// is the only way it changes (docs/loop-runtime-api.md).

// Record kinds of the loop runtime.
const (
	KindLoopDefinition = "loopdef"   // LoopDefinition by digest
	KindLoopInstance   = "loopinst"  // LoopInstance by id
	KindLoopEvent      = "loopevent" // LoopEvent by instance id#seq
	KindLoopIdem       = "loopidem"  // LoopIdem by Idempotency-Key
)

func init() {
	RegisterKind(KindLoopDefinition, func() any { return new(LoopDefinition) })
	RegisterKind(KindLoopInstance, func() any { return new(LoopInstance) })
	RegisterKind(KindLoopEvent, func() any { return new(LoopEvent) })
	RegisterKind(KindLoopIdem, func() any { return new(LoopIdem) })
}

// Error codes of the loop runtime.
const (
	// EPRECONDITION: If-Match names another version of the instance (412).
	EPRECONDITION = "PRECONDITION_FAILED"
	// EINSTANCEEXISTS: an open instance of the loop has the business key (409).
	EINSTANCEEXISTS = "INSTANCE_EXISTS"
	// ECOUNTCHANGED: a bulk cancel's expectedCount no longer matches (409).
	ECOUNTCHANGED = "COUNT_CHANGED"
)

// LoopInstanceStatus is an instance's lifecycle status (its domain state is State).
type LoopInstanceStatus string

// Instance statuses. RUNNING and SUSPENDED are open; the others are final.
const (
	LoopRunning    LoopInstanceStatus = "RUNNING"
	LoopSuspended  LoopInstanceStatus = "SUSPENDED"
	LoopCompleted  LoopInstanceStatus = "COMPLETED"
	LoopCanceled   LoopInstanceStatus = "CANCELED"
	LoopTerminated LoopInstanceStatus = "TERMINATED"
	LoopFailed     LoopInstanceStatus = "FAILED"
	LoopTimedOut   LoopInstanceStatus = "TIMED_OUT"
)

// LoopInstanceStatuses lists the statuses.
var LoopInstanceStatuses = []LoopInstanceStatus{LoopRunning, LoopSuspended, LoopCompleted, LoopCanceled, LoopTerminated, LoopFailed, LoopTimedOut}

// Open reports whether an instance in status s may still change.
func (s LoopInstanceStatus) Open() bool { return s == LoopRunning || s == LoopSuspended }

// Runtime limits (docs/loop-runtime-api.md).
const (
	MaxLoopBusinessKey     = 200
	MaxLoopInputBytes      = 64 << 10
	MaxLoopPayloadBytes    = 256 << 10
	MaxLoopReason          = 1000
	MaxLoopInstancesPerOrg = 1_000_000
	MaxLoopEventsPerList   = 1000
	DefaultLoopEventsLimit = 100
	LoopIdemTTL            = 24 * time.Hour
)

// Actor types of audit events.
const (
	LoopActorUser    = "user"
	LoopActorService = "service"
	LoopActorAgent   = "agent"
	LoopActorSystem  = "system"
)

// LoopActor is who made a change: the verified token's subject, issuer and id, or the runtime
// itself (system: timeouts).
type LoopActor struct {
	Type string `json:"type"`
	Sub  string `json:"sub"`
	Iss  string `json:"iss,omitempty"`
	Jti  string `json:"jti,omitempty"`
}

// LoopActorType derives the actor type from a token subject: "agent:..." is an agent,
// "service:..." or "svc:..." a service, anything else a user.
func LoopActorType(sub string) string {
	switch {
	case strings.HasPrefix(sub, "agent:"):
		return LoopActorAgent
	case strings.HasPrefix(sub, "service:"), strings.HasPrefix(sub, "svc:"):
		return LoopActorService
	}
	return LoopActorUser
}

// SystemLoopActor is the runtime itself.
var SystemLoopActor = LoopActor{Type: LoopActorSystem, Sub: "supplyplan-loop-runtime"}

// LoopDefinition is a published manifest an instance is bound to, copied into the runtime's
// journal when its first instance starts: the runtime never depends on the catalog again for it.
type LoopDefinition struct {
	Digest   string          `json:"digest"`
	Name     string          `json:"name"`
	Version  string          `json:"version"`
	Manifest json.RawMessage `json:"manifest"`
}

// LoopSubject is the planning data an instance works on (procurement: a purchase order or an
// approved transfer recommendation).
type LoopSubject struct {
	Kind                  string            `json:"kind"` // PURCHASE_ORDER, RECOMMENDATION or ORDER
	ID                    string            `json:"id"`
	DestinationLocationID string            `json:"destinationLocationId,omitempty"`
	SupplierID            string            `json:"supplierId,omitempty"`
	Lines                 []LoopSubjectLine `json:"lines,omitempty"`
}

// Subject kinds.
const (
	LoopSubjectPurchaseOrder  = "PURCHASE_ORDER"
	LoopSubjectRecommendation = "RECOMMENDATION"
	LoopSubjectOrder          = "ORDER"
)

// LoopSubjectLine is one product and quantity of a subject.
type LoopSubjectLine struct {
	SKU      string  `json:"sku"`
	Quantity float64 `json:"quantity"`
}

// LoopInstance is one running (or finished) workflow instance.
type LoopInstance struct {
	ID               string             `json:"id"`
	OrganizationID   string             `json:"organizationId"`
	Loop             string             `json:"loop"`
	LoopVersion      string             `json:"loopVersion"`
	DefinitionDigest string             `json:"definitionDigest"`
	Domain           LoopDomain         `json:"domain"`
	BusinessKey      string             `json:"businessKey"`
	Status           LoopInstanceStatus `json:"status"`
	State            string             `json:"state"`
	// Version is the instance's revision: 1 at start, one more per change; If-Match names it.
	Version int64           `json:"version"`
	Input   json.RawMessage `json:"input,omitempty"`
	Subject *LoopSubject    `json:"subject,omitempty"`
	// The armed timeout: TimerTransition fires at TimerDueAt (TimerRemainingMs while suspended).
	TimerDueAt       *time.Time   `json:"timerDueAt,omitempty"`
	TimerTransition  string       `json:"timerTransition,omitempty"`
	TimerRemainingMs int64        `json:"timerRemainingMs,omitempty"`
	Effects          []LoopEffect `json:"effects,omitempty"`
	LastSeq          int64        `json:"lastSeq"`
	LastHash         string       `json:"lastHash"`
	StartedBy        LoopActor    `json:"startedBy"`
	CreatedAt        time.Time    `json:"createdAt"`
	UpdatedAt        time.Time    `json:"updatedAt"`
	ClosedAt         *time.Time   `json:"closedAt,omitempty"`
	CloseReason      string       `json:"closeReason,omitempty"`
}

// ETag is the instance's entity tag: its version, quoted.
func (in *LoopInstance) ETag() string { return `"` + strconv.FormatInt(in.Version, 10) + `"` }

// LoopIdem is a mutating request's Idempotency-Key with its response, journaled with the change.
type LoopIdem struct {
	Key         string          `json:"key"`
	Fingerprint string          `json:"fingerprint"`
	Status      int             `json:"status"`
	Body        json.RawMessage `json:"body"`
	At          time.Time       `json:"at"`
}

// LoopRequestMeta identifies the request behind a change (audited).
type LoopRequestMeta struct {
	Actor          LoopActor
	RequestID      string
	IdempotencyKey string
	Fingerprint    string
}

// LoopRunState is one organization's instances.
type LoopRunState struct {
	OrgID       string                     `json:"orgId"`
	Definitions map[string]*LoopDefinition `json:"definitions"`
	Instances   map[string]*LoopInstance   `json:"instances"`
	// Events are each instance's audit events in seq order.
	Events map[string][]*LoopEvent `json:"events"`
	Idem   map[string]*LoopIdem    `json:"idem"`
	// Usage counts transitions per month (loop_commitment.go).
	Usage map[string]*LoopUsage `json:"usage,omitempty"`
	OutboxState

	// Derived: parsed manifests by digest, the open instance of each (loop, businessKey), and the
	// earliest armed timer (zero: none known).
	manifests map[string]*LoopManifest
	open      map[loopOpenKey]string
	nextDue   time.Time
	// commitment is the organization's monthly commitment of transitions (SetCommitment).
	commitment int64
	// The usage period of the last transition counted (period).
	periodYear  int
	periodMonth time.Month
	periodName  string
}

// NewLoopRunState returns the empty state of an organization.
func NewLoopRunState(orgID string) *LoopRunState {
	s := &LoopRunState{OrgID: orgID}
	s.init()
	return s
}

func (s *LoopRunState) init() {
	initMap(&s.Definitions)
	initMap(&s.Instances)
	if s.Events == nil {
		s.Events = map[string][]*LoopEvent{}
	}
	initMap(&s.Idem)
	initMap(&s.Usage)
	s.OutboxState.init()
	s.manifests = map[string]*LoopManifest{}
	s.open = map[loopOpenKey]string{}
	s.nextDue = time.Time{}
	for _, d := range s.Definitions {
		s.cacheManifest(d)
	}
	for _, in := range s.Instances {
		s.index(in)
	}
}

// cacheManifest parses a definition's manifest into the derived cache (Apply and loads only: the
// cache is read by checks that run outside the actor under its read lock).
func (s *LoopRunState) cacheManifest(d *LoopDefinition) {
	if m, err := ParseLoopManifest(d.Manifest); err == nil {
		s.manifests[d.Digest] = m
	}
}

// UnmarshalJSON loads a snapshot and rebuilds the derived indexes.
func (s *LoopRunState) UnmarshalJSON(b []byte) error {
	type plain LoopRunState
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	commitment := s.commitment
	*s = LoopRunState(p)
	s.commitment = commitment
	s.init()
	return nil
}

// loopOpenKey is a (loop, businessKey) pair: a struct key, so that indexing an instance at every
// change allocates no joined string.
type loopOpenKey struct{ loop, businessKey string }

func openKey(loop, businessKey string) loopOpenKey { return loopOpenKey{loop, businessKey} }

// index updates the derived indexes for in.
func (s *LoopRunState) index(in *LoopInstance) {
	k := openKey(in.Loop, in.BusinessKey)
	if in.Status.Open() {
		s.open[k] = in.ID
	} else if s.open[k] == in.ID {
		delete(s.open, k)
	}
	if in.Status == LoopRunning && in.TimerDueAt != nil && (s.nextDue.IsZero() || in.TimerDueAt.Before(s.nextDue)) {
		s.nextDue = *in.TimerDueAt
	}
}

// Apply applies one record.
func (s *LoopRunState) Apply(r Record) error {
	switch r.Kind {
	case KindLoopDefinition:
		if err := putValue(s.Definitions, r); err != nil {
			return err
		}
		if !r.Del {
			s.cacheManifest(s.Definitions[r.ID])
		}
		return nil
	case KindLoopInstance:
		if cur, ok := s.Instances[r.ID]; ok && r.Del {
			if k := openKey(cur.Loop, cur.BusinessKey); s.open[k] == r.ID {
				delete(s.open, k)
			}
		}
		if err := putValue(s.Instances, r); err != nil {
			return err
		}
		if !r.Del {
			s.index(s.Instances[r.ID])
		}
		return nil
	case KindLoopEvent:
		if r.Del { // PurgeClosed: the ID is the instance's, and its whole history goes
			delete(s.Events, r.ID)
			return nil
		}
		e, ok := r.Value.(*LoopEvent)
		if !ok {
			return fmt.Errorf("loop event record %s has value %T", r.ID, r.Value)
		}
		evs := s.Events[e.InstanceID]
		switch {
		case e.Seq == int64(len(evs))+1:
			s.Events[e.InstanceID] = append(evs, e)
		case e.Seq >= 1 && e.Seq <= int64(len(evs)):
			evs[e.Seq-1] = e
		default:
			return fmt.Errorf("loop event %s: seq %d after %d", r.ID, e.Seq, len(evs))
		}
		return nil
	case KindLoopIdem:
		return putValue(s.Idem, r)
	case KindLoopUsage:
		return putValue(s.Usage, r)
	case KindPendingEvent:
		return s.OutboxState.Apply(r)
	}
	return unknownKind("loop runtime", r)
}

// Manifest returns the parsed manifest of a definition the state holds.
func (s *LoopRunState) Manifest(digest string) (*LoopManifest, error) {
	if m, ok := s.manifests[digest]; ok {
		return m, nil
	}
	if _, ok := s.Definitions[digest]; ok {
		return nil, fmt.Errorf("definition %s: its manifest does not parse", digest)
	}
	return nil, NotFound("Loop definition")
}

// Instance returns a copy of one instance.
func (s *LoopRunState) Instance(id string) (LoopInstance, error) {
	in, ok := s.Instances[id]
	if !ok {
		return LoopInstance{}, NotFound("Instance")
	}
	return *in, nil
}

// Replay returns the stored response of an Idempotency-Key: nil when the key is new (or expired),
// 422 when it was used for another request.
func (s *LoopRunState) Replay(key, fingerprint string, now time.Time) (*LoopIdem, error) {
	if key == "" {
		return nil, nil
	}
	e, ok := s.Idem[key]
	if !ok || now.Sub(e.At) >= LoopIdemTTL {
		return nil, nil
	}
	if e.Fingerprint != fingerprint {
		return nil, Errorf(EIDEMREUSED, "This Idempotency-Key was used for another request (method, path or body differ)")
	}
	c := *e
	return &c, nil
}

// LoopIdemRecord is the record storing the response v (with status) of the request of meta, for
// its Idempotency-Key; ok is false when the request has none.
func LoopIdemRecord(meta LoopRequestMeta, status int, v any, now time.Time) (rec Record, ok bool, err error) {
	return idemRecord(meta, status, v, now)
}

// idemRecord stores the response of the request of meta (when it has a key).
func idemRecord(meta LoopRequestMeta, status int, v any, now time.Time) (Record, bool, error) {
	if meta.IdempotencyKey == "" {
		return Record{}, false, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Record{}, false, err
	}
	return Put(KindLoopIdem, meta.IdempotencyKey, &LoopIdem{Key: meta.IdempotencyKey, Fingerprint: meta.Fingerprint,
		Status: status, Body: b, At: now}), true, nil
}

// LoopStartInput is the body of POST /v1/instances.
type LoopStartInput struct {
	Loop        string          `json:"loop"`
	Version     string          `json:"version"`
	Range       string          `json:"range"`
	Digest      string          `json:"digest"`
	BusinessKey string          `json:"businessKey"`
	Input       json.RawMessage `json:"input"`
	OnConflict  string          `json:"onConflict"`
}

// Conflict policies of a start.
const (
	LoopOnConflictFail        = "FAIL"
	LoopOnConflictUseExisting = "USE_EXISTING"
)

// Validate checks the start body's own fields (the definition is resolved by the service).
func (in *LoopStartInput) Validate() error {
	fe := FieldErrors{}
	if in.Loop == "" {
		fe.Add("loop", "is required")
	} else if _, _, err := ParseLoopName(in.Loop); err != nil {
		fe.Add("loop", "%v", err)
	}
	n := 0
	for _, v := range []string{in.Version, in.Range, in.Digest} {
		if v != "" {
			n++
		}
	}
	if n > 1 {
		fe.Add("version", "give at most one of version, range and digest")
	}
	if in.Digest != "" {
		if err := ValidateLoopDigest(in.Digest); err != nil {
			fe.Add("digest", "must be sha256:<64 lowercase hex digits>")
		}
	}
	switch {
	case strings.TrimSpace(in.BusinessKey) == "":
		fe.Add("businessKey", "is required")
	case len(in.BusinessKey) > MaxLoopBusinessKey:
		fe.Add("businessKey", "must be at most %d characters", MaxLoopBusinessKey)
	case !printable(in.BusinessKey):
		fe.Add("businessKey", "must be printable characters")
	}
	switch in.OnConflict {
	case "":
		in.OnConflict = LoopOnConflictFail
	case LoopOnConflictFail, LoopOnConflictUseExisting:
	default:
		fe.Add("onConflict", "must be FAIL or USE_EXISTING")
	}
	in.Input = bytes.TrimSpace(in.Input)
	switch {
	case len(in.Input) == 0 || string(in.Input) == "null":
		in.Input = json.RawMessage("{}")
	case in.Input[0] != '{':
		fe.Add("input", "must be a JSON object")
	case len(in.Input) > MaxLoopInputBytes:
		fe.Add("input", "must be at most %d bytes", MaxLoopInputBytes)
	}
	return fe.Err()
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// LoopStart is a validated start with its resolved definition and subject.
type LoopStart struct {
	Input      LoopStartInput
	Definition LoopDefinition
	Subject    *LoopSubject
}

// LoopResult is a change's outcome: the instance, whether this request created it, the events to
// publish once durable, and the response of an Idempotency-Key replay (instead of the others).
type LoopResult struct {
	Instance LoopInstance
	Created  bool
	Events   []DomainEvent
	Effects  []LoopTenantEffect
	Replay   *LoopIdem
	// usage is the month's usage as the change's records leave it (several transitions of one
	// change count on one another).
	usage []*LoopUsage
}

// Start creates an instance (or, with USE_EXISTING, returns the open one of its business key).
func (s *LoopRunState) Start(st LoopStart, meta LoopRequestMeta, now time.Time) (LoopResult, []Record, error) {
	if r, err := s.Replay(meta.IdempotencyKey, meta.Fingerprint, now); r != nil || err != nil {
		return LoopResult{Replay: r}, nil, err
	}
	def := st.Definition
	m, ok := s.manifests[def.Digest]
	var recs []Record
	if _, have := s.Definitions[def.Digest]; !have {
		pm, err := ParseLoopManifest(def.Manifest)
		if err != nil {
			return LoopResult{}, nil, err
		}
		m = pm
		d := def
		recs = append(recs, Put(KindLoopDefinition, def.Digest, &d))
	} else if !ok {
		var err error
		if m, err = s.Manifest(def.Digest); err != nil {
			return LoopResult{}, nil, err
		}
	}
	if id, ok := s.open[openKey(def.Name, st.Input.BusinessKey)]; ok {
		cur := *s.Instances[id]
		if st.Input.OnConflict != LoopOnConflictUseExisting {
			return LoopResult{}, nil, &Error{Code: EINSTANCEEXISTS, Message: "An open instance of this loop has this business key",
				Details: map[string][]string{"businessKey": {"instance " + id + " is " + string(cur.Status)}}}
		}
		res := LoopResult{Instance: cur}
		if r, ok, err := idemRecord(meta, 200, cur, now); err != nil {
			return LoopResult{}, nil, err
		} else if ok {
			return res, []Record{r}, nil
		}
		return res, nil, nil
	}
	if len(s.Instances) >= MaxLoopInstancesPerOrg {
		return LoopResult{}, nil, Errorf(ETOOLARGE, "An organization holds at most %d instances", MaxLoopInstancesPerOrg)
	}
	in := LoopInstance{ID: NewID("lin"), OrganizationID: s.OrgID, Loop: def.Name, LoopVersion: def.Version,
		DefinitionDigest: def.Digest, Domain: m.Domain, BusinessKey: st.Input.BusinessKey, Status: LoopRunning,
		State: m.Initial, Input: st.Input.Input, Subject: st.Subject, StartedBy: meta.Actor, CreatedAt: now}
	in.armTimer(m, now)
	ev := LoopEvent{Type: LoopEventStarted, To: m.Initial, Status: LoopRunning}
	res := LoopResult{Created: true}
	recs, err := s.change(&in, ev, nil, meta, now, &res, recs)
	if err != nil {
		return LoopResult{}, nil, err
	}
	if r, ok, err := idemRecord(meta, 201, res.Instance, now); err != nil {
		return LoopResult{}, nil, err
	} else if ok {
		recs = append(recs, r)
	}
	return res, recs, nil
}

// armTimer arms the timeout of the instance's current state (or disarms it).
func (in *LoopInstance) armTimer(m *LoopManifest, now time.Time) {
	in.TimerDueAt, in.TimerTransition, in.TimerRemainingMs = nil, "", 0
	if !in.Status.Open() {
		return
	}
	if t, ok := m.TimeoutOf(in.State); ok {
		due := now.Add(t.Duration)
		if in.Status == LoopSuspended {
			in.TimerRemainingMs = t.Duration.Milliseconds()
		} else {
			in.TimerDueAt = &due
		}
		in.TimerTransition = t.Transition
	}
}

// change appends event ev to in (which it changes: version, seq, hash, times), and returns recs
// with the instance, the event and its outbound event added. res collects the outcome.
func (s *LoopRunState) change(in *LoopInstance, ev LoopEvent, payload json.RawMessage, meta LoopRequestMeta, now time.Time,
	res *LoopResult, recs []Record) ([]Record, error) {
	in.Version++
	in.UpdatedAt = now
	ev.InstanceID = in.ID
	ev.Seq = in.LastSeq + 1
	if ev.Actor.Type == "" {
		ev.Actor = meta.Actor
	}
	ev.RequestID, ev.IdempotencyKey = meta.RequestID, meta.IdempotencyKey
	ev.DefinitionDigest = in.DefinitionDigest
	ev.OccurredAt = now
	ev.Payload = payload
	ev.PrevHash = in.LastHash
	if ev.Status == "" {
		ev.Status = in.Status
	}
	h, err := ev.ComputeHash()
	if err != nil {
		return nil, err
	}
	ev.Hash = h
	in.LastSeq, in.LastHash = ev.Seq, h
	inst := *in
	e := ev
	out := LoopOutboundEvent(inst, e)
	res.Instance = inst
	res.Events = append(res.Events, out)
	return append(recs, Put(KindLoopInstance, inst.ID, &inst), Put(KindLoopEvent, loopEventID(inst.ID, e.Seq), &e),
		EventRecord(out)), nil
}

// loopDomainName is the domain in lower case (the built-in domains without converting them).
func loopDomainName(d LoopDomain) string {
	switch d {
	case "PROCUREMENT":
		return "procurement"
	case "ORDERS":
		return "orders"
	case "RETURNS":
		return "returns"
	case "QUALITY":
		return "quality"
	}
	return strings.ToLower(string(d))
}

func loopEventID(instanceID string, seq int64) string {
	return instanceID + "#" + strconv.FormatInt(seq, 10)
}

// LoopOutboundEventType is the webhook event type of an audit event: loop.<domain>.<transition>
// for a transition, loop.<domain>.<started|canceled|terminated|suspended|resumed|failed> for the
// lifecycle changes.
func LoopOutboundEventType(domain LoopDomain, ev LoopEvent) string {
	name := ev.Transition
	if ev.Type != LoopEventTransition && ev.Type != LoopEventTimeout {
		name = ev.Type
	}
	return "loop." + loopDomainName(domain) + "." + name
}

// LoopOutboundEvent is the outbound event of an audit event. Its id is derived from the instance
// and seq, so a redelivery carries the same id.
func LoopOutboundEvent(in LoopInstance, ev LoopEvent) DomainEvent {
	return DomainEvent{ID: loopOutboundEventID(in.ID, ev.Seq), Type: LoopOutboundEventType(in.Domain, ev),
		OrganizationID: in.OrganizationID, Timestamp: ev.OccurredAt,
		Data: LoopEventData{InstanceID: in.ID, Loop: in.Loop, LoopVersion: in.LoopVersion, BusinessKey: in.BusinessKey,
			Status: in.Status, State: in.State, Version: in.Version, Event: ev}}
}

// loopOutboundEventID is evt_loop_<instance>_<seq, 10 digits at least> (fmt's %010d, without fmt).
func loopOutboundEventID(instanceID string, seq int64) string {
	if seq < 0 {
		return fmt.Sprintf("evt_loop_%s_%010d", instanceID, seq)
	}
	b := make([]byte, 0, len("evt_loop__")+len(instanceID)+20)
	b = append(b, "evt_loop_"...)
	b = append(b, instanceID...)
	b = append(b, '_')
	var d [20]byte
	n := strconv.AppendInt(d[:0], seq, 10)
	for i := len(n); i < 10; i++ {
		b = append(b, '0')
	}
	return string(append(b, n...))
}

// LoopEventData is the data of an outbound loop event.
type LoopEventData struct {
	InstanceID  string             `json:"instanceId"`
	Loop        string             `json:"loop"`
	LoopVersion string             `json:"loopVersion"`
	BusinessKey string             `json:"businessKey"`
	Status      LoopInstanceStatus `json:"status"`
	State       string             `json:"state"`
	Version     int64              `json:"version"`
	Event       LoopEvent          `json:"event"`
}

// LoopTransitionInput is a transition request.
type LoopTransitionInput struct {
	Name    string
	Payload json.RawMessage
	// IfMatch is the instance version the caller saw (nil: not checked).
	IfMatch *int64
	// Roles are the manifest roles the caller acts as.
	Roles []string
}

// checkOpen refuses a change of a closed or stale instance.
func checkIfMatch(in *LoopInstance, ifMatch *int64) error {
	if ifMatch != nil && *ifMatch != in.Version {
		return &Error{Code: EPRECONDITION, Message: "The instance changed since the version named by If-Match",
			Details: map[string][]string{"If-Match": {fmt.Sprintf("instance is at version %d, not %d", in.Version, *ifMatch)}}}
	}
	return nil
}

// allowedFrom lists the transitions that may leave state.
func allowedFrom(m *LoopManifest, state string) []string {
	var out []string
	for _, t := range m.Transitions {
		if t.LeavesFrom(state) {
			out = append(out, t.Name)
		}
	}
	return out
}

// CheckTransition decides whether the caller may fire in.Name on instance id now, without
// changing anything: the rules in the order they are checked (404, 412, 409 closed or suspended,
// 409 not allowed from the state, 403 role, 400 payload). It returns the instance, its manifest
// and the transition.
func (s *LoopRunState) CheckTransition(id string, in LoopTransitionInput) (*LoopInstance, *LoopManifest, *LoopTransition, error) {
	cur, m, t, _, err := s.checkTransition(id, in)
	return cur, m, t, err
}

// checkTransition is CheckTransition; it also returns the payload's canonical form.
func (s *LoopRunState) checkTransition(id string, in LoopTransitionInput) (*LoopInstance, *LoopManifest, *LoopTransition, json.RawMessage, error) {
	cur, ok := s.Instances[id]
	if !ok {
		return nil, nil, nil, nil, NotFound("Instance")
	}
	if err := checkIfMatch(cur, in.IfMatch); err != nil {
		return nil, nil, nil, nil, err
	}
	if cur.Status != LoopRunning {
		return nil, nil, nil, nil, &Error{Code: ECONFLICT, Message: fmt.Sprintf("The instance is %s: only a RUNNING instance takes transitions", cur.Status),
			Details: map[string][]string{"status": {string(cur.Status)}}}
	}
	m, err := s.Manifest(cur.DefinitionDigest)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	t, ok := m.Transition(in.Name)
	if !ok || !t.LeavesFrom(cur.State) {
		allowed := allowedFrom(m, cur.State)
		msg := fmt.Sprintf("Transition %q cannot fire from state %q", in.Name, cur.State)
		if !ok {
			msg = fmt.Sprintf("The loop has no transition %q", in.Name)
		}
		return nil, nil, nil, nil, &Error{Code: ECONFLICT, Message: msg,
			Details: map[string][]string{"name": {fmt.Sprintf("allowed from %s: %s", cur.State, strings.Join(allowed, ", "))}}}
	}
	if !slices.ContainsFunc(in.Roles, t.Allows) {
		if slices.Equal(t.Roles, []string{LoopRoleSystem}) {
			return nil, nil, nil, nil, Errorf(EFORBIDDEN, "Transition %q is fired by the runtime only (its timeouts)", t.Name)
		}
		return nil, nil, nil, nil, &Error{Code: EFORBIDDEN, Message: fmt.Sprintf("Transition %q needs one of the roles %s", t.Name, strings.Join(t.Roles, ", ")),
			Details: map[string][]string{"scope": {"the token's scopes grant the roles " + strings.Join(in.Roles, ", ")}}}
	}
	payload, err := canonicalLoopPayload(t, in.Payload)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return cur, m, t, payload, nil
}

// validateLoopPayload checks a transition's payload against its schema (root "payload").
func validateLoopPayload(t *LoopTransition, payload json.RawMessage) error {
	_, err := canonicalLoopPayload(t, payload)
	return err
}

// emptyPayload is the decoded empty payload (validation only reads it).
var emptyPayload = map[string]any{}

// canonicalLoopPayload checks a transition's payload against its schema (root "payload") and
// returns its canonical form (RFC 8785; {} for none), from one strict decode.
func canonicalLoopPayload(t *LoopTransition, payload json.RawMessage) (json.RawMessage, error) {
	p := bytes.TrimSpace(payload)
	if len(p) > MaxLoopPayloadBytes {
		return nil, Errorf(ETOOLARGE, "A transition payload is at most %d bytes", MaxLoopPayloadBytes)
	}
	if len(p) == 0 || string(p) == "null" || string(p) == "{}" {
		if t.Input != nil {
			fe := FieldErrors{}
			if t.Input.Validate(emptyPayload, "payload", fe); len(fe) > 0 {
				return nil, fe.Err()
			}
		}
		return json.RawMessage("{}"), nil
	}
	v, err := decodeJSONValue(p)
	if err != nil {
		return nil, err
	}
	if t.Input == nil {
		if m, ok := v.(map[string]any); !ok || len(m) > 0 {
			return nil, Invalid("payload", "transition %q takes no data (send {} or nothing)", t.Name)
		}
		return json.RawMessage("{}"), nil
	}
	fe := FieldErrors{}
	t.Input.Validate(v, "payload", fe)
	if err := fe.Err(); err != nil {
		return nil, err
	}
	c, err := AppendCanonicalJSON(nil, v)
	return c, err
}

// Transition fires a transition requested through the API. effects computes the planning effects
// of the transition (nil: none); it may refuse the payload (400).
func (s *LoopRunState) Transition(id string, in LoopTransitionInput, meta LoopRequestMeta, effects LoopEffectPlanner, now time.Time) (LoopResult, []Record, error) {
	if r, err := s.Replay(meta.IdempotencyKey, meta.Fingerprint, now); r != nil || err != nil {
		return LoopResult{Replay: r}, nil, err
	}
	cur, m, t, payload, err := s.checkTransition(id, in)
	if err != nil {
		return LoopResult{}, nil, err
	}
	inst := *cur
	inst.Effects = slices.Clone(cur.Effects)
	var res LoopResult
	recs, err := s.fire(&inst, m, t, payload, LoopEventTransition, "", LoopCompleted, meta, effects, now, &res, nil)
	if err != nil {
		return LoopResult{}, nil, err
	}
	if r, ok, err := idemRecord(meta, 200, res.Instance, now); err != nil {
		return LoopResult{}, nil, err
	} else if ok {
		recs = append(recs, r)
	}
	return res, recs, nil
}

func normalizePayload(p json.RawMessage) json.RawMessage {
	p = bytes.TrimSpace(p)
	if len(p) == 0 || string(p) == "null" {
		return json.RawMessage("{}")
	}
	c, err := CanonicalJSON(p)
	if err != nil {
		return slices.Clone(p)
	}
	return c
}

// fire moves inst along t (a checked transition): the state, the status when a terminal state is
// reached (COMPLETED, or TIMED_OUT for a timeout), the timer, the effects, the event.
func (s *LoopRunState) fire(inst *LoopInstance, m *LoopManifest, t *LoopTransition, payload json.RawMessage, typ, reason string,
	closeAs LoopInstanceStatus, meta LoopRequestMeta, effects LoopEffectPlanner, now time.Time, res *LoopResult, recs []Record) ([]Record, error) {
	from := inst.State
	inst.State = t.To
	if m.IsTerminal(t.To) && inst.Status.Open() {
		inst.Status = closeAs
		inst.ClosedAt = &now
		inst.CloseReason = reason
	}
	inst.armTimer(m, now)
	seq := inst.LastSeq + 1
	if effects != nil {
		eff, err := effects(inst, t.Name, payload, seq)
		if err != nil {
			return nil, err
		}
		if eff != nil {
			inst.Effects = append(inst.Effects, LoopEffect{Seq: seq, ID: eff.ID, Kind: eff.Kind(), Status: LoopEffectPending,
				Lines: eff.Lines, PurchaseOrderID: eff.PurchaseOrderID, PurchaseOrderStatus: eff.PurchaseOrderStatus, OrderID: eff.OrderID})
			res.Effects = append(res.Effects, *eff)
		}
	}
	ev := LoopEvent{Type: typ, From: from, To: t.To, Transition: t.Name, Status: inst.Status, Reason: reason}
	if typ == LoopEventTimeout {
		ev.Actor = SystemLoopActor
	}
	counted := len(recs)
	recs = s.countTransition(now, &res.usage, recs)
	for _, r := range recs[counted:] {
		if r.Kind == KindPendingEvent {
			res.Events = append(res.Events, *r.Value.(*DomainEvent))
		}
	}
	return s.change(inst, ev, payload, meta, now, res, recs)
}

// LoopLifecycleInput is a cancel, terminate, suspend or resume request.
type LoopLifecycleInput struct {
	Reason  string
	IfMatch *int64
}

// Lifecycle actions.
const (
	LoopActionCancel    = "cancel"
	LoopActionTerminate = "terminate"
	LoopActionSuspend   = "suspend"
	LoopActionResume    = "resume"
)

// Lifecycle applies cancel (graceful: the loop's own `cancel` transition runs when it may leave
// the current state, so its effects run too), terminate (forced: nothing else runs), suspend
// (timers paused, no transitions) or resume.
func (s *LoopRunState) Lifecycle(id, action string, in LoopLifecycleInput, meta LoopRequestMeta, effects LoopEffectPlanner, now time.Time) (LoopResult, []Record, error) {
	if r, err := s.Replay(meta.IdempotencyKey, meta.Fingerprint, now); r != nil || err != nil {
		return LoopResult{Replay: r}, nil, err
	}
	if err := checkLifecycleReason(action, in.Reason); err != nil {
		return LoopResult{}, nil, err
	}
	cur, ok := s.Instances[id]
	if !ok {
		return LoopResult{}, nil, NotFound("Instance")
	}
	if err := checkIfMatch(cur, in.IfMatch); err != nil {
		return LoopResult{}, nil, err
	}
	var res LoopResult
	recs, err := s.lifecycle(cur, action, in.Reason, meta, effects, now, &res, nil)
	if err != nil {
		return LoopResult{}, nil, err
	}
	if r, ok, err := idemRecord(meta, 200, res.Instance, now); err != nil {
		return LoopResult{}, nil, err
	} else if ok {
		recs = append(recs, r)
	}
	return res, recs, nil
}

func checkLifecycleReason(action, reason string) error {
	if (action == LoopActionCancel || action == LoopActionTerminate) && strings.TrimSpace(reason) == "" {
		return Invalid("reason", "is required: say why the instance is stopped")
	}
	if len(reason) > MaxLoopReason {
		return Invalid("reason", "must be at most %d characters", MaxLoopReason)
	}
	return nil
}

func (s *LoopRunState) lifecycle(cur *LoopInstance, action, reason string, meta LoopRequestMeta, effects LoopEffectPlanner, now time.Time,
	res *LoopResult, recs []Record) ([]Record, error) {
	m, err := s.Manifest(cur.DefinitionDigest)
	if err != nil {
		return nil, err
	}
	inst := *cur
	inst.Effects = slices.Clone(cur.Effects)
	want := map[string][]LoopInstanceStatus{
		LoopActionCancel: {LoopRunning, LoopSuspended}, LoopActionTerminate: {LoopRunning, LoopSuspended},
		LoopActionSuspend: {LoopRunning}, LoopActionResume: {LoopSuspended},
	}[action]
	if !slices.Contains(want, inst.Status) {
		return nil, &Error{Code: ECONFLICT, Message: fmt.Sprintf("Cannot %s an instance that is %s", action, inst.Status),
			Details: map[string][]string{"status": {string(inst.Status)}}}
	}
	switch action {
	case LoopActionCancel:
		if t, ok := m.Transition("cancel"); ok && t.LeavesFrom(inst.State) {
			payload := cancelPayload(t, reason)
			if payload != nil {
				inst.Status = LoopRunning // the transition runs as in a running instance
				if recs, err = s.fire(&inst, m, t, payload, LoopEventTransition, reason, LoopCanceled, meta, effects, now, res, recs); err != nil {
					return nil, err
				}
			}
		}
		inst.Status = LoopCanceled
	case LoopActionTerminate:
		inst.Status = LoopTerminated
	case LoopActionSuspend:
		inst.Status = LoopSuspended
		if inst.TimerDueAt != nil {
			inst.TimerRemainingMs = max(inst.TimerDueAt.Sub(now).Milliseconds(), 0)
			inst.TimerDueAt = nil
		}
	case LoopActionResume:
		inst.Status = LoopRunning
		if inst.TimerTransition != "" {
			due := now.Add(time.Duration(inst.TimerRemainingMs) * time.Millisecond)
			inst.TimerDueAt, inst.TimerRemainingMs = &due, 0
		}
	}
	if !inst.Status.Open() {
		inst.TimerDueAt, inst.TimerTransition, inst.TimerRemainingMs = nil, "", 0
		if inst.ClosedAt == nil || inst.Status != LoopCompleted {
			inst.ClosedAt = &now
		}
		inst.CloseReason = reason
	}
	typ := map[string]string{LoopActionCancel: LoopEventCanceled, LoopActionTerminate: LoopEventTerminated,
		LoopActionSuspend: LoopEventSuspended, LoopActionResume: LoopEventResumed}[action]
	return s.change(&inst, LoopEvent{Type: typ, From: inst.State, To: inst.State, Status: inst.Status, Reason: reason}, nil, meta, now, res, recs)
}

// cancelPayload is the payload the loop's cancel transition takes for a graceful cancel:
// {"reason"} or, when its schema refuses that, {} (nil when it refuses both).
func cancelPayload(t *LoopTransition, reason string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"reason": reason})
	for _, p := range []json.RawMessage{b, json.RawMessage("{}")} {
		if validateLoopPayload(t, p) == nil {
			return normalizePayload(p)
		}
	}
	return nil
}

// LoopInstanceFilter selects instances (list and bulk cancel).
type LoopInstanceFilter struct {
	Loop          string             `json:"loop,omitempty"`
	Status        LoopInstanceStatus `json:"status,omitempty"`
	State         string             `json:"state,omitempty"`
	BusinessKey   string             `json:"businessKey,omitempty"`
	CreatedAfter  *time.Time         `json:"createdAfter,omitempty"`
	CreatedBefore *time.Time         `json:"createdBefore,omitempty"`
	Limit         int                `json:"-"`
	Offset        int                `json:"-"`
}

// Empty reports whether the filter selects everything.
func (f LoopInstanceFilter) Empty() bool {
	return f.Loop == "" && f.Status == "" && f.State == "" && f.BusinessKey == "" && f.CreatedAfter == nil && f.CreatedBefore == nil
}

// Validate checks the filter's values.
func (f LoopInstanceFilter) Validate() error {
	fe := FieldErrors{}
	if f.Status != "" && !slices.Contains(LoopInstanceStatuses, f.Status) {
		fe.Add("status", "must be one of %s", joinEnum(LoopInstanceStatuses))
	}
	if f.Loop != "" {
		if _, _, err := ParseLoopName(f.Loop); err != nil {
			fe.Add("loop", "%v", err)
		}
	}
	if f.CreatedAfter != nil && f.CreatedBefore != nil && !f.CreatedAfter.Before(*f.CreatedBefore) {
		fe.Add("createdBefore", "must be after createdAfter")
	}
	return fe.Err()
}

func (f LoopInstanceFilter) match(in *LoopInstance) bool {
	return (f.Loop == "" || in.Loop == f.Loop) && (f.Status == "" || in.Status == f.Status) &&
		(f.State == "" || in.State == f.State) && (f.BusinessKey == "" || in.BusinessKey == f.BusinessKey) &&
		(f.CreatedAfter == nil || !in.CreatedAt.Before(*f.CreatedAfter)) &&
		(f.CreatedBefore == nil || in.CreatedAt.Before(*f.CreatedBefore))
}

// matching returns the instances f selects, newest first.
func (s *LoopRunState) matching(f LoopInstanceFilter) []*LoopInstance {
	var out []*LoopInstance
	for _, in := range s.Instances {
		if f.match(in) {
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b *LoopInstance) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out
}

// List returns a page of the instances f selects, newest first.
func (s *LoopRunState) List(f LoopInstanceFilter) Page[LoopInstance] {
	all := s.matching(f)
	p := Page[LoopInstance]{Items: []LoopInstance{}, Total: len(all), Limit: f.Limit, Offset: f.Offset}
	for i := f.Offset; i < len(all) && i < f.Offset+f.Limit; i++ {
		p.Items = append(p.Items, *all[i])
	}
	return p
}

// LoopBulkCancelInput is the body of POST /v1/instances/cancel.
type LoopBulkCancelInput struct {
	Filter LoopInstanceFilter
	Reason string
	DryRun bool
	// ExpectedCount, when set, must equal the count (the one a dry run answered): 409 otherwise.
	ExpectedCount *int
}

// LoopBulkCancelResult answers a bulk cancel.
type LoopBulkCancelResult struct {
	DryRun   bool     `json:"dryRun"`
	Count    int      `json:"count"`
	Canceled int      `json:"canceled"`
	IDs      []string `json:"instanceIds"`
}

// MaxLoopBulkCancel is the most instances one bulk cancel stops.
const MaxLoopBulkCancel = 10000

// BulkCancel cancels (gracefully) every open instance f selects; a dry run only counts them.
func (s *LoopRunState) BulkCancel(in LoopBulkCancelInput, meta LoopRequestMeta, effects LoopEffectPlanner, now time.Time) (LoopBulkCancelResult, LoopResult, []Record, error) {
	if in.Filter.Empty() {
		return LoopBulkCancelResult{}, LoopResult{}, nil, Invalid("filter", "is required: name at least one of loop, status, state, businessKey, createdAfter, createdBefore (an empty filter never means every instance)")
	}
	if err := in.Filter.Validate(); err != nil {
		return LoopBulkCancelResult{}, LoopResult{}, nil, err
	}
	if err := checkLifecycleReason(LoopActionCancel, in.Reason); err != nil && !in.DryRun {
		return LoopBulkCancelResult{}, LoopResult{}, nil, err
	}
	var sel []*LoopInstance
	for _, x := range s.matching(in.Filter) {
		if x.Status.Open() {
			sel = append(sel, x)
		}
	}
	out := LoopBulkCancelResult{DryRun: in.DryRun, Count: len(sel), IDs: []string{}}
	for _, x := range sel {
		out.IDs = append(out.IDs, x.ID)
	}
	if in.ExpectedCount != nil && *in.ExpectedCount != len(sel) {
		return out, LoopResult{}, nil, &Error{Code: ECOUNTCHANGED, Message: fmt.Sprintf("The filter selects %d open instances, not the expected %d", len(sel), *in.ExpectedCount),
			Details: map[string][]string{"expectedCount": {strconv.Itoa(len(sel))}}}
	}
	if in.DryRun {
		return out, LoopResult{}, nil, nil
	}
	if len(sel) > MaxLoopBulkCancel {
		return out, LoopResult{}, nil, Invalid("filter", "selects %d open instances; one request cancels at most %d", len(sel), MaxLoopBulkCancel)
	}
	var res LoopResult
	var recs []Record
	for _, x := range sel {
		var err error
		if recs, err = s.lifecycle(x, LoopActionCancel, in.Reason, meta, effects, now, &res, recs); err != nil {
			return out, LoopResult{}, nil, err
		}
		out.Canceled++
	}
	return out, res, recs, nil
}

// DueTimers returns the ids of the running instances whose timer is due at now, oldest first.
func (s *LoopRunState) DueTimers(now time.Time, limit int) []string {
	if s.nextDue.IsZero() || now.Before(s.nextDue) {
		return nil
	}
	type due struct {
		id string
		at time.Time
	}
	var ds []due
	next := time.Time{}
	for _, in := range s.Instances {
		if in.Status != LoopRunning || in.TimerDueAt == nil {
			continue
		}
		if !now.Before(*in.TimerDueAt) {
			ds = append(ds, due{in.ID, *in.TimerDueAt})
		} else if next.IsZero() || in.TimerDueAt.Before(next) {
			next = *in.TimerDueAt
		}
	}
	slices.SortFunc(ds, func(a, b due) int { return a.at.Compare(b.at) })
	out := make([]string, 0, min(len(ds), limit))
	for i, d := range ds {
		if i >= limit {
			if next.IsZero() || d.at.Before(next) {
				next = d.at
			}
			continue
		}
		out = append(out, d.id)
	}
	s.nextDue = next
	return out
}

// FireTimeouts fires the due timeouts of ids (from DueTimers) as the runtime.
func (s *LoopRunState) FireTimeouts(ids []string, effects LoopEffectPlanner, now time.Time) (LoopResult, []Record, error) {
	var res LoopResult
	var recs []Record
	meta := LoopRequestMeta{Actor: SystemLoopActor}
	for _, id := range ids {
		cur, ok := s.Instances[id]
		if !ok || cur.Status != LoopRunning || cur.TimerDueAt == nil || now.Before(*cur.TimerDueAt) {
			continue
		}
		m, err := s.Manifest(cur.DefinitionDigest)
		if err != nil {
			return LoopResult{}, nil, err
		}
		inst := *cur
		inst.Effects = slices.Clone(cur.Effects)
		t, ok := m.Transition(cur.TimerTransition)
		if !ok || !t.LeavesFrom(cur.State) {
			inst.TimerDueAt, inst.TimerTransition = nil, ""
			recs = append(recs, Put(KindLoopInstance, inst.ID, &inst))
			continue
		}
		reason := fmt.Sprintf("timeout: %s after %s in %s", t.Name, timeoutAfter(m, cur.State), cur.State)
		if recs, err = s.fire(&inst, m, t, json.RawMessage("{}"), LoopEventTimeout, reason, LoopTimedOut, meta, effects, now, &res, recs); err != nil {
			return LoopResult{}, nil, err
		}
	}
	return res, recs, nil
}

func timeoutAfter(m *LoopManifest, state string) string {
	t, _ := m.TimeoutOf(state)
	return t.After
}

// PruneIdem returns the records dropping Idempotency-Keys older than LoopIdemTTL.
func (s *LoopRunState) PruneIdem(now time.Time) []Record {
	var recs []Record
	for k, e := range s.Idem {
		if now.Sub(e.At) >= LoopIdemTTL {
			recs = append(recs, Del(KindLoopIdem, k))
		}
	}
	return recs
}

// DefaultLoopRetention is how long a closed instance (COMPLETED, CANCELED, TERMINATED, FAILED,
// TIMED_OUT) stays with its audit events after it closed, as a workflow engine's retention period
// (Temporal's namespace retention): without one, every start and transition stayed in memory for
// good.
const DefaultLoopRetention = 30 * 24 * time.Hour

// PurgeClosed returns the deletions of at most max instances that closed more than retention
// before now, oldest first, each with its audit events. Open instances stay, whatever their age,
// and so does a closed one with an effect still PENDING (the runtime sends it again at its next
// start): a purged instance's effects are never sent again, so the tenant may forget them
// (LoopEffectsState.ForgetInstances).
func (s *LoopRunState) PurgeClosed(now time.Time, retention time.Duration, max int) []Record {
	type closed struct {
		id string
		at time.Time
	}
	var due []closed
	for id, in := range s.Instances {
		if !in.Status.Open() && in.ClosedAt != nil && now.Sub(*in.ClosedAt) > retention &&
			!slices.ContainsFunc(in.Effects, func(e LoopEffect) bool { return e.Status == LoopEffectPending }) {
			due = append(due, closed{id, *in.ClosedAt})
		}
	}
	slices.SortFunc(due, func(a, b closed) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	var recs []Record
	for _, c := range due[:min(len(due), max)] {
		recs = append(recs, Del(KindLoopEvent, c.id), Del(KindLoopInstance, c.id))
	}
	return recs
}

// ReferencesDigest reports whether an instance is bound to digest.
func (s *LoopRunState) ReferencesDigest(digest string) bool {
	_, ok := s.Definitions[digest]
	return ok
}

// LoopLifecycleEvents are the audit event types that are not transitions; each is an outbound
// event type of every domain (loop.<domain>.<type>).
var LoopLifecycleEvents = []string{LoopEventStarted, LoopEventCanceled, LoopEventTerminated, LoopEventSuspended, LoopEventResumed, LoopEventFailed}

// LoopEventTypes lists the outbound event types of a manifest: its transitions and the lifecycle.
func LoopEventTypes(m *LoopManifest) []string {
	var out []string
	prefix := "loop." + strings.ToLower(string(m.Domain)) + "."
	for _, e := range LoopLifecycleEvents {
		out = append(out, prefix+e)
	}
	for _, t := range m.Transitions {
		out = append(out, prefix+t.Name)
	}
	return out
}

// The built-in loops' event types are listed by GET /api/webhooks/event-types; any loop.* event
// is deliverable (DeliverableEvent), so those of an organization's own loops are too.
func init() {
	loops, err := BuiltinLoops()
	if err != nil {
		return
	}
	for _, b := range loops {
		m, err := ParseLoopManifest(b.Manifest)
		if err != nil {
			continue
		}
		for _, t := range LoopEventTypes(m) {
			RegisterWebhookEventType(t)
		}
	}
}
