package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/supplyplan/supplyplan"
	sphttp "github.com/supplyplan/supplyplan/http"
	"github.com/supplyplan/supplyplan/streams"
)

// scrape reads the operations listener's /metrics into series -> value.
func scrape(tb testing.TB, s *testServer) (map[string]float64, string) {
	tb.Helper()
	res, err := httpClient.Get("http://" + s.Main.OpsAddr() + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		tb.Fatalf("/metrics: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			tb.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out, string(b)
}

// family sums the series of a metric name whose labels contain every one of labels.
func family(m map[string]float64, name string, labels ...string) (sum float64, n int) {
	for k, v := range m {
		base, lbl, _ := strings.Cut(k, "{")
		if base != name {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(lbl, l)
		}
		if ok {
			sum += v
			n++
		}
	}
	return sum, n
}

// TestMetricsAfterWorkload drives every metric family through a real workload (HTTP reads and
// writes, imports that complete and fail, a webhook delivery that is retried, Kafka signals with a
// dead letter, forecasts computed then served from the cache) and scrapes /metrics.
func TestMetricsAfterWorkload(t *testing.T) {
	const topic = "ops.demand-signals"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic, topic+".dlq"), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	rcv := startReceiver(t)
	rcv.SetStatus(func(n int) int {
		if n < 1 {
			return 500
		}
		return 204
	})
	s := MustStart(t, "", outboundTestConfig(""), func(c *Config) {
		c.OpsAddr = "127.0.0.1:0"
		c.KafkaBrokers, c.KafkaTopic, c.KafkaGroup = brokers[0], topic, "ops-test"
	})
	org := s.Creds.Organization.ID
	_, secret := createEndpoint(t, s, rcv.URL+"/in", "import.completed")
	rcv.SetSecrets(secret)
	s.SeedCatalog([]string{"P", "Q"}, []string{"L1"})
	recs := []any{}
	for w := -20; w <= -1; w++ {
		recs = append(recs, map[string]any{"skuId": "P", "locationId": "L1", "weekStarting": monday(w).Format("2006-01-02"), "actualDemand": 10 + w%3})
	}
	checkCounts(t, s.Import("demand-history", map[string]any{"records": recs}), len(recs), 0)
	// A job whose every row is refused ends FAILED.
	if job := s.Import("inventory", map[string]any{"levels": []any{map[string]any{"skuId": "NOPE", "locationId": "L1", "quantityOnHand": 1}}}); str(job, "status") != "FAILED" {
		t.Fatalf("job = %v", job)
	}
	v := s.Key("VIEWER")
	for range 3 {
		s.Do("GET", "/api/forecast?productMasterId=P&locationId=L1&horizonWeeks=4", v, nil).Must(t, 200)
	}
	s.Do("GET", "/api/forecast/scenarios/nope", v, nil).Must(t, 404)
	s.Do("GET", "/no/such/route", v, nil).Must(t, 404)
	s.Do("GET", "/api/forecast/scenarios", "", nil).Must(t, 401)

	sigs := []supplyplan.DemandSignal{}
	for i := range 50 {
		sigs = append(sigs, supplyplan.DemandSignal{SignalID: fmt.Sprintf("ops-%d", i), OrganizationID: org, SKU: "P", Location: "L1",
			Quantity: 1, OccurredAt: monday(-1)})
	}
	sigs = append(sigs, supplyplan.DemandSignal{SignalID: "ops-bad", OrganizationID: org, SKU: "NOPE", Location: "L1", Quantity: 1, OccurredAt: monday(-1)})
	p := streams.NewSignalProducer(streams.SignalProducerConfig{Brokers: brokers, Topic: topic})
	if err := p.Open(); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(t.Context(), sigs); err != nil {
		t.Fatal(err)
	}
	_ = p.Close(t.Context())

	var m map[string]float64
	var text string
	eventually(t, 30*time.Second, func() error {
		m, text = scrape(t, s)
		for _, c := range []struct {
			name   string
			labels []string
			min    float64
		}{
			{"supplyplan_kafka_dead_lettered_total", nil, 1},
			{"supplyplan_kafka_messages_fetched_total", nil, float64(len(sigs))},
			{"supplyplan_deliveries_total", []string{`target="endpoint"`, `outcome="retrying"`}, 1},
			{"supplyplan_deliveries_total", []string{`target="endpoint"`, `outcome="succeeded"`}, 1},
		} {
			if got, _ := family(m, c.name, c.labels...); got < c.min {
				return fmt.Errorf("%s%v = %v, want at least %v", c.name, c.labels, got, c.min)
			}
		}
		if lag, n := family(m, "supplyplan_kafka_consumer_lag", `topic="`+topic+`"`); n == 0 || lag != 0 {
			return fmt.Errorf("kafka lag %v over %d partitions, want 0 once everything is read", lag, n)
		}
		return nil
	})

	checks := []struct {
		name     string
		labels   []string
		min, max float64
	}{
		{"supplyplan_http_requests_total", []string{`route="/api/forecast"`, `method="GET"`, `status="200"`}, 3, 3},
		{"supplyplan_http_request_duration_seconds_count", []string{`route="/api/forecast"`, `method="GET"`}, 3, 3},
		{"supplyplan_http_requests_total", []string{`route="/api/forecast/scenarios/:id"`, `status="404"`}, 1, 1},
		{"supplyplan_http_requests_total", []string{`route="unmatched"`, `method="GET"`, `status="404"`}, 1, 1},
		{"supplyplan_http_requests_total", []string{`route="/api/forecast/scenarios"`, `status="401"`}, 1, 1},
		{"supplyplan_http_requests_total", []string{`route="/api/import/catalog"`, `method="POST"`, `status="202"`}, 1, 1},
		{"supplyplan_tenants_loaded", nil, 1, 1},
		{"supplyplan_actor_mailbox_depth", []string{`kind="tenant"`}, 0, 0}, // nothing waits once the workload is done
		{"supplyplan_journal_append_duration_seconds_count", nil, 10, math.Inf(1)},
		{"supplyplan_journal_fsync_duration_seconds_count", nil, 1, math.Inf(1)},
		{"supplyplan_journal_group_entries_count", nil, 1, math.Inf(1)},
		{"supplyplan_import_jobs_total", []string{`status="PENDING"`}, 4, 4},
		{"supplyplan_import_jobs_total", []string{`status="COMPLETED"`}, 3, 3},
		{"supplyplan_import_jobs_total", []string{`status="FAILED"`}, 1, 1},
		{"supplyplan_import_rows_total", []string{`outcome="applied"`}, float64(2 + 1 + len(recs)), float64(2 + 1 + len(recs))},
		{"supplyplan_import_rows_total", []string{`outcome="failed"`}, 1, 1},
		{"supplyplan_import_job_rows_per_second_count", nil, 1, 4}, // jobs with a measurable duration
		{"supplyplan_import_jobs_running", nil, 0, 0},
		{"supplyplan_forecast_computations_total", nil, 1, math.Inf(1)},
		{"supplyplan_forecast_cache_hits_total", nil, 2, math.Inf(1)},
		{"supplyplan_forecast_cache_entries", nil, 1, math.Inf(1)},
		{"go_goroutines", nil, 1, math.Inf(1)},
		{"process_cpu_seconds_total", nil, 0, math.Inf(1)},
	}
	for _, c := range checks {
		got, n := family(m, c.name, c.labels...)
		if n == 0 || got < c.min || got > c.max {
			t.Errorf("%s%v = %v (%d series), want %v to %v", c.name, c.labels, got, n, c.min, c.max)
		}
	}
	// Latency sums are durations: positive, and below what the test took.
	if sum, _ := family(m, "supplyplan_http_request_duration_seconds_sum", `route="/api/forecast"`); sum <= 0 || sum > 60 {
		t.Errorf("latency sum of /api/forecast = %v s", sum)
	}
	if sum, _ := family(m, "supplyplan_journal_group_entries_sum"); sum < m["supplyplan_journal_group_entries_count"] {
		t.Errorf("journal group entries sum %v below the number of groups %v", sum, m["supplyplan_journal_group_entries_count"])
	}
	// Histograms are Prometheus ones (le buckets, +Inf equal to the count), with metadata.
	if !strings.Contains(text, "# TYPE supplyplan_http_request_duration_seconds histogram") ||
		m[`supplyplan_http_request_duration_seconds_bucket{server="api",route="/api/forecast",method="GET",le="+Inf"}`] != 3 {
		t.Errorf("request latency histogram is not a Prometheus histogram:\n%s", grepLines(text, "supplyplan_http_request_duration_seconds"))
	}
	// Low cardinality: no tenant id, key or raw path in any label.
	for _, secret := range []string{org, v, s.Key("import"), "/api/forecast/scenarios/nope", "/no/such/route"} {
		if strings.Contains(text, secret) {
			t.Errorf("the metrics name %q", secret)
		}
	}
	// pprof moved to the operations listener.
	res, err := httpClient.Get("http://" + s.Main.OpsAddr() + "/debug/pprof/")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("pprof on the ops listener: %v %v", res, err)
	}
	res.Body.Close()
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestOpsListenerOffByDefault: without --ops-addr nothing listens and nothing is recorded.
func TestOpsListenerOffByDefault(t *testing.T) {
	s := MustStart(t, "")
	if s.Main.OpsAddr() != "" || s.Main.Metrics != nil {
		t.Fatalf("ops listener %q, metrics %v", s.Main.OpsAddr(), s.Main.Metrics)
	}
	// The older --debug-addr serves the same listener.
	d := MustStart(t, "", func(c *Config) { c.DebugAddr = "127.0.0.1:0" })
	if m, _ := scrape(t, d); len(m) == 0 {
		t.Fatal("no metrics on --debug-addr")
	}
}

// records returns the JSON log records written so far.
func (b *syncBuffer) records(tb testing.TB) []map[string]any {
	tb.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range bytes.Split(b.b.Bytes(), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			tb.Fatalf("log line %q is not JSON: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// startLogged starts a server whose log is JSON lines at info into buf.
func startJSONLogged(t *testing.T, buf io.Writer, mutate ...func(*Config)) *testServer {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.APIAddr = "127.0.0.1:0"
	cfg.RegistryAddr, cfg.ToolsAddr, cfg.LoopCatalogAddr, cfg.LoopRuntimeAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.ConsoleAddr = "127.0.0.1:0"
	cfg.LogLevel, cfg.LogFormat = "info", "json"
	for _, f := range mutate {
		f(&cfg)
	}
	log, err := newLogger(io.MultiWriter(buf, testLogSink()), "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMain(cfg, log, io.Discard)
	m.LogOutput = io.MultiWriter(buf, testLogSink()) // request lines through flatHandler, as under serve
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		_ = m.Close(ctx)
		t.Fatalf("open: %v", err)
	}
	s := &testServer{t: t, Main: m, URL: "http://" + m.API.Addr(), Data: cfg.DataDir}
	s.Creds = mustReadCreds(t, cfg.DataDir)
	t.Cleanup(s.Stop)
	return s
}

func testLogSink() io.Writer {
	if os.Getenv("SUPPLYPLAN_TEST_LOG") != "" {
		return os.Stderr
	}
	return io.Discard
}

// requestLine finds the request log record with the given request id.
func requestLine(tb testing.TB, buf *syncBuffer, id string) map[string]any {
	tb.Helper()
	var found map[string]any
	eventually(tb, 5*time.Second, func() error {
		for _, r := range buf.records(tb) {
			if r["msg"] == "request" && r["requestId"] == id {
				found = r
				return nil
			}
		}
		return fmt.Errorf("no request line with requestId %s", id)
	})
	return found
}

func TestRequestLogLines(t *testing.T) {
	buf := &syncBuffer{}
	rcv := startReceiver(t)
	rcv.SetStatus(func(n int) int {
		if n < 1 {
			return 503
		}
		return 204
	})
	s := startJSONLogged(t, buf, outboundTestConfig(""))
	org := s.Creds.Organization.ID
	v := s.Key("VIEWER")

	// A client's X-Request-Id is kept and echoed; the line names route, status, org and duration.
	r := doRequest(t, s.URL, "GET", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer " + v, "X-Request-Id": "client-req-1"}, nil)
	if r.Status != 200 || r.Header.Get("X-Request-Id") != "client-req-1" {
		t.Fatalf("status %d, X-Request-Id %q", r.Status, r.Header.Get("X-Request-Id"))
	}
	l := requestLine(t, buf, "client-req-1")
	if l["level"] != "INFO" || l["route"] != "/api/forecast/scenarios" || l["method"] != "GET" || l["status"] != 200.0 ||
		l["org"] != org || l["code"] != nil {
		t.Fatalf("request line = %v", l)
	}
	if d, ok := l["duration"].(float64); !ok || d <= 0 || d > 10e9 { // nanoseconds in JSON
		t.Fatalf("duration = %v", l["duration"])
	}

	// Without one (or with one that is not a plain token) an id is generated and echoed.
	idRe := regexp.MustCompile(`^[0-9a-f]{16}-[0-9a-z]+$`)
	var ids []string
	for _, h := range []map[string]string{{"Authorization": "Bearer " + v}, {"Authorization": "Bearer " + v, "X-Request-Id": "bad id with spaces"}} {
		r = doRequest(t, s.URL, "GET", "/api/forecast/scenarios/sc_missing", h, nil)
		id := r.Header.Get("X-Request-Id")
		if r.Status != 404 || !idRe.MatchString(id) {
			t.Fatalf("status %d, generated X-Request-Id %q", r.Status, id)
		}
		ids = append(ids, id)
		// 4xx at info with the error code, the route template (not the path).
		l = requestLine(t, buf, id)
		if l["level"] != "INFO" || l["status"] != 404.0 || l["code"] != "NOT_FOUND" || l["route"] != "/api/forecast/scenarios/:id" || l["org"] != org {
			t.Fatalf("404 line = %v", l)
		}
	}
	if ids[0] == ids[1] {
		t.Fatalf("generated ids repeat: %v", ids)
	}

	// A refused key: 401 with its code, no organization.
	r = doRequest(t, s.URL, "GET", "/api/forecast/scenarios", map[string]string{"X-Request-Id": "anon-1"}, nil)
	if l = requestLine(t, buf, "anon-1"); r.Status != 401 || l["code"] != "UNAUTHORIZED" || l["org"] != nil {
		t.Fatalf("401 line = %v", l)
	}

	// 5xx at error: the payment webhook without a secret answers 503.
	r = doRequest(t, s.URL, "POST", "/webhooks/payment-provider", map[string]string{"X-Request-Id": "pay-1"}, `{}`)
	if l = requestLine(t, buf, "pay-1"); r.Status != 503 || l["level"] != "ERROR" || l["code"] != "UNAVAILABLE" || l["route"] != "/webhooks/payment-provider" {
		t.Fatalf("503 (%d) line = %v", r.Status, l)
	}

	// A failed delivery attempt is a WARN line naming the delivery, the answer and the next attempt.
	_, secret := createEndpoint(t, s, rcv.URL+"/in", "import.completed")
	rcv.SetSecrets(secret)
	s.SeedCatalog([]string{"A"}, nil)
	eventually(t, 10*time.Second, func() error {
		for _, r := range buf.records(t) {
			if r["msg"] == "delivery attempt failed" {
				if r["level"] != "WARN" || r["org"] != org || r["statusCode"] != 503.0 || r["attempt"] != 1.0 || r["nextAttemptAt"] == nil || r["target"] != "endpoint" {
					return fmt.Errorf("delivery line = %v", r)
				}
				return nil
			}
		}
		return fmt.Errorf("no failed delivery line")
	})
}

// TestRequestLogAndMetricsOfLoopListeners: the loop runtime and the loop catalog log one line per
// request and count it under their own server label, as the API does; the runtime's audit records
// the request id the line and the response carry.
func TestRequestLogAndMetricsOfLoopListeners(t *testing.T) {
	buf := &syncBuffer{}
	s := startJSONLogged(t, buf, func(c *Config) { c.LoopAuth = newFakeLoopAuth(); c.OpsAddr = "127.0.0.1:0" })
	org := s.Creds.Organization.ID

	r := s.Run("GET", "/v1/instances", "loops:read", nil, "X-Request-Id", "rt-list-1")
	if r.Status != 200 || r.Header.Get("X-Request-Id") != "rt-list-1" {
		t.Fatalf("list: %d, X-Request-Id %q", r.Status, r.Header.Get("X-Request-Id"))
	}
	l := requestLine(t, buf, "rt-list-1")
	if l["level"] != "INFO" || l["route"] != "/v1/instances" || l["method"] != "GET" || l["status"] != 200.0 || l["org"] != org || l["code"] != nil {
		t.Fatalf("runtime line = %v", l)
	}
	if d, ok := l["duration"].(float64); !ok || d <= 0 {
		t.Fatalf("duration = %v", l["duration"])
	}
	// No token: 401 at info with its code, no organization.
	r = doRequest(t, runtimeURL(s), "GET", "/v1/instances", map[string]string{"X-Request-Id": "rt-anon-1"}, nil)
	if l = requestLine(t, buf, "rt-anon-1"); r.Status != 401 || l["level"] != "INFO" || l["code"] != "UNAUTHORIZED" || l["org"] != nil {
		t.Fatalf("401 (%d) line = %v", r.Status, l)
	}
	// A missing scope: 403 FORBIDDEN, the organization known.
	r = s.Run("POST", "/v1/instances/cancel", "loops:write", map[string]any{"filter": map[string]any{"loop": "x/y"}}, "X-Request-Id", "rt-403-1")
	if l = requestLine(t, buf, "rt-403-1"); r.Status != 403 || l["code"] != "FORBIDDEN" || l["org"] != org || l["route"] != "/v1/instances/cancel" {
		t.Fatalf("403 (%d) line = %v", r.Status, l)
	}
	// A start without an id gets a generated one, echoed, logged and recorded in the audit.
	r = s.Run("POST", "/v1/instances", "loops:write", map[string]any{"loop": "supplyplan/quality", "businessKey": "LOT-LOG"})
	r.Must(t, 201)
	id := r.Header.Get("X-Request-Id")
	if !regexp.MustCompile(`^[0-9a-f]{16}-[0-9a-z]+$`).MatchString(id) {
		t.Fatalf("generated X-Request-Id %q", id)
	}
	if l = requestLine(t, buf, id); l["status"] != 201.0 || l["route"] != "/v1/instances" || l["method"] != "POST" {
		t.Fatalf("start line = %v", l)
	}
	var inst struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.Body, &inst); err != nil {
		t.Fatal(err)
	}
	ev := s.Run("GET", "/v1/instances/"+inst.ID+"/events", "loops:read", nil)
	ev.Must(t, 200)
	if !strings.Contains(string(ev.Body), `"requestId":"`+id+`"`) {
		t.Fatalf("the audit does not record the request id %s: %s", id, ev.Body)
	}
	// The loop catalog.
	r = doRequest(t, "http://"+s.Main.Loops.Addr(), "GET", "/v1/loops", map[string]string{"Authorization": "Bearer " + s.Key("VIEWER"), "X-Request-Id": "cat-1"}, nil)
	if l = requestLine(t, buf, "cat-1"); r.Status != 200 || r.Header.Get("X-Request-Id") != "cat-1" || l["route"] != "/v1/loops" || l["org"] != org || l["status"] != 200.0 {
		t.Fatalf("catalog (%d) line = %v", r.Status, l)
	}
	doRequest(t, "http://"+s.Main.Loops.Addr(), "GET", "/nope", nil, nil).Must(t, 404)

	m, _ := scrape(t, s)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"supplyplan_http_requests_total", []string{`server="loop-runtime"`, `route="/v1/instances"`, `method="GET"`, `status="200"`}, 1},
		{"supplyplan_http_requests_total", []string{`server="loop-runtime"`, `route="/v1/instances"`, `method="GET"`, `status="401"`}, 1},
		{"supplyplan_http_requests_total", []string{`server="loop-runtime"`, `route="/v1/instances"`, `method="POST"`, `status="201"`}, 1},
		{"supplyplan_http_requests_total", []string{`server="loop-runtime"`, `route="/v1/instances/cancel"`, `status="403"`}, 1},
		{"supplyplan_http_request_duration_seconds_count", []string{`server="loop-runtime"`, `route="/v1/instances"`, `method="GET"`}, 2},
		{"supplyplan_http_requests_total", []string{`server="loop-catalog"`, `route="/v1/loops"`, `method="GET"`, `status="200"`}, 1},
		{"supplyplan_http_requests_total", []string{`server="loop-catalog"`, `route="unmatched"`, `method="GET"`, `status="404"`}, 1},
	} {
		if got, _ := family(m, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}

// TestRequestLogOffAndText: --request-log=false writes no request line; text format is key=value.
func TestRequestLogOffAndText(t *testing.T) {
	var text syncBuffer
	l, err := newLogger(&text, "info", "text")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("request", "requestId", "x1", "route", "/health")
	if got := text.b.String(); !strings.Contains(got, "msg=request requestId=x1 route=/health") {
		t.Fatalf("text line %q", got)
	}
	if _, err := newLogger(io.Discard, "info", "yaml"); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Fatalf("yaml format: %v", err)
	}
	buf := &syncBuffer{}
	s := startJSONLogged(t, buf, func(c *Config) { c.RequestLog = false })
	r := doRequest(t, s.URL, "GET", "/health", map[string]string{"X-Request-Id": "quiet-1"}, nil)
	if r.Status != 200 || r.Header.Get("X-Request-Id") != "quiet-1" {
		t.Fatalf("status %d, id %q", r.Status, r.Header.Get("X-Request-Id"))
	}
	for _, rec := range buf.records(t) {
		if rec["msg"] == "request" {
			t.Fatalf("request line with --request-log=false: %v", rec)
		}
	}
}

// TestLineBufferKeepsLinesWhole: the log's writer batches INFO lines, writes WARN and ERROR lines at
// once (with what waits before them), flushes within its interval, and never splits a line.
func TestLineBufferKeepsLinesWhole(t *testing.T) {
	var out syncBuffer
	b := newLineBuffer(&out, 50*time.Millisecond)
	_, _ = b.Write([]byte("time=1 level=INFO msg=a\n"))
	if out.String() != "" {
		t.Fatalf("an INFO line was written at once: %q", out.String())
	}
	_, _ = b.Write([]byte(`{"time":"2","level":"WARN","msg":"b"}` + "\n"))
	if got := out.String(); got != "time=1 level=INFO msg=a\n"+`{"time":"2","level":"WARN","msg":"b"}`+"\n" {
		t.Fatalf("after a WARN line: %q", got)
	}
	_, _ = b.Write([]byte("time=3 level=INFO msg=c\n"))
	eventually(t, 2*time.Second, func() error {
		if !strings.HasSuffix(out.String(), "msg=c\n") {
			return fmt.Errorf("the INFO line is still waiting")
		}
		return nil
	})
	long := bytes.Repeat([]byte("x"), lineBufferMax/3)
	for range 7 {
		_, _ = b.Write(append(append([]byte("level=INFO "), long...), '\n'))
	}
	_ = b.Close()
	for i, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if i >= 3 && len(l) != len("level=INFO ")+len(long) {
			t.Fatalf("line %d has %d bytes: split", i, len(l))
		}
	}
}

// TestFlatHandlerWritesWhatSlogWrites: for the request log's records the fast handler writes the
// line slog's own handler writes (time aside), in both formats; other records go to slog's.
func TestFlatHandlerWritesWhatSlogWrites(t *testing.T) {
	at := time.Date(2026, 11, 27, 16, 4, 5, 123456789, time.UTC)
	attrs := []slog.Attr{slog.String("requestId", "5f1c-1a"), slog.String("method", "GET"), slog.String("route", "/api/x/:id"),
		slog.Int("status", 404), slog.Duration("duration", 412500*time.Nanosecond), slog.String("org", "org_1"),
		slog.String("odd", "a b=\"c\"\n\t\\ é <&> \u2028 \x01"), slog.String("empty", ""), slog.Int("neg", -3)}
	// Times of one second in a row (the handler keeps the formatted second), the same second in
	// other zones, whole seconds, fractions with trailing zeros. (A request's time is the clock's:
	// never zero, which slog leaves out, nor past 9999, which it marks as an error.)
	times := []time.Time{at, at.Add(time.Millisecond), time.Date(2026, 11, 27, 16, 4, 5, 0, time.UTC),
		time.Date(2026, 11, 27, 16, 4, 5, 120000000, time.UTC), time.Date(2026, 11, 27, 16, 4, 5, 999999999, time.UTC),
		at.In(time.FixedZone("IST", 5*3600+1800)), at.In(time.FixedZone("X", -3*3600)), at.Local(),
		time.Date(2026, 11, 27, 16, 4, 6, 1000, time.UTC), time.Date(1999, 12, 31, 23, 59, 59, 999000000, time.UTC)}
	for _, format := range []string{"json", "text"} {
		var fast, std bytes.Buffer
		fh := newFlatHandler(&fast, slog.LevelInfo, format)
		var h slog.Handler = slog.NewJSONHandler(&std, nil)
		if format == "text" {
			h = slog.NewTextHandler(&std, nil)
		}
		for _, tm := range times {
			fast.Reset()
			std.Reset()
			rec := slog.NewRecord(tm, slog.LevelError, "request", 0)
			rec.AddAttrs(attrs...)
			if err := fh.Handle(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			_ = h.Handle(context.Background(), rec)
			if fast.String() != std.String() {
				t.Errorf("%s at %v:\nfast %s\nslog %s", format, tm, fast.String(), std.String())
			}
		}
		// A record with another kind of value is slog's own line.
		fast.Reset()
		std.Reset()
		rec := slog.NewRecord(at, slog.LevelInfo, "other", 0)
		rec.AddAttrs(slog.Bool("ok", true), slog.Float64("x", 1.5))
		_ = newFlatHandler(&fast, slog.LevelInfo, format).Handle(context.Background(), rec)
		_ = h.Handle(context.Background(), rec)
		if fast.String() != std.String() {
			t.Errorf("%s fallback:\nfast %s\nslog %s", format, fast.String(), std.String())
		}
	}
	if newFlatHandler(io.Discard, slog.LevelWarn, "text").Enabled(context.Background(), slog.LevelInfo) {
		t.Error("INFO enabled at warn")
	}
}

// TestRequestLineIsTheRecordsLine: the request log's direct line (WriteRequestLine, what the
// http package calls instead of making a record) is the line slog writes for the record of the
// same attributes, in both formats, with and without org and code, odd bytes included.
func TestRequestLineIsTheRecordsLine(t *testing.T) {
	at := time.Date(2026, 11, 27, 16, 4, 5, 123456789, time.UTC)
	cases := []struct {
		id, method, route, org, code string
		status                       int
		level                        slog.Level
	}{
		{"5f1c-1a", "GET", "/api/x/:id", "org_1", "", 200, slog.LevelInfo},
		{"req-2", "POST", "/api/forecast/events", "", "VALIDATION_ERROR", 422, slog.LevelInfo},
		{"a b=\"c\"", "PATCH\t", "/odd/\u2028/é <&>", "org \x01", "INTERNAL", 500, slog.LevelError},
		{"", "", "", "", "", 0, slog.LevelInfo},
	}
	for _, format := range []string{"json", "text"} {
		var fast, std bytes.Buffer
		var h slog.Handler = slog.NewJSONHandler(&std, nil)
		if format == "text" {
			h = slog.NewTextHandler(&std, nil)
		}
		w, ok := newFlatHandler(&fast, slog.LevelInfo, format).(sphttp.RequestLineWriter)
		if !ok {
			t.Fatal("the request log's handler writes no request line")
		}
		for i, c := range cases {
			fast.Reset()
			std.Reset()
			took := time.Duration(i*1234567 + 891)
			if err := w.WriteRequestLine(at, c.level, []byte(c.id), []byte(c.method), c.route, c.org, c.status, c.code, took); err != nil {
				t.Fatal(err)
			}
			rec := slog.NewRecord(at, c.level, "request", 0)
			rec.AddAttrs(slog.String("requestId", c.id), slog.String("method", c.method), slog.String("route", c.route),
				slog.Int("status", c.status), slog.Duration("duration", took))
			if c.org != "" {
				rec.AddAttrs(slog.String("org", c.org))
			}
			if c.code != "" {
				rec.AddAttrs(slog.String("code", c.code))
			}
			_ = h.Handle(context.Background(), rec)
			if fast.String() != std.String() {
				t.Errorf("%s case %d:\nline %s\nslog %s", format, i, fast.String(), std.String())
			}
		}
	}
}
