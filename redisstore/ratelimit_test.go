package redisstore_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/testdeps"
	"github.com/supplyplan/supplyplan/redisstore"
)

func openRateLimits(tb testing.TB, prefix string) *redisstore.RateLimits {
	tb.Helper()
	ctx := context.Background()
	s := redisstore.NewRateLimits(redisstore.Config{Addr: testdeps.Redis(tb), Prefix: prefix})
	if err := s.Open(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close(ctx) })
	return s
}

// TestRateLimitsMirrorTheDomainRule takes tokens at random times through Redis and through
// supplyplan.TakeTokens side by side: both allow and refuse the same requests and report the
// same tokens.
func TestRateLimitsMirrorTheDomainRule(t *testing.T) {
	ctx := context.Background()
	s := openRateLimits(t, "sptest:"+supplyplan.NewID("t")+":")
	rng := rand.New(rand.NewPCG(3, 4))
	limits := []supplyplan.RateLimit{{RPS: 5, Burst: 4}, {RPS: 2, Burst: 6}}
	buckets := []supplyplan.RateBucket{{Key: "rl:k:read:key1", Limit: limits[0]}, {Key: "rl:o:read:org1", Limit: limits[1]}}
	state := make([]supplyplan.TokenBucket, 2)
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	allowed, refused := 0, 0
	for step := range 400 {
		now = now.Add(time.Duration(rng.IntN(400)) * time.Millisecond) // Redis keeps milliseconds
		want := make([]supplyplan.RateTaken, 2)
		wantOK := supplyplan.TakeTokens(state, limits, now.UnixNano(), want)
		got := make([]supplyplan.RateTaken, 2)
		ok, err := s.TakeTokens(ctx, buckets, now, got)
		if err != nil {
			t.Fatal(err)
		}
		if ok != wantOK {
			t.Fatalf("step %d: redis ok %v, rule %v (state %+v)", step, ok, wantOK, state)
		}
		for i := range got {
			if got[i].Remaining != want[i].Remaining || absDur(got[i].Wait-want[i].Wait) > time.Millisecond || absDur(got[i].Full-want[i].Full) > time.Millisecond {
				t.Fatalf("step %d bucket %d: redis %+v, rule %+v", step, i, got[i], want[i])
			}
		}
		if ok {
			allowed++
		} else {
			refused++
		}
	}
	if allowed == 0 || refused == 0 {
		t.Fatalf("allowed %d, refused %d: the walk did not exercise both outcomes", allowed, refused)
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// TestRateLimitsSharedBetweenNodes: two stores (two nodes) with the same prefix drain one bucket.
func TestRateLimitsSharedBetweenNodes(t *testing.T) {
	ctx := context.Background()
	prefix := "sptest:" + supplyplan.NewID("t") + ":"
	a, b := openRateLimits(t, prefix), openRateLimits(t, prefix)
	bs := []supplyplan.RateBucket{{Key: "rl:k:write:k1", Limit: supplyplan.RateLimit{RPS: 1, Burst: 3}}}
	now := time.Now()
	out := make([]supplyplan.RateTaken, 1)
	for i, s := range []*redisstore.RateLimits{a, b, a} {
		if ok, err := s.TakeTokens(ctx, bs, now, out); err != nil || !ok || out[0].Remaining != 2-i {
			t.Fatalf("take %d: ok %v remaining %d err %v", i, ok, out[0].Remaining, err)
		}
	}
	ok, err := b.TakeTokens(ctx, bs, now, out)
	if err != nil || ok || out[0].Wait != time.Second {
		t.Fatalf("fourth take: ok %v wait %v err %v", ok, out[0].Wait, err)
	}
	// A second later one token is back, for either node.
	if ok, err := a.TakeTokens(ctx, bs, now.Add(time.Second), out); err != nil || !ok {
		t.Fatalf("after a second: ok %v err %v", ok, err)
	}
}
