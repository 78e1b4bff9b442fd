package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics"
)

// submit posts one import body and returns its job id.
func submit(svc *service, key, kind string, body []byte) (string, error) {
	// One Idempotency-Key for every attempt: a request answered 503 (its deadline passed while the
	// tenant was busy, e.g. on a loaded machine) may still have been accepted, and its retry then
	// replays that job instead of submitting the body twice; 409 means it is still running.
	headers := map[string]string{"x-api-key": key, "Idempotency-Key": fmt.Sprintf("bench-submit-%d-%d", os.Getpid(), callSeq.Add(1))}
	for attempt := 1; ; attempt++ {
		st, b, err := call("POST", svc.URL+"/api/import/"+kind, headers, body)
		if err == nil && (st == 503 || st == 409) && attempt < 30 {
			fmt.Fprintf(os.Stderr, "import %s: %d (attempt %d), retrying with the same Idempotency-Key: %s\n", kind, st, attempt, truncate(b))
			time.Sleep(time.Second)
			continue
		}
		if err != nil || st != 202 {
			return "", fmt.Errorf("import %s: %d %s %v", kind, st, truncate(b), err)
		}
		var acc struct{ JobID string }
		_ = json.Unmarshal(b, &acc)
		return acc.JobID, nil
	}
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

// clickhouseAddr starts the project's test ClickHouse (scripts/clickhouse.sh) and returns it, with
// release, which stops it again when this call started it: an idle ClickHouse still runs its
// background threads (log flushes, merges), which the later sections' measurements would share the
// cores with. A server that was running already (make test's, an operator's) is left running.
func clickhouseAddr() (addr string, release func(), err error) {
	if a := os.Getenv("SUPPLYPLAN_TEST_CLICKHOUSE_ADDR"); a != "" {
		return a, func() {}, nil
	}
	running := exec.Command("bash", "scripts/clickhouse.sh", "status").Run() == nil
	out, err := exec.Command("bash", "scripts/clickhouse.sh", "start").Output()
	if err != nil {
		return "", nil, fmt.Errorf("start ClickHouse: %w", err)
	}
	release = func() {}
	if !running {
		release = func() { _ = exec.Command("bash", "scripts/clickhouse.sh", "stop").Run() }
	}
	return strings.TrimSpace(string(out)), release, nil
}

// benchImport: 1,000,000 demand-history rows end to end (POSTs until the jobs complete) on the
// embedded store once, then on ClickHouse in three rounds interleaved with a raw clickhouse-go batch
// insert of the same rows (service, raw, service, raw, ...), each round on a fresh database: the
// ratio reported is the median of the three rounds' ratios, so that other work on a shared machine,
// which comes and goes, moves both sides of a pair.
func benchImport(ctx context.Context, e *env) (section, error) {
	const products, locations, weeks = 5000, 4, 50
	const rows = products * locations * weeks
	const rounds = 3
	week0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
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
	// Bodies are encoded once, before any clock starts, so that the clock measures the service,
	// not the client's JSON.
	var bodies [][]byte
	for b := range chunked("records", rows, 50000, func(i int, b *bytes.Buffer) {
		p, l, w := i%products, (i/products)%locations, i/(products*locations)
		fmt.Fprintf(b, `{"skuId":"P%05d","locationId":"L%d","weekStarting":"%s","actualDemand":%d}`, p, l,
			week0.AddDate(0, 0, 7*w).Format("2006-01-02"), 10+i%37)
	}) {
		bodies = append(bodies, b)
	}
	run := func(name string, extra ...string) (time.Duration, error) {
		svc, err := startService(e, extra...)
		if err != nil {
			return 0, err
		}
		defer svc.Stop()
		creds, err := readCreds(svc.Data)
		if err != nil {
			return 0, err
		}
		key := creds.Keys["import"]
		if err := seed(svc, key); err != nil {
			return 0, err
		}
		ch := make(chan []byte, len(bodies))
		for _, b := range bodies {
			ch <- b
		}
		close(ch)
		syscall.Sync() // what the last run wrote (ClickHouse's parts) is not written back in this one
		profile("import-" + name)
		m := meterCPU("import "+name, svc)
		start := time.Now()
		if _, err := importAll(svc, key, "demand-history", ch); err != nil {
			return 0, err
		}
		d := time.Since(start)
		m.done()
		return d, nil
	}
	embedded, err := run("embedded")
	if err != nil {
		return section{}, err
	}
	chAddr, releaseCH, err := clickhouseAddr()
	if err != nil {
		return section{}, err
	}
	defer releaseCH()
	raw := make([]supplyplan.DemandRow, 0, rows)
	for i := 0; i < rows; i++ {
		p, l, w := i%products, (i/products)%locations, i/(products*locations)
		raw = append(raw, supplyplan.DemandRow{SKU: fmt.Sprintf("P%05d", p), Location: fmt.Sprintf("L%d", l), Channel: "ALL",
			Week: week0.AddDate(0, 0, 7*w), Actual: float64(10 + i%37), Forecasted: float64(10 + i%37)})
	}
	type round struct{ svc, raw time.Duration }
	var rs []round
	for r := range rounds {
		db := fmt.Sprintf("sp_bench_%d_r%d", time.Now().UnixNano(), r)
		d, err := run("clickhouse", "--clickhouse-addr", chAddr, "--clickhouse-database", db)
		if err != nil {
			return section{}, fmt.Errorf("round %d, ClickHouse store: %w", r+1, err)
		}
		syscall.Sync()
		m := meterCPU("import raw", nil)
		rd, err := analytics.RawInsertBaseline(ctx, chAddr, db, raw, 50000)
		m.done()
		if err != nil {
			return section{}, fmt.Errorf("round %d, raw insert: %w", r+1, err)
		}
		if err := analytics.DropDatabase(ctx, chAddr, db); err != nil {
			return section{}, err
		}
		rs = append(rs, round{d, rd})
	}
	rate := func(d time.Duration) float64 { return rows / d.Seconds() }
	ratios := make([]float64, len(rs))
	var b strings.Builder
	fmt.Fprintf(&b, "%d demand-history rows (%d products x %d locations x %d weeks) in 20 requests of 50,000 rows, at most 4 in flight, timed from the first POST to the last job COMPLETED. Bodies are encoded before the clock starts. The ClickHouse path runs in %d rounds interleaved with the raw insert (service, raw, service, raw, ...), each round on a fresh service and database; the ratio is the median of the rounds' ratios.\n\n", rows, products, locations, weeks, rounds)
	b.WriteString("| path | seconds | rows/s |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| embedded store | %.2f | %.0f |\n", embedded.Seconds(), rate(embedded))
	for i, r := range rs {
		ratios[i] = rate(r.svc) / rate(r.raw)
		fmt.Fprintf(&b, "| round %d: ClickHouse store | %.2f | %.0f |\n", i+1, r.svc.Seconds(), rate(r.svc))
		fmt.Fprintf(&b, "| round %d: raw clickhouse-go batch insert into a table shaped like the store's (baseline) | %.2f | %.0f |\n", i+1, r.raw.Seconds(), rate(r.raw))
	}
	med := median(ratios)
	emb := rate(embedded)
	fmt.Fprintf(&b, "\n- embedded: %.0f rows/s (target at least 150,000): **%s**\n", emb, verdict(emb >= 150000))
	fmt.Fprintf(&b, "- ClickHouse path: %s of the raw insert in the three rounds, median %.0f%% (target at least 70%%): **%s**\n",
		percents(ratios), 100*med, verdict(med >= 0.7))
	return section{Title: "Data plane: demand-history import", Command: "go run ./bench/cmd/benchrun -only import", Body: b.String()}, nil
}

// median is the middle value of xs (the mean of the two middle ones for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percents renders ratios as "48%, 52%, 50%".
func percents(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%.0f%%", 100*x)
	}
	return strings.Join(out, ", ")
}
