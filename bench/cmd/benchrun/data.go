package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics"
)

// submit posts one import body and returns its job id.
func submit(svc *service, key, kind string, body []byte) (string, error) {
	st, b, err := call("POST", svc.URL+"/api/import/"+kind, map[string]string{"x-api-key": key}, body)
	if err != nil || st != 202 {
		return "", fmt.Errorf("import %s: %d %s %v", kind, st, truncate(b), err)
	}
	var acc struct{ JobID string }
	_ = json.Unmarshal(b, &acc)
	return acc.JobID, nil
}

// waitJobs polls until every job is finished and checks that none rejected a row.
func waitJobs(svc *service, key string, ids []string) error {
	for _, id := range ids {
		for {
			st, b, err := call("GET", svc.URL+"/api/import/status/"+id, map[string]string{"x-api-key": key}, nil)
			if err != nil || st != 200 {
				return fmt.Errorf("job status: %d %v", st, err)
			}
			var j struct {
				Status      string
				FailedCount int
				Errors      []any
			}
			_ = json.Unmarshal(b, &j)
			if j.Status == "COMPLETED" || j.Status == "FAILED" {
				if j.FailedCount > 0 {
					return fmt.Errorf("job %s rejected %d rows: %s", id, j.FailedCount, truncate(b))
				}
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// importAll submits bodies (at most 4 in flight) and waits for their jobs.
func importAll(svc *service, key, kind string, bodies <-chan []byte) (int, error) {
	var ids []string
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	n := 0
	for b := range bodies {
		n++
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id, err := submit(svc, key, kind, b)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			ids = append(ids, id)
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return n, firstErr
	}
	return n, waitJobs(svc, key, ids)
}

// chunked encodes rows (as {"<array>": [...]}) in request bodies of perBody rows.
func chunked(array string, total, perBody int, row func(i int, b *bytes.Buffer)) <-chan []byte {
	out := make(chan []byte, 2)
	go func() {
		defer close(out)
		for start := 0; start < total; start += perBody {
			var b bytes.Buffer
			b.WriteString(`{"` + array + `":[`)
			for i := start; i < min(start+perBody, total); i++ {
				if i > start {
					b.WriteByte(',')
				}
				row(i, &b)
			}
			b.WriteString("]}")
			out <- b.Bytes()
		}
	}()
	return out
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// memOf reads the resident set size and its peak (kB) of a process.
func memOf(pid int) (rss, hwm int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm
}

// clickhouseAddr starts the project's test ClickHouse (scripts/clickhouse.sh) and returns it.
func clickhouseAddr() (string, error) {
	if a := os.Getenv("SUPPLYPLAN_TEST_CLICKHOUSE_ADDR"); a != "" {
		return a, nil
	}
	out, err := exec.Command("bash", "scripts/clickhouse.sh", "start").Output()
	if err != nil {
		return "", fmt.Errorf("start ClickHouse: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// benchImport: 1,000,000 demand-history rows end to end (POSTs until the jobs complete) on the
// embedded store and on ClickHouse, next to a raw clickhouse-go batch insert of the same rows.
func benchImport(ctx context.Context, e *env) (section, error) {
	const products, locations, weeks = 5000, 4, 50
	const rows = products * locations * weeks
	week0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	type result struct {
		name string
		d    time.Duration
	}
	var results []result
	seed := func(svc *service, key string) error {
		if _, err := importAll(svc, key, "catalog", chunked("products", products, products, func(i int, b *bytes.Buffer) {
			fmt.Fprintf(b, `{"externalId":"P%05d"}`, i)
		})); err != nil {
			return err
		}
		_, err := importAll(svc, key, "inventory", chunked("levels", locations, locations, func(i int, b *bytes.Buffer) {
			fmt.Fprintf(b, `{"skuId":"P00000","locationId":"L%d"}`, i)
		}))
		return err
	}
	demand := func() <-chan []byte {
		return chunked("records", rows, 50000, func(i int, b *bytes.Buffer) {
			p, l, w := i%products, (i/products)%locations, i/(products*locations)
			fmt.Fprintf(b, `{"skuId":"P%05d","locationId":"L%d","weekStarting":"%s","actualDemand":%d}`, p, l,
				week0.AddDate(0, 0, 7*w).Format("2006-01-02"), 10+i%37)
		})
	}
	run := func(name string, extra ...string) error {
		svc, err := startService(e, extra...)
		if err != nil {
			return err
		}
		defer svc.Stop()
		creds, err := readCreds(svc.Data)
		if err != nil {
			return err
		}
		key := creds.Keys["import"]
		if err := seed(svc, key); err != nil {
			return err
		}
		// Bodies are encoded ahead so that the clock measures the service, not the client's JSON.
		var bodies [][]byte
		for b := range demand() {
			bodies = append(bodies, b)
		}
		ch := make(chan []byte, len(bodies))
		for _, b := range bodies {
			ch <- b
		}
		close(ch)
		profile("import-" + strings.Fields(name)[0])
		start := time.Now()
		if _, err := importAll(svc, key, "demand-history", ch); err != nil {
			return err
		}
		results = append(results, result{name, time.Since(start)})
		return nil
	}
	if err := run("embedded store"); err != nil {
		return section{}, err
	}
	chAddr, err := clickhouseAddr()
	if err != nil {
		return section{}, err
	}
	db := fmt.Sprintf("sp_bench_%d", time.Now().UnixNano())
	if err := run("ClickHouse store", "--clickhouse-addr", chAddr, "--clickhouse-database", db); err != nil {
		return section{}, err
	}
	raw := make([]supplyplan.DemandRow, 0, rows)
	for i := 0; i < rows; i++ {
		p, l, w := i%products, (i/products)%locations, i/(products*locations)
		raw = append(raw, supplyplan.DemandRow{SKU: fmt.Sprintf("P%05d", p), Location: fmt.Sprintf("L%d", l), Channel: "ALL",
			Week: week0.AddDate(0, 0, 7*w), Actual: float64(10 + i%37), Forecasted: float64(10 + i%37)})
	}
	d, err := analytics.RawInsertBaseline(ctx, chAddr, db, raw, 50000)
	if err != nil {
		return section{}, err
	}
	results = append(results, result{"raw clickhouse-go batch insert into a table shaped like the store's (baseline)", d})
	rate := func(r result) float64 { return rows / r.d.Seconds() }
	var b strings.Builder
	fmt.Fprintf(&b, "%d demand-history rows (%d products x %d locations x %d weeks) in 20 requests of 50,000 rows, at most 4 in flight, timed from the first POST to the last job COMPLETED. Bodies are encoded before the clock starts.\n\n", rows, products, locations, weeks)
	b.WriteString("| path | seconds | rows/s |\n|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %.2f | %.0f |\n", r.name, r.d.Seconds(), rate(r))
	}
	emb, chs, rw := rate(results[0]), rate(results[1]), rate(results[2])
	fmt.Fprintf(&b, "\n- embedded: %.0f rows/s (target at least 150,000): **%s**\n", emb, verdict(emb >= 150000))
	fmt.Fprintf(&b, "- ClickHouse path: %.0f%% of the raw insert (target at least 50%%): **%s**\n", 100*chs/rw, verdict(chs >= 0.5*rw))
	return section{Title: "Data plane: demand-history import", Command: "go run ./bench/cmd/benchrun -only import", Body: b.String()}, nil
}
