package tools

import (
	"context"
	"time"

	"github.com/supplyplan/supplyplan"
)

// This file holds the narrow contracts the hosted tool service needs beyond CatalogService: the
// planning tools call ForecastBackend and TransferBackend (adapters.go adapts the
// Forecaster and the TransferService to them). A tool whose service is not wired is not listed.

// ATPBackend answers available-to-promise figures from the tenant's reservation ledger
// (supplyplan.AllocationService has it).
type ATPBackend interface {
	ATP(ctx context.Context, p supplyplan.Principal, q supplyplan.ATPQuery) (supplyplan.Page[supplyplan.ATPLine], error)
}

// ForecastQuery asks for the demand forecast of one product.
type ForecastQuery struct {
	SKU        string
	LocationID string // "" for every location
	Weeks      int
}

// ForecastWeek is one forecast week.
type ForecastWeek struct {
	WeekStart time.Time            `json:"weekStart"`
	Forecast  supplyplan.Quantity  `json:"forecast"`
	Lower     *supplyplan.Quantity `json:"lower,omitempty"`
	Upper     *supplyplan.Quantity `json:"upper,omitempty"`
}

// ForecastResult is the forecast the get_demand_forecast tool returns.
type ForecastResult struct {
	SKU        string         `json:"skuId"`
	LocationID string         `json:"locationId,omitempty"`
	Model      string         `json:"model,omitempty"`
	Weeks      []ForecastWeek `json:"weeks"`
}

// TransferFilter selects transfer recommendations.
type TransferFilter struct {
	Status string // "" for PENDING and APPROVED
	Limit  int
}

// Recommendation is a transfer recommendation as the tools show it.
type Recommendation struct {
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
	Recommendation Recommendation         `json:"recommendation"`
	Explanation    string                 `json:"explanation"`
	Factors        []RecommendationFactor `json:"factors"`
}

// ForecastBackend is what get_demand_forecast calls (ForecastTools adapts a Forecaster).
type ForecastBackend interface {
	DemandForecast(ctx context.Context, p supplyplan.Principal, q ForecastQuery) (ForecastResult, error)
}

// TransferBackend is what the transfer tools call (TransferTools adapts a TransferService).
type TransferBackend interface {
	ListTransferRecommendations(ctx context.Context, p supplyplan.Principal, f TransferFilter) ([]Recommendation, error)
	ExplainRecommendation(ctx context.Context, p supplyplan.Principal, id string) (RecommendationExplanation, error)
	// ApproveTransferRecommendation moves a PENDING recommendation to APPROVED (409 otherwise).
	ApproveTransferRecommendation(ctx context.Context, p supplyplan.Principal, id string) (Recommendation, error)
}

// PlanningBackend is both planning contracts (test fakes implement it).
type PlanningBackend interface {
	ForecastBackend
	TransferBackend
}
