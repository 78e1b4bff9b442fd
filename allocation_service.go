package supplyplan

import (
	"context"
	"time"
)

// The allocation surface the transports call (docs/allocation.md, docs/api.md#order-allocation):
// the service interface, its queries and the order view. The tenant's actor answers every call
// (tenant_allocation.go), so allocation, reads and the ledger share one writer.

// AllocationService allocates a tenant's orders against available-to-promise and answers the
// ledger's reads. The order import allocates the orders it writes through the same service.
type AllocationService interface {
	// ATP answers available-to-promise figures (GET /api/inventory/atp).
	ATP(ctx context.Context, p Principal, q ATPQuery) (Page[ATPLine], error)
	// ListOrders and GetOrder show orders with their allocation.
	ListOrders(ctx context.Context, p Principal, f OrderFilter) (Page[OrderView], error)
	GetOrder(ctx context.Context, p Principal, id string) (OrderView, error)
	// AllocateOrder allocates an order's current version again (no event when already notified).
	AllocateOrder(ctx context.Context, p Principal, id string) (OrderView, error)
	// CommitOrder confirms an order: its HELD reservations become COMMITTED.
	CommitOrder(ctx context.Context, p Principal, id string) (OrderView, error)
	ListReservations(ctx context.Context, p Principal, f ReservationFilter) (Page[Reservation], error)
	// Run plans a re-allocation run; unless it is a dry run (the default) it is applied and stored,
	// which needs allocation.approve.
	Run(ctx context.Context, p Principal, in RunInput) (AllocationRun, error)
	ListRuns(ctx context.Context, p Principal, limit, offset int) (Page[AllocationRun], error)
	GetRun(ctx context.Context, p Principal, id string) (AllocationRun, error)
	Inconsistencies(ctx context.Context, p Principal) ([]Inconsistency, error)
	// Repair fixes what Inconsistencies finds and returns the audit entries it wrote.
	Repair(ctx context.Context, p Principal) ([]AllocationAudit, error)
	ListAudits(ctx context.Context, p Principal, limit, offset int) (Page[AllocationAudit], error)
}

// ATPQuery selects available-to-promise figures: one sku (id or sku) or every one, at one
// location or every location holding, expecting or reserving it, at the end of Date's day (today
// when nil). Quantity, when > 0, also asks whether that quantity can be promised at each
// location by Date, and from when.
type ATPQuery struct {
	SKU        string
	LocationID string
	Date       *time.Time
	Quantity   float64
	Limit      int
	Offset     int
}

// ATPLine is one figure of GET /api/inventory/atp. CanPromise and EarliestDate answer a query's
// Quantity: whether ATP at the date covers it, and the earliest date it does (absent when the
// known receipts never cover it).
type ATPLine struct {
	ATPFigure
	CanPromise   *bool      `json:"canPromise,omitempty"`
	EarliestDate *time.Time `json:"earliestDate,omitempty"`
}

// OrderFilter selects orders in GET /api/orders.
type OrderFilter struct {
	// Status is the order's status as imported (OrderStatuses).
	Status string
	// AllocationStatus is the allocation's status, NONE for orders never allocated.
	AllocationStatus string
	// SKU (id or sku) and LocationID keep orders with a line of them.
	SKU        string
	LocationID string
	Limit      int
	Offset     int
}

// AllocationStatuses lists what OrderFilter.AllocationStatus takes.
var AllocationStatuses = []AllocationStatus{AllocAllocated, AllocPartial, AllocBackordered, AllocFailed, AllocReleased, AllocShipped, AllocNone}

// OrderLineView is one line of an OrderView.
type OrderLineView struct {
	LineID     string  `json:"lineId"`
	SKU        string  `json:"skuId"`
	Quantity   float64 `json:"quantity"`
	LocationID string  `json:"locationId"`
}

// OrderView is an order as GET /api/orders shows it: its fields with the allocation terms at
// their effective values, and its allocation (null when it was never allocated).
type OrderView struct {
	ExternalOrderID string          `json:"externalOrderId"`
	Status          string          `json:"status"`
	Channel         string          `json:"channel,omitempty"`
	OrderedAt       *time.Time      `json:"orderedAt,omitempty"`
	Priority        int             `json:"priority"`
	RequestedDate   *time.Time      `json:"requestedDate"`
	Fill            FillPolicy      `json:"fill"`
	MinQuantity     float64         `json:"minQuantity"`
	MaxLocations    int             `json:"maxLocations"`
	MaxLatenessDays int             `json:"maxLatenessDays"`
	Version         int64           `json:"version"`
	Lines           []OrderLineView `json:"lines"`
	CreatedAt       time.Time       `json:"createdAt"`
	UpdatedAt       time.Time       `json:"updatedAt"`
	Allocation      *AllocationView `json:"allocation"`
}
