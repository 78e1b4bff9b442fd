package actors

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// openLoopRuntime builds the catalog and the runtime on s's core, sharing the references, and
// opens them.
func openLoopRuntime(t testing.TB, s *services, events supplyplan.EventPublisher) (*LoopCatalog, *LoopRuntime) {
	t.Helper()
	refs := &LoopRefs{}
	cat := openLoopCatalog(t, s, LoopCatalogConfig{Signer: mustSigner(t), References: refs})
	rt := NewLoopRuntime(s.core, LoopRuntimeConfig{Refs: refs}, cat, events)
	if err := rt.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return cat, rt
}

func runCaller(org string) supplyplan.LoopRunCaller {
	return supplyplan.LoopRunCaller{OrgID: org, Actor: supplyplan.LoopActor{Type: supplyplan.LoopActorService, Sub: "svc:test"},
		Roles: supplyplan.LoopRolesOf(true, true)}
}

// TestLoopRuntimeDurableAndReferenced: instances survive a restart of the core with their audit
// chain, and the catalog refuses to delete a version an instance is bound to.
func TestLoopRuntimeDurableAndReferenced(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newServices(t, options{dir: dir})
	p := s.bootstrap(t)
	cat, rt := openLoopRuntime(t, s, nil)
	org, _ := s.platform.Organization(p.OrgID)
	lc := supplyplan.LoopCallerOf(p, org)
	name := org.Slug + "/restock"
	if _, err := cat.PublishLoop(ctx, lc, name, "1.0.0", testManifest(name, "1.0.0")); err != nil {
		t.Fatal(err)
	}
	res, err := rt.StartInstance(ctx, runCaller(p.OrgID), supplyplan.LoopStartInput{Loop: name, Range: "^1", BusinessKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Instance.ID
	if _, err := rt.Transition(ctx, runCaller(p.OrgID), id, supplyplan.LoopTransitionInput{Name: "submit", Roles: supplyplan.LoopRolesOf(true, true)}); err != nil {
		t.Fatal(err)
	}
	// A newer version does not change the running instance; the bound one cannot be removed.
	if _, err := cat.PublishLoop(ctx, lc, name, "1.1.0", testManifest(name, "1.1.0")); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.RemoveLoopVersion(ctx, lc, name, "1.0.0"); supplyplan.ErrorCode(err) != supplyplan.ECONFLICT {
		t.Fatalf("remove a referenced version = %v", err)
	}
	s.close(t)

	s2 := newServices(t, options{dir: dir})
	_, rt2 := openLoopRuntime(t, s2, nil)
	got, err := rt2.GetInstance(ctx, p.OrgID, id)
	if err != nil || got.State != "submitted" || got.Version != 2 || got.LoopVersion != "1.0.0" {
		t.Fatalf("after restart %+v %v", got, err)
	}
	v, err := rt2.VerifyAudit(ctx, p.OrgID, id)
	if err != nil || !v.Valid || v.Events != 2 {
		t.Fatalf("verify %+v %v", v, err)
	}
	if !rt2.cfg.Refs.LoopVersionReferenced(supplyplan.LoopVersion{LoopDist: supplyplan.LoopDist{Digest: got.DefinitionDigest}}) {
		t.Fatal("the bound digest is not referenced after a restart")
	}
}

// BenchmarkLoopTransitions measures durable transitions (each journaled with its audit event and
// outbound event, fsync before the answer) of one organization, from concurrent callers, through
// the service (no HTTP). The quality loop's fail/rework cycle never ends, so every call is a
// transition.
func BenchmarkLoopTransitions(b *testing.B) {
	ctx := context.Background()
	s := newServices(b, options{})
	p := s.bootstrap(b)
	_, rt := openLoopRuntime(b, s, nil)
	const instances = 256
	ids := make([]string, instances)
	roles := supplyplan.LoopRolesOf(true, true)
	for i := range ids {
		res, err := rt.StartInstance(ctx, runCaller(p.OrgID), supplyplan.LoopStartInput{Loop: "supplyplan/quality", BusinessKey: fmt.Sprint("lot-", i)})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = res.Instance.ID
		if _, err := rt.Transition(ctx, runCaller(p.OrgID), ids[i], supplyplan.LoopTransitionInput{Name: "start_inspection", Roles: roles}); err != nil {
			b.Fatal(err)
		}
	}
	fail := []byte(`{"defects":[{"code":"SCRATCH","quantity":1}]}`)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	var wg sync.WaitGroup
	work := make(chan int)
	for w := range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for range work {
				name, payload := "fail", fail
				if n%2 == 1 {
					name, payload = "rework", nil
				}
				if _, err := rt.Transition(ctx, runCaller(p.OrgID), ids[w], supplyplan.LoopTransitionInput{Name: name, Payload: payload, Roles: roles}); err != nil {
					b.Error(err)
					return
				}
				n++
				next.Add(1)
			}
		}()
	}
	for i := 0; i < b.N; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	b.ReportMetric(float64(next.Load())/b.Elapsed().Seconds(), "transitions/s")
	// CPU time (user+system, every goroutine: the journal's too) per transition: steadier than the
	// rate on a shared machine.
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// TestLoopIdemPrunedForEveryOrganization: the runtime's tick drops expired Idempotency-Keys of
// every organization (it once pruned only the first one sync.Map's Range visited, and Go's
// sync.Map visits them in the same order all along, so the others' keys stayed forever).
func TestLoopIdemPrunedForEveryOrganization(t *testing.T) {
	ctx := context.Background()
	s := newServices(t, options{})
	p := s.bootstrap(t)
	orgs := []string{p.OrgID}
	for i := range 3 {
		o, err := s.platform.CreateOrganization(ctx, supplyplan.OrganizationInput{Name: ptrTo(fmt.Sprint("Org ", i)), Slug: ptrTo(fmt.Sprint("org-", i))})
		if err != nil {
			t.Fatal(err)
		}
		orgs = append(orgs, o.ID)
	}
	refs := &LoopRefs{}
	cat := openLoopCatalog(t, s, LoopCatalogConfig{Signer: mustSigner(t), References: refs})
	var clock atomic.Value
	t0 := time.Date(2026, 11, 29, 10, 0, 30, 0, time.UTC)
	clock.Store(t0)
	// A tick of an hour: the background ticker stays out of the test, and every tick prunes.
	rt := NewLoopRuntime(s.core, LoopRuntimeConfig{Refs: refs, TimerTick: time.Hour, Now: func() time.Time { return clock.Load().(time.Time) }}, cat, nil)
	if err := rt.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	keys := func(org string) int {
		n, err := runTx(ctx, rt, org, func(st *supplyplan.LoopRunState) (int, []supplyplan.Record, error) { return len(st.Idem), nil, nil })
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, org := range orgs {
		c := runCaller(org)
		c.IdempotencyKey, c.Fingerprint = "start-1", "POST /v1/instances {}"
		if _, err := rt.StartInstance(ctx, c, supplyplan.LoopStartInput{Loop: "supplyplan/quality", BusinessKey: "lot-1"}); err != nil {
			t.Fatalf("%s: %v", org, err)
		}
		if n := keys(org); n != 1 {
			t.Fatalf("%s holds %d keys, want 1", org, n)
		}
	}
	rt.tick(ctx) // nothing expired yet
	for _, org := range orgs {
		if n := keys(org); n != 1 {
			t.Fatalf("%s holds %d keys before they expire, want 1", org, n)
		}
	}
	clock.Store(t0.Add(supplyplan.LoopIdemTTL + time.Minute))
	rt.tick(ctx)
	for _, org := range orgs {
		if n := keys(org); n != 0 {
			t.Errorf("%s still holds %d expired keys", org, n)
		}
	}
}

// TestClosedLoopInstancesPurged: an instance closed longer than the retention is deleted with its
// audit events by the runtime's tick (durably: still gone after a restart), a recently closed one
// and an old open one stay, and a new instance can then take the deleted one's business key.
func TestClosedLoopInstancesPurged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var clock atomic.Value
	t0 := time.Date(2026, 11, 29, 10, 0, 30, 0, time.UTC)
	clock.Store(t0)
	open := func(s *services) *LoopRuntime {
		refs := &LoopRefs{}
		cat := openLoopCatalog(t, s, LoopCatalogConfig{Signer: mustSigner(t), References: refs})
		rt := NewLoopRuntime(s.core, LoopRuntimeConfig{Refs: refs, TimerTick: time.Hour, Retention: 48 * time.Hour,
			Now: func() time.Time { return clock.Load().(time.Time) }}, cat, nil)
		if err := rt.Open(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Close(context.Background()) })
		return rt
	}
	s := newServices(t, options{dir: dir})
	p := s.bootstrap(t)
	rt := open(s)
	c := runCaller(p.OrgID)
	start := func(rt *LoopRuntime, key string) string {
		res, err := rt.StartInstance(ctx, c, supplyplan.LoopStartInput{Loop: "supplyplan/quality", BusinessKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return res.Instance.ID
	}
	oldClosed, oldOpen := start(rt, "lot-old"), start(rt, "lot-open")
	if _, err := rt.Lifecycle(ctx, c, oldClosed, supplyplan.LoopActionTerminate, supplyplan.LoopLifecycleInput{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	clock.Store(t0.Add(47 * time.Hour))
	recentClosed := start(rt, "lot-recent")
	if _, err := rt.Lifecycle(ctx, c, recentClosed, supplyplan.LoopActionTerminate, supplyplan.LoopLifecycleInput{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	rt.tick(ctx) // the old one closed 47 h ago: within the retention
	if _, err := rt.GetInstance(ctx, p.OrgID, oldClosed); err != nil {
		t.Fatalf("purged before its retention ended: %v", err)
	}
	// The tenant remembers effects it applied, by "<instance>#<seq>": those of a purged instance go.
	if _, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		return struct{}{}, []supplyplan.Record{
			supplyplan.Put(supplyplan.KindLoopEffectApplied, oldClosed+"#2", &supplyplan.LoopEffectRecord{ID: oldClosed + "#2", AppliedAt: t0}),
			supplyplan.Put(supplyplan.KindLoopEffectApplied, oldOpen+"#2", &supplyplan.LoopEffectRecord{ID: oldOpen + "#2", AppliedAt: t0}),
		}, nil
	}); err != nil {
		t.Fatal(err)
	}
	clock.Store(t0.Add(49 * time.Hour))
	rt.tick(ctx)
	applied := func(s *services) map[string]bool {
		m, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (map[string]bool, []supplyplan.Record, error) {
			out := map[string]bool{}
			for id := range st.LoopEffects {
				out[id] = true
			}
			return out, nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if got := applied(s); got[oldClosed+"#2"] || !got[oldOpen+"#2"] {
		t.Errorf("applied effect ids after the purge: %v (want the purged instance's gone, the open one's kept)", got)
	}
	check := func(rt *LoopRuntime) {
		t.Helper()
		for id, kept := range map[string]bool{oldClosed: false, oldOpen: true, recentClosed: true} {
			_, err := rt.GetInstance(ctx, p.OrgID, id)
			if got := err == nil; got != kept {
				t.Errorf("instance %s kept = %v (%v), want %v", id, got, err, kept)
			}
			evs, err := rt.Events(ctx, p.OrgID, id, 0, 100)
			if kept && (err != nil || len(evs) == 0) {
				t.Errorf("instance %s: events %d, %v", id, len(evs), err)
			}
			if !kept && err == nil && len(evs) > 0 {
				t.Errorf("purged instance %s still has %d events", id, len(evs))
			}
		}
		if v, err := rt.VerifyAudit(ctx, p.OrgID, recentClosed); err != nil || !v.Valid {
			t.Errorf("verify the kept instance: %+v %v", v, err)
		}
	}
	check(rt)
	start(rt, "lot-old") // its business key is free (it was already: the instance was closed)
	s.close(t)
	s2 := newServices(t, options{dir: dir})
	check(open(s2))
}
