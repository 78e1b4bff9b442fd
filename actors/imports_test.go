package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/importjson"
	"github.com/supplyplan/supplyplan/internal/wait"
)

// flakyDemand is a demand store that accepts okCalls UpsertWeeks calls, then refuses every write.
type flakyDemand struct {
	mu      sync.Mutex
	okCalls int
	calls   int
	rows    int
}

func (f *flakyDemand) UpsertWeeks(_ context.Context, _ string, rows []supplyplan.DemandRow) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls > f.okCalls {
		return supplyplan.Errorf(supplyplan.EUNAVAILABLE, "the disk is full")
	}
	f.rows += len(rows)
	return nil
}

func (f *flakyDemand) written() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rows
}

func (f *flakyDemand) AddSignals(context.Context, string, []supplyplan.DemandSignal) ([]supplyplan.SignalWrite, error) {
	return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "not in this test")
}
func (f *flakyDemand) Series(context.Context, string, supplyplan.DemandKey, time.Time, time.Time) ([]supplyplan.WeekValue, error) {
	return nil, nil
}
func (f *flakyDemand) SeriesBatch(context.Context, string, []supplyplan.DemandKey, time.Time, time.Time) (map[supplyplan.DemandKey][]supplyplan.WeekValue, error) {
	return map[supplyplan.DemandKey][]supplyplan.WeekValue{}, nil
}
func (f *flakyDemand) Keys(context.Context, string) ([]supplyplan.DemandKey, error) { return nil, nil }
func (f *flakyDemand) KeyPage(context.Context, string, supplyplan.DemandKeyFilter, int, int) ([]supplyplan.DemandKey, int, error) {
	return []supplyplan.DemandKey{}, 0, nil
}
func (f *flakyDemand) Aggregate(context.Context, string, supplyplan.DemandQuery) ([]supplyplan.DemandAggregate, error) {
	return []supplyplan.DemandAggregate{{}}, nil
}
func (f *flakyDemand) Close() error { return nil }

// startSystem opens the services on a temporary data dir with the demo organization.
func startSystem(t *testing.T, demand supplyplan.DemandStore, demandChunk int) (*services, supplyplan.Principal) {
	t.Helper()
	s := newServices(t, options{demand: demand, imports: ImportConfig{DemandChunkSize: demandChunk, ChunkSize: demandChunk}})
	return s, s.bootstrap(t)
}

func submit(t *testing.T, s *services, p supplyplan.Principal, kind supplyplan.ImportKind, rows []string) supplyplan.ImportJob {
	t.Helper()
	body := []byte(`{"` + kind.ArrayKey() + `":[` + strings.Join(rows, ",") + `]}`)
	raw, err := importjson.SplitBody(kind, body, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	j, err := s.imports.SubmitImport(ctx, p, kind, body, raw)
	if err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, func() error {
		if j, err = s.imports.GetImportJob(ctx, p, j.JobID); err != nil {
			t.Fatal(err)
		}
		if !j.Done() {
			return fmt.Errorf("job %s did not finish: %+v", j.JobID, j)
		}
		return nil
	})
	return j
}

func seedDemandCatalog(t *testing.T, s *services, p supplyplan.Principal) {
	t.Helper()
	if j := submit(t, s, p, supplyplan.ImportCatalog, []string{`{"externalId":"P"}`}); j.Status != supplyplan.JobCompleted {
		t.Fatalf("catalog: %+v", j)
	}
	if j := submit(t, s, p, supplyplan.ImportInventory, []string{`{"skuId":"P","locationId":"L"}`}); j.Status != supplyplan.JobCompleted {
		t.Fatalf("inventory: %+v", j)
	}
}

func demandRows(n int) []string {
	rows := make([]string, n)
	for i := range rows {
		rows[i] = fmt.Sprintf(`{"skuId":"P","locationId":"L","weekStarting":"%s","actualDemand":%d}`,
			time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*i).Format(time.DateOnly), i)
	}
	return rows
}

// A job that stops after applying rows ends COMPLETED (never FAILED), every row not reached counted
// as failed with NOT_APPLIED, and its message names why.
func TestImportStoppedAfterAppliedRowsCompletes(t *testing.T) {
	store := &flakyDemand{okCalls: 1}
	s, p := startSystem(t, store, 10)
	seedDemandCatalog(t, s, p)
	j := submit(t, s, p, supplyplan.ImportDemandHistory, demandRows(30))
	if j.Status != supplyplan.JobCompleted || j.AppliedCount != 10 || j.FailedCount != 20 || j.ProcessedCount != 30 {
		t.Fatalf("job %+v, want COMPLETED with 10 applied and 20 failed", j)
	}
	if store.written() != 10 {
		t.Fatalf("store holds %d rows, want 10", store.written())
	}
	if !strings.Contains(j.Message, "demand store") || !strings.Contains(j.Message, "the disk is full") {
		t.Fatalf("message %q does not name why", j.Message)
	}
	if len(j.Errors) != 20 || j.Errors[0].Row != 10 || j.Errors[0].Code != supplyplan.RowNotApplied {
		t.Fatalf("errors %+v", j.Errors)
	}
	b, _ := json.Marshal(j)
	if !strings.Contains(string(b), `"status":"COMPLETED"`) {
		t.Fatalf("job renders as %s", b)
	}
}

// A job that stops before applying anything ends FAILED, naming why.
func TestImportStoppedBeforeAnyRowFails(t *testing.T) {
	store := &flakyDemand{okCalls: 0}
	s, p := startSystem(t, store, 10)
	seedDemandCatalog(t, s, p)
	j := submit(t, s, p, supplyplan.ImportDemandHistory, demandRows(30))
	if j.Status != supplyplan.JobFailed || j.AppliedCount != 0 || store.written() != 0 {
		t.Fatalf("job %+v (store %d rows), want FAILED with nothing applied", j, store.written())
	}
	if !strings.Contains(j.Message, "Nothing was applied") || !strings.Contains(j.Message, "the disk is full") {
		t.Fatalf("message %q does not name why", j.Message)
	}
}

func TestStopAtCountsEveryRowNotReached(t *testing.T) {
	j := supplyplan.ImportJob{Status: supplyplan.JobProcessing, RowCount: 5000, NextRow: 2000, ProcessedCount: 2000,
		AppliedCount: 1999, FailedCount: 1, Errors: []supplyplan.RowError{{Row: 7, Code: supplyplan.RowRequired}}}
	stopAt(&j, "x failed", supplyplan.Now())
	if j.Status != supplyplan.JobCompleted || j.FailedCount != 3001 || j.ProcessedCount != 5000 || j.NextRow != 5000 {
		t.Fatalf("job %+v", j)
	}
	if len(j.Errors) != supplyplan.MaxStoredRowErrors || !j.ErrorsTruncated || j.Errors[1].Row != 2000 {
		t.Fatalf("errors %d truncated %v first %+v", len(j.Errors), j.ErrorsTruncated, j.Errors[1])
	}
	if j.ProcessedCount != j.AppliedCount+j.FailedCount {
		t.Fatal("processedCount != appliedCount + failedCount")
	}
}

// gatedDemand is a demand store whose UpsertWeeks waits until release is closed; it records whether
// a read (SeriesBatch: what an alert evaluation reads) came while a write was held.
type gatedDemand struct {
	flakyDemand
	release chan struct{}
	mu      sync.Mutex
	held    int // writes waiting at the gate
	reads   int // SeriesBatch calls
	early   int // of those, while a write was held
}

func (g *gatedDemand) UpsertWeeks(ctx context.Context, org string, rows []supplyplan.DemandRow) error {
	g.mu.Lock()
	g.held++
	g.mu.Unlock()
	<-g.release
	g.mu.Lock()
	g.held--
	g.mu.Unlock()
	return g.flakyDemand.UpsertWeeks(ctx, org, rows)
}

func (g *gatedDemand) SeriesBatch(ctx context.Context, org string, keys []supplyplan.DemandKey, from, to time.Time) (map[supplyplan.DemandKey][]supplyplan.WeekValue, error) {
	g.mu.Lock()
	g.reads++
	if g.held > 0 {
		g.early++
	}
	g.mu.Unlock()
	return g.flakyDemand.SeriesBatch(ctx, org, keys, from, to)
}

func (g *gatedDemand) counts() (held, reads, early int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held, g.reads, g.early
}

// An alert evaluation asked for while the tenant's import jobs run waits for them (it would read
// a half-imported history), and runs once they are done; it waits at most waitMax.
func TestAlertEvaluationWaitsForImports(t *testing.T) {
	for _, capped := range []bool{false, true} {
		t.Run(fmt.Sprintf("capped=%v", capped), func(t *testing.T) {
			store := &gatedDemand{flakyDemand: flakyDemand{okCalls: 1 << 30}, release: make(chan struct{})}
			s := newServices(t, options{demand: store, alerts: AlertsConfig{EvalDebounce: 5 * time.Millisecond},
				imports: ImportConfig{DemandChunkSize: 10, ChunkSize: 10}})
			var once sync.Once
			open := func() { once.Do(func() { close(store.release) }) }
			t.Cleanup(open) // before the services close, also when the test fails
			p := s.bootstrap(t)
			seedDemandCatalog(t, s, p)
			if capped {
				s.alerts.eval.mu.Lock()
				s.alerts.eval.waitMax = 50 * time.Millisecond
				s.alerts.eval.mu.Unlock()
			}
			body := []byte(`{"records":[` + strings.Join(demandRows(5), ",") + `]}`)
			raw, err := importjson.SplitBody(supplyplan.ImportDemandHistory, body, 0)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			j, err := s.imports.SubmitImport(ctx, p, supplyplan.ImportDemandHistory, body, raw)
			if err != nil {
				t.Fatal(err)
			}
			wait.Eventually(t, 10*time.Second, func() error {
				if held, _, _ := store.counts(); held == 0 {
					return fmt.Errorf("the job has not reached the demand store")
				}
				return nil
			})
			_, before, _ := store.counts()
			s.alerts.HandleEvent(supplyplan.DomainEvent{Type: "import.completed", OrganizationID: p.OrgID})
			if capped { // past waitMax the evaluation runs although the job still writes
				wait.Eventually(t, 10*time.Second, func() error {
					if _, reads, _ := store.counts(); reads == before {
						return fmt.Errorf("no evaluation past the wait's bound")
					}
					return nil
				})
				open()
				return
			}
			wait.Eventually(t, 10*time.Second, func() error {
				s.alerts.eval.mu.Lock()
				defer s.alerts.eval.mu.Unlock()
				if _, ok := s.alerts.eval.waiting[p.OrgID]; !ok {
					return fmt.Errorf("the evaluation has not come up against the running job yet")
				}
				return nil
			})
			open()
			wait.Eventually(t, 10*time.Second, func() error {
				if j, err = s.imports.GetImportJob(ctx, p, j.JobID); err != nil || !j.Done() {
					return fmt.Errorf("job %+v, %v", j, err)
				}
				if _, reads, _ := store.counts(); reads == before {
					return fmt.Errorf("no evaluation after the job finished")
				}
				return nil
			})
			if _, _, early := store.counts(); early != 0 {
				t.Fatalf("%d evaluations read the demand store while the import job was writing", early)
			}
		})
	}
}

// Chunks are pipelined (the next one is applied while the previous one's journal write is in
// flight): when a chunk's write fails, the chunk after it (applied on top of it) is not kept
// either, and both are written again in order; the job ends with every row once, also after a
// restart from the journal.
func TestImportChunkWriteFailsMidJob(t *testing.T) {
	j := newMemJournal()
	dir := t.TempDir()
	s := newServices(t, options{dir: dir, journal: j, imports: ImportConfig{ChunkSize: 10}})
	p := s.bootstrap(t)
	failed := 0
	j.set(func(j *memJournal) {
		// the failure is known late, as after a group commit: the next chunk is applied meanwhile
		j.failLate = 50 * time.Millisecond
		j.failIf = func(_ string, payload []byte) bool {
			if failed == 0 && strings.Contains(string(payload), `"P-035"`) { // the 4th chunk, once
				failed++
				return true
			}
			return false
		}
	})
	rows := make([]string, 100)
	for i := range rows {
		rows[i] = fmt.Sprintf(`{"externalId":"P-%03d"}`, i)
	}
	job := submit(t, s, p, supplyplan.ImportCatalog, rows)
	j.set(func(*memJournal) {
		if failed != 1 {
			t.Fatalf("the write of the 4th chunk failed %d times, want 1", failed)
		}
	})
	if job.Status != supplyplan.JobCompleted || job.AppliedCount != 100 || job.FailedCount != 0 || job.NextRow != 100 {
		t.Fatalf("job %+v", job)
	}
	products := func(s *services) []string {
		ids, err := tenantTx(context.Background(), s.core, p.OrgID, func(st *supplyplan.TenantState) ([]string, []supplyplan.Record, error) {
			var ids []string
			for _, pr := range st.Products {
				ids = append(ids, pr.ExternalID)
			}
			return ids, nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	check := func(what string, ids []string) {
		t.Helper()
		seen := map[string]bool{}
		for _, id := range ids {
			seen[id] = true
		}
		for _, r := range rows {
			var v struct{ ExternalID string }
			_ = json.Unmarshal([]byte(r), &v)
			if !seen[v.ExternalID] {
				t.Fatalf("%s: product %s missing (%d products)", what, v.ExternalID, len(ids))
			}
		}
	}
	check("live", products(s))
	s.close(t)
	check("replayed", products(newServices(t, options{dir: dir, journal: j, imports: ImportConfig{ChunkSize: 10}})))
}

// A tenant's next import job starts once the running one has sent its last chunk: its record and
// first chunk are applied and journaled while the running job's writes still wait for their
// fsync (held here), in submission order; once the writes complete both jobs end with every row
// once, as does a replay of the journal, and the second job's values win (it ran after).
func TestImportNextJobStartsBehindTheLastWrite(t *testing.T) {
	j := newMemJournal()
	dir := t.TempDir()
	s := newServices(t, options{dir: dir, journal: j, imports: ImportConfig{ChunkSize: 10}})
	p := s.bootstrap(t)
	rowsOf := func(name string) []string {
		rows := make([]string, 20)
		for i := range rows {
			rows[i] = fmt.Sprintf(`{"externalId":"P-%03d","name":"%s %d"}`, i, name, i)
		}
		return rows
	}
	j.set(func(j *memJournal) { j.hold = true })
	released := false
	t.Cleanup(func() {
		if !released {
			j.release()
		}
	})
	type result struct {
		job supplyplan.ImportJob
		err error
	}
	start := func(name string) chan result {
		kind := supplyplan.ImportCatalog
		body := []byte(`{"` + kind.ArrayKey() + `":[` + strings.Join(rowsOf(name), ",") + `]}`)
		raw, err := importjson.SplitBody(kind, body, 0)
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan result, 1)
		go func() {
			job, err := s.imports.SubmitImport(context.Background(), p, kind, body, raw)
			ch <- result{job, err}
		}()
		return ch
	}
	journaled := func(what string) int { // entries of the tenant's stream holding what
		n := 0
		j.set(func(j *memJournal) {
			for name, st := range j.streams {
				if !strings.HasPrefix(name, "tenant") {
					continue
				}
				for _, e := range st.entries {
					if strings.Contains(string(e), what) {
						n++
					}
				}
			}
		})
		return n
	}
	first := start("first")
	wait.Eventually(t, 10*time.Second, func() error {
		if n := journaled(`first 19`); n == 0 {
			return fmt.Errorf("the first job's last chunk is not journaled yet")
		}
		return nil
	})
	second := start("second")
	wait.Eventually(t, 10*time.Second, func() error {
		if n := journaled(`second 0"`); n == 0 {
			return fmt.Errorf("the second job's first chunk is not journaled while the first job's writes wait")
		}
		return nil
	})
	j.release()
	released = true
	jobs := []supplyplan.ImportJob{}
	for _, ch := range []chan result{first, second} {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		jobs = append(jobs, r.job)
	}
	ctx := context.Background()
	for _, job := range jobs {
		wait.Eventually(t, 10*time.Second, func() error {
			got, err := s.imports.GetImportJob(ctx, p, job.JobID)
			if err != nil {
				return err
			}
			if got.Status != supplyplan.JobCompleted || got.AppliedCount != 20 || got.FailedCount != 0 {
				return fmt.Errorf("job %+v", got)
			}
			return nil
		})
	}
	names := func(s *services) map[string]string {
		m, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (map[string]string, []supplyplan.Record, error) {
			m := map[string]string{}
			for _, pr := range st.Products {
				m[pr.ExternalID] = pr.Name
			}
			return m, nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	check := func(what string, got map[string]string) {
		t.Helper()
		if len(got) != 20 {
			t.Fatalf("%s: %d products, want 20", what, len(got))
		}
		for i := range 20 {
			if id, want := fmt.Sprintf("P-%03d", i), fmt.Sprintf("second %d", i); got[id] != want {
				t.Fatalf("%s: %s named %q, want %q", what, id, got[id], want)
			}
		}
	}
	check("live", names(s))
	s.close(t)
	check("replayed", names(newServices(t, options{dir: dir, journal: j, imports: ImportConfig{ChunkSize: 10}})))
}

// TestFinishedImportJobsExpire: a new import drops the jobs that finished more than
// ImportJobRetention ago, in its own journal entry (so they stay gone after a restart), and keeps
// recent ones and unfinished ones whatever their age.
func TestFinishedImportJobsExpire(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newServices(t, options{dir: dir})
	p := s.bootstrap(t)
	now := supplyplan.Now()
	old, recent := now.Add(-supplyplan.ImportJobRetention-time.Hour), now.Add(-time.Hour)
	plant := []supplyplan.ImportJob{
		{JobID: "job_old", Kind: supplyplan.ImportCatalog, Status: supplyplan.JobCompleted, CreatedAt: old, CompletedAt: &old},
		{JobID: "job_old_failed", Kind: supplyplan.ImportCatalog, Status: supplyplan.JobFailed, CreatedAt: old, CompletedAt: &old},
		{JobID: "job_recent", Kind: supplyplan.ImportCatalog, Status: supplyplan.JobCompleted, CreatedAt: recent, CompletedAt: &recent},
		{JobID: "job_old_running", Kind: supplyplan.ImportCatalog, Status: supplyplan.JobProcessing, CreatedAt: old},
	}
	if _, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		var recs []supplyplan.Record
		for i := range plant {
			recs = append(recs, supplyplan.Put(supplyplan.KindImportJob, plant[i].JobID, &plant[i]))
		}
		return struct{}{}, recs, nil
	}); err != nil {
		t.Fatal(err)
	}
	j := submit(t, s, p, supplyplan.ImportCatalog, []string{`{"externalId":"P"}`})
	check := func(s *services) {
		t.Helper()
		for id, want := range map[string]bool{"job_old": false, "job_old_failed": false, "job_recent": true, "job_old_running": true, j.JobID: true} {
			_, err := s.imports.GetImportJob(ctx, p, id)
			if got := err == nil; got != want {
				t.Errorf("job %s kept = %v (%v), want %v", id, got, err, want)
			}
		}
	}
	check(s)
	s.close(t)
	check(newServices(t, options{dir: dir}))
}
