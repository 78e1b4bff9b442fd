package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/supplyplan/supplyplan"
)

// ImportConfig configures bulk import jobs.
type ImportConfig struct {
	// Dir holds the accepted request bodies until their job finishes (<data>/imports).
	Dir string
	// ChunkSize is the number of rows applied per tenant transaction (default 5000).
	ChunkSize int
	// Workers bounds the jobs running at once across tenants (default 2); a tenant's jobs run one
	// after another in submission order.
	Workers int
}

// importManager queues and runs import jobs. Each running job is a hollywood actor ("import/<id>")
// whose work runs on its own goroutine and reports back to it.
type importManager struct {
	sys *System
	cfg ImportConfig

	mu      sync.Mutex
	queues  map[string][]string // orgID -> job ids waiting
	running map[string]bool     // orgID -> a job of the org is running
	bodies  map[string][]byte   // jobID -> request body kept from submission (saves a re-read)
	sem     chan struct{}
	closing chan struct{}
	closed  bool
	wg      sync.WaitGroup
}

func newImportManager(sys *System, cfg ImportConfig) *importManager {
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = 5000
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	return &importManager{sys: sys, cfg: cfg, queues: map[string][]string{}, running: map[string]bool{},
		bodies: map[string][]byte{}, sem: make(chan struct{}, cfg.Workers), closing: make(chan struct{})}
}

func (m *importManager) payloadPath(orgID, jobID string) string {
	return filepath.Join(m.cfg.Dir, orgID, jobID+".json")
}

// resume queues every unfinished job of every tenant (after a restart) and removes request bodies
// no job refers to any more.
func (m *importManager) resume(ctx context.Context, orgIDs []string) error {
	for _, org := range orgIDs {
		jobs, err := tenantTx(ctx, m.sys, org, func(st *supplyplan.TenantState) ([]supplyplan.ImportJob, []supplyplan.Record, error) {
			var out []supplyplan.ImportJob
			for _, j := range st.ImportJobs {
				out = append(out, *j)
			}
			return out, nil, nil
		})
		if err != nil {
			return fmt.Errorf("list import jobs of %s: %w", org, err)
		}
		slices.SortFunc(jobs, func(a, b supplyplan.ImportJob) int { return a.CreatedAt.Compare(b.CreatedAt) })
		live := map[string]bool{}
		for _, j := range jobs {
			if !j.Done() {
				live[j.JobID+".json"] = true
				m.sys.log.Info("resuming import job", "org", org, "job", j.JobID, "nextRow", j.NextRow, "rows", j.RowCount)
				m.enqueue(org, j.JobID)
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

func (m *importManager) enqueue(orgID, jobID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.queues[orgID] = append(m.queues[orgID], jobID)
	m.startNextLocked(orgID)
}

func (m *importManager) startNextLocked(orgID string) {
	if m.running[orgID] || len(m.queues[orgID]) == 0 || m.closed {
		return
	}
	jobID := m.queues[orgID][0]
	m.queues[orgID] = m.queues[orgID][1:]
	m.running[orgID] = true
	m.wg.Add(1)
	m.sys.engine.Spawn(func() actor.Receiver { return &importJobActor{m: m, orgID: orgID, jobID: jobID} },
		"import", actor.WithID(jobID), actor.WithMaxRestarts(1<<30))
}

func (m *importManager) finished(orgID, jobID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.bodies, jobID)
	m.running[orgID] = false
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
	m            *importManager
	orgID, jobID string
}

func (a *importJobActor) Receive(c *actor.Context) {
	switch c.Message().(type) {
	case actor.Started:
		engine, pid := c.Engine(), c.PID()
		go func() {
			defer func() {
				if r := recover(); r != nil {
					a.m.sys.log.Error("import job panicked", "job", a.jobID, "panic", r)
				}
				engine.Send(pid, jobFinishedMsg{})
			}()
			a.m.run(a.orgID, a.jobID)
		}()
	case jobFinishedMsg:
		a.m.finished(a.orgID, a.jobID)
		c.Engine().Poison(c.PID())
	}
}

var errStopping = errors.New("import manager stopping")

// run executes a job from its NextRow to the end. Every chunk's rows and the job's progress are
// written in one journal entry (or, for demand history, the store write is followed by the
// progress entry), so a crash anywhere resumes without losing or double-counting rows.
func (m *importManager) run(orgID, jobID string) {
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
	err := m.runJob(ctx, orgID, jobID)
	switch {
	case err == nil:
	case errors.Is(err, errStopping) || ctx.Err() != nil:
		m.sys.log.Info("import job paused for shutdown", "job", jobID)
	default:
		m.sys.log.Error("import job failed", "job", jobID, "err", err)
		m.fail(orgID, jobID, "The import could not be completed; see the server log")
	}
}

func (m *importManager) job(ctx context.Context, orgID, jobID string) (supplyplan.ImportJob, error) {
	return tenantTx(ctx, m.sys, orgID, func(st *supplyplan.TenantState) (supplyplan.ImportJob, []supplyplan.Record, error) {
		j, err := st.GetImportJob(jobID)
		return j, nil, err
	})
}

func (m *importManager) runJob(ctx context.Context, orgID, jobID string) error {
	job, err := m.job(ctx, orgID, jobID)
	if err != nil {
		return err
	}
	if job.Done() {
		return nil
	}
	m.mu.Lock()
	body := m.bodies[jobID]
	m.mu.Unlock()
	if body == nil {
		if body, err = os.ReadFile(m.payloadPath(orgID, jobID)); err != nil {
			m.fail(orgID, jobID, "The request body of this job was lost")
			return nil
		}
	}
	rows, err := supplyplan.SplitImportBody(job.Kind, body, 0)
	if err != nil {
		m.fail(orgID, jobID, "The stored request body is unreadable")
		return nil
	}
	if _, err := m.update(ctx, orgID, jobID, func(j *supplyplan.ImportJob) {
		if j.Status == supplyplan.JobPending {
			now := supplyplan.Now()
			j.Status, j.StartedAt = supplyplan.JobProcessing, &now
		}
	}); err != nil {
		return err
	}
	for start := job.NextRow; start < len(rows); start += m.cfg.ChunkSize {
		select {
		case <-m.closing:
			return errStopping
		default:
		}
		end := min(start+m.cfg.ChunkSize, len(rows))
		decoded := supplyplan.DecodeImportRows(job.Kind, rows[start:end], start)
		if job.Kind == supplyplan.ImportDemandHistory {
			err = m.demandChunk(ctx, orgID, jobID, decoded, start, end)
		} else {
			err = m.entityChunk(ctx, orgID, jobID, decoded, start, end)
		}
		if err != nil {
			return err
		}
	}
	final, err := m.update(ctx, orgID, jobID, func(j *supplyplan.ImportJob) {
		now := supplyplan.Now()
		j.CompletedAt = &now
		j.Status = supplyplan.JobCompleted
		if j.AppliedCount == 0 {
			j.Status, j.Message = supplyplan.JobFailed, "No row could be applied; see errors"
		}
	})
	if err != nil {
		return err
	}
	_ = os.Remove(m.payloadPath(orgID, jobID))
	m.publish(orgID, final)
	return nil
}

// entityChunk applies catalog, inventory, supplier, purchase-order or order rows together with the
// job's progress in one tenant transaction.
func (m *importManager) entityChunk(ctx context.Context, orgID, jobID string, d supplyplan.DecodedRows, start, end int) error {
	now := supplyplan.Now()
	_, err := tenantTx(ctx, m.sys, orgID, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		cur, ok := st.ImportJobs[jobID]
		if !ok {
			return struct{}{}, nil, supplyplan.NotFound("Import job")
		}
		if cur.NextRow != start { // already applied (a retried step): nothing to do
			return struct{}{}, nil, nil
		}
		res := st.ApplyImport(d, now)
		j := *cur
		progress(&j, res, end-start, end)
		return struct{}{}, append(res.Records, supplyplan.Put(supplyplan.KindImportJob, jobID, &j)), nil
	})
	return err
}

// demandChunk resolves demand rows in the tenant, writes them to the demand store, then records the
// progress. Demand rows replace their week, so redoing a chunk after a crash changes nothing.
func (m *importManager) demandChunk(ctx context.Context, orgID, jobID string, d supplyplan.DecodedRows, start, end int) error {
	now := supplyplan.Now()
	res, err := tenantTx(ctx, m.sys, orgID, func(st *supplyplan.TenantState) (supplyplan.ImportResult, []supplyplan.Record, error) {
		return st.ApplyImport(d, now), nil, nil
	})
	if err != nil {
		return err
	}
	if len(res.Demand) > 0 {
		if m.sys.cfg.Demand == nil {
			return errors.New("no demand store configured")
		}
		if err := retry(ctx, func() error { return m.sys.cfg.Demand.UpsertWeeks(ctx, orgID, res.Demand) }); err != nil {
			return fmt.Errorf("write demand history: %w", err)
		}
		m.sys.fc.bumpDemand(orgID)
	}
	_, err = tenantTx(ctx, m.sys, orgID, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		cur, ok := st.ImportJobs[jobID]
		if !ok {
			return struct{}{}, nil, supplyplan.NotFound("Import job")
		}
		if cur.NextRow != start {
			return struct{}{}, nil, nil
		}
		j := *cur
		progress(&j, res, end-start, end)
		return struct{}{}, []supplyplan.Record{supplyplan.Put(supplyplan.KindImportJob, jobID, &j)}, nil
	})
	return err
}

func progress(j *supplyplan.ImportJob, res supplyplan.ImportResult, rows, next int) {
	j.Errors = slices.Clone(j.Errors)
	j.ProcessedCount += rows
	j.FailedCount += len(res.Errors)
	j.AppliedCount += res.Applied
	j.AddErrors(res.Errors)
	j.NextRow = next
}

// retry runs fn up to 5 times with backoff while it fails and ctx lives.
func retry(ctx context.Context, fn func() error) error {
	var err error
	for i, wait := 0, 100*time.Millisecond; i < 5; i, wait = i+1, wait*2 {
		if err = fn(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return err
}

// update changes a job record in one tenant transaction and returns the new job.
func (m *importManager) update(ctx context.Context, orgID, jobID string, fn func(*supplyplan.ImportJob)) (supplyplan.ImportJob, error) {
	return tenantTx(ctx, m.sys, orgID, func(st *supplyplan.TenantState) (supplyplan.ImportJob, []supplyplan.Record, error) {
		cur, ok := st.ImportJobs[jobID]
		if !ok {
			return supplyplan.ImportJob{}, nil, supplyplan.NotFound("Import job")
		}
		j := *cur
		fn(&j)
		return j, []supplyplan.Record{supplyplan.Put(supplyplan.KindImportJob, jobID, &j)}, nil
	})
}

// fail marks a job FAILED (best effort; logged when even that fails).
func (m *importManager) fail(orgID, jobID, msg string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := m.update(ctx, orgID, jobID, func(j *supplyplan.ImportJob) {
		now := supplyplan.Now()
		j.Status, j.Message, j.CompletedAt = supplyplan.JobFailed, msg, &now
	})
	if err != nil {
		m.sys.log.Error("cannot mark import job failed", "job", jobID, "err", err)
		return
	}
	_ = os.Remove(m.payloadPath(orgID, jobID))
	m.publish(orgID, j)
}

// publish announces a finished job on the event bus (import.completed, .partial or .failed).
func (m *importManager) publish(orgID string, j supplyplan.ImportJob) {
	if m.sys.cfg.Events == nil {
		return
	}
	m.sys.cfg.Events.Publish(supplyplan.DomainEvent{ID: supplyplan.NewID("evt"), Type: j.Outcome(),
		OrganizationID: orgID, Timestamp: supplyplan.Now(), Data: ImportEventData(j)})
}

// ImportEventData is the payload of import.* events.
func ImportEventData(j supplyplan.ImportJob) map[string]any {
	return map[string]any{"jobId": j.JobID, "type": j.Kind, "status": j.Status, "rowCount": j.RowCount,
		"processedCount": j.ProcessedCount, "failedCount": j.FailedCount, "appliedCount": j.AppliedCount,
		"completedAt": j.CompletedAt}
}

// SubmitImport stores the body durably, records the PENDING job, and queues it.
func (s *System) SubmitImport(ctx context.Context, p supplyplan.Principal, kind supplyplan.ImportKind, body []byte, rowCount int) (supplyplan.ImportJob, error) {
	m := s.imports
	jobID := supplyplan.NewID("job")
	path := m.payloadPath(p.OrgID, jobID)
	if err := writeFileSync(path, body); err != nil {
		return supplyplan.ImportJob{}, fmt.Errorf("store import body: %w", err)
	}
	now := supplyplan.Now()
	job, err := tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ImportJob, []supplyplan.Record, error) {
		j := supplyplan.ImportJob{JobID: jobID, Kind: kind, Status: supplyplan.JobPending, RowCount: rowCount,
			Errors: []supplyplan.RowError{}, CreatedAt: now, KeyID: p.KeyID}
		return j, []supplyplan.Record{supplyplan.Put(supplyplan.KindImportJob, jobID, &j)}, nil
	})
	if err != nil {
		_ = os.Remove(path)
		return job, err
	}
	m.mu.Lock()
	m.bodies[jobID] = body
	m.mu.Unlock()
	m.enqueue(p.OrgID, jobID)
	return job, nil
}

// DryRunImport validates rows against the tenant's current data and writes nothing.
func (s *System) DryRunImport(ctx context.Context, p supplyplan.Principal, kind supplyplan.ImportKind, rows []json.RawMessage) (supplyplan.ImportJob, error) {
	now := supplyplan.Now()
	decoded := supplyplan.DecodeImportRows(kind, rows, 0)
	res, err := tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ImportResult, []supplyplan.Record, error) {
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
func (s *System) GetImportJob(ctx context.Context, p supplyplan.Principal, jobID string) (supplyplan.ImportJob, error) {
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ImportJob, []supplyplan.Record, error) {
		j, err := st.GetImportJob(jobID)
		return j, nil, err
	})
}

// writeFileSync writes data to path durably (temp file, fsync, rename, directory fsync).
func writeFileSync(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ListImportJobs lists the organization's jobs, newest first.
func (s *System) ListImportJobs(ctx context.Context, p supplyplan.Principal) ([]supplyplan.ImportJob, error) {
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.ImportJob, []supplyplan.Record, error) {
		out := make([]supplyplan.ImportJob, 0, len(st.ImportJobs))
		for _, j := range st.ImportJobs {
			out = append(out, *j)
		}
		slices.SortFunc(out, func(a, b supplyplan.ImportJob) int { return b.CreatedAt.Compare(a.CreatedAt) })
		return out, nil, nil
	})
}
