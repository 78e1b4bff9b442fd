package supplyplan

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// SignalSink applies live demand signals durably: in the service it is the tenant actor in front of
// the DemandStore. The Kafka consumer and the in-process stream (package streams) both call it.
// signal_path.go describes the whole write path of a signal and who owns each step.
type SignalSink interface {
	// ApplySignals applies signals (all of organization orgID, already validated by NormalizeSignal)
	// and returns once the result is durable, with one outcome per signal in order. A signal whose
	// SignalID was applied before is SignalDuplicate and changes nothing. A non-nil error means no
	// outcome is known: the caller may repeat the whole call (the Kafka consumer does, with
	// backoff), so the call must be idempotent. A permanent problem with a signal (unknown tenant,
	// unknown product) is a SignalRejected outcome, never an error. It must return soon after ctx
	// is cancelled (a revoked partition waits for it). The sink may keep the slice.
	ApplySignals(ctx context.Context, orgID string, signals []DemandSignal) ([]SignalOutcome, error)
}

// SignalStatus is what became of one signal handed to a SignalSink.
type SignalStatus uint8

// Signal statuses. The zero value is invalid so that a forgotten outcome is never read as applied.
const (
	SignalApplied   SignalStatus = iota + 1 // durably added to its week
	SignalDuplicate                         // its SignalID was applied before; nothing changed
	SignalRejected                          // refused for good; Reason says why
)

func (s SignalStatus) String() string {
	switch s {
	case SignalApplied:
		return "APPLIED"
	case SignalDuplicate:
		return "DUPLICATE"
	case SignalRejected:
		return "REJECTED"
	}
	return "INVALID"
}

// MarshalText renders the status as APPLIED, DUPLICATE or REJECTED.
func (s SignalStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Rejection reasons of SignalOutcome.Reason. Sinks may use other codes; these are the common ones.
const (
	RejectInvalidSignal   = "INVALID_SIGNAL"   // a field is missing or out of range (see NormalizeSignal)
	RejectUnknownTenant   = "UNKNOWN_TENANT"   // no organization with that id
	RejectUnknownProduct  = "UNKNOWN_PRODUCT"  // the organization has no such SKU
	RejectUnknownLocation = "UNKNOWN_LOCATION" // the organization has no such location
	RejectLateSignal      = "LATE_SIGNAL"      // its week is before the dedup window (SignalDedupWeeks)
)

// MaxSignalLead is how far after the clock a signal's occurredAt may be: a signal dated far ahead
// would move the organization's dedup window (SignalDedupWeeks) with it and make every signal of
// today late.
const MaxSignalLead = 24 * time.Hour

// SignalOutcome is the result for one signal.
type SignalOutcome struct {
	Status SignalStatus `json:"status"`
	// Reason is a machine-readable code when Status is SignalRejected (e.g. RejectUnknownTenant).
	Reason string `json:"reason,omitempty"`
	// Message explains a rejection to a human.
	Message string `json:"message,omitempty"`
}

// Rejected returns a SignalRejected outcome.
func Rejected(reason, message string) SignalOutcome {
	return SignalOutcome{Status: SignalRejected, Reason: reason, Message: message}
}

// MaxSignalIDLen bounds the length of the id fields of a signal (bytes).
const MaxSignalIDLen = 256

// NormalizeSignal validates s and normalizes it in place: an empty channel becomes ChannelAll and
// OccurredAt becomes UTC truncated to milliseconds. Errors are VALIDATION_ERROR with one detail per
// bad field. Quantity may be any number within ±MaxNumber (negative values correct earlier
// signals); OccurredAt lies in [MinTime, MaxTime] (a time that did not parse arrives as zero).
func NormalizeSignal(s *DemandSignal) error { return normalizeSignal(s, true) }

// NormalizeDecodedSignal is NormalizeSignal for a signal whose strings its decoder has already
// found to be valid UTF-8 (the Kafka consumer's JSON parser declines any other string): it skips
// that check, the costliest part of the validation of a short id, and is otherwise the same.
func NormalizeDecodedSignal(s *DemandSignal) error { return normalizeSignal(s, false) }

func normalizeSignal(s *DemandSignal, checkUTF8 bool) error {
	var details map[string][]string
	bad := func(field, msg string) {
		if details == nil {
			details = map[string][]string{}
		}
		details[field] = append(details[field], msg)
	}
	if msg := checkSignalID(s.SignalID, true, checkUTF8); msg != "" {
		bad("signalId", msg)
	}
	if msg := checkSignalID(s.OrganizationID, true, checkUTF8); msg != "" {
		bad("organizationId", msg)
	}
	if msg := checkSignalID(s.SKU, true, checkUTF8); msg != "" {
		bad("skuId", msg)
	}
	if msg := checkSignalID(s.Location, true, checkUTF8); msg != "" {
		bad("locationId", msg)
	}
	if msg := checkSignalID(s.Channel, false, checkUTF8); msg != "" {
		bad("channel", msg)
	}
	if !NumberOK(s.Quantity) {
		bad("quantity", "must be a finite number "+NumberRange)
	}
	if s.OccurredAt.IsZero() {
		bad("occurredAt", "is required: an ISO date-time "+TimeRange)
	} else if !InTimeRange(s.OccurredAt) {
		bad("occurredAt", TimeMessage)
	} else if s.OccurredAt.After(time.Now().Add(MaxSignalLead)) {
		bad("occurredAt", "is more than a day in the future")
	}
	if details != nil {
		return &Error{Code: EVALIDATION, Message: "invalid demand signal", Details: details}
	}
	if isBlank(s.Channel) {
		s.Channel = ChannelAll
	}
	if s.OccurredAt.Location() != time.UTC || s.OccurredAt.Nanosecond()%int(time.Millisecond) != 0 {
		s.OccurredAt = s.OccurredAt.UTC().Truncate(time.Millisecond)
	}
	return nil
}

// checkSignalID returns what is wrong with an id field, or "".
func checkSignalID(v string, required, checkUTF8 bool) string {
	switch {
	case isBlank(v):
		if required {
			return "is required"
		}
	case len(v) > MaxSignalIDLen:
		return "is longer than 256 bytes"
	case checkUTF8 && !utf8.ValidString(v):
		return "is not valid UTF-8"
	}
	return ""
}

// isBlank reports whether v is empty or only white space; cheap for the usual non-blank ASCII id.
func isBlank(v string) bool {
	if v == "" {
		return true
	}
	if c := v[0]; c < utf8.RuneSelf && c != ' ' && (c < '\t' || c > '\r') {
		return false
	}
	return strings.TrimSpace(v) == ""
}
