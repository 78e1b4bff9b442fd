package supplyplan

import (
	"context"
	"encoding/json"
	"time"
)

// This file holds the narrow contracts the hosted tool service needs beyond CatalogService: the
// planning tools call ForecastToolService and TransferToolService (tools_adapters.go adapts the
// Forecaster and the TransferService to them). A tool whose service is not wired is not listed.

// ForecastToolQuery asks for the demand forecast of one product.
type ForecastToolQuery struct {
	SKU        string
	LocationID string // "" for every location
	Weeks      int
}

// ForecastWeek is one forecast week.
type ForecastWeek struct {
	WeekStart time.Time `json:"weekStart"`
	Forecast  Quantity  `json:"forecast"`
	Lower     *Quantity `json:"lower,omitempty"`
	Upper     *Quantity `json:"upper,omitempty"`
}

// ForecastToolResult is the forecast the get_demand_forecast tool returns.
type ForecastToolResult struct {
	SKU        string         `json:"skuId"`
	LocationID string         `json:"locationId,omitempty"`
	Model      string         `json:"model,omitempty"`
	Weeks      []ForecastWeek `json:"weeks"`
}

// TransferToolFilter selects transfer recommendations.
type TransferToolFilter struct {
	Status string // "" for PENDING and APPROVED
	Limit  int
}

// TransferToolRecommendation is a transfer recommendation as the tools show it.
type TransferToolRecommendation struct {
	ID             string     `json:"id"`
	SKU            string     `json:"skuId"`
	FromLocationID string     `json:"fromLocationId"`
	ToLocationID   string     `json:"toLocationId"`
	Quantity       float64    `json:"quantity"`
	Status         string     `json:"status"`
	Reason         string     `json:"reason,omitempty"`
	ExpiresAt      *time.Time `json:"expiresAt,omitempty"`
}

// RecommendationFactor is one input that justified a recommendation.
type RecommendationFactor struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Detail string  `json:"detail,omitempty"`
}

// RecommendationExplanation says why a recommendation exists.
type RecommendationExplanation struct {
	Recommendation TransferToolRecommendation `json:"recommendation"`
	Explanation    string                     `json:"explanation"`
	Factors        []RecommendationFactor     `json:"factors"`
}

// ForecastToolService is what get_demand_forecast calls (ForecastTools adapts a Forecaster).
type ForecastToolService interface {
	DemandForecast(ctx context.Context, p Principal, q ForecastToolQuery) (ForecastToolResult, error)
}

// TransferToolService is what the transfer tools call (TransferTools adapts a TransferService).
type TransferToolService interface {
	ListTransferRecommendations(ctx context.Context, p Principal, f TransferToolFilter) ([]TransferToolRecommendation, error)
	ExplainRecommendation(ctx context.Context, p Principal, id string) (RecommendationExplanation, error)
	// ApproveTransferRecommendation moves a PENDING recommendation to APPROVED (409 otherwise).
	ApproveTransferRecommendation(ctx context.Context, p Principal, id string) (TransferToolRecommendation, error)
}

// PlanningToolService is both planning contracts (test fakes implement it).
type PlanningToolService interface {
	ForecastToolService
	TransferToolService
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
