package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// mustBinary builds the supplyplan binary once per test run.
func mustBinary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "supplyplan-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "supplyplan")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binPath
}

// proc is the built binary running `serve`.
type proc struct {
	cmd   *exec.Cmd
	URL   string
	Tools string // the tool service's URL
	Loops string // the loop catalog's URL
	Creds supplyplan.Credentials
	exit  chan error
}

func startProc(tb testing.TB, dataDir string, extra ...string) *proc {
	tb.Helper()
	p := launchProc(tb, append([]string{"--data", dataDir, "--api-addr", "127.0.0.1:0", "--console-addr", "127.0.0.1:0",
		"--log-level", "warn"}, extra...)...)
	p.Creds = mustReadCreds(tb, dataDir)
	return p
}

// launchProc runs `supplyplan serve` with args (after the other listeners on free ports; a later
// flag overrides an earlier one) and waits until its API, tool service and loop catalog listen. The
// process is killed, and waited for, when the test ends.
func launchProc(tb testing.TB, args ...string) *proc {
	tb.Helper()
	args = append([]string{"serve", "--registry-addr", "127.0.0.1:0", "--tools-addr", "127.0.0.1:0",
		"--loop-catalog-addr", "127.0.0.1:0", "--loop-runtime-addr", "127.0.0.1:0"}, args...)
	cmd := exec.Command(mustBinary(tb), args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &proc{cmd: cmd, exit: make(chan error, 1)}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	go func() { p.exit <- cmd.Wait() }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-p.exit:
		case <-time.After(10 * time.Second):
		}
	})
	deadline := time.After(60 * time.Second)
	for p.URL == "" || p.Tools == "" || p.Loops == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				tb.Fatal("server exited before it was ready")
			}
			if rest, ok := strings.CutPrefix(l, "listening api "); ok {
				p.URL = rest
			}
			if rest, ok := strings.CutPrefix(l, "listening tools "); ok {
				p.Tools = rest
			}
			if rest, ok := strings.CutPrefix(l, "listening loop-catalog "); ok {
				p.Loops = rest
			}
		case <-deadline:
			tb.Fatal("server not ready after 60s")
		}
	}
	go func() {
		for range lines {
		}
	}()
	return p
}

func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	data := t.TempDir()
	p := startProc(t, data, "--snapshot-every", "50")
	key := p.Creds.Keys["PLANNER"]
	hdr := map[string]string{"Authorization": "Bearer " + key}

	var mu sync.Mutex
	acked := map[string]string{} // id -> name
	var count atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("w%d-%d", w, i)
				path, body := "/api/forecast/events", map[string]any{"name": name, "startsAt": "2030-01-01", "endsAt": "2030-01-02"}
				if i%2 == 1 {
					path, body = "/api/forecast/scenarios", map[string]any{"name": name}
				}
				r, err := tryRequest(p.URL, "POST", path, hdr, body)
				if err != nil {
					return // the server died under us: this write was never acknowledged
				}
				if r.Status != 201 {
					t.Errorf("write %s: %d %s", name, r.Status, r.Body)
					return
				}
				var m map[string]any
				_ = json.Unmarshal(r.Body, &m)
				id := str(m, "id")
				if id == "" {
					id = str(m, "scenario", "id")
				}
				mu.Lock()
				acked[id] = name
				mu.Unlock()
				count.Add(1)
			}
		}()
	}
	eventually(t, time.Minute, func() error {
		if n := count.Load(); n < 600 {
			return fmt.Errorf("%d writes acknowledged, want 600 before the kill", n)
		}
		return nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exit
	close(stop)
	wg.Wait()

	p2 := startProc(t, data)
	got := map[string]string{}
	for _, path := range []string{"/api/forecast/events?from=2029-12-01&to=2030-02-01", "/api/forecast/scenarios?includeArchived=true"} {
		r := doRequest(t, p2.URL, "GET", path, hdr, nil)
		m := r.Must(t, 200)
		for _, key := range []string{"events", "scenarios"} {
			for _, x := range list(m, key) {
				o := x.(map[string]any)
				got[o["id"].(string)] = o["name"].(string)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("acknowledged %d writes before kill -9; %d present after restart", len(acked), len(got))
	for id, name := range acked {
		if got[id] != name {
			t.Errorf("acknowledged write %s (%s) lost", id, name)
		}
	}
}

func TestSIGTERMShutsDownCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	data := t.TempDir()
	p := startProc(t, data)
	hdr := map[string]string{"Authorization": "Bearer " + p.Creds.Keys["ADMIN"]}
	id := str(doRequest(t, p.URL, "POST", "/api/forecast/scenarios", hdr, map[string]any{"name": "kept"}).Must(t, 201), "scenario", "id")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exit:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit 30s after SIGTERM")
	}
	// A clean stop leaves a snapshot, so the next start replays nothing.
	if _, err := os.Stat(filepath.Join(data, "journal", "tenant-"+p.Creds.Organization.ID, "snapshot")); err != nil {
		t.Fatalf("no snapshot after clean shutdown: %v", err)
	}
	p2 := startProc(t, data)
	got := doRequest(t, p2.URL, "GET", "/api/forecast/scenarios/"+id, hdr, nil).Must(t, 200)
	if str(got, "scenario", "name") != "kept" {
		t.Fatalf("after restart: %v", got)
	}
}

func TestKill9DuringLargeImport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	data := t.TempDir()
	p := startProc(t, data, "--import-chunk", "2000")
	imp := map[string]string{"x-api-key": p.Creds.Keys["import"]}
	const products, locations, requests, perRequest = 100, 10, 4, 50000
	var prods []any
	for i := 0; i < products; i++ {
		prods = append(prods, map[string]any{"externalId": fmt.Sprintf("P%03d", i)})
	}
	acc := doRequest(t, p.URL, "POST", "/api/import/catalog", imp, map[string]any{"products": prods}).Must(t, 202)
	var levels []any
	for l := 0; l < locations; l++ {
		levels = append(levels, map[string]any{"skuId": "P000", "locationId": fmt.Sprintf("L%d", l)})
	}
	doRequest(t, p.URL, "POST", "/api/import/inventory", imp, map[string]any{"levels": levels}).Must(t, 202)
	// Jobs of one tenant run in submission order, so the demand rows see the catalog.
	type want struct{ applied, failed int }
	wants := map[string]want{}
	expected := map[string]float64{} // sku|loc -> total demand
	for r := 0; r < requests; r++ {
		var recs []any
		bad := 0
		for i := 0; i < perRequest; i++ {
			n := r*perRequest + i
			sku := fmt.Sprintf("P%03d", n%products)
			loc := fmt.Sprintf("L%d", (n/products)%locations)
			week := time.Date(2022, 1, 3, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*(n/(products*locations)))
			qty := float64(n%17 + 1)
			if i%1000 == 999 {
				sku, bad = "UNKNOWN", bad+1
			} else {
				expected[sku+"|"+loc] += qty
			}
			recs = append(recs, map[string]any{"skuId": sku, "locationId": loc, "weekStarting": week.Format("2006-01-02"), "actualDemand": qty})
		}
		job := doRequest(t, p.URL, "POST", "/api/import/demand-history", imp, map[string]any{"records": recs}).Must(t, 202)
		wants[str(job, "jobId")] = want{perRequest - bad, bad}
	}
	_ = acc
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exit

	p2 := startProc(t, data)
	s := &testServer{t: t, URL: p2.URL, Creds: p2.Creds}
	unfinished := 0
	for id := range wants {
		j := doRequest(t, p2.URL, "GET", "/api/import/status/"+id, imp, nil).Must(t, 200)
		if st := str(j, "status"); st != "COMPLETED" {
			unfinished++
		}
	}
	t.Logf("%d of %d demand jobs were unfinished when the process was killed", unfinished, len(wants))
	for id, w := range wants {
		job := s.WaitJob(p2.Creds.Keys["import"], id)
		if str(job, "status") != "COMPLETED" || int(num(job, "appliedCount")) != w.applied || int(num(job, "failedCount")) != w.failed ||
			int(num(job, "processedCount")) != perRequest {
			t.Fatalf("job %s after restart: %v, want applied %d failed %d", id, job, w.applied, w.failed)
		}
	}
	auth := map[string]string{"Authorization": "Bearer " + p2.Creds.Keys["VIEWER"]}
	for key, total := range expected {
		sku, loc, _ := strings.Cut(key, "|")
		h := doRequest(t, p2.URL, "GET", "/api/demand/history?skuId="+sku+"&locationId="+loc, auth, nil).Must(t, 200)
		if got := num(h, "totalActualDemand"); got != total {
			t.Fatalf("%s at %s: total %v, want %v", sku, loc, got, total)
		}
	}
}
