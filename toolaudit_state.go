package supplyplan

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"
)

// KindToolAudit is the tenant record kind of tool audits.
const KindToolAudit = "toolaudit"

func init() {
	RegisterKind(KindToolAudit, func() any { return new(ToolAudit) })
}

// ToolAudit is the durable audit record of a confirmed state-changing tool call. Its ID is the
// confirmation token's id, so a token acts at most once.
type ToolAudit struct {
	ID             string          `json:"id"`
	OrganizationID string          `json:"organizationId"`
	Tool           string          `json:"tool"`
	Arguments      json.RawMessage `json:"arguments"`
	Actor          string          `json:"actor"`
	Status         string          `json:"status"` // CONFIRMED, then SUCCEEDED or FAILED
	Detail         string          `json:"detail,omitempty"`
	CreatedAt      time.Time       `json:"createdAt"`
	CompletedAt    *time.Time      `json:"completedAt,omitempty"`
}

// Tool audit statuses.
const (
	AuditConfirmed = "CONFIRMED"
	AuditSucceeded = "SUCCEEDED"
	AuditFailed    = "FAILED"
)

// ToolAuditLog stores tool audits in the organization's journal.
type ToolAuditLog interface {
	// ClaimToolConfirmation stores a CONFIRMED audit; 409 when the id was claimed before.
	ClaimToolConfirmation(ctx context.Context, a ToolAudit) error
	// CompleteToolAudit records the outcome of a claimed confirmation.
	CompleteToolAudit(ctx context.Context, orgID, id, status, detail string) error
	// ListToolAudits returns an organization's audits, newest first.
	ListToolAudits(ctx context.Context, orgID string) ([]ToolAudit, error)
}

// ToolAuditState is the audits of the tenant's confirmed state-changing tool calls (tool
// service; sub-state of TenantState).
type ToolAuditState struct {
	ToolAudits map[string]*ToolAudit `json:"toolAudits,omitempty"`
}

// init makes the map non-nil.
func (s *ToolAuditState) init() { initMap(&s.ToolAudits) }

// Apply stores one tool audit.
func (s *ToolAuditState) Apply(r Record) error {
	if r.Kind != KindToolAudit {
		return unknownKind("tool audit state", r)
	}
	return putValue(s.ToolAudits, r)
}

// MaxToolAudits is the most tool audits an organization keeps: a new one drops the oldest beyond
// it (they grew with every confirmed call). An audit younger than toolAuditReplayWindow is never
// dropped, since it is what refuses its confirmation token a second time.
const MaxToolAudits = 10_000

// toolAuditReplayWindow is well past a confirmation token's lifetime (5 minutes,
// tools.DefaultConfirmationTTL).
const toolAuditReplayWindow = time.Hour

// ClaimToolConfirmation returns the record of a new CONFIRMED audit of the organization; a second
// claim of the same id (a reused confirmation token) is a 409. Past MaxToolAudits the oldest
// audits go in the same write.
func (s *TenantState) ClaimToolConfirmation(a ToolAudit) ([]Record, error) {
	if _, used := s.ToolAudits[a.ID]; used {
		return nil, Conflict("This confirmation token was already used; call the tool again without a token")
	}
	a.OrganizationID, a.Status = s.OrgID, AuditConfirmed
	return append([]Record{Put(KindToolAudit, a.ID, &a)}, s.trimToolAudits(a.CreatedAt, 1)...), nil
}

// trimToolAudits returns the deletions that keep at most MaxToolAudits once adding more are
// stored: the oldest first, none younger than toolAuditReplayWindow at now.
func (s *ToolAuditState) trimToolAudits(now time.Time, adding int) []Record {
	over := len(s.ToolAudits) + adding - MaxToolAudits
	if over <= 0 {
		return nil
	}
	old := make([]*ToolAudit, 0, len(s.ToolAudits))
	for _, a := range s.ToolAudits {
		if now.Sub(a.CreatedAt) > toolAuditReplayWindow {
			old = append(old, a)
		}
	}
	slices.SortFunc(old, func(a, b *ToolAudit) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	recs := make([]Record, 0, min(over, len(old)))
	for _, a := range old[:min(over, len(old))] {
		recs = append(recs, Del(KindToolAudit, a.ID))
	}
	return recs
}

// CompleteToolAudit records the outcome of a claimed confirmation.
func (s *ToolAuditState) CompleteToolAudit(id, status, detail string, now time.Time) ([]Record, error) {
	cur, ok := s.ToolAudits[id]
	if !ok {
		return nil, NotFound("Tool audit")
	}
	a := *cur
	a.Status, a.Detail, a.CompletedAt = status, detail, &now
	return []Record{Put(KindToolAudit, a.ID, &a)}, nil
}

// ListToolAudits returns the audits, newest first.
func (s *ToolAuditState) ListToolAudits() []ToolAudit {
	out := make([]ToolAudit, 0, len(s.ToolAudits))
	for _, a := range s.ToolAudits {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b ToolAudit) int { return cmp.Compare(b.ID, a.ID) })
	return out
}
