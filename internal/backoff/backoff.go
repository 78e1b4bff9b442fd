// Package backoff runs an operation again while it fails, its attempts spaced by a
// supplyplan.RetryPolicy. It is the service's one retry mechanism: outbound deliveries journal
// their next attempt at RetryPolicy.Delay (they outlive a restart), and what retries in place
// (import writes, demand-signal sink calls, dead-letter writes) calls Retry with a policy.
package backoff

import (
	"context"
	"errors"
	"time"

	"github.com/supplyplan/supplyplan"
)

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }

// Permanent wraps err so that Retry returns it (unwrapped) at once; nil stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// Retry calls fn (attempt counts from 0) until it returns nil or a Permanent error, p.MaxAttempts
// attempts failed (0: no limit) or ctx ends; before retry n it waits p.Delay(n). It returns nil,
// fn's last error (a Permanent one unwrapped), or ctx's error when ctx ended before an attempt or
// during a wait.
func Retry(ctx context.Context, p supplyplan.RetryPolicy, fn func(attempt int) error) error {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn(attempt)
		if err == nil {
			return nil
		}
		if perm, ok := errors.AsType[*permanentError](err); ok {
			return perm.err
		}
		if p.MaxAttempts > 0 && attempt+1 >= p.MaxAttempts {
			return err
		}
		t := time.NewTimer(p.Delay(attempt + 1))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
