package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/testdeps"
	"github.com/supplyplan/supplyplan/streams"
)

// distSession is the nodes' session timeout in the process tests (kfake's minimum is lowered).
const distSession = 3 * time.Second

// distNodes is a cluster of `supplyplan serve --mode distributed` processes on one kfake cluster
// in the test process. Each node keeps its API address and data dir across restarts. The test
// reads the placement directory and the owner table the way a node reads them.
type distNodes struct {
	t       *testing.T
	kc      *kfake.Cluster
	brokers []string
	parts   int
	extra   []string
	procs   []*proc // by node; a killed node's entry stays until it is started again
	addrs   []string
	datas   []string
	dir     *streams.Directory
	table   *streams.OwnerTable
	creds   supplyplan.Credentials
}

// startDistNodes starts n nodes on a new kfake cluster with parts journal partitions and waits
// until the demo organization exists.
func startDistNodes(t *testing.T, n, parts int, extra ...string) *distNodes {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "supplyplan.demand-signals"),
		kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	d := &distNodes{t: t, kc: kc, brokers: kc.ListenAddrs(), parts: parts, extra: extra}
	for range n {
		d.addrs, d.datas, d.procs = append(d.addrs, freeAddr(t)), append(d.datas, t.TempDir()), append(d.procs, nil)
	}
	d.startAll()
	var creds string
	eventually(t, 60*time.Second, func() error {
		for _, dd := range d.datas {
			if _, err := os.Stat(filepath.Join(dd, "credentials.json")); err == nil {
				creds = dd
				return nil
			}
		}
		return fmt.Errorf("no credentials yet")
	})
	d.creds = mustReadCreds(t, creds)
	d.dir = streams.NewDirectory(streams.DirectoryConfig{Brokers: d.brokers, Partitions: parts, Node: "test"})
	if err := d.dir.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.dir.Close(context.Background()) })
	if d.table, err = streams.OpenOwnerTable(d.brokers, "", nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.table.Close)
	d.settle()
	return d
}

// settle waits until the group has placed every partition on the running nodes: each partition
// has an owner record naming one of them, every node owns at least one (when there are enough
// partitions), and the map (owner and epoch) stays the same for a second. Nodes start together but join the group
// one by one, so right after the first owner record a later join can still move a partition: a
// request to it then answers 503 "moved to another node" (what a client should retry, but not
// what a test's setup should meet).
func (d *distNodes) settle() {
	d.t.Helper()
	var last string
	var since time.Time
	eventually(d.t, 60*time.Second, func() error {
		owners := make([][2]uint64, d.parts) // node, epoch
		count := make([]int, len(d.addrs))
		for p := range d.parts {
			rec, ok := d.table.Owner(int32(p))
			if !ok || d.node(rec.Addr) < 0 {
				last = ""
				return fmt.Errorf("partition %d has no owner among the nodes yet", p)
			}
			owners[p] = [2]uint64{uint64(d.node(rec.Addr)), rec.Epoch}
			count[d.node(rec.Addr)]++
		}
		if d.parts >= len(d.addrs) {
			for i, c := range count {
				if c == 0 {
					last = ""
					return fmt.Errorf("node %d owns no partition yet", i)
				}
			}
		}
		if key := fmt.Sprint(owners); key != last {
			last, since = key, time.Now()
		}
		if time.Since(since) < time.Second {
			return fmt.Errorf("owners %s since %s", last, time.Since(since).Round(time.Millisecond))
		}
		return nil
	})
}

// startAll starts every node concurrently (each waits until it listens).
func (d *distNodes) startAll() {
	var wg sync.WaitGroup
	for i := range d.procs {
		wg.Add(1)
		go func() { defer wg.Done(); d.start(i) }()
	}
	wg.Wait()
	if d.t.Failed() {
		d.t.FailNow()
	}
}

func (d *distNodes) start(i int) {
	ch, db := distClickHouse(d.t)
	d.procs[i] = launchProc(d.t, append([]string{"--mode", "distributed", "--kafka-brokers", strings.Join(d.brokers, ","),
		"--journal-partitions", fmt.Sprint(d.parts), "--node-id", fmt.Sprint("n", i), "--node-session-timeout", distSession.String(),
		"--data", d.datas[i], "--api-addr", d.addrs[i], "--console-addr", "", "--log-level", "error",
		"--clickhouse-addr", ch, "--clickhouse-database", db}, d.extra...)...)
}

// distClickHouse is the test ClickHouse and a database of the running test, the same for every
// node of it (the distributed mode shares demand history through ClickHouse).
func distClickHouse(t *testing.T) (addr, db string) {
	addr = testdeps.ClickHouse(t)
	distDBs.Lock()
	defer distDBs.Unlock()
	if distDBs.m == nil {
		distDBs.m = map[string]string{}
	}
	db, ok := distDBs.m[t.Name()]
	if !ok {
		db = fmt.Sprintf("sp_dist_%d", time.Now().UnixNano())
		distDBs.m[t.Name()] = db
	}
	return addr, db
}

var distDBs struct {
	sync.Mutex
	m map[string]string
}

// kill9 kills node i with SIGKILL and waits until it exited.
func (d *distNodes) kill9(i int) {
	p := d.procs[i]
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		d.t.Fatal(err)
	}
	<-p.exit
	p.exit <- nil // for the cleanup
}

func (d *distNodes) url(i int) string { return "http://" + d.addrs[i] }

// node is the index of the node at addr (host:port), -1 when none.
func (d *distNodes) node(addr string) int { return slices.Index(d.addrs, addr) }

// owner is the node the owner table names for org's partition (-1 unknown), the partition and
// its owner epoch.
func (d *distNodes) owner(org string) (node int, p int32, epoch uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := d.dir.Partition(ctx, org)
	if err != nil {
		return -1, -1, 0
	}
	rec, ok := d.table.Owner(p)
	if !ok {
		return -1, p, 0
	}
	return d.node(rec.Addr), p, rec.Epoch
}

// distOrg is an organization the test created, with a PLANNER key.
type distOrg struct{ id, key string }

// createOrgs creates n organizations with a PLANNER key each (through any node: platform writes
// go to the platform stream's owner) and waits until every node authenticates them.
func (d *distNodes) createOrgs(n int) []distOrg {
	t := d.t
	pk := map[string]string{"Authorization": "Bearer " + d.creds.Keys["platform"]}
	orgs := make([]distOrg, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				base := d.url(i % len(d.addrs))
				id := str(doRequest(t, base, "POST", "/api/platform/organizations", pk,
					map[string]any{"slug": fmt.Sprintf("org-%03d", i), "name": fmt.Sprint("Org ", i), "entitlements": []string{"ai.forecasting.demand"}}).Must(t, 201), "organization", "id")
				key := doRequest(t, base, "POST", "/api/platform/organizations/"+id+"/api-keys", pk,
					map[string]any{"role": "PLANNER", "name": "writer"}).Must(t, 201)["key"].(string)
				orgs[i] = distOrg{id, key}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	eventually(t, 30*time.Second, func() error {
		for i := range d.addrs {
			for _, o := range []distOrg{orgs[0], orgs[n-1]} {
				if r, err := tryRequest(d.url(i), "GET", "/api/forecast/scenarios", bearer(o.key), nil); err != nil || r.Status != 200 {
					return fmt.Errorf("node %d does not serve %s yet: %v %d", i, o.id, err, r.Status)
				}
			}
		}
		return nil
	})
	return orgs
}

func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// writeLog records every write attempt: a scenario with a name used once.
type writeLog struct {
	mu       sync.Mutex
	attempts []*writeAttempt
	n        atomic.Int64
	acked    atomic.Int64
	inflight sync.WaitGroup
}

type writeAttempt struct {
	org    int
	name   string
	node   int
	status int // 0: no answer (transport error)
	done   time.Time
}

// write sends one write for orgs[org] to node and records it. It waits at most wait for the
// answer; a slower attempt (a paused or dead owner) finishes in the background.
func (l *writeLog) write(d *distNodes, orgs []distOrg, org, node int, wait time.Duration) *writeAttempt {
	a := &writeAttempt{org: org, node: node, name: fmt.Sprintf("s%06d", l.n.Add(1))}
	l.mu.Lock()
	l.attempts = append(l.attempts, a)
	l.mu.Unlock()
	answered := make(chan struct{})
	l.inflight.Add(1)
	go func() {
		defer l.inflight.Done()
		r, err := tryRequest(d.url(node), "POST", "/api/forecast/scenarios", bearer(orgs[org].key), map[string]any{"name": a.name})
		l.mu.Lock()
		if err == nil {
			a.status = r.Status
		}
		a.done = time.Now()
		l.mu.Unlock()
		if err == nil && r.Status == 201 {
			l.acked.Add(1)
		}
		close(answered)
	}()
	select {
	case <-answered:
	case <-time.After(wait):
	}
	return a
}

func (l *writeLog) acknowledged(a *writeAttempt) (bool, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return a.status == 201, a.done
}

// writers runs k writers sending writes to random organizations through random nodes (skip
// excludes a node while it reports true) until stop is closed.
func (l *writeLog) writers(d *distNodes, orgs []distOrg, k int, skip func(int) bool, stop chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				node := rand.IntN(len(d.addrs))
				if skip != nil && skip(node) {
					continue
				}
				if ok, _ := l.acknowledged(l.write(d, orgs, rand.IntN(len(orgs)), node, 500*time.Millisecond)); !ok {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	return &wg
}

// probe writes to each of orgs[which] through random nodes not excluded by skip, every 250 ms,
// until one write is acknowledged; it returns the time from since to that acknowledgement per
// organization, ascending.
func (l *writeLog) probe(t *testing.T, d *distNodes, orgs []distOrg, which []int, since time.Time, skip func(int) bool, limit time.Duration) []time.Duration {
	t.Helper()
	served := make([]time.Duration, len(which))
	var wg sync.WaitGroup
	deadline := time.Now().Add(limit)
	for k, org := range which {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tries []*writeAttempt
			for time.Now().Before(deadline) {
				node := rand.IntN(len(d.addrs))
				if skip != nil && skip(node) {
					continue
				}
				tries = append(tries, l.write(d, orgs, org, node, 250*time.Millisecond))
				first := time.Time{}
				for _, a := range tries {
					if ok, at := l.acknowledged(a); ok && (first.IsZero() || at.Before(first)) {
						first = at
					}
				}
				if !first.IsZero() {
					served[k] = first.Sub(since)
					return
				}
				time.Sleep(250 * time.Millisecond)
			}
			t.Errorf("organization %s not served again within %s", orgs[org].id, limit)
		}()
	}
	wg.Wait()
	slices.Sort(served)
	return served
}

// percentile of sorted durations (q in [0, 1]).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// check reads every organization's scenarios through every node and asserts: each node sees the
// same; an acknowledged write is present exactly once; a write refused with a status is absent
// (a write answered by nothing, cut off by a kill or a timeout, may be either). It returns the
// numbers of attempts, acknowledged and unanswered ones.
func (l *writeLog) check(t *testing.T, d *distNodes, orgs []distOrg, nodes []int) (attempts, acked, unanswered int) {
	t.Helper()
	l.inflight.Wait()
	count := make([]map[string]int, len(orgs))
	for o := range orgs {
		for k, node := range nodes {
			var r resp
			eventually(t, 30*time.Second, func() error {
				var err error
				if r, err = tryRequest(d.url(node), "GET", "/api/forecast/scenarios", bearer(orgs[o].key), nil); err != nil || r.Status != 200 {
					return fmt.Errorf("read %s through node %d: %v %d %s", orgs[o].id, node, err, r.Status, r.Body)
				}
				return nil
			})
			c := map[string]int{}
			var m map[string]any
			if err := json.Unmarshal(r.Body, &m); err != nil {
				t.Fatal(err)
			}
			for _, x := range list(m, "scenarios") {
				c[x.(map[string]any)["name"].(string)]++
			}
			if k == 0 {
				count[o] = c
			} else if fmt.Sprint(c) != fmt.Sprint(count[o]) {
				t.Errorf("%s: node %d sees %d scenarios, node %d %d", orgs[o].id, nodes[0], len(count[o]), node, len(c))
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	sent := map[string]bool{}
	for _, a := range l.attempts {
		sent[a.name] = true
		n := count[a.org][a.name]
		switch {
		case a.status == 201:
			acked++
			if n != 1 {
				t.Errorf("write %s of %s acknowledged by node %d, present %d times", a.name, orgs[a.org].id, a.node, n)
			}
		case a.status == 0:
			unanswered++
		case n != 0:
			t.Errorf("write %s of %s refused by node %d (%d), yet present %d times", a.name, orgs[a.org].id, a.node, a.status, n)
		}
	}
	for o := range orgs {
		for name := range count[o] {
			if isWriteName(name) && !sent[name] {
				t.Errorf("%s: scenario %s never sent", orgs[o].id, name)
			}
		}
	}
	return len(l.attempts), acked, unanswered
}

// isWriteName reports whether name has the form of the write log's names (s and six digits).
func isWriteName(name string) bool {
	if len(name) != 7 || name[0] != 's' {
		return false
	}
	for _, c := range name[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ownerEpochs reads the owner records (the owners topic, read_committed) in order: the epochs
// each partition's records carry.
func ownerEpochs(t *testing.T, brokers []string) map[int32][]uint64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{streams.DefaultOwnersTopic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[int32][]uint64{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			var rec struct {
				Partition int32  `json:"partition"`
				Epoch     uint64 `json:"epoch"`
			}
			if err := json.Unmarshal(r.Value, &rec); err != nil {
				t.Errorf("owner record at %d: %v", r.Offset, err)
				return
			}
			out[rec.Partition] = append(out[rec.Partition], rec.Epoch)
		})
		if n == 0 {
			return out
		}
	}
}

// checkEpochs asserts that no partition's owner epoch ever went back or repeated.
func checkEpochs(t *testing.T, brokers []string, parts int) {
	t.Helper()
	epochs := ownerEpochs(t, brokers)
	if len(epochs) != parts {
		t.Errorf("owner records for %d partitions, want %d", len(epochs), parts)
	}
	for p, es := range epochs {
		for i := 1; i < len(es); i++ {
			if es[i] <= es[i-1] {
				t.Errorf("partition %d: owner epochs %v go back", p, es)
				break
			}
		}
	}
}

// The zombie: three `serve --mode distributed` processes, 12 partitions, 200 organizations, 8
// writers sending writes with unique names to random nodes. The node with the most partitions is
// paused (SIGSTOP) while the writers go on; its organizations are served again by the two others
// after the session timeout; then it continues (SIGCONT) with the requests it had taken before
// and during the pause, written as the owner it believes it still is. Asserted: every
// acknowledged write present exactly once (read through every node), every write refused with a
// status absent (so nothing the zombie attempted after losing its partitions became visible
// without being acknowledged: a fenced write is refused), no owner epoch goes back, and the
// zombie rejoins the group and serves writes again.
func TestDistributedZombie(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and pauses the binary")
	}
	d := startDistNodes(t, 3, 12)
	orgs := d.createOrgs(200)
	var l writeLog
	stop := make(chan struct{})
	writers := l.writers(d, orgs, 8, nil, stop)
	eventually(t, 60*time.Second, func() error {
		if n := l.acked.Load(); n < 300 {
			return fmt.Errorf("%d writes acknowledged, want 300 before the pause", n)
		}
		return nil
	})

	// The zombie: the node owning the most partitions, and the organizations it serves.
	owned := make([]int, 3)
	for p := range int32(12) {
		if rec, ok := d.table.Owner(p); ok && d.node(rec.Addr) >= 0 {
			owned[d.node(rec.Addr)]++
		}
	}
	z := 0
	for i := range owned {
		if owned[i] > owned[z] {
			z = i
		}
	}
	var theirs []int
	epochAtPause := map[int32]uint64{}
	for o := range orgs {
		if node, p, epoch := d.owner(orgs[o].id); node == z {
			theirs = append(theirs, o)
			epochAtPause[p] = epoch
		}
	}
	if len(theirs) == 0 {
		t.Fatalf("node %d (%d partitions) serves none of the organizations", z, owned[z])
	}
	if err := d.procs[z].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	t.Cleanup(func() { _ = d.procs[z].cmd.Process.Signal(syscall.SIGCONT) }) // so that the cleanup's kill ends it
	ackedAtPause := l.acked.Load()
	served := l.probe(t, d, orgs, theirs, paused, func(n int) bool { return n == z }, 60*time.Second)
	servedAt := time.Since(paused)
	eventually(t, 10*time.Second, func() error {
		for p, e := range epochAtPause {
			if rec, ok := d.table.Owner(p); !ok || d.node(rec.Addr) == z || rec.Epoch <= e {
				return fmt.Errorf("partition %d after the pause: owner %+v, epoch at the pause %d", p, rec, e)
			}
		}
		return nil
	})
	ackedPaused := l.acked.Load() - ackedAtPause
	if err := d.procs[z].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()

	// The zombie learns it lost its partitions, rejoins the group and is given partitions again:
	// a write sent to it for an organization it owns now is acknowledged.
	var rejoined time.Duration
	eventually(t, 60*time.Second, func() error {
		for o := range orgs {
			node, p, epoch := d.owner(orgs[o].id)
			if node != z || epoch <= epochAtPause[p] {
				continue
			}
			if ok, _ := l.acknowledged(l.write(d, orgs, o, z, 10*time.Second)); ok {
				rejoined = time.Since(resumed)
				return nil
			}
		}
		return fmt.Errorf("node %d does not serve any organization again", z)
	})
	time.Sleep(time.Second) // writers through all three nodes again
	close(stop)
	writers.Wait()
	attempts, acked, unanswered := l.check(t, d, orgs, []int{0, 1, 2})
	checkEpochs(t, d.brokers, 12)
	// The requests sent to the zombie during the pause, answered once it continued.
	inPause := map[int]int{}
	l.mu.Lock()
	for _, a := range l.attempts {
		if a.node == z && a.done.After(resumed) && a.done.Before(resumed.Add(rejoined)) {
			inPause[a.status]++
		}
	}
	l.mu.Unlock()
	t.Logf("requests the zombie answered after SIGCONT, before it served again, by status: %v", inPause)
	t.Logf("node %d paused %s with %d partitions (%d organizations); %d writes sent, %d acknowledged (%d through the others during the pause), %d unanswered",
		z, servedAt.Round(time.Millisecond), owned[z], len(theirs), attempts, acked, ackedPaused, unanswered)
	t.Logf("served again after the pause (session timeout %s): p50 %s, p99 %s, max %s over %d organizations; the zombie served writes again %s after SIGCONT",
		distSession, percentile(served, 0.5).Round(time.Millisecond), percentile(served, 0.99).Round(time.Millisecond),
		served[len(served)-1].Round(time.Millisecond), len(served), rejoined.Round(time.Millisecond))
	if percentile(served, 0.5) < distSession/2 {
		t.Errorf("served again %s after the pause: sooner than the group can have noticed", percentile(served, 0.5))
	}
}

// Restart of all nodes: three nodes, 200 organizations, writers through random nodes; all three
// are killed with SIGKILL, then started again on the same brokers. Every acknowledged write is
// then present exactly once and every organization is served again (time from the restart to
// the first acknowledged write of each, p50/p99).
func TestDistributedRestartAll(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	d := startDistNodes(t, 3, 12)
	orgs := d.createOrgs(200)
	var l writeLog
	stop := make(chan struct{})
	writers := l.writers(d, orgs, 8, nil, stop)
	eventually(t, 60*time.Second, func() error {
		if n := l.acked.Load(); n < 400 {
			return fmt.Errorf("%d writes acknowledged, want 400 before the kill", n)
		}
		return nil
	})
	var wg sync.WaitGroup
	for i := range d.procs {
		wg.Add(1)
		go func() { defer wg.Done(); d.kill9(i) }()
	}
	wg.Wait()
	close(stop)
	writers.Wait()
	l.inflight.Wait()
	before := l.acked.Load()

	restart := time.Now()
	d.startAll()
	all := make([]int, len(orgs))
	for i := range all {
		all[i] = i
	}
	served := l.probe(t, d, orgs, all, restart, nil, 60*time.Second)
	attempts, acked, unanswered := l.check(t, d, orgs, []int{0, 1, 2})
	checkEpochs(t, d.brokers, 12)
	t.Logf("%d writes acknowledged before kill -9 of all three nodes; %d sent in all, %d acknowledged, %d unanswered",
		before, attempts, acked, unanswered)
	t.Logf("served again after the restart of all nodes (session timeout %s): p50 %s, p99 %s, max %s over %d organizations",
		distSession, percentile(served, 0.5).Round(time.Millisecond), percentile(served, 0.99).Round(time.Millisecond),
		served[len(served)-1].Round(time.Millisecond), len(served))
}

// Kill -9 with a demand-signal stream running: three nodes with demand history on ClickHouse; the
// process that serves the demo organization is killed with SIGKILL while 8 writers write to it
// and a producer publishes demand signals (unique ids) to the signal topic. Its partitions move
// after the session timeout; every acknowledged write is then present exactly once on the new
// owner, and every published signal is counted exactly once once the signal consumers committed
// every offset (the signals reach the organization's owner through the placed topic).
func TestDistributedKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	ch := testdeps.ClickHouse(t)
	d := startDistNodes(t, 3, 12, "--clickhouse-addr", ch, "--clickhouse-database", fmt.Sprintf("sp_dist_%d", time.Now().UnixNano()))
	cr := d.creds
	org := cr.Organization.ID
	orgs := []distOrg{{org, cr.Keys["PLANNER"]}}
	var first int
	var epoch0 uint64
	eventually(t, 60*time.Second, func() error {
		if first, _, epoch0 = d.owner(org); first < 0 {
			return fmt.Errorf("owner of %s not known yet", org)
		}
		return nil
	})
	// The owners topic can name the owner before the owner's own table does (503 "not known yet").
	eventually(t, 60*time.Second, func() error {
		if r, err := tryRequest(d.url(first), "GET", "/api/forecast/scenarios", bearer(cr.Keys["PLANNER"]), nil); err != nil || r.Status != 200 {
			return fmt.Errorf("node %d does not serve %s yet: %v %d", first, org, err, r.Status)
		}
		return nil
	})
	seed := &testServer{t: t, URL: d.url(first), Creds: cr}
	seed.SeedCatalog([]string{"P"}, []string{"L1"})

	// The signal stream: batches of 20 signals with unique ids, every 20 ms, until stopped.
	prod := streams.NewSignalProducer(streams.SignalProducerConfig{Brokers: d.brokers, Topic: "supplyplan.demand-signals"})
	if err := prod.Open(); err != nil {
		t.Fatal(err)
	}
	var published atomic.Int64
	stopSignals, signalsDone := make(chan struct{}), make(chan struct{})
	wk := monday(-2)
	go func() {
		defer close(signalsDone)
		for b := 0; ; b++ {
			select {
			case <-stopSignals:
				return
			case <-time.After(20 * time.Millisecond):
			}
			sigs := make([]supplyplan.DemandSignal, 20)
			for i := range sigs {
				sigs[i] = supplyplan.DemandSignal{SignalID: fmt.Sprintf("sig-%d-%d", b, i), OrganizationID: org, SKU: "P", Location: "L1",
					Quantity: 1, OccurredAt: wk}
			}
			if err := prod.Publish(context.Background(), sigs); err != nil {
				t.Errorf("publish signals: %v", err)
				return
			}
			published.Add(int64(len(sigs)))
		}
	}()

	var l writeLog
	stop := make(chan struct{})
	dead := atomic.Int32{}
	dead.Store(-1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				node, _, _ := d.owner(org)
				if node < 0 || node == int(dead.Load()) {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				if ok, _ := l.acknowledged(l.write(d, orgs, 0, node, 30*time.Second)); !ok {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	eventually(t, 60*time.Second, func() error {
		if n := l.acked.Load(); n < 300 {
			return fmt.Errorf("%d writes acknowledged, want 300 before the kill", n)
		}
		return nil
	})
	// The owner now (the partitions may have moved since the start, while the nodes joined).
	if first, _, epoch0 = d.owner(org); first < 0 {
		t.Fatalf("owner of %s unknown", org)
	}
	d.kill9(first)
	dead.Store(int32(first))
	killed := time.Now()
	ackedAtKill := l.acked.Load()
	others := []int{}
	for i := range 3 {
		if i != first {
			others = append(others, i)
		}
	}
	served := l.probe(t, d, orgs, []int{0}, killed, func(n int) bool { return n == first }, 60*time.Second)
	eventually(t, 60*time.Second, func() error {
		if n := l.acked.Load() - ackedAtKill; n < 50 {
			return fmt.Errorf("%d writes acknowledged since the kill, want 50", n)
		}
		return nil
	})
	close(stop)
	wg.Wait()
	close(stopSignals)
	<-signalsDone
	_ = prod.Close(context.Background())
	next, _, epoch1 := d.owner(org)
	if next == first || next < 0 || epoch1 <= epoch0 {
		t.Fatalf("owner after the kill: node %d epoch %d (before: node %d epoch %d)", next, epoch1, first, epoch0)
	}
	attempts, acked, unanswered := l.check(t, d, orgs, others)

	// Every signal published is counted once, once the consumers committed every offset.
	total := float64(published.Load())
	var got float64
	eventually(t, 60*time.Second, func() error {
		if err := signalsCommitted(d.brokers, "supplyplan.demand-signals", "supplyplan-demand-signals"); err != nil {
			return err
		}
		h := doRequest(t, d.url(others[0]), "GET", "/api/demand/history?skuId=P&locationId=L1", bearer(cr.Keys["VIEWER"]), nil).Must(t, 200)
		if got = num(h, "totalActualDemand"); got != total {
			return fmt.Errorf("demand history counts %v signals, %v published", got, total)
		}
		return nil
	})
	time.Sleep(time.Second) // a late duplicate would show now
	h := doRequest(t, d.url(others[1]), "GET", "/api/demand/history?skuId=P&locationId=L1", bearer(cr.Keys["VIEWER"]), nil).Must(t, 200)
	if got := num(h, "totalActualDemand"); got != total {
		t.Errorf("demand history counts %v signals a second later, %v published", got, total)
	}
	checkEpochs(t, d.brokers, 12)
	t.Logf("%d writes sent, %d acknowledged (%d after the kill), %d unanswered; %v signals published, each counted once; served again %s after kill -9 (session timeout %s)",
		attempts, acked, l.acked.Load()-ackedAtKill, unanswered, total, served[0].Round(time.Millisecond), distSession)
	if served[0] < distSession/2 {
		t.Errorf("served again %s after the kill: sooner than the group can have noticed", served[0])
	}
}

// signalsCommitted is nil once group committed, for every partition of topic, the partition's
// end offset.
func signalsCommitted(brokers []string, topic, group string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for p := range int32(2) {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	lresp, err := lo.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	end := map[int32]int64{}
	for _, t := range lresp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
			end[p.Partition] = p.Offset
		}
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = group
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = topic, []int32{0, 1}
	of.Topics = append(of.Topics, ft)
	fresp, err := of.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	committed := map[int32]int64{}
	for _, t := range fresp.Topics {
		for _, p := range t.Partitions {
			committed[p.Partition] = p.Offset
		}
	}
	for _, g := range fresp.Groups {
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				committed[p.Partition] = p.Offset
			}
		}
	}
	for p, e := range end {
		if c := committed[p]; c < e && e > 0 {
			return fmt.Errorf("partition %d: committed %d of %d", p, c, e)
		}
	}
	return nil
}
