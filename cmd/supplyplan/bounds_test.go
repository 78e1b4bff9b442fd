package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/streams"
)

// Issue 10, items 2, 3 and 7: numbers, dates and strings out of bounds at every entry point, and
// values an earlier version stored out of bounds.

// wantField fails unless r is a 400 whose details name field.
func wantField(tb testing.TB, r resp, field string) {
	tb.Helper()
	if r.Status != 400 {
		tb.Fatalf("status %d, want 400 naming %s; body %s", r.Status, field, r.Body)
	}
	var body struct {
		Code    string              `json:"code"`
		Details map[string][]string `json:"details"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || body.Code != "VALIDATION_ERROR" || len(body.Details[field]) == 0 {
		tb.Fatalf("body %s, want a VALIDATION_ERROR naming %s", r.Body, field)
	}
}

// rowError returns the job's error on row, failing when there is none.
func rowError(tb testing.TB, job map[string]any, row int) map[string]any {
	tb.Helper()
	for _, e := range list(job, "errors") {
		if m := e.(map[string]any); m["row"] == float64(row) {
			return m
		}
	}
	tb.Fatalf("no error on row %d: %v", row, job["errors"])
	return nil
}

func wantRow(tb testing.TB, job map[string]any, row int, field string) {
	tb.Helper()
	e := rowError(tb, job, row)
	if e["field"] != field || e["code"] != "INVALID_VALUE" {
		tb.Fatalf("row %d error %v, want INVALID_VALUE on %s", row, e, field)
	}
}

func (s *testServer) toolCall(tb testing.TB, name string, args map[string]any) resp {
	tb.Helper()
	return doRequest(tb, "http://"+s.Main.Tools.Addr(), "POST", "/tools/call",
		map[string]string{"Authorization": bearerOf(s.Key(supplyplan.CredDemoTool))},
		map[string]any{"org": "demo", "name": name, "arguments": args})
}

// everyResponseRenders reads what a planner reads about P at L: every answer is a 2xx with JSON.
func everyResponseRenders(t *testing.T, s *testServer) {
	t.Helper()
	admin := s.Key("ADMIN")
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/demand/history?skuId=P&locationId=L"},
		{"GET", "/api/inventory/levels?skuId=P"},
		{"GET", "/api/forecast?productMasterId=P&locationId=L&horizonWeeks=4"},
		{"GET", "/api/forecast"},
		{"GET", "/api/forecast/long-term?productMasterId=P"},
		{"GET", "/api/forecast/channel-projection?productMasterId=P&locationId=L"},
		{"POST", "/api/admin/alerts/evaluate"},
		{"GET", "/api/admin/alerts/history"},
		{"POST", "/api/transfers/recommendations"},
		{"GET", "/api/transfers/recommendations"},
		{"GET", "/api/inventory/transfers/bins?locationId=L"},
	} {
		got := s.Do(r.method, r.path, admin, nil)
		if got.Status/100 != 2 || !json.Valid(got.Body) {
			t.Errorf("%s %s = %d %s", r.method, r.path, got.Status, got.Body)
		}
	}
	r := s.toolCall(t, "check_availability", map[string]any{"productId": "P"})
	if r.Status != 200 || bytes.Contains(r.Body, []byte(`"isError":true`)) || !bytes.Contains(r.Body, []byte(`"totalAvailableToPromise"`)) {
		t.Errorf("check_availability = %d %s", r.Status, r.Body)
	}
}

func TestNumbersOutOfBoundsAreRefused(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"P"}, []string{"L", "M"})
	admin := s.Key("ADMIN")

	// Two signals of 1.7e308 for one week: refused, so the week's sum never becomes +Inf.
	r := s.Do("POST", "/api/demand/signals", admin, `{"signals":[
	  {"signalId":"big-1","skuId":"P","locationId":"L","quantity":1.7e308,"occurredAt":"2026-01-05T10:00:00Z"},
	  {"signalId":"big-2","skuId":"P","locationId":"L","quantity":1.7e308,"occurredAt":"2026-01-06T10:00:00Z"},
	  {"signalId":"ok-1","skuId":"P","locationId":"L","quantity":1e12,"occurredAt":"2026-01-06T10:00:00Z"}]}`).Must(t, 200)
	if r["applied"] != 1.0 || r["rejected"] != 2.0 {
		t.Fatalf("signals = %v", r)
	}
	for _, o := range list(r, "outcomes")[:2] {
		if m := o.(map[string]any); m["reason"] != "INVALID_SIGNAL" || !strings.Contains(str(m, "message"), "quantity") {
			t.Fatalf("outcome %v, want INVALID_SIGNAL naming quantity", m)
		}
	}

	// A demand-history row of 1e308: a row error; the other rows apply.
	job := s.Import("demand-history", map[string]any{"records": []map[string]any{
		{"skuId": "P", "locationId": "L", "weekStarting": "2025-12-29", "actualDemand": 1e308},
		{"skuId": "P", "locationId": "L", "weekStarting": "2025-12-22", "actualDemand": 12},
	}})
	checkCounts(t, job, 1, 1)
	wantRow(t, job, 0, "actualDemand")

	// A purchase-order line of 1e308: a row error, and check_availability still answers.
	s.Import("suppliers", map[string]any{"suppliers": []map[string]any{{"externalId": "SUP"}}})
	job = s.Import("purchase-orders", map[string]any{"purchaseOrders": []map[string]any{
		{"externalPoNumber": "PO-1", "supplierId": "SUP", "destinationLocationId": "L", "lines": []map[string]any{{"skuId": "P", "quantity": 1e308, "unitCost": 1}}},
		{"externalPoNumber": "PO-2", "supplierId": "SUP", "destinationLocationId": "L", "lines": []map[string]any{{"skuId": "P", "quantity": 1e308, "unitCost": 1}}},
		{"externalPoNumber": "PO-3", "supplierId": "SUP", "destinationLocationId": "L", "lines": []map[string]any{{"skuId": "P", "quantity": 5, "unitCost": 1e13}}},
		{"externalPoNumber": "PO-4", "supplierId": "SUP", "destinationLocationId": "L", "lines": []map[string]any{{"skuId": "P", "quantity": 5, "unitCost": 1}}},
	}})
	checkCounts(t, job, 1, 3)
	wantRow(t, job, 0, "lines[0].quantity")
	wantRow(t, job, 1, "lines[0].quantity")
	wantRow(t, job, 2, "lines[0].unitCost")
	job = s.Import("catalog", map[string]any{"products": []map[string]any{{"externalId": "Q", "unitPrice": 1e308}}})
	wantRow(t, job, 0, "unitPrice")
	job = s.Import("inventory", map[string]any{"levels": []map[string]any{{"skuId": "P", "locationId": "L", "quantityOnHand": 1e300}}})
	wantRow(t, job, 0, "quantityOnHand")

	// REST bodies and MCP tool arguments.
	wantField(t, s.Do("POST", "/api/inventory/transfers", admin, map[string]any{"productMasterId": "P", "sourceLocationId": "L",
		"destLocationId": "M", "quantity": 1e308}), "quantity")
	wantField(t, s.Do("POST", "/api/transfers/recommendations", admin, map[string]any{"unitMargin": 1e300}), "unitMargin")
	wantField(t, s.Do("POST", "/api/forecast/scenarios/compare", admin, map[string]any{"scenarioIds": []string{"a", "b"}, "horizonWeeks": 1e15}), "horizonWeeks")
	everyResponseRenders(t, s)
	h := s.Do("GET", "/api/demand/history?skuId=P&locationId=L", admin, nil).Must(t, 200)
	if total := h["totalActualDemand"].(float64); total != 1e12+12 {
		t.Fatalf("totalActualDemand = %v, want 1e12+12", total)
	}
}

func TestDatesOutOfRangeAreRefused(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"P"}, []string{"L"})
	admin, platform := s.Key("ADMIN"), s.Key("platform")
	event := func(starts, ends string) map[string]any {
		return map[string]any{"name": "Promo", "type": "PROMOTION", "startsAt": starts, "endsAt": ends}
	}
	ev := s.Do("POST", "/api/forecast/events", admin, event("2026-03-02", "2026-03-08")).Must(t, 201)
	for _, tc := range []struct{ name, field, starts, ends string }{
		{"date-only endsAt in year 9999 (+24 h is year 10000)", "endsAt", "2026-03-02", "9999-12-31"},
		{"startsAt in year 0 with an offset", "startsAt", "0000-01-01T00:00:00+01:00", "2026-03-08"},
		{"endsAt 2100-01-01, date-only: ends 2100-01-02", "endsAt", "2026-03-02", "2100-01-01"},
		{"startsAt before 1970-01-05", "startsAt", "1969-12-29", "2026-03-08"},
		{"endsAt past 2100 after its offset", "endsAt", "2026-03-02", "2099-12-31T23:00:00-05:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantField(t, s.Do("POST", "/api/forecast/events", admin, event(tc.starts, tc.ends)), tc.field)
			wantField(t, s.Do("PUT", "/api/forecast/events/"+str(ev, "id"), admin, event(tc.starts, tc.ends)), tc.field)
			wantField(t, s.Do("POST", "/api/platform/events", platform, event(tc.starts, tc.ends)), tc.field)
		})
	}
	sc := s.Do("POST", "/api/forecast/scenarios", admin, map[string]any{"name": "S"}).Must(t, 201)
	wantField(t, s.Do("POST", "/api/forecast/scenarios/"+str(sc, "scenario", "id")+"/generate", admin,
		map[string]any{"asOf": "0000-01-01T00:00:00+01:00"}), "asOf")
	for _, q := range []struct{ path, field string }{
		{"/api/demand/history?skuId=P&locationId=L&from=0000-01-01", "from"},
		{"/api/demand/history?skuId=P&locationId=L&to=9999-12-31", "to"},
		{"/api/forecast?productMasterId=P&locationId=L&asOf=0000-01-01", "asOf"},
		{"/api/forecast/events?from=0000-01-01", "from"},
		{"/api/forecast/events?to=9999-12-31", "to"},
		{"/api/forecast/change-history?from=1969-12-29", "from"},
		{"/api/admin/alerts/history?fromDate=0000-01-01T00:00:00%2B01:00", "fromDate"},
	} {
		wantField(t, s.Do("GET", q.path, admin, nil), q.field)
	}
	// A signal outside the range: refused naming occurredAt.
	r := s.Do("POST", "/api/demand/signals", admin, `{"signals":[{"signalId":"s","skuId":"P","locationId":"L","quantity":1,"occurredAt":"9999-12-31T23:00:00-05:00"}]}`).Must(t, 200)
	if o := list(r, "outcomes")[0].(map[string]any); o["reason"] != "INVALID_SIGNAL" || !strings.Contains(str(o, "message"), "occurredAt") {
		t.Fatalf("outcome %v", o)
	}
	// Inside the range, the same endpoints answer.
	s.Do("GET", "/api/demand/history?skuId=P&locationId=L&from=1970-01-05&to=2100-01-01", admin, nil).Must(t, 200)
	s.Do("POST", "/api/forecast/events", admin, event("2099-12-30", "2099-12-31")).Must(t, 201)
}

func TestImportRowsWithBadDatesCompleteWithTheRest(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"P"}, []string{"L"})
	s.Import("suppliers", map[string]any{"suppliers": []map[string]any{{"externalId": "SUP"}}})
	const bad = "9999-12-31T23:00:00-05:00"

	job := s.Import("purchase-orders", map[string]any{"purchaseOrders": []map[string]any{
		{"externalPoNumber": "PO-1", "supplierId": "SUP", "destinationLocationId": "L", "expectedAt": bad, "lines": []map[string]any{{"skuId": "P", "quantity": 1, "unitCost": 1}}},
		{"externalPoNumber": "PO-2", "supplierId": "SUP", "destinationLocationId": "L", "lines": []map[string]any{{"skuId": "P", "quantity": 1, "unitCost": 1}}},
	}})
	checkCounts(t, job, 1, 1)
	wantRow(t, job, 0, "expectedAt")
	job = s.Import("orders", map[string]any{"orders": []map[string]any{
		{"externalOrderId": "O-1", "orderedAt": bad, "lines": []map[string]any{{"skuId": "P", "quantity": 1, "locationId": "L"}}},
		{"externalOrderId": "O-2", "lines": []map[string]any{{"skuId": "P", "quantity": 1, "locationId": "L"}}},
	}})
	checkCounts(t, job, 1, 1)
	wantRow(t, job, 0, "orderedAt")

	// A demand row of 1969-12-29 among 100 good rows: a row error, the job completes.
	var records []map[string]any
	for i := range 100 {
		records = append(records, map[string]any{"skuId": "P", "locationId": "L", "actualDemand": i,
			"weekStarting": time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*i).Format(time.DateOnly)})
	}
	records = slices.Insert(records, 50, map[string]any{"skuId": "P", "locationId": "L", "weekStarting": "1969-12-29", "actualDemand": 1})
	job = s.Import("demand-history", map[string]any{"records": records})
	checkCounts(t, job, 100, 1)
	wantRow(t, job, 50, "weekStarting")
	if str(job, "status") != "COMPLETED" {
		t.Fatalf("job %v", job)
	}

	// 6,000 inventory rows, row 5,500 with a lot expiring outside the range: that row fails, the job
	// completes with the 5,999 others (before: FAILED with 5,000 rows applied).
	levels := make([]map[string]any, 6000)
	for i := range levels {
		exp := "2027-01-01"
		if i == 5500 {
			exp = bad
		}
		levels[i] = map[string]any{"skuId": "P", "locationId": fmt.Sprintf("S%04d", i), "quantityOnHand": 1,
			"lots": []map[string]any{{"lotId": "a", "quantity": 1, "expiresAt": exp}}}
	}
	job = s.Import("inventory", map[string]any{"levels": levels})
	if str(job, "status") != "COMPLETED" {
		t.Fatalf("job status %s: %v", str(job, "status"), job["message"])
	}
	checkCounts(t, job, 5999, 1)
	wantRow(t, job, 5500, "lots[0].expiresAt")
	admin := s.Key("ADMIN")
	for loc, want := range map[string]float64{"S5499": 1, "S5500": 0, "S5501": 1, "S5999": 1} {
		got := s.Do("GET", "/api/inventory/levels?locationId="+loc, admin, nil).Must(t, 200)
		if got["total"] != want {
			t.Errorf("levels at %s = %v, want %v", loc, got["total"], want)
		}
	}
}

func TestStringsAreBounded(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"P"}, []string{"L", "M"})
	s.Import("inventory", map[string]any{"levels": []map[string]any{{"skuId": "P", "locationId": "L", "quantityOnHand": 100}}})
	admin := s.Key("ADMIN")
	notes := strings.Repeat("n", 900_000)
	body := map[string]any{"productMasterId": "P", "sourceLocationId": "L", "destLocationId": "M", "quantity": 1, "notes": notes}
	wantField(t, s.Do("POST", "/api/inventory/transfers", admin, body), "notes")
	delete(body, "notes")
	tr := s.Do("POST", "/api/inventory/transfers", admin, body).Must(t, 201)
	id := str(tr, "transfer", "id")
	wantField(t, s.Do("POST", "/api/inventory/transfers/"+id, admin, map[string]any{"notes": notes}), "notes")
	got := s.Do("GET", "/api/inventory/transfers/"+id, admin, nil).Must(t, 200)
	if str(got, "transfer", "notes") != "" {
		t.Fatal("notes stored")
	}
	s.Do("POST", "/api/inventory/transfers/"+id, admin, map[string]any{"notes": strings.Repeat("n", supplyplan.MaxNotesLen)}).Must(t, 200)

	long := strings.Repeat("x", 100_000)
	job := s.Import("catalog", map[string]any{"products": []map[string]any{{"externalId": "Q", "name": long}, {"externalId": "R", "name": "ok"}}})
	checkCounts(t, job, 1, 1)
	wantRow(t, job, 0, "name")
	if r := s.Do("GET", "/api/products/Q", admin, nil); r.Status != 404 {
		t.Fatalf("product with a 100,000-character name stored: %d", r.Status)
	}
	for _, tc := range []struct {
		method, path, field string
		body                any
	}{
		{"POST", "/api/forecast/scenarios", "description", map[string]any{"name": "S", "description": long}},
		{"POST", "/api/forecast/scenarios", "assumptions.categoryAdjustments[0].categoryId", map[string]any{"name": "S",
			"assumptions": map[string]any{"categoryAdjustments": []map[string]any{{"categoryId": long, "liftPct": 0.1}}}}},
		{"POST", "/api/forecast/events", "value.description", map[string]any{"name": "E", "startsAt": "2026-01-01", "endsAt": "2026-01-02",
			"value": map[string]any{"description": long}}},
		{"POST", "/api/admin/alerts/trigger", "message", map[string]any{"type": "lowAtp", "severity": "LOW", "message": long}},
		{"POST", "/api/transfers/recommendations/x/approve", "comment", map[string]any{"comment": long}},
		{"POST", "/api/webhooks/endpoints", "url", map[string]any{"url": "https://example.com/" + long}},
	} {
		wantField(t, s.Do(tc.method, tc.path, admin, tc.body), tc.field)
	}
	wantField(t, s.Do("POST", "/api/platform/organizations/x/api-keys", s.Key("platform"), map[string]any{"role": "ADMIN", "name": long}), "name")
	r := s.toolCall(t, "list_locations", map[string]any{"query": long})
	if r.Status != 200 || !bytes.Contains(r.Body, []byte(`"isError":true`)) || !bytes.Contains(r.Body, []byte("query")) {
		t.Fatalf("list_locations with a 100,000-character query = %d %s", r.Status, r.Body[:min(len(r.Body), 300)])
	}
}

// syncBuffer is a log sink tests can read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startLogged is MustStart on dir with the log (warnings and up) captured.
func startLogged(t *testing.T, dir string) (*testServer, *syncBuffer) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir, cfg.APIAddr, cfg.RegistryAddr, cfg.ToolsAddr = dir, "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.LoopCatalogAddr, cfg.LoopRuntimeAddr, cfg.ConsoleAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.RequestTimeout = 30 * time.Second
	buf := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(buf, os.Stderr), &slog.HandlerOptions{Level: slog.LevelWarn}))
	m := NewMain(cfg, log, io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		_ = m.Close(ctx)
		t.Fatalf("open: %v", err)
	}
	s := &testServer{t: t, Main: m, URL: "http://" + m.API.Addr(), Data: dir, Creds: mustReadCreds(t, dir)}
	t.Cleanup(s.Stop)
	return s, buf
}

// appendJournalEntry appends one entry of records (raw JSON) to a tenant's journal, as an earlier
// version of the service wrote it.
func appendJournalEntry(t *testing.T, dataDir, orgID, records string) {
	t.Helper()
	j, err := streams.OpenJournal(streams.JournalConfig{Dir: filepath.Join(dataDir, "journal")})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	stream := "tenant-" + orgID
	res, err := j.Load(stream, func(uint64, []byte) error { return nil }, func(uint64, []byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	j.Append(stream, res.LastSeq+1, []byte(records), func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// appendDemandSignals appends a signals record to the newest log of the embedded demand store, in
// its documented frame format (docs/demand-store.md), without any of today's checks.
func appendDemandSignals(t *testing.T, dataDir, orgID string, week time.Time, quantities ...float64) {
	t.Helper()
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	p := []byte{2} // recSignals
	p = str(p, orgID)
	p = binary.AppendUvarint(p, uint64(len(quantities)))
	for i, q := range quantities {
		p = str(p, fmt.Sprintf("old-signal-%d", i))
		p = str(p, "P")
		p = str(p, "L")
		p = str(p, "ALL")
		p = binary.AppendVarint(p, supplyplan.WeekStart(week).Unix()/86400)
		p = binary.LittleEndian.AppendUint64(p, math.Float64bits(q))
	}
	frame := binary.LittleEndian.AppendUint32(nil, uint32(len(p)))
	frame = binary.LittleEndian.AppendUint32(frame, crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)))
	frame = append(frame, p...)
	logs, err := filepath.Glob(filepath.Join(dataDir, "demand", "log-*.wal"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no demand log: %v", err)
	}
	slices.Sort(logs)
	f, err := os.OpenFile(logs[len(logs)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(frame); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Values an earlier version stored out of bounds (purchase-order lines and stock of 1e308 in the
// journal, two signals of 1.7e308 in the demand store) are quarantined at load: the service
// starts, reports them, and every response renders.
func TestValuesStoredOutOfBoundsAreQuarantined(t *testing.T) {
	dir := t.TempDir()
	s := MustStart(t, dir)
	s.SeedCatalog([]string{"P"}, []string{"L", "M"})
	s.Import("demand-history", map[string]any{"records": demandWeeks("P", "L", 20, 10)})
	org := s.Creds.Organization.ID
	s.Stop()

	now := supplyplan.Now().Format(time.RFC3339Nano)
	appendJournalEntry(t, dir, org, `[
	 {"k":"supplier","i":"SUP","v":{"id":"SUP","externalId":"SUP","name":"SUP","createdAt":"`+now+`","updatedAt":"`+now+`"}},
	 {"k":"po","i":"OLD-1","v":{"externalPoNumber":"OLD-1","supplierId":"SUP","destinationLocationId":"L","status":"PENDING",
	   "expectedAt":"`+now+`","lines":[{"skuId":"P","quantity":1e308,"unitCost":1}],"createdAt":"`+now+`","updatedAt":"`+now+`"}},
	 {"k":"po","i":"OLD-2","v":{"externalPoNumber":"OLD-2","supplierId":"SUP","destinationLocationId":"L","status":"PENDING",
	   "expectedAt":"`+now+`","lines":[{"skuId":"P","quantity":1e308,"unitCost":1},{"skuId":"P","quantity":7,"unitCost":1}],
	   "createdAt":"`+now+`","updatedAt":"`+now+`"}},
	 {"k":"inventory","i":"P\u0000M","v":{"skuId":"P","locationId":"M","quantityOnHand":1e308,"quantityReserved":0,
	   "reorderPoint":1e308,"bins":{"DEFAULT":1e308},"updatedAt":"`+now+`"}}]`)
	lastWeek := supplyplan.WeekStart(time.Now().UTC()).AddDate(0, 0, -7)
	appendDemandSignals(t, dir, org, lastWeek, 1.7e308, 1.7e308)

	s, logs := startLogged(t, dir)
	if got := s.Main.System.Core.Quarantined(); got != 5 {
		t.Errorf("Core.Quarantined() = %d, want 5 (two lines, on-hand, reorder point, bin)", got)
	}
	if q, ok := s.Main.Demand.(interface{ Quarantined() int64 }); !ok || q.Quarantined() != 1 {
		t.Errorf("demand store quarantined %v weeks, want 1", s.Main.Demand)
	}
	out := logs.String()
	for _, want := range []string{"quarantined stored values out of bounds", "demand store: quarantined weeks out of bounds"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	everyResponseRenders(t, s)
	admin := s.Key("ADMIN")
	h := s.Do("GET", "/api/demand/history?skuId=P&locationId=L", admin, nil).Must(t, 200)
	for _, w := range list(h, "weeks") {
		if str(w.(map[string]any), "weekStarting") == lastWeek.Format(time.DateOnly) {
			t.Fatalf("quarantined week served: %v", w)
		}
	}
	av := s.toolCall(t, "check_availability", map[string]any{"productId": "P", "locationIds": []string{"L", "M"}})
	if !bytes.Contains(av.Body, []byte(`"inbound":7`)) {
		t.Fatalf("availability %s, want the in-bounds line's 7 units inbound at L", av.Body)
	}
	// A new import replaces the quarantined stock, and the cleaned state survives a restart.
	s.Import("inventory", map[string]any{"levels": []map[string]any{{"skuId": "P", "locationId": "M", "quantityOnHand": 3}}})
	s = s.Restart()
	lv := s.Do("GET", "/api/inventory/levels?skuId=P&locationId=M", admin, nil).Must(t, 200)
	if l := list(lv, "levels"); len(l) != 1 || l[0].(map[string]any)["quantityOnHand"] != 3.0 {
		t.Fatalf("levels = %v", lv)
	}
	everyResponseRenders(t, s)
}
