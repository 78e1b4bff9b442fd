package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
)

// The distributed mode's side of the core (docs/distributed.md): the membership restores the
// actors of each partition this node is given (Restore) and stops them when it loses it (Stop);
// Config.Gate keeps every other actor from starting here.
//
// The platform stream (organizations, API keys, plans, global events) is one stream placed on one
// partition like any other: the owner of that partition runs the platform actor and is the only
// writer; a platform write on another node gets *supplyplan.ErrNotOwner naming the owner. Every
// node follows the stream read_committed into a read-only replica (Config.FollowPlatform), from
// which authentication and organization lookups read while the platform actor runs elsewhere.

// PlatformStream is the journal stream of the platform state (the one FollowPlatform follows).
const PlatformStream = platformStream

// notServedHere reports whether err is the gate's answer: the actor belongs to another node, or
// this node is restoring it.
func notServedHere(err error) bool {
	var no *supplyplan.ErrNotOwner
	return errors.Is(err, supplyplan.ErrRestoring) || errors.As(err, &no)
}

// movedAway reports whether err says another node owns the actor's partition (not that this node
// is restoring it, which it will serve once restored).
func movedAway(err error) bool {
	var no *supplyplan.ErrNotOwner
	return errors.As(err, &no)
}

// servedElsewhere reports, in distributed mode, that err is the gate's answer: work at start
// (resuming deliveries, imports, loop effects) skips what this node does not serve.
func (c *Core) servedElsewhere(err error) bool {
	return err != nil && c.cfg.Gate != nil && notServedHere(err)
}

// spawnGate asks the gate again before an actor is spawned, under c.mu: a revocation closes the
// gate before Stop takes c.mu, so an actor is never spawned after Stop collected the partition's
// (it would outlive the partition's ownership).
func (c *Core) spawnGate(stream string, restoring bool) error {
	if restoring {
		return nil
	}
	return c.gate(stream)
}

// platform returns the platform actor, when it runs here.
func (c *Core) platform() (*actor.PID, error) {
	if err := c.gate(platformStream); err != nil {
		return nil, err
	}
	if pid := c.platformPID.Load(); pid != nil {
		return pid, nil
	}
	return nil, supplyplan.ErrRestoring
}

// followPlatform starts the platform replica and waits until it has read what was committed
// before (or ctx ends). It keeps following (restarting after an error) until the core closes.
func (c *Core) followPlatform(ctx context.Context) error {
	if c.cfg.FollowPlatform == nil {
		return errors.New("distributed core: FollowPlatform is required with Gate")
	}
	fctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	ready := make(chan struct{})
	var once sync.Once
	c.stopFollow = func() { cancel(); <-done }
	go func() {
		defer close(done)
		for fctx.Err() == nil {
			st := supplyplan.NewPlatformState()
			err := c.cfg.FollowPlatform(fctx, func(_ uint64, data []byte) error {
				st = supplyplan.NewPlatformState()
				if err := json.Unmarshal(data, st); err != nil {
					return err
				}
				c.publishReplica(st)
				return nil
			}, func(_ uint64, payload []byte) error {
				recs, err := supplyplan.DecodeRecords(payload)
				if err != nil {
					return err
				}
				c.replicaMu.Lock()
				defer c.replicaMu.Unlock()
				for _, r := range recs {
					if r.Kind == supplyplan.KindIdempotency {
						continue
					}
					if err := st.Apply(r); err != nil {
						return err
					}
				}
				c.replica = st
				if !c.platformLocal.Load() {
					c.index.Store(buildIndex(st))
				}
				return nil
			}, func() { once.Do(func() { close(ready) }) })
			if fctx.Err() != nil {
				return
			}
			c.log.Error("platform replica stopped; following again", "err", err)
			select {
			case <-fctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("follow the platform stream: %w", ctx.Err())
	}
}

func (c *Core) publishReplica(st *supplyplan.PlatformState) {
	c.replicaMu.Lock()
	defer c.replicaMu.Unlock()
	c.replica = st
	if !c.platformLocal.Load() {
		c.index.Store(buildIndex(st))
	}
}

// restoreHook is a service's work to resume for the owners (organization ids, and
// supplyplan.PlatformOwner when the platform stream was restored) of a restored partition.
type restoreHook struct {
	name string
	fn   func(ctx context.Context, owners []string) error
	// streams, instead of fn: the hook asks about streams itself (the global loop catalog's,
	// which no owner names).
	streams func(ctx context.Context, in func(stream string) bool) error
}

// onRestore registers a service's resumption (services call it from Open; distributed mode only).
func (c *Core) onRestore(name string, fn func(ctx context.Context, owners []string) error) {
	if c.cfg.Gate == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restoreHooks = append(c.restoreHooks, restoreHook{name: name, fn: fn})
}

// onRestoreStreams is onRestore for work that selects the restored partition's streams itself.
func (c *Core) onRestoreStreams(name string, fn func(ctx context.Context, in func(stream string) bool) error) {
	if c.cfg.Gate == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restoreHooks = append(c.restoreHooks, restoreHook{name: name, streams: fn})
}

// Restore starts the actors of the streams in(stream) selects (one partition just acquired):
// the platform actor if its stream is there, and the tenant actor of every organization placed
// there; it returns once each has loaded its state (snapshot + journal tail) or ctx ends. The
// others (outbound, loop catalogs and runtimes) start on first use, as in embedded mode.
func (c *Core) Restore(ctx context.Context, in func(stream string) bool) error {
	if in(platformStream) && c.platformPID.Load() == nil {
		c.platformLocal.Store(true)
		if err := c.startPlatform(ctx); err != nil {
			if pid := c.stopPlatform(ctx); pid != nil {
				c.stopActors(ctx, []*actor.PID{pid})
			}
			return err
		}
	}
	var waits []func() (struct{}, error)
	for _, org := range c.orgs() {
		if !in(tenantStream(org)) {
			continue
		}
		pid, err := c.tenantActor(org, true)
		if err != nil {
			return err
		}
		waits = append(waits, sendQueued(ctx, c, pid, c.queuedTenant, func(*supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
			return struct{}{}, nil, nil
		}))
	}
	for _, w := range waits {
		if _, err := w(); err != nil {
			return err
		}
	}
	return nil
}

// Resume resumes, once the partition serves (after Restore, the gate open), the services' work
// that a stop or a crash of the previous owner interrupted for the owners in(stream) selects:
// pending deliveries, import jobs, loop effects, change-history figures. A failure is logged:
// the partition serves anyway (the work is retried at the next restore or restart).
func (c *Core) Resume(ctx context.Context, in func(stream string) bool) {
	var owners []string
	if in(platformStream) {
		owners = append(owners, supplyplan.PlatformOwner)
	}
	for _, org := range c.orgs() {
		if in(tenantStream(org)) {
			owners = append(owners, org)
		}
	}
	c.mu.Lock()
	hooks := slices.Clone(c.restoreHooks)
	c.mu.Unlock()
	for _, h := range hooks {
		var err error
		if h.streams != nil {
			err = h.streams(ctx, in)
		} else {
			err = h.fn(ctx, owners)
		}
		if err != nil && ctx.Err() == nil {
			c.log.Error("resume after restore failed", "work", h.name, "owners", len(owners), "err", err)
		}
	}
}

// Stop stops the actors of the streams in(stream) selects (a partition revoked or lost): they
// leave the registry first (the gate answers for them from now on), then each drains (every
// write it accepted is durable or failed) and stops.
func (c *Core) Stop(ctx context.Context, in func(stream string) bool) {
	var pids []*actor.PID
	c.mu.Lock()
	take := func(m *sync.Map, stream func(string) string, states *sync.Map) {
		m.Range(func(k, v any) bool {
			if in(stream(k.(string))) {
				m.Delete(k)
				if states != nil {
					states.Delete(k)
				}
				pids = append(pids, v.(*actor.PID))
			}
			return true
		})
	}
	take(&c.tenants, tenantStream, &c.tenantStates)
	take(&c.outbounds, outboundStream, nil)
	take(&c.loops, loopStream, nil)
	take(&c.runs, loopRunsStream, &c.runStates)
	c.mu.Unlock()
	if in(platformStream) {
		if pid := c.stopPlatform(ctx); pid != nil {
			pids = append(pids, pid)
		}
	}
	c.stopActors(ctx, pids)
}

// stopPlatform hands the index back to the replica and returns the platform actor (nil: none).
func (c *Core) stopPlatform(ctx context.Context) *actor.PID {
	pid := c.platformPID.Swap(nil)
	c.platformLocal.Store(false)
	c.replicaMu.Lock()
	if c.replica != nil {
		c.index.Store(buildIndex(c.replica))
	}
	c.replicaMu.Unlock()
	return pid
}

// stopActors drains and stops pids in parallel (Close and Stop).
func (c *Core) stopActors(ctx context.Context, pids []*actor.PID) {
	var wg sync.WaitGroup
	for _, pid := range pids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{})
			stream := pidStream(pid)
			// The drain retires the actor: what it takes after is refused (the gate's answer).
			c.engine.Send(pid, drainMsg{done: done, retire: func() error { return c.refusal(stream) }})
			select {
			case <-done:
			case <-ctx.Done():
			}
			// Everything queued before the drain has been handled. What hollywood drops when the
			// actor stops (sent after the drain) is answered by its caller: the mailbox closes.
			select {
			case <-c.engine.Poison(pid).Done():
				c.stoppedMailbox(pid)
			case <-ctx.Done():
			}
		}()
	}
	wg.Wait()
}
