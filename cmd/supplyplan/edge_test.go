package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Attacks on the listeners: bodies announced by Content-Length that never arrive, from callers
// with no key or with a key, must not make the process hold memory (docs/fasthttp.md).

// rssBytes is the resident set size of process pid.
func rssBytes(tb testing.TB, pid int) int64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatalf("read process status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				tb.Fatalf("parse %q: %v", line, err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc status")
	return 0
}

// rawRequest is one connection that sent a request's headers and the first bytes of its body.
type rawRequest struct {
	conn net.Conn
	br   *bufio.Reader
}

// openRaw connects to base and sends method path with headers and the first bytes of the body.
func openRaw(tb testing.TB, base, method, path string, headers map[string]string, first []byte) *rawRequest {
	tb.Helper()
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, u.Host)
	for k, v := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	if _, err := c.Write(append([]byte(b.String()), first...)); err != nil {
		tb.Fatal(err)
	}
	return &rawRequest{conn: c, br: bufio.NewReader(c)}
}

// response reads the response within d; ok is false when none came in time.
func (r *rawRequest) response(d time.Duration) (res *http.Response, body []byte, ok bool) {
	_ = r.conn.SetReadDeadline(time.Now().Add(d))
	res, err := http.ReadResponse(r.br, nil)
	if err != nil {
		return nil, nil, false
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	return res, body, true
}

func TestAnnouncedBodiesWithoutKeyAreRefusedFromHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	p := startProc(t, t.TempDir())
	pid := p.cmd.Process.Pid
	// A few requests first, so that the baseline includes a warmed-up server.
	for range 5 {
		doRequest(t, p.URL, "GET", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer " + p.Creds.Keys["VIEWER"]}, nil).Must(t, 200)
	}
	base := rssBytes(t, pid)

	cases := []struct {
		name    string
		path    string
		headers map[string]string
		status  int
		reason  string
		tools   bool
	}{
		{"no key", "/api/forecast/scenarios", map[string]string{}, 401, "KEY_MISSING", false},
		{"malformed key", "/api/forecast/scenarios", map[string]string{"Authorization": "Basic Zm9vOmJhcg=="}, 401, "KEY_MALFORMED", false},
		{"unknown key", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer sp_live_unknownunknownunknown"}, 401, "KEY_UNKNOWN", false},
		{"role key over the JSON limit", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer " + p.Creds.Keys["PLANNER"]}, 413, "", false},
		{"no key on an import route", "/api/import/catalog", map[string]string{}, 401, "KEY_MISSING", false},
		{"role key on an import route", "/api/import/catalog", map[string]string{"x-api-key": p.Creds.Keys["PLANNER"]}, 403, "", false},
		{"unknown import key", "/api/import/catalog", map[string]string{"x-api-key": "sp_imp_unknownunknownunknown"}, 401, "KEY_UNKNOWN", false},
		{"tool call, unknown key", "/tools/call", map[string]string{"x-api-key": "sp_tool_unknownunknown"}, 401, "KEY_UNKNOWN", true},
		{"tool call, no key, over the limit", "/tools/call", map[string]string{}, 413, "", true},
		{"mcp, unknown key", "/mcp?org=demo", map[string]string{"Authorization": "Bearer sp_tool_unknownunknown", "Accept": "application/json, text/event-stream"}, 401, "", true},
	}
	const conns = 40
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reqs := make([]*rawRequest, conns)
			for i := range reqs {
				h := map[string]string{"Content-Type": "application/json", "Content-Length": "33554432"}
				for k, v := range tc.headers {
					h[k] = v
				}
				base := p.URL
				if tc.tools {
					base = p.Tools
				}
				reqs[i] = openRaw(t, base, "POST", tc.path, h, []byte("{"))
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			var peak int64
			for _, r := range reqs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					res, body, ok := r.response(10 * time.Second)
					if !ok {
						t.Errorf("no response within 10 s")
						return
					}
					if res.StatusCode != tc.status {
						t.Errorf("status %d, want %d: %s", res.StatusCode, tc.status, body)
					}
					if tc.reason != "" && !bytes.Contains(body, []byte(`"reason":"`+tc.reason+`"`)) {
						t.Errorf("body %s lacks reason %s", body, tc.reason)
					}
					if !res.Close {
						t.Errorf("connection left open with an unread body")
					}
					if d := time.Since(start); d > 5*time.Second {
						t.Errorf("answered after %s", d)
					}
					rss := rssBytes(t, pid)
					mu.Lock()
					peak = max(peak, rss)
					mu.Unlock()
				}()
			}
			wg.Wait()
			peak = max(peak, rssBytes(t, pid))
			t.Logf("%d connections announcing 32 MiB: RSS %.1f MiB before, peak %.1f MiB", conns, mib(base), mib(peak))
			// 40 x 32 MiB would be 1280 MiB; a request refused on its headers allocates nothing.
			if peak-base > 48<<20 {
				t.Errorf("RSS grew by %.1f MiB (from %.1f to %.1f MiB)", mib(peak-base), mib(base), mib(peak))
			}
			for _, r := range reqs {
				_ = r.conn.Close()
			}
		})
	}
	eventually(t, 30*time.Second, func() error {
		if rss := rssBytes(t, pid); rss-base > 32<<20 {
			return fmt.Errorf("RSS %.1f MiB, %.1f MiB above the baseline", mib(rss), mib(rss-base))
		}
		return nil
	})
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func TestBodiesInFlightAreBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const (
		limit  = 16 << 20
		budget = 64 << 20
		slots  = budget / limit
		conns  = 12
	)
	p := startProc(t, t.TempDir(), "--import-max-bytes", strconv.Itoa(limit), "--body-bytes-in-flight", strconv.Itoa(budget))
	pid := p.cmd.Process.Pid
	imp := map[string]string{"x-api-key": p.Creds.Keys["import"], "Content-Type": "application/json",
		"Content-Length": strconv.Itoa(limit)}
	doRequest(t, p.URL, "GET", "/api/import/jobs", map[string]string{"x-api-key": p.Creds.Keys["import"]}, nil).Must(t, 200)
	base := rssBytes(t, pid)

	// Each admitted request holds its full limit until its body arrives or its connection goes.
	reqs := make([]*rawRequest, conns)
	for i := range reqs {
		reqs[i] = openRaw(t, p.URL, "POST", "/api/import/catalog", imp, []byte("{"))
	}
	var admitted []*rawRequest
	refused := 0
	for _, r := range reqs {
		res, body, ok := r.response(2 * time.Second)
		if !ok {
			admitted = append(admitted, r) // still reading its body
			continue
		}
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || !res.Close {
			t.Errorf("refused request: %d Retry-After %q close %v: %s", res.StatusCode, res.Header.Get("Retry-After"), res.Close, body)
		}
		refused++
	}
	if len(admitted) != slots || refused != conns-slots {
		t.Fatalf("%d admitted and %d refused, want %d and %d", len(admitted), refused, slots, conns-slots)
	}
	// The admitted bodies arrive almost whole: now the budget's bytes are resident.
	filler := bytes.Repeat([]byte(" "), limit-2)
	for _, r := range admitted {
		if _, err := r.conn.Write(filler); err != nil {
			t.Fatal(err)
		}
	}
	var full int64
	eventually(t, 30*time.Second, func() error {
		full = rssBytes(t, pid)
		if full-base < budget*3/4 {
			return fmt.Errorf("RSS %.1f MiB: the admitted bodies are not resident yet", mib(full))
		}
		return nil
	})
	// One body completes (its last byte closes the JSON): the import is accepted and its budget
	// freed, so a new request is admitted where one was refused.
	if _, err := admitted[0].conn.Write([]byte("}")); err != nil {
		t.Fatal(err)
	}
	if res, body, ok := admitted[0].response(30 * time.Second); !ok || res.StatusCode != 400 || !bytes.Contains(body, []byte("products")) {
		t.Fatalf("completed body: ok %v %v %s", ok, res, body)
	}
	next := openRaw(t, p.URL, "POST", "/api/import/catalog", imp, []byte("{"))
	if res, body, ok := next.response(2 * time.Second); ok {
		t.Fatalf("request after a slot was freed: %d %s", res.StatusCode, body)
	}
	// The connections go: every reservation is released and the memory handed back.
	for _, r := range append(admitted[1:], next) {
		_ = r.conn.Close()
	}
	eventually(t, 30*time.Second, func() error {
		if rss := rssBytes(t, pid); rss-base > 24<<20 {
			return fmt.Errorf("RSS %.1f MiB, %.1f MiB above the baseline", mib(rss), mib(rss-base))
		}
		return nil
	})
	t.Logf("budget %d MiB: RSS %.1f MiB before, %.1f MiB with the admitted bodies resident, %.1f MiB after they went",
		budget>>20, mib(base), mib(full), mib(rssBytes(t, pid)))
	// A fresh request is admitted and served again.
	body := append([]byte(`{"products":[{"externalId":"P1","name":"One"}]}`), bytes.Repeat([]byte(" "), 1<<20)...)
	h := map[string]string{"x-api-key": p.Creds.Keys["import"], "Content-Type": "application/json", "Content-Length": strconv.Itoa(len(body))}
	last := openRaw(t, p.URL, "POST", "/api/import/catalog", h, body)
	if res, b, ok := last.response(30 * time.Second); !ok || res.StatusCode != 202 {
		t.Fatalf("import after the attack: ok %v %v %s", ok, res, b)
	}
}

func TestUnauthorizedSaysWhy(t *testing.T) {
	s := MustStart(t, "")
	org := s.Creds.Organization.ID
	created := s.Do("POST", "/api/platform/organizations/"+org+"/api-keys", s.Key("platform"), map[string]any{"role": "PLANNER"}).Must(t, 201)
	revoked := created["key"].(string)
	s.Do("DELETE", "/api/platform/organizations/"+org+"/api-keys/"+str(created, "apiKey", "id"), s.Key("platform"), nil).Must(t, 204)
	tools := "http://" + s.Main.Tools.Addr()

	cases := []struct {
		name, base, method, path string
		headers                  map[string]string
		reason, header           string
	}{
		{"bearer missing", s.URL, "GET", "/api/forecast/scenarios", nil, "KEY_MISSING", "authorization"},
		{"bearer empty", s.URL, "GET", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer "}, "KEY_MALFORMED", "authorization"},
		{"basic scheme", s.URL, "GET", "/api/forecast/scenarios", map[string]string{"Authorization": "Basic abc"}, "KEY_MALFORMED", "authorization"},
		{"not our key shape", s.URL, "GET", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer hunter2"}, "KEY_MALFORMED", "authorization"},
		{"unknown key", s.URL, "GET", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer sp_live_nope"}, "KEY_UNKNOWN", "authorization"},
		{"revoked key", s.URL, "POST", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer " + revoked}, "KEY_UNKNOWN", "authorization"},
		{"platform route, missing", s.URL, "GET", "/api/platform/organizations", nil, "KEY_MISSING", "authorization"},
		{"import missing", s.URL, "POST", "/api/import/catalog", nil, "KEY_MISSING", "x-api-key"},
		{"import malformed", s.URL, "POST", "/api/import/catalog", map[string]string{"x-api-key": "Bearer x"}, "KEY_MALFORMED", "x-api-key"},
		{"import unknown", s.URL, "GET", "/api/import/jobs", map[string]string{"x-api-key": "sp_imp_nope"}, "KEY_UNKNOWN", "x-api-key"},
		{"import revoked", s.URL, "GET", "/api/import/jobs", map[string]string{"x-api-key": revoked}, "KEY_UNKNOWN", "x-api-key"},
		{"tools malformed", tools, "GET", "/tools/list?org=demo", map[string]string{"Authorization": "Basic abc"}, "KEY_MALFORMED", "authorization"},
		{"tools unknown", tools, "POST", "/tools/call", map[string]string{"x-api-key": "sp_tool_nope"}, "KEY_UNKNOWN", "x-api-key"},
	}
	for _, tc := range cases {
		r := doRequest(t, tc.base, tc.method, tc.path, tc.headers, map[string]any{"name": "x"})
		m := r.JSON(t)
		details, _ := m["details"].(map[string]any)
		if r.Status != 401 || r.Code() != "UNAUTHORIZED" || str(m, "reason") != tc.reason || details[tc.header] == nil {
			t.Errorf("%s: %d %s, want 401 reason %s about %s", tc.name, r.Status, r.Body, tc.reason, tc.header)
		}
		if tc.base == s.URL && str(m, "error") != "Unauthorized" {
			t.Errorf("%s: error %q, want Unauthorized", tc.name, str(m, "error"))
		}
	}
	// The three reasons read differently on the tool service too (an organization that is not a
	// listed merchant needs a key).
	s.Do("POST", "/api/platform/organizations", s.Key("platform"), map[string]any{"slug": "quiet", "name": "Quiet"}).Must(t, 201)
	msgs := map[string]string{}
	for reason, h := range map[string]map[string]string{"KEY_MISSING": nil, "KEY_MALFORMED": {"Authorization": "Basic abc"},
		"KEY_UNKNOWN": {"Authorization": "Bearer sp_tool_nope"}} {
		r := doRequest(t, tools, "GET", "/tools/list?org=quiet", h, nil)
		m := r.JSON(t)
		if r.Status != 401 || str(m, "reason") != reason || r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("tools %s: %d %s", reason, r.Status, r.Body)
		}
		msgs[str(m, "error")] = reason
	}
	if len(msgs) != 3 {
		t.Errorf("tool service 401 messages not distinct: %v", msgs)
	}
}

// A body refused on its headers is never read, and the connection is closed after the response.
// The client is still sending it: the response must reach the client all the same (a close with
// unread input resets the connection, which can destroy the response; see http/linger.go).
func TestRefusedBodyStillGetsItsResponse(t *testing.T) {
	s := MustStart(t, "")
	k := s.Key("PLANNER")
	huge := `{"name":"` + strings.Repeat("x", 4<<20) + `"}`
	for i := range 40 {
		path := "/api/forecast/scenarios"
		if i%2 == 1 {
			path = "/api/forecast/events"
		}
		r := s.Do("POST", path, k, huge)
		if r.Status != 413 {
			t.Fatalf("request %d: status %d, want 413 (%s)", i, r.Status, r.Body)
		}
	}
}
