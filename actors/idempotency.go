package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
)

// Idempotency keys live in the durable actor whose journal holds the request's first write: the
// marker is journaled with that write (durable.run), the response is added by FinishIdempotent.
// Each durable actor keeps the keys of its stream in an idemTable, journaled as records of kind
// supplyplan.KindIdempotency and kept in its snapshots under "$idempotency"; keys older than
// supplyplan.IdempotencyTTL are dropped. The Idempotency service keeps the keys of running requests in memory
// (one process owns a tenant's actors).

// idemTable is the Idempotency-Keys of one stream, oldest first for expiry.
type idemTable struct {
	byID  map[string]*supplyplan.IdempotencyEntry
	order []idemAge // by At; an id may appear again after its key expired and came back
	head  int
}

type idemAge struct {
	id string
	at time.Time
}

func newIdemTable() *idemTable { return &idemTable{byID: map[string]*supplyplan.IdempotencyEntry{}} }

func (t *idemTable) len() int { return len(t.byID) }

func (t *idemTable) apply(r supplyplan.Record) error {
	if r.Del {
		delete(t.byID, r.ID)
		return nil
	}
	e, ok := r.Value.(*supplyplan.IdempotencyEntry)
	if !ok {
		return fmt.Errorf("idempotency record %s has value %T", r.ID, r.Value)
	}
	t.put(r.ID, e)
	return nil
}

func (t *idemTable) put(id string, e *supplyplan.IdempotencyEntry) {
	if old, ok := t.byID[id]; !ok || !old.At.Equal(e.At) {
		t.order = append(t.order, idemAge{id: id, at: e.At})
	}
	t.byID[id] = e
}

// get returns the live entry of (scope, key), nil when there is none or it expired.
func (t *idemTable) get(scope, key string, now time.Time) *supplyplan.IdempotencyEntry {
	e, ok := t.byID[supplyplan.IdempotencyID(scope, key)]
	if !ok || e.Expired(now) {
		return nil
	}
	return e
}

// prune drops the entries that expired at now: memory holds the keys of the last TTL only.
func (t *idemTable) prune(now time.Time) {
	for t.head < len(t.order) {
		a := t.order[t.head]
		if now.Before(a.at.Add(supplyplan.IdempotencyTTL)) {
			break
		}
		if e, ok := t.byID[a.id]; ok && e.At.Equal(a.at) {
			delete(t.byID, a.id)
		}
		t.order[t.head] = idemAge{}
		t.head++
	}
	if t.head > 64 && t.head*2 > len(t.order) {
		t.order = append([]idemAge(nil), t.order[t.head:]...)
		t.head = 0
	}
}

// entries returns the live entries, oldest first.
func (t *idemTable) entries() []*supplyplan.IdempotencyEntry {
	out := make([]*supplyplan.IdempotencyEntry, 0, len(t.byID))
	for _, a := range t.order[t.head:] {
		if e, ok := t.byID[a.id]; ok && e.At.Equal(a.at) {
			out = append(out, e)
		}
	}
	return out
}

func (t *idemTable) restore(entries []*supplyplan.IdempotencyEntry) {
	for _, e := range entries {
		t.put(supplyplan.IdempotencyID(e.Scope, e.Key), e)
	}
}

// snapshotKey is the member of a snapshot that holds the stream's idempotency keys. It comes
// first, so that loading reads it without scanning the state, and the state types ignore it.
const snapshotKey = `{"$idempotency":`

// withIdempotency adds entries to the snapshot of a state (a JSON object).
func withIdempotency(state []byte, entries []*supplyplan.IdempotencyEntry) ([]byte, error) {
	if len(entries) == 0 {
		return state, nil
	}
	state = bytes.TrimSpace(state)
	if len(state) < 2 || state[0] != '{' {
		return nil, fmt.Errorf("snapshot of %q is not a JSON object", state[:min(len(state), 16)])
	}
	ej, err := json.Marshal(entries)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(snapshotKey)+len(ej)+len(state)+1)
	out = append(out, snapshotKey...)
	out = append(out, ej...)
	if rest := bytes.TrimSpace(state[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, state[1:]...), nil
}

// snapshotIdempotency reads the entries withIdempotency added (none in older snapshots).
func snapshotIdempotency(data []byte) ([]*supplyplan.IdempotencyEntry, error) {
	if !bytes.HasPrefix(data, []byte(snapshotKey)) {
		return nil, nil
	}
	var entries []*supplyplan.IdempotencyEntry
	err := json.NewDecoder(bytes.NewReader(data[len(snapshotKey):])).Decode(&entries)
	return entries, err
}

// idemLookupMsg asks a durable actor for the entry of a key.
type idemLookupMsg struct {
	scope, key string
	reply      chan idemLookupReply
}

type idemLookupReply struct {
	entry *supplyplan.IdempotencyEntry
	err   error
}

// idemStoreMsg asks the durable actor holding a key's marker to journal the request's response.
type idemStoreMsg struct {
	scope, key string
	resp       supplyplan.IdempotentResponse
	reply      chan error
}

func (d *durable[S]) lookupIdempotency(m idemLookupMsg) {
	e := d.idem.get(m.scope, m.key, d.clock())
	if e != nil {
		c := *e
		e = &c
	}
	m.reply <- idemLookupReply{entry: e}
}

func (d *durable[S]) storeIdempotency(m idemStoreMsg) {
	e := d.idem.get(m.scope, m.key, d.clock())
	if e == nil {
		m.reply <- nil // expired meanwhile: nothing to complete
		return
	}
	resp := m.resp
	done := *e
	done.Response = &resp
	d.commit([]supplyplan.Record{supplyplan.Put(supplyplan.KindIdempotency, supplyplan.IdempotencyID(m.scope, m.key), &done)},
		func(err error) { m.reply <- err })
}

// idemSettleMax bounds how long a finished request's key waits for the writes it started.
const idemSettleMax = 10 * time.Minute

// Idempotency is the service behind the Idempotency-Key header: it claims a key for a running
// request, finds the key's stored outcome in the streams the request's scope writes to, and stores
// the outcome in the stream that journaled the request's first write (with the key's marker).
type Idempotency struct {
	core    *Core
	mu      sync.Mutex
	running map[string]*supplyplan.IdempotencyClaim // the keys of running requests
}

// NewIdempotency returns the idempotency service.
func NewIdempotency(core *Core) *Idempotency {
	return &Idempotency{core: core, running: map[string]*supplyplan.IdempotencyClaim{}}
}

var _ supplyplan.IdempotencyService = (*Idempotency)(nil)

// BeginIdempotent claims (scope, key) for a request: 409 while another request holds it; the
// stored response (or 422 or 410) when a request with it was applied in the last 24 hours.
func (s *Idempotency) BeginIdempotent(ctx context.Context, scope, key, fingerprint string) (*supplyplan.IdempotencyClaim, *supplyplan.IdempotentResponse, error) {
	id := supplyplan.IdempotencyID(scope, key)
	s.mu.Lock()
	if _, busy := s.running[id]; busy {
		s.mu.Unlock()
		return nil, nil, supplyplan.ErrIdempotencyInFlight()
	}
	c := supplyplan.NewIdempotencyClaim(scope, key, fingerprint)
	s.running[id] = c
	s.mu.Unlock()
	e, err := s.lookupIdempotency(ctx, scope, key)
	if err != nil || e != nil {
		s.release(c)
	}
	switch {
	case err != nil:
		return nil, nil, err
	case e != nil:
		resp, err := e.Outcome(fingerprint)
		return nil, resp, err
	}
	return c, nil, nil
}

// FinishIdempotent stores resp as the outcome of c's request, once every write it started has its
// outcome, in the stream that holds the marker; then releases the key. A request that wrote
// nothing stores nothing (its retry runs again, which is safe). When a write outlived the request's
// wait (its timeout), resp is not its outcome: the marker alone stays, and the key answers 410.
func (s *Idempotency) FinishIdempotent(c *supplyplan.IdempotencyClaim, resp supplyplan.IdempotentResponse) <-chan struct{} {
	released := make(chan struct{})
	go func() {
		defer close(released)
		defer s.release(c)
		holder, committed, abandoned := c.Settle(idemSettleMax)
		pid, ok := holder.(*actor.PID)
		if !committed || abandoned || !ok {
			return
		}
		reply := make(chan error, 1)
		s.core.engine.Send(pid, idemStoreMsg{scope: c.Scope, key: c.Key, resp: resp, reply: reply})
		select {
		case err := <-reply:
			if err != nil {
				s.core.log.Warn("idempotency: response not stored; the key will answer 410", "scope", c.Scope, "err", err)
			}
		case <-time.After(idemSettleMax):
			s.core.log.Warn("idempotency: no answer storing a response", "scope", c.Scope)
		}
	}()
	return released
}

func (s *Idempotency) release(c *supplyplan.IdempotencyClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := supplyplan.IdempotencyID(c.Scope, c.Key)
	if s.running[id] == c {
		delete(s.running, id)
	}
}

// lookupIdempotency asks every stream a request of scope writes to for the key's entry: the
// tenant's (or the platform's) own stream and its outbound stream.
func (s *Idempotency) lookupIdempotency(ctx context.Context, scope, key string) (*supplyplan.IdempotencyEntry, error) {
	var pids []*actor.PID
	if scope == supplyplan.IdempotencyPlatformScope {
		pid, err := s.core.platform()
		if err != nil {
			return nil, err
		}
		pids = append(pids, pid)
		if pid, err := s.core.outbound(supplyplan.PlatformOwner); err == nil {
			pids = append(pids, pid)
		}
	} else {
		pid, err := s.core.tenant(scope)
		if err != nil {
			return nil, err
		}
		pids = append(pids, pid)
		if pid, err := s.core.outbound(scope); err == nil {
			pids = append(pids, pid)
		}
	}
	replies := make([]chan idemLookupReply, len(pids))
	for i, pid := range pids {
		replies[i] = make(chan idemLookupReply, 1)
		s.core.engine.Send(pid, idemLookupMsg{scope: scope, key: key, reply: replies[i]})
	}
	var found *supplyplan.IdempotencyEntry
	for i, ch := range replies {
		// A lookup is answered when taken: one the actor never took when it stopped is refused.
		mb := s.core.mailbox(pids[i])
		r, stopped, ended := awaitCtx(ctx, mb, ch, nil)
		switch {
		case stopped:
			return nil, s.core.refusal(mb.stream)
		case ended:
			return nil, endedErr(ctx)
		}
		if r.err != nil {
			return nil, r.err
		}
		if r.entry != nil {
			found = r.entry
		}
	}
	return found, nil
}
