package main

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// loadSpec describes one load phase: concurrent clients sending the same request.
type loadSpec struct {
	URL         string
	Method      string
	Headers     map[string]string
	Body        func(worker, i int) []byte // nil for no body
	WantStatus  int
	Concurrency int
	Warmup      time.Duration
	Duration    time.Duration

	// Path, when set, is the path (and query) of each request instead of URL's (same host).
	Path func(worker, i int) string
	// Header, when set, adds one header to each request (a fresh token per request).
	Header func(worker, i int) (name, value string)
	// Hosts, when set, spreads the workers over these host:port (worker w sends to
	// Hosts[w%len(Hosts)]) instead of URL's host: several nodes of one deployment.
	Hosts []string
}

// loadResult is what a phase measured.
type loadResult struct {
	Requests int
	// Answered counts every request answered, the warm-up's included (for CPU per request).
	Answered int
	Errors   int
	RPS      float64
	P50, P99 time.Duration
	// ServerCPU and HarnessCPU are the CPU the server and this process used per request (µs),
	// when the phase measured them (the api section); 0 otherwise.
	ServerCPU, HarnessCPU float64
}

func (r loadResult) row(name string) string {
	return fmt.Sprintf("| %s | %.0f | %s | %s | %d |", name, r.RPS, fmtDur(r.P50), fmtDur(r.P99), r.Errors)
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
}

// runLoad drives spec with keep-alive connections, one per worker, and reports throughput and
// latency percentiles over the measurement window (after the warmup).
func runLoad(spec loadSpec) (loadResult, error) {
	host := strings.TrimPrefix(spec.URL, "http://")
	host, path, _ := strings.Cut(host, "/")
	path = "/" + path
	hosts := spec.Hosts
	if len(hosts) == 0 {
		hosts = []string{host}
	}
	clients := make([]*fasthttp.HostClient, len(hosts))
	for k, h := range hosts {
		clients[k] = &fasthttp.HostClient{Addr: h, MaxConns: spec.Concurrency * 2, ReadTimeout: 30 * time.Second,
			WriteTimeout: 30 * time.Second, MaxIdleConnDuration: time.Minute}
	}
	var measuring atomic.Bool
	var stop atomic.Bool
	var errs, answered atomic.Int64
	lat := make([][]time.Duration, spec.Concurrency)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < spec.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client, host := clients[w%len(clients)], hosts[w%len(hosts)]
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			local := make([]time.Duration, 0, 1<<16)
			for i := 0; !stop.Load(); i++ {
				req.Reset()
				if spec.Path != nil {
					req.SetRequestURI(spec.Path(w, i))
				} else {
					req.SetRequestURI(path)
				}
				req.Header.SetHost(host)
				req.Header.SetMethod(spec.Method)
				req.Header.SetContentType("application/json")
				for k, v := range spec.Headers {
					req.Header.Set(k, v)
				}
				if spec.Header != nil {
					req.Header.Set(spec.Header(w, i))
				}
				if spec.Body != nil {
					req.SetBody(spec.Body(w, i))
				}
				start := time.Now()
				err := client.Do(req, res)
				d := time.Since(start)
				if err == nil {
					answered.Add(1)
				}
				if !measuring.Load() {
					continue
				}
				if err != nil || res.StatusCode() != spec.WantStatus {
					errs.Add(1)
					if firstErr.Load() == nil {
						if err == nil {
							err = fmt.Errorf("status %d: %s", res.StatusCode(), res.Body())
						}
						firstErr.Store(err)
					}
					continue
				}
				local = append(local, d)
			}
			lat[w] = local
		}()
	}
	time.Sleep(spec.Warmup)
	measuring.Store(true)
	start := time.Now()
	time.Sleep(spec.Duration)
	measuring.Store(false)
	elapsed := time.Since(start)
	stop.Store(true)
	wg.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	res := loadResult{Requests: len(all), Answered: int(answered.Load()), Errors: int(errs.Load())}
	if len(all) == 0 {
		if e, ok := firstErr.Load().(error); ok {
			return res, fmt.Errorf("no successful request: %w", e)
		}
		return res, fmt.Errorf("no successful request")
	}
	res.RPS = float64(len(all)) / elapsed.Seconds()
	res.P50 = all[len(all)/2]
	res.P99 = all[len(all)*99/100]
	if e, ok := firstErr.Load().(error); ok && res.Errors > 0 {
		return res, fmt.Errorf("%d failed requests, first: %w", res.Errors, e)
	}
	return res, nil
}

// eventStarts and eventEnds are the week of the events the write benchmarks create: four weeks
// after the run's week, inside the forecast horizon (13 weeks), where an event write also leaves
// its change-history entry pending for the change recorder to compute, as most events do. Fixed
// dates measured the cheaper path (an event beyond the horizon) or the dearer one depending on
// the day of the run.
var eventStarts, eventEnds = func() (string, string) {
	now := time.Now().UTC()
	monday := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -(int(now.Weekday())+6)%7)
	starts := monday.AddDate(0, 0, 28)
	return starts.Format(time.RFC3339), starts.AddDate(0, 0, 7).Format(time.RFC3339)
}()
