package supplyplan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// The loop runtime's audit: every change of an instance is one append-only LoopEvent, numbered
// from 1, chained by hash: hash = "sha256:" + hex(sha256(canonical(event) || prevHash)), where
// canonical(event) is the RFC 8785 (JCS) form of the event's JSON without its hash and prevHash
// members, and prevHash is the previous event's hash string ("" for the first event).
// VerifyLoopEvents recomputes the chain (GET /v1/instances/{id}/audit/verify).

// Audit event types.
const (
	LoopEventStarted    = "started"
	LoopEventTransition = "transition"
	LoopEventTimeout    = "timeout"
	LoopEventCanceled   = "canceled"
	LoopEventTerminated = "terminated"
	LoopEventSuspended  = "suspended"
	LoopEventResumed    = "resumed"
	LoopEventFailed     = "failed"
)

// LoopEvent is one audit event of an instance.
type LoopEvent struct {
	Seq              int64              `json:"seq"`
	InstanceID       string             `json:"instanceId"`
	Type             string             `json:"type"`
	From             string             `json:"from"`
	To               string             `json:"to"`
	Transition       string             `json:"transition,omitempty"`
	Status           LoopInstanceStatus `json:"status"`
	Actor            LoopActor          `json:"actor"`
	Reason           string             `json:"reason,omitempty"`
	RequestID        string             `json:"requestId,omitempty"`
	IdempotencyKey   string             `json:"idempotencyKey,omitempty"`
	DefinitionDigest string             `json:"definitionDigest"`
	OccurredAt       time.Time          `json:"occurredAt"`
	Payload          json.RawMessage    `json:"payload,omitempty"`
	PrevHash         string             `json:"prevHash"`
	Hash             string             `json:"hash"`
}

// canonical returns the JCS bytes of the event without hash and prevHash. It writes them directly,
// members in their sorted order, which is what canonicalizing the event's JSON gives
// (canonicalSlow, which the tests compare it with); an event holding a string that is not valid
// UTF-8 takes the slow path, whose replacement characters it then shares.
func (e LoopEvent) canonical() ([]byte, error) {
	strs := []string{e.Actor.Iss, e.Actor.Jti, e.Actor.Sub, e.Actor.Type, e.DefinitionDigest, e.From, e.IdempotencyKey,
		e.InstanceID, e.Reason, e.RequestID, string(e.Status), e.To, e.Transition, e.Type}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			return e.canonicalSlow()
		}
	}
	if y := e.OccurredAt.Year(); y < 0 || y > 9999 {
		return e.canonicalSlow()
	}
	buf := make([]byte, 0, 640+len(e.Payload)+len(e.PrevHash)+len(e.Reason)+len(e.IdempotencyKey))
	buf = append(buf, `{"actor":{`...)
	comma := false
	member := func(name string) {
		if comma {
			buf = append(buf, ',')
		}
		comma = true
		buf = append(buf, '"')
		buf = append(buf, name...)
		buf = append(buf, '"', ':')
	}
	if e.Actor.Iss != "" {
		member("iss")
		buf = appendCanonicalString(buf, e.Actor.Iss)
	}
	if e.Actor.Jti != "" {
		member("jti")
		buf = appendCanonicalString(buf, e.Actor.Jti)
	}
	member("sub")
	buf = appendCanonicalString(buf, e.Actor.Sub)
	member("type")
	buf = appendCanonicalString(buf, e.Actor.Type)
	buf = append(buf, '}')
	member("definitionDigest")
	buf = appendCanonicalString(buf, e.DefinitionDigest)
	member("from")
	buf = appendCanonicalString(buf, e.From)
	if e.IdempotencyKey != "" {
		member("idempotencyKey")
		buf = appendCanonicalString(buf, e.IdempotencyKey)
	}
	member("instanceId")
	buf = appendCanonicalString(buf, e.InstanceID)
	member("occurredAt")
	buf = append(buf, '"')
	buf = e.OccurredAt.AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, '"')
	if len(e.Payload) > 0 {
		member("payload")
		// A payload is stored canonical (normalizePayload); only the escapes the journal's JSON
		// encoder adds (\u003c for <, ...) need canonicalizing again.
		if !bytes.Contains(e.Payload, []byte(`\u`)) {
			buf = append(buf, e.Payload...)
		} else {
			c, err := CanonicalJSON(e.Payload)
			if err != nil {
				return nil, err
			}
			buf = append(buf, c...)
		}
	}
	if e.Reason != "" {
		member("reason")
		buf = appendCanonicalString(buf, e.Reason)
	}
	if e.RequestID != "" {
		member("requestId")
		buf = appendCanonicalString(buf, e.RequestID)
	}
	member("seq")
	buf = strconv.AppendInt(buf, e.Seq, 10)
	member("status")
	buf = appendCanonicalString(buf, string(e.Status))
	member("to")
	buf = appendCanonicalString(buf, e.To)
	if e.Transition != "" {
		member("transition")
		buf = appendCanonicalString(buf, e.Transition)
	}
	member("type")
	buf = appendCanonicalString(buf, e.Type)
	return append(buf, '}'), nil
}

// canonicalSlow canonicalizes the event's JSON (RFC 8785) through the generic canonicalizer.
func (e LoopEvent) canonicalSlow() ([]byte, error) {
	e.Hash, e.PrevHash = "", ""
	b, err := json.Marshal(struct {
		LoopEvent
		PrevHash string `json:"prevHash,omitempty"`
		Hash     string `json:"hash,omitempty"`
	}{LoopEvent: e})
	if err != nil {
		return nil, err
	}
	return CanonicalJSON(b)
}

// ComputeHash returns the event's hash from its content and PrevHash.
func (e LoopEvent) ComputeHash() (string, error) {
	c, err := e.canonical()
	if err != nil {
		return "", fmt.Errorf("canonicalize loop event: %w", err)
	}
	// One buffer for the canonical bytes and the previous hash (canonical leaves room for it), one
	// string for the result.
	sum := sha256.Sum256(append(c, e.PrevHash...))
	var out [len("sha256:") + 2*sha256.Size]byte
	copy(out[:], "sha256:")
	hex.Encode(out[len("sha256:"):], sum[:])
	return string(out[:]), nil
}

// LoopAuditVerification is the answer of GET /v1/instances/{id}/audit/verify.
type LoopAuditVerification struct {
	InstanceID string `json:"instanceId"`
	Valid      bool   `json:"valid"`
	Events     int    `json:"events"`
	LastSeq    int64  `json:"lastSeq"`
	LastHash   string `json:"lastHash"`
	// FirstInvalidSeq is the first event whose seq, prevHash or hash does not check (0: none).
	FirstInvalidSeq int64  `json:"firstInvalidSeq,omitempty"`
	Problem         string `json:"problem,omitempty"`
}

// VerifyLoopEvents recomputes the hash chain of an instance's events (in seq order) and checks
// that it ends at lastHash (the instance's own record of its newest hash).
func VerifyLoopEvents(instanceID string, evs []LoopEvent, lastHash string) LoopAuditVerification {
	v := LoopAuditVerification{InstanceID: instanceID, Events: len(evs), Valid: true}
	prev := ""
	fail := func(seq int64, format string, args ...any) LoopAuditVerification {
		v.Valid, v.FirstInvalidSeq, v.Problem = false, seq, fmt.Sprintf(format, args...)
		return v
	}
	for i, e := range evs {
		switch {
		case e.Seq != int64(i)+1:
			return fail(int64(i)+1, "event %d has seq %d", i+1, e.Seq)
		case e.InstanceID != instanceID:
			return fail(e.Seq, "event %d belongs to instance %s", e.Seq, e.InstanceID)
		case e.PrevHash != prev:
			return fail(e.Seq, "event %d: prevHash %q is not the hash of event %d", e.Seq, e.PrevHash, e.Seq-1)
		}
		h, err := e.ComputeHash()
		if err != nil {
			return fail(e.Seq, "event %d: %v", e.Seq, err)
		}
		if h != e.Hash {
			return fail(e.Seq, "event %d: its content hashes to %s, not the recorded %s", e.Seq, h, e.Hash)
		}
		prev = e.Hash
		v.LastSeq, v.LastHash = e.Seq, e.Hash
	}
	if prev != lastHash {
		return fail(v.LastSeq+1, "the chain ends at %q but the instance records %q (events missing)", prev, lastHash)
	}
	return v
}

// EventsAfter returns up to limit events of an instance after seq afterSeq.
func (s *LoopRunState) EventsAfter(id string, afterSeq int64, limit int) ([]LoopEvent, error) {
	if _, ok := s.Instances[id]; !ok {
		return nil, NotFound("Instance")
	}
	evs := s.Events[id]
	out := []LoopEvent{}
	for i := max(afterSeq, 0); i < int64(len(evs)) && len(out) < limit; i++ {
		out = append(out, *evs[i])
	}
	return out, nil
}

// VerifyAudit recomputes an instance's hash chain.
func (s *LoopRunState) VerifyAudit(id string) (LoopAuditVerification, error) {
	in, ok := s.Instances[id]
	if !ok {
		return LoopAuditVerification{}, NotFound("Instance")
	}
	evs := make([]LoopEvent, len(s.Events[id]))
	for i, e := range s.Events[id] {
		evs[i] = *e
	}
	return VerifyLoopEvents(id, evs, in.LastHash), nil
}
