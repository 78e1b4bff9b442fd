package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// vmRSS is this process's resident set in bytes, after a collection that returns freed memory.
func vmRSS(tb testing.TB) int64 {
	tb.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	return procStatus(tb, "VmRSS")
}

// vmHWM is this process's peak resident set in bytes.
func vmHWM(tb testing.TB) int64 { return procStatus(tb, "VmHWM") }

// procStatus reads a size field of /proc/self/status, in bytes.
func procStatus(tb testing.TB, field string) int64 {
	tb.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// A retailer's promotion calendar: tens of thousands of one-week events over hundreds of series,
// written by 8 clients while a ninth reads forecasts. Memory must follow the events, not the
// writes, and a write must cost the same late as early (issue 10, item 0: the last writes ran at
// an eighth of the first ones' rate and the process grew by about 1 GB every 5 s).
func TestEventWritesScale(t *testing.T) {
	if testing.Short() {
		t.Skip("writes tens of thousands of events")
	}
	const products, locations, histWeeks = 20, 15, 60
	const events, writers, blocks = 24000, 8, 8
	s := MustStart(t, "")
	var prods, levels, demand []any
	for p := range products {
		prods = append(prods, map[string]any{"externalId": fmt.Sprintf("P%02d", p)})
		for l := range locations {
			levels = append(levels, map[string]any{"skuId": fmt.Sprintf("P%02d", p), "locationId": fmt.Sprintf("L%02d", l), "quantityOnHand": 100})
			for w := -histWeeks; w < 0; w++ {
				demand = append(demand, map[string]any{"skuId": fmt.Sprintf("P%02d", p), "locationId": fmt.Sprintf("L%02d", l),
					"weekStarting": monday(w).Format("2006-01-02"), "actualDemand": 40 + (p*7+l*3+w*w)%23})
			}
		}
	}
	s.Import("catalog", map[string]any{"products": prods})
	s.Import("inventory", map[string]any{"levels": levels})
	checkCounts(t, s.Import("demand-history", map[string]any{"records": demand}), len(demand), 0)
	admin, viewer := s.Key("ADMIN"), s.Key("VIEWER")
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: writers + 2}}
	post := func(body []byte) error {
		req, _ := http.NewRequest("POST", s.URL+"/api/forecast/events", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+admin)
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 201 {
			return fmt.Errorf("create event: %d %s", res.StatusCode, b)
		}
		return nil
	}
	// One read before the writes: every series forecast, the lift model learned.
	s.Do("GET", "/api/forecast?limit=1000&horizonWeeks=8", viewer, nil).Must(t, 200)
	rssBefore := vmRSS(t)

	// Event i: a one-week promotion of series i mod 300 in one of the next 52 weeks (the
	// promotion calendar); one in four carries a lift, the others are learned.
	body := func(i int) []byte {
		series, wk := i%(products*locations), 1+(i/(products*locations))%52
		v := map[string]any{"mechanic": "DEAL"}
		if i%4 == 0 {
			v = map[string]any{"liftPct": 0.2}
		}
		b, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("promo %d", i), "type": "PROMOTION", "value": v,
			"productMasterId": fmt.Sprintf("P%02d", series/locations), "locationId": fmt.Sprintf("L%02d", series%locations),
			"startsAt": monday(wk).Format(time.RFC3339), "endsAt": monday(wk + 1).Format(time.RFC3339)})
		return b
	}
	var next, done atomic.Int64
	blockEnd := make([]time.Time, blocks+1)
	blockCPU := make([]time.Duration, blocks+1) // the process's CPU time (server and clients) at each block's end
	var mu sync.Mutex
	stop := make(chan struct{})
	var reads atomic.Int64
	var wg, rg sync.WaitGroup
	var failed atomic.Value
	rg.Add(1)
	go func() { // the reader: one series' forecast at a time, round the tenant
		defer rg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			q := fmt.Sprintf("/api/forecast?productMasterId=P%02d&locationId=L%02d&horizonWeeks=8", (i/locations)%products, i%locations)
			req, _ := http.NewRequest("GET", s.URL+q, nil)
			req.Header.Set("Authorization", "Bearer "+viewer)
			res, err := client.Do(req)
			if err != nil {
				failed.Store(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				failed.Store(fmt.Errorf("read forecast: %d", res.StatusCode))
				return
			}
			reads.Add(1)
		}
	}()
	start := time.Now()
	blockEnd[0] = start
	blockCPU[0] = processCPU()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= events || failed.Load() != nil {
					return
				}
				if err := post(body(i)); err != nil {
					failed.Store(err)
					return
				}
				if n := done.Add(1); n%(events/blocks) == 0 {
					mu.Lock()
					blockEnd[n/(events/blocks)] = time.Now()
					blockCPU[n/(events/blocks)] = processCPU()
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	rate := func(b int) float64 { return float64(events/blocks) / blockEnd[b].Sub(blockEnd[b-1]).Seconds() }
	// The first and the last quarter of the writes, each the faster of its two blocks: other work
	// on a shared machine slows a block down, it never speeds one up.
	first := max(rate(1), rate(2))
	last := max(rate(blocks-1), rate(blocks))
	rssAfter := vmRSS(t)
	growth := rssAfter - rssBefore
	rates := make([]string, blocks)
	for b := range blocks {
		rates[b] = fmt.Sprintf("%.0f", rate(b+1))
	}
	t.Logf("writes/s by block of %d: %s", events/blocks, strings.Join(rates, " "))
	t.Logf("%d events in %s (%.0f/s) with %d forecast reads; first quarter %.0f/s, last quarter %.0f/s (%.2f); RSS %d MiB -> %d MiB (+%d MiB, %.0f bytes an event), peak %d MiB",
		events, took.Round(time.Millisecond), float64(events)/took.Seconds(), reads.Load(), first, last, last/first,
		rssBefore>>20, rssAfter>>20, growth>>20, float64(growth)/events, vmHWM(t)>>20)
	// The verdict is on CPU time per write, which other processes on a shared machine barely
	// change (wall-clock rates swing with them: one run under load read 569/s first and 283/s last
	// with the CPU per write unchanged). The reads run throughout, so each block carries its share.
	cpuPer := func(b int) time.Duration { return (blockCPU[b] - blockCPU[b-1]) / time.Duration(events/blocks) }
	firstCPU := min(cpuPer(1), cpuPer(2))
	lastCPU := min(cpuPer(blocks-1), cpuPer(blocks))
	cpus := make([]string, blocks)
	for b := range blocks {
		cpus[b] = cpuPer(b + 1).Round(time.Microsecond).String()
	}
	t.Logf("CPU per write by block: %s; first quarter %s, last quarter %s (%.2f)", strings.Join(cpus, " "),
		firstCPU.Round(time.Microsecond), lastCPU.Round(time.Microsecond), float64(lastCPU)/float64(firstCPU))
	if lastCPU > 2*firstCPU {
		t.Errorf("the last %d writes took %s of CPU each, the first %s: a write costs more as events accumulate (wall: %.0f/s then %.0f/s)",
			2*events/blocks, lastCPU, firstCPU, first, last)
	}
	// An event, its change-history entry and its index entries take about 1.5 KB (12 KB under
	// -race); the bound is five times that.
	perEvent := int64(8 << 10)
	if raceDetector {
		perEvent = 64 << 10
	}
	if limit := int64(events) * perEvent; growth > limit {
		t.Errorf("RSS grew by %d MiB for %d events (limit %d MiB): memory follows the writes, not the data", growth>>20, events, limit>>20)
	}
	if reads.Load() == 0 {
		t.Error("no forecast was read while the events were written")
	}
	// The forecasts still see the events: week 1 of series 0 holds its promotions.
	f := list(s.Do("GET", "/api/forecast?productMasterId=P00&locationId=L00&horizonWeeks=2", viewer, nil).Must(t, 200), "forecasts")[0].(map[string]any)
	w := list(f, "periods")[1].(map[string]any)
	want := 0
	for i := 0; i < events; i += products * locations { // the events of series 0
		if (i/(products*locations))%52 == 0 {
			want++
		}
	}
	if n := len(list(w, "events")); n != want {
		t.Errorf("week 1 of P00@L00 has %d events, want %d", n, want)
	}
	if q, b := num(w, "quantity"), num(w, "baseline"); math.IsNaN(q) || q <= b {
		t.Errorf("week 1 of P00@L00: quantity %v, baseline %v: the promotions are not applied", q, b)
	}
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
