package actors

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

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
