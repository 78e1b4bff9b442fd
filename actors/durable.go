// Package actors runs the service's state on hollywood actors: one actor per organization owns that
// tenant's state and serializes its writes (validate, apply, persist, reply), one platform actor
// owns organizations and keys, and outbound actors own alerts, endpoints and deliveries. Each is
// the journaled actor of this file. Core (core.go) runs them; one service type per capability
// (Platform, Forecasting, Transfers, ...) implements the root package's service interfaces on the
// core. Only this package imports hollywood; it reaches the journal through supplyplan.Journal.
package actors

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
)

// State is what a durable actor owns: changed only by Apply, rebuilt by replaying records.
type State interface {
	Apply(supplyplan.Record) error
}

// txRunner runs a transaction inside the actor against its state (txCall). It must not change the
// state itself: it returns the records that the actor applies and journals (its value it keeps
// itself). An interface rather than a func: the txCall is the runner, where a method value bound
// to it was one more allocation per transaction.
type txRunner[S State] interface {
	run(S) ([]supplyplan.Record, error)
}

// txMsg asks the actor to run fn and answer on reply (a channel, not hollywood's Request: the
// notes explain why its random reply ids are unsafe). claim is the Idempotency-Key of the request
// that sent it, if any.
//
// It travels as a pointer into its txCall (no copy boxed into an interface per transaction).
type txMsg[S State] struct {
	fn    txRunner[S]
	reply chan txReply
	claim *supplyplan.IdempotencyClaim
	// queued counts the transactions sent to actors of this kind and not yet taken from the
	// mailbox (the actor mailbox depth metric); nil: not counted.
	queued *atomic.Int64
	// dirty: a transaction writing nothing is answered at once, even when a write it may see is
	// not durable yet (peek). Only for a caller that reads what no write in flight changes.
	dirty bool
	// taken is set by whichever answers the transaction first: the actor when it takes it, or
	// its caller when the actor stopped without taking it (mailbox.go); nil: not tracked.
	taken *atomic.Bool
}

// respond answers the transaction (exactly once) and tells its claim the outcome is known.
func (m *txMsg[S]) respond(r txReply) {
	m.reply <- r
	if m.claim != nil {
		m.claim.TxDone()
	}
}

type txReply struct {
	stream string
	err    error
}

type loadedMsg[S State] struct {
	state S
	idem  *idemTable
	seq   uint64
	err   error
	gen   uint64 // the load that read it: only the newest counts
	snap  int    // size of the snapshot it started from (0: none)
}

type reloadMsg struct{}
type snapshotDoneMsg struct {
	err  error
	size int // bytes of the snapshot, when it was encoded off the actor (0: already counted)
}

// drainMsg is answered once everything before it is applied and durable, after a final snapshot.
// With retire, the actor then answers every transaction it takes with retire()'s error (it is
// being stopped: mailbox.go).
type drainMsg struct {
	done   chan struct{}
	retire func() error
}

// snapshotRatio is how many bytes a stream journals per byte of its last snapshot before it takes
// the next one. At 1, a tenant written to as fast as it can be spent as much CPU encoding
// snapshots as encoding its writes (the api benchmark's event writes); 2 halves that, for a
// replay of at most two snapshots' worth of entries.
const snapshotRatio = 2

// A drain (shutdown, a move) takes a final snapshot of a state whose last snapshot was smaller than
// finalSnapshotFloor; a larger one only when the periodic policy is due one (snapshotRatio times
// its size journaled since). The periodic policy already bounds the next load's replay, and
// encoding a large state on the way out is what overran --shutdown-timeout: 2 million inventory
// levels took 14 s (357 MB), the 5-million-series tenant of the memory benchmark over 30 s.
const finalSnapshotFloor = 4 << 20

// durable is the generic journaled actor shared by tenant and platform actors.
type durable[S State] struct {
	stream    string
	journal   supplyplan.Journal
	newState  func() S
	log       *slog.Logger
	snapEvery int
	// viewSnapshots encodes snapshots on another goroutine from a copy of the state's maps
	// (snapshotView) instead of in the actor: for a state whose map values are never changed in
	// place. The actor then stops only to copy the maps, not to encode the whole state.
	viewSnapshots bool
	// afterApply runs in the actor after state changed (live and after a load).
	afterApply func(S)
	// now is the clock of idempotency keys (nil: time.Now).
	now func() time.Time

	// mu guards state, seq and loaded against readers outside the actor (read): the actor changes
	// them under the write lock; it reads them without it (it is their only writer).
	mu         sync.RWMutex
	state      S
	idem       *idemTable // the Idempotency-Keys whose marker is in this stream
	loaded     bool
	loadErr    error
	stash      []any
	loadGen    uint64        // loads started (startLoad); a loadedMsg of an older one is dropped
	seq        uint64        // newest entry appended
	durableSeq atomic.Uint64 // newest entry known durable
	// failedAppends counts the journal's failed appends of this stream (set on the journal's
	// goroutine); failuresAtLoad is its value when the load of the state in hand started. A
	// snapshot is saved only if none failed since: the state may hold the failed entry until the
	// reload that the failure asked for (entriesSettled).
	failedAppends  atomic.Uint64
	failuresAtLoad uint64
	sinceSnap      int
	bytesSince     int // payload bytes journaled since the last snapshot
	lastSnap       int // size of the last snapshot this actor took
	snapping       bool
	// drains wait for the snapshot in flight: the final snapshot follows it (a snapshot saved after a
	// newer one would replace it).
	drains []drainMsg
	// retired: a retiring drain was taken; every later transaction is answered with its error.
	retired func() error
	mb      *mailbox // closed when the actor stops (mailbox.go); nil for an actor spawned alone
	pid     *actor.PID
	engine  *actor.Engine
}

// Receive handles one message. It never blocks on I/O: loading, journaling and snapshots report
// back as messages or callbacks.
//
// A transaction goes to receiveTx, the rest to receive: the frame every transaction runs on is
// then receiveTx's alone (176 bytes), not that of a switch over every message the actor takes (528).
// hollywood runs an actor's messages on a goroutine it starts when the mailbox turns busy (about
// every other write under load), which starts on the runtime's starting stack (4 KiB here); an
// event write's transaction now fits in it. When it did not, the stack grew deep in the
// transaction, a copy that walks every frame: ~4 % of the service's CPU (docs/decisions.md).
func (d *durable[S]) Receive(c *actor.Context) {
	if m, ok := c.Message().(*txMsg[S]); ok {
		d.receiveTx(m)
		return
	}
	d.receive(c)
}

// recovered handles a panic of the message being handled (m, when a transaction): a panic must
// not restart the actor (hollywood drops its state and, past MaxRestarts, the process). It reloads
// from the journal so memory matches disk.
func (d *durable[S]) recovered(r any, m *txMsg[S]) {
	d.log.Error("actor panic", "stream", d.stream, "panic", r, "stack", string(debug.Stack()))
	if m != nil {
		m.respond(txReply{stream: d.stream, err: supplyplan.Errorf(supplyplan.EINTERNAL, "Internal error")})
	}
	d.startLoad()
}

func (d *durable[S]) receiveTx(m *txMsg[S]) {
	defer func() {
		if r := recover(); r != nil {
			d.recovered(r, m)
		}
	}()
	if m.taken != nil && !m.taken.CompareAndSwap(false, true) {
		return // its caller refused it already (the actor it was sent to had stopped)
	}
	if m.queued != nil {
		m.queued.Add(-1)
	}
	if d.retired != nil {
		m.respond(txReply{stream: d.stream, err: d.retired()})
		return
	}
	if !d.loaded {
		if d.loadErr != nil {
			m.respond(txReply{stream: d.stream, err: d.unavailable()})
			return
		}
		d.stash = append(d.stash, m)
		return
	}
	d.run(m)
}

func (d *durable[S]) receive(c *actor.Context) {
	defer func() {
		if r := recover(); r != nil {
			d.recovered(r, nil)
		}
	}()
	switch m := c.Message().(type) {
	case actor.Started:
		d.pid, d.engine = c.PID(), c.Engine()
		d.startLoad()
	case loadedMsg[S]:
		d.onLoaded(m)
	case idemLookupMsg:
		if d.retired != nil {
			m.reply <- idemLookupReply{err: d.retired()}
			return
		}
		if !d.loaded {
			if d.loadErr != nil {
				m.reply <- idemLookupReply{err: d.unavailable()}
				return
			}
			d.stash = append(d.stash, m)
			return
		}
		d.lookupIdempotency(m)
	case idemStoreMsg:
		if d.retired != nil {
			m.reply <- d.retired()
			return
		}
		if !d.loaded {
			if d.loadErr != nil {
				m.reply <- d.unavailable()
				return
			}
			d.stash = append(d.stash, m)
			return
		}
		d.storeIdempotency(m)
	case drainMsg:
		if m.retire != nil {
			d.retired = m.retire // also for the messages stashed before it: none has run
		}
		if !d.loaded {
			if d.loadErr != nil {
				close(m.done)
				return
			}
			d.stash = append(d.stash, m)
			return
		}
		d.drain(m)
	case reloadMsg:
		d.startLoad()
	case snapshotDoneMsg:
		d.snapping = false
		if m.size > 0 {
			d.lastSnap = m.size
		}
		if m.err != nil {
			d.snapshotFailed(m.err)
		}
		drains := d.drains
		d.drains = nil
		for _, dm := range drains {
			d.drain(dm)
		}
	case actor.Stopped:
		d.stopped()
		if d.mb != nil {
			d.mb.stop()
		}
	}
}

// stopped answers what the actor holds and will never handle: the messages stashed while it
// loaded (refused) and the drains waiting for a snapshot.
func (d *durable[S]) stopped() {
	refuse := d.retired
	if refuse == nil {
		refuse = d.unavailable
	}
	for _, s := range d.stash {
		switch s := s.(type) {
		case *txMsg[S]:
			s.respond(txReply{stream: d.stream, err: refuse()})
		case idemLookupMsg:
			s.reply <- idemLookupReply{err: refuse()}
		case idemStoreMsg:
			s.reply <- refuse()
		case drainMsg:
			close(s.done)
		}
	}
	d.stash = nil
	for _, m := range d.drains {
		close(m.done)
	}
	d.drains = nil
}

func (d *durable[S]) unavailable() error {
	return supplyplan.Errorf(supplyplan.EUNAVAILABLE, "Tenant state is unavailable; see the server log")
}

// startLoad rebuilds the state from the journal on another goroutine.
func (d *durable[S]) startLoad() {
	d.mu.Lock()
	d.loaded = false
	d.mu.Unlock()
	d.failuresAtLoad = d.failedAppends.Load() // a failure before it is not in what it reads
	// A load started earlier may have read the journal before what made this one necessary (a
	// write that failed after it): only the newest load's state is taken.
	d.loadGen++
	engine, pid, gen := d.engine, d.pid, d.loadGen
	go func() {
		st, idem, seq, snap, err := d.load()
		engine.Send(pid, loadedMsg[S]{state: st, idem: idem, seq: seq, snap: snap, err: err, gen: gen})
	}()
}

func (d *durable[S]) load() (S, *idemTable, uint64, int, error) {
	start := time.Now()
	st := d.newState()
	idem := newIdemTable()
	snap := 0
	res, err := d.journal.Load(d.stream, func(_ uint64, data []byte) error {
		st, idem, snap = d.newState(), newIdemTable(), len(data)
		entries, err := snapshotIdempotency(data)
		if err != nil {
			return fmt.Errorf("decode idempotency keys of the snapshot: %w", err)
		}
		idem.restore(entries)
		return json.Unmarshal(data, st)
	}, func(_ uint64, payload []byte) error {
		recs, err := supplyplan.DecodeRecords(payload)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.Kind == supplyplan.KindIdempotency {
				if err := idem.apply(r); err != nil {
					return err
				}
				continue
			}
			if err := st.Apply(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return st, idem, 0, 0, err
	}
	idem.prune(d.clock())
	d.log.Debug("state loaded", "stream", d.stream, "snapshotSeq", res.SnapshotSeq, "entries", res.Entries,
		"idempotencyKeys", idem.len(), "took", time.Since(start))
	return st, idem, res.LastSeq, snap, nil
}

func (d *durable[S]) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

func (d *durable[S]) onLoaded(m loadedMsg[S]) {
	if m.gen != d.loadGen {
		return // a newer load is on its way
	}
	if m.err != nil {
		d.loadErr = m.err
		d.log.Error("cannot load state", "stream", d.stream, "err", m.err)
		for _, s := range d.stash {
			switch s := s.(type) {
			case *txMsg[S]:
				s.respond(txReply{stream: d.stream, err: d.unavailable()})
			case idemLookupMsg:
				s.reply <- idemLookupReply{err: d.unavailable()}
			case idemStoreMsg:
				s.reply <- d.unavailable()
			case drainMsg:
				close(s.done)
			}
		}
		d.stash = nil
		return
	}
	d.mu.Lock()
	d.state, d.idem, d.seq, d.loaded, d.loadErr = m.state, m.idem, m.seq, true, nil
	d.durableSeq.Store(m.seq)
	if m.snap > 0 {
		// The next snapshots and the final one are weighed against the state's size from the start.
		d.lastSnap = m.snap
	}
	if d.afterApply != nil {
		d.afterApply(d.state)
	}
	d.mu.Unlock()
	stash := d.stash
	d.stash = nil
	for _, s := range stash {
		if !d.loaded { // a message in the stash triggered a reload
			d.stash = append(d.stash, s)
			continue
		}
		switch s := s.(type) {
		case *txMsg[S]:
			d.run(s)
		case idemLookupMsg:
			d.lookupIdempotency(s)
		case idemStoreMsg:
			d.storeIdempotency(s)
		case drainMsg:
			d.drain(s)
		}
	}
}

// run executes one transaction: run fn, apply and journal its records, reply when durable. The
// first transaction of a request with an Idempotency-Key that writes anything carries the key's
// marker in the same journal entry; a key already known here is never applied again.
func (d *durable[S]) run(m *txMsg[S]) {
	if d.retired != nil { // taken from the stash after a retiring drain
		m.respond(txReply{stream: d.stream, err: d.retired()})
		return
	}
	c := m.claim
	if c != nil && !c.Marked() {
		if e := d.idem.get(c.Scope, c.Key, d.clock()); e != nil {
			// The request of this key was applied already (its retry got past the lookup, which
			// only happens when the marker sits in a stream it did not ask): never apply it twice.
			_, err := e.Outcome(c.Fingerprint)
			if err == nil {
				err = supplyplan.Errorf(supplyplan.EIDEMLOST, "The request with this Idempotency-Key was already applied; retry it to get its response")
			}
			m.respond(txReply{stream: d.stream, err: err})
			return
		}
	}
	recs, err := m.fn.run(d.state)
	if err != nil || len(recs) == 0 {
		if err == nil && !m.dirty && d.durableSeq.Load() < d.seq {
			// A read must not see a write that is not durable yet: answer after the next commit.
			stream := d.stream
			d.journal.Barrier(stream, func(jerr error) {
				if jerr != nil {
					m.respond(txReply{stream: stream, err: d.unavailable()})
					return
				}
				m.respond(txReply{stream: stream})
			})
			return
		}
		m.respond(txReply{stream: d.stream, err: err})
		return
	}
	marked := c != nil && c.Mark()
	if marked {
		recs = append(recs[:len(recs):len(recs)], supplyplan.Put(supplyplan.KindIdempotency,
			supplyplan.IdempotencyID(c.Scope, c.Key),
			&supplyplan.IdempotencyEntry{Scope: c.Scope, Key: c.Key, Fingerprint: c.Fingerprint, At: d.clock().UTC()}))
	}
	stream, holder := d.stream, d.pid
	d.commit(recs, func(err error) {
		if err != nil {
			if marked {
				c.Unmark()
			}
			m.respond(txReply{stream: stream, err: err})
			return
		}
		if marked {
			c.Commit(holder)
		}
		m.respond(txReply{stream: stream})
	})
}

// apply applies one record: idempotency keys to the key table, everything else to the state.
func (d *durable[S]) apply(r supplyplan.Record) error {
	if r.Kind == supplyplan.KindIdempotency {
		err := d.idem.apply(r)
		d.idem.prune(d.clock())
		return err
	}
	return d.state.Apply(r)
}

// applyAll applies recs and counts the entry under the write lock (readers see all of it or none).
// A record that fails leaves the state marked not loaded until the reload that follows.
func (d *durable[S]) applyAll(recs []supplyplan.Record) (err error) {
	d.mu.Lock()
	applied := false
	defer func() {
		if !applied { // an error or a panic: no reader sees the half-applied state
			d.loaded = false
		}
		d.mu.Unlock()
	}()
	for _, r := range recs {
		if err := d.apply(r); err != nil {
			return fmt.Errorf("apply %s record: %w", r.Kind, err)
		}
	}
	if d.afterApply != nil {
		d.afterApply(d.state)
	}
	d.seq++
	applied = true
	return nil
}

// isLoaded reports whether the actor holds its loaded state.
func (d *durable[S]) isLoaded() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.loaded
}

// read runs fn against the state on the caller's goroutine, under the read lock, when the state is
// loaded and every write applied to it is durable, and reports whether it did; otherwise (loading,
// or a write still waiting for its fsync: a read must not see it) the caller asks the actor. fn
// must not change the state nor keep references into its maps.
func (d *durable[S]) read(fn func(S)) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if !d.loaded || d.durableSeq.Load() < d.seq {
		return false
	}
	fn(d.state)
	return true
}

// commit applies recs, journals them as one entry and calls done once the entry is durable (nil)
// or failed. done runs on the journal's goroutine: it must only send.
func (d *durable[S]) commit(recs []supplyplan.Record, done func(error)) {
	payload, err := supplyplan.EncodeRecords(recs)
	if err != nil {
		done(fmt.Errorf("encode records: %w", err))
		return
	}
	if err := d.applyAll(recs); err != nil {
		// A half-applied write: rebuild from the journal, which does not have it.
		done(err)
		d.startLoad()
		return
	}
	seq := d.seq
	stream, engine, pid := d.stream, d.engine, d.pid
	d.journal.Append(stream, seq, payload, func(jerr error) {
		if jerr != nil {
			d.failedAppends.Add(1)
			done(supplyplan.Errorf(supplyplan.EUNAVAILABLE, "Write could not be made durable"))
			engine.Send(pid, reloadMsg{})
			return
		}
		d.durableSeq.Store(seq)
		done(nil)
		supplyplan.RecycleEntry(payload) // the journal no longer reads it (Journal.Append)
	})
	d.sinceSnap++
	d.bytesSince += len(payload)
	// A snapshot encodes the whole state: waiting until the journal since the last one holds
	// snapshotRatio times as many bytes as it did keeps its cost per write constant (at most
	// 1/snapshotRatio byte of snapshot per byte journaled) however large the state grows, and
	// bounds replay to snapshotRatio snapshots' worth.
	if d.snapEvery > 0 && d.sinceSnap >= d.snapEvery && d.bytesSince >= snapshotRatio*d.lastSnap && !d.snapping {
		d.snapshot(false)
	}
}

// snapshot captures the state now and saves it on another goroutine (or inline when sync). With
// viewSnapshots the encoding runs on that goroutine too, from a copy of the state's maps.
//
// The state captured may hold entries still waiting for their fsync: the snapshot is saved only
// once they are durable, and not at all when one of them failed (entriesSettled). A snapshot saved
// first held a write the journal then failed (its client told 503): the reload that follows a
// failed append loaded it from the snapshot, and the stream's next seq no longer matched the
// journal's, so every later write was refused and reloaded again until a restart.
func (d *durable[S]) snapshot(sync bool) {
	settled := d.entriesSettled()
	if d.viewSnapshots {
		if view, ok := snapshotView(d.state); ok {
			d.idem.prune(d.clock())
			entries := d.idem.entries()
			seq, hint := d.seq, d.lastSnap+d.bytesSince // the last snapshot and what was journaled since
			d.sinceSnap, d.bytesSince = 0, 0
			stream, j := d.stream, d.journal
			save := func() (int, error) {
				if err := settled(); err != nil {
					return 0, err
				}
				if st, ok := j.(supplyplan.SnapshotStreamer); ok {
					if snapshotEncodable(view) {
						size, err := st.SaveSnapshotStream(stream, seq, func(w *bufio.Writer) error {
							_, err := writeSnapshot(w, view, entries)
							return err
						})
						return max(size, 1), err
					}
				}
				data, ok, err := encodeSnapshot(view, entries, hint)
				if !ok {
					if data, err = json.Marshal(view); err == nil {
						data, err = withIdempotency(data, entries)
					}
				}
				if err != nil {
					return 0, err
				}
				return max(len(data), 1), j.SaveSnapshot(stream, seq, data)
			}
			if sync {
				// The final snapshot of a drain, in the actor: the same encoding as the periodic ones
				// (json.Marshal of the state sorts every map's keys and reflects on every value: 16 s
				// for 2 million inventory levels).
				size, err := save()
				if size > 0 {
					d.lastSnap = size
				}
				if err != nil {
					d.snapshotFailed(err)
				}
				return
			}
			d.snapping = true
			engine, pid := d.engine, d.pid
			go func() {
				size, err := save()
				engine.Send(pid, snapshotDoneMsg{err: err, size: size})
			}()
			return
		}
	}
	data, err := supplyplan.MarshalSnapshot(d.state, d.lastSnap+d.bytesSince/snapshotRatio+4096)
	if err == nil {
		d.idem.prune(d.clock())
		data, err = withIdempotency(data, d.idem.entries())
	}
	if err != nil {
		d.log.Error("snapshot encode failed", "stream", d.stream, "err", err)
		return
	}
	seq := d.seq
	d.sinceSnap, d.bytesSince, d.lastSnap = 0, 0, len(data)
	if sync {
		err := settled()
		if err == nil {
			err = d.journal.SaveSnapshot(d.stream, seq, data)
		}
		if err != nil {
			d.snapshotFailed(err)
		}
		return
	}
	d.snapping = true
	engine, pid, stream, j := d.engine, d.pid, d.stream, d.journal
	go func() {
		err := settled()
		if err == nil {
			err = j.SaveSnapshot(stream, seq, data)
		}
		engine.Send(pid, snapshotDoneMsg{err: err})
	}()
}

// errSnapshotUnsettled: an entry the snapshot holds was not made durable; it is not saved.
var errSnapshotUnsettled = errors.New("an entry it holds failed to be made durable; the reload that follows rebuilds the state without it")

// entriesSettled is called in the actor when a snapshot captures the state; the function it
// returns waits (off the actor, or in it for a drain's final snapshot: the committer never waits
// for the actor) until every entry appended before is durable, and fails when an append of the
// stream failed since the state's load started: before the capture too, since the failed entry
// stays in the state until the reload the failure asked for has run.
func (d *durable[S]) entriesSettled() func() error {
	base := d.failuresAtLoad
	if d.failedAppends.Load() != base {
		return func() error { return errSnapshotUnsettled }
	}
	if d.durableSeq.Load() >= d.seq {
		return func() error { return nil } // nothing in flight
	}
	stream, j := d.stream, d.journal
	return func() error {
		ch := make(chan error, 1)
		j.Barrier(stream, func(err error) { ch <- err })
		if err := <-ch; err != nil {
			return fmt.Errorf("wait for the entries it holds: %w", err)
		}
		if d.failedAppends.Load() != base {
			return errSnapshotUnsettled
		}
		return nil
	}
}

// drain answers once every earlier write is durable, taking a final snapshot on the way.
func (d *durable[S]) drain(m drainMsg) {
	if m.retire != nil {
		d.retired = m.retire
	}
	if d.snapping {
		// The snapshot in flight covers less than the state: wait for it, then take the final one.
		d.drains = append(d.drains, m)
		return
	}
	if d.sinceSnap > 0 && (d.lastSnap < finalSnapshotFloor || d.bytesSince >= snapshotRatio*d.lastSnap) {
		start := time.Now()
		d.snapshot(true)
		if took := time.Since(start); took > time.Second {
			d.log.Info("final snapshot", "stream", d.stream, "bytes", d.lastSnap, "took", took)
		}
	} else if d.sinceSnap > 0 {
		d.log.Debug("final snapshot skipped", "stream", d.stream, "lastSnapshotBytes", d.lastSnap, "journaledSince", d.bytesSince)
	}
	d.journal.Barrier(d.stream, func(error) { close(m.done) })
}

// ask sends fn to the actor at pid and waits for its reply or ctx's end. m is the core, or
// bareEngine{e} for an actor spawned alone (tests).
func ask[S State, T any](ctx context.Context, m mailer, pid *actor.PID, fn func(S) (T, []supplyplan.Record, error)) (T, error) {
	return askQueued(ctx, m, pid, nil, fn)
}

// askQueued is ask counting the transaction in queued while it waits in the actor's mailbox.
func askQueued[S State, T any](ctx context.Context, m mailer, pid *actor.PID, queued *atomic.Int64, fn func(S) (T, []supplyplan.Record, error)) (T, error) {
	return sendQueued(ctx, m, pid, queued, fn)()
}

// sendQueued sends fn to the actor at pid and returns at once; wait waits for its reply or ctx's
// end, or answers the refusal when the actor stopped without taking it (mailbox.go).
// Transactions sent one after the other from one goroutine run in that order.
func sendQueued[S State, T any](ctx context.Context, m mailer, pid *actor.PID, queued *atomic.Int64, fn func(S) (T, []supplyplan.Record, error)) (wait func() (T, error)) {
	return sendTx(ctx, m, pid, queued, false, fn)
}

// sendTx is sendQueued; dirty marks a read answered without waiting for writes in flight (txMsg).
func sendTx[S State, T any](ctx context.Context, m mailer, pid *actor.PID, queued *atomic.Int64, dirty bool, fn func(S) (T, []supplyplan.Record, error)) (wait func() (T, error)) {
	c := &txCall[S, T]{fn: fn, ctx: ctx, m: m, queued: queued, reply: make(chan txReply, 1)}
	c.claim = supplyplan.IdempotencyOf(ctx)
	if c.claim != nil {
		c.claim.TxStarted()
	}
	if queued != nil {
		queued.Add(1)
	}
	c.mb = m.mailbox(pid)
	var taken *atomic.Bool
	if c.mb != nil {
		taken = &c.taken
	}
	c.msg = txMsg[S]{reply: c.reply, claim: c.claim, queued: queued, dirty: dirty, taken: taken, fn: c}
	m.send(pid, &c.msg)
	return c.wait
}

// txCall is one transaction sent by sendTx, in one allocation: the actor writes fn's value into v
// before it replies (the reply then carries no value, which boxed into an interface was a copy of
// the value on the heap), and the caller reads it after the reply.
type txCall[S State, T any] struct {
	msg    txMsg[S] // what is sent to the actor
	fn     func(S) (T, []supplyplan.Record, error)
	v      T
	taken  atomic.Bool
	reply  chan txReply
	ctx    context.Context
	m      mailer
	mb     *mailbox
	queued *atomic.Int64
	claim  *supplyplan.IdempotencyClaim
}

func (c *txCall[S, T]) run(s S) ([]supplyplan.Record, error) {
	v, recs, err := c.fn(s)
	c.v = v
	return recs, err
}

// wait waits for the transaction's reply or its context's end, or answers the refusal when the
// actor stopped without taking it (mailbox.go).
func (c *txCall[S, T]) wait() (T, error) {
	var zero T
	taken := &c.taken
	if c.mb == nil {
		taken = nil
	}
	r, stopped, ended := awaitCtx(c.ctx, c.mb, c.reply, taken)
	switch {
	case stopped: // never taken, never run: no outcome to wait for
		if c.queued != nil {
			c.queued.Add(-1)
		}
		if c.claim != nil {
			c.claim.TxDone()
		}
		return zero, c.m.refusal(c.mb.stream)
	case ended:
		if c.claim != nil {
			c.claim.Abandon() // the transaction may still commit: its outcome is not this answer
		}
		return zero, endedErr(c.ctx)
	}
	if r.err != nil {
		return zero, r.err
	}
	return c.v, nil
}

// snapshotFailed logs a snapshot that was not saved: at WARN when a newer owner fenced the
// partition (a node that lost it while paused; the new owner snapshots the state from now on, so
// nothing needs an operator), at ERROR otherwise.
func (d *durable[S]) snapshotFailed(err error) {
	if errors.Is(err, errSnapshotUnsettled) {
		d.log.Warn("snapshot not saved", "stream", d.stream, "err", err)
		return
	}
	if errors.Is(err, supplyplan.ErrFenced) {
		d.log.Warn("snapshot not saved: a newer owner took the partition", "stream", d.stream, "err", err)
		return
	}
	d.log.Error("snapshot failed", "stream", d.stream, "err", err)
}
