package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/supplyplan/supplyplan/streams"
)

// The distributed section's settings: organizations the load is spread over, journal partitions,
// kill -9 rounds, and the restored tenant's size.
const (
	distOrgs       = 12
	distPartitions = 12
	distRounds     = 3
	restoreRounds  = 2
	bigProducts    = 1000
	bigLocations   = 50
)

// distOrg is one organization the load is spread over.
type distOrg struct {
	ID, Planner, Import, Scenario string
}

// distConfig is what one deployment (embedded, or N distributed nodes) measured.
type distConfig struct {
	label         string
	nodes         int // 0: embedded
	writes, reads loadResult
	wErr, rErr    error
	wCPU, rCPU    float64 // service CPU per request, every node together (µs)
	wHar, rHar    float64 // harness CPU per request: load generator, and kfake in distributed mode (µs)
	peakMiB       int64   // the largest peak RSS of a node
}

// benchDistributed: durable writes and REST reads of 1, 2 and 3 `serve --mode distributed`
// processes on kfake (in this process) next to the embedded mode, failover after kill -9, and the
// restore of a 50,000-series tenant.
func benchDistributed(_ context.Context, e *env) (section, error) {
	dur := min(max(e.duration*3/8, 2*time.Second), 4*time.Second)
	var configs []distConfig

	// The embedded mode: one process, local journal (fsync).
	emb, err := startService(e)
	if err != nil {
		return section{}, err
	}
	creds, err := readCreds(emb.Data)
	if err != nil {
		return section{}, err
	}
	orgs, err := setupOrgs([]string{emb.URL}, creds.Keys["platform"], "emb")
	if err != nil {
		return section{}, fmt.Errorf("embedded: %w", err)
	}
	c := measureDist(e, "embedded (local journal, fsync)", 0, []*service{emb}, orgs, dur)
	configs = append(configs, c)
	emb.Stop()

	var fo *failoverResult
	var rs *restoreResult
	// The nodes share demand history through ClickHouse (the distributed mode requires it): the
	// project's test server, a database of each cluster.
	ch, releaseCH, err := clickhouseAddr()
	if err != nil {
		return section{}, err
	}
	defer releaseCH()
	for n := 1; n <= 3; n++ {
		cl, err := startDistCluster(e, n, ch)
		if err != nil {
			return section{}, fmt.Errorf("%d nodes: %w", n, err)
		}
		orgs, err := setupOrgs(cl.urls(), cl.platform, fmt.Sprint("d", n))
		if err != nil {
			cl.close()
			return section{}, fmt.Errorf("%d nodes: %w", n, err)
		}
		configs = append(configs, measureDist(e, fmt.Sprintf("distributed, %d node(s)", n), n, cl.nodes, orgs, dur))
		if n == 3 {
			if fo, err = cl.failover(e, orgs); err != nil {
				cl.close()
				return section{}, fmt.Errorf("failover: %w", err)
			}
			if rs, err = cl.restore(e, dur); err != nil {
				cl.close()
				return section{}, fmt.Errorf("restore: %w", err)
			}
		}
		cl.close()
	}
	for _, c := range configs {
		if c.wErr != nil || c.rErr != nil {
			return section{}, fmt.Errorf("%s: writes: %v; reads: %v", c.label, c.wErr, c.rErr)
		}
	}
	return section{Title: "Distributed mode: 1-3 nodes on kfake, failover, restore", Command: "go run ./bench/cmd/benchrun -only distributed",
		Body: distReport(e, configs, fo, rs, dur)}, nil
}

// retryCall sends one request until it answers want (a new key is known on the other nodes
// after the platform replica's lag, an organization's partition may be restoring), for up to a
// minute. A write carries one Idempotency-Key over its attempts.
func retryCall(method, url string, headers map[string]string, body []byte, want int) ([]byte, error) {
	h := map[string]string{}
	for k, v := range headers {
		h[k] = v
	}
	if method != "GET" {
		h["Idempotency-Key"] = fmt.Sprintf("bench-dist-%d-%d", os.Getpid(), callSeq.Add(1))
	}
	deadline := time.Now().Add(time.Minute)
	for {
		st, b, err := call(method, url, h, body)
		if err == nil && st == want {
			return b, nil
		}
		// Retried: a key or organization not yet on this node's replica (401, 404), a partition
		// restoring or moving (503), a rate limit (429), the connection. Anything else is final.
		retry := err != nil || st == 401 || st == 404 || st == 429 || st == 502 || st == 503
		if !retry || time.Now().After(deadline) {
			return nil, fmt.Errorf("%s %s: %d %s %v", method, url, st, truncate(b), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// setupOrg creates an enterprise organization with a PLANNER and an import key, imports
// products sku-0..sku-<products-1> and creates a scenario; requests go to url.
func setupOrg(url, platform, slug string, products int) (distOrg, error) {
	var o distOrg
	pk := map[string]string{"Authorization": "Bearer " + platform}
	b, err := retryCall("POST", url+"/api/platform/organizations", pk,
		[]byte(fmt.Sprintf(`{"name":"Benchmark %s","slug":"%s","plan":"enterprise","entitlements":["ai.forecasting.demand","planning.transfers"],"capabilities":["commerce.catalog","commerce.inventory","commerce.orders","planning.forecast","planning.transfers"]}`, slug, slug)), 201)
	if err != nil {
		return o, err
	}
	var created struct{ Organization struct{ ID string } }
	_ = json.Unmarshal(b, &created)
	o.ID = created.Organization.ID
	var key struct{ Key string }
	if b, err = retryCall("POST", url+"/api/platform/organizations/"+o.ID+"/api-keys", pk, []byte(`{"role":"PLANNER"}`), 201); err != nil {
		return o, err
	}
	_ = json.Unmarshal(b, &key)
	o.Planner = key.Key
	if b, err = retryCall("POST", url+"/api/platform/organizations/"+o.ID+"/api-keys", pk, []byte(`{"scopes":["import:read","import:write"]}`), 201); err != nil {
		return o, err
	}
	_ = json.Unmarshal(b, &key)
	o.Import = key.Key
	if err := importWait(url, o.Import, "catalog", chunkBody("products", 0, products, func(i int, b *bytes.Buffer) {
		fmt.Fprintf(b, `{"externalId":"sku-%d"}`, i)
	})); err != nil {
		return o, err
	}
	auth := map[string]string{"Authorization": "Bearer " + o.Planner}
	if b, err = retryCall("POST", url+"/api/forecast/scenarios", auth, []byte(`{"name":"Benchmark scenario","type":"PROMOTIONAL","assumptions":{"narrative":"steady","globalLiftPct":0.05}}`), 201); err != nil {
		return o, err
	}
	var sc struct{ Scenario struct{ ID string } }
	_ = json.Unmarshal(b, &sc)
	o.Scenario = sc.Scenario.ID
	return o, nil
}

// setupOrgs creates distOrgs organizations, each set up through the next node in turn, and
// waits until every node serves each (directly or by forwarding).
func setupOrgs(urls []string, platform, prefix string) ([]distOrg, error) {
	orgs := make([]distOrg, distOrgs)
	var wg sync.WaitGroup
	errs := make([]error, distOrgs)
	for i := range orgs {
		wg.Go(func() {
			orgs[i], errs[i] = setupOrg(urls[i%len(urls)], platform, fmt.Sprintf("%s-org-%d", prefix, i), 10)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, o := range orgs {
		for _, u := range urls {
			if _, err := retryCall("GET", u+"/api/forecast/scenarios/"+o.Scenario, map[string]string{"Authorization": "Bearer " + o.Planner}, nil, 200); err != nil {
				return nil, err
			}
		}
	}
	return orgs, nil
}

// chunkBody is one import body of rows [from, to).
func chunkBody(array string, from, to int, row func(i int, b *bytes.Buffer)) []byte {
	var b bytes.Buffer
	b.WriteString(`{"` + array + `":[`)
	for i := from; i < to; i++ {
		if i > from {
			b.WriteByte(',')
		}
		row(i, &b)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// importWait submits one import and waits for its job; a rejected row is an error.
func importWait(url, key, kind string, body []byte) error {
	h := map[string]string{"x-api-key": key}
	b, err := retryCall("POST", url+"/api/import/"+kind, h, body, 202)
	if err != nil {
		return err
	}
	var acc struct{ JobID string }
	_ = json.Unmarshal(b, &acc)
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		b, err := retryCall("GET", url+"/api/import/status/"+acc.JobID+"?wait=30", h, nil, 200)
		if err != nil {
			return err
		}
		var j struct {
			Status      string
			FailedCount int
		}
		_ = json.Unmarshal(b, &j)
		if j.Status == "COMPLETED" || j.Status == "FAILED" {
			if j.FailedCount > 0 || j.Status == "FAILED" {
				return fmt.Errorf("import %s: %s", kind, truncate(b))
			}
			return nil
		}
	}
	return fmt.Errorf("import %s: job %s not finished in 5 minutes", kind, acc.JobID)
}

func distEventBody(products int) func(w, i int) []byte {
	return func(w, i int) []byte {
		return []byte(fmt.Sprintf(`{"name":"Promo %d-%d","type":"PROMOTION","startsAt":"%s","endsAt":"%s","value":{"liftPct":0.25,"stackingMode":"MULTIPLICATIVE"},"productMasterId":"sku-%d"}`, w, i, eventStarts, eventEnds, i%products))
	}
}

// measureDist runs a write phase and a read phase with the workers spread over the nodes and the
// requests over the organizations (so that most are forwarded when there are several nodes).
func measureDist(e *env, label string, n int, nodes []*service, orgs []distOrg, dur time.Duration) distConfig {
	c := distConfig{label: label, nodes: n}
	hosts := make([]string, len(nodes))
	for i, s := range nodes {
		hosts[i] = strings.TrimPrefix(s.URL, "http://")
	}
	pick := func(w, i int) int { return (w*7 + i) % len(orgs) }
	auth := func(w, i int) (string, string) { return "Authorization", "Bearer " + orgs[pick(w, i)].Planner }
	cpu := func() (svc, har float64) {
		for _, s := range nodes {
			svc += cpuSeconds(s.cmd.Process.Pid)
		}
		return svc, cpuSeconds(os.Getpid())
	}
	phase := func(spec loadSpec) (loadResult, float64, float64, error) {
		s0, h0 := cpu()
		r, err := runLoad(spec)
		s1, h1 := cpu()
		// A few failed requests (a connection reset) do not void a phase; more than 0.1% do.
		if err != nil && r.Requests > 0 && r.Errors*1000 < r.Requests {
			err = nil
		}
		k := float64(max(1, r.Answered))
		return r, 1e6 * (s1 - s0) / k, 1e6 * (h1 - h0) / k, err
	}
	c.writes, c.wCPU, c.wHar, c.wErr = phase(loadSpec{URL: nodes[0].URL + "/api/forecast/events", Method: "POST", WantStatus: 201,
		Concurrency: e.concurrency, Warmup: time.Second, Duration: dur, Hosts: hosts, Header: auth, Body: distEventBody(10)})
	c.reads, c.rCPU, c.rHar, c.rErr = phase(loadSpec{URL: nodes[0].URL + "/", Method: "GET", WantStatus: 200,
		Concurrency: e.concurrency, Warmup: time.Second, Duration: dur, Hosts: hosts, Header: auth,
		Path: func(w, i int) string { return "/api/forecast/scenarios/" + orgs[pick(w, i)].Scenario }})
	for _, s := range nodes {
		c.peakMiB = max(c.peakMiB, s.peakKB.Load()/1024)
	}
	fmt.Fprintf(os.Stderr, "distributed %s: writes %.0f/s (%.0f µs service CPU each), reads %.0f/s (%.0f µs), load %s\n",
		label, c.writes.RPS, c.wCPU, c.reads.RPS, c.rCPU, loadAverage())
	return c
}

// distCluster is a kfake broker in this process and N `serve --mode distributed` processes.
type distCluster struct {
	kc       *kfake.Cluster
	brokers  []string
	nodes    []*service
	args     [][]string // each node's arguments, to restart it
	datas    []string
	platform string
	dir      *streams.Directory
	table    *streams.OwnerTable
}

// startDistCluster starts n nodes sharing demand history through the ClickHouse at ch.
func startDistCluster(e *env, n int, ch string) (*distCluster, error) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "supplyplan.demand-signals"))
	if err != nil {
		return nil, err
	}
	c := &distCluster{kc: kc, brokers: kc.ListenAddrs()}
	db := fmt.Sprintf("bench_dist_%d", time.Now().UnixNano())
	for i := range n {
		data, err := os.MkdirTemp(e.tmp, "node-")
		if err != nil {
			c.close()
			return nil, err
		}
		// freeAddr's port is free when it answers, but the running nodes' outgoing connections take
		// ephemeral ports from the same range: a node that finds its port taken is started again on
		// another (a full run lost its distributed section to this once).
		var s *service
		var args []string
		for try := 0; ; try++ {
			addr, err := freeAddr()
			if err != nil {
				c.close()
				return nil, err
			}
			args = []string{"--mode", "distributed", "--kafka-brokers", strings.Join(c.brokers, ","),
				"--journal-partitions", fmt.Sprint(distPartitions), "--node-id", fmt.Sprint("node", i), "--api-addr", addr,
				"--clickhouse-addr", ch, "--clickhouse-database", db}
			if s, err = startServiceOn(e, data, args...); err == nil {
				break
			}
			if try == 2 || !strings.Contains(err.Error(), "address already in use") {
				c.close()
				return nil, err
			}
		}
		c.nodes, c.args, c.datas = append(c.nodes, s), append(c.args, args), append(c.datas, data)
	}
	deadline := time.Now().Add(90 * time.Second)
	for c.platform == "" {
		for _, d := range c.datas {
			if cr, err := readCreds(d); err == nil {
				c.platform = cr.Keys["platform"]
			}
		}
		if time.Now().After(deadline) {
			c.close()
			return nil, errors.New("no node wrote credentials.json in 90 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.dir = streams.NewDirectory(streams.DirectoryConfig{Brokers: c.brokers, Partitions: distPartitions, Node: "bench"})
	if err := c.dir.Open(); err != nil {
		c.close()
		return nil, err
	}
	if c.table, err = streams.OpenOwnerTable(c.brokers, "", nil); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *distCluster) urls() []string {
	out := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		out[i] = s.URL
	}
	return out
}

// close kills the nodes (a clean leave would move every partition from node to node as they stop)
// and the broker.
func (c *distCluster) close() {
	for _, s := range c.nodes {
		s.Kill9()
	}
	if c.table != nil {
		c.table.Close()
	}
	if c.dir != nil {
		_ = c.dir.Close(context.Background())
	}
	c.kc.Close()
}

// owner is the node index serving org (-1 unknown), its partition and the owner epoch.
func (c *distCluster) owner(org string) (int, int32, uint64) {
	pl, ok := c.dir.Lookup(org)
	if !ok {
		return -1, 0, 0
	}
	rec, ok := c.table.Owner(pl.Partition)
	if !ok {
		return -1, pl.Partition, 0
	}
	for i, s := range c.nodes {
		if s.URL == "http://"+rec.Addr {
			return i, pl.Partition, rec.Epoch
		}
	}
	return -1, pl.Partition, rec.Epoch
}

// served waits until org answers 200 through one of urls (in turn); it returns when, and when
// the owner table first named a new owner (epoch above epoch0) for its partition.
func (c *distCluster) served(org distOrg, p int32, epoch0 uint64, urls []string, limit time.Duration) (servedAt, ownedAt time.Time, err error) {
	deadline := time.Now().Add(limit)
	for i := 0; time.Now().Before(deadline); i++ {
		if ownedAt.IsZero() {
			if rec, ok := c.table.Owner(p); ok && rec.Epoch > epoch0 {
				ownedAt = time.Now()
			}
		}
		st, _, err := call("GET", urls[i%len(urls)]+"/api/forecast/scenarios/"+org.Scenario, map[string]string{"Authorization": "Bearer " + org.Planner}, nil)
		if err == nil && st == 200 {
			if ownedAt.IsZero() {
				ownedAt = time.Now()
			}
			return time.Now(), ownedAt, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}, time.Time{}, fmt.Errorf("organization %s not served within %s", org.ID, limit)
}

type failoverResult struct {
	served, detected []time.Duration // per organization that lost its node, every round
	rejoin           []time.Duration // restart of the killed node until every organization is served on every node
}

// failover kills, in each round, the node serving one organization (a different one each round),
// times until each organization it served answers again through the survivors, then restarts it.
func (c *distCluster) failover(e *env, orgs []distOrg) (*failoverResult, error) {
	res := &failoverResult{}
	for r := range distRounds {
		victim, _, _ := c.owner(orgs[r*5%len(orgs)].ID)
		if victim < 0 {
			return nil, fmt.Errorf("round %d: owner of %s unknown", r+1, orgs[r].ID)
		}
		type lost struct {
			org    distOrg
			p      int32
			epoch0 uint64
		}
		var affected []lost
		for _, o := range orgs {
			if i, p, ep := c.owner(o.ID); i == victim {
				affected = append(affected, lost{o, p, ep})
			}
		}
		var survivors []string
		for i, s := range c.nodes {
			if i != victim {
				survivors = append(survivors, s.URL)
			}
		}
		killedAt := time.Now()
		c.nodes[victim].Kill9()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var ferr error
		for _, l := range affected {
			wg.Go(func() {
				servedAt, ownedAt, err := c.served(l.org, l.p, l.epoch0, survivors, 90*time.Second)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					ferr = err
					return
				}
				res.served = append(res.served, servedAt.Sub(killedAt))
				res.detected = append(res.detected, ownedAt.Sub(killedAt))
			})
		}
		wg.Wait()
		if ferr != nil {
			return nil, fmt.Errorf("round %d: %w", r+1, ferr)
		}
		fmt.Fprintf(os.Stderr, "distributed failover round %d: %d organizations on the killed node\n", r+1, len(affected))
		// The node comes back (same id and address); the group gives it partitions again.
		back := time.Now()
		s, err := startServiceOn(e, c.datas[victim], c.args[victim]...)
		if err != nil {
			return nil, err
		}
		c.nodes[victim] = s
		if err := c.settle(orgs, victim); err != nil {
			return nil, fmt.Errorf("round %d: %w", r+1, err)
		}
		res.rejoin = append(res.rejoin, time.Since(back))
	}
	return res, nil
}

// settle waits until node i owns a partition again and every organization answers on every node.
func (c *distCluster) settle(orgs []distOrg, i int) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		owns := false
		for p := range int32(distPartitions) {
			if rec, ok := c.table.Owner(p); ok && "http://"+rec.Addr == c.nodes[i].URL {
				owns = true
			}
		}
		ok := owns
		for _, o := range orgs {
			for _, u := range c.urls() {
				if !ok {
					break
				}
				st, _, err := call("GET", u+"/api/forecast/scenarios/"+o.Scenario, map[string]string{"Authorization": "Bearer " + o.Planner}, nil)
				ok = err == nil && st == 200
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d back: not every organization served on every node within 90 s (owns a partition: %v)", i, owns)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type restoreResult struct {
	series            int
	parts, largest    int // part records of the tenant's journal entries, its largest entry (bytes)
	importTook        time.Duration
	snapSeq, snapSize int
	tail              int             // writes acknowledged after the snapshot was seen
	served, detected  []time.Duration // per round
}

// restore loads a tenant of 50,000 series (1,000 products x 50 locations, an inventory level each)
// through the import API, writes until the tenant has a snapshot and a tail after it, kills the
// node serving it and times until a survivor serves it.
func (c *distCluster) restore(e *env, dur time.Duration) (*restoreResult, error) {
	res := &restoreResult{series: bigProducts * bigLocations}
	url := c.nodes[0].URL
	start := time.Now()
	o, err := setupOrg(url, c.platform, "big-tenant", bigProducts)
	if err != nil {
		return nil, err
	}
	for from := 0; from < res.series; from += 5000 {
		if err := importWait(c.nodes[from/5000%len(c.nodes)].URL, o.Import, "inventory", chunkBody("levels", from, from+5000, func(i int, b *bytes.Buffer) {
			fmt.Fprintf(b, `{"skuId":"sku-%d","locationId":"loc-%d","quantityOnHand":%d,"reorderPoint":5}`, i%bigProducts, i/bigProducts, 10+i%90)
		})); err != nil {
			return nil, err
		}
	}
	res.importTook = time.Since(start)
	victim, p, epoch0 := c.owner(o.ID)
	if victim < 0 {
		return nil, fmt.Errorf("owner of the big tenant unknown")
	}
	res.parts, res.largest = journalParts(c.brokers, p, "tenant-"+o.ID)
	hosts := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		hosts[i] = strings.TrimPrefix(s.URL, "http://")
	}
	write := func(d time.Duration) (int, error) {
		r, err := runLoad(loadSpec{URL: url + "/api/forecast/events", Method: "POST", WantStatus: 201, Concurrency: e.concurrency,
			Warmup: 0, Duration: d, Hosts: hosts, Headers: map[string]string{"Authorization": "Bearer " + o.Planner}, Body: distEventBody(bigProducts)})
		if err != nil && r.Requests > 0 && r.Errors*1000 < r.Requests {
			err = nil
		}
		return r.Answered, err
	}
	// Writes until the tenant's snapshot (every --snapshot-every entries, 10,000 by default) is
	// on the snapshot topic, then a tail after it.
	stream := "tenant-" + o.ID
	for tries := 0; ; tries++ {
		if seq, size, ok := snapshotHead(c.brokers, p, stream); ok {
			res.snapSeq, res.snapSize = seq, size
			break
		}
		if tries == 12 {
			return nil, fmt.Errorf("no snapshot of %s after %d rounds of writes", stream, tries)
		}
		if _, err := write(dur); err != nil {
			return nil, err
		}
	}
	if res.tail, err = write(time.Second); err != nil {
		return nil, err
	}
	// Two rounds: the node serving it is killed, then restarted; the second round kills the
	// tenant's new owner.
	for r := range restoreRounds {
		if r > 0 {
			if victim, p, epoch0 = c.owner(o.ID); victim < 0 {
				return nil, fmt.Errorf("owner of the big tenant unknown after round %d", r)
			}
		}
		var survivors []string
		for i, s := range c.nodes {
			if i != victim {
				survivors = append(survivors, s.URL)
			}
		}
		killedAt := time.Now()
		c.nodes[victim].Kill9()
		servedAt, ownedAt, err := c.served(o, p, epoch0, survivors, 3*time.Minute)
		if err != nil {
			return nil, err
		}
		res.served, res.detected = append(res.served, servedAt.Sub(killedAt)), append(res.detected, ownedAt.Sub(killedAt))
		fmt.Fprintf(os.Stderr, "distributed restore round %d: %d series, snapshot at entry %d (%d bytes), served %s after kill -9\n",
			r+1, res.series, res.snapSeq, res.snapSize, servedAt.Sub(killedAt))
		if r+1 < restoreRounds {
			s, err := startServiceOn(e, c.datas[victim], c.args[victim]...)
			if err != nil {
				return nil, err
			}
			c.nodes[victim] = s
			if err := c.settle([]distOrg{o}, victim); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// journalParts reads stream's records on journal partition p: how many are parts of a split
// entry, and the size of its largest entry.
func journalParts(brokers []string, p int32, stream string) (parts, largest int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{streams.DefaultJournalTopic: {p: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return 0, 0
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	size := map[string]int{}
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if string(r.Key) != stream {
				return
			}
			var seq string
			for _, h := range r.Headers {
				switch h.Key {
				case "part":
					parts++
				case "seq":
					seq = string(h.Value)
				}
			}
			size[seq] += len(r.Value)
			largest = max(largest, size[seq])
		})
	}
	return parts, largest
}

// snapshotHead reads the newest snapshot head of stream on partition p of the snapshot topic.
func snapshotHead(brokers []string, p int32, stream string) (seq, size int, ok bool) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{streams.DefaultSnapshotTopic: {p: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return 0, 0, false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if string(r.Key) != "s/"+stream || r.Value == nil {
				return
			}
			var h struct{ Seq, Size int }
			if json.Unmarshal(r.Value, &h) == nil {
				seq, size, ok = h.Seq, h.Size, true
			}
		})
	}
	return seq, size, ok
}

// durs lists durations ("1.2 s, 3.4 s").
func durs(ds []time.Duration) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%.2f s", d.Seconds())
	}
	return strings.Join(out, ", ")
}

func sub(a, b []time.Duration) []time.Duration {
	out := make([]time.Duration, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func distReport(e *env, cs []distConfig, fo *failoverResult, rs *restoreResult, dur time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The broker is **kfake** (franz-go's in-process Kafka-protocol fake, one broker, in the harness's process, "+
		"default limits: 1 MiB messages), not a Kafka cluster: it commits in memory, without replication or disk; demand history is on the project's test ClickHouse (the distributed nodes share it there). "+
		"Each configuration is fresh: its own broker, %d journal partitions, %d enterprise organizations created through the "+
		"platform API (10 products and a scenario each). Load: %d keep-alive connections spread evenly over the nodes, each "+
		"request for one of the %d organizations in turn, so with N nodes about (N-1)/N of the requests are forwarded to the "+
		"owner; 1 s warm-up then %s per phase (writes, then reads). Writes are `POST /api/forecast/events` (201 after the "+
		"journal write: fsync in embedded mode, the transaction's commit on the broker in distributed mode), reads `GET "+
		"/api/forecast/scenarios/[id]`. Service CPU is the user+system CPU of every node process over the phase divided by the "+
		"requests answered; harness CPU is this process's (load generator, and kfake in distributed mode). All on this "+
		"machine: %d cores shared by the nodes, the broker and the load generator. Load average at the end: %s.\n\n",
		distPartitions, distOrgs, e.concurrency, distOrgs, dur, numCPU(), loadAverage())
	b.WriteString("| deployment | durable writes/s | p50 | p99 | service CPU per write | reads/s | p50 | p99 | service CPU per read | harness CPU per request (w / r) | peak RSS per node |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %.0f µs | %.0f | %s | %s | %.0f µs | %.0f / %.0f µs | %d MiB |\n", c.label,
			c.writes.RPS, fmtDur(c.writes.P50), fmtDur(c.writes.P99), c.wCPU,
			c.reads.RPS, fmtDur(c.reads.P50), fmtDur(c.reads.P99), c.rCPU, c.wHar, c.rHar, c.peakMiB)
	}
	if fo != nil {
		fmt.Fprintf(&b, "\n**Failover** (3 nodes, %d rounds; each round kills -9 the node serving one organization, a different one each round, "+
			"then restarts it): over the %d organizations that lost their node, served again through a surviving node after "+
			"p50 **%s**, p99 **%s** (max %s; p99 of so few is the max); the new owner's epoch was committed after p50 %s (the group's 10 s session timeout "+
			"is most of it: a killed node does not leave, the group notices its silence), so the acquire and restore after it took "+
			"about %s. The restarted node was given partitions back and every organization answered on every node %s after its restart (median).\n",
			distRounds, len(fo.served), pct(fo.served, 0.5).Round(time.Millisecond), pct(fo.served, 0.99).Round(time.Millisecond),
			pct(fo.served, 1).Round(time.Millisecond), pct(fo.detected, 0.5).Round(time.Millisecond),
			(pct(fo.served, 0.5) - pct(fo.detected, 0.5)).Round(time.Millisecond), pct(fo.rejoin, 0.5).Round(time.Millisecond))
	}
	if rs != nil {
		fmt.Fprintf(&b, "\n**Restore of a tenant with %d series** (%d products x %d locations, an inventory level each, imported in "+
			"requests of 5,000 rows through the nodes in %.1f s; its journal holds %d part records of split entries, the largest entry %.1f MB): "+
			"writes until its snapshot was on the snapshot topic (entry %d, %.1f MB), then %d more writes (the tail). The node "+
			"serving it killed -9, in %d rounds (the killed node restarted in between, the second round killing the tenant's new "+
			"owner): served again by a survivor after **%s**, of which %s until the new owner's epoch committed "+
			"(session timeout), so **%s** acquiring the partition and restoring from the snapshot plus the tail.\n",
			rs.series, bigProducts, bigLocations, rs.importTook.Seconds(), rs.parts, float64(rs.largest)/1e6, rs.snapSeq,
			float64(rs.snapSize)/1e6, rs.tail, restoreRounds, durs(rs.served), durs(rs.detected), durs(sub(rs.served, rs.detected)))
	}
	var emb, one, three *distConfig
	for i := range cs {
		switch cs[i].nodes {
		case 0:
			emb = &cs[i]
		case 1:
			one = &cs[i]
		case 3:
			three = &cs[i]
		}
	}
	if emb != nil && one != nil && three != nil {
		cores := float64(numCPU())
		fmt.Fprintf(&b, "\n**What %d cores allow, and what it projects to.** Every node here shares the same %d cores with the "+
			"others, the broker and the load generator, so adding nodes adds no CPU: throughput cannot grow with N on this machine; "+
			"what N nodes add is forwarding (about (N-1)/N of the requests cross two nodes) and more processes contending. "+
			"The steadier figure is CPU per request: one node costs %.0f µs of service CPU per durable write and %.0f µs per read "+
			"(embedded: %.0f and %.0f µs); three nodes with forwarding %.0f and %.0f µs (both nodes' CPU of a forwarded request "+
			"counted). The broker's share shows in the harness CPU: %.0f µs per write more than with the embedded mode's load alone "+
			"(kfake's in-memory transactions; a real cluster's CPU is on other machines). Projection, assuming each node gets %d cores of its own and the Kafka cluster keeps up: one node's CPU "+
			"alone would carry about %.0f writes/s or %.0f reads/s, three nodes with forwarding about %.0f writes/s or %.0f reads/s "+
			"(3 x %d cores / CPU per request), more with a load balancer that sends each organization's requests to its owner "+
			"(no forwarding: the one-node cost per request). Against a real cluster a transaction costs round trips to the "+
			"coordinator and the replicas (a few ms instead of kfake's in-memory commit): group commit amortises them over the "+
			"requests waiting, so the write rate then depends on concurrency per partition more than on CPU. Failover is bounded "+
			"below by the session timeout (10 s) and the restore by the snapshot's size plus the tail.\n",
			numCPU(), numCPU(), one.wCPU, one.rCPU, emb.wCPU, emb.rCPU, three.wCPU, three.rCPU, one.wHar-emb.wHar, numCPU(),
			cores*1e6/one.wCPU, cores*1e6/one.rCPU, 3*cores*1e6/three.wCPU, 3*cores*1e6/three.rCPU, numCPU())
	}
	return b.String()
}

// numCPU is the machine's core count.
func numCPU() int { return runtime.NumCPU() }
