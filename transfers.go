package supplyplan

import (
	"context"
	"time"
)

// RecommendationStatus is the lifecycle state of a transfer recommendation.
type RecommendationStatus string

// Recommendation states.
const (
	RecPending  RecommendationStatus = "PENDING"
	RecApproved RecommendationStatus = "APPROVED"
	RecExecuted RecommendationStatus = "EXECUTED"
	RecRejected RecommendationStatus = "REJECTED"
	RecExpired  RecommendationStatus = "EXPIRED"
)

// RecommendationStatuses lists every status.
var RecommendationStatuses = []RecommendationStatus{RecPending, RecApproved, RecExecuted, RecRejected, RecExpired}

// Priority says how soon a recommendation matters.
type Priority string

// Priorities: URGENT when the destination runs out within a week, HIGH within two, MEDIUM within
// four, LOW otherwise.
const (
	PriorityUrgent Priority = "URGENT"
	PriorityHigh   Priority = "HIGH"
	PriorityMedium Priority = "MEDIUM"
	PriorityLow    Priority = "LOW"
)

// Priorities lists every priority, most urgent first.
var Priorities = []Priority{PriorityUrgent, PriorityHigh, PriorityMedium, PriorityLow}

// rank orders priorities: lower is more urgent.
func (p Priority) rank() int {
	for i, q := range Priorities {
		if q == p {
			return i
		}
	}
	return len(Priorities)
}

// PriorityFor maps days until the destination runs out (nil: not within the window) to a priority.
func PriorityFor(daysToStockout *float64) Priority {
	switch {
	case daysToStockout == nil:
		return PriorityLow
	case *daysToStockout <= 7:
		return PriorityUrgent
	case *daysToStockout <= 14:
		return PriorityHigh
	case *daysToStockout <= 28:
		return PriorityMedium
	}
	return PriorityLow
}

// StockPosition is one location's stock picture for one product, before and after a transfer.
type StockPosition struct {
	LocationID   string  `json:"locationId"`
	OnHand       float64 `json:"onHand"`
	Reserved     float64 `json:"reserved"`
	Available    float64 `json:"available"`
	Inbound      float64 `json:"inbound"` // open purchase orders arriving within the window
	ReorderPoint float64 `json:"reorderPoint"`
	// Forecast is the demand forecast over the window.
	Forecast float64 `json:"forecastOverWindow"`
	// WeeksOfCover is available stock over average weekly forecast (null without demand).
	WeeksOfCoverBefore *float64 `json:"weeksOfCoverBefore"`
	WeeksOfCoverAfter  *float64 `json:"weeksOfCoverAfter"`
	// DaysToStockout is when the projection (stock + inbound - forecast) first reaches zero, null
	// when it does not within the window.
	DaysToStockoutBefore *float64 `json:"daysToStockoutBefore"`
	DaysToStockoutAfter  *float64 `json:"daysToStockoutAfter"`
	// ProjectedEnd is the projected stock at the end of the window.
	ProjectedEndBefore float64 `json:"projectedEndBefore"`
	ProjectedEndAfter  float64 `json:"projectedEndAfter"`
}

// Explanation holds every number behind a recommendation.
type Explanation struct {
	Source       StockPosition `json:"source"`
	Destination  StockPosition `json:"destination"`
	WindowWeeks  int           `json:"windowWeeks"`
	LeadTimeDays float64       `json:"transferLeadTimeDays"`
	// Shortfall is what the destination lacks to stay at its reorder point through the window.
	Shortfall float64 `json:"destinationShortfall"`
	// Surplus is what the source can give while staying at its reorder point plus its own forecast.
	Surplus float64 `json:"sourceSurplus"`
	// StockDifferencePct is (source coverage - destination coverage), coverage = available / need.
	StockDifferencePct float64 `json:"stockDifferencePct"`
	// LostSalesAvoided is the destination demand the transfer serves that would otherwise go unmet.
	LostSalesAvoided    float64  `json:"lostSalesAvoided"`
	UnitMargin          *float64 `json:"unitMargin"`
	UnitMarginSource    string   `json:"unitMarginSource"` // "request", "product price - cost" or "unknown"
	TransferCostPerUnit float64  `json:"transferCostPerUnit"`
	TransferCost        float64  `json:"transferCost"`
	MarginSaved         *float64 `json:"marginSaved"`
	Formula             string   `json:"formula"`
}

// Recommendation is a proposal to move stock of one product from one location to another.
type Recommendation struct {
	ID               string               `json:"id"`
	ProductMasterID  string               `json:"productMasterId"`
	SourceLocationID string               `json:"sourceLocationId"`
	DestLocationID   string               `json:"destLocationId"`
	Quantity         float64              `json:"quantity"`
	Priority         Priority             `json:"priority"`
	Status           RecommendationStatus `json:"status"`
	Reason           string               `json:"reason"`
	EstimatedROI     *float64             `json:"estimatedROI,omitempty"`
	Explanation      *Explanation         `json:"explanation,omitempty"`
	CreatedAt        time.Time            `json:"createdAt"`
	UpdatedAt        time.Time            `json:"updatedAt"`
	ExpiresAt        time.Time            `json:"expiresAt"`
	ApprovedAt       *time.Time           `json:"approvedAt,omitempty"`
	ApprovedBy       string               `json:"approvedBy,omitempty"`
	RejectedAt       *time.Time           `json:"rejectedAt,omitempty"`
	RejectedBy       string               `json:"rejectedBy,omitempty"`
	Comment          string               `json:"comment,omitempty"`
	ExecutedAt       *time.Time           `json:"executedAt,omitempty"`
	ExecutedBy       string               `json:"executedBy,omitempty"`
	TransferID       string               `json:"transferId,omitempty"`
	ExpiredAt        *time.Time           `json:"expiredAt,omitempty"`
	ExpiryReason     string               `json:"expiryReason,omitempty"`
}

// EffectiveStatus is the status with time-based expiry applied: a PENDING recommendation past its
// expiry is EXPIRED even before the sweep records it.
func (r *Recommendation) EffectiveStatus(now time.Time) RecommendationStatus {
	if r.Status == RecPending && !now.Before(r.ExpiresAt) {
		return RecExpired
	}
	return r.Status
}

// Approve moves a PENDING recommendation to APPROVED.
func (r Recommendation) Approve(by, comment string, now time.Time) (Recommendation, error) {
	if st := r.EffectiveStatus(now); st != RecPending {
		return r, Conflict("Recommendation is %s and cannot be approved", st)
	}
	r.Status, r.ApprovedAt, r.ApprovedBy, r.UpdatedAt = RecApproved, &now, by, now
	if comment != "" {
		r.Comment = comment
	}
	return r, nil
}

// Reject moves a PENDING or APPROVED recommendation to REJECTED.
func (r Recommendation) Reject(by, comment string, now time.Time) (Recommendation, error) {
	if st := r.EffectiveStatus(now); st != RecPending && st != RecApproved {
		return r, Conflict("Recommendation is %s and cannot be rejected", st)
	}
	r.Status, r.RejectedAt, r.RejectedBy, r.Comment, r.UpdatedAt = RecRejected, &now, by, comment, now
	return r, nil
}

// Expire moves a PENDING recommendation to EXPIRED with a reason.
func (r Recommendation) Expire(reason string, now time.Time) (Recommendation, bool) {
	if r.Status != RecPending {
		return r, false
	}
	at := now
	if reason == ExpiryTime && r.ExpiresAt.Before(now) {
		at = r.ExpiresAt
	}
	r.Status, r.ExpiredAt, r.ExpiryReason, r.UpdatedAt = RecExpired, &at, reason, now
	return r, true
}

// Expiry reasons.
const (
	ExpiryTime          = "expired: not acted on before expiresAt"
	ExpiryJustification = "expired: the stock situation that justified it is gone"
)

// RecommendationFilter selects recommendations in a listing.
type RecommendationFilter struct {
	Status           RecommendationStatus
	Priority         Priority
	ProductMasterID  string
	SourceLocationID string
	DestLocationID   string
	// ValidOnly excludes expired recommendations and those whose justification is gone.
	ValidOnly bool
	Limit     int
	Offset    int
}

// GenerateInput is the body of POST /api/transfers/recommendations.
type GenerateInput struct {
	LocationID            *string  `json:"locationId" max:"200"`
	ProductMasterID       *string  `json:"productMasterId" max:"200"`
	MinStockDifferencePct *float64 `json:"minStockDifferencePct"`
	RequirePositiveROI    *bool    `json:"requirePositiveROI"`
	UnitMargin            *float64 `json:"unitMargin"`
}

// Validate checks the spec's limits.
func (in GenerateInput) Validate() error {
	if err := CheckInput(in); err != nil {
		return err
	}
	fe := FieldErrors{}
	if in.MinStockDifferencePct != nil {
		checkRange(fe, "minStockDifferencePct", *in.MinStockDifferencePct, 0, 1)
	}
	if in.UnitMargin != nil && !(*in.UnitMargin > 0) {
		fe.Add("unitMargin", "must be a positive number")
	}
	return fe.Err()
}

// GenerateResult is what a generation run produced.
type GenerateResult struct {
	Created         []Recommendation `json:"recommendations"`
	SkippedPending  int              `json:"skippedPending"`
	SkippedRejected int              `json:"skippedRecentlyRejected"`
	Expired         int              `json:"expired"`
	Products        int              `json:"productsEvaluated"`
}

// TransferService runs transfer recommendations and inventory transfers.
type TransferService interface {
	GenerateRecommendations(ctx context.Context, p Principal, in GenerateInput) (GenerateResult, error)
	ListRecommendations(ctx context.Context, p Principal, f RecommendationFilter) (Page[Recommendation], error)
	GetRecommendation(ctx context.Context, p Principal, id string) (Recommendation, error)
	ApproveRecommendation(ctx context.Context, p Principal, id, comment string) (Recommendation, error)
	RejectRecommendation(ctx context.Context, p Principal, id, comment string) (Recommendation, error)
	ExecuteRecommendation(ctx context.Context, p Principal, id, comment string) (Recommendation, Transfer, error)

	ListTransfers(ctx context.Context, p Principal, f TransferFilter) (Page[Transfer], error)
	CreateTransfer(ctx context.Context, p Principal, in TransferInput) (Transfer, error)
	GetTransfer(ctx context.Context, p Principal, id string) (Transfer, error)
	UpdateTransfer(ctx context.Context, p Principal, id string, in TransferUpdate) (Transfer, error)
	Bins(ctx context.Context, p Principal, locationID, sku string) ([]Bin, error)
}
