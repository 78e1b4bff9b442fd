package http

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/importjson"
)

// importKey authenticates the x-api-key header of the import endpoints and requires one of scopes.
// Bearer keys are not accepted here (the spec's import authentication is x-api-key only). Only
// once the key is known to be an import key does the request get the import body limit.
func (s *Server) importKey(scopes ...supplyplan.Scope) func(handlerFunc) handlerFunc {
	return func(h handlerFunc) handlerFunc {
		return func(r *Request) error {
			c := apiKeyCredential(r.Ctx.Request.Header.Peek("x-api-key"),
				"the import endpoints take an import key in the x-api-key header")
			if c.reason != "" {
				return c.err()
			}
			p, ok := s.svc.Auth.Authenticate(c.key)
			if !ok {
				return unknownKey(c.header)
			}
			if err := importCheck(p, scopes...); err != nil {
				return err
			}
			r.Principal = p
			r.bodyLimit = s.cfg.ImportMaxBytes
			if err := s.route(r, p.OrgID); err != nil {
				return err
			}
			if s.cfg.RateLimits != nil {
				class := supplyplan.RateRead
				if string(r.Ctx.Method()) == "POST" {
					class = supplyplan.RateImport
				}
				org, _ := s.svc.Auth.Organization(p.OrgID)
				if err := s.limit(r, class, &org); err != nil {
					return err
				}
			}
			return s.run(r, h)
		}
	}
}

// importCheck is the rule of the import endpoints for an authenticated key: a tenant key holding one
// of scopes. The REST API and the operator console's upload both call it.
func importCheck(p supplyplan.Principal, scopes ...supplyplan.Scope) error {
	if p.Platform {
		return &supplyplan.Error{Code: supplyplan.ETENANTREQUIRED, Message: "Forbidden"}
	}
	for _, sc := range scopes {
		for _, have := range p.Scopes {
			if have == sc {
				return nil
			}
		}
	}
	need := make([]string, len(scopes))
	for i, sc := range scopes {
		need[i] = string(sc)
	}
	return &supplyplan.Error{Code: supplyplan.EFORBIDDEN, Message: "Forbidden",
		Details: map[string][]string{"x-api-key": {"requires scope " + joinOr(need)}}}
}

func joinOr(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " or " + s[len(s)-1]
}

// jobView is an import job as the API shows it.
type jobView struct {
	JobID           string                `json:"jobId,omitempty"`
	Type            supplyplan.ImportKind `json:"type"`
	Status          string                `json:"status"`
	DryRun          bool                  `json:"dryRun,omitempty"`
	RowCount        int                   `json:"rowCount"`
	ProcessedCount  int                   `json:"processedCount"`
	FailedCount     int                   `json:"failedCount"`
	AppliedCount    int                   `json:"appliedCount"`
	Errors          []supplyplan.RowError `json:"errors,omitempty"`
	ErrorsTruncated bool                  `json:"errorsTruncated,omitempty"`
	Message         string                `json:"message,omitempty"`
	CreatedAt       time.Time             `json:"createdAt"`
	StartedAt       *time.Time            `json:"startedAt,omitempty"`
	CompletedAt     *time.Time            `json:"completedAt"`
}

func viewJob(j supplyplan.ImportJob) jobView {
	errs := j.Errors
	if errs == nil {
		errs = []supplyplan.RowError{}
	}
	return jobView{JobID: j.JobID, Type: j.Kind, Status: j.Status, DryRun: j.DryRun, RowCount: j.RowCount,
		ProcessedCount: j.ProcessedCount, FailedCount: j.FailedCount, AppliedCount: j.AppliedCount, Errors: errs,
		ErrorsTruncated: j.ErrorsTruncated, Message: j.Message, CreatedAt: j.CreatedAt, StartedAt: j.StartedAt,
		CompletedAt: j.CompletedAt}
}

func (s *Server) submitImport(kind supplyplan.ImportKind) handlerFunc {
	return func(r *Request) error {
		q := r.Query()
		dry := q.Bool("dryRun", false)
		if err := q.Err(); err != nil {
			return err
		}
		body, err := r.Body()
		if err != nil {
			return err
		}
		switch {
		case isCSV(r.Ctx.Request.Header.ContentType()):
			// A CSV body becomes the kind's JSON body (docs/api.md#csv), memory of its own.
			if body, err = csvImportBody(kind, body, s.cfg.ImportMaxRows); err != nil {
				return err
			}
		case !dry && !r.body.owned:
			// The job keeps the body after the request: it needs memory of its own, and the rows
			// split from it alias that memory. A body readBody allocated is already the request's
			// own (fasthttp never writes into it); only fasthttp's reused buffer is copied.
			body = bytes.Clone(body)
		}
		rows, err := importjson.SplitBody(kind, body, s.cfg.ImportMaxRows)
		if err != nil {
			return err
		}
		if dry {
			j, err := s.svc.Imports.DryRunImport(r.Context, r.Principal, kind, rows)
			if err != nil {
				return err
			}
			return r.JSON(fasthttp.StatusOK, viewJob(j))
		}
		j, err := s.svc.Imports.SubmitImport(r.Context, r.Principal, kind, body, rows)
		if err != nil {
			return err
		}
		return r.JSON(fasthttp.StatusAccepted, map[string]any{"jobId": j.JobID, "status": j.Status,
			"rowCount": j.RowCount, "statusUrl": "/api/import/status/" + j.JobID})
	}
}

// importStatus answers a job. With `wait=<seconds>` (1..60) it answers once the job has finished
// (COMPLETED or FAILED) or the wait, or the request timeout, is over, whichever comes first: a
// client waits for its import without a polling loop.
func (s *Server) importStatus(r *Request) error {
	q := r.Query()
	wait := q.Int("wait", 0, 0, 60)
	if err := q.Err(); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Duration(wait) * time.Second)
	for {
		j, err := s.svc.Imports.GetImportJob(r.Context, r.Principal, r.Param("jobId"))
		if err != nil {
			return err
		}
		if j.Done() || !time.Now().Before(deadline) {
			return jobAnswer(r, j)
		}
		select {
		case <-r.Context.Done():
			return jobAnswer(r, j)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// jobAnswer answers a job: JSON, or its row errors as CSV (Accept: text/csv).
func jobAnswer(r *Request, j supplyplan.ImportJob) error {
	if wantsCSV(r) {
		return rowErrorsCSV(r, j)
	}
	return r.JSON(fasthttp.StatusOK, viewJob(j))
}

func (s *Server) listImportJobs(r *Request) error {
	q := r.Query()
	limit, offset := pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	jobs, err := s.svc.Imports.ListImportJobs(r.Context, r.Principal)
	if err != nil {
		return err
	}
	out := make([]jobView, 0, limit)
	for i := offset; i < len(jobs) && i < offset+limit; i++ {
		v := viewJob(jobs[i])
		v.Errors = nil // the list omits row errors; GET /api/import/status/[jobId] has them
		out = append(out, v)
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"jobs": out, "total": len(jobs), "limit": limit, "offset": offset})
}
