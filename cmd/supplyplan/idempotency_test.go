package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	sphttp "github.com/supplyplan/supplyplan/http"
)

// keyed sends a request with an Idempotency-Key.
func keyed(tb testing.TB, base, method, path, key, idemKey string, body any) resp {
	tb.Helper()
	h := map[string]string{"Idempotency-Key": idemKey}
	if key != "" {
		h["Authorization"] = bearerOf(key)
	}
	return doRequest(tb, base, method, path, h, body)
}

// countScenarios counts the scenarios named name.
func countScenarios(tb testing.TB, s *testServer, name string) int {
	tb.Helper()
	n := 0
	for _, x := range list(s.Do("GET", "/api/forecast/scenarios?includeArchived=true", s.Key("VIEWER"), nil).Must(tb, 200), "scenarios") {
		if x.(map[string]any)["name"] == name {
			n++
		}
	}
	return n
}

func TestIdempotencyKeyReplaysAndRefusesReuse(t *testing.T) {
	s := MustStart(t, "")
	k := s.Key("PLANNER")
	first := keyed(t, s.URL, "POST", "/api/forecast/scenarios", k, "create-1", map[string]any{"name": "once"})
	id := str(first.Must(t, 201), "scenario", "id")
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("the first request says it was replayed")
	}
	again := keyed(t, s.URL, "POST", "/api/forecast/scenarios", k, "create-1", map[string]any{"name": "once"})
	if again.Status != 201 || string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %q %s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
	}
	if n := countScenarios(t, s, "once"); n != 1 {
		t.Fatalf("%d scenarios after a replayed create", n)
	}
	// The same key for another body, method or path: 422.
	for _, tc := range []struct{ method, path string }{
		{"POST", "/api/forecast/scenarios"}, {"POST", "/api/forecast/events"}, {"PUT", "/api/forecast/scenarios/" + id},
	} {
		r := keyed(t, s.URL, tc.method, tc.path, k, "create-1", map[string]any{"name": "other"})
		if r.Status != 422 || r.Code() != "IDEMPOTENCY_KEY_REUSED" {
			t.Errorf("%s %s with a used key: %d %s", tc.method, tc.path, r.Status, r.Body)
		}
	}
	// A DELETE retried after it succeeded replays 204 instead of answering 404.
	ev := str(s.Do("POST", "/api/forecast/events", k, map[string]any{"name": "e", "startsAt": "2030-01-01", "endsAt": "2030-01-02"}).Must(t, 201), "id")
	for i := range 2 {
		r := keyed(t, s.URL, "DELETE", "/api/forecast/events/"+ev, k, "delete-1", nil)
		if r.Status != 204 || (i == 1) != (r.Header.Get("Idempotent-Replayed") == "true") {
			t.Fatalf("delete %d: %d replayed %q %s", i, r.Status, r.Header.Get("Idempotent-Replayed"), r.Body)
		}
	}
	if r := s.Do("DELETE", "/api/forecast/events/"+ev, k, nil); r.Status != 404 {
		t.Fatalf("delete without a key after the event is gone: %d", r.Status)
	}
	// A request that changes nothing stores nothing: a failed validation runs again.
	for range 2 {
		if r := keyed(t, s.URL, "POST", "/api/forecast/scenarios", k, "invalid-1", map[string]any{"name": ""}); r.Status != 400 {
			t.Fatalf("invalid create: %d %s", r.Status, r.Body)
		}
	}
	keyed(t, s.URL, "POST", "/api/forecast/scenarios", k, "invalid-1", map[string]any{"name": "fixed"}).Must(t, 201)
	// Keys are per tenant: another organization may use the same key.
	p := s.Key("platform")
	org := s.Do("POST", "/api/platform/organizations", p, map[string]any{"slug": "other", "name": "Other"}).Must(t, 201)
	orgID := str(org, "organization", "id")
	if orgID == "" {
		orgID = str(org, "id")
	}
	s.Do("PUT", "/api/platform/organizations/"+orgID+"/entitlements", p, map[string]any{"entitlements": []string{supplyplan.EntitlementForecasting}}).Must(t, 200)
	other := str(s.Do("POST", "/api/platform/organizations/"+orgID+"/api-keys", p, map[string]any{"role": "PLANNER"}).Must(t, 201), "key")
	o := keyed(t, s.URL, "POST", "/api/forecast/scenarios", other, "create-1", map[string]any{"name": "once"})
	if o.Status != 201 || o.Header.Get("Idempotent-Replayed") != "" || str(o.JSON(t), "scenario", "id") == id {
		t.Fatalf("another tenant's first use of the key: %d %s", o.Status, o.Body)
	}
	// Platform-key requests have keys of their own (the platform's).
	g1 := keyed(t, s.URL, "POST", "/api/platform/events", p, "create-1", map[string]any{"name": "g", "type": "HOLIDAY", "startsAt": "2030-02-01", "endsAt": "2030-02-02"})
	g2 := keyed(t, s.URL, "POST", "/api/platform/events", p, "create-1", map[string]any{"name": "g", "type": "HOLIDAY", "startsAt": "2030-02-01", "endsAt": "2030-02-02"})
	if g1.Status != 201 || g2.Status != 201 || string(g1.Body) != string(g2.Body) || g2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("platform replay: %d %d %s %s", g1.Status, g2.Status, g1.Body, g2.Body)
	}
	// Import keys: a replayed import creates one job.
	imp := map[string]string{"x-api-key": s.Key("import"), "Idempotency-Key": "import-1"}
	body := map[string]any{"products": []any{map[string]any{"externalId": "IDEM-1"}}}
	j1 := doRequest(t, s.URL, "POST", "/api/import/catalog", imp, body).Must(t, 202)
	j2 := doRequest(t, s.URL, "POST", "/api/import/catalog", imp, body).Must(t, 202)
	if str(j1, "jobId") != str(j2, "jobId") {
		t.Fatalf("replayed import made another job: %v %v", j1, j2)
	}
	// A malformed key is 400 naming the header; GET ignores the header.
	if r := keyed(t, s.URL, "POST", "/api/forecast/scenarios", k, strings.Repeat("k", 300), map[string]any{"name": "x"}); r.Status != 400 || r.JSON(t)["details"].(map[string]any)["Idempotency-Key"] == nil {
		t.Fatalf("bad key: %d %s", r.Status, r.Body)
	}
	keyed(t, s.URL, "GET", "/api/forecast/scenarios", k, "create-1", nil).Must(t, 200)
}

func TestIdempotencyKeysSurviveRestartAndSnapshots(t *testing.T) {
	for _, every := range []int{10000, 1} { // replayed from the journal; from snapshots
		t.Run(fmt.Sprintf("snapshot-every-%d", every), func(t *testing.T) {
			s := MustStart(t, "", func(c *Config) { c.SnapshotEvery = every })
			k := s.Key("PLANNER")
			first := keyed(t, s.URL, "POST", "/api/forecast/scenarios", k, "restart-1", map[string]any{"name": "kept"}).Must(t, 201)
			for i := range 5 { // more writes, so that snapshots are taken after the key
				s.Do("POST", "/api/forecast/scenarios", k, map[string]any{"name": fmt.Sprint("filler", i)}).Must(t, 201)
			}
			s2 := s.Restart()
			r := keyed(t, s2.URL, "POST", "/api/forecast/scenarios", k, "restart-1", map[string]any{"name": "kept"})
			if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" || str(r.JSON(t), "scenario", "id") != str(first, "scenario", "id") {
				t.Fatalf("after restart: %d %s", r.Status, r.Body)
			}
			if r := keyed(t, s2.URL, "POST", "/api/forecast/scenarios", k, "restart-1", map[string]any{"name": "changed"}); r.Status != 422 {
				t.Fatalf("reuse after restart: %d", r.Status)
			}
			if n := countScenarios(t, s2, "kept"); n != 1 {
				t.Fatalf("%d scenarios", n)
			}
		})
	}
}

func TestIdempotencyKeysExpireAfter24Hours(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	s := MustStart(t, "", func(c *Config) { c.Clock = clock })
	k := s.Key("PLANNER")
	create := func() resp {
		return keyed(t, s.URL, "POST", "/api/forecast/scenarios", k, "daily", map[string]any{"name": "daily"})
	}
	create().Must(t, 201)
	now.Add(int64(23*time.Hour + 59*time.Minute))
	if r := create(); r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("23h59m later: %d %s", r.Status, r.Body)
	}
	now.Add(int64(2 * time.Minute)) // 24h01m after the first request: the key is gone
	if r := create(); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("24h01m later: %d replayed %q", r.Status, r.Header.Get("Idempotent-Replayed"))
	}
	if n := countScenarios(t, s, "daily"); n != 2 {
		t.Fatalf("%d scenarios, want 2 (the key expired)", n)
	}
	// A restart does not bring an expired key back.
	now.Add(int64(25 * time.Hour))
	s2 := s.Restart()
	if r := keyed(t, s2.URL, "POST", "/api/forecast/scenarios", k, "daily", map[string]any{"name": "daily"}); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after restart: %d replayed %q", r.Status, r.Header.Get("Idempotent-Replayed"))
	}
}

func TestIdempotencyKeyConcurrentRequestsApplyOnce(t *testing.T) {
	s := MustStart(t, "")
	k := s.Key("PLANNER")
	const n = 16
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = keyed(t, s.URL, "POST", "/api/forecast/scenarios", k, "race-1", map[string]any{"name": "race"}).Status
		}()
	}
	wg.Wait()
	for _, st := range statuses {
		if st != 201 && st != 409 {
			t.Errorf("status %d, want 201 (first or replay) or 409 (in flight)", st)
		}
	}
	if c := countScenarios(t, s, "race"); c != 1 {
		t.Fatalf("%d scenarios created by %d requests with one key (statuses %v)", c, n, statuses)
	}
}

// slowForecasting holds CreateScenario until gate is closed.
type slowForecasting struct {
	supplyplan.ForecastingService
	gate    chan struct{}
	entered chan struct{}
}

func (f slowForecasting) CreateScenario(ctx context.Context, p supplyplan.Principal, in supplyplan.ScenarioInput) (supplyplan.Scenario, error) {
	f.entered <- struct{}{}
	<-f.gate
	return f.ForecastingService.CreateScenario(ctx, p, in)
}

func TestIdempotencyKeyOutlivesTheRequestTimeout(t *testing.T) {
	s := MustStart(t, "")
	sys := s.Main.System
	slow := slowForecasting{ForecastingService: sys.Forecasting, gate: make(chan struct{}), entered: make(chan struct{}, 4)}
	api := sphttp.NewServer(sphttp.Config{Addr: "127.0.0.1:0", RequestTimeout: 300 * time.Millisecond},
		sphttp.Services{Auth: sys.Platform, Platform: sys.Platform, Forecasting: slow, Catalog: sys.Catalog, Imports: sys.Imports,
			Demand: sys.Catalog, Transfers: sys.Transfers, Forecast: sys.Forecasts, Alerts: sys.Alerts, Webhooks: sys.Webhooks,
			Billing: sys.Billing, Idempotency: sys.Idempotency})
	if err := api.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close(context.Background()) })
	u := "http://" + api.Addr()
	k := s.Key("PLANNER")
	body := map[string]any{"name": "slow"}

	// The request times out while its handler still runs: 503.
	if r := keyed(t, u, "POST", "/api/forecast/scenarios", k, "slow-1", body); r.Status != 503 {
		t.Fatalf("first request: %d %s", r.Status, r.Body)
	}
	<-slow.entered
	// Its retry finds the key in flight: 409 with Retry-After, never a second apply.
	r := keyed(t, u, "POST", "/api/forecast/scenarios", k, "slow-1", body)
	if r.Status != 409 || r.Code() != "IDEMPOTENCY_KEY_IN_FLIGHT" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("retry while running: %d %s", r.Status, r.Body)
	}
	// The write completes after the client gave up; the retry then gets its real outcome.
	close(slow.gate)
	var replay resp
	eventually(t, 10*time.Second, func() error {
		replay = keyed(t, u, "POST", "/api/forecast/scenarios", k, "slow-1", body)
		if replay.Status != 201 || replay.Header.Get("Idempotent-Replayed") != "true" {
			return fmt.Errorf("%d %s", replay.Status, replay.Body)
		}
		return nil
	})
	if str(replay.JSON(t), "scenario", "name") != "slow" || countScenarios(t, s, "slow") != 1 {
		t.Fatalf("replay %s; %d scenarios", replay.Body, countScenarios(t, s, "slow"))
	}
	if len(slow.entered) != 0 {
		t.Fatal("the handler ran again")
	}
}

// The crash window: the write and the key's marker are durable, the response is not (the process
// died in between). A retry must not apply the write again, and says so.
func TestIdempotencyKeyAfterACrashBetweenWriteAndResponse(t *testing.T) {
	s := MustStart(t, "")
	sys := s.Main.System
	k := s.Key("PLANNER")
	body := []byte(`{"name":"crash"}`)
	fp := sphttp.IdempotencyFingerprint("POST", "/api/forecast/scenarios", body)
	org := s.Creds.Organization.ID
	claim, stored, err := sys.Idempotency.BeginIdempotent(context.Background(), org, "crash-1", fp)
	if err != nil || stored != nil {
		t.Fatalf("begin: %v %v", stored, err)
	}
	p, ok := sys.Platform.Authenticate(k)
	if !ok {
		t.Fatal("no principal")
	}
	// The write runs under the claim (its marker is journaled with it); FinishIdempotent never
	// runs, as if the process were killed before storing the response.
	if _, err := sys.Forecasting.CreateScenario(supplyplan.WithIdempotency(context.Background(), claim), p, supplyplan.ScenarioInput{Name: ptr("crash")}); err != nil {
		t.Fatal(err)
	}
	s2 := s.Restart()
	r := rawDo(t, s2.URL, "POST", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer " + k, "Idempotency-Key": "crash-1"}, string(body))
	if r.Status != 410 || r.Code() != "IDEMPOTENCY_RESPONSE_LOST" {
		t.Fatalf("retry after the crash: %d %s", r.Status, r.Body)
	}
	if r := rawDo(t, s2.URL, "POST", "/api/forecast/scenarios", map[string]string{"Authorization": "Bearer " + k, "Idempotency-Key": "crash-1"}, `{"name":"other"}`); r.Status != 422 {
		t.Fatalf("other body after the crash: %d %s", r.Status, r.Body)
	}
	if n := countScenarios(t, s2, "crash"); n != 1 {
		t.Fatalf("%d scenarios, want the one write", n)
	}
	// Even a retry that gets past the lookup is refused by the stream that holds the marker.
	again := supplyplan.NewIdempotencyClaim(org, "crash-1", fp)
	if _, err := s2.Main.System.Forecasting.CreateScenario(supplyplan.WithIdempotency(context.Background(), again), p, supplyplan.ScenarioInput{Name: ptr("crash")}); supplyplan.ErrorCode(err) != supplyplan.EIDEMLOST {
		t.Fatalf("write under a known key: %v", err)
	}
	if n := countScenarios(t, s2, "crash"); n != 1 {
		t.Fatalf("%d scenarios after a second apply attempt", n)
	}
}

func ptr[T any](v T) *T { return &v }

// Under load, kill -9: every acknowledged keyed write replays after the restart, and no retry of a
// request that was in flight at the kill applies it a second time.
func TestKill9WithIdempotencyKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	data := t.TempDir()
	p := startProc(t, data, "--snapshot-every", "40")
	hdr := func(key string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + p.Creds.Keys["PLANNER"], "Idempotency-Key": key}
	}
	type sent struct {
		key, name string
		id        string // set when acknowledged
	}
	var mu sync.Mutex
	var all []*sent
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				x := &sent{key: fmt.Sprintf("k-%d-%d", w, i), name: fmt.Sprintf("n-%d-%d", w, i)}
				mu.Lock()
				all = append(all, x)
				mu.Unlock()
				r, err := tryRequest(p.URL, "POST", "/api/forecast/scenarios", hdr(x.key), map[string]any{"name": x.name})
				if err != nil {
					return // the server died under us
				}
				if r.Status != 201 {
					t.Errorf("%s: %d %s", x.key, r.Status, r.Body)
					return
				}
				var m map[string]any
				_ = json.Unmarshal(r.Body, &m)
				mu.Lock()
				x.id = str(m, "scenario", "id")
				mu.Unlock()
				acked.Add(1)
			}
		}()
	}
	eventually(t, 60*time.Second, func() error {
		if n := acked.Load(); n < 300 {
			return fmt.Errorf("%d writes acknowledged", n)
		}
		return nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exit
	close(stop)
	wg.Wait()

	p2 := startProc(t, data)
	mu.Lock()
	defer mu.Unlock()
	var replayed, lost, fresh int
	for _, x := range all {
		r := doRequest(t, p2.URL, "POST", "/api/forecast/scenarios", hdr(x.key), map[string]any{"name": x.name})
		switch {
		case x.id != "":
			if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" || str(r.JSON(t), "scenario", "id") != x.id {
				t.Errorf("acknowledged %s: retry %d %s", x.key, r.Status, r.Body)
			}
			replayed++
		case r.Status == 410:
			lost++ // applied before the kill, response never stored
		case r.Status == 201:
			if r.Header.Get("Idempotent-Replayed") == "true" {
				replayed++
			} else {
				fresh++
			}
		default:
			t.Errorf("unacknowledged %s: retry %d %s", x.key, r.Status, r.Body)
		}
	}
	count := map[string]int{}
	for _, x := range list(doRequest(t, p2.URL, "GET", "/api/forecast/scenarios?includeArchived=true&limit=100000",
		map[string]string{"Authorization": "Bearer " + p.Creds.Keys["VIEWER"]}, nil).Must(t, 200), "scenarios") {
		count[x.(map[string]any)["name"].(string)]++
	}
	for _, x := range all {
		if count[x.name] != 1 {
			t.Errorf("%s (%s) exists %d times", x.name, x.key, count[x.name])
		}
	}
	t.Logf("%d requests, %d acknowledged before kill -9; after restart %d replayed, %d answered 410 (applied, response lost), %d applied for the first time",
		len(all), acked.Load(), replayed, lost, fresh)
}

// A keyed signal batch with a bearer key gets the import body limit, as without a key. Signals
// are applied by the shared signal stream, not in the request's own transaction, so the key stores
// nothing for them: a retry runs again, and the signalId deduplication applies none of them twice.
func TestIdempotencyKeyOnALargeSignalBatch(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"P"}, []string{"L"})
	at := monday(-1).Add(50 * time.Hour).Format(time.RFC3339)
	var sigs []any
	for i := range 12000 {
		sigs = append(sigs, map[string]any{"signalId": fmt.Sprintf("sig-%06d-padding-padding-padding", i), "skuId": "P", "locationId": "L", "quantity": 1, "occurredAt": at})
	}
	body := map[string]any{"signals": sigs}
	if b, _ := json.Marshal(body); len(b) <= 1<<20 {
		t.Fatalf("batch of %d bytes is not over the JSON limit", len(b))
	}
	first := keyed(t, s.URL, "POST", "/api/demand/signals", s.Key("PLANNER"), "signals-1", body).Must(t, 200)
	if num(first, "applied") != 12000 {
		t.Fatalf("first: applied %v", first["applied"])
	}
	again := keyed(t, s.URL, "POST", "/api/demand/signals", s.Key("PLANNER"), "signals-1", body).Must(t, 200)
	if num(again, "applied") != 0 || num(again, "duplicates") != 12000 {
		t.Fatalf("retry: applied %v duplicates %v", again["applied"], again["duplicates"])
	}
	h := s.Do("GET", "/api/demand/history?skuId=P&locationId=L", s.Key("VIEWER"), nil).Must(t, 200)
	if num(h, "totalActualDemand") != 12000 {
		t.Fatalf("demand after a retried batch: %v", h["totalActualDemand"])
	}
}
