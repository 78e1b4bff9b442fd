package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/backoff"
	"github.com/supplyplan/supplyplan/internal/fsutil"
	"github.com/supplyplan/supplyplan/internal/importjson"
)

// ImportConfig configures bulk import jobs.
type ImportConfig struct {
	// Dir holds the accepted request bodies until their job finishes (<data>/imports).
	Dir string
	// ChunkSize is the number of rows applied per tenant transaction (default 5000).
	ChunkSize int
	// DemandChunkSize is the chunk of demand-history imports, written to the demand store in one
	// batch (default 50000: ClickHouse wants large inserts).
	DemandChunkSize int
	// Workers bounds the jobs running at once across tenants (default 2); a tenant's jobs write in
	// submission order, one after another except where startNextLocked lets two overlap.
	Workers int
}

// maxRetainedBodies bounds the request bodies of queued import jobs kept in memory (split into rows);
// the bodies of jobs queued beyond it are read back from disk when they start. Only the job next in
// line of a tenant decodes its rows ahead.
const maxRetainedBodies = 64 << 20

// importManager queues and runs import jobs. Each running job is a hollywood actor ("import/<id>")
// whose work runs on its own goroutine and reports back to it.
type importManager struct {
	core      *Core
	cfg       ImportConfig
	demand    supplyplan.DemandStore
	forecasts *Forecasts                // demand-history writes invalidate forecasts (nil: none kept)
	alloc     *Allocation               // allocates the orders an orders import writes (nil: none)
	events    supplyplan.EventPublisher // import.* events (nil: dropped)

	mu       sync.Mutex
	queues   map[string][]queuedJob       // orgID -> jobs waiting, in submission order
	running  map[string][]*runningJob     // orgID -> jobs running, in submission order
	bodies   map[string][]byte            // jobID -> request body kept from submission (saves a re-read)
	split    map[string][]json.RawMessage // jobID -> its rows, split at submission (saves a re-parse)
	decoders map[string]*decoder          // jobID -> its rows being decoded ahead of the job
	retained int64                        // bytes of the bodies kept (at most maxRetainedBodies)
	sem      chan struct{}
	closing  chan struct{}
	closed   bool
	wg       sync.WaitGroup
}

func newImportManager(core *Core, cfg ImportConfig, demand supplyplan.DemandStore, forecasts *Forecasts, alloc *Allocation, events supplyplan.EventPublisher) *importManager {
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = 5000
	}
	if cfg.DemandChunkSize <= 0 {
		cfg.DemandChunkSize = 50000
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	return &importManager{core: core, cfg: cfg, demand: demand, forecasts: forecasts, alloc: alloc, events: events, queues: map[string][]queuedJob{}, running: map[string][]*runningJob{},
		bodies: map[string][]byte{}, split: map[string][]json.RawMessage{}, decoders: map[string]*decoder{}, sem: make(chan struct{}, cfg.Workers), closing: make(chan struct{})}
}

func (m *importManager) payloadPath(orgID, jobID string) string {
	return filepath.Join(m.cfg.Dir, orgID, jobID+".json")
}

// resume queues every unfinished job of every tenant (after a restart) and removes request bodies
// no job refers to any more.
func (m *importManager) resume(ctx context.Context, orgIDs []string) error {
	for _, org := range orgIDs {
		jobs, err := tenantTx(ctx, m.core, org, func(st *supplyplan.TenantState) ([]supplyplan.ImportJob, []supplyplan.Record, error) {
			var out []supplyplan.ImportJob
			for _, j := range st.ImportJobs {
				out = append(out, *j)
			}
			return out, nil, nil
		})
		if m.core.servedElsewhere(err) {
			continue // distributed: resumed by the node that serves it (docs/distributed.md)
		}
		if err != nil {
			return fmt.Errorf("list import jobs of %s: %w", org, err)
		}
		slices.SortFunc(jobs, func(a, b supplyplan.ImportJob) int { return a.CreatedAt.Compare(b.CreatedAt) })
		live := map[string]bool{}
		for _, j := range jobs {
			if !j.Done() {
				live[j.JobID+".json"] = true
				m.core.log.Info("resuming import job", "org", org, "job", j.JobID, "nextRow", j.NextRow, "rows", j.RowCount)
				m.enqueue(org, j.JobID, j.Kind)
			}
		}
		ents, _ := os.ReadDir(filepath.Join(m.cfg.Dir, org))
		for _, e := range ents {
			if !live[e.Name()] {
				_ = os.Remove(filepath.Join(m.cfg.Dir, org, e.Name()))
			}
		}
	}
	return nil
}

type queuedJob struct {
	id   string
	kind supplyplan.ImportKind
}

// runningJob is a started job. committed is closed once its writes and progress are durable (or it
// ended): a demand-history job started behind it waits for that before writing, so writes of one
// tenant stay in submission order even though the next job decodes and resolves its rows meanwhile.
type runningJob struct {
	queuedJob
	committed chan struct{}
	once      sync.Once
	// sent (under the manager's mu) is set once an entity job has sent its last chunk's
	// transaction to the tenant actor: the tenant's next entity job may then send its own, queued
	// behind it, while this one waits for its last write to be durable.
	sent bool
	// started is when the job started, on the monotonic clock: a small job's stored times (whole
	// milliseconds) often give it no duration at all.
	started time.Time
}

func (r *runningJob) commit() { r.once.Do(func() { close(r.committed) }) }

func (m *importManager) enqueue(orgID, jobID string, kind supplyplan.ImportKind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.queues[orgID] = append(m.queues[orgID], queuedJob{jobID, kind})
	m.startNextLocked(orgID)
}

// startNextLocked starts the tenant's next job when nothing runs, or, when a demand-history job runs
// and the next is one too, starts it alongside (demand jobs do not change what resolves rows), or,
// when an entity job has sent all its chunks and the next is an entity job too, starts it
// alongside: its transactions reach the tenant actor after the running job's (the actor applies
// them in that order), so only the running job's wait for its last durable write overlaps.
func (m *importManager) startNextLocked(orgID string) {
	defer m.decodeAheadLocked(orgID)
	for len(m.queues[orgID]) > 0 && !m.closed {
		next, running := m.queues[orgID][0], m.running[orgID]
		var prev *runningJob
		switch {
		case len(running) == 0:
		case len(running) == 1 && running[0].kind == supplyplan.ImportDemandHistory && next.kind == supplyplan.ImportDemandHistory:
			prev = running[0]
		case len(running) == 1 && running[0].sent && next.kind != supplyplan.ImportDemandHistory:
			prev = running[0]
		default:
			return
		}
		m.queues[orgID] = m.queues[orgID][1:]
		rj := &runningJob{queuedJob: next, committed: make(chan struct{}), started: time.Now()}
		m.running[orgID] = append(running, rj)
		m.wg.Add(1)
		var after <-chan struct{}
		if prev != nil {
			after = prev.committed
		}
		m.core.engine.Spawn(func() actor.Receiver { return &importJobActor{m: m, orgID: orgID, job: rj, after: after} },
			"import", actor.WithID(next.id), actor.WithMaxRestarts(1<<30))
	}
}

// decodeAheadLocked starts decoding the tenant's job next in line (its first chunks), so that it
// can send them as soon as it starts.
func (m *importManager) decodeAheadLocked(orgID string) {
	if q := m.queues[orgID]; len(q) > 0 && !m.closed {
		if rows, ok := m.split[q[0].id]; ok && m.decoders[q[0].id] == nil {
			m.decoders[q[0].id] = startDecode(q[0].kind, rows, 0, m.chunkOf(q[0].kind))
		}
	}
}

// allSent records that an entity job sent its last chunk, and starts the tenant's next job if it
// may run alongside.
func (m *importManager) allSent(orgID string, rj *runningJob) {
	if rj.kind == supplyplan.ImportDemandHistory {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rj.sent = true
	m.startNextLocked(orgID)
}

// busy reports whether the tenant has import jobs queued or running.
func (m *importManager) busy(orgID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queues[orgID]) > 0 || len(m.running[orgID]) > 0
}

func (m *importManager) finished(orgID string, rj *runningJob) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rj.commit()
	m.retained -= int64(len(m.bodies[rj.id]))
	delete(m.bodies, rj.id)
	delete(m.split, rj.id)
	if d := m.decoders[rj.id]; d != nil {
		d.cancel()
		delete(m.decoders, rj.id)
	}
	m.running[orgID] = slices.DeleteFunc(m.running[orgID], func(x *runningJob) bool { return x == rj })
	m.wg.Done()
	m.startNextLocked(orgID)
}

// close stops starting jobs, asks running ones to stop after their current chunk (they resume on
// the next start), and waits for them.
func (m *importManager) close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.closing)
	for id, d := range m.decoders {
		d.cancel()
		delete(m.decoders, id)
	}
	m.mu.Unlock()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type jobFinishedMsg struct{}

// importJobActor owns one job's lifecycle: it starts the work on Started and stops itself when the
// work reports back.
type importJobActor struct {
	m     *importManager
	orgID string
	job   *runningJob
	after <-chan struct{} // the previous job's commit, when this one runs alongside it
}

func (a *importJobActor) Receive(c *actor.Context) {
	switch c.Message().(type) {
	case actor.Started:
		engine, pid := c.Engine(), c.PID()
		go func() {
			defer func() {
				if r := recover(); r != nil {
					a.m.core.log.Error("import job panicked", "job", a.job.id, "panic", r)
				}
				engine.Send(pid, jobFinishedMsg{})
			}()
			a.m.run(a.orgID, a.job, a.after)
		}()
	case jobFinishedMsg:
		a.m.finished(a.orgID, a.job)
		c.Engine().Poison(c.PID())
	}
}

var errStopping = errors.New("import manager stopping")

// run executes a job from its NextRow to the end. Every chunk's rows and the job's progress are
// written in one journal entry (or, for demand history, the store write is followed by the
// progress entry), so a crash anywhere resumes without losing or double-counting rows.
func (m *importManager) run(orgID string, rj *runningJob, after <-chan struct{}) {
	jobID := rj.id
	m.sem <- struct{}{}
	defer func() { <-m.sem }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-m.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	m.core.metrics.ImportStarted()
	err := m.runJob(ctx, orgID, jobID, rj, after)
	m.core.metrics.ImportStopped()
	switch {
	case err == nil:
	case errors.Is(err, errStopping) || ctx.Err() != nil:
		m.core.log.Info("import job paused for shutdown", "job", jobID)
	default:
		m.core.log.Error("import job stopped", "job", jobID, "err", err)
		m.abort(orgID, jobID, err)
	}
}

// jobError is a problem that stops a job (never a row's: a bad row is a row error). Stage says what
// the job was doing, in words the caller reads in the job's message.
type jobError struct {
	stage string
	err   error
	// written holds the result of a demand-history chunk whose rows reached the demand store
	// but whose progress could not be recorded: they count as applied.
	written    *supplyplan.ImportResult
	start, end int
}

func (e *jobError) Error() string { return e.stage + ": " + e.err.Error() }
func (e *jobError) Unwrap() error { return e.err }

// reason names why a job stopped, for the caller: the stage and the error's client-safe text (an
// internal error is only named as such; its text is in the server log).
func reason(err error) string {
	stage := "processing the job"
	var je *jobError
	if errors.As(err, &je) {
		stage = je.stage
	}
	var e *supplyplan.Error
	if errors.As(err, &e) {
		return stage + " failed: " + e.Error()
	}
	return stage + " failed: internal error (see the server log)"
}

func (m *importManager) job(ctx context.Context, orgID, jobID string) (supplyplan.ImportJob, error) {
	return tenantTx(ctx, m.core, orgID, func(st *supplyplan.TenantState) (supplyplan.ImportJob, []supplyplan.Record, error) {
		j, err := st.GetImportJob(jobID)
		return j, nil, err
	})
}

func (m *importManager) runJob(ctx context.Context, orgID, jobID string, rj *runningJob, after <-chan struct{}) error {
	// The job's own record: only this runner changes it once the job runs, so it needs no wait for
	// the tenant's writes in flight (the previous job's last chunk, when this one started alongside).
	job, err := tenantPeek(ctx, m.core, orgID, func(st *supplyplan.TenantState) (supplyplan.ImportJob, error) {
		return st.GetImportJob(jobID)
	})
	if err != nil {
		return err
	}
	if job.Done() {
		return nil
	}
	m.mu.Lock()
	rows := m.split[jobID]
	m.mu.Unlock()
	if rows == nil { // resumed after a restart, or queued beyond maxRetainedBodies: read and split the stored body
		body, err := os.ReadFile(m.payloadPath(orgID, jobID))
		if err != nil {
			return &jobError{stage: "reading the stored request body", err: supplyplan.Errorf(supplyplan.EUNAVAILABLE, "the request body of this job was lost")}
		}
		if rows, err = importjson.SplitBody(job.Kind, body, 0); err != nil {
			return &jobError{stage: "reading the stored request body", err: supplyplan.Errorf(supplyplan.EUNAVAILABLE, "the stored request body is unreadable")}
		}
	}
	// Rows of the next chunk are decoded on another goroutine while this one is applied.
	chunk := m.chunkOf(job.Kind)
	m.mu.Lock()
	dec := m.decoders[jobID]
	delete(m.decoders, jobID)
	m.mu.Unlock()
	if dec == nil || dec.from != job.NextRow {
		if dec != nil {
			dec.cancel()
		}
		dec = startDecode(job.Kind, rows, job.NextRow, chunk)
	}
	defer dec.cancel()
	final := job
	// Entity chunks are pipelined: chunk n+1 is sent (and applied) while chunk n's journal write
	// is in flight; the job counts a chunk done, and publishes its events, once it is durable.
	var inflight *pendingChunk
	for c := range dec.chunks {
		select {
		case <-m.closing:
			return errStopping
		default:
		}
		if job.Kind == supplyplan.ImportDemandHistory {
			if final, err = m.demandChunk(ctx, orgID, jobID, c.rows, c.start, c.end, after); err != nil {
				return err
			}
			continue
		}
		next := m.sendChunk(ctx, orgID, jobID, c)
		if c.end == len(rows) {
			m.allSent(orgID, rj)
		}
		if inflight != nil {
			if final, err = m.awaitChunk(ctx, orgID, jobID, inflight, after); err != nil {
				return err
			}
		}
		inflight = next
	}
	if inflight != nil {
		if final, err = m.awaitChunk(ctx, orgID, jobID, inflight, after); err != nil {
			return err
		}
	}
	rj.commit()
	if !final.Done() { // the last chunk normally finished it already
		if final, err = m.update(ctx, orgID, jobID, func(j *supplyplan.ImportJob) {
			if !j.Done() {
				finish(j, supplyplan.Now())
			}
		}); err != nil {
			return err
		}
	}
	_ = os.Remove(m.payloadPath(orgID, jobID))
	m.publish(orgID, final, time.Since(rj.started))
	return nil
}

func (m *importManager) chunkOf(kind supplyplan.ImportKind) int {
	if kind == supplyplan.ImportDemandHistory {
		return m.cfg.DemandChunkSize
	}
	return m.cfg.ChunkSize
}

type decodedChunk struct {
	rows       supplyplan.DecodedRows
	start, end int
}

// decoder decodes a job's rows chunk by chunk on its own goroutine, one chunk ahead of the job (it
// starts at submission, so decoding overlaps the jobs queued before).
type decoder struct {
	from   int
	chunks chan decodedChunk
	cancel context.CancelFunc
}

func startDecode(kind supplyplan.ImportKind, rows []json.RawMessage, from, chunk int) *decoder {
	ctx, cancel := context.WithCancel(context.Background())
	d := &decoder{from: from, chunks: make(chan decodedChunk, 1), cancel: cancel}
	go func() {
		defer close(d.chunks)
		for start := from; start < len(rows); start += chunk {
			end := min(start+chunk, len(rows))
			select {
			case d.chunks <- decodedChunk{importjson.DecodeRows(kind, rows[start:end], start), start, end}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return d
}

// entityChunk applies catalog, inventory, supplier, purchase-order or order rows together with the
// job's progress in one tenant transaction: all of the chunk or none of it. The orders an orders
// chunk writes are allocated in the same transaction (their reservations and events are part of
// the chunk's write).
func (m *importManager) entityChunk(ctx context.Context, orgID, jobID string, c decodedChunk) (supplyplan.ImportJob, error) {
	var r chunkResult
	err := retry(ctx, func() (err error) {
		r, err = m.entityTx(ctx, orgID, jobID, c)()
		return err
	})
	return m.chunkDone(r, err, c)
}

// chunkResult is what an entity chunk's transaction answers.
type chunkResult struct {
	job supplyplan.ImportJob
	evs []supplyplan.DomainEvent // allocation events, published once the chunk is durable
}

// errChunkAhead: the chunk before this one is not applied (its transaction failed), so this one
// was not either; it is written again once that one is.
var errChunkAhead = errors.New("the previous chunk is not applied")

// entityTx sends one attempt at an entity chunk's transaction; wait answers once its write is
// durable.
func (m *importManager) entityTx(ctx context.Context, orgID, jobID string, c decodedChunk) (wait func() (chunkResult, error)) {
	now := supplyplan.Now()
	t0 := time.Now()
	var tFn, tEnd time.Time // set by the actor before it replies
	nrecs := 0
	send := tenantTxSend(ctx, m.core, orgID, func(st *supplyplan.TenantState) (chunkResult, []supplyplan.Record, error) {
		tFn = time.Now()
		defer func() { tEnd = time.Now() }()
		cur, ok := st.ImportJobs[jobID]
		if !ok {
			return chunkResult{}, nil, supplyplan.NotFound("Import job")
		}
		if cur.NextRow < c.start {
			return chunkResult{}, nil, errChunkAhead
		}
		if cur.NextRow != c.start { // already applied (a retried step): nothing to do
			return chunkResult{job: *cur}, nil, nil
		}
		res := st.ApplyImport(c.rows, now)
		recs := res.Records
		var evs []supplyplan.DomainEvent
		if m.alloc != nil && c.rows.Kind == supplyplan.ImportOrders {
			var allocRecs []supplyplan.Record
			allocRecs, evs = m.alloc.importedOrders(st, recs)
			recs = append(recs, allocRecs...)
		}
		j := *cur
		progress(&j, res, c.end-c.start, c.end)
		recs = append(recs, jobRecords(orgID, cur, j)...)
		nrecs = len(recs)
		return chunkResult{j, evs}, recs, nil
	})
	return func() (chunkResult, error) {
		r, err := send()
		if ctx.Err() != nil {
			return r, err // the actor may still be running fn: its times are not ours to read
		}
		m.core.log.Debug("import chunk", "job", jobID, "rows", c.end-c.start, "records", nrecs, "queued", tFn.Sub(t0),
			"tx", tEnd.Sub(tFn), "durable", time.Since(tEnd), "err", err)
		return r, err
	}
}

// chunkDone publishes a durable chunk's events, or names the chunk in its error.
func (m *importManager) chunkDone(r chunkResult, err error, c decodedChunk) (supplyplan.ImportJob, error) {
	if err != nil {
		return r.job, &jobError{stage: "recording rows " + rowRange(c.start, c.end) + " in the tenant journal", err: err, start: c.start, end: c.end}
	}
	if m.alloc != nil {
		m.alloc.publish(r.evs)
	}
	return r.job, nil
}

// pendingChunk is an entity chunk whose transaction was sent and whose answer (once its write is
// durable) is awaited.
type pendingChunk struct {
	c    decodedChunk
	wait func() (chunkResult, error)
}

// sendChunk sends an entity chunk's transaction without waiting for it. The tenant's actor takes
// the transactions of one sender in order, so the next chunk is applied after this one and while
// this one's journal write is in flight.
func (m *importManager) sendChunk(ctx context.Context, orgID, jobID string, c decodedChunk) *pendingChunk {
	return &pendingChunk{c: c, wait: m.entityTx(ctx, orgID, jobID, c)}
}

// awaitChunk waits for a sent chunk to be durable. When its transaction failed (or found the
// chunk before it not applied) it is written again, with retries, as entityChunk does: chunks are
// applied in order, and the job's progress says which ones are.
// A chunk whose write failed is written again, after the previous job's (after: its last chunk
// failed too, the one this chunk was applied on, and must be written first).
func (m *importManager) awaitChunk(ctx context.Context, orgID, jobID string, p *pendingChunk, after <-chan struct{}) (supplyplan.ImportJob, error) {
	r, err := p.wait()
	if err != nil {
		if ctx.Err() != nil {
			return r.job, ctx.Err()
		}
		if after != nil {
			select {
			case <-after:
			case <-ctx.Done():
				return r.job, ctx.Err()
			}
		}
		return m.entityChunk(ctx, orgID, jobID, p.c)
	}
	return m.chunkDone(r, nil, p.c)
}

func rowRange(start, end int) string { return strconv.Itoa(start) + " to " + strconv.Itoa(end-1) }

// demandChunk resolves demand rows in the tenant, writes them to the demand store, then records the
// progress. Demand rows replace their week, so redoing a chunk after a crash changes nothing.
func (m *importManager) demandChunk(ctx context.Context, orgID, jobID string, d supplyplan.DecodedRows, start, end int, after <-chan struct{}) (supplyplan.ImportJob, error) {
	now := supplyplan.Now()
	t0 := time.Now()
	var tResolved, tTurn, tWritten time.Time
	defer func() {
		m.core.log.Debug("import chunk", "job", jobID, "rows", end-start, "resolve", tResolved.Sub(t0),
			"waitTurn", tTurn.Sub(tResolved), "write", tWritten.Sub(tTurn), "progress", time.Since(tWritten))
	}()
	res, err := tenantRead(ctx, m.core, orgID, func(st *supplyplan.TenantState) (supplyplan.ImportResult, error) {
		return st.ApplyImport(d, now), nil
	})
	if err != nil {
		return supplyplan.ImportJob{}, &jobError{stage: "checking rows " + rowRange(start, end), err: err, start: start, end: end}
	}
	tResolved = time.Now()
	if after != nil { // the job ahead must have committed its writes before this one writes
		select {
		case <-after:
		case <-ctx.Done():
			return supplyplan.ImportJob{}, ctx.Err()
		}
	}
	tTurn = time.Now()
	if len(res.Demand) > 0 {
		stage := "writing rows " + rowRange(start, end) + " to the demand store"
		if m.demand == nil {
			return supplyplan.ImportJob{}, &jobError{stage: stage, err: supplyplan.Errorf(supplyplan.EUNAVAILABLE, "no demand store is configured"), start: start, end: end}
		}
		if err := retry(ctx, func() error { return m.demand.UpsertWeeks(ctx, orgID, res.Demand) }); err != nil {
			return supplyplan.ImportJob{}, &jobError{stage: stage, err: fmt.Errorf("write demand history: %w", err), start: start, end: end}
		}
		if m.forecasts != nil {
			m.forecasts.demandChanged(orgID)
		}
	}
	tWritten = time.Now()
	var j supplyplan.ImportJob
	err = retry(ctx, func() (err error) {
		j, err = tenantTx(ctx, m.core, orgID, func(st *supplyplan.TenantState) (supplyplan.ImportJob, []supplyplan.Record, error) {
			cur, ok := st.ImportJobs[jobID]
			if !ok {
				return supplyplan.ImportJob{}, nil, supplyplan.NotFound("Import job")
			}
			if cur.NextRow != start {
				return *cur, nil, nil
			}
			j := *cur
			progress(&j, res, end-start, end)
			return j, jobRecords(orgID, cur, j), nil
		})
		return err
	})
	if err != nil {
		return j, &jobError{stage: "recording the progress of rows " + rowRange(start, end), err: err, written: &res, start: start, end: end}
	}
	// The rows are written and counted: their memory serves the next chunk (the error above keeps
	// them, for the job's failure).
	importjson.Release(d, res.Demand)
	return j, nil
}

// progress records a chunk in the job: counts, errors and where to resume. The first chunk marks the
// job PROCESSING; the last one (next == RowCount) finishes it, so a one-chunk job costs one write.
func progress(j *supplyplan.ImportJob, res supplyplan.ImportResult, rows, next int) {
	j.Errors = slices.Clone(j.Errors)
	j.ProcessedCount += rows
	j.FailedCount += len(res.Errors)
	j.AppliedCount += res.Applied
	j.AddErrors(res.Errors)
	j.NextRow = next
	now := supplyplan.Now()
	if j.Status == supplyplan.JobPending {
		j.Status, j.StartedAt = supplyplan.JobProcessing, &now
	}
	if next >= j.RowCount && !j.DryRun {
		finish(j, now)
	}
}

// finish moves a job to COMPLETED, or FAILED when no row could be applied.
func finish(j *supplyplan.ImportJob, now time.Time) {
	j.CompletedAt = &now
	j.Status = supplyplan.JobCompleted
	if j.AppliedCount == 0 {
		j.Status, j.Message = supplyplan.JobFailed, "No row could be applied; see errors"
	}
}

// importRetry spaces the retries of an import job's writes: 100 ms, 200 ms, 400 ms, 800 ms.
var importRetry = supplyplan.RetryPolicy{Base: 100 * time.Millisecond, Factor: 2, Cap: time.Second, MaxAttempts: 5}

// retry runs fn up to 5 times with backoff while it fails with an error that may pass (not a
// validation, not-found or conflict error) and ctx lives.
func retry(ctx context.Context, fn func() error) error {
	return backoff.Retry(ctx, importRetry, func(int) error {
		err := fn()
		switch supplyplan.ErrorCode(err) {
		case supplyplan.EVALIDATION, supplyplan.ENOTFOUND, supplyplan.ECONFLICT:
			return backoff.Permanent(err)
		}
		return err
	})
}

// update changes a job record in one tenant transaction and returns the new job.
func (m *importManager) update(ctx context.Context, orgID, jobID string, fn func(*supplyplan.ImportJob)) (supplyplan.ImportJob, error) {
	return tenantTx(ctx, m.core, orgID, func(st *supplyplan.TenantState) (supplyplan.ImportJob, []supplyplan.Record, error) {
		cur, ok := st.ImportJobs[jobID]
		if !ok {
			return supplyplan.ImportJob{}, nil, supplyplan.NotFound("Import job")
		}
		j := *cur
		fn(&j)
		return j, jobRecords(orgID, cur, j), nil
	})
}

// jobRecords stores a job; when this write finishes it, the job's import.* event goes into the
// tenant's outbox in the same journal entry, so the event is never lost between the two.
func jobRecords(orgID string, prev *supplyplan.ImportJob, j supplyplan.ImportJob) []supplyplan.Record {
	recs := []supplyplan.Record{supplyplan.Put(supplyplan.KindImportJob, j.JobID, &j)}
	if j.Done() && !j.DryRun && (prev == nil || !prev.Done()) {
		recs = append(recs, supplyplan.EventRecord(importEvent(orgID, j)))
	}
	return recs
}

// importEvent is the import.completed, .partial or .failed event of a finished job. Its id is
// derived from the job, so the outbox copy and the bus copy are the same event.
func importEvent(orgID string, j supplyplan.ImportJob) supplyplan.DomainEvent {
	ts := supplyplan.Now()
	if j.CompletedAt != nil {
		ts = *j.CompletedAt
	}
	return supplyplan.DomainEvent{ID: "evt_" + j.JobID, Type: j.Outcome(), OrganizationID: orgID, Timestamp: ts,
		Data: ImportEventData(j)}
}

// abort ends a job that cannot go on (best effort; logged when even that fails, and then the job is
// resumed on the next start). A job ends FAILED only when it applied nothing; otherwise it ends
// COMPLETED and every row from where it stopped counts as failed (NOT_APPLIED), so that a client
// never sees FAILED for a job that changed data. Either way the message names why.
func (m *importManager) abort(orgID, jobID string, cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	why := reason(cause)
	var je *jobError
	errors.As(cause, &je)
	j, err := m.update(ctx, orgID, jobID, func(j *supplyplan.ImportJob) {
		if j.Done() {
			return
		}
		if je != nil && je.written != nil && j.NextRow == je.start { // its rows are in the demand store
			progress(j, *je.written, je.end-je.start, je.end)
			if j.Done() {
				return
			}
		}
		stopAt(j, why, supplyplan.Now())
	})
	if err != nil {
		m.core.log.Error("cannot end import job", "job", jobID, "err", err)
		return
	}
	_ = os.Remove(m.payloadPath(orgID, jobID))
	m.publish(orgID, j, 0)
}

// stopAt ends a job at its NextRow: FAILED when nothing was applied, else COMPLETED with the rows not
// reached counted as failed.
func stopAt(j *supplyplan.ImportJob, why string, now time.Time) {
	j.Errors = slices.Clone(j.Errors)
	j.CompletedAt = &now
	if j.StartedAt == nil {
		j.StartedAt = &now
	}
	if j.AppliedCount == 0 {
		j.Status, j.Message = supplyplan.JobFailed, "Nothing was applied: "+why
		return
	}
	from, to := j.NextRow, j.RowCount
	if from < to {
		rows := make([]supplyplan.RowError, 0, min(to-from, supplyplan.MaxStoredRowErrors))
		for r := from; r < to && len(j.Errors)+len(rows) < supplyplan.MaxStoredRowErrors; r++ {
			rows = append(rows, supplyplan.RowError{Row: r, Code: supplyplan.RowNotApplied, Message: "not applied: " + why})
		}
		j.AddErrors(rows)
		if len(j.Errors) >= supplyplan.MaxStoredRowErrors && to-from > len(rows) {
			j.ErrorsTruncated = true
		}
		j.FailedCount += to - from
		j.ProcessedCount += to - from
		j.NextRow = to
		j.Message = "Rows " + rowRange(from, to) + " were not applied: " + why
	}
	j.Status = supplyplan.JobCompleted
}

// publish announces a finished job on the event bus (import.completed, .partial or .failed) once
// it, and its outbox entry, are durable. took is the job's run time measured in this process (0:
// unknown, the job's stored times give it).
func (m *importManager) publish(orgID string, j supplyplan.ImportJob, took time.Duration) {
	// else the job's time, or (a one-chunk job starts and ends in one write) since it was accepted
	if took <= 0 && j.CompletedAt != nil {
		if j.StartedAt != nil {
			took = j.CompletedAt.Sub(*j.StartedAt)
		}
		if took <= 0 {
			took = j.CompletedAt.Sub(j.CreatedAt)
		}
	}
	m.core.metrics.ImportFinished(j.Status, j.AppliedCount, j.FailedCount, j.ProcessedCount, took)
	if m.events == nil {
		return
	}
	m.events.Publish(importEvent(orgID, j))
}

// ImportEventData is the payload of import.* events.
func ImportEventData(j supplyplan.ImportJob) map[string]any {
	return map[string]any{"jobId": j.JobID, "type": j.Kind, "status": j.Status, "rowCount": j.RowCount,
		"processedCount": j.ProcessedCount, "failedCount": j.FailedCount, "appliedCount": j.AppliedCount,
		"completedAt": j.CompletedAt}
}

// Imports is the bulk import service: a job per accepted request, its body stored durably until
// it finishes, applied chunk by chunk to the tenant's actor (catalog, inventory, orders...) or to
// the demand store (demand history), resumed after a restart.
type Imports struct {
	core *Core
	m    *importManager
}

// NewImports returns the import service; Open resumes the jobs a stop interrupted.
// alloc, when not nil, allocates the orders an orders import writes, in the same write.
func NewImports(core *Core, cfg ImportConfig, demand supplyplan.DemandStore, forecasts *Forecasts, alloc *Allocation, events supplyplan.EventPublisher) *Imports {
	return &Imports{core: core, m: newImportManager(core, cfg, demand, forecasts, alloc, events)}
}

var _ supplyplan.ImportService = (*Imports)(nil)

// Open queues every unfinished job of every tenant again (in the background: it does not wait
// for them).
func (s *Imports) Open(ctx context.Context) error {
	if err := s.m.resume(ctx, s.core.orgs()); err != nil {
		return err
	}
	s.core.onRestore("import jobs", func(ctx context.Context, orgs []string) error {
		return s.m.resume(ctx, slices.DeleteFunc(slices.Clone(orgs), func(o string) bool { return o == supplyplan.PlatformOwner }))
	})
	return nil
}

// Close stops starting jobs and waits for the running ones to stop after their current chunk
// (they resume on the next start).
func (s *Imports) Close(ctx context.Context) error {
	if err := s.m.close(ctx); err != nil {
		s.core.log.Warn("import jobs did not stop in time", "err", err)
	}
	return nil
}

// SubmitImport stores the body durably, records the PENDING job, and queues it.
func (s *Imports) SubmitImport(ctx context.Context, p supplyplan.Principal, kind supplyplan.ImportKind, body []byte, rows []json.RawMessage) (supplyplan.ImportJob, error) {
	rowCount := len(rows)
	m := s.m
	jobID := supplyplan.NewID("job")
	path := m.payloadPath(p.OrgID, jobID)
	if err := writeFileSync(path, body); err != nil {
		return supplyplan.ImportJob{}, fmt.Errorf("store import body: %w", err)
	}
	// Keep the body and start decoding it while the jobs queued before run, within a bound: a
	// client queueing many jobs must not hold their bodies in memory (they are on disk, and a job
	// whose body was not kept reads it back when it starts).
	m.mu.Lock()
	kept := m.retained+int64(len(body)) <= maxRetainedBodies || len(m.bodies) == 0
	if kept {
		m.retained += int64(len(body))
		m.bodies[jobID] = body
		m.split[jobID] = rows
		if len(m.queues[p.OrgID]) == 0 && len(m.running[p.OrgID]) == 0 { // it runs now or next
			m.decoders[jobID] = startDecode(kind, rows, 0, m.chunkOf(kind))
		}
	}
	m.mu.Unlock()
	now := supplyplan.Now()
	var enqueued atomic.Bool // set on the actor's goroutine
	job, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ImportJob, []supplyplan.Record, error) {
		j := supplyplan.ImportJob{JobID: jobID, Kind: kind, Status: supplyplan.JobPending, RowCount: rowCount,
			Errors: []supplyplan.RowError{}, CreatedAt: now, KeyID: p.KeyID}
		// The job is queued as its record is written, not once that is durable: everything it
		// sends this actor comes after this transaction (applied first, journaled after it, and
		// failing with it: the journal fails the entries after a failed one). So a tenant's next
		// job does not wait for the fsync of a write queued behind the running job's chunks.
		m.enqueue(p.OrgID, jobID, kind)
		enqueued.Store(true)
		// Each new job also drops the ones finished more than ImportJobRetention ago.
		return j, append([]supplyplan.Record{supplyplan.Put(supplyplan.KindImportJob, jobID, &j)}, st.ExpiredImportJobs(now)...), nil
	})
	if err != nil {
		if !enqueued.Load() { // never queued: nothing reads the body (a queued job whose record is missing ends alone)
			m.forget(jobID)
			_ = os.Remove(path)
		}
		return job, err
	}
	s.core.metrics.ImportSubmitted()
	return job, nil
}

// forget drops what the manager keeps of a job that was never queued.
func (m *importManager) forget(jobID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.bodies[jobID]; ok {
		m.retained -= int64(len(m.bodies[jobID]))
		delete(m.bodies, jobID)
	}
	delete(m.split, jobID)
	if d := m.decoders[jobID]; d != nil {
		d.cancel()
		delete(m.decoders, jobID)
	}
}

// DryRunImport validates rows against the tenant's current data and writes nothing.
func (s *Imports) DryRunImport(ctx context.Context, p supplyplan.Principal, kind supplyplan.ImportKind, rows []json.RawMessage) (supplyplan.ImportJob, error) {
	now := supplyplan.Now()
	decoded := importjson.DecodeRows(kind, rows, 0)
	res, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ImportResult, []supplyplan.Record, error) {
		return st.ApplyImport(decoded, now), nil, nil
	})
	if err != nil {
		return supplyplan.ImportJob{}, err
	}
	j := supplyplan.ImportJob{JobID: "", Kind: kind, Status: supplyplan.JobCompleted, RowCount: len(rows),
		Errors: []supplyplan.RowError{}, CreatedAt: now, CompletedAt: &now, DryRun: true}
	progress(&j, res, len(rows), len(rows))
	if j.AppliedCount == 0 {
		j.Status = supplyplan.JobFailed
	}
	return j, nil
}

// GetImportJob returns a job of the principal's organization.
func (s *Imports) GetImportJob(ctx context.Context, p supplyplan.Principal, jobID string) (supplyplan.ImportJob, error) {
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ImportJob, error) {
		j, err := st.GetImportJob(jobID)
		return j, err
	})
}

// writeFileSync writes data to path durably (fsutil.WriteFile), creating its directory.
func writeFileSync(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fsutil.WriteFileBytes(path, data, 0o600)
}

// ListImportJobs lists the organization's jobs, newest first.
func (s *Imports) ListImportJobs(ctx context.Context, p supplyplan.Principal) ([]supplyplan.ImportJob, error) {
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.ImportJob, error) {
		out := make([]supplyplan.ImportJob, 0, len(st.ImportJobs))
		for _, j := range st.ImportJobs {
			out = append(out, *j)
		}
		slices.SortFunc(out, func(a, b supplyplan.ImportJob) int { return b.CreatedAt.Compare(a.CreatedAt) })
		return out, nil
	})
}
