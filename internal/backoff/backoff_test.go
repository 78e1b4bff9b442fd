package backoff_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/backoff"
)

var quick = supplyplan.RetryPolicy{Base: time.Microsecond, Factor: 2, Cap: time.Millisecond, MaxAttempts: 4}

func TestRetryStopsAfterMaxAttempts(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	err := backoff.Retry(context.Background(), quick, func(attempt int) error {
		if attempt != calls {
			t.Fatalf("attempt %d on call %d", attempt, calls)
		}
		calls++
		return boom
	})
	if !errors.Is(err, boom) || calls != 4 {
		t.Fatalf("err %v after %d calls, want boom after 4", err, calls)
	}
}

func TestRetryUntilSuccess(t *testing.T) {
	calls := 0
	err := backoff.Retry(context.Background(), supplyplan.RetryPolicy{Base: time.Microsecond, Factor: 2, Cap: time.Millisecond},
		func(int) error {
			calls++
			if calls < 7 {
				return errors.New("not yet")
			}
			return nil
		})
	if err != nil || calls != 7 {
		t.Fatalf("err %v after %d calls, want nil after 7 (no attempt limit)", err, calls)
	}
}

func TestRetryPermanent(t *testing.T) {
	bad := errors.New("bad input")
	calls := 0
	err := backoff.Retry(context.Background(), quick, func(int) error {
		calls++
		return backoff.Permanent(bad)
	})
	if err != bad || calls != 1 {
		t.Fatalf("err %v after %d calls, want the unwrapped error after 1", err, calls)
	}
	if backoff.Permanent(nil) != nil {
		t.Fatal("Permanent(nil) is not nil")
	}
}

func TestRetryEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := backoff.Retry(ctx, supplyplan.RetryPolicy{Base: time.Hour, Factor: 2, Cap: time.Hour}, func(int) error {
		calls++
		cancel() // ends the wait before the first retry
		return errors.New("fails")
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("err %v after %d calls, want context.Canceled after 1", err, calls)
	}
	if err := backoff.Retry(ctx, quick, func(int) error { t.Fatal("called with an ended context"); return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
