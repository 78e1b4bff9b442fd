package main

import (
	"net/url"
	"testing"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/testdeps"
)

// TestConsoleSessionsSharedInRedis: two nodes holding the same tenant and sharing a real Redis
// (--redis-addr). A session made on node A works on node B, a POST on B takes A's CSRF token, and
// signing out on B ends the session on A too.
func TestConsoleSessionsSharedInRedis(t *testing.T) {
	addr := testdeps.Redis(t)
	prefix := "sptest:" + supplyplan.NewID("console") + ":"
	redis := func(c *Config) { c.RedisAddr, c.RedisPrefix = addr, prefix }
	dirA, dirB := t.TempDir(), t.TempDir()
	seed := MustStart(t, dirA)
	seed.Stop()
	copyDir(t, dirA, dirB)
	a := MustStart(t, dirA, redis)
	b := MustStart(t, dirB, redis)

	cc := newConsoleClient(t, a)
	if r := cc.signIn(a.Key("ADMIN")); r.Status != 303 {
		t.Fatalf("sign-in on a: %d %s", r.Status, r.Body)
	}
	onB := *cc
	onB.base = "http://" + b.Main.Console.Addr() // the jar's cookie is sent to b too (same host)
	if r := onB.do("GET", "/recommendations", nil, nil); r.Status != 200 {
		t.Fatalf("a's session on b: %d %v", r.Status, r.Header)
	}
	if r := onB.do("POST", "/recommendations/generate", url.Values{"_csrf": {cc.csrf}}, nil); r.Status == 401 || r.Status == 403 {
		t.Fatalf("POST on b with a's CSRF token: %d %s", r.Status, r.Body)
	}
	if n := b.Main.Console.SessionCount(); n != 1 {
		t.Fatalf("b counts %d sessions, want the one made on a", n)
	}
	var token string
	u, _ := url.Parse(cc.base)
	for _, c := range cc.c.Jar.Cookies(u) {
		if c.Name == "sp_console" {
			token = c.Value
		}
	}
	if token == "" {
		t.Fatal("no session cookie")
	}
	if r := onB.do("POST", "/logout", url.Values{"_csrf": {cc.csrf}}, nil); r.Status != 303 {
		t.Fatalf("sign-out on b: %d %s", r.Status, r.Body)
	}
	// The browser dropped the cookie on sign-out: replay the old one on a.
	old := newConsoleClient(t, a)
	if r := old.do("GET", "/recommendations", nil, map[string]string{"Cookie": "sp_console=" + token}); r.Status != 303 {
		t.Fatalf("session signed out on b still works on a: %d", r.Status)
	}
}
