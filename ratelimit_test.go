package supplyplan

import (
	"testing"
	"time"
)

func TestTakeTokens(t *testing.T) {
	lim := []RateLimit{{RPS: 2, Burst: 3}, {RPS: 1, Burst: 1}}
	b := make([]TokenBucket, 2)
	out := make([]RateTaken, 2)
	sec := int64(time.Second)
	// A new bucket is full: the org bucket (burst 1) allows one request, then refuses; the key's
	// bucket is not charged for the refused one.
	if !TakeTokens(b, lim, 0, out) || out[0].Remaining != 2 || out[1].Remaining != 0 {
		t.Fatalf("first take: %+v %+v", b, out)
	}
	if TakeTokens(b, lim, 0, out) || out[0].Remaining != 2 || out[1].Wait != time.Second {
		t.Fatalf("second take: %+v %+v", b, out)
	}
	// Half a second later the key's bucket is full again (2 + 0.5*2 = 3), the org's holds half a
	// token: still refused, half a second to wait.
	if TakeTokens(b, lim, sec/2, out) || out[0].Remaining != 3 || out[1].Wait != 500*time.Millisecond || out[0].Full != 0 {
		t.Fatalf("at 0.5 s: %+v %+v", b, out)
	}
	if !TakeTokens(b, lim, sec, out) || out[0].Remaining != 2 || out[0].Full != 500*time.Millisecond || out[1].Full != time.Second {
		t.Fatalf("at 1 s: %+v %+v", b, out)
	}
	// Refill never passes the burst; a clock going back refills nothing.
	if TakeTokens(b, lim, sec/4, out) {
		t.Fatalf("clock back: %+v %+v", b, out)
	}
	TakeTokens(b, lim, 100*sec, out)
	if b[0].Tokens != 2 || b[1].Tokens != 0 {
		t.Fatalf("after 100 s: %+v", b)
	}
}

func TestRateLimitsOverAndValidate(t *testing.T) {
	d := RateLimits{RPS: 10, Burst: 20, OrgRPS: 40, OrgBurst: 80, ImportRPS: 1, ImportBurst: 2}
	got := d.Over(&RateLimits{Burst: 5, ImportRPS: 0.5})
	if want := (RateLimits{RPS: 10, Burst: 5, OrgRPS: 40, OrgBurst: 80, ImportRPS: 0.5, ImportBurst: 2}); got != want {
		t.Fatalf("Over = %+v, want %+v", got, want)
	}
	if got.Key(RateImport) != (RateLimit{0.5, 2}) || got.Org(RateRead) != (RateLimit{40, 80}) || got.Key(RateWrite) != (RateLimit{10, 5}) {
		t.Fatalf("limits by class: %+v", got)
	}
	if err := (RateLimits{RPS: -1}).Validate(); ErrorCode(err) != EVALIDATION {
		t.Fatalf("negative rps: %v", err)
	}
}
