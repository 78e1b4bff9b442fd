package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// benchTransfers: generating recommendations for a tenant with 10,000 products x 50 locations whose
// forecasts exist (computed once beforehand), timed with the service's memory.
func benchTransfers(_ context.Context, e *env) (section, error) {
	const products, locations, weeks = 10000, 50, 8
	const levels = products * locations
	svc, err := startService(e)
	if err != nil {
		return section{}, err
	}
	defer svc.Stop()
	creds, err := readCreds(svc.Data)
	if err != nil {
		return section{}, err
	}
	key := creds.Keys["import"]
	if err := disableAlerts(svc, creds); err != nil {
		return section{}, err
	}
	setup := time.Now()
	if _, err := importAll(svc, key, "catalog", chunked("products", products, products, func(i int, b *bytes.Buffer) {
		fmt.Fprintf(b, `{"externalId":"T%05d","unitCost":4,"unitPrice":10}`, i)
	})); err != nil {
		return section{}, err
	}
	// Location 00 is a distribution centre holding plenty; stores sell about 2 to 11 a week
	// against a reorder point of 15 and hold that plus 7 to 17 weeks of cover, so that about one
	// store in twelve heads below its reorder point within the 8-week window.
	weekly := func(s int) float64 { return 2 + 9*uniform(uint64(s)) }
	stock := func(p, l int) int {
		if l == 0 {
			return 2000
		}
		s := p*locations + l
		return 15 + int(weekly(s)*(7+10*uniform(uint64(s)*31+7)))
	}
	if _, err := importAll(svc, key, "inventory", chunked("levels", levels, 50000, func(i int, b *bytes.Buffer) {
		p, l := i/locations, i%locations
		rop := 15
		if l == 0 {
			rop = 100
		}
		fmt.Fprintf(b, `{"skuId":"T%05d","locationId":"L%02d","quantityOnHand":%d,"reorderPoint":%d}`, p, l, stock(p, l), rop)
	})); err != nil {
		return section{}, err
	}
	end := time.Now().UTC().Truncate(24 * time.Hour)
	end = end.AddDate(0, 0, -((int(end.Weekday())+6)%7)-7)
	if _, err := importAll(svc, key, "demand-history", chunked("records", levels*weeks, 50000, func(i int, b *bytes.Buffer) {
		s, w := i/weeks, i%weeks
		p, l := s/locations, s%locations
		v := weekly(s)
		if l == 0 {
			v = 5
		}
		fmt.Fprintf(b, `{"skuId":"T%05d","locationId":"L%02d","weekStarting":"%s","actualDemand":%.0f}`, p, l,
			end.AddDate(0, 0, -7*(weeks-1-w)).Format("2006-01-02"), max(0, v+gauss(uint64(i))))
	})); err != nil {
		return section{}, err
	}
	setupTook := time.Since(setup)
	auth := map[string]string{"Authorization": "Bearer " + creds.Keys["PLANNER"]}
	// The forecasts exist: every series forecast once, the way recommendations ask for them.
	warm := time.Now()
	for off := 0; off < levels; off += 1000 {
		st, body, err := call("GET", fmt.Sprintf("%s/api/forecast?limit=1000&offset=%d&horizonWeeks=8&point=mean", svc.URL, off), auth, nil)
		if err != nil || st != 200 {
			return section{}, fmt.Errorf("warm forecasts: %d %s %v", st, truncate(body), err)
		}
	}
	warmTook := time.Since(warm)
	_, hwmBefore := memOf(svc.cmd.Process.Pid)
	profile("transfers-generate")
	start := time.Now()
	st, body, err := call("POST", svc.URL+"/api/transfers/recommendations", auth, []byte(`{}`))
	took := time.Since(start)
	if err != nil || st != 200 {
		return section{}, fmt.Errorf("generate: %d %s %v", st, truncate(body), err)
	}
	var res struct {
		Created  int `json:"created"`
		Products int `json:"productsEvaluated"`
	}
	_ = json.Unmarshal(body, &res)
	rss, hwm := memOf(svc.cmd.Process.Pid)
	start2 := time.Now()
	st, body, err = call("POST", svc.URL+"/api/transfers/recommendations", auth, []byte(`{}`))
	again := time.Since(start2)
	if err != nil || st != 200 {
		return section{}, fmt.Errorf("generate again: %d %s %v", st, truncate(body), err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "A tenant of %d products x %d locations (%d inventory levels, %d weeks of demand each: %d rows), imported through the API in %.0f s; every series' 8-week forecast computed once beforehand through `GET /api/forecast` (%.1f s). Alerts are disabled for the tenant so that their evaluation does not share the cores with the measurement.\n\n",
		products, locations, levels, weeks, levels*weeks, setupTook.Seconds(), warmTook.Seconds())
	b.WriteString("| run | seconds | products evaluated | recommendations created | service RSS after | service peak RSS |\n|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| `POST /api/transfers/recommendations` (first) | %.2f | %d | %d | %d MiB | %d MiB (before: %d MiB) |\n", took.Seconds(), res.Products, res.Created, rss/1024, hwm/1024, hwmBefore/1024)
	fmt.Fprintf(&b, "| the same again (nothing new to create: idempotent) | %.2f | | 0 | | |\n\n", again.Seconds())
	fmt.Fprintf(&b, "- %.2f s on 2 cores (target under 10 s): **%s**\n", took.Seconds(), verdict(took < 10*time.Second))
	fmt.Fprintf(&b, "- service peak RSS %d MiB, forecasts of every series cached and recommendations generated (target under 1 GiB): **%s**\n", hwm/1024, verdict(hwm < 1<<20))
	return section{Title: "Transfers: recommendations for 10,000 products x 50 locations", Command: "go run ./bench/cmd/benchrun -only transfers", Body: b.String()}, nil
}

// disableAlerts turns the tenant's alerts off: their evaluation after each import forecasts every
// series too and would share the two cores with what a benchmark measures.
func disableAlerts(svc *service, creds credentials) error {
	st, b, err := call("PUT", svc.URL+"/api/admin/alerts/config", map[string]string{"Authorization": "Bearer " + creds.Keys["ADMIN"]},
		[]byte(`{"config":{"enabled":false,"destinations":[],"cooldownMinutes":60,"alertTypes":{"stockout":true,"lowAtp":true,"forecastDeviation":true,"expiry":true,"slowMoving":true,"overstock":true}}}`))
	if err != nil || st != 200 {
		return fmt.Errorf("disable alerts: %d %s %v", st, truncate(b), err)
	}
	return nil
}
