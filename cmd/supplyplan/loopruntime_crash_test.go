package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The kill -9 test of the loop runtime runs the runtime in a child process: this test binary
// itself, started with loopCrashChildEnv set, runs Main with the fake verifier (a test-only
// Authenticator that the supplyplan binary does not contain) and prints its address.

const loopCrashChildEnv = "SUPPLYPLAN_LOOP_CRASH_CHILD_DATA"

func TestMain(m *testing.M) {
	if dir := os.Getenv(loopCrashChildEnv); dir != "" {
		os.Exit(runLoopCrashChild(dir))
	}
	os.Exit(m.Run())
}

// runLoopCrashChild serves the loop runtime on dir until it is killed.
func runLoopCrashChild(dir string) int {
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Surfaces = dir, Surfaces{LoopRuntime: true}
	cfg.APIAddr, cfg.RegistryAddr, cfg.ToolsAddr, cfg.LoopCatalogAddr, cfg.LoopRuntimeAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.RedisAddr, cfg.LoopAuth, cfg.AlertEvalInterval = "", newFakeLoopAuth(), -1
	m := NewMain(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), io.Discard)
	if err := m.Open(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	fmt.Printf("RUNTIME http://%s\n", m.Runtime.Addr())
	select {}
}

// loopChild is a running child.
type loopChild struct {
	cmd *exec.Cmd
	URL string
}

func startLoopChild(t *testing.T, dir string) *loopChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), loopCrashChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &loopChild{cmd: cmd}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "RUNTIME "); ok {
				lines <- u
			}
		}
		close(lines)
	}()
	select {
	case u, ok := <-lines:
		if !ok {
			t.Fatal("the child exited before listening")
		}
		c.URL = u
	case <-time.After(60 * time.Second):
		t.Fatal("the child did not start")
	}
	return c
}

func (c *loopChild) do(t *testing.T, method, path string, body any) (resp, error) {
	return tryRequest(c.URL, method, path, map[string]string{"Authorization": "Bearer " + fakeToken("demo", "loops:admin", "agent:crash")}, body)
}

// TestLoopRuntimeKillDuringTransitions kills the runtime with SIGKILL while transitions stream
// in: every acknowledged transition is there after the restart, and every instance's hash chain
// verifies.
func TestLoopRuntimeKillDuringTransitions(t *testing.T) {
	dir := t.TempDir()
	c := startLoopChild(t, dir)
	const workers = 4
	ids := make([]string, workers)
	for i := range ids {
		r, err := c.do(t, "POST", "/v1/instances", map[string]any{"loop": "supplyplan/quality", "businessKey": fmt.Sprintf("LOT-%d", i)})
		if err != nil || r.Status != 201 {
			t.Fatalf("start: %v %d %s", err, r.Status, r.Body)
		}
		ids[i] = str(r.JSON(t), "id")
		if r, err := c.do(t, "POST", "/v1/instances/"+ids[i]+"/transitions", map[string]any{"name": "start_inspection"}); err != nil || r.Status != 200 {
			t.Fatalf("start_inspection: %v %d %s", err, r.Status, r.Body)
		}
	}
	acked := make([]int, workers) // the highest acknowledged version of each instance
	var mu sync.Mutex
	total := 0
	enough := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			names := []string{"fail", "rework"}
			payloads := []any{map[string]any{"defects": []any{map[string]any{"code": "SCRATCH", "quantity": 1}}}, map[string]any{}}
			for i := 0; ; i++ {
				r, err := c.do(t, "POST", "/v1/instances/"+ids[w]+"/transitions", map[string]any{"name": names[i%2], "payload": payloads[i%2]})
				if err != nil {
					return // the process is gone
				}
				if r.Status != 200 {
					t.Errorf("transition %s: %d %s", names[i%2], r.Status, r.Body)
					return
				}
				v := int(r.JSON(t)["version"].(float64))
				mu.Lock()
				acked[w] = max(acked[w], v)
				total++
				if total >= 400 {
					once.Do(func() { close(enough) })
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-enough:
	case <-time.After(2 * time.Minute):
		t.Fatal("the transitions did not come through")
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	wg.Wait()
	mu.Lock()
	want := append([]int(nil), acked...)
	mu.Unlock()

	c = startLoopChild(t, dir)
	for w, id := range ids {
		r, err := c.do(t, "GET", "/v1/instances/"+id, nil)
		if err != nil || r.Status != 200 {
			t.Fatalf("get: %v %d", err, r.Status)
		}
		got := int(r.JSON(t)["version"].(float64))
		if got < want[w] {
			t.Errorf("instance %d is at version %d after the restart; version %d was acknowledged", w, got, want[w])
		}
		seen := 0
		for after := 0; ; {
			r, err := c.do(t, "GET", fmt.Sprintf("/v1/instances/%s/events?afterSeq=%d&limit=1000", id, after), nil)
			if err != nil || r.Status != 200 {
				t.Fatalf("events: %v %d", err, r.Status)
			}
			evs := list(r.JSON(t), "events")
			if len(evs) == 0 {
				break
			}
			for _, e := range evs {
				seen++
				if s := int(e.(map[string]any)["seq"].(float64)); s != seen {
					t.Fatalf("event seq %d at position %d", s, seen)
				}
			}
			after = seen
		}
		if seen != got {
			t.Errorf("instance %d: %d events for version %d", w, seen, got)
		}
		v, err := c.do(t, "GET", "/v1/instances/"+id+"/audit/verify", nil)
		if err != nil || v.Status != 200 || v.JSON(t)["valid"] != true {
			t.Errorf("verify after the crash: %v %s", err, v.Body)
		}
	}
	// And the runtime takes transitions again.
	if r, err := c.do(t, "POST", "/v1/instances/"+ids[0]+"/transitions", map[string]any{"name": "fail", "payload": map[string]any{"defects": []any{map[string]any{"code": "X"}}}}); err != nil || (r.Status != 200 && r.Status != 409) {
		t.Fatalf("after restart: %v %d %s", err, r.Status, r.Body)
	}
}
