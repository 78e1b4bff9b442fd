package wait

import (
	"errors"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	Eventually(t, time.Second, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("%d calls, want 3", calls)
	}
}

// fakeTB records a failure instead of failing the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f)
}

func TestEventuallyFailsAfterTheTimeout(t *testing.T) {
	tb := &fakeTB{TB: t}
	start := time.Now()
	func() {
		defer func() { _ = recover() }()
		Eventually(tb, 50*time.Millisecond, func() error { return errors.New("never") })
	}()
	if tb.failed == "" {
		t.Fatal("a condition that never holds did not fail the test")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before the timeout", d)
	}
}
