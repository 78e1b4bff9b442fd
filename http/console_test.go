package http

import (
	"testing"
	"time"
)

func TestConsoleSessionsExpire(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	st := &sessionStore{m: map[string]*consoleSession{}, ttl: 8 * time.Hour, idle: time.Hour, now: func() time.Time { return now }}
	token, sess := st.create("sp_live_x")
	if sess.csrf == "" || sess.csrf == token || len(token) < 40 {
		t.Fatalf("token %q, csrf %q", token, sess.csrf)
	}
	if _, ok := st.m[token]; ok {
		t.Fatal("sessions are keyed by the cookie value itself")
	}
	// Used every 50 minutes it lives until the absolute lifetime.
	for i := 0; i < 9; i++ {
		now = now.Add(50 * time.Minute)
		if _, ok := st.get(token); !ok {
			t.Fatalf("session ended after %v", time.Duration(i+1)*50*time.Minute)
		}
	}
	now = now.Add(50 * time.Minute) // 8h20m
	if _, ok := st.get(token); ok || st.count() != 0 {
		t.Fatal("session outlived its TTL")
	}
	// Idle for longer than idle: gone.
	token, _ = st.create("sp_live_x")
	now = now.Add(61 * time.Minute)
	if _, ok := st.get(token); ok {
		t.Fatal("idle session still valid")
	}
	if _, ok := st.get(""); ok {
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
