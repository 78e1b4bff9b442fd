package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The tenant of the memory benchmark; smaller ones (to measure a build that could not hold the
// full one) through the flags.
var (
	memProducts  = flag.Int("memory-products", 10000, "memory benchmark: products")
	memLocations = flag.Int("memory-locations", 500, "memory benchmark: locations (every product is stocked at every location)")
	memWeeks     = flag.Int("memory-weeks", 104, "memory benchmark: weeks of demand history per sku-location")
	memSample    = flag.Int("memory-sample", 20000, "memory benchmark: sku-locations whose forecast is read before measuring")
)

// memData is the synthetic tenant: product i is "M%05d", location j "S%03d"; every product is
// stocked at every location. Location S000 is a distribution centre selling about 20 times what a
// store sells; one store series in six is intermittent. Quantities are whole units, as in retail
// point-of-sale history.
type memData struct {
	products, locations, weeks int
	weekStr                    []string // weekStarting of each history week, oldest first
}

func newMemData(products, locations, weeks int) memData {
	d := memData{products: products, locations: locations, weeks: weeks}
	end := time.Now().UTC().Truncate(24 * time.Hour)
	end = end.AddDate(0, 0, -((int(end.Weekday())+6)%7)-7) // last week's Monday
	for w := 0; w < weeks; w++ {
		d.weekStr = append(d.weekStr, end.AddDate(0, 0, -7*(weeks-1-w)).Format("2006-01-02"))
	}
	return d
}

func (d memData) series() int { return d.products * d.locations }

func appendID(b []byte, prefix byte, i, width int) []byte {
	b = append(b, prefix)
	s := strconv.Itoa(i)
	for k := len(s); k < width; k++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

func (d memData) sku(b []byte, p int) []byte { return appendID(b, 'M', p, 5) }
func (d memData) loc(b []byte, l int) []byte { return appendID(b, 'S', l, 3) }

// rate is the mean weekly demand of series s.
func (d memData) rate(s int) float64 {
	r := 1 + 14*uniform(uint64(s)*7+1)
	if s%d.locations == 0 {
		r *= 20
	}
	return r
}

// demand is the whole-unit demand of series s in week w.
func (d memData) demand(s, w int) int64 {
	i := uint64(s)*uint64(d.weeks) + uint64(w)
	if s%d.locations != 0 && s%6 == 5 && uniform(i*3+2) < 0.7 { // intermittent
		return 0
	}
	r := d.rate(s)
	v := r * (1 + 0.25*float64(w%52/13-1)/2) // a mild quarterly pattern
	v += gauss(i) * (0.3 * r)
	if v < 0 {
		return 0
	}
	return int64(v + 0.5)
}

func (d memData) onHand(s int) int64 { return int64(d.rate(s)*(3+8*uniform(uint64(s)*13+5))) + 5 }

// inventoryRow appends level s (product s/locations at location s%locations).
func (d memData) inventoryRow(b []byte, s int) []byte {
	p, l := s/d.locations, s%d.locations
	b = append(b, `{"skuId":"`...)
	b = d.sku(b, p)
	b = append(b, `","locationId":"`...)
	b = d.loc(b, l)
	b = append(b, `","quantityOnHand":`...)
	b = strconv.AppendInt(b, d.onHand(s), 10)
	b = append(b, `,"reorderPoint":`...)
	b = strconv.AppendInt(b, int64(2*d.rate(s))+1, 10)
	return append(b, '}')
}

// demandRow appends week w of series s.
func (d memData) demandRow(b []byte, s, w int) []byte {
	p, l := s/d.locations, s%d.locations
	b = append(b, `{"skuId":"`...)
	b = d.sku(b, p)
	b = append(b, `","locationId":"`...)
	b = d.loc(b, l)
	b = append(b, `","weekStarting":"`...)
	b = append(b, d.weekStr[w]...)
	b = append(b, `","actualDemand":`...)
	b = strconv.AppendInt(b, d.demand(s, w), 10)
	return append(b, '}')
}

// rawBytes is the size of the data in a compact binary form: the bytes of the ids, 8 bytes per
// number imported (a float64: a product's two prices, a level's on-hand and reorder point, a
// week's actual demand; the week itself is implied by its position in the series).
func (d memData) rawBytes() int64 {
	var n int64
	n += int64(d.products) * (6 + 16)
	n += int64(d.locations) * 4
	n += int64(d.series()) * (6 + 4 + 16)
	n += int64(d.series()) * int64(d.weeks) * 8
	return n
}

// bodies encodes rows [0, total) as {"<array>": [...]} bodies of perBody rows, row by row.
func memBodies(array string, total, perBody int, row func(b []byte, i int) []byte) <-chan []byte {
	out := make(chan []byte, 2)
	go func() {
		defer close(out)
		for start := 0; start < total; start += perBody {
			b := make([]byte, 0, perBody*96)
			b = append(b, `{"`+array+`":[`...)
			for i := start; i < min(start+perBody, total); i++ {
				if i > start {
					b = append(b, ',')
				}
				b = row(b, i)
			}
			out <- append(b, "]}"...)
		}
	}()
	return out
}

// importPaced submits bodies one at a time, keeping at most outstanding jobs unfinished (a
// client loading a large tenant waits for its jobs rather than queueing gigabytes of bodies), and
// waits for the last ones.
func importPaced(svc *service, key, kind string, bodies <-chan []byte, outstanding int) (int, error) {
	var pending []string
	n := 0
	for b := range bodies {
		for len(pending) >= outstanding {
			if err := waitJobs(svc, key, pending[:1]); err != nil {
				return n, err
			}
			pending = pending[1:]
		}
		id, err := submit(svc, key, kind, b)
		if err != nil {
			return n, err
		}
		pending = append(pending, id)
		n++
	}
	return n, waitJobs(svc, key, pending)
}

// memFigures is the service's memory at one point.
type memFigures struct {
	RSS, Anon   int64 // kB, from /proc/<pid>/status
	HeapInuse   int64 // bytes, the Go heap's spans in use after a collection
	Released    bool  // the service returned its free memory to the OS before RSS was read
	HeapSource  string
	SettleAfter time.Duration
}

// procMem reads VmRSS and RssAnon (kB).
func procMem(pid int) (rss, anon int64) {
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
		case "RssAnon":
			anon = n
		}
	}
	return rss, anon
}

// settledMem runs a garbage collection in the service (through its debug port) and waits until its
// RSS stops moving (the runtime hands free memory back in the background): what the service keeps
// resident for its data. With release it then asks the service to return every free page at once
// (GET /debug/memory?release=1; a build without that handler is measured as settled).
func settledMem(svc *service, debug string, release bool) (memFigures, error) {
	var m memFigures
	pid := svc.cmd.Process.Pid
	st, body, err := call("GET", "http://"+debug+"/debug/pprof/heap?gc=1&debug=1", nil, nil)
	if err != nil || st != 200 {
		return m, fmt.Errorf("heap profile: %d %v", st, err)
	}
	m.HeapInuse, m.HeapSource = memStatLine(body, "# HeapInuse = "), "runtime.MemStats.HeapInuse after a forced GC"
	start := time.Now()
	last, stable := int64(-1), 0
	for time.Since(start) < 90*time.Second && stable < 5 {
		time.Sleep(time.Second)
		rss, _ := procMem(pid)
		if last > 0 && abs64(rss-last) <= last/200 {
			stable++
		} else {
			stable = 0
		}
		last = rss
	}
	m.SettleAfter = time.Since(start).Round(time.Second)
	if release {
		st, body, err := call("GET", "http://"+debug+"/debug/memory?release=1", nil, nil)
		if err == nil && st == 200 {
			var r struct {
				HeapInuse int64 `json:"heapInuse"`
			}
			if json.Unmarshal(body, &r) == nil && r.HeapInuse > 0 {
				m.HeapInuse, m.Released = r.HeapInuse, true
				m.HeapSource = "runtime.MemStats.HeapInuse after a forced GC"
			}
		}
	}
	m.RSS, m.Anon = procMem(pid)
	return m, nil
}

func memStatLine(body []byte, prefix string) int64 {
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// freeAddr returns a loopback address with a port free right now (for the service's debug port).
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// benchMemory: the resident memory of a tenant of 10,000 products x 500 locations (5 million
// sku-locations) with two years of weekly demand history, loaded through the API on the embedded
// defaults, next to the raw size of its data; and that re-importing the same data does not grow it.
func benchMemory(_ context.Context, e *env) (section, error) {
	d := newMemData(*memProducts, *memLocations, *memWeeks)
	series := d.series()
	debug, err := freeAddr()
	if err != nil {
		return section{}, err
	}
	svc, err := startService(e, "--debug-addr", debug)
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
	pid := svc.cmd.Process.Pid
	fmt.Fprintf(os.Stderr, "memory: service pid %d, debug http://%s/debug/pprof/\n", pid, debug)
	if _, err := importPaced(svc, key, "catalog", memBodies("products", d.products, 50000, func(b []byte, i int) []byte {
		b = append(b, `{"externalId":"`...)
		b = d.sku(b, i)
		return append(b, `","unitCost":4,"unitPrice":10}`...)
	}), 4); err != nil {
		return section{}, err
	}
	inventory := func() (time.Duration, error) {
		start := time.Now()
		_, err := importPaced(svc, key, "inventory", memBodies("levels", series, 50000, d.inventoryRow), 4)
		return time.Since(start), err
	}
	invTook, err := inventory()
	if err != nil {
		return section{}, err
	}
	fmt.Fprintf(os.Stderr, "memory: inventory of %d levels in %.0f s, RSS %d MiB\n", series, invTook.Seconds(), rssMiB(pid))
	// The tenant before its history: the difference to the loaded figure is what the weekly
	// history costs per sku-location and per week, so a run with fewer weeks (make bench's, to
	// stay inside its time budget) still says what a longer history costs.
	noHistory, err := settledMem(svc, debug, true)
	if err != nil {
		return section{}, err
	}
	rows := series * d.weeks
	dStart := time.Now()
	if _, err := importPaced(svc, key, "demand-history", memBodies("records", rows, 50000, func(b []byte, i int) []byte {
		return d.demandRow(b, i/d.weeks, i%d.weeks)
	}), 4); err != nil {
		return section{}, err
	}
	demandTook := time.Since(dStart)
	fmt.Fprintf(os.Stderr, "memory: %d demand rows in %.0f s, RSS %d MiB\n", rows, demandTook.Seconds(), rssMiB(pid))

	// Forecasts of a sample, read one series at a time by two clients: the forecast cache holds
	// them as it would after planners looked at them.
	auth := map[string]string{"Authorization": "Bearer " + creds.Keys["VIEWER"]}
	sample := min(*memSample, series)
	fStart := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ferr error
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var u []byte
			for i := c; i < sample; i += 2 {
				s := int(uniform(uint64(i)*17+3) * float64(series))
				u = append(u[:0], svc.URL+"/api/forecast?productMasterId="...)
				u = d.sku(u, s/d.locations)
				u = append(u, "&locationId="...)
				u = d.loc(u, s%d.locations)
				st, body, err := call("GET", string(u), auth, nil)
				if err != nil || st != 200 {
					mu.Lock()
					if ferr == nil {
						ferr = fmt.Errorf("forecast: %d %s %v", st, truncate(body), err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if ferr != nil {
		return section{}, ferr
	}
	forecastTook := time.Since(fStart)
	_, peakLoaded := memOf(pid)
	loaded, err := settledMem(svc, debug, false)
	if err != nil {
		return section{}, err
	}
	loadedFree, err := settledMem(svc, debug, true)
	if err != nil {
		return section{}, err
	}
	// The same inventory again: every level is written a second time with the same values.
	reTook, err := inventory()
	if err != nil {
		return section{}, err
	}
	again, err := settledMem(svc, debug, false)
	if err != nil {
		return section{}, err
	}
	againFree, err := settledMem(svc, debug, true)
	if err != nil {
		return section{}, err
	}
	_, peak := memOf(pid)

	raw := d.rawBytes()
	per := func(kb int64) float64 { return float64(kb) * 1024 / float64(series) }
	perB := func(b int64) float64 { return float64(b) / float64(series) }
	var b strings.Builder
	fmt.Fprintf(&b, "One tenant of %d products x %d locations (%d sku-locations), every one with an inventory level and %d weeks of weekly demand history (%d rows; whole units, a distribution centre selling about 20 times a store, one store series in six intermittent), loaded through the import API on the embedded defaults, 50,000 rows a request, at most 4 jobs unfinished: catalog, inventory in %.0f s, demand history in %.0f s (%.0f rows/s). Then the forecasts of %d sku-locations picked at random were read one at a time (`GET /api/forecast?productMasterId&locationId`, 2 clients, %.1f s), so the forecast cache holds what planners looked at. Alerts are disabled for the tenant (their evaluation after an import forecasts every series). Memory is read from `/proc/<pid>/status` after a forced GC (`/debug/pprof/heap?gc=1` on the service's debug port) once RSS has stopped moving, and again after the service returned its free pages to the OS (`/debug/memory?release=1`).\n\n",
		d.products, d.locations, series, d.weeks, rows, invTook.Seconds(), demandTook.Seconds(), float64(rows)/demandTook.Seconds(), sample, forecastTook.Seconds())
	b.WriteString("| point | RSS | RssAnon | Go heap in use | RSS per sku-location | heap per sku-location |\n|---|---|---|---|---|---|\n")
	row := func(name string, m memFigures) {
		fmt.Fprintf(&b, "| %s | %d MiB | %d MiB | %d MiB | **%.0f B** | %.0f B |\n", name, m.RSS/1024, m.Anon/1024, m.HeapInuse>>20, per(m.RSS), perB(m.HeapInuse))
	}
	row(fmt.Sprintf("loaded, settled (%s)", loaded.SettleAfter), loaded)
	if loadedFree.Released {
		row("loaded, free pages returned to the OS", loadedFree)
	}
	row(fmt.Sprintf("the same inventory imported again (%.0f s), settled", reTook.Seconds()), again)
	if againFree.Released {
		row("the same inventory imported again, free pages returned", againFree)
	}
	fmt.Fprintf(&b, "| raw data: ids, 8 bytes per imported number (prices, on-hand, reorder point, %d weekly actuals) | %d MiB | | | %.0f B | |\n\n",
		d.weeks, raw>>20, float64(raw)/float64(series))
	fmt.Fprintf(&b, "Peak RSS while loading and reading forecasts: %d MiB; over the whole run (re-import included): %d MiB.\n\n", peakLoaded/1024, peak/1024)
	best := loaded
	if loadedFree.Released {
		best = loadedFree
	}
	bestAgain := again
	if againFree.Released {
		bestAgain = againFree
	}
	if noHistory.Released && loadedFree.Released && d.weeks > 0 {
		histRSS := per(loadedFree.RSS - noHistory.RSS)
		histHeap := perB(loadedFree.HeapInuse - noHistory.HeapInuse)
		fmt.Fprintf(&b, "Before the demand history (catalog and inventory only, free pages returned): RSS %d MiB, Go heap %d MiB, %.0f B per sku-location. The history of %d weeks and the forecast cache add %.0f B of RSS (%.0f B of heap) per sku-location: %.1f B per week of history, counting the forecast cache with it.\n\n",
			noHistory.RSS/1024, noHistory.HeapInuse>>20, per(noHistory.RSS), d.weeks, histRSS, histHeap, histRSS/float64(d.weeks))
		if d.weeks < 104 {
			proj := per(noHistory.RSS) + histRSS/float64(d.weeks)*104
			fmt.Fprintf(&b, "- projected for 104 weeks of history at that rate: %.0f B per sku-location (target at most 1024): **%s** (a projection, not a measurement: run `-memory-weeks 104` to measure it)\n", proj, verdict(proj <= 1024))
		}
	}
	fmt.Fprintf(&b, "- resident bytes per sku-location %.0f (target at most 1024): **%s**\n", per(best.RSS), verdict(per(best.RSS) <= 1024))
	growth := float64(bestAgain.RSS-best.RSS) / float64(best.RSS)
	fmt.Fprintf(&b, "- re-importing the same inventory changed RSS by %+.1f%% (target: no material growth, under 5%%): **%s**\n", 100*growth, verdict(growth < 0.05))
	fmt.Fprintf(&b, "- resident memory is %.2fx the raw data\n", float64(best.RSS)*1024/float64(raw))
	return section{Title: fmt.Sprintf("Memory: %d products x %d locations, %d weeks of history", d.products, d.locations, d.weeks),
		Command: fmt.Sprintf("go run ./bench/cmd/benchrun -only memory -memory-products %d -memory-locations %d -memory-weeks %d", d.products, d.locations, d.weeks), Body: b.String()}, nil
}

func rssMiB(pid int) int64 {
	rss, _ := procMem(pid)
	return rss / 1024
}
