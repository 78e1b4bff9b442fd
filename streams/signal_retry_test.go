package streams

import (
	"testing"
	"time"
)

// TestSignalRetryDelays: retry n of a sink call or dead-letter write waits a random time in
// [d/2, d], d doubling from RetryMin up to RetryMax.
func TestSignalRetryDelays(t *testing.T) {
	lo, hi := 100*time.Millisecond, 5*time.Second
	p := signalRetry(lo, hi)
	for n := 1; n <= 12; n++ {
		d := min(lo<<(n-1), hi)
		least, most := time.Duration(1<<62), time.Duration(0)
		for range 2000 {
			w := p.Delay(n)
			least, most = min(least, w), max(most, w)
		}
		if least < d/2 || most > d {
			t.Errorf("retry %d waits %v..%v, want within [%v, %v]", n, least, most, d/2, d)
		}
		if most-least < d/4 { // the jitter spreads over the range
			t.Errorf("retry %d waits %v..%v: no jitter over [%v, %v]", n, least, most, d/2, d)
		}
	}
}
