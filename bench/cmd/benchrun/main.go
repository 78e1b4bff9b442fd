// Command benchrun runs the service's benchmarks and writes bench/RESULTS.md. Every figure is a
// ratio against a baseline measured in the same run (a bare fasthttp handler returning the same
// bytes, raw kafka-go consumption, a raw ClickHouse batch insert...), so that a busy or slow
// machine moves both sides.
//
//	go run ./bench/cmd/benchrun -out bench/RESULTS.md            # every benchmark
//	go run ./bench/cmd/benchrun -only api -duration 5s          # one section, printed
//
// The service under test is the built binary (bin/supplyplan, see `make build`), started as a
// separate process on a temporary data dir; the load generator runs in this process.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// section is one benchmark's contribution to RESULTS.md.
type section struct {
	Title   string
	Command string
	Body    string // markdown
}

// benchFunc runs one benchmark.
type benchFunc func(ctx context.Context, env *env) (section, error)

var benches = []struct {
	name string
	fn   benchFunc
}{
	{"api", benchAPI},
	{"import", benchImport},
	{"kafka", benchKafka},
	{"forecast", benchForecast},
	{"oj", benchOJ},
	{"transfers", benchTransfers},
	{"deliveries", benchDeliveries},
	{"alerteval", benchAlertEval},
	{"mcp", benchMCP},
}

// env is what every benchmark gets.
type env struct {
	bin         string
	duration    time.Duration
	concurrency int
	tmp         string
	self        string
	serviceArgs []string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bare" {
		bare(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "barenet" {
		bareNetHTTP(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "load" {
		load(os.Args[2:])
		return
	}
	out := flag.String("out", "", "write RESULTS.md here (default: print)")
	only := flag.String("only", "", "comma-separated benchmarks to run (default: all)")
	dur := flag.Duration("duration", 8*time.Second, "measurement time of each load phase")
	conc := flag.Int("concurrency", 64, "concurrent client connections")
	bin := flag.String("bin", "bin/supplyplan", "the supplyplan binary under test")
	svcArgs := flag.String("service-args", "", "extra arguments of every started service (e.g. --debug-addr 127.0.0.1:6060 to profile)")
	flag.Parse()

	self, err := os.Executable()
	must(err)
	tmp, err := os.MkdirTemp("", "supplyplan-bench-")
	must(err)
	defer os.RemoveAll(tmp)
	abs, err := filepath.Abs(*bin)
	must(err)
	e := &env{bin: abs, duration: *dur, concurrency: *conc, tmp: tmp, self: self, serviceArgs: strings.Fields(*svcArgs)}

	var sections []section
	for _, b := range benches {
		if *only != "" && !strings.Contains(","+*only+",", ","+b.name+",") {
			continue
		}
		fmt.Fprintf(os.Stderr, "== %s\n", b.name)
		s, err := b.fn(context.Background(), e)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchmark %s failed: %v\n", b.name, err)
			os.Exit(1)
		}
		sections = append(sections, s)
		fmt.Fprintln(os.Stderr, s.Body)
	}
	doc := render(sections, *only)
	if *out == "" {
		fmt.Print(doc)
		return
	}
	must(os.WriteFile(*out, []byte(doc), 0o644))
	fmt.Fprintf(os.Stderr, "wrote %s\n", *out)
}

func render(sections []section, only string) string {
	var b strings.Builder
	b.WriteString("# Benchmark results\n\n")
	b.WriteString("Produced by `make bench` (`go run ./bench/cmd/benchrun -out bench/RESULTS.md`")
	if only != "" {
		fmt.Fprintf(&b, " with `-only %s`", only)
	}
	b.WriteString("). Every figure sits next to a baseline measured in the same run on the same machine.\n\n")
	fmt.Fprintf(&b, "- date: %s\n- machine: %s, %d cores (GOMAXPROCS %d), %s\n- go: %s\n\n",
		time.Now().UTC().Format(time.RFC3339), cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), memTotal(), runtime.Version())
	for _, s := range sections {
		fmt.Fprintf(&b, "## %s\n\nCommand: `%s`\n\n%s\n", s.Title, s.Command, s.Body)
	}
	return b.String()
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "MemTotal:")), "%d", &kb)
			return fmt.Sprintf("%.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	return "memory unknown"
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

// service is a running `supplyplan serve`.
type service struct {
	cmd  *exec.Cmd
	URL  string
	Data string
	// exited is closed once the process has exited (exitErr then says how).
	exited  chan struct{}
	exitErr error
	peakRSS atomic.Int64 // highest RSS sampled, KiB
}

// startService starts the binary on a fresh data dir and waits for its ready line.
func startService(e *env, extra ...string) (*service, error) {
	data, err := os.MkdirTemp(e.tmp, "data-")
	if err != nil {
		return nil, err
	}
	return startServiceOn(e, data, extra...)
}

// startServiceOn starts the binary on an existing data dir.
func startServiceOn(e *env, data string, extra ...string) (*service, error) {
	args := append([]string{"serve", "--data", data, "--api-addr", "127.0.0.1:0",
		"--registry-addr", "127.0.0.1:0", "--tools-addr", "127.0.0.1:0", "--log-level", "warn"}, extra...)
	args = append(args, e.serviceArgs...)
	cmd := exec.Command(e.bin, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", e.bin, err)
	}
	sc := bufio.NewScanner(stdout)
	s := &service{cmd: cmd, Data: data}
	deadline := time.Now().Add(60 * time.Second)
	for s.URL == "" && time.Now().Before(deadline) && sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "listening api "); ok {
			s.URL = rest
		}
	}
	if s.URL == "" {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("service did not become ready")
	}
	s.exited = make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdout) // EOF once the process is gone
		s.exitErr = cmd.Wait()
		close(s.exited)
	}()
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.exited:
				return
			case <-t.C:
				if rss, hwm := memOf(cmd.Process.Pid); max(rss, hwm) > s.peakRSS.Load() {
					s.peakRSS.Store(max(rss, hwm))
				}
			}
		}
	}()
	return s, nil
}

// Stop terminates the service gracefully.
func (s *service) Stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// explain turns a failed request into "the service died" when the process is gone (a killed
// service otherwise shows up as a closed connection).
func (s *service) explain(err error) error {
	select {
	case <-s.exited:
	case <-time.After(3 * time.Second):
		return err
	}
	return fmt.Errorf("the service died (%v; peak RSS seen %d MiB): %w", s.exitErr, s.peakRSS.Load()/1024, err)
}

// bare serves fixed bytes: the baseline a real endpoint is compared against.
func bare(args []string) {
	fs := flag.NewFlagSet("bare", flag.ExitOnError)
	bodyFile := fs.String("body", "", "file holding the response body")
	status := fs.Int("status", 200, "response status")
	_ = fs.Parse(args)
	body, err := os.ReadFile(*bodyFile)
	must(err)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetStatusCode(*status)
		ctx.SetContentType("application/json")
		ctx.SetBody(body)
	}, Name: "bare"}
	ln, err := listen()
	must(err)
	fmt.Printf("listening bare http://%s\n", ln.Addr())
	must(srv.Serve(ln))
}

// startBare starts a bare server returning body with status, in its own process.
func startBare(e *env, body []byte, status int) (*service, error) {
	f := filepath.Join(e.tmp, fmt.Sprintf("bare-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(f, body, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(e.self, "bare", "-body", f, "-status", fmt.Sprint(status))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "listening bare "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return &service{cmd: cmd, URL: rest}, nil
		}
	}
	_ = cmd.Process.Kill()
	return nil, fmt.Errorf("bare server did not start")
}

// load drives one URL (for profiling a running service):
//
//	benchrun load -url http://127.0.0.1:8080/api/forecast/scenarios/ID -key $KEY -duration 10s
func load(args []string) {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	url := fs.String("url", "", "target URL")
	method := fs.String("method", "GET", "HTTP method")
	key := fs.String("key", "", "bearer key")
	body := fs.String("body", "", "request body")
	status := fs.Int("status", 200, "expected status")
	conc := fs.Int("concurrency", 64, "connections")
	dur := fs.Duration("duration", 10*time.Second, "measurement time")
	_ = fs.Parse(args)
	spec := loadSpec{URL: *url, Method: *method, WantStatus: *status, Concurrency: *conc, Warmup: time.Second, Duration: *dur,
		Headers: map[string]string{"Authorization": "Bearer " + *key}}
	if *body != "" {
		b := []byte(*body)
		spec.Body = func(int, int) []byte { return b }
	}
	r, err := runLoad(spec)
	fmt.Println(r.row(*method+" "+*url), err)
}

// profile fetches a 2-second CPU profile of the service under test into /tmp/<name>.prof when
// BENCH_PROFILE names its debug address (run the service with --debug-addr through -service-args).
func profile(name string) {
	addr := os.Getenv("BENCH_PROFILE")
	if addr == "" {
		return
	}
	go func() {
		st, b, err := call("GET", "http://"+addr+"/debug/pprof/profile?seconds=2", nil, nil)
		if err == nil && st == 200 {
			_ = os.WriteFile("/tmp/"+name+".prof", b, 0o644)
		}
	}()
}
