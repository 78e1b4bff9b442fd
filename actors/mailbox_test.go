package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/streams"
)

// gatedCore is a distributed-mode core on a local journal with a gate the test sets, holding
// one organization (from a platform snapshot its replica reads).
func gatedCore(t *testing.T) (core *Core, org string, set func(error)) {
	t.Helper()
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
	j, err := streams.OpenJournal(streams.JournalConfig{Dir: filepath.Join(t.TempDir(), "journal")})
	if err != nil {
		t.Fatal(err)
	}
	var answer atomic.Pointer[error]
	set = func(err error) { answer.Store(&err) }
	set(nil)
	core = NewCore(Config{Journal: j,
		Gate: func(string) error { return *answer.Load() },
		FollowPlatform: func(ctx context.Context, onSnap func(uint64, []byte) error, _ func(uint64, []byte) error, caughtUp func()) error {
			if err := onSnap(1, snap); err != nil {
				return err
			}
			caughtUp()
			<-ctx.Done()
			return nil
		}})
	if err := core.Open(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = core.Close(context.Background())
		_ = j.Close()
	})
	return core, creds.Organization.ID, set
}

// A transaction sent to an actor after it left the registry (a caller looked its PID up just
// before the partition was revoked) is answered promptly with the gate's error, whether the actor
// takes it after its final drain (retired) or never takes it (hollywood drops what is sent to an
// actor that stopped); never left to wait for the caller's timeout. What the actor accepted before
// the drain is applied once; nothing refused is applied.
func TestStoppedActorMailboxAnswers(t *testing.T) {
	core, org, setGate := gatedCore(t)
	ctx := ctxFor(t, 30*time.Second)
	forecasting := NewForecasting(core, NewForecasts(core, nil, 0))
	p := supplyplan.Principal{OrgID: org, Role: supplyplan.RoleAdmin}
	if _, err := forecasting.CreateScenario(ctx, p, supplyplan.ScenarioInput{Name: ptrTo("before")}); err != nil {
		t.Fatal(err)
	}
	v, ok := core.tenants.Load(org)
	if !ok {
		t.Fatal("tenant actor not running")
	}
	pid := v.(*actor.PID)
	create := func(name string) func() (supplyplan.Scenario, error) {
		return sendQueued(ctx, core, pid, core.queuedTenant, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
			return st.CreateScenario(supplyplan.ScenarioInput{Name: &name}, core.globalLookup(), supplyplan.Now())
		})
	}

	// Hold the actor so that the drain and what follows it queue up behind.
	release := make(chan struct{})
	held := sendQueued(ctx, core, pid, nil, func(*supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		<-release
		return struct{}{}, nil, nil
	})
	accepted := create("accepted") // before the drain: applied
	time.Sleep(50 * time.Millisecond)
	moved := &supplyplan.ErrNotOwner{Org: org, Owner: "10.0.0.9:8080"}
	setGate(moved) // a revocation closes the gate before Stop
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		core.Stop(ctxFor(t, 20*time.Second), func(s string) bool { return s == tenantStream(org) })
	}()
	for {
		if _, running := core.tenants.Load(org); !running {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the drain is in the mailbox now
	var late []func() (supplyplan.Scenario, error)
	for i := range 20 {
		late = append(late, create(fmt.Sprint("late-", i)))
	}
	close(release)
	if _, err := held(); err != nil {
		t.Fatal(err)
	}
	if _, err := accepted(); err != nil {
		t.Fatalf("a write taken before the drain: %v", err)
	}
	check := func(what string, wait func() (supplyplan.Scenario, error)) {
		t.Helper()
		start := time.Now()
		_, err := wait()
		var no *supplyplan.ErrNotOwner
		if !errors.As(err, &no) || no.Owner != moved.Owner {
			t.Errorf("%s: %v, want the gate's error", what, err) // not Fatal: called from goroutines too
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s answered after %s", what, took)
		}
	}
	for i, w := range late {
		check(fmt.Sprint("write ", i, " after the drain"), w)
	}
	<-stopped

	// After the stop: hollywood never delivers these; the stopped mailbox answers them.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			check(fmt.Sprint("write ", i, " after the stop"), create(fmt.Sprint("gone-", i)))
		}()
	}
	wg.Wait()
	if _, err := ask(ctx, core, pid, func(*supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		return struct{}{}, nil, nil
	}); !errors.As(err, new(*supplyplan.ErrNotOwner)) {
		t.Fatalf("read after the stop: %v", err)
	}
	if n := core.queuedTenant.Load(); n != 0 {
		t.Fatalf("mailbox depth %d after every transaction was answered", n)
	}

	// The gate open again (the partition came back): a new actor loads what was accepted, once.
	setGate(nil)
	list, err := forecasting.ListScenarios(ctx, p, supplyplan.ScenarioFilter{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range list {
		count[s.Name]++
	}
	if count["before"] != 1 || count["accepted"] != 1 || len(list) != 2 {
		t.Fatalf("scenarios after the restart: %v", count)
	}
}

// With no gate (embedded mode, or the gate open again), a stopped actor's refusal is a 503 with
// Retry-After: 1 of its own.
func TestStoppedActorRefusalWithoutGate(t *testing.T) {
	core, org, _ := gatedCore(t)
	ctx := ctxFor(t, 30*time.Second)
	forecasting := NewForecasting(core, NewForecasts(core, nil, 0))
	if _, err := forecasting.CreateScenario(ctx, supplyplan.Principal{OrgID: org, Role: supplyplan.RoleAdmin},
		supplyplan.ScenarioInput{Name: ptrTo("a")}); err != nil {
		t.Fatal(err)
	}
	v, _ := core.tenants.Load(org)
	pid := v.(*actor.PID)
	core.Stop(ctx, func(s string) bool { return s == tenantStream(org) })
	_, err := ask(ctx, core, pid, func(*supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		return struct{}{}, nil, nil
	})
	var e *supplyplan.Error
	if !errors.As(err, &e) || e.Code != supplyplan.EUNAVAILABLE || e.RetryAfter != time.Second {
		t.Fatalf("after the stop: %v", err)
	}
}
