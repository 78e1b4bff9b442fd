package main

import (
	"bytes"
	"encoding/json"
	"errors"
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
)

// TestKill9AfterLoopPublish publishes and yanks loop versions from several clients, kills the
// process with SIGKILL, restarts it and checks that every acknowledged publish and yank is there
// with its digest. Then the built binary's `loop verify` checks a downloaded manifest (exit 0)
// and a tampered one (exit 1).
func TestKill9AfterLoopPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	data := t.TempDir()
	p := startProc(t, data, "--snapshot-every", "25")
	hdr := map[string]string{"Authorization": "Bearer " + p.Creds.Keys["ADMIN"]}

	type acked struct {
		digest string
		yanked bool
	}
	var mu sync.Mutex
	got := map[string]*acked{} // name@version -> what the catalog acknowledged
	var count atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("demo/kill-%d", w)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				version := fmt.Sprintf("1.%d.0", i)
				r, err := tryRequest(p.Loops, "PUT", "/v1/loops/"+name+"/versions/"+version, hdr, json.RawMessage(loopManifest(t, name, version, nil)))
				if err != nil {
					return // the server died under us: this publish was never acknowledged
				}
				if r.Status != 201 {
					t.Errorf("publish %s@%s: %d %s", name, version, r.Status, r.Body)
					return
				}
				var v struct{ Digest string }
				_ = json.Unmarshal(r.Body, &v)
				mu.Lock()
				got[name+"@"+version] = &acked{digest: v.Digest}
				mu.Unlock()
				count.Add(1)
				if i%4 == 3 {
					r, err := tryRequest(p.Loops, "POST", "/v1/loops/"+name+"/versions/"+version+"/yank", hdr, map[string]any{"reason": "test"})
					if err != nil {
						return
					}
					if r.Status != 200 {
						t.Errorf("yank %s@%s: %d %s", name, version, r.Status, r.Body)
						return
					}
					mu.Lock()
					got[name+"@"+version].yanked = true
					mu.Unlock()
				}
			}
		}()
	}
	eventually(t, time.Minute, func() error {
		if n := count.Load(); n < 200 {
			return fmt.Errorf("%d publishes acknowledged, want 200 before the kill", n)
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
	mu.Lock()
	defer mu.Unlock()
	t.Logf("acknowledged %d publishes before kill -9", len(got))
	var sample string
	for key, a := range got {
		name, version, _ := strings.Cut(key, "@")
		r := doRequest(t, p2.Loops, "GET", "/v1/loops/"+name+"/versions/"+version, hdr, nil)
		var v struct{ Digest, State string }
		if r.Status != 200 || json.Unmarshal(r.Body, &v) != nil || v.Digest != a.digest {
			t.Errorf("acknowledged publish %s lost: %d %s", key, r.Status, r.Body)
			continue
		}
		if a.yanked && v.State != "YANKED" {
			t.Errorf("acknowledged yank of %s lost: %s", key, v.State)
		}
		sample = a.digest
	}

	// The real binary's exit status: a downloaded manifest verifies, a tampered one does not.
	blob := doRequest(t, p2.Loops, "GET", "/v1/blobs/"+sample, hdr, nil)
	if blob.Status != 200 {
		t.Fatalf("blob %s: %d %s", sample, blob.Status, blob.Body)
	}
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	_ = os.WriteFile(good, blob.Body, 0o600)
	_ = os.WriteFile(bad, bytes.Replace(blob.Body, []byte(`"submitted"`), []byte(`"sent"`), 1), 0o600)
	for file, want := range map[string]int{good: 0, bad: 1} {
		cmd := exec.Command(mustBinary(t), "loop", "verify", "--catalog", p2.Loops, "--key", p.Creds.Keys["VIEWER"], file)
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != want {
			t.Errorf("loop verify %s: exit status %d, want %d\n%s", filepath.Base(file), code, want, out)
		}
	}
}
