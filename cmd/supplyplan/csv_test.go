package main

import (
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// importCSV posts a CSV import with the demo import key and waits for its job.
func (s *testServer) importCSV(kind, body string) map[string]any {
	s.t.Helper()
	r := doRequest(s.t, s.URL, "POST", "/api/import/"+kind, map[string]string{"x-api-key": s.Key("import"), "Content-Type": "text/csv"}, body)
	acc := r.Must(s.t, 202)
	return s.WaitJob(s.Key("import"), str(acc, "jobId"))
}

// getCSV downloads path as CSV (Accept: text/csv) with headers and returns its records.
func getCSV(t *testing.T, s *testServer, path string, headers map[string]string) (string, [][]string) {
	t.Helper()
	h := map[string]string{"Accept": "text/csv"}
	for k, v := range headers {
		h[k] = v
	}
	r := doRequest(t, s.URL, "GET", path, h, nil)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("GET %s as CSV: %d %s %s", path, r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	recs, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
	if err != nil {
		t.Fatalf("GET %s: not CSV: %v\n%s", path, err, r.Body)
	}
	return string(r.Body), recs
}

// TestCSVRoundTrip imports a demand history as CSV and downloads it as CSV: the same file comes
// back. The catalog and stock it needs are imported as CSV too.
func TestCSVRoundTrip(t *testing.T) {
	s := MustStart(t, "")
	checkCounts(t, s.importCSV("catalog", "externalId,name,unitPrice,unitCost\nP,Orange juice,10,4\n\"Q\",\"Jam, strawberry\",3.5,1\n"), 2, 0)
	checkCounts(t, s.importCSV("inventory", "skuId,locationId,quantityOnHand,reorderPoint,binId\nP,DC,500,20,A-1\nP,STORE,5,30,\n"), 2, 0)
	p := s.Do("GET", "/api/products/Q", s.Key("VIEWER"), nil).Must(t, 200)
	if str(p, "product", "name") != "Jam, strawberry" {
		t.Fatalf("quoted CSV cell: %v", p)
	}

	history := "skuId,locationId,channel,weekStarting,actualDemand,forecastedDemand,stockout\n" +
		"P,DC,ALL,2026-10-05,12,12,false\n" +
		"P,DC,ALL,2026-10-12,7.5,9,false\n" +
		"P,DC,ALL,2026-10-19,0,3,true\n" +
		"P,DC,ALL,2026-10-26,15.25,14,false\n"
	checkCounts(t, s.importCSV("demand-history", history), 4, 0)
	got, _ := getCSV(t, s, "/api/demand/history?skuId=P&locationId=DC", map[string]string{"Authorization": bearerOf(s.Key("VIEWER"))})
	if got != history {
		t.Fatalf("demand history exported as\n%s\nimported as\n%s", got, history)
	}
	// The same filters as the JSON form.
	_, recs := getCSV(t, s, "/api/demand/history?skuId=P&locationId=DC&from=2026-10-12&to=2026-10-19", map[string]string{"Authorization": bearerOf(s.Key("VIEWER"))})
	if len(recs) != 3 || recs[1][3] != "2026-10-12" || recs[2][3] != "2026-10-19" {
		t.Fatalf("filtered download = %v", recs)
	}

	// Rejected rows: the job's row errors download as CSV, the same as in its JSON form.
	bad := "skuId,locationId,weekStarting,actualDemand\nP,DC,2026-11-02,4\nNOPE,DC,2026-11-02,4\nP,DC,2026-11-02,lots\n"
	r := doRequest(t, s.URL, "POST", "/api/import/demand-history", map[string]string{"x-api-key": s.Key("import"), "Content-Type": "text/csv; charset=utf-8"}, bad)
	jobID := str(r.Must(t, 202), "jobId")
	job := s.WaitJob(s.Key("import"), jobID)
	checkCounts(t, job, 1, 2)
	_, errs := getCSV(t, s, "/api/import/status/"+jobID, map[string]string{"x-api-key": s.Key("import")})
	want := [][]string{{"row", "field", "code", "message"}}
	for _, e := range list(job, "errors") {
		m := e.(map[string]any)
		want = append(want, []string{strconv.Itoa(int(m["row"].(float64))), m["field"].(string), m["code"].(string), m["message"].(string)})
	}
	if fmt.Sprint(errs) != fmt.Sprint(want) || len(errs) != 3 || errs[1][1] != "skuId" || errs[2][2] != "INVALID_TYPE" {
		t.Fatalf("row errors as CSV = %v, want %v", errs, want)
	}
}

// TestCSVNestedLines imports orders and purchase orders whose lines are one CSV record each.
func TestCSVNestedLines(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"P1", "P2"}, []string{"dc", "store"})
	checkCounts(t, s.importCSV("suppliers", "externalId,name,leadTimeDays\nS1,Acme,7\n"), 1, 0)
	// A CSV import under an Idempotency-Key is replayed like a JSON one.
	hdr := map[string]string{"x-api-key": s.Key("import"), "Content-Type": "text/csv", "Idempotency-Key": "csv-suppliers-1"}
	first := doRequest(t, s.URL, "POST", "/api/import/suppliers", hdr, "externalId,name\nS2,Beta\n")
	again := doRequest(t, s.URL, "POST", "/api/import/suppliers", hdr, "externalId,name\nS2,Beta\n")
	if str(first.Must(t, 202), "jobId") != str(again.Must(t, 202), "jobId") || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %s / %s %v", first.Body, again.Body, again.Header)
	}
	checkCounts(t, s.WaitJob(s.Key("import"), str(first.JSON(t), "jobId")), 1, 0)
	pos := "externalPoNumber,supplierId,destinationLocationId,status,lines.skuId,lines.quantity,lines.unitCost\n" +
		"PO-1,S1,dc,,P1,50,2\n" +
		"PO-1,,,,P2,20,1.5\n" +
		"PO-2,S1,dc,PENDING,P1,5,2\n"
	checkCounts(t, s.importCSV("purchase-orders", pos), 2, 0)
	avail, err := s.Main.System.Catalog.Availability(t.Context(), principalOf(s), "P2", nil)
	if err != nil {
		t.Fatal(err)
	}
	var inbound float64
	for _, a := range avail {
		inbound += a.Inbound
	}
	if inbound != 20 {
		t.Fatalf("inbound of P2 from PO-1's second line = %v, want 20", inbound)
	}

	orders := "externalOrderId,status,channel,lines.lineId,lines.skuId,lines.quantity,lines.locationId\n" +
		"O-1,OPEN,WEB,1,P1,3,store\n" +
		"O-1,OPEN,,2,P2,1,store\n" +
		"O-2,,,,P2,2,mars\n" +
		"O-3,,,,,,\n"
	job := s.importCSV("orders", orders)
	checkCounts(t, job, 1, 2)
	o, err := s.Main.System.Catalog.GetOrder(t.Context(), principalOf(s), "O-1")
	if err != nil || len(o.Lines) != 2 || o.Status != "OPEN" {
		t.Fatalf("order O-1 = %+v %v", o, err)
	}
	if got := rowErrors(job); got[1] != "lines[0].locationId:UNKNOWN_LOCATION" || !strings.HasPrefix(got[2], "lines") {
		t.Fatalf("row errors (rows count orders, not CSV records) = %v", got)
	}

	// Whole-request errors name the column or the line.
	for _, tc := range []struct{ kind, body, want string }{
		{"orders", "externalOrderId,lines.skuId,colour\nO-9,P1,red\n", "colour"},
		{"orders", "externalOrderId,lines.skuId\nO-9,P1\nO-9\n", "line 3"},
		{"orders", "externalOrderId,status,lines.skuId\nO-9,OPEN,P1\nO-9,SHIPPED,P2\n", "status"},
		{"catalog", "externalId,externalId\nP9,P9\n", "externalId"},
		{"catalog", "", "body"},
		{"inventory", "skuId,locationId,lots.lotId\nP1,dc,L1\n", "lots.lotId"},
	} {
		r := doRequest(t, s.URL, "POST", "/api/import/"+tc.kind, map[string]string{"x-api-key": s.Key("import"), "Content-Type": "text/csv"}, tc.body)
		if r.Status != 400 || r.Code() != "VALIDATION_ERROR" || !strings.Contains(string(r.Body), tc.want) {
			t.Errorf("%s %q: %d %s, want 400 naming %s", tc.kind, tc.body, r.Status, r.Body, tc.want)
		}
	}
}

// TestCSVDownloads checks the CSV forms of recommendations, alert history and forecasts against
// their JSON forms.
func TestCSVDownloads(t *testing.T) {
	s := MustStart(t, "")
	seedStock(t, s)
	admin := map[string]string{"Authorization": bearerOf(s.Key("ADMIN"))}
	gen := s.Do("POST", "/api/transfers/recommendations", s.Key("PLANNER"), map[string]any{"unitMargin": 6}).Must(t, 200)
	if num(gen, "created") != 1 {
		t.Fatalf("generate = %v", gen)
	}
	rec := list(gen, "recommendations")[0].(map[string]any)
	for _, path := range []string{"/api/transfers/recommendations", "/api/transfers/recommendations/pending"} {
		_, recs := getCSV(t, s, path+"?status=PENDING", admin)
		if len(recs) != 2 || recs[0][0] != "id" || recs[1][0] != rec["id"] || recs[1][4] != "25" || recs[1][6] != "PENDING" || recs[1][3] != "STORE" {
			t.Fatalf("%s as CSV = %v", path, recs)
		}
	}
	if _, recs := getCSV(t, s, "/api/transfers/recommendations?status=REJECTED", admin); len(recs) != 1 {
		t.Fatalf("filtered to none: %v", recs)
	}
	if r := doRequest(t, s.URL, "GET", "/api/transfers/recommendations?status=NOPE", map[string]string{"Accept": "text/csv", "Authorization": bearerOf(s.Key("ADMIN"))}, nil); r.Status != 400 || r.Code() != "VALIDATION_ERROR" {
		t.Fatalf("bad filter as CSV: %d %s", r.Status, r.Body)
	}

	alert := s.Do("POST", "/api/admin/alerts/trigger", s.Key("ADMIN"), map[string]any{"type": "stockout", "severity": "HIGH",
		"message": "Stock out, at STORE", "productMasterId": "P", "locationId": "STORE"}).Must(t, 201)
	_, alerts := getCSV(t, s, "/api/admin/alerts/history?severity=HIGH", admin)
	if len(alerts) != 2 || alerts[1][0] != str(alert, "alert", "id") || alerts[1][3] != "Stock out, at STORE" || alerts[1][1] != "stockout" {
		t.Fatalf("alert history as CSV = %v", alerts)
	}
	if _, none := getCSV(t, s, "/api/admin/alerts/history?severity=LOW", admin); len(none) != 1 {
		t.Fatalf("filtered alert history = %v", none)
	}

	rows := []any{}
	for i := range 20 {
		rows = append(rows, map[string]any{"skuId": "P", "locationId": "DC", "weekStarting": fmt.Sprintf("2026-%02d-%02d", 6+i/4, 1+7*(i%4)), "actualDemand": 10 + i%3})
	}
	s.Import("demand-history", map[string]any{"records": rows})
	q := "/api/forecast?productMasterId=P&locationId=DC&horizonWeeks=6"
	js := s.Do("GET", q, s.Key("ADMIN"), nil).Must(t, 200)
	_, fc := getCSV(t, s, q, admin)
	var want [][]string
	for _, f := range list(js, "forecasts") {
		f := f.(map[string]any)
		for _, p := range list(f, "periods") {
			p := p.(map[string]any)
			n := func(k string) string { return strconv.FormatFloat(p[k].(float64), 'f', -1, 64) }
			want = append(want, []string{str(f, "productMasterId"), str(f, "locationId"), str(f, "channel"), str(f, "model"),
				str(p, "weekStarting"), n("baseline"), n("quantity"), n("lower"), n("upper")})
		}
	}
	if len(want) != 6 || len(fc) != 7 || fmt.Sprint(fc[1:]) != fmt.Sprint(want) {
		t.Fatalf("forecast as CSV = %v, want %v", fc, want)
	}
}
