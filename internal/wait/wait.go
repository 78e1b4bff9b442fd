// Package wait is the eventually-helper of tests: poll a condition until it holds, never sleep a
// guessed time and hope.
package wait

import (
	"testing"
	"time"
)

// Poll is how often Eventually checks its condition.
const Poll = 10 * time.Millisecond

// Eventually calls fn until it returns nil, and fails the test with fn's last error when timeout
// passes first.
func Eventually(tb testing.TB, timeout time.Duration, fn func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("condition not met within %s: %v", timeout, err)
		}
		time.Sleep(Poll)
	}
}
