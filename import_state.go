package supplyplan

import "time"

// KindImportJob is the record kind of import jobs.
const KindImportJob = "importjob"

func init() {
	RegisterKind(KindImportJob, func() any { return new(ImportJob) })
}

// ImportsState is the tenant's bulk import jobs (sub-state of TenantState). What an import writes
// goes to the catalog (CatalogState.ApplyImport, import_apply.go).
type ImportsState struct {
	ImportJobs map[string]*ImportJob `json:"importJobs"`
}

// init makes the map non-nil.
func (s *ImportsState) init() { initMap(&s.ImportJobs) }

// Apply stores one import job.
func (s *ImportsState) Apply(r Record) error {
	if r.Kind != KindImportJob {
		return unknownKind("imports state", r)
	}
	return putValue(s.ImportJobs, r)
}

// ImportJobRetention is how long a finished import job stays readable after it completed: the
// tenant's jobs would otherwise grow with every import request, forever.
const ImportJobRetention = 30 * 24 * time.Hour

// ExpiredImportJobs returns the deletions of the jobs that finished more than ImportJobRetention
// before now (pending and running jobs stay, whatever their age).
func (s *ImportsState) ExpiredImportJobs(now time.Time) []Record {
	var ids []string
	for id, j := range s.ImportJobs {
		if j.Done() && j.CompletedAt != nil && now.Sub(*j.CompletedAt) > ImportJobRetention {
			ids = append(ids, id)
		}
	}
	return delAll(KindImportJob, ids)
}

// GetImportJob returns a job.
func (s *ImportsState) GetImportJob(id string) (ImportJob, error) {
	j, ok := s.ImportJobs[id]
	if !ok {
		return ImportJob{}, NotFound("Import job")
	}
	return *j, nil
}
