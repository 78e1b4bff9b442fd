package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/supplyplan/supplyplan/streams"
)

// startDistProc runs `serve --mode distributed` on brokers, its API on a fixed address (the one
// it advertises), and waits until it listens.
func startDistProc(tb testing.TB, brokers, node string, partitions int) (*proc, string) {
	tb.Helper()
	data, addr := tb.TempDir(), freeAddr(tb.(*testing.T))
	p := launchProc(tb, "--mode", "distributed", "--kafka-brokers", brokers, "--journal-partitions", fmt.Sprint(partitions),
		"--node-id", node, "--data", data, "--api-addr", addr, "--console-addr", "", "--log-level", "error")
	return p, data
}

// Three `supplyplan serve --mode distributed` processes on one kfake cluster; the process that
// serves the demo organization is killed with SIGKILL while 8 writers write to it. Its partitions
// move to the two others after the session timeout; every acknowledged write is then present
// exactly once on the new owner, which serves writes again.
func TestDistributedKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "supplyplan.demand-signals"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := strings.Join(c.ListenAddrs(), ",")
	byURL := map[string]*proc{}
	var datas []string
	for i := range 3 {
		p, data := startDistProc(t, brokers, fmt.Sprint("n", i), 12)
		byURL[p.URL] = p
		datas = append(datas, data)
	}
	var creds string
	eventually(t, 60*time.Second, func() error {
		for _, d := range datas {
			if _, err := os.Stat(filepath.Join(d, "credentials.json")); err == nil {
				creds = d
				return nil
			}
		}
		return fmt.Errorf("no credentials yet")
	})
	cr := mustReadCreds(t, creds)
	org := cr.Organization.ID
	hdr := map[string]string{"Authorization": "Bearer " + cr.Keys["PLANNER"]}

	// The test reads the directory and the owner table as any node does.
	dir := streams.NewDirectory(streams.DirectoryConfig{Brokers: c.ListenAddrs(), Partitions: 12, Node: "test"})
	if err := dir.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close(context.Background()) })
	table, err := streams.OpenOwnerTable(c.ListenAddrs(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(table.Close)
	owner := func() (*proc, uint64) {
		pl, ok := dir.Lookup(org)
		if !ok {
			return nil, 0
		}
		rec, ok := table.Owner(pl.Partition)
		if !ok {
			return nil, 0
		}
		return byURL["http://"+rec.Addr], rec.Epoch
	}
	var first *proc
	var epoch0 uint64
	eventually(t, 60*time.Second, func() error {
		if first, epoch0 = owner(); first == nil {
			return fmt.Errorf("owner of %s not known yet", org)
		}
		return nil
	})

	var (
		mu          sync.Mutex
		acked       = map[string]bool{}
		tries       = map[string]int{} // attempts per name
		after       int                // acknowledged, sent after the killed process exited
		killedAt    time.Time
		servedAgain time.Duration // from the exit to the first acknowledgement of a write sent after it
		stop        = make(chan struct{})
		wg          sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				for {
					select {
					case <-stop:
						return
					default:
					}
					p, _ := owner()
					if p == nil {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					mu.Lock()
					tries[name]++
					sentAfterKill := !killedAt.IsZero()
					mu.Unlock()
					r, err := tryRequest(p.URL, "POST", "/api/forecast/scenarios", hdr, map[string]any{"name": name})
					if err == nil && r.Status == 201 {
						mu.Lock()
						acked[name] = true
						if sentAfterKill {
							if after++; after == 1 {
								servedAgain = time.Since(killedAt)
							}
						}
						mu.Unlock()
						break
					}
					// Dead, not the owner (any more) or restoring: not acknowledged; the same
					// name is sent again, as a client retrying would (a duplicate would show).
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	eventually(t, 60*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(acked) < 300 {
			return fmt.Errorf("%d writes acknowledged, want 300 before the kill", len(acked))
		}
		return nil
	})
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exit
	first.exit <- nil // for the cleanup
	mu.Lock()
	killedAt = time.Now()
	mu.Unlock()
	eventually(t, 90*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if after == 0 {
			return fmt.Errorf("no write acknowledged since the kill")
		}
		if after < 50 {
			return fmt.Errorf("%d writes acknowledged since the kill, want 50", after)
		}
		return nil
	})
	close(stop)
	wg.Wait()
	next, epoch1 := owner()
	if next == first || next == nil || epoch1 <= epoch0 {
		t.Fatalf("owner after the kill: %v epoch %d (before: epoch %d)", next != nil, epoch1, epoch0)
	}
	r := doRequest(t, next.URL, "GET", "/api/forecast/scenarios", hdr, nil).Must(t, 200)
	count := map[string]int{}
	for _, x := range list(r, "scenarios") {
		count[x.(map[string]any)["name"].(string)]++
	}
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for name, k := range count {
		switch {
		case tries[name] == 0:
			t.Errorf("%s present %d times, never sent", name, k)
		case k > tries[name]:
			t.Errorf("%s present %d times, sent %d times", name, k, tries[name])
		case k > 1:
			dups++ // an unacknowledged attempt that committed, then its retry
		}
	}
	for name := range acked {
		if count[name] < 1 {
			t.Errorf("acknowledged write %s lost", name)
		}
		if tries[name] == 1 && count[name] != 1 {
			t.Errorf("write %s, acknowledged on its only attempt, present %d times", name, count[name])
		}
	}
	t.Logf("%d writes acknowledged (%d after the kill), %d present, %d names written twice by retries of an unacknowledged write; writes served again %s after kill -9 (session timeout 10s)",
		len(acked), after, len(count), dups, servedAgain.Round(time.Millisecond))
	if servedAgain < 3*time.Second {
		t.Errorf("served again %s after the kill: sooner than the group can have noticed", servedAgain)
	}
}
