package http

import (
	"context"
	"testing"
	"time"
)

func TestConsoleSessionsExpire(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	mem := NewMemorySessions().(*memSessions)
	st := &sessionStore{store: mem, ttl: 8 * time.Hour, idle: time.Hour, now: func() time.Time { return now }}
	ctx := context.Background()
	token, sess, _ := st.create(ctx, "sp_live_x")
	if sess.CSRF == "" || sess.CSRF == token || len(token) < 40 {
		t.Fatalf("token %q, csrf %q", token, sess.CSRF)
	}
	if _, ok := mem.m[token]; ok {
		t.Fatal("sessions are keyed by the cookie value itself")
	}
	// Used every 50 minutes it lives until the absolute lifetime.
	for i := 0; i < 9; i++ {
		now = now.Add(50 * time.Minute)
		if _, ok, _ := st.get(ctx, token); !ok {
			t.Fatalf("session ended after %v", time.Duration(i+1)*50*time.Minute)
		}
	}
	now = now.Add(50 * time.Minute) // 8h20m
	if _, ok, _ := st.get(ctx, token); ok || st.count() != 0 {
		t.Fatal("session outlived its TTL")
	}
	// Idle for longer than idle: gone.
	token, _, _ = st.create(ctx, "sp_live_x")
	now = now.Add(61 * time.Minute)
	if _, ok, _ := st.get(ctx, token); ok {
		t.Fatal("idle session still valid")
	}
	if _, ok, _ := st.get(ctx, ""); ok {
		t.Fatal("empty cookie accepted")
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{"/forecast?sku=1": "/forecast?sku=1", "//evil.example/": "/", "https://evil.example": "/",
		"/\\evil.example": "/", "": "/", "/login": "/"} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
