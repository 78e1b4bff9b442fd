package supplyplan

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// The gate's errors reach a client as 503 UNAVAILABLE with Retry-After: 1, wrapped or not; any
// other error is not a gate error.
func TestGateError(t *testing.T) {
	for _, err := range []error{ErrRestoring, fmt.Errorf("tenant: %w", ErrRestoring), &ErrNotOwner{Org: "o", Owner: "10.0.0.2:8080"},
		fmt.Errorf("tx: %w", &ErrNotOwner{Org: "o"})} {
		g := GateError(err)
		if g == nil || g.Code != EUNAVAILABLE || g.RetryAfter != time.Second {
			t.Fatalf("%v: %+v", err, g)
		}
		if ErrorCode(err) != EUNAVAILABLE {
			t.Fatalf("%v: code %s", err, ErrorCode(err))
		}
	}
	if g := GateError(errors.New("disk full")); g != nil {
		t.Fatalf("plain error: %+v", g)
	}
	if ErrorCode(errors.New("disk full")) != EINTERNAL {
		t.Fatal("plain error is internal")
	}
}
