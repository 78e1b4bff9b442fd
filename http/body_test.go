package http

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// mustListen starts a Server with no services on a free port: the payment webhook reads its body
// without a key, which is what these tests need.
func mustListen(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	cfg.Addr = "127.0.0.1:0"
	cfg.PaymentWebhookSecret = "whsec_test"
	s := NewServer(cfg, Services{})
	if err := s.Open(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// send writes raw (a whole HTTP request, possibly partial) and returns the response, or ok=false
// when none comes within d.
func send(tb testing.TB, addr, raw string, d time.Duration) (c net.Conn, res *http.Response, body string, ok bool) {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, raw); err != nil {
		tb.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	res, err = http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, nil, "", false
	}
	b, _ := io.ReadAll(res.Body)
	return c, res, string(b), true
}

// eventually retries fn until it returns nil or the timeout passes.
func eventually(tb testing.TB, timeout time.Duration, fn func() error) {
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
		time.Sleep(10 * time.Millisecond)
	}
}

func chunked(n int) string {
	var b strings.Builder
	for n > 0 {
		k := min(n, 700)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", k, strings.Repeat("x", k))
		n -= k
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

func TestBodyLimitIsAppliedBeforeReading(t *testing.T) {
	s := mustListen(t, Config{BodyLimit: 1024})
	head := "POST /webhooks/payment-provider HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	tests := []struct {
		name   string
		raw    string
		status int
		close  bool
	}{
		// Announced over the limit, one byte sent: refused at once without waiting for the rest.
		{"content-length over the limit", head + "Content-Length: 4096\r\n\r\n{", 413, true},
		{"chunked over the limit", head + "Transfer-Encoding: chunked\r\n\r\n" + chunked(4096), 413, true},
		// Within the limit the body is read and the handler runs (the signature is missing).
		{"content-length within", head + "Content-Length: 2\r\n\r\n{}", 400, false},
		{"chunked within", head + "Transfer-Encoding: chunked\r\n\r\n" + chunked(1000), 400, false},
		{"body shorter than announced", head + "Content-Length: 10\r\nConnection: close\r\n\r\n{}", 0, true},
	}
	for _, tc := range tests {
		c, res, body, ok := send(t, s.Addr(), tc.raw, 2*time.Second)
		if tc.status == 0 {
			// The client half-closes: the server sees the body end early and answers 400.
			_ = c.(*net.TCPConn).CloseWrite()
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || res.StatusCode != 400 {
				t.Errorf("%s: %v %v", tc.name, res, err)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: no response within 2 s", tc.name)
			continue
		}
		if res.StatusCode != tc.status || res.Close != tc.close {
			t.Errorf("%s: %d close %v %s, want %d close %v", tc.name, res.StatusCode, res.Close, body, tc.status, tc.close)
		}
	}
	if got := s.budget.InFlight(); got != 0 {
		t.Errorf("%d body bytes still reserved", got)
	}
}

func TestBodyBudgetRefusesWith503(t *testing.T) {
	s := mustListen(t, Config{BodyLimit: 1000, BodyBudget: NewBodyBudget(1500)})
	head := "POST /webhooks/payment-provider HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	// The first request reserves 1000 bytes and waits for them.
	first, _, _, ok := send(t, s.Addr(), head+"Content-Length: 1000\r\n\r\n{", 300*time.Millisecond)
	if ok {
		t.Fatal("the first request was answered before its body arrived")
	}
	eventually(t, 5*time.Second, func() error {
		if got := s.budget.InFlight(); got != 1000 {
			return fmt.Errorf("%d bytes reserved", got)
		}
		return nil
	})
	// The second does not fit: 503 with Retry-After, nothing read.
	_, res, body, ok := send(t, s.Addr(), head+"Content-Length: 1000\r\n\r\n{", 2*time.Second)
	if !ok || res.StatusCode != 503 || res.Header.Get("Retry-After") != "1" || !res.Close || !strings.Contains(body, `"UNAVAILABLE"`) {
		t.Fatalf("second request: ok %v %v %s", ok, res, body)
	}
	// A chunked body is admitted step by step and refused when a step does not fit.
	_, res, _, ok = send(t, s.Addr(), head+"Transfer-Encoding: chunked\r\n\r\n"+chunked(900), 2*time.Second)
	if !ok || res.StatusCode != 503 {
		t.Fatalf("chunked request: ok %v %v", ok, res)
	}
	// The first request's connection goes: its reservation is released and a request fits again.
	_ = first.Close()
	eventually(t, 5*time.Second, func() error {
		if got := s.budget.InFlight(); got != 0 {
			return fmt.Errorf("%d bytes still reserved after the connection went", got)
		}
		return nil
	})
	_, res, _, ok = send(t, s.Addr(), head+"Content-Length: 2\r\n\r\n{}", 2*time.Second)
	if !ok || res.StatusCode != 400 {
		t.Fatalf("request after the release: ok %v %v", ok, res)
	}
}
