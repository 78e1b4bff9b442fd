package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// testServer is a Main running in-process on a random port with a temporary data dir.
type testServer struct {
	t     testing.TB
	Main  *Main
	URL   string
	Data  string
	Creds supplyplan.Credentials
}

// MustStart starts a server on dataDir ("" for a fresh temporary one) and stops it at cleanup.
func MustStart(tb testing.TB, dataDir string, mutate ...func(*Config)) *testServer {
	tb.Helper()
	if dataDir == "" {
		dataDir = tb.TempDir()
	}
	cfg := DefaultConfig()
	cfg.DataDir = dataDir
	cfg.APIAddr = "127.0.0.1:0"
	cfg.RegistryAddr, cfg.ToolsAddr, cfg.LoopCatalogAddr, cfg.LoopRuntimeAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.ConsoleAddr = "127.0.0.1:0"
	cfg.RequestTimeout = 10 * time.Second
	for _, f := range mutate {
		f(&cfg)
	}
	level := slog.LevelWarn
	if os.Getenv("SUPPLYPLAN_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	m := NewMain(cfg, log, io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		_ = m.Close(ctx)
		tb.Fatalf("open: %v", err)
	}
	s := &testServer{t: tb, Main: m, URL: "http://" + m.API.Addr(), Data: dataDir}
	s.Creds = mustReadCreds(tb, dataDir)
	tb.Cleanup(func() { s.Stop() })
	return s
}

// Stop closes the server (idempotent).
func (s *testServer) Stop() {
	if s.Main == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Main.Close(ctx); err != nil {
		s.t.Errorf("close: %v", err)
	}
	s.Main = nil
}

// Restart stops the server and starts a new one on the same data dir with the same settings.
func (s *testServer) Restart() *testServer {
	s.t.Helper()
	cfg := s.Main.Config
	s.Stop()
	return MustStart(s.t, s.Data, func(c *Config) { *c = cfg; c.APIAddr = "127.0.0.1:0" })
}

func mustReadCreds(tb testing.TB, dir string) supplyplan.Credentials {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "credentials.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var c supplyplan.Credentials
	if err := json.Unmarshal(b, &c); err != nil {
		tb.Fatal(err)
	}
	return c
}

// Key returns a demo key by credentials name (ADMIN, MANAGER, PLANNER, VIEWER, import, platform).
func (s *testServer) Key(name string) string {
	k, ok := s.Creds.Keys[name]
	if !ok {
		s.t.Fatalf("no %s key in credentials", name)
	}
	return k
}

// resp is a decoded HTTP response.
type resp struct {
	Status int
	Body   []byte
	Header http.Header
}

// JSON decodes the body into a generic map.
func (r resp) JSON(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		tb.Fatalf("body %q is not a JSON object: %v", r.Body, err)
	}
	return m
}

// Code returns the error code of an error body.
func (r resp) Code() string {
	var m struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(r.Body, &m)
	return m.Code
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// Do sends a request with an optional bearer key and a body (string, []byte or a value to encode).
func (s *testServer) Do(method, path, key string, body any) resp {
	s.t.Helper()
	return doRequest(s.t, s.URL, method, path, map[string]string{"Authorization": bearerOf(key)}, body)
}

func bearerOf(key string) string {
	if key == "" {
		return ""
	}
	return "Bearer " + key
}

func doRequest(tb testing.TB, base, method, path string, headers map[string]string, body any) resp {
	tb.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			tb.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	res, err := httpClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp{Status: res.StatusCode, Body: b, Header: res.Header}
}

// Must fails the test unless the response has status want; it returns the decoded body.
func (r resp) Must(tb testing.TB, want int) map[string]any {
	tb.Helper()
	if r.Status != want {
		tb.Fatalf("status %d, want %d; body %s", r.Status, want, r.Body)
	}
	if len(bytes.TrimSpace(r.Body)) == 0 {
		return nil
	}
	return r.JSON(tb)
}

// str digs a string out of nested maps: str(m, "scenario", "id").
func str(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = mm[p]
	}
	s, _ := cur.(string)
	if s == "" && cur != nil {
		if _, isStr := cur.(string); !isStr {
			return fmt.Sprint(cur)
		}
	}
	return s
}

// list digs an array out of a map.
func list(m map[string]any, key string) []any {
	l, _ := m[key].([]any)
	return l
}

// eventually retries fn until it returns nil or the timeout passes.
func eventually(tb testing.TB, timeout time.Duration, fn func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = fn(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("condition not met within %s: %v", timeout, err)
}

// tryRequest is doRequest that returns transport errors instead of failing the test.
func tryRequest(base, method, path string, headers map[string]string, body any) (resp, error) {
	enc, err := json.Marshal(body)
	if err != nil {
		return resp{}, err
	}
	req, err := http.NewRequest(method, base+path, bytes.NewReader(enc))
	if err != nil {
		return resp{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, err
	}
	return resp{Status: res.StatusCode, Body: b, Header: res.Header}, nil
}

// Import posts an import with the demo import key, waits for its job to finish and returns the
// final job status body.
func (s *testServer) Import(kind string, body any) map[string]any {
	s.t.Helper()
	return s.ImportWith(s.Key("import"), kind, body)
}

// ImportWith is Import with a given import key.
func (s *testServer) ImportWith(key, kind string, body any) map[string]any {
	s.t.Helper()
	r := doRequest(s.t, s.URL, "POST", "/api/import/"+kind, map[string]string{"x-api-key": key}, body)
	acc := r.Must(s.t, 202)
	return s.WaitJob(key, str(acc, "jobId"))
}

// WaitJob polls a job until it is COMPLETED or FAILED.
func (s *testServer) WaitJob(key, jobID string) map[string]any {
	s.t.Helper()
	var job map[string]any
	eventually(s.t, 60*time.Second, func() error {
		job = doRequest(s.t, s.URL, "GET", "/api/import/status/"+jobID, map[string]string{"x-api-key": key}, nil).Must(s.t, 200)
		if st := str(job, "status"); st != "COMPLETED" && st != "FAILED" {
			return fmt.Errorf("job %s is %s", jobID, st)
		}
		return nil
	})
	return job
}

// SeedCatalog imports the products and creates the locations (through inventory rows of the first
// product with zero stock).
func (s *testServer) SeedCatalog(products, locations []string) {
	s.t.Helper()
	var ps, ls []map[string]any
	for _, p := range products {
		ps = append(ps, map[string]any{"externalId": p, "name": "Product " + p})
	}
	if job := s.Import("catalog", map[string]any{"products": ps}); str(job, "status") != "COMPLETED" || str(job, "failedCount") != "0" {
		s.t.Fatalf("seed catalog: %v", job)
	}
	for _, l := range locations {
		ls = append(ls, map[string]any{"skuId": products[0], "locationId": l, "locationName": "Location " + l})
	}
	if len(ls) > 0 {
		if job := s.Import("inventory", map[string]any{"levels": ls}); str(job, "failedCount") != "0" {
			s.t.Fatalf("seed locations: %v", job)
		}
	}
}

// principalOf is an ADMIN principal of the demo organization, for calling services directly.
func principalOf(s *testServer) supplyplan.Principal {
	return supplyplan.Principal{KeyID: "test", OrgID: s.Creds.Organization.ID, Role: supplyplan.RoleAdmin}
}
