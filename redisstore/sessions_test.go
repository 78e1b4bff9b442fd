package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/testdeps"
	"github.com/supplyplan/supplyplan/redisstore"
)

// mustStore opens a store on the test Redis under prefix (one client: one node).
func mustStore(tb testing.TB, prefix string) *redisstore.Store {
	tb.Helper()
	ctx := context.Background()
	s := redisstore.New(redisstore.Config{Addr: testdeps.Redis(tb), Prefix: prefix})
	if err := s.Open(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close(ctx) })
	return s
}

func eventuallyTrue(tb testing.TB, timeout time.Duration, fn func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConsoleSessionsSharedBetweenNodes(t *testing.T) {
	ctx := context.Background()
	prefix := "sptest:" + supplyplan.NewID("t") + ":"
	a, b := mustStore(t, prefix), mustStore(t, prefix)
	now := time.Now()
	sess := supplyplan.ConsoleSession{ID: "s1", Secret: "sp_admin_x", CSRF: "c1", Created: now,
		Expires: now.Add(time.Hour), Idle: 10 * time.Minute}
	if err := a.PutSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	got, ok, err := b.TouchSession(ctx, "s1", now.Add(time.Minute))
	if err != nil || !ok || got.Secret != "sp_admin_x" || got.CSRF != "c1" || got.Idle != 10*time.Minute ||
		!got.Expires.Equal(sess.Expires.Truncate(time.Millisecond)) {
		t.Fatalf("node b: %+v %v %v", got, ok, err)
	}
	if err := b.SetSessionImportKey(ctx, "s1", "sp_import_y"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := a.TouchSession(ctx, "s1", now.Add(2*time.Minute)); got.ImportKey != "sp_import_y" {
		t.Fatalf("import key set on b, seen on a: %q", got.ImportKey)
	}
	if n, err := a.SessionCount(ctx); err != nil || n != 1 {
		t.Fatalf("count %d %v", n, err)
	}
	// Revocation on one node holds on the other, and a late import key does not revive it.
	if err := b.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := a.SetSessionImportKey(ctx, "s1", "sp_import_z"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.TouchSession(ctx, "s1", now.Add(3*time.Minute)); ok || err != nil {
		t.Fatalf("revoked session still live on a: %v %v", ok, err)
	}
	if n, _ := a.SessionCount(ctx); n != 0 {
		t.Fatalf("%d sessions after revocation", n)
	}
	if _, ok, err := a.TouchSession(ctx, "nope", now); ok || err != nil {
		t.Fatalf("unknown session: %v %v", ok, err)
	}
}

func TestConsoleSessionsIdleAndAbsoluteTTL(t *testing.T) {
	ctx := context.Background()
	prefix := "sptest:" + supplyplan.NewID("t") + ":"
	s := mustStore(t, prefix)
	raw := redis.NewClient(&redis.Options{Addr: testdeps.Redis(t)})
	t.Cleanup(func() { raw.Close() })
	// Idle: Redis ends an unused session by its TTL (real time).
	now := time.Now()
	if err := s.PutSession(ctx, supplyplan.ConsoleSession{ID: "idle", Secret: "k", CSRF: "c", Created: now,
		Expires: now.Add(time.Hour), Idle: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.TouchSession(ctx, "idle", time.Now()); !ok {
		t.Fatal("fresh session gone")
	}
	eventuallyTrue(t, 5*time.Second, func() error {
		if n, _ := s.SessionCount(ctx); n != 0 {
			return fmt.Errorf("idle session still stored (%d)", n)
		}
		return nil
	})
	// Used within its idle time it lives; the TTL never reaches past the absolute end.
	now = time.Now()
	if err := s.PutSession(ctx, supplyplan.ConsoleSession{ID: "abs", Secret: "k", CSRF: "c", Created: now,
		Expires: now.Add(8 * time.Hour), Idle: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 9; i++ { // used every 50 minutes (the clock the node passes)
		if _, ok, err := s.TouchSession(ctx, "abs", now.Add(time.Duration(i)*50*time.Minute)); !ok || err != nil {
			t.Fatalf("session ended after %d uses: %v", i, err)
		}
	}
	// At 7h30 the TTL is the 30 minutes left, not the hour of idle time.
	if ttl := raw.PTTL(ctx, prefix+"console:session:abs").Val(); ttl <= 29*time.Minute || ttl > 30*time.Minute {
		t.Fatalf("TTL %v near the end, want at most the 30 minutes left", ttl)
	}
	if _, ok, _ := s.TouchSession(ctx, "abs", now.Add(8*time.Hour+time.Second)); ok {
		t.Fatal("session outlived its absolute lifetime")
	}
	if n, _ := s.SessionCount(ctx); n != 0 {
		t.Fatal("expired session not deleted")
	}
}
