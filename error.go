package supplyplan

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Error codes. Every transport maps them to its own status with one table.
const (
	EVALIDATION     = "VALIDATION_ERROR"
	EUNAUTHORIZED   = "UNAUTHORIZED"
	EFORBIDDEN      = "FORBIDDEN"
	ETENANTREQUIRED = "TENANT_CONTEXT_REQUIRED"
	EFEATURE        = "FEATURE_NOT_ENABLED"
	ENOTFOUND       = "NOT_FOUND"
	ECONFLICT       = "INVALID_STATE_TRANSITION"
	ETOOLARGE       = "PAYLOAD_TOO_LARGE"
	ERATELIMITED    = "RATE_LIMITED"
	ENOTIMPLEMENTED = "NOT_IMPLEMENTED"
	EUNAVAILABLE    = "UNAVAILABLE"
	EINTERNAL       = "INTERNAL"
)

// Error is the one error type clients see. Message is the human text rendered as `error`.
type Error struct {
	Code    string
	Message string
	// Details maps a field path (e.g. "assumptions.globalLiftPct") to what is wrong with it.
	Details map[string][]string
	// Feature and Entitlement are set on FEATURE_NOT_ENABLED.
	Feature     string
	Entitlement string
	// RetryAfter is set on RATE_LIMITED: when the same request may succeed.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if len(e.Details) == 0 {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	keys := make([]string, 0, len(e.Details))
	for k := range e.Details {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+strings.Join(e.Details[k], "; "))
	}
	return fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, strings.Join(parts, ", "))
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL otherwise, "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if g := GateError(err); g != nil {
		return g.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err: the *Error's message or a generic text.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error"
}

// NotFound returns the NOT_FOUND error for a resource kind, e.g. NotFound("Scenario").
func NotFound(kind string) *Error {
	return &Error{Code: ENOTFOUND, Message: kind + " not found"}
}

// Conflict returns an INVALID_STATE_TRANSITION error.
func Conflict(format string, args ...any) *Error {
	return &Error{Code: ECONFLICT, Message: fmt.Sprintf(format, args...)}
}

// FieldErrors collects validation messages per field path.
type FieldErrors map[string][]string

// Add records msg against field.
func (f FieldErrors) Add(field, format string, args ...any) {
	f[field] = append(f[field], fmt.Sprintf(format, args...))
}

// Has reports whether field already has an error.
func (f FieldErrors) Has(field string) bool { return len(f[field]) > 0 }

// Err returns a VALIDATION_ERROR carrying the collected details, or nil when there are none.
func (f FieldErrors) Err() error {
	if len(f) == 0 {
		return nil
	}
	return &Error{Code: EVALIDATION, Message: "Validation failed", Details: map[string][]string(f)}
}

// Invalid returns a VALIDATION_ERROR for a single field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: EVALIDATION, Message: "Validation failed",
		Details: map[string][]string{field: {fmt.Sprintf(format, args...)}}}
}
