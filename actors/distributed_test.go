package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/streams"
)

// cutDialer dials normally until cut, then closes every connection it made and refuses new
// ones: the node looks dead to the group coordinator (no heartbeat, no LeaveGroup).
type cutDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func (d *cutDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("node cut off")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cutDialer) cutAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		_ = c.Close()
	}
}

// dnode is one node of the distributed mode, wired as cmd/supplyplan wires it.
type dnode struct {
	name, addr  string
	dir         *streams.Directory
	journal     *streams.KafkaJournal
	table       *streams.OwnerTable
	own         *streams.Ownership
	members     *streams.Membership
	core        *Core
	platform    *Platform
	forecasting *Forecasting
	dialer      *cutDialer
	mover       *streams.Mover
}

func startNode(t *testing.T, brokers []string, name string, partitions int) *dnode {
	t.Helper()
	return startNodeWith(t, brokers, name, partitions, nil)
}

// startNodeWith is startNode running beforeJoin once the core is open, before the node joins the
// group (where cmd/supplyplan opens the services).
func startNodeWith(t *testing.T, brokers []string, name string, partitions int, beforeJoin func(*dnode)) *dnode {
	t.Helper()
	n := &dnode{name: name, addr: name + ".test:8080", dialer: &cutDialer{}}
	n.dir = streams.NewDirectory(streams.DirectoryConfig{Brokers: brokers, Partitions: partitions, Node: name})
	if err := n.dir.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.dir.Close(context.Background()) })
	n.journal = streams.NewKafkaJournal(streams.KafkaJournalConfig{Brokers: brokers, Partitions: partitions, Node: name,
		Addr: n.addr, Locate: n.dir.Locate, TxnPrefix: "dist-test", TxnTimeout: 10 * time.Second, CommitTimeout: 20 * time.Second})
	if err := n.journal.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.journal.Close(context.Background()) })
	table, err := streams.OpenOwnerTable(brokers, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	n.table = table
	t.Cleanup(table.Close)
	n.own = &streams.Ownership{Directory: n.dir, Table: table, Addr: n.addr}
	n.core = NewCore(Config{Journal: n.journal, Gate: n.own.Serve,
		FollowPlatform: func(ctx context.Context, onSnap func(uint64, []byte) error, onEntry func(uint64, []byte) error, caughtUp func()) error {
			return n.journal.Follow(ctx, platformStream, onSnap, onEntry, caughtUp)
		}})
	forecasts := NewForecasts(n.core, nil, 0)
	n.platform = NewPlatform(n.core, forecasts)
	n.forecasting = NewForecasting(n.core, forecasts)
	n.members = streams.NewMembership(streams.MembershipConfig{Brokers: brokers, Journal: n.journal, Directory: n.dir,
		SessionTimeout: 3 * time.Second, HeartbeatInterval: 300 * time.Millisecond, RebalanceTimeout: 10 * time.Second,
		StopTimeout: 10 * time.Second, Dialer: n.dialer.dial,
		Restore: func(ctx context.Context, p int32) error {
			return n.core.Restore(ctx, func(s string) bool { return n.own.Restores(s, p) })
		},
		Resumed: func(ctx context.Context, p int32) {
			n.core.Resume(ctx, func(s string) bool { return n.own.InPartition(s, p) })
		},
		Stop: func(ctx context.Context, p int32, _ bool) {
			n.core.Stop(ctx, func(s string) bool { return n.own.InPartition(s, p) })
		}})
	n.own.Membership = n.members
	n.mover = &streams.Mover{Directory: n.dir, Journal: n.journal, Membership: n.members, Node: name,
		StopOrg: func(ctx context.Context, org string) {
			n.core.Stop(ctx, func(s string) bool { return streams.PlacementKey(s) == org })
		},
		Resumed: func(ctx context.Context, org string) {
			n.core.Resume(ctx, func(s string) bool { return streams.PlacementKey(s) == org })
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.core.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		n.mover.Close()
		_ = n.members.Close(ctx)
		_ = n.core.Close(ctx)
	})
	if beforeJoin != nil {
		beforeJoin(n)
	}
	if err := n.members.Open(); err != nil {
		t.Fatal(err)
	}
	n.mover.Start()
	return n
}

// activeParts counts the partitions the nodes own and have restored, and reports a partition
// owned twice or a node owning none (a rebalance in progress).
func activeParts(nodes []*dnode) (active int, overlap bool) {
	seen := map[int32]bool{}
	for _, n := range nodes {
		ps, _ := n.members.Owned()
		overlap = overlap || len(ps) == 0 // every node has its share
		for _, p := range ps {
			if owned, ok := n.members.State(p); owned && ok {
				active++
			}
			overlap = overlap || seen[p]
			seen[p] = true
		}
	}
	return active, overlap
}

func waitActive(t *testing.T, nodes []*dnode, want int, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if n, overlap := activeParts(nodes); n == want && !overlap {
			return time.Since(start)
		}
		if time.Since(start) > within {
			n, _ := activeParts(nodes)
			t.Fatalf("%d of %d partitions active after %s", n, want, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The proof test of the distributed mode (issue 18), in one process: three nodes (journal,
// directory, owner table, membership and core each) on one kfake cluster, 12 partitions, 200
// organizations, writes with unique names sent to the owning node; one node is cut off abruptly
// (no revocation: its partitions are lost to it) while the writes go on. Its partitions move to
// the other two, which restore them; every acknowledged write is then present exactly once,
// nothing appears that was never sent, and no partition's owner epoch went back.
func TestDistributedFailover(t *testing.T) {
	const partitions, orgCount = 12, 200
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{"group.min.session.timeout.ms": "1000"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	var nodes []*dnode
	for i := range 3 {
		nodes = append(nodes, startNode(t, brokers, fmt.Sprintf("node%d", i), partitions))
	}
	took := waitActive(t, nodes, partitions, 60*time.Second)
	t.Logf("12 partitions active on 3 nodes after %s", took)
	byAddr := map[string]*dnode{}
	for _, n := range nodes {
		byAddr[n.addr] = n
	}

	// Organizations are created on the platform stream's owner; elsewhere the write is refused
	// with the owner's address.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var owner *dnode
	for _, n := range nodes {
		_, err := n.platform.CreateOrganization(ctx, supplyplan.OrganizationInput{Name: ptrTo("probe"), Slug: ptrTo("probe-" + n.name)})
		var no *supplyplan.ErrNotOwner
		switch {
		case err == nil:
			if owner != nil {
				t.Fatalf("platform writable on %s and %s", owner.name, n.name)
			}
			owner = n
		case errors.As(err, &no):
			if no.Owner == "" {
				t.Logf("%s: platform owner not known yet: %v", n.name, err)
			}
		default:
			t.Fatalf("%s: create organization: %v", n.name, err)
		}
	}
	if owner == nil {
		t.Fatal("no node owns the platform stream")
	}
	orgs := make([]string, 0, orgCount)
	for i := range orgCount {
		o, err := owner.platform.CreateOrganization(ctx, supplyplan.OrganizationInput{Name: ptrTo(fmt.Sprint("Org ", i)), Slug: ptrTo(fmt.Sprint("org-", i))})
		if err != nil {
			t.Fatal(err)
		}
		orgs = append(orgs, o.ID)
	}

	epochs := func() map[int32]uint64 {
		m := map[int32]uint64{}
		for _, n := range nodes {
			for p := range int32(partitions) {
				if e := n.journal.Epoch(p); e > m[p] {
					m[p] = e
				}
			}
		}
		return m
	}
	before := epochs()

	// Writers: each org gets scenarios named w-<org>-<n>, written on the node Owner names.
	var (
		mu      sync.Mutex
		acked   = map[string]map[string]bool{} // org -> names acknowledged
		sent    = map[string]map[string]bool{} // org -> names sent (acknowledged or not)
		seq     atomic.Int64
		dead    atomic.Pointer[dnode]
		retries atomic.Int64
	)
	write := func(ctx context.Context, org string) {
		name := fmt.Sprintf("w-%d", seq.Add(1))
		mu.Lock()
		if sent[org] == nil {
			sent[org], acked[org] = map[string]bool{}, map[string]bool{}
		}
		sent[org][name] = true
		mu.Unlock()
		p := supplyplan.Principal{KeyID: "test", OrgID: org, Role: supplyplan.RoleAdmin}
		for ctx.Err() == nil {
			// Ask any live node who owns the organization, then write there.
			var target *dnode
			for _, n := range nodes {
				if n == dead.Load() {
					continue
				}
				addr, local, _, err := n.own.Owner(org)
				if err != nil {
					continue
				}
				if local {
					target = n
				} else {
					target = byAddr[addr]
				}
				break
			}
			if target == nil || target == dead.Load() {
				retries.Add(1)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			_, err := target.forecasting.CreateScenario(ctx, p, supplyplan.ScenarioInput{Name: &name})
			if err == nil {
				mu.Lock()
				acked[org][name] = true
				mu.Unlock()
				return
			}
			// Not owned (any more), restoring, not known yet on that node's replica, or a write
			// that failed with the partition: not acknowledged; try again as a new request would.
			retries.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	}
	runWriters := func(ctx context.Context, perOrg int) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range perOrg {
					for i := w; i < len(orgs); i += 8 {
						_ = k
						write(ctx, orgs[i])
					}
				}
			}()
		}
		wg.Wait()
	}
	runWriters(ctx, 2)

	// Cut one node off (not the platform owner's: organizations stay creatable) while writes go on.
	var victim *dnode
	for _, n := range nodes {
		if n != owner {
			victim = n
			break
		}
	}
	victimParts, _ := victim.members.Owned()
	wctx, wcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); runWriters(wctx, 1000) }()
	time.Sleep(300 * time.Millisecond)
	crashed := time.Now()
	dead.Store(victim)
	victim.dialer.cutAll()
	_ = victim.journal.Close(context.Background()) // its producers die with it
	survivors := []*dnode{}
	for _, n := range nodes {
		if n != victim {
			survivors = append(survivors, n)
		}
	}
	back := waitActive(t, survivors, partitions, 60*time.Second)
	t.Logf("node %s cut off owning partitions %v; all %d partitions served again after %s (session timeout 3s)",
		victim.name, victimParts, partitions, back)
	time.Sleep(500 * time.Millisecond) // writes on the new owners too
	wcancel()
	wg.Wait()
	_ = crashed

	after := epochs()
	for p := range int32(partitions) {
		if after[p] < before[p] {
			t.Errorf("partition %d: epoch %d after %d", p, after[p], before[p])
		}
	}
	for _, p := range victimParts {
		if after[p] <= before[p] {
			t.Errorf("partition %d moved from %s but its epoch stayed %d", p, victim.name, after[p])
		}
	}

	// Every acknowledged write exactly once, nothing that was never sent, read on the owner.
	total := 0
	for _, org := range orgs {
		var sc []supplyplan.Scenario
		for {
			var n *dnode
			addr, local, _, err := survivors[0].own.Owner(org)
			if err != nil {
				t.Fatal(err)
			}
			if local {
				n = survivors[0]
			} else {
				n = byAddr[addr]
			}
			if n != nil && n != victim {
				if sc, err = n.forecasting.ListScenarios(ctx, supplyplan.Principal{OrgID: org, Role: supplyplan.RoleAdmin}, supplyplan.ScenarioFilter{}); err == nil {
					break
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("read %s: %v", org, ctx.Err())
			}
			time.Sleep(20 * time.Millisecond)
		}
		count := map[string]int{}
		for _, s := range sc {
			count[s.Name]++
		}
		mu.Lock()
		for name := range acked[org] {
			if count[name] != 1 {
				t.Errorf("org %s: acknowledged write %s present %d times", org, name, count[name])
			}
		}
		for name, k := range count {
			if !sent[org][name] || k != 1 {
				t.Errorf("org %s: %s present %d times, sent %v", org, name, k, sent[org][name])
			}
		}
		total += len(acked[org])
		mu.Unlock()
	}
	t.Logf("%d acknowledged writes over %d organizations checked; %d retries (not owner, restoring, failed)", total, len(orgs), retries.Load())
}

// The gate's answers reach the caller unchanged through the services (the HTTP layer maps them):
// ErrRestoring while the partition restores, *ErrNotOwner with the owner's address elsewhere;
// reads and writes alike, and authentication keeps working from the platform replica.
func TestGateErrorsPassUnchanged(t *testing.T) {
	st := supplyplan.NewPlatformState()
	creds, recs := st.Bootstrap(supplyplan.Now())
	for _, r := range recs {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	org := creds.Organization.ID
	var answer atomic.Pointer[error]
	set := func(err error) { answer.Store(&err) }
	set(supplyplan.ErrRestoring)
	core := NewCore(Config{Journal: nil,
		Gate: func(string) error { return *answer.Load() },
		FollowPlatform: func(ctx context.Context, onSnap func(uint64, []byte) error, _ func(uint64, []byte) error, caughtUp func()) error {
			if err := onSnap(1, snap); err != nil {
				return err
			}
			caughtUp()
			<-ctx.Done()
			return nil
		}})
	ctx := ctxFor(t, 10*time.Second)
	if err := core.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = core.Close(context.Background()) })
	platform := NewPlatform(core, nil)
	forecasting := NewForecasting(core, NewForecasts(core, nil, 0))
	if p, ok := platform.Authenticate(creds.Keys["ADMIN"]); !ok || p.OrgID != org {
		t.Fatalf("authentication from the replica: %v %v", p, ok)
	}
	p := supplyplan.Principal{OrgID: org, Role: supplyplan.RoleAdmin}
	if _, err := forecasting.CreateScenario(ctx, p, supplyplan.ScenarioInput{Name: ptrTo("x")}); !errors.Is(err, supplyplan.ErrRestoring) {
		t.Fatalf("write while restoring: %v", err)
	}
	if _, err := forecasting.ListScenarios(ctx, p, supplyplan.ScenarioFilter{}); !errors.Is(err, supplyplan.ErrRestoring) {
		t.Fatalf("read while restoring: %v", err)
	}
	set(&supplyplan.ErrNotOwner{Org: org, Owner: "10.0.0.2:8080"})
	var no *supplyplan.ErrNotOwner
	if _, err := forecasting.ListScenarios(ctx, p, supplyplan.ScenarioFilter{}); !errors.As(err, &no) || no.Owner != "10.0.0.2:8080" || no.Org != org {
		t.Fatalf("read elsewhere: %v", err)
	}
	if _, err := platform.CreateOrganization(ctx, supplyplan.OrganizationInput{Name: ptrTo("B"), Slug: ptrTo("b")}); !errors.As(err, &no) {
		t.Fatalf("platform write elsewhere: %v", err)
	}
	if _, err := forecasting.ListScenarios(ctx, supplyplan.Principal{OrgID: "org_unknown"}, supplyplan.ScenarioFilter{}); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("unknown organization: %v", err)
	}
	// Resume hands the restored partition's owners to the services' hooks.
	var got []string
	core.onRestore("test", func(_ context.Context, owners []string) error { got = owners; return nil })
	core.Resume(ctx, func(s string) bool { return s == platformStream || s == tenantStream(org) })
	if len(got) != 2 || got[0] != supplyplan.PlatformOwner || got[1] != org {
		t.Fatalf("owners resumed: %v", got)
	}
}

// The change recorder leaves an organization another node serves: at start it schedules every
// organization the platform knows, and a round that finds the organization elsewhere used to retry
// every 5 s for as long as it stayed there (one goroutine and one warning per organization and
// round, on every node). A round scheduled while it fails (a restore that gave the organization
// back) still runs, and one refused while the partition restores is retried.
func TestChangeRecorderLeavesOrganizationsServedElsewhere(t *testing.T) {
	ctx := ctxFor(t, 10*time.Second)
	core, org, set := gatedCore(t)
	set(&supplyplan.ErrNotOwner{Org: org, Owner: "10.0.0.2:8080"})
	fc := NewForecasts(core, nil, 0)
	c := fc.changes
	c.delay, c.retry = 10*time.Millisecond, 20*time.Millisecond
	if err := fc.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.Close(context.Background()) })
	running := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.running[org]
	}
	settled := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for running() != want {
			if time.Now().After(deadline) {
				t.Fatalf("recorder round for %s running: %v, want %v", org, running(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	settled(false) // Open scheduled it; the round found it elsewhere and stopped

	set(supplyplan.ErrRestoring)
	c.schedule(org)
	time.Sleep(100 * time.Millisecond) // several retries
	if !running() {
		t.Fatal("a round refused while the partition restores was not retried")
	}
	set(&supplyplan.ErrNotOwner{Org: org, Owner: "10.0.0.2:8080"})
	settled(false)
}

// The built-in loops are published by the node on which the global loop catalog's partition is
// restored, not only by a node that serves it when it opens: in distributed mode a node opens its
// services before it joins the group, so it owns nothing then.
func TestBuiltinLoopsPublishedOnRestore(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{"group.min.session.timeout.ms": "1000"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	signer := mustSigner(t)
	var catalog *LoopCatalog
	n := startNodeWith(t, c.ListenAddrs(), "node0", 4, func(n *dnode) {
		catalog = NewLoopCatalog(n.core, LoopCatalogConfig{Signer: signer})
		if err := catalog.Open(ctxFor(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		// Nothing is served here yet: the global catalog's stream is not loaded.
		if _, ok := n.core.loops.Load(loopGlobalOwner); ok {
			t.Fatal("global catalog actor started before the node owns its partition")
		}
	})
	waitActive(t, []*dnode{n}, 4, 60*time.Second)
	ctx := ctxFor(t, 30*time.Second)
	for {
		missing, err := loopTx(ctx, n.core, loopGlobalOwner, func(st *supplyplan.LoopCatalogState) (int, []supplyplan.Record, error) {
			recs, err := st.EnsureBuiltinLoops(signer, supplyplan.Now())
			return len(recs), nil, err // asked, not written
		})
		if err == nil && missing == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("built-in loops not published after the restore: %d records missing, %v", missing, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The catalog lists them.
	list, err := loopTx(ctx, n.core, loopGlobalOwner, func(st *supplyplan.LoopCatalogState) (int, []supplyplan.Record, error) {
		return len(st.Versions), nil, nil
	})
	if err != nil || list == 0 {
		t.Fatalf("global catalog after the restore: %d loops, %v", list, err)
	}
}
