package main

import (
	"fmt"
	"strings"
	"testing"
)

func rowErrors(job map[string]any) map[float64]string {
	out := map[float64]string{}
	for _, e := range list(job, "errors") {
		m := e.(map[string]any)
		out[m["row"].(float64)] = m["field"].(string) + ":" + m["code"].(string)
	}
	return out
}

func num(m map[string]any, key string) float64 {
	f, _ := m[key].(float64)
	return f
}

// checkCounts asserts that processedCount = applied + rejected rows and everything was processed.
func checkCounts(t *testing.T, job map[string]any, applied, failed int) {
	t.Helper()
	if int(num(job, "appliedCount")) != applied || int(num(job, "failedCount")) != failed ||
		num(job, "processedCount") != num(job, "rowCount") || num(job, "processedCount") != num(job, "appliedCount")+num(job, "failedCount") {
		t.Fatalf("counts: %v, want applied %d failed %d", job, applied, failed)
	}
}

func TestImportCatalogAndInventory(t *testing.T) {
	s := MustStart(t, "")
	job := s.Import("catalog", map[string]any{"products": []any{
		map[string]any{"externalId": "A", "name": "Apple juice", "sku": "AJ-1", "categoryId": "juice", "unitCost": 1.5, "unitPrice": 3, "shelfLifeDays": 30},
		map[string]any{"externalId": "B"},
		map[string]any{"name": "no id"},
		map[string]any{"externalId": "C", "unitCost": -1},
		map[string]any{"externalId": "D", "sku": "AJ-1"},
		"not an object",
		map[string]any{"externalId": 42},
	}})
	if str(job, "status") != "COMPLETED" || str(job, "completedAt") == "" {
		t.Fatalf("job = %v", job)
	}
	checkCounts(t, job, 2, 5)
	want := map[float64]string{2: "externalId:REQUIRED", 3: "unitCost:INVALID_VALUE", 4: "sku:INVALID_VALUE", 5: ":INVALID_TYPE", 6: "externalId:INVALID_TYPE"}
	if got := rowErrors(job); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("row errors = %v, want %v", got, want)
	}
	v := s.Key("VIEWER")
	p := s.Do("GET", "/api/products/A", v, nil).Must(t, 200)["product"].(map[string]any)
	if p["name"] != "Apple juice" || p["sku"] != "AJ-1" || p["categoryId"] != "juice" || p["unitPrice"] != 3.0 {
		t.Fatalf("product A = %v", p)
	}
	if b := s.Do("GET", "/api/products/B", v, nil).Must(t, 200)["product"].(map[string]any); b["name"] != "B" || b["sku"] != "B" {
		t.Fatalf("defaults: %v", b)
	}
	// Upsert by externalId: a resend changes the product, never duplicates it.
	s.Import("catalog", map[string]any{"products": []any{map[string]any{"externalId": "A", "name": "Apple juice 1L"}}})
	list1 := s.Do("GET", "/api/products", v, nil).Must(t, 200)
	if num(list1, "total") != 2 || str(s.Do("GET", "/api/products/AJ-1", v, nil).Must(t, 200), "product", "name") != "Apple juice 1L" {
		t.Fatalf("after upsert: %v", list1)
	}

	inv := s.Import("inventory", map[string]any{"levels": []any{
		map[string]any{"skuId": "AJ-1", "locationId": "north", "quantityOnHand": 100, "quantityReserved": 10, "reorderPoint": 20,
			"lots": []any{map[string]any{"lotId": "L1", "quantity": 60, "expiresAt": "2027-01-01"}}},
		map[string]any{"skuId": "B", "locationId": "south"},
		map[string]any{"skuId": "B", "locationId": "north", "binId": "A-01", "quantityOnHand": 5},
		map[string]any{"skuId": "B", "locationId": "north", "binId": "A-02", "quantityOnHand": 7},
		map[string]any{"skuId": "ZZZ", "locationId": "north"},
		map[string]any{"skuId": "B", "locationId": "north", "quantityOnHand": -5},
		map[string]any{"locationId": "north"},
		map[string]any{"skuId": "A", "locationId": "south", "quantityOnHand": 5, "reorderPoint": 10},
	}})
	checkCounts(t, inv, 5, 3)
	if got := rowErrors(inv); got[4] != "skuId:UNKNOWN_PRODUCT" || got[5] != "quantityOnHand:INVALID_VALUE" || got[6] != "skuId:REQUIRED" {
		t.Fatalf("inventory errors = %v", got)
	}
	locs := s.Do("GET", "/api/locations", v, nil).Must(t, 200)
	if num(locs, "total") != 2 {
		t.Fatalf("locations = %v", locs)
	}
	org := s.Creds.Organization.ID
	for _, l := range list(locs, "locations") {
		m := l.(map[string]any)
		if m["code"] != org+"-"+m["id"].(string) {
			t.Errorf("location code %v, want %s-<id>", m["code"], org)
		}
	}
	levels := s.Do("GET", "/api/inventory/levels?skuId=AJ-1", v, nil).Must(t, 200)
	l := list(levels, "levels")[0].(map[string]any)
	if l["locationId"] != "north" || l["skuId"] != "A" || l["quantityOnHand"] != 100.0 || l["quantityReserved"] != 10.0 || l["reorderPoint"] != 20.0 || len(l["lots"].([]any)) != 1 {
		t.Fatalf("level = %v", l)
	}
	binned := list(s.Do("GET", "/api/inventory/levels?skuId=B&locationId=north", v, nil).Must(t, 200), "levels")[0].(map[string]any)
	if binned["quantityOnHand"] != 12.0 || len(binned["bins"].(map[string]any)) != 2 {
		t.Fatalf("binned level = %v", binned)
	}
	if n := num(s.Do("GET", "/api/inventory/levels?belowReorderPoint=true", v, nil).Must(t, 200), "total"); n != 1 {
		t.Fatalf("below reorder point: %v, want only A@south (5 available, reorder point 10)", n)
	}
}

func TestImportSuppliersPurchaseOrdersOrders(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"P1", "P2"}, []string{"dc", "store"})
	sup := s.Import("suppliers", map[string]any{"suppliers": []any{
		map[string]any{"externalId": "S1", "name": "Acme", "leadTimeDays": 7},
		map[string]any{"name": "nameless"},
	}})
	checkCounts(t, sup, 1, 1)
	po := map[string]any{"externalPoNumber": "PO-1", "supplierId": "S1", "destinationLocationId": "dc",
		"lines": []any{map[string]any{"skuId": "P1", "quantity": 50, "unitCost": 2}}}
	pos := s.Import("purchase-orders", map[string]any{"purchaseOrders": []any{po,
		map[string]any{"externalPoNumber": "PO-2", "supplierId": "NOPE", "destinationLocationId": "dc", "lines": []any{map[string]any{"skuId": "P1", "quantity": 1, "unitCost": 1}}},
		map[string]any{"externalPoNumber": "PO-3", "supplierId": "S1", "destinationLocationId": "nowhere", "lines": []any{map[string]any{"skuId": "P1", "quantity": 1, "unitCost": 1}}},
		map[string]any{"externalPoNumber": "PO-4", "supplierId": "S1", "destinationLocationId": "dc", "lines": []any{map[string]any{"skuId": "P1", "quantity": 1}}},
		map[string]any{"externalPoNumber": "PO-5", "supplierId": "S1", "destinationLocationId": "dc", "status": "LOST", "lines": []any{map[string]any{"skuId": "P1", "quantity": 1, "unitCost": 1}}},
	}})
	checkCounts(t, pos, 1, 4)
	if got := rowErrors(pos); got[1] != "supplierId:UNKNOWN_SUPPLIER" || got[2] != "destinationLocationId:UNKNOWN_LOCATION" || got[3] != "lines[0].unitCost:REQUIRED" || got[4] != "status:INVALID_VALUE" {
		t.Fatalf("po errors = %v", got)
	}
	// A resend of PO-1 updates it (inbound becomes 80), never duplicates it (would be 130).
	po["lines"] = []any{map[string]any{"skuId": "P1", "quantity": 80, "unitCost": 2}}
	checkCounts(t, s.Import("purchase-orders", map[string]any{"purchaseOrders": []any{po}}), 1, 0)
	avail, err := s.Main.System.Catalog.Availability(t.Context(), principalOf(s), "P1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var inbound float64
	for _, a := range avail {
		inbound += a.Inbound
	}
	if inbound != 80 {
		t.Fatalf("inbound after resend = %v, want 80", inbound)
	}
	ord := s.Import("orders", map[string]any{"orders": []any{
		map[string]any{"externalOrderId": "O-1", "lines": []any{map[string]any{"skuId": "P2", "quantity": 3, "locationId": "store"}}},
		map[string]any{"externalOrderId": "O-2", "lines": []any{map[string]any{"skuId": "P2", "quantity": 3, "locationId": "mars"}}},
		map[string]any{"externalOrderId": "O-3", "lines": []any{}},
	}})
	checkCounts(t, ord, 1, 2)
	s.Import("orders", map[string]any{"orders": []any{map[string]any{"externalOrderId": "O-1", "status": "SHIPPED",
		"lines": []any{map[string]any{"skuId": "P2", "quantity": 3, "locationId": "store"}}}}})
	o, err := s.Main.System.Catalog.GetOrder(t.Context(), principalOf(s), "O-1")
	if err != nil || o.Status != "SHIPPED" || len(o.Lines) != 1 {
		t.Fatalf("order O-1 = %+v %v", o, err)
	}
}

func TestImportDemandHistory(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"P1"}, []string{"dc"})
	rows := []any{
		map[string]any{"skuId": "P1", "locationId": "dc", "weekStarting": "2026-11-26", "actualDemand": 10}, // Thursday -> Monday 23rd
		map[string]any{"skuId": "P1", "locationId": "dc", "weekStarting": "2026-11-16", "actualDemand": 7, "forecastedDemand": 9, "channel": "ONLINE"},
		map[string]any{"skuId": "P1", "locationId": "dc", "weekStarting": "2026-11-16", "actualDemand": 3, "channel": "STORE"},
		map[string]any{"skuId": "NOPE", "locationId": "dc", "weekStarting": "2026-11-16", "actualDemand": 3},
		map[string]any{"skuId": "P1", "locationId": "mars", "weekStarting": "2026-11-16", "actualDemand": 3},
		map[string]any{"skuId": "P1", "locationId": "dc", "weekStarting": "someday", "actualDemand": 3},
		map[string]any{"skuId": "P1", "locationId": "dc", "weekStarting": "2026-11-16", "actualDemand": -3},
	}
	job := s.Import("demand-history", map[string]any{"records": rows})
	checkCounts(t, job, 3, 4)
	if got := rowErrors(job); got[3] != "skuId:UNKNOWN_PRODUCT" || got[4] != "locationId:UNKNOWN_LOCATION" || got[5] != "weekStarting:INVALID_VALUE" || got[6] != "actualDemand:INVALID_VALUE" {
		t.Fatalf("errors = %v", got)
	}
	v := s.Key("VIEWER")
	h := s.Do("GET", "/api/demand/history?skuId=P1&locationId=dc", v, nil).Must(t, 200)
	weeks := list(h, "weeks")
	if len(weeks) != 2 || num(h, "totalActualDemand") != 20 {
		t.Fatalf("history = %v", h)
	}
	w0, w1 := weeks[0].(map[string]any), weeks[1].(map[string]any)
	if !strings.HasPrefix(w0["weekStarting"].(string), "2026-11-16") || w0["actualDemand"] != 10.0 || w0["forecastedDemand"] != 12.0 {
		t.Fatalf("week 16 (ALL = ONLINE + STORE) = %v", w0)
	}
	if !strings.HasPrefix(w1["weekStarting"].(string), "2026-11-23") || w1["forecastedDemand"] != 10.0 {
		t.Fatalf("week 23 bucketed to Monday with forecast defaulting to actual = %v", w1)
	}
	online := s.Do("GET", "/api/demand/history?skuId=P1&locationId=dc&channel=ONLINE", v, nil).Must(t, 200)
	if num(online, "totalActualDemand") != 7 {
		t.Fatalf("online = %v", online)
	}
	// A resend of the same (sku, location, channel, week) replaces, never adds.
	s.Import("demand-history", map[string]any{"records": []any{rows[0], map[string]any{"skuId": "P1", "locationId": "dc", "weekStarting": "2026-11-23", "actualDemand": 4}}})
	if h := s.Do("GET", "/api/demand/history?skuId=P1&locationId=dc&from=2026-11-23", v, nil).Must(t, 200); num(h, "totalActualDemand") != 4 {
		t.Fatalf("after resend: %v", h)
	}
	if r := s.Do("GET", "/api/demand/history?skuId=P1", v, nil); r.Status != 400 || !strings.Contains(string(r.Body), "locationId") {
		t.Fatalf("missing location: %d %s", r.Status, r.Body)
	}
	if r := s.Do("GET", "/api/demand/history?skuId=X&locationId=dc", v, nil); r.Status != 400 {
		t.Fatalf("unknown product: %d %s", r.Status, r.Body)
	}
}

func TestImportWholeRequestFailuresCreateNoJob(t *testing.T) {
	s := MustStart(t, "", func(c *Config) { c.ImportMaxRows = 10; c.ImportMaxBytes = 4096 })
	key := s.Key("import")
	many := make([]any, 11)
	for i := range many {
		many[i] = map[string]any{"externalId": fmt.Sprint(i)}
	}
	big := `{"products":[{"externalId":"` + strings.Repeat("x", 5000) + `"}]}`
	for _, tc := range []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{"not JSON", `{"products": [`, 400, "body"},
		{"not an object", `[1,2]`, 400, "body"},
		{"missing array", `{"items": []}`, 400, "products"},
		{"array is an object", `{"products": {}}`, 400, "products"},
		{"empty array", `{"products": []}`, 400, "products"},
		{"too many rows", map[string]any{"products": many}, 413, "products"},
		{"too many bytes", big, 413, "body"},
	} {
		r := doRequest(t, s.URL, "POST", "/api/import/catalog", map[string]string{"x-api-key": key}, tc.body)
		if r.Status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, r.Status, r.Body, tc.status)
			continue
		}
		b := r.JSON(t)
		if d, _ := b["details"].(map[string]any); b["error"] == nil || b["code"] == nil || d[tc.field] == nil {
			t.Errorf("%s: body %s lacks error/code/details.%s", tc.name, r.Body, tc.field)
		}
	}
	if n := num(s.Do("GET", "/api/products", s.Key("VIEWER"), nil).Must(t, 200), "total"); n != 0 {
		t.Fatalf("a failed request wrote %v products", n)
	}
	jobs, err := s.Main.System.Imports.ListImportJobs(t.Context(), principalOf(s))
	if err != nil || len(jobs) != 0 {
		t.Fatalf("jobs after failed requests: %v %v", jobs, err)
	}
}

func TestImportAuthAndScopes(t *testing.T) {
	s := MustStart(t, "")
	p := s.Key("platform")
	org := s.Creds.Organization.ID
	readKey := s.Do("POST", "/api/platform/organizations/"+org+"/api-keys", p, map[string]any{"scopes": []string{"import:read"}}).Must(t, 201)["key"].(string)
	writeKey := s.Do("POST", "/api/platform/organizations/"+org+"/api-keys", p, map[string]any{"scopes": []string{"import:write"}}).Must(t, 201)["key"].(string)
	body := map[string]any{"products": []any{map[string]any{"externalId": "A"}}}
	post := func(hdr map[string]string) resp {
		return doRequest(t, s.URL, "POST", "/api/import/catalog", hdr, body)
	}
	for name, tc := range map[string]struct {
		hdr  map[string]string
		want int
	}{
		"no key":              {map[string]string{}, 401},
		"bearer import key":   {map[string]string{"Authorization": "Bearer " + s.Key("import")}, 401},
		"unknown key":         {map[string]string{"x-api-key": "sp_imp_nope"}, 401},
		"read scope":          {map[string]string{"x-api-key": readKey}, 403},
		"role key as api key": {map[string]string{"x-api-key": s.Key("ADMIN")}, 403},
		"platform key":        {map[string]string{"x-api-key": p}, 403},
		"write scope":         {map[string]string{"x-api-key": writeKey}, 202},
	} {
		if r := post(tc.hdr); r.Status != tc.want {
			t.Errorf("%s: %d %s, want %d", name, r.Status, r.Body, tc.want)
		}
	}
	acc := post(map[string]string{"x-api-key": s.Key("import")}).Must(t, 202)
	if str(acc, "status") != "PENDING" || num(acc, "rowCount") != 1 || str(acc, "statusUrl") != "/api/import/status/"+str(acc, "jobId") {
		t.Fatalf("envelope = %v", acc)
	}
	id := str(acc, "jobId")
	s.WaitJob(readKey, id)
	s.WaitJob(writeKey, id)
	if r := doRequest(t, s.URL, "GET", "/api/import/status/"+id, map[string]string{"x-api-key": s.Key("VIEWER")}, nil); r.Status != 403 {
		t.Errorf("status with a role key: %d", r.Status)
	}
	// Another organization's import key cannot see the job.
	other := str(s.Do("POST", "/api/platform/organizations", p, map[string]any{"name": "B", "slug": "b"}).Must(t, 201), "organization", "id")
	bKey := s.Do("POST", "/api/platform/organizations/"+other+"/api-keys", p, map[string]any{"scopes": []string{"import:read", "import:write"}}).Must(t, 201)["key"].(string)
	if r := doRequest(t, s.URL, "GET", "/api/import/status/"+id, map[string]string{"x-api-key": bKey}, nil); r.Status != 404 {
		t.Errorf("other org reads the job: %d", r.Status)
	}
	// Org B's imports land in org B only.
	s.ImportWith(bKey, "catalog", map[string]any{"products": []any{map[string]any{"externalId": "ONLY-B"}}})
	if r := s.Do("GET", "/api/products/ONLY-B", s.Key("ADMIN"), nil); r.Status != 404 {
		t.Errorf("org A sees org B's product: %d", r.Status)
	}
}

func TestImportDryRun(t *testing.T) {
	s := MustStart(t, "")
	r := doRequest(t, s.URL, "POST", "/api/import/catalog?dryRun=true", map[string]string{"x-api-key": s.Key("import")},
		map[string]any{"products": []any{map[string]any{"externalId": "A"}, map[string]any{"name": "x"}}})
	job := r.Must(t, 200)
	if job["dryRun"] != true || num(job, "appliedCount") != 1 || num(job, "failedCount") != 1 || len(list(job, "errors")) != 1 {
		t.Fatalf("dry run = %v", job)
	}
	if n := num(s.Do("GET", "/api/products", s.Key("VIEWER"), nil).Must(t, 200), "total"); n != 0 {
		t.Fatalf("dry run wrote %v products", n)
	}
	s.SeedCatalog([]string{"P"}, []string{"L"})
	dry := doRequest(t, s.URL, "POST", "/api/import/demand-history?dryRun=1", map[string]string{"x-api-key": s.Key("import")},
		map[string]any{"records": []any{map[string]any{"skuId": "P", "locationId": "L", "weekStarting": "2026-01-05", "actualDemand": 5}}}).Must(t, 200)
	if num(dry, "appliedCount") != 1 {
		t.Fatalf("demand dry run = %v", dry)
	}
	if h := s.Do("GET", "/api/demand/history?skuId=P&locationId=L", s.Key("VIEWER"), nil).Must(t, 200); len(list(h, "weeks")) != 0 {
		t.Fatalf("demand dry run wrote history: %v", h)
	}
}

func TestEventsRequireKnownProductAndLocation(t *testing.T) {
	s := MustStart(t, "")
	s.SeedCatalog([]string{"P"}, []string{"L"})
	k := s.Key("ADMIN")
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"productMasterId": "NOPE"}, "productMasterId"},
		{map[string]any{"locationId": "NOPE"}, "locationId"},
	} {
		tc.body["name"], tc.body["startsAt"], tc.body["endsAt"] = "e", "2030-01-01", "2030-01-02"
		r := s.Do("POST", "/api/forecast/events", k, tc.body)
		if r.Status != 400 || !strings.Contains(string(r.Body), tc.field) {
			t.Errorf("%v: %d %s", tc.body, r.Status, r.Body)
		}
	}
	e := s.Do("POST", "/api/forecast/events", k, map[string]any{"name": "e", "startsAt": "2030-01-01", "endsAt": "2030-01-02",
		"productMasterId": "P", "locationId": "L"}).Must(t, 201)
	if str(e, "location", "name") != "Location L" || !strings.HasSuffix(str(e, "location", "code"), "-L") {
		t.Fatalf("expanded location = %v", e["location"])
	}
	if r := s.Do("PUT", "/api/forecast/events/"+e["id"].(string), k, map[string]any{"locationId": "ghost"}); r.Status != 400 {
		t.Fatalf("update to unknown location: %d", r.Status)
	}
}

// Jobs of one tenant apply in submission order even when demand-history jobs overlap: the last
// write of a week wins, and a job sees the catalog of the jobs submitted before it only.
func TestImportJobsApplyInSubmissionOrder(t *testing.T) {
	s := MustStart(t, "", func(c *Config) { c.ImportDemandChunk = 3 })
	s.SeedCatalog([]string{"P"}, []string{"L"})
	imp := map[string]string{"x-api-key": s.Key("import")}
	post := func(kind string, body any) string {
		return str(doRequest(t, s.URL, "POST", "/api/import/"+kind, imp, body).Must(t, 202), "jobId")
	}
	week := func(v, n int, sku string) map[string]any {
		var recs []any
		for i := 0; i < n; i++ {
			recs = append(recs, map[string]any{"skuId": sku, "locationId": "L", "weekStarting": "2026-01-05", "actualDemand": v})
		}
		return map[string]any{"records": recs}
	}
	var ids []string
	ids = append(ids, post("demand-history", week(1, 7, "P")))
	ids = append(ids, post("demand-history", week(2, 5, "P")))
	ids = append(ids, post("demand-history", week(5, 1, "NEW")))                                               // before NEW exists: rejected
	ids = append(ids, post("catalog", map[string]any{"products": []any{map[string]any{"externalId": "NEW"}}})) // entity job: runs alone
	ids = append(ids, post("demand-history", week(3, 4, "P")))
	ids = append(ids, post("demand-history", week(6, 2, "NEW")))
	var jobs []map[string]any
	for _, id := range ids {
		jobs = append(jobs, s.WaitJob(s.Key("import"), id))
	}
	if num(jobs[2], "failedCount") != 1 || num(jobs[5], "appliedCount") != 2 {
		t.Fatalf("catalog ordering: %v / %v", jobs[2], jobs[5])
	}
	v := s.Key("VIEWER")
	if h := s.Do("GET", "/api/demand/history?skuId=P&locationId=L", v, nil).Must(t, 200); num(h, "totalActualDemand") != 3 {
		t.Fatalf("last write of the week = %v, want 3", h)
	}
	if h := s.Do("GET", "/api/demand/history?skuId=NEW&locationId=L", v, nil).Must(t, 200); num(h, "totalActualDemand") != 6 {
		t.Fatalf("NEW = %v, want 6", h)
	}
}

// TestImportStatusWaits: `?wait=` answers once the job has finished, so one request after the 202
// sees the final job; the wait is bounded.
func TestImportStatusWaits(t *testing.T) {
	s := MustStart(t, "")
	key := map[string]string{"x-api-key": s.Key("import")}
	rows := make([]map[string]any, 2000)
	for i := range rows {
		rows[i] = map[string]any{"externalId": fmt.Sprintf("W-%04d", i)}
	}
	acc := doRequest(t, s.URL, "POST", "/api/import/catalog", key, map[string]any{"products": rows}).Must(t, 202)
	job := doRequest(t, s.URL, "GET", "/api/import/status/"+str(acc, "jobId")+"?wait=30", key, nil).Must(t, 200)
	if str(job, "status") != "COMPLETED" || job["appliedCount"] != float64(2000) {
		t.Fatalf("job after wait = %v", job)
	}
	if r := doRequest(t, s.URL, "GET", "/api/import/status/"+str(acc, "jobId")+"?wait=61", key, nil); r.Status != 400 || !strings.Contains(string(r.Body), "wait") {
		t.Fatalf("wait=61: %d %s", r.Status, r.Body)
	}
}
