package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// benchOps: the api section's reads (GET /api/forecast/scenarios/[id]) and durable writes (POST
// /api/forecast/events) against two services started alike, one with the operations features on
// (Prometheus metrics through --ops-addr, one request log line per request at info into a file)
// and one with them off (--request-log=false, no --ops-addr), in interleaved rounds.
func benchOps(_ context.Context, e *env) (section, error) {
	off, err := startService(e, "--log-level", "info", "--request-log=false")
	if err != nil {
		return section{}, err
	}
	defer off.Stop()
	logPath := filepath.Join(e.tmp, "ops-requests.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return section{}, err
	}
	defer logFile.Close()
	opsAddr, err := freeAddr()
	if err != nil {
		return section{}, err
	}
	e.serviceStderr = logFile
	on, err := startService(e, "--log-level", "info", "--log-format", "json", "--ops-addr", opsAddr)
	e.serviceStderr = nil
	if err != nil {
		return section{}, err
	}
	defer on.Stop()

	type target struct {
		svc            *service
		auth           map[string]string
		getURL, events string
	}
	setup := func(svc *service) (target, error) {
		creds, err := readCreds(svc.Data)
		if err != nil {
			return target{}, err
		}
		t := target{svc: svc, auth: map[string]string{"Authorization": "Bearer " + creds.Keys["PLANNER"]}, events: svc.URL + "/api/forecast/events"}
		if _, err := importAll(svc, creds.Keys["import"], "catalog", chunked("products", 500, 500, func(i int, b *bytes.Buffer) {
			fmt.Fprintf(b, `{"externalId":"sku-%d"}`, i)
		})); err != nil {
			return t, err
		}
		status, body, err := call("POST", svc.URL+"/api/forecast/scenarios", t.auth, []byte(`{"name":"Benchmark scenario","type":"PROMOTIONAL","assumptions":{"narrative":"steady","globalLiftPct":0.05,"categoryAdjustments":[{"categoryId":"beverages","liftPct":0.1}]}}`))
		if err != nil || status != 201 {
			return t, fmt.Errorf("create scenario: %d %s %v", status, body, err)
		}
		var created struct {
			Scenario struct{ ID string } `json:"scenario"`
		}
		_ = json.Unmarshal(body, &created)
		t.getURL = svc.URL + "/api/forecast/scenarios/" + created.Scenario.ID
		return t, nil
	}
	tOff, err := setup(off)
	if err != nil {
		return section{}, err
	}
	tOn, err := setup(on)
	if err != nil {
		return section{}, err
	}
	eventBody := func(w, i int) []byte {
		return []byte(fmt.Sprintf(`{"name":"Promo %d-%d","type":"PROMOTION","startsAt":"%s","endsAt":"%s","value":{"liftPct":0.25,"stackingMode":"MULTIPLICATIVE"},"productMasterId":"sku-%d"}`, w, i, eventStarts, eventEnds, i%500))
	}
	dur := max(e.duration/2, 2*time.Second)
	// phase runs one load phase and also returns the service's CPU time per request (warm-up
	// included on both sides): on a busy machine it is steadier than the rates.
	type phaseResult struct {
		loadResult
		cpuUS float64
	}
	phase := func(t target, write bool) (phaseResult, error) {
		spec := loadSpec{URL: t.getURL, Method: "GET", Headers: t.auth, WantStatus: 200, Concurrency: e.concurrency, Warmup: time.Second, Duration: dur}
		if write {
			spec = loadSpec{URL: t.events, Method: "POST", Headers: t.auth, Body: eventBody, WantStatus: 201, Concurrency: e.concurrency, Warmup: time.Second, Duration: dur}
		}
		pid := t.svc.cmd.Process.Pid
		c0 := cpuSeconds(pid)
		r, err := runLoad(spec)
		p := phaseResult{loadResult: r}
		if err == nil && r.RPS > 0 {
			p.cpuUS = 1e6 * (cpuSeconds(pid) - c0) / (r.RPS * (dur + time.Second).Seconds())
		}
		return p, err
	}

	// Interleaved rounds; the order of off and on alternates so that neither always runs first.
	const rounds = 5 // a 10 % difference is within the spread of one round on a shared machine
	type round struct{ rOff, rOn, wOff, wOn phaseResult }
	var rs []round
	for i := range rounds {
		var x round
		steps := []struct {
			res   *phaseResult
			t     target
			write bool
		}{{&x.rOff, tOff, false}, {&x.rOn, tOn, false}, {&x.wOff, tOff, true}, {&x.wOn, tOn, true}}
		if i%2 == 1 {
			steps[0], steps[1], steps[2], steps[3] = steps[1], steps[0], steps[3], steps[2]
		}
		for _, st := range steps {
			if *st.res, err = phase(st.t, st.write); err != nil {
				return section{}, fmt.Errorf("round %d: %w", i+1, err)
			}
		}
		rs = append(rs, x)
	}
	var readRatios, writeRatios, readCPU, writeCPU []float64
	for _, x := range rs {
		readRatios = append(readRatios, x.rOn.RPS/x.rOff.RPS)
		writeRatios = append(writeRatios, x.wOn.RPS/x.wOff.RPS)
		readCPU = append(readCPU, x.rOn.cpuUS/x.rOff.cpuUS)
		writeCPU = append(writeCPU, x.wOn.cpuUS/x.wOff.cpuUS)
	}
	time.Sleep(300 * time.Millisecond) // the service writes its INFO lines within 100 ms
	lines, bytesLogged, err := countLines(logPath)
	if err != nil {
		return section{}, err
	}
	served, err := scrapeRequests(opsAddr)
	if err != nil {
		return section{}, err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Two services started alike on their own data dirs: **off** (`--log-level info --request-log=false`, no `--ops-addr`) and **on** (`--log-level info --log-format json --ops-addr %s`: Prometheus metrics recorded, one JSON request log line per request at info, stderr into a file). %d keep-alive connections, %d interleaved rounds of %s after 1 s warm-up per phase (reads off and on, then writes; the order of off and on alternates); the verdicts take the median of the rounds' ratios.\n\n", opsAddr, e.concurrency, rounds, dur)
	b.WriteString("| round | service | endpoint | requests/s | p50 | p99 | errors | service CPU per request |\n|---|---|---|---|---|---|---|---|\n")
	for i, x := range rs {
		pre := fmt.Sprintf("| %d ", i+1)
		for _, p := range []struct {
			r        phaseResult
			svc, end string
		}{{x.rOff, "off", "`GET /api/forecast/scenarios/[id]`"}, {x.rOn, "on", "`GET /api/forecast/scenarios/[id]`"},
			{x.wOff, "off", "`POST /api/forecast/events` (durable)"}, {x.wOn, "on", "`POST /api/forecast/events` (durable)"}} {
			fmt.Fprintf(&b, "%s| %s %s %.1f µs |\n", pre, p.svc, p.r.row(p.end), p.r.cpuUS)
		}
	}
	r, w := median(readRatios), median(writeRatios)
	fmt.Fprintf(&b, "\n- reads with metrics and request logs on: %s of off in the %d rounds, median %.0f%% (target at least 90%%): **%s**\n", percents(readRatios), rounds, 100*r, verdict(r >= 0.9))
	fmt.Fprintf(&b, "- durable writes with metrics and request logs on: %s of off, median %.0f%% (target at least 90%%): **%s**\n", percents(writeRatios), 100*w, verdict(w >= 0.9))
	fmt.Fprintf(&b, "- service CPU per request, on against off: reads %s (median %.0f%%), writes %s (median %.0f%%)\n", percents(readCPU), 100*median(readCPU), percents(writeCPU), 100*median(writeCPU))
	fmt.Fprintf(&b, "- the on service wrote %d request log lines (%.1f MB) and counted %.0f requests in `supplyplan_http_requests_total`\n", lines, float64(bytesLogged)/1e6, served)
	return section{Title: "Operations: metrics and request logs on next to off", Command: "go run ./bench/cmd/benchrun -only ops", Body: b.String()}, nil
}

func countLines(path string) (lines int, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		l, err := r.ReadSlice('\n')
		size += int64(len(l))
		if bytes.Contains(l, []byte(`"msg":"request"`)) {
			lines++
		}
		if err == io.EOF {
			return lines, size, nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return lines, size, err
		}
	}
}

// scrapeRequests sums supplyplan_http_requests_total on the operations listener.
func scrapeRequests(addr string) (float64, error) {
	status, body, err := call("GET", "http://"+addr+"/metrics", nil, nil)
	if err != nil || status != 200 {
		return 0, fmt.Errorf("scrape metrics: %d %v", status, err)
	}
	var sum float64
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "supplyplan_http_requests_total{") {
			v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			if err == nil {
				sum += v
			}
		}
	}
	return sum, nil
}
