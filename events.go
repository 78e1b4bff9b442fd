package supplyplan

import (
	"context"
	"encoding/json"
	"time"
)

// DomainEvent is something that happened in a tenant that other parts (outbound webhooks, alerts)
// react to, e.g. import.completed. Data is the event's JSON payload.
type DomainEvent struct {
	ID             string    `json:"id"`
	Type           string    `json:"type"`
	OrganizationID string    `json:"organizationId"`
	Timestamp      time.Time `json:"timestamp"`
	Data           any       `json:"data"`
}

// EventPublisher receives domain events. Publish must not block for long.
type EventPublisher interface {
	Publish(DomainEvent)
}

// ImportService runs bulk imports.
type ImportService interface {
	// SubmitImport durably stores an import request whose whole-body checks passed (rows is its
	// split array, aliasing body) and queues its job; the job is then never lost.
	SubmitImport(ctx context.Context, p Principal, kind ImportKind, body []byte, rows []json.RawMessage) (ImportJob, error)
	// DryRunImport validates rows against the tenant's data without writing anything.
	DryRunImport(ctx context.Context, p Principal, kind ImportKind, rows []json.RawMessage) (ImportJob, error)
	GetImportJob(ctx context.Context, p Principal, jobID string) (ImportJob, error)
	// ListImportJobs lists the organization's jobs, newest first.
	ListImportJobs(ctx context.Context, p Principal) ([]ImportJob, error)
}
