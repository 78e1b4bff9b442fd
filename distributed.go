package supplyplan

import (
	"errors"
	"time"
)

// The distributed mode (docs/distributed.md) spreads organizations over nodes by journal
// partition. A node serves an organization only when it owns the organization's partition and
// has restored it; otherwise the core answers with one of these errors, which the services pass
// up unchanged (the HTTP layer forwards the request to the owner or answers 503).

// ErrRestoring: this node owns the organization's partition and is rebuilding its state
// (snapshot + journal tail); retry in a moment (503 with Retry-After: 1).
var ErrRestoring = errors.New("organization restoring")

// ErrFenced: a journal refused a write because a newer owner took the partition (this node is a
// zombie for it: the new owner writes its entries and snapshots from now on). streams.ErrFenced
// is this error.
var ErrFenced = errors.New("journal partition owner fenced by a newer owner")

// ErrNotOwner: another node owns the organization's partition (or no node does yet).
type ErrNotOwner struct {
	Org   string // the organization (or the stream's placement key: "platform" for the platform)
	Owner string // "host:port" of the owning node's REST API; "" when unknown
}

func (e *ErrNotOwner) Error() string {
	if e.Owner == "" {
		return "organization " + e.Org + " is not served by this node (owner unknown)"
	}
	return "organization " + e.Org + " is served by the node at " + e.Owner
}

// Owners answers who serves an organization now; nil in embedded mode.
type Owners interface {
	// Owner returns the REST address of the node that owns org's partition ("" unknown), whether
	// that node is this one, and whether this node is still restoring it.
	Owner(org string) (addr string, local bool, restoring bool, err error)
}

// GateError is the client's answer to the ownership gate's errors (the organization's partition
// moved or is restoring between the routing check and the actor): a 503 with Retry-After: 1, like
// the routing's own. nil for any other error.
func GateError(err error) *Error {
	var no *ErrNotOwner
	switch {
	case errors.Is(err, ErrRestoring):
		return &Error{Code: EUNAVAILABLE, Message: "The organization is being restored on this node; retry in a moment", RetryAfter: time.Second}
	case errors.As(err, &no):
		return &Error{Code: EUNAVAILABLE, Message: "The organization moved to another node; retry in a moment", RetryAfter: time.Second}
	}
	return nil
}
