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
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// section is one benchmark's contribution to RESULTS.md.
type section struct {
	Title   string
	Command string
	Body    string // markdown
	Failed  bool
	Took    time.Duration // wall time of the section, setup included
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
	{"allocation", benchAllocation},
	{"memory", benchMemory},
	{"deliveries", benchDeliveries},
	{"alerteval", benchAlertEval},
	{"mcp", benchMCP},
	{"loops", benchLoops},
	{"ops", benchOps},
	{"loopruntime", benchLoopRuntime},
	{"console", benchConsole},
	{"distributed", benchDistributed},
}

// env is what every benchmark gets.
type env struct {
	bin         string
	duration    time.Duration
	concurrency int
	tmp         string
	self        string
	serviceArgs []string
	// started are the services of the running section (watched for an early death and peak RSS).
	started []*service
	// serviceStderr, when set, receives the stderr of the services started (instead of the
	// harness's stderr and the kept tail): a service writing a line per request.
	serviceStderr *os.File
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

	// The project's test servers (make test starts them and leaves them running) use the cores
	// the run measures on even when idle: the header says whether they were running.
	var others []string
	for _, srv := range []struct{ name, script string }{{"ClickHouse", "scripts/clickhouse.sh"}, {"Redis", "scripts/redis.sh"}} {
		if exec.Command("bash", srv.script, "status").Run() == nil {
			others = append(others, srv.name)
		}
	}

	var sections []section
	failed := 0
	runStart := time.Now()
	for _, b := range benches {
		if *only != "" && !strings.Contains(","+*only+",", ","+b.name+",") {
			continue
		}
		fmt.Fprintf(os.Stderr, "== %s\n", b.name)
		// Every section starts on a collected harness heap with its free pages returned: what an
		// earlier section left (the transfers' 4,000,000 rows, the kafka broker's records) is
		// garbage that this process would otherwise collect in the middle of a later section's
		// timed phase, on the cores the service under test is measured on.
		runtime.GC()
		debug.FreeOSMemory()
		// And on a written-back page cache: the dirty pages the build before the run (70 MB for a
		// rebuild of the service) or an earlier section left are written back 30 s after they were
		// made (vm.dirty_expire_centisecs), in the middle of this section's timed phases, where
		// the services' fdatasyncs and ClickHouse's inserts wait behind them.
		syscall.Sync()
		secStart := time.Now()
		s := runSection(e, b.name, b.fn)
		s.Took = time.Since(secStart)
		if s.Failed {
			failed++
			fmt.Fprintf(os.Stderr, "benchmark %s failed: %s\n", b.name, s.Body)
		} else {
			fmt.Fprintln(os.Stderr, s.Body)
		}
		sections = append(sections, s)
	}
	doc := render(sections, *only, time.Since(runStart), others)
	if *out == "" {
		fmt.Print(doc)
	} else {
		must(os.WriteFile(*out, []byte(doc), 0o644))
		fmt.Fprintf(os.Stderr, "wrote %s\n", *out)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "%d benchmark section(s) failed\n", failed)
		os.Exit(1)
	}
}

// runSection runs one benchmark. A failure (an error, a panic, or a service under test that died)
// becomes a FAILED section so that the other sections still run; every section reports the peak
// RSS of each service it started.
func runSection(e *env, name string, fn benchFunc) (s section) {
	e.started = nil
	defer func() {
		if r := recover(); r != nil {
			s = section{Title: name, Command: "go run ./bench/cmd/benchrun -only " + name, Failed: true,
				Body: fmt.Sprintf("**FAILED**: panic: %v\n", r)}
		}
		if mem := e.memoryReport(); mem != "" {
			s.Body += mem
		}
	}()
	s, err := fn(context.Background(), e)
	if died, atStop := e.deaths(); died != "" {
		if err == nil && atStop {
			// Measured to the end; only the stop the harness asked for went wrong: keep the figures,
			// say so first, and count the section as failed.
			s.Failed = true
			s.Body = "**FAILED to stop cleanly after the measurement** (the figures below were taken before): " + died + "\n\n" + s.Body
			return s
		}
		if err == nil {
			err = fmt.Errorf("the results are void")
		}
		err = fmt.Errorf("%s\n(the benchmark's own error: %v)", died, err)
	}
	if err != nil {
		if s.Title == "" {
			s.Title = name
		}
		if s.Command == "" {
			s.Command = "go run ./bench/cmd/benchrun -only " + name
		}
		s.Failed = true
		s.Body = fmt.Sprintf("**FAILED**: %v\n", err)
	}
	return s
}

func render(sections []section, only string, took time.Duration, others []string) string {
	var b strings.Builder
	b.WriteString("# Benchmark results\n\n")
	b.WriteString("Produced by `make bench` (`go run ./bench/cmd/benchrun -out bench/RESULTS.md`")
	if only != "" {
		fmt.Fprintf(&b, " with `-only %s`", only)
	}
	b.WriteString("). Every figure sits next to a baseline measured in the same run on the same machine.\n\n")
	fmt.Fprintf(&b, "- date: %s\n- machine: %s, %d cores (GOMAXPROCS %d), %s\n- go: %s\n- the run took %s\n",
		time.Now().UTC().Format(time.RFC3339), cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), memTotal(), runtime.Version(), took.Round(time.Second))
	if len(others) > 0 {
		fmt.Fprintf(&b, "- the project's test servers running when the run started (make test leaves them running; `bash scripts/clickhouse.sh stop`, `bash scripts/redis.sh stop`): %s\n", strings.Join(others, ", "))
	}
	b.WriteString("\n")
	for _, s := range sections {
		fmt.Fprintf(&b, "## %s\n\nCommand: `%s` (the section took %s)\n\n%s\n", s.Title, s.Command, s.Took.Round(time.Second), s.Body)
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

// service is a running `supplyplan serve` (or a baseline server), watched: its exit status, the
// tail of its log and its peak resident memory are known even when it dies under load.
type service struct {
	cmd  *exec.Cmd
	URL  string
	Data string
	Name string

	stopping atomic.Bool // Stop was called
	killed9  atomic.Bool // Kill9 was called: its SIGKILL is the benchmark's, not a death
	early    atomic.Bool // it had exited before Stop was called
	killed   atomic.Bool // Stop had to SIGKILL it
	exited   chan struct{}
	exitErr  error
	peakKB   atomic.Int64
	tail     *logTail
}

// watch starts waiting for the process and sampling its memory; cmd must be started.
func (s *service) watch() {
	s.exited = make(chan struct{})
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.exited)
	}()
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			_, hwm := memOf(s.cmd.Process.Pid)
			if hwm > s.peakKB.Load() {
				s.peakKB.Store(hwm)
			}
			select {
			case <-s.exited:
				return
			case <-t.C:
			}
		}
	}()
}

// died describes the process's end when it ended without being asked to (or failed to stop
// cleanly when asked), "" otherwise.
func (s *service) died() string {
	select {
	case <-s.exited:
	default:
		return ""
	}
	if s.killed9.Load() && signaled(s.exitErr, syscall.SIGKILL) {
		return "" // killed by the benchmark (a node failure it measures)
	}
	if s.stopping.Load() && !s.early.Load() && !s.killed.Load() && (s.exitErr == nil || signaled(s.exitErr, syscall.SIGINT)) {
		return "" // stopped when asked: a clean exit, or the SIGINT it was sent (the bare baselines do not catch it)
	}
	status := "exited with status 0 on its own"
	if s.killed.Load() {
		status = fmt.Sprintf("did not stop within %s of SIGINT and was killed", stopGrace)
	} else if s.exitErr != nil {
		status = s.exitErr.Error()
		var ee *exec.ExitError
		if errors.As(s.exitErr, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				status += " (SIGKILL from outside the harness: most likely the kernel's out-of-memory killer)"
			}
		}
	}
	return fmt.Sprintf("the service under test (%s, pid %d) died during the benchmark: %s; peak RSS %d MiB; its last log lines:\n```\n%s```",
		s.Name, s.cmd.Process.Pid, status, s.peakKB.Load()/1024, s.tail.String())
}

// signaled reports whether err is the exit of a process ended by sig.
func signaled(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// deaths reports every service of the running section that died on its own; atStop: each of
// them ended only after the harness asked it to stop (it failed to stop cleanly).
func (e *env) deaths() (string, bool) {
	var out []string
	atStop := true
	for _, s := range e.started {
		if d := s.died(); d != "" {
			out = append(out, d)
			atStop = atStop && s.stopping.Load() && !s.early.Load()
		}
	}
	return strings.Join(out, "\n"), atStop
}

// memoryReport is the peak RSS of every supplyplan service the section started.
func (e *env) memoryReport() string {
	var b strings.Builder
	n := 0
	for _, s := range e.started {
		if s.Name != "supplyplan" {
			continue
		}
		if n == 0 {
			b.WriteString("\nPeak RSS of the service under test:")
		} else {
			b.WriteString(",")
		}
		n++
		fmt.Fprintf(&b, " %d MiB", s.peakKB.Load()/1024)
	}
	if n == 0 {
		return ""
	}
	if n > 1 {
		b.WriteString(" (one figure per service started, in order)")
	}
	b.WriteString(".\n")
	return b.String()
}

// logTail keeps the last lines written to it.
type logTail struct {
	mu    sync.Mutex
	lines []string
	part  []byte
}

const tailLines = 20

func (t *logTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.lines = append(t.lines, string(t.part[:i]))
		t.part = t.part[i+1:]
		if len(t.lines) > tailLines {
			t.lines = t.lines[len(t.lines)-tailLines:]
		}
	}
	if len(t.part) > 4096 {
		t.part = t.part[len(t.part)-4096:]
	}
	return len(p), nil
}

func (t *logTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.Join(t.lines, "\n")
	if len(t.part) > 0 {
		s += "\n" + string(t.part)
	}
	if s == "" {
		return "(nothing)\n"
	}
	return s + "\n"
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
		"--registry-addr", "127.0.0.1:0", "--tools-addr", "127.0.0.1:0", "--loop-catalog-addr", "127.0.0.1:0", "--loop-runtime-addr", "127.0.0.1:0", "--console-addr", "127.0.0.1:0",
		"--log-level", "warn"}, extra...)
	args = append(args, e.serviceArgs...)
	s, sc, err := e.spawn("supplyplan", exec.Command(e.bin, args...))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", e.bin, err)
	}
	s.Data = data
	deadline := time.Now().Add(60 * time.Second)
	for s.URL == "" && time.Now().Before(deadline) && sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "listening api "); ok {
			s.URL = rest
		}
	}
	if s.URL == "" {
		s.Stop()
		// The error reports it; the section's deaths do not (a caller may start another instead).
		e.started = slices.DeleteFunc(e.started, func(x *service) bool { return x == s })
		return nil, fmt.Errorf("service did not become ready; its last log lines:\n%s", s.tail)
	}
	go func() { _, _ = io.Copy(io.Discard, sc.rest()) }()
	return s, nil
}

// spawn starts cmd as a watched service of the running section; its stdout is returned as lines.
func (e *env) spawn(name string, cmd *exec.Cmd) (*service, *lineReader, error) {
	s := &service{cmd: cmd, Name: name, tail: &logTail{}}
	cmd.Stderr = io.MultiWriter(os.Stderr, s.tail)
	if e.serviceStderr != nil {
		cmd.Stderr = e.serviceStderr
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	s.watch()
	e.started = append(e.started, s)
	return s, newLineReader(io.TeeReader(stdout, s.tail)), nil
}

// lineReader scans lines and then hands over what is left of the stream.
type lineReader struct {
	r  *bufio.Reader
	ln string
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: bufio.NewReader(r)} }

// Scan reads the next line.
func (l *lineReader) Scan() bool {
	s, err := l.r.ReadString('\n')
	l.ln = strings.TrimRight(s, "\r\n")
	return err == nil || s != ""
}

// Text is the line Scan read.
func (l *lineReader) Text() string { return l.ln }

// rest is the unread remainder of the stream.
func (l *lineReader) rest() io.Reader { return l.r }

// Kill9 kills the service with SIGKILL (a node failure) and waits for its exit.
func (s *service) Kill9() {
	s.killed9.Store(true)
	s.stopping.Store(true)
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Stop terminates the service gracefully (SIGINT, then SIGKILL after 30 s).
func (s *service) Stop() {
	if s.stopping.Swap(true) {
		<-s.exited
		return
	}
	select {
	case <-s.exited:
		s.early.Store(true)
		return
	default:
	}
	if err := s.cmd.Process.Signal(os.Interrupt); errors.Is(err, os.ErrProcessDone) {
		s.early.Store(true)
	}
	// The service gives in-flight work --shutdown-timeout (30 s) and then exits: wait for that and
	// a margin before calling it stuck.
	t0 := time.Now()
	select {
	case <-s.exited:
		if d := time.Since(t0); d > 10*time.Second {
			fmt.Fprintf(os.Stderr, "%s (pid %d) took %s to stop after SIGINT\n", s.Name, s.cmd.Process.Pid, d.Round(time.Second))
		}
	case <-time.After(stopGrace):
		s.killed.Store(true)
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// stopGrace is how long Stop waits after SIGINT: the service's --shutdown-timeout and a margin.
const stopGrace = 45 * time.Second

// bare serves fixed bytes: the baseline a real endpoint is compared against.
func bare(args []string) {
	fs := flag.NewFlagSet("bare", flag.ExitOnError)
	bodyFile := fs.String("body", "", "file holding the response body")
	status := fs.Int("status", 200, "response status")
	_ = fs.Parse(args)
	exitOnInterrupt()
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

// exitOnInterrupt makes a baseline server end on SIGINT. A process started in the background by a
// shell without job control (`make bench &`, nohup, CI) inherits SIGINT as ignored, and a Go
// program keeps an ignored signal ignored unless it asks for it: without this the harness's stop
// waited 30 s and reported the baseline as killed.
func exitOnInterrupt() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	go func() {
		<-c
		os.Exit(0)
	}()
}

// startBare starts a bare server returning body with status, in its own process.
func startBare(e *env, body []byte, status int) (*service, error) {
	f := filepath.Join(e.tmp, fmt.Sprintf("bare-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(f, body, 0o600); err != nil {
		return nil, err
	}
	return startBaseline(e, "bare", "-body", f, "-status", fmt.Sprint(status))
}

// startBaseline runs this program's baseline subcommand (bare, barenet) as a watched process and
// waits for its "listening bare" line.
func startBaseline(e *env, sub string, args ...string) (*service, error) {
	s, sc, err := e.spawn(sub, exec.Command(e.self, append([]string{sub}, args...)...))
	if err != nil {
		return nil, err
	}
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "listening bare "); ok {
			go func() { _, _ = io.Copy(io.Discard, sc.rest()) }()
			s.URL = rest
			return s, nil
		}
	}
	s.Stop()
	return nil, fmt.Errorf("%s server did not start", sub)
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

// profile fetches a CPU profile of the service under test into /tmp/<name>.prof, and the
// allocations made over the same time into /tmp/<name>.allocs.prof, when BENCH_PROFILE names its
// operations address (run the service with --ops-addr through -service-args), over
// BENCH_PROFILE_SECONDS (default 2); with BENCH_TRACE=1 also an execution trace into
// /tmp/<name>.trace (go tool trace). The returned function waits for them (a section that stops
// its service right after the measured work calls it first) and then writes the live heap, after
// a collection, into /tmp/<name>.heap.prof.
func profile(name string) (wait func()) {
	addr := os.Getenv("BENCH_PROFILE")
	if addr == "" {
		return func() {}
	}
	secs := os.Getenv("BENCH_PROFILE_SECONDS")
	if secs == "" {
		secs = "2"
	}
	var wg sync.WaitGroup
	kinds := []struct{ path, file string }{{"profile", name + ".prof"}, {"allocs", name + ".allocs.prof"}}
	if os.Getenv("BENCH_TRACE") == "1" {
		kinds = append(kinds, struct{ path, file string }{"trace", name + ".trace"})
	}
	for _, p := range kinds {
		wg.Go(func() {
			st, b, err := call("GET", "http://"+addr+"/debug/pprof/"+p.path+"?seconds="+secs, nil, nil)
			if err == nil && st == 200 {
				_ = os.WriteFile("/tmp/"+p.file, b, 0o644)
			}
		})
	}
	return func() {
		wg.Wait()
		// The live heap once the measured work is done (after a collection): what it kept.
		if st, b, err := call("GET", "http://"+addr+"/debug/pprof/heap?gc=1", nil, nil); err == nil && st == 200 {
			_ = os.WriteFile("/tmp/"+name+".heap.prof", b, 0o644)
		}
	}
}
