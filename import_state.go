package supplyplan

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

// GetImportJob returns a job.
func (s *ImportsState) GetImportJob(id string) (ImportJob, error) {
	j, ok := s.ImportJobs[id]
	if !ok {
		return ImportJob{}, NotFound("Import job")
	}
	return *j, nil
}
