package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/wait"
)

// memJournal is an in-memory supplyplan.Journal whose completions a test can hold back, fail, or
// let through.
type memJournal struct {
	mu       sync.Mutex
	streams  map[string]*memStream
	hold     bool                                     // completions wait for release
	held     []func()                                 // in order
	failNext int                                      // appends to fail
	failIf   func(stream string, payload []byte) bool // fails the appends it picks
	failLate time.Duration                            // a failure is reported this much later
	next     map[string]uint64                        // per stream, the seq the next append must have (as streams.Journal)
	loadErr  error
	loads    int
}

type memStream struct {
	snapSeq uint64
	snap    []byte
	seqs    []uint64
	entries [][]byte
}

func newMemJournal() *memJournal { return &memJournal{streams: map[string]*memStream{}} }

func (j *memJournal) stream(name string) *memStream {
	s := j.streams[name]
	if s == nil {
		s = &memStream{}
		j.streams[name] = s
	}
	return s
}

// complete runs done now, or later when completions are held (j.mu held).
func (j *memJournal) complete(done func(error), err error) {
	if j.hold {
		j.held = append(j.held, func() { done(err) })
		return
	}
	done(err)
}

func (j *memJournal) Append(stream string, seq uint64, payload []byte, done func(error)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if want, ok := j.next[stream]; ok && seq != want {
		j.complete(done, fmt.Errorf("entry %d out of sequence (%d expected)", seq, want))
		return
	}
	if j.next == nil {
		j.next = map[string]uint64{}
	}
	if j.failNext > 0 || (j.failIf != nil && j.failIf(stream, payload)) {
		j.failNext = max(0, j.failNext-1)
		j.next[stream] = seq // entries after a failed one fail until it is written again
		if j.failLate > 0 {
			time.AfterFunc(j.failLate, func() { done(errors.New("disk on fire")) })
			return
		}
		j.complete(done, errors.New("disk on fire"))
		return
	}
	j.next[stream] = seq + 1
	s := j.stream(stream)
	s.seqs = append(s.seqs, seq)
	s.entries = append(s.entries, append([]byte(nil), payload...))
	j.complete(done, nil)
}

func (j *memJournal) Barrier(_ string, done func(error)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.complete(done, nil)
}

func (j *memJournal) Load(stream string, onSnapshot func(uint64, []byte) error, onEntry func(uint64, []byte) error) (supplyplan.JournalLoad, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.loads++
	var res supplyplan.JournalLoad
	if j.loadErr != nil {
		return res, j.loadErr
	}
	s := j.stream(stream)
	if s.snap != nil {
		if err := onSnapshot(s.snapSeq, s.snap); err != nil {
			return res, err
		}
	}
	res.SnapshotSeq, res.LastSeq = s.snapSeq, s.snapSeq
	for i, seq := range s.seqs {
		if seq <= s.snapSeq {
			continue
		}
		if err := onEntry(seq, s.entries[i]); err != nil {
			return res, err
		}
		res.LastSeq = seq
		res.Entries++
	}
	return res, nil
}

func (j *memJournal) SaveSnapshot(stream string, seq uint64, data []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := j.stream(stream)
	s.snapSeq, s.snap = seq, append([]byte(nil), data...)
	return nil
}

// snapSeq returns the entry the stream's snapshot was saved after (0: none).
func (j *memJournal) snapSeq(stream string) uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stream(stream).snapSeq
}

// waitNoteGone waits until the actor's state no longer holds note id (a failed write, once the
// reload after it has run).
func waitNoteGone(t *testing.T, ctx context.Context, e *actor.Engine, pid *actor.PID, id string) {
	t.Helper()
	wait.Eventually(t, 5*time.Second, func() error {
		m, err := ask(ctx, bareEngine{e}, pid, readNotes)
		if err != nil {
			return err
		}
		if _, ok := m[id]; ok {
			return fmt.Errorf("the failed write %q is still in memory", id)
		}
		return nil
	})
}

// release lets the held completions through, in order, and stops holding.
func (j *memJournal) release() {
	j.mu.Lock()
	held := j.held
	j.held, j.hold = nil, false
	j.mu.Unlock()
	for _, fn := range held {
		fn()
	}
}

func (j *memJournal) set(fn func(j *memJournal)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	fn(j)
}

func (j *memJournal) loadCount() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.loads
}

// notes is a minimal State: notes by id. A note "bad" is refused by Apply.
type notes struct {
	Items map[string]string `json:"items"`
}

type note struct {
	Text string `json:"text"`
}

const kindNote = "test.note"

func init() { supplyplan.RegisterKind(kindNote, func() any { return new(note) }) }

func newNotes() *notes { return &notes{Items: map[string]string{}} }

func (n *notes) Apply(r supplyplan.Record) error {
	if r.Kind != kindNote {
		return fmt.Errorf("unknown kind %q", r.Kind)
	}
	if r.Del {
		delete(n.Items, r.ID)
		return nil
	}
	v, ok := r.Value.(*note)
	if !ok {
		return fmt.Errorf("note %s holds %T", r.ID, r.Value)
	}
	if v.Text == "bad" {
		return errors.New("a bad note")
	}
	n.Items[r.ID] = v.Text
	return nil
}

// startNotes spawns a durable notes actor on j and returns a function running a transaction in it.
func startNotes(t *testing.T, j supplyplan.Journal, snapEvery int) (*actor.Engine, *actor.PID) {
	t.Helper()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	pid := e.Spawn(func() actor.Receiver {
		return &durable[*notes]{stream: "notes", journal: j, newState: newNotes, snapEvery: snapEvery,
			log: discardLogger()}
	}, "notes", actor.WithMaxRestarts(1<<30))
	t.Cleanup(func() { <-e.Poison(pid).Done() })
	return e, pid
}

func putNote(id, text string) func(*notes) (struct{}, []supplyplan.Record, error) {
	return func(*notes) (struct{}, []supplyplan.Record, error) {
		return struct{}{}, []supplyplan.Record{supplyplan.Put(kindNote, id, &note{Text: text})}, nil
	}
}

func readNotes(st *notes) (map[string]string, []supplyplan.Record, error) {
	out := make(map[string]string, len(st.Items))
	for k, v := range st.Items {
		out[k] = v
	}
	return out, nil, nil
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// A write is answered once durable, and a read never sees a write that is not durable yet: it is
// answered after the journal's barrier.
func TestDurableReadWaitsForTheWriteToBeDurable(t *testing.T) {
	j := newMemJournal()
	e, pid := startNotes(t, j, 0)
	if _, err := ask(ctxFor(t, 5*time.Second), bareEngine{e}, pid, putNote("a", "first")); err != nil {
		t.Fatal(err)
	}
	j.set(func(j *memJournal) { j.hold = true })
	wrote := make(chan error, 1)
	go func() {
		_, err := ask(context.Background(), bareEngine{e}, pid, putNote("b", "second"))
		wrote <- err
	}()
	read := make(chan map[string]string, 1)
	wait.Eventually(t, 5*time.Second, func() error { // the write was appended (not durable)
		j.mu.Lock()
		defer j.mu.Unlock()
		if len(j.held) == 0 {
			return errors.New("no append yet")
		}
		return nil
	})
	go func() {
		m, _ := ask(context.Background(), bareEngine{e}, pid, readNotes)
		read <- m
	}()
	wait.Eventually(t, 5*time.Second, func() error { // the read asked for its barrier
		j.mu.Lock()
		defer j.mu.Unlock()
		if len(j.held) < 2 {
			return errors.New("no barrier yet")
		}
		return nil
	})
	select {
	case <-wrote:
		t.Fatal("the write was answered before it was durable")
	case <-read:
		t.Fatal("the read was answered before the write it sees was durable")
	default:
	}
	j.release()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if m := <-read; m["b"] != "second" {
		t.Fatalf("read %v after the barrier, want the write", m)
	}
}

// ask gives up when its context ends (503 "timed out"); the transaction still runs, and the
// actor goes on serving.
func TestAskTimesOutWhileTheActorGoesOn(t *testing.T) {
	e, pid := startNotes(t, newMemJournal(), 0)
	gate := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := ask(ctx, bareEngine{e}, pid, func(st *notes) (struct{}, []supplyplan.Record, error) {
		<-gate
		return putNote("late", "written after the timeout")(st)
	})
	if supplyplan.ErrorCode(err) != supplyplan.EUNAVAILABLE || supplyplan.ErrorMessage(err) != "The request timed out" {
		t.Fatalf("err = %v, want EUNAVAILABLE timed out", err)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if _, err := ask(cancelled, bareEngine{e}, pid, readNotes); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled ask = %v, want context.Canceled", err)
	}
	close(gate)
	m, err := ask(ctxFor(t, 5*time.Second), bareEngine{e}, pid, readNotes)
	if err != nil || m["late"] == "" {
		t.Fatalf("after the timeout: %v, %v; want the late write applied", m, err)
	}
}

// deadlineOnlyCtx ends only at its deadline (as the http package's request context, seen from its
// handler) and records whether anything asked for its Done channel.
type deadlineOnlyCtx struct {
	context.Context
	doneAsked *atomic.Bool
}

func (c deadlineOnlyCtx) EndsOnlyAtDeadline() bool { return true }

func (c deadlineOnlyCtx) Done() <-chan struct{} {
	c.doneAsked.Store(true)
	return c.Context.Done()
}

// A wait under a context that ends only at its deadline runs on a pooled timer (awaitCtx), never
// on the context's Done: answers come as before, one timer serves many waits, and the deadline
// still ends a wait the actor does not answer in time.
func TestAskOnADeadlineOnlyContext(t *testing.T) {
	e, pid := startNotes(t, newMemJournal(), 0)
	var asked atomic.Bool
	long, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 200 {
		if _, err := ask(deadlineOnlyCtx{long, &asked}, bareEngine{e}, pid, putNote(fmt.Sprint("n", i), "x")); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	gate := make(chan struct{})
	var opened sync.Once
	open := func() { opened.Do(func() { close(gate) }) }
	t.Cleanup(open) // before the actor's stop (cleanups run last first)
	start := time.Now()
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	_, err := ask(deadlineOnlyCtx{short, &asked}, bareEngine{e}, pid, func(st *notes) (struct{}, []supplyplan.Record, error) {
		<-gate
		return putNote("late", "written after the timeout")(st)
	})
	if supplyplan.ErrorMessage(err) != "The request timed out" || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("err = %v after %v, want timed out at the deadline", err, time.Since(start))
	}
	open()
	m, err := ask(deadlineOnlyCtx{long, &asked}, bareEngine{e}, pid, readNotes)
	if err != nil || len(m) != 201 {
		t.Fatalf("after the timeout: %d notes, %v; want 201", len(m), err)
	}
	if asked.Load() {
		t.Fatal("a wait asked the deadline-only context for its Done channel")
	}
}

// A transaction whose records do not apply is answered with the error, and the actor reloads from
// the journal: the records applied before the failing one are gone from memory, as from disk.
func TestDurableReloadsAfterAFailedApply(t *testing.T) {
	j := newMemJournal()
	e, pid := startNotes(t, j, 0)
	ctx := ctxFor(t, 5*time.Second)
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("a", "kept")); err != nil {
		t.Fatal(err)
	}
	loads := j.loadCount()
	_, err := ask(ctx, bareEngine{e}, pid, func(*notes) (struct{}, []supplyplan.Record, error) {
		return struct{}{}, []supplyplan.Record{supplyplan.Put(kindNote, "half", &note{Text: "applied first"}),
			supplyplan.Put(kindNote, "x", &note{Text: "bad"})}, nil
	})
	if err == nil {
		t.Fatal("a write that does not apply succeeded")
	}
	m, err := ask(ctx, bareEngine{e}, pid, readNotes)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["half"]; ok || m["a"] != "kept" || len(m) != 1 {
		t.Fatalf("state after the failed apply = %v, want only a", m)
	}
	if j.loadCount() != loads+1 {
		t.Fatalf("%d loads, want one reload", j.loadCount()-loads)
	}
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("b", "after")); err != nil {
		t.Fatalf("a write after the reload: %v", err)
	}
}

// A write the journal fails is answered 503 and the state reloads without it.
func TestDurableReloadsAfterAFailedAppend(t *testing.T) {
	j := newMemJournal()
	e, pid := startNotes(t, j, 0)
	ctx := ctxFor(t, 5*time.Second)
	j.set(func(j *memJournal) { j.failNext = 1 })
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("lost", "x")); supplyplan.ErrorCode(err) != supplyplan.EUNAVAILABLE {
		t.Fatalf("err = %v, want EUNAVAILABLE", err)
	}
	waitNoteGone(t, ctx, e, pid, "lost")
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("next", "y")); err != nil {
		t.Fatal(err)
	}
}

// A snapshot taken while its newest entry waits for the journal is saved only once that entry is
// durable, and not at all when the journal fails it: saved at once, it held the failed write, the
// reload after the failure loaded it back (a write answered 503 was kept), and the stream's next
// seq no longer matched the journal's, so every later write failed too.
func TestDurableSnapshotWaitsForItsEntries(t *testing.T) {
	j := newMemJournal()
	e, pid := startNotes(t, j, 1) // a snapshot at every write the size policy allows
	ctx := ctxFor(t, 5*time.Second)
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("a", "kept")); err != nil {
		t.Fatal(err)
	}
	snapSeq := func() uint64 { return j.snapSeq("notes") }
	wait.Eventually(t, 5*time.Second, func() error {
		if snapSeq() != 1 {
			return errors.New("no snapshot of the first write yet")
		}
		return nil
	})
	j.set(func(j *memJournal) { j.hold, j.failNext = true, 1 })
	lost := make(chan error, 1)
	go func() {
		_, err := ask(ctx, bareEngine{e}, pid, putNote("lost", strings.Repeat("x", 1000))) // past the size policy
		lost <- err
	}()
	// The failed append's completion is held, and then either the snapshot was saved (the bug) or
	// its barrier waits behind that completion.
	wait.Eventually(t, 5*time.Second, func() error {
		j.mu.Lock()
		held := len(j.held)
		j.mu.Unlock()
		if held < 2 && snapSeq() != 2 {
			return fmt.Errorf("%d completions held, snapshot at %d", held, snapSeq())
		}
		return nil
	})
	j.release()
	if err := <-lost; supplyplan.ErrorCode(err) != supplyplan.EUNAVAILABLE {
		t.Fatalf("the failed write: %v, want EUNAVAILABLE", err)
	}
	if snapSeq() != 1 {
		t.Fatalf("a snapshot of entry %d was saved over a failed entry", snapSeq())
	}
	waitNoteGone(t, ctx, e, pid, "lost")
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("next", "y")); err != nil {
		t.Fatalf("a write after the failed one: %v", err)
	}
	m, err := ask(ctx, bareEngine{e}, pid, readNotes)
	if err != nil || len(m) != 2 || m["a"] != "kept" || m["next"] != "y" {
		t.Fatalf("state %v, %v; want a and next", m, err)
	}
}

// A snapshot captured after an append failed and before the reload it asked for has run (here the
// failure is reported inside the append, just before the same write's snapshot) holds the failed
// write: it is not saved either.
func TestDurableSnapshotAfterAFailedAppend(t *testing.T) {
	j := newMemJournal()
	e, pid := startNotes(t, j, 1)
	ctx := ctxFor(t, 5*time.Second)
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("a", "kept")); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 5*time.Second, func() error { // the first snapshot is saved and done
		if j.snapSeq("notes") != 1 {
			return errors.New("no snapshot of the first write yet")
		}
		return nil
	})
	if _, err := ask(ctx, bareEngine{e}, pid, readNotes); err != nil { // after its done message
		t.Fatal(err)
	}
	j.set(func(j *memJournal) { j.failNext = 1 })
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("lost", strings.Repeat("x", 1000))); supplyplan.ErrorCode(err) != supplyplan.EUNAVAILABLE {
		t.Fatalf("the failed write: %v, want EUNAVAILABLE", err)
	}
	waitNoteGone(t, ctx, e, pid, "lost")
	if snap := j.snapSeq("notes"); snap > 1 {
		t.Fatalf("a snapshot of entry %d was saved over the failed entry", snap)
	}
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("next", "y")); err != nil {
		t.Fatalf("a write after the failed one: %v", err)
	}
}

// A panic in a transaction answers 500 and reloads the state; the actor keeps serving.
func TestDurableRecoversFromAPanic(t *testing.T) {
	j := newMemJournal()
	e, pid := startNotes(t, j, 0)
	ctx := ctxFor(t, 5*time.Second)
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("a", "kept")); err != nil {
		t.Fatal(err)
	}
	_, err := ask(ctx, bareEngine{e}, pid, func(*notes) (struct{}, []supplyplan.Record, error) { panic("boom") })
	if supplyplan.ErrorCode(err) != supplyplan.EINTERNAL {
		t.Fatalf("err = %v, want EINTERNAL", err)
	}
	if m, err := ask(ctx, bareEngine{e}, pid, readNotes); err != nil || m["a"] != "kept" {
		t.Fatalf("after the panic: %v, %v", m, err)
	}
}

// A stream that cannot load answers every transaction 503, and never applies one.
func TestDurableUnavailableWhenTheLoadFails(t *testing.T) {
	j := newMemJournal()
	j.loadErr = errors.New("damaged segment")
	e, pid := startNotes(t, j, 0)
	if _, err := ask(ctxFor(t, 5*time.Second), bareEngine{e}, pid, putNote("a", "x")); supplyplan.ErrorCode(err) != supplyplan.EUNAVAILABLE {
		t.Fatalf("err = %v, want EUNAVAILABLE", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.stream("notes").entries) != 0 {
		t.Fatal("a write was journaled on a stream that did not load")
	}
}

// Snapshots replace the entries they cover: a new actor on the same journal rebuilds the same
// state from the snapshot and the entries after it, and drain takes a final snapshot.
func TestDurableSnapshotAndRebuild(t *testing.T) {
	j := newMemJournal()
	e, pid := startNotes(t, j, 3)
	ctx := ctxFor(t, 5*time.Second)
	for i := range 10 {
		if _, err := ask(ctx, bareEngine{e}, pid, putNote(fmt.Sprint(i), fmt.Sprint("note ", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ask(ctx, bareEngine{e}, pid, func(*notes) (struct{}, []supplyplan.Record, error) {
		return struct{}{}, []supplyplan.Record{supplyplan.Del(kindNote, "4")}, nil
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 5*time.Second, func() error {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.stream("notes").snap == nil {
			return errors.New("no snapshot after 11 writes with snapEvery 3")
		}
		return nil
	})
	done := make(chan struct{})
	e.Send(pid, drainMsg{done: done})
	<-done
	j.mu.Lock()
	if s := j.stream("notes"); s.snapSeq != 11 {
		t.Errorf("snapshot after the drain at %d, want 11", s.snapSeq)
	}
	j.mu.Unlock()

	e2, pid2 := startNotes(t, j, 3)
	m, err := ask(ctx, bareEngine{e2}, pid2, readNotes)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 9 || m["9"] != "note 9" || m["4"] != "" {
		t.Fatalf("rebuilt state %v", m)
	}
}

// A drain skips the final snapshot of a large state when the periodic policy is not due one (the
// next load replays the tail), and takes it when it is; a load starts from its snapshot's size.
func TestDurableDrainWeighsTheFinalSnapshot(t *testing.T) {
	j := newMemJournal()
	e, pid := startNotes(t, j, 1)
	ctx := ctxFor(t, 10*time.Second)
	big := strings.Repeat("x", finalSnapshotFloor+1)
	snapAt := func() uint64 {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.stream("notes").snapSeq
	}
	drain := func(e *actor.Engine, pid *actor.PID) {
		done := make(chan struct{})
		e.Send(pid, drainMsg{done: done})
		<-done
	}
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("big", big)); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 5*time.Second, func() error {
		if snapAt() != 1 {
			return errors.New("no snapshot of the first write")
		}
		return nil
	})
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("small", "a short tail")); err != nil {
		t.Fatal(err)
	}
	drain(e, pid)
	if s := snapAt(); s != 1 {
		t.Fatalf("a drain after a short tail snapshotted at %d, want the snapshot at 1 kept", s)
	}

	// Restarted with periodic snapshots far apart: a short tail is skipped again (the load took the
	// snapshot's size), a tail of twice the snapshot is not.
	e2, pid2 := startNotes(t, j, 1000)
	if _, err := ask(ctx, bareEngine{e2}, pid2, putNote("after", "restart")); err != nil {
		t.Fatal(err)
	}
	drain(e2, pid2)
	if s := snapAt(); s != 1 {
		t.Fatalf("a drain after the restart snapshotted at %d, want 1", s)
	}
	for i := range 3 {
		if _, err := ask(ctx, bareEngine{e2}, pid2, putNote(fmt.Sprint("big", i), big)); err != nil {
			t.Fatal(err)
		}
	}
	drain(e2, pid2)
	if s := snapAt(); s != 6 {
		t.Fatalf("a drain after a tail of three snapshots' size snapshotted at %d, want 6", s)
	}
	e3, pid3 := startNotes(t, j, 1000)
	m, err := ask(ctx, bareEngine{e3}, pid3, readNotes)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 6 || m["small"] != "a short tail" || m["after"] != "restart" || len(m["big"]) != len(big) || len(m["big2"]) != len(big) {
		t.Fatalf("rebuilt %d notes", len(m))
	}
}

// A read outside the actor (read) runs only against a loaded state whose every applied write is
// durable; otherwise it declines and the caller asks the actor, which waits for the write.
func TestDurableReadOutsideTheActor(t *testing.T) {
	j := newMemJournal()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	d := &durable[*notes]{stream: "notes", journal: j, newState: newNotes, log: discardLogger()}
	pid := e.Spawn(func() actor.Receiver { return d }, "notes", actor.WithMaxRestarts(1<<30))
	t.Cleanup(func() { <-e.Poison(pid).Done() })
	get := func(id string) (string, bool) {
		var v string
		ok := d.read(func(n *notes) { v = n.Items[id] })
		return v, ok
	}
	ctx := ctxFor(t, 5*time.Second)
	if _, err := ask(ctx, bareEngine{e}, pid, putNote("a", "first")); err != nil {
		t.Fatal(err)
	}
	if v, ok := get("a"); !ok || v != "first" {
		t.Fatalf("read = %q, %v; want the durable write", v, ok)
	}
	j.set(func(j *memJournal) { j.hold = true })
	wrote := make(chan error, 1)
	go func() {
		_, err := ask(context.Background(), bareEngine{e}, pid, putNote("a", "second"))
		wrote <- err
	}()
	wait.Eventually(t, 5*time.Second, func() error { // applied, appended, not durable
		j.mu.Lock()
		defer j.mu.Unlock()
		if len(j.held) == 0 {
			return errors.New("no append yet")
		}
		return nil
	})
	if v, ok := get("a"); ok {
		t.Fatalf("a read outside the actor saw %q while a write was not durable", v)
	}
	j.release()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if v, ok := get("a"); !ok || v != "second" {
		t.Fatalf("read = %q, %v after the write became durable", v, ok)
	}
}

// Reads outside the actor run while it writes (with -race: the write lock keeps them apart).
func TestDurableReadsWhileWriting(t *testing.T) {
	j := newMemJournal()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	d := &durable[*notes]{stream: "notes", journal: j, newState: newNotes, log: discardLogger(), snapEvery: 5}
	pid := e.Spawn(func() actor.Receiver { return d }, "notes", actor.WithMaxRestarts(1<<30))
	t.Cleanup(func() { <-e.Poison(pid).Done() })
	ctx := ctxFor(t, 20*time.Second)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if d.read(func(n *notes) { _ = len(n.Items); _ = n.Items["7"] }) {
				reads.Add(1)
			}
		}
	}()
	// At least 300 writes, and more until a read got in between two of them: 300 writes alone
	// took 10 ms and, in about one run in twenty, finished before the reader was first scheduled.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 300 || (reads.Load() == 0 && time.Now().Before(deadline)); i++ {
		if _, err := ask(ctx, bareEngine{e}, pid, putNote(fmt.Sprint(i%20), fmt.Sprint("note ", i))); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("no read ran outside the actor")
	}
}

// levels records the level of each log record.
type levels struct{ got []slog.Level }

func (l *levels) Enabled(context.Context, slog.Level) bool { return true }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	l.got = append(l.got, r.Level)
	return nil
}
func (l *levels) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levels) WithGroup(string) slog.Handler      { return l }

// A snapshot a newer owner fenced is the expected end of a zombie's work: a warning, not an
// error; any other failed snapshot is an error.
func TestSnapshotFencedIsAWarning(t *testing.T) {
	h := &levels{}
	d := &durable[*supplyplan.TenantState]{stream: "org", log: slog.New(h)}
	d.snapshotFailed(fmt.Errorf("partition 3 epoch 2: %w (producer fenced)", supplyplan.ErrFenced))
	d.snapshotFailed(errors.New("disk full"))
	if len(h.got) != 2 || h.got[0] != slog.LevelWarn || h.got[1] != slog.LevelError {
		t.Fatalf("levels %v, want WARN then ERROR", h.got)
	}
}
