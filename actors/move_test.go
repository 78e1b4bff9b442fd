package actors

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/streams"
)

// moveCluster is three in-process nodes on kfake with a few organizations, and writers that send
// scenarios with unique names to the node that owns an organization (as a client retrying 503s
// would), recording what was sent, acknowledged and refused.
type moveCluster struct {
	t      *testing.T
	nodes  []*dnode
	byAddr map[string]*dnode
	orgs   []string
	dead   atomic.Pointer[dnode]

	mu      sync.Mutex
	acked   map[string]map[string]bool
	sent    map[string]map[string]bool
	refused atomic.Int64
	seq     atomic.Int64
}

func newMoveCluster(t *testing.T, partitions int, beforeJoin func(*dnode)) *moveCluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{"group.min.session.timeout.ms": "1000"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	mc := &moveCluster{t: t, byAddr: map[string]*dnode{}, acked: map[string]map[string]bool{}, sent: map[string]map[string]bool{}}
	for i := range 3 {
		n := startNodeWith(t, c.ListenAddrs(), fmt.Sprintf("node%d", i), partitions, beforeJoin)
		mc.nodes = append(mc.nodes, n)
		mc.byAddr[n.addr] = n
	}
	waitActive(t, mc.nodes, partitions, 60*time.Second)
	ctx := ctxFor(t, 60*time.Second)
	for i := 0; len(mc.orgs) < 3; i++ {
		for _, n := range mc.nodes {
			o, err := n.platform.CreateOrganization(ctx, supplyplan.OrganizationInput{Name: ptrTo(fmt.Sprint("Org ", i)), Slug: ptrTo(fmt.Sprint("org-", i, "-", n.name))})
			if err == nil {
				mc.orgs = append(mc.orgs, o.ID)
			}
		}
		if ctx.Err() != nil {
			t.Fatal("no node created the organizations")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Every node's replica knows them before the writes begin.
	for _, n := range mc.nodes {
		for !n.core.hasOrg(mc.orgs[len(mc.orgs)-1]) {
			if ctx.Err() != nil {
				t.Fatalf("%s: organizations not replicated", n.name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return mc
}

// owner is the live node that owns the organization's partition, as a live node's Owners says.
func (mc *moveCluster) owner(org string) *dnode {
	for _, n := range mc.nodes {
		if n == mc.dead.Load() {
			continue
		}
		addr, local, _, err := n.own.Owner(org)
		if err != nil {
			continue
		}
		if local {
			return n
		}
		if t := mc.byAddr[addr]; t != nil && t != mc.dead.Load() {
			return t
		}
		return nil
	}
	return nil
}

// partitionOwner is the live node that owns and serves partition p.
func (mc *moveCluster) partitionOwner(p int32) *dnode {
	for _, n := range mc.nodes {
		if owned, active := n.members.State(p); owned && active && n != mc.dead.Load() {
			return n
		}
	}
	return nil
}

// write sends one scenario with a unique name until it is acknowledged or ctx ends. Each refusal
// must be the 503 of a gate (restoring, moving, not the owner) or an unavailable journal.
func (mc *moveCluster) write(ctx context.Context, org string) {
	name := fmt.Sprintf("w-%d", mc.seq.Add(1))
	mc.mu.Lock()
	if mc.sent[org] == nil {
		mc.sent[org], mc.acked[org] = map[string]bool{}, map[string]bool{}
	}
	mc.sent[org][name] = true
	mc.mu.Unlock()
	p := supplyplan.Principal{KeyID: "test", OrgID: org, Role: supplyplan.RoleAdmin}
	for ctx.Err() == nil {
		n := mc.owner(org)
		if n == nil {
			mc.refused.Add(1)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if _, _, restoring, _ := n.own.Owner(org); restoring { // the HTTP layer's 503
			mc.refused.Add(1)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		_, err := n.forecasting.CreateScenario(ctx, p, supplyplan.ScenarioInput{Name: &name})
		if err == nil {
			mc.mu.Lock()
			mc.acked[org][name] = true
			mc.mu.Unlock()
			return
		}
		if ctx.Err() != nil {
			return
		}
		if supplyplan.GateError(err) == nil && supplyplan.ErrorCode(err) != supplyplan.EUNAVAILABLE {
			mc.t.Errorf("write %s of %s on %s: %v (not a 503)", name, org, n.name, err)
			return
		}
		mc.refused.Add(1)
		time.Sleep(10 * time.Millisecond)
	}
}

// writers runs k writers on org until the returned stop is called.
func (mc *moveCluster) writers(org string, k int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				mc.write(ctx, org)
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// check reads org on the node that serves it and asserts every acknowledged write is there
// exactly once and nothing that was never sent is.
func (mc *moveCluster) check(ctx context.Context, org string) int {
	t := mc.t
	t.Helper()
	var list []supplyplan.Scenario
	for {
		if n := mc.owner(org); n != nil {
			var err error
			if list, err = n.forecasting.ListScenarios(ctx, supplyplan.Principal{OrgID: org, Role: supplyplan.RoleAdmin}, supplyplan.ScenarioFilter{}); err == nil {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("read %s: %v", org, ctx.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
	count := map[string]int{}
	for _, s := range list {
		count[s.Name]++
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	for name := range mc.acked[org] {
		if count[name] != 1 {
			t.Errorf("org %s: acknowledged write %s present %d times", org, name, count[name])
		}
	}
	for name, k := range count {
		if !mc.sent[org][name] || k != 1 {
			t.Errorf("org %s: %s present %d times, sent %v", org, name, k, mc.sent[org][name])
		}
	}
	return len(mc.acked[org])
}

// destination picks a partition other than from, owned by a live node other than avoid.
func (mc *moveCluster) destination(from int32, partitions int, avoid *dnode) int32 {
	for p := range int32(partitions) {
		if n := mc.partitionOwner(p); p != from && n != nil && n != avoid {
			return p
		}
	}
	mc.t.Fatalf("no partition owned by another node than %s", avoid.name)
	return -1
}

// waitPlaced waits until every live node places org on p with no move in progress.
func (mc *moveCluster) waitPlaced(ctx context.Context, org string, p int32) {
	for _, n := range mc.nodes {
		if n == mc.dead.Load() {
			continue
		}
		for {
			pl, _ := n.dir.Lookup(org)
			if _, moving := n.dir.Moving(org); pl.Partition == p && !moving {
				break
			}
			if ctx.Err() != nil {
				mc.t.Fatalf("%s: %s placed on %d (want %d)", n.name, org, pl.Partition, p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// A move carries the organization's state: writes acknowledged before it are all there after it,
// writes during it are refused with a 503 or applied exactly once, the organization is then served
// by the new partition's owner from its state there, and the move is audited on every node.
func TestMoveCarriesState(t *testing.T) {
	const partitions = 6
	mc := newMoveCluster(t, partitions, nil)
	ctx := ctxFor(t, 3*time.Minute)
	org := mc.orgs[0]
	for range 30 {
		mc.write(ctx, org)
	}
	pl, _ := mc.nodes[0].dir.Lookup(org)
	from := pl.Partition
	source := mc.partitionOwner(from)
	to := mc.destination(from, partitions, source)
	dest := mc.partitionOwner(to)

	stop := mc.writers(org, 3)
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	m, err := mc.nodes[2].dir.Move(ctx, org, to, "ops@example.com", "rebalance test")
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // writes on the new owner too
	stop()
	if m.State != streams.MoveDone || !m.Applied || m.From != from || m.To != to || m.Ready == nil || m.Done == nil {
		t.Fatalf("move record %+v", m)
	}
	if m.Ready.Node != source.name || m.Done.Node != dest.name || m.Done.Streams["tenant-"+org] == 0 {
		t.Fatalf("steps: ready %+v (want by %s), done %+v (want by %s)", m.Ready, source.name, m.Done, dest.name)
	}
	mc.waitPlaced(ctx, org, to)
	if n := mc.owner(org); n != dest {
		t.Fatalf("served by %v after the move, want %s", n, dest.name)
	}
	if _, running := source.core.tenants.Load(org); running {
		t.Fatalf("the organization's actor still runs on %s (partition %d)", source.name, from)
	}
	total := mc.check(ctx, org)
	for _, other := range mc.orgs[1:] { // the others did not move and are untouched
		if p, _ := mc.nodes[0].dir.Lookup(other); p.Rule != "sha256" {
			t.Fatalf("%s placement %+v", other, p)
		}
	}
	for _, n := range mc.nodes {
		ms := n.dir.Moves(org)
		if len(ms) != 1 || ms[0].ID != m.ID || ms[0].State != streams.MoveDone || ms[0].By != "ops@example.com" || ms[0].Reason != "rebalance test" {
			t.Fatalf("%s: audit trail %+v", n.name, ms)
		}
	}
	t.Logf("moved %s from partition %d (%s) to %d (%s) in %s under 3 writers; %d acknowledged writes present once, %d refusals (503) on the way",
		org, from, source.name, to, dest.name, took, total, mc.refused.Load())

	// Moving it back carries what was written on the new partition as well (its snapshot-less
	// head there, the entries appended after the copy, over what its first stay left on from).
	stop = mc.writers(org, 2)
	time.Sleep(100 * time.Millisecond)
	if _, err := mc.nodes[1].dir.Move(ctx, org, from, "ops@example.com", "back"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	stop()
	mc.waitPlaced(ctx, org, from)
	total = mc.check(ctx, org)
	if len(mc.nodes[0].dir.Moves(org)) != 2 {
		t.Fatalf("audit trail after the move back: %+v", mc.nodes[0].dir.Moves(org))
	}
	t.Logf("moved back: %d acknowledged writes present once", total)
}

// A move interrupted by the death of the organization's owner (after it stopped the organization,
// before it recorded the step) is finished by the partition's next owner: the organization ends
// whole on exactly one partition, served by the destination's owner, and every acknowledged write
// is there once.
func TestMoveSurvivesOwnerDeath(t *testing.T) { testMoveSurvivesDeath(t, "ready") }

// The same with the destination's owner dying before it copies: the next owner of the destination
// partition copies and switches.
func TestMoveSurvivesDestinationDeath(t *testing.T) { testMoveSurvivesDeath(t, "copy") }

func testMoveSurvivesDeath(t *testing.T, at string) {
	const partitions = 6
	var (
		victim  atomic.Pointer[dnode]
		reached = make(chan struct{})
		release = make(chan struct{})
		once    sync.Once
	)
	mc := newMoveCluster(t, partitions, func(n *dnode) {
		n.mover.BeforeStep = func(step string, _ streams.Move) bool {
			if step == at && victim.Load() == n {
				once.Do(func() { close(reached) })
				<-release
				return false
			}
			return true
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the nodes' cleanups
	ctx := ctxFor(t, 3*time.Minute)
	org := mc.orgs[1]
	for range 30 {
		mc.write(ctx, org)
	}
	pl, _ := mc.nodes[0].dir.Lookup(org)
	from := pl.Partition
	source := mc.partitionOwner(from)
	to := mc.destination(from, partitions, source)
	dying, p := source, from
	if at == "copy" {
		dying, p = mc.partitionOwner(to), to
	}
	victim.Store(dying)
	var survivors []*dnode
	for _, n := range mc.nodes {
		if n != dying {
			survivors = append(survivors, n)
		}
	}
	epoch := dying.journal.Epoch(p)

	stop := mc.writers(org, 3)
	time.Sleep(100 * time.Millisecond)
	m, err := survivors[0].dir.StartMove(ctx, org, to, "ops@example.com", "owner dies mid-move")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached: // the owner is about to do its step
	case <-ctx.Done():
		t.Fatalf("the owner never reached the %s step", at)
	}
	killed := time.Now()
	mc.dead.Store(dying)
	dying.dialer.cutAll()
	_ = dying.journal.Close(context.Background())
	done, err := survivors[1].dir.WaitMove(ctx, org, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	finished := time.Since(killed)
	time.Sleep(300 * time.Millisecond)
	stop()
	step := done.Ready
	if at == "copy" {
		step = done.Done
	}
	if step == nil || step.Node == dying.name || step.Epoch <= epoch {
		t.Fatalf("%s step %+v: want it by the next owner of partition %d (epoch above %d)", at, step, p, epoch)
	}
	mc.waitPlaced(ctx, org, to)
	dest := mc.partitionOwner(to)
	if n := mc.owner(org); n != dest {
		t.Fatalf("served by %v, want the owner of partition %d %s", n, to, dest.name)
	}
	// Exactly one partition: the owner of from does not serve it.
	if n := mc.partitionOwner(from); n != nil && n != dest {
		if err := n.own.Serve("tenant-" + org); err == nil {
			t.Fatalf("%s serves %s on partition %d after the move", n.name, org, from)
		}
	}
	total := mc.check(ctx, org)
	t.Logf("owner %s of partition %d killed before the %s step; the move finished %s later (session timeout 3s), steps by %s and %s; %d acknowledged writes present once, %d refusals",
		dying.name, p, at, finished, done.Ready.Node, done.Done.Node, total, mc.refused.Load())
}
