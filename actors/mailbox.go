package actors

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
)

// A journaled actor's mailbox after the actor leaves the registry (Core.Stop, Close): a caller
// that looked the PID up before may still send to it. hollywood drops what an actor has not taken
// when it stops (its graceful stop handles only the batch it is in) and what is sent to it after,
// so such a caller would wait for its timeout. Instead:
//
//   - the drain that stops an actor retires it: every transaction it takes after the drain is
//     answered at once with the refusal (the gate's error: the partition moved or is moving);
//   - the core keeps, per PID, a mailbox that is closed once the actor stopped: a caller waiting
//     for a transaction the actor never took answers with the refusal then, and no actor runs it
//     (txMsg.taken: whoever sets it first answers). A transaction the actor took is always
//     answered by it (at once, or by the journal's callback, which never gets lost), so the
//     caller keeps waiting for that answer.

// mailbox is what the core keeps of a journaled actor besides its PID.
type mailbox struct {
	stream  string
	stopped chan struct{}
	once    sync.Once
}

func (m *mailbox) stop() { m.once.Do(func() { close(m.stopped) }) }

// closedStop is the stop signal of an actor that stopped already.
var closedStop = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// goneMailbox is the mailbox of a PID the core no longer knows: its actor stopped.
func goneMailbox(pid *actor.PID) *mailbox {
	m := &mailbox{stream: pidStream(pid), stopped: closedStop}
	m.once.Do(func() {})
	return m
}

// pidStream is the stream of a journaled actor's PID ("<kind>/<id>", as spawnJournaled names
// them); "" for another.
func pidStream(pid *actor.PID) string {
	kind, id, _ := strings.Cut(pid.GetID(), "/")
	switch kind {
	case "tenant":
		return tenantStream(id)
	case "outbound":
		return outboundStream(id)
	case "loops":
		return loopStream(id)
	case "loopruns":
		return loopRunsStream(id)
	case "platform":
		return platformStream
	}
	return ""
}

// mailer sends transactions to actors: the core (which knows its actors' mailboxes) or a bare
// engine (tests of a single actor).
type mailer interface {
	send(pid *actor.PID, msg any)
	// mailbox returns pid's mailbox; nil when unknown (a bare engine: wait for the answer).
	mailbox(pid *actor.PID) *mailbox
	// refusal is the answer to a transaction an actor of stream will not run.
	refusal(stream string) error
}

type bareEngine struct{ e *actor.Engine }

func (b bareEngine) send(pid *actor.PID, msg any) { b.e.Send(pid, msg) }
func (bareEngine) mailbox(*actor.PID) *mailbox    { return nil }
func (bareEngine) refusal(stream string) error    { return errStopped(stream) }
func (c *Core) send(pid *actor.PID, msg any)      { c.engine.Send(pid, msg) }

// spawnJournaled spawns d's actor and registers its mailbox before the PID is published.
func spawnJournaled[S State](c *Core, d *durable[S], kind, id string) *actor.PID {
	mb := &mailbox{stream: d.stream, stopped: make(chan struct{})}
	d.mb = mb
	pid := c.engine.Spawn(func() actor.Receiver { return d }, kind, actor.WithID(id), actor.WithMaxRestarts(1<<30))
	c.mailboxes.Store(pid, mb)
	return pid
}

// stoppedMailbox closes pid's mailbox once its actor stopped, and forgets it (a PID the core does
// not know is a stopped actor's).
func (c *Core) stoppedMailbox(pid *actor.PID) {
	if v, ok := c.mailboxes.LoadAndDelete(pid); ok {
		v.(*mailbox).stop()
	}
}

// mailbox is pid's mailbox; nil in embedded mode, where actors stop only when the core closes,
// after the transports (no caller is left to answer), which keeps the write path as it was.
func (c *Core) mailbox(pid *actor.PID) *mailbox {
	if c.cfg.Gate == nil {
		return nil
	}
	if v, ok := c.mailboxes.Load(pid); ok {
		return v.(*mailbox)
	}
	return goneMailbox(pid)
}

// refusal is the gate's answer for stream when it has one (the partition moved, is moving or
// restores: 503 Retry-After 1 at the HTTP layer), else a 503 with Retry-After 1 of its own.
func (c *Core) refusal(stream string) error {
	if stream != "" {
		if err := c.gate(stream); err != nil {
			return err
		}
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return &supplyplan.Error{Code: supplyplan.EUNAVAILABLE, Message: "The service is shutting down", RetryAfter: time.Second}
	}
	return errStopped(stream)
}

func errStopped(string) error {
	return &supplyplan.Error{Code: supplyplan.EUNAVAILABLE,
		Message: "The organization's state was stopped on this node (its partition moved); retry in a moment", RetryAfter: time.Second}
}

// awaitMailbox waits for the reply of a message sent to pid, or for pid's stop (then the reply
// if one came, else stopped), or done. taken, when not nil, decides who answers a transaction:
// the first to set it, the actor when it takes the transaction (it answers it), or the caller
// when the actor stopped (then no actor runs it: one that gets it later, a new actor under the
// same PID, drops it).
func awaitMailbox[R, D any](mb *mailbox, reply chan R, taken *atomic.Bool, done <-chan D) (r R, stopped bool, ended bool) {
	var stop <-chan struct{}
	if mb != nil {
		stop = mb.stopped
	}
	for {
		select {
		case r = <-reply:
			return r, false, false
		case <-done:
			return r, false, true
		case <-stop:
			select {
			case r = <-reply:
				return r, false, false
			default:
			}
			if taken != nil && !taken.CompareAndSwap(false, true) {
				stop = nil // the actor took it: its answer comes
				continue
			}
			return r, true, false
		}
	}
}

// deadlineOnly is a context that, seen from the goroutine waiting on it, can end only at its
// deadline: the http package's request context (canceled otherwise only when its handler returned,
// after every wait the handler made), while nothing asked for its Done channel yet.
type deadlineOnly interface {
	context.Context
	EndsOnlyAtDeadline() bool
}

// waitTimers are the stopped timers awaitCtx waits on.
var waitTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// awaitCtx is awaitMailbox until ctx ends. For a deadlineOnly context it waits on a pooled timer
// set to the deadline instead of the context's Done channel: a request's Done made a channel and a
// timer for each durable write (240 bytes of garbage and a timer start and stop, about 2 % of
// the CPU of an event write). Stop and Reset leave no stale tick in a timer's channel (Go 1.23's
// timers; go.mod says 1.26).
func awaitCtx[R any](ctx context.Context, mb *mailbox, reply chan R, taken *atomic.Bool) (r R, stopped, ended bool) {
	if d, ok := ctx.(deadlineOnly); ok && d.EndsOnlyAtDeadline() {
		dl, _ := d.Deadline()
		t := waitTimers.Get().(*time.Timer)
		t.Reset(time.Until(dl))
		r, stopped, ended = awaitMailbox(mb, reply, taken, t.C)
		t.Stop()
		waitTimers.Put(t)
		return r, stopped, ended
	}
	return awaitMailbox(mb, reply, taken, ctx.Done())
}

// endedErr is the answer of a wait that ctx's end cut short: 503 "The request timed out" at its
// deadline (also when awaitCtx's timer saw the deadline before the context did: a
// context.WithDeadline ends when its own timer fires), ctx's error otherwise.
func endedErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return supplyplan.Errorf(supplyplan.EUNAVAILABLE, "The request timed out")
}
