package supplyplan

import (
	"fmt"
	"strings"
	"time"
)

// ImportKind is one of the six bulk imports.
type ImportKind string

// Import kinds, named after their endpoint.
const (
	ImportCatalog        ImportKind = "catalog"
	ImportInventory      ImportKind = "inventory"
	ImportSuppliers      ImportKind = "suppliers"
	ImportPurchaseOrders ImportKind = "purchase-orders"
	ImportOrders         ImportKind = "orders"
	ImportDemandHistory  ImportKind = "demand-history"
)

// ImportKinds lists every import kind.
var ImportKinds = []ImportKind{ImportCatalog, ImportInventory, ImportSuppliers, ImportPurchaseOrders, ImportOrders, ImportDemandHistory}

// ArrayKey is the top-level array of the kind's request body.
func (k ImportKind) ArrayKey() string {
	switch k {
	case ImportCatalog:
		return "products"
	case ImportInventory:
		return "levels"
	case ImportSuppliers:
		return "suppliers"
	case ImportPurchaseOrders:
		return "purchaseOrders"
	case ImportOrders:
		return "orders"
	case ImportDemandHistory:
		return "records"
	}
	return ""
}

// Import job statuses.
const (
	JobPending    = "PENDING"
	JobProcessing = "PROCESSING"
	JobCompleted  = "COMPLETED"
	JobFailed     = "FAILED"
)

// Row error codes.
const (
	RowRequired        = "REQUIRED"
	RowInvalidType     = "INVALID_TYPE"
	RowInvalidValue    = "INVALID_VALUE"
	RowUnknownProduct  = "UNKNOWN_PRODUCT"
	RowUnknownLocation = "UNKNOWN_LOCATION"
	RowUnknownSupplier = "UNKNOWN_SUPPLIER"
	// RowNotApplied marks a valid row a job could not write (the job's message says why); it ends
	// a job that had applied rows before it stopped. Submitting the rows again is safe.
	RowNotApplied = "NOT_APPLIED"
)

// MaxStoredRowErrors caps the errors a job keeps; failedCount still counts every rejected row.
const MaxStoredRowErrors = 1000

// RowError is one rejected row of an import.
type RowError struct {
	Row     int    `json:"row"`
	Field   string `json:"field"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ImportJob is an asynchronous bulk import.
type ImportJob struct {
	JobID          string     `json:"jobId"`
	Kind           ImportKind `json:"type"`
	Status         string     `json:"status"`
	RowCount       int        `json:"rowCount"`
	ProcessedCount int        `json:"processedCount"`
	FailedCount    int        `json:"failedCount"`
	AppliedCount   int        `json:"appliedCount"`
	Errors         []RowError `json:"errors"`
	// ErrorsTruncated is true when more rows failed than MaxStoredRowErrors kept.
	ErrorsTruncated bool       `json:"errorsTruncated,omitempty"`
	Message         string     `json:"message,omitempty"`
	CreatedAt       time.Time  `json:"createdAt"`
	StartedAt       *time.Time `json:"startedAt,omitempty"`
	CompletedAt     *time.Time `json:"completedAt"`
	// NextRow is the first request row not yet processed: where a resumed job continues.
	NextRow int `json:"nextRow"`
	// KeyID is the key that submitted the job.
	KeyID  string `json:"keyId,omitempty"`
	DryRun bool   `json:"dryRun,omitempty"`
}

// Done reports whether the job reached a final state.
func (j *ImportJob) Done() bool { return j.Status == JobCompleted || j.Status == JobFailed }

// AddErrors records rejected rows, keeping at most MaxStoredRowErrors of them.
func (j *ImportJob) AddErrors(errs []RowError) {
	for _, e := range errs {
		if len(j.Errors) >= MaxStoredRowErrors {
			j.ErrorsTruncated = true
			return
		}
		j.Errors = append(j.Errors, e)
	}
}

// Outcome is the event name of a finished job: import.completed, import.partial or import.failed.
func (j *ImportJob) Outcome() string {
	switch {
	case j.Status == JobFailed:
		return "import.failed"
	case j.FailedCount > 0:
		return "import.partial"
	}
	return "import.completed"
}

func required(i int, field string, v *string) *RowError {
	if v == nil || strings.TrimSpace(*v) == "" {
		return &RowError{Row: i, Field: field, Code: RowRequired, Message: field + " is required"}
	}
	if len(*v) > MaxNameLen {
		return &RowError{Row: i, Field: field, Code: RowInvalidValue, Message: fmt.Sprintf("%s must be at most %d characters", field, MaxNameLen)}
	}
	return nil
}

func nonNegative(i int, field string, v *float64) *RowError {
	if v != nil && (!NumberOK(*v) || *v < 0) {
		return &RowError{Row: i, Field: field, Code: RowInvalidValue, Message: field + " must be a number >= 0 and at most 1e12"}
	}
	return nil
}

func firstErr(errs ...*RowError) *RowError {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func val(p *string) string {
	if p == nil {
		return ""
	}
	return strings.TrimSpace(*p)
}

func num(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

func parseRowTime(i int, field string, v *string) (*time.Time, *RowError) {
	if v == nil || *v == "" {
		return nil, nil
	}
	t, ok := ParseTime(*v)
	if !ok {
		return nil, &RowError{Row: i, Field: field, Code: RowInvalidValue, Message: field + " " + TimeMessage}
	}
	return &t, nil
}

// CatalogRow is one product of a catalog import.
type CatalogRow struct {
	ExternalID    *string  `json:"externalId" max:"200"`
	Name          *string  `json:"name" max:"200"`
	SKU           *string  `json:"sku" max:"200"`
	CategoryID    *string  `json:"categoryId" max:"200"`
	UnitCost      *float64 `json:"unitCost"`
	UnitPrice     *float64 `json:"unitPrice"`
	ShelfLifeDays *int     `json:"shelfLifeDays"`
}

// LotRow is one lot of an inventory row.
type LotRow struct {
	LotID     *string  `json:"lotId" max:"200"`
	Quantity  *float64 `json:"quantity"`
	ExpiresAt *string  `json:"expiresAt" max:"200"`
}

// InventoryRow is one level of an inventory import.
type InventoryRow struct {
	SKU              *string  `json:"skuId" max:"200"`
	LocationID       *string  `json:"locationId" max:"200"`
	LocationName     *string  `json:"locationName" max:"200"`
	QuantityOnHand   *float64 `json:"quantityOnHand"`
	QuantityReserved *float64 `json:"quantityReserved"`
	ReorderPoint     *float64 `json:"reorderPoint"`
	BinID            *string  `json:"binId" max:"200"`
	Lots             []LotRow `json:"lots"`
}

// SupplierRow is one supplier of a suppliers import.
type SupplierRow struct {
	ExternalID   *string `json:"externalId" max:"200"`
	Name         *string `json:"name" max:"200"`
	LeadTimeDays *int    `json:"leadTimeDays"`
	Email        *string `json:"email" max:"254"`
}

// POLineRow is one line of a purchase-order row.
type POLineRow struct {
	SKU      *string  `json:"skuId" max:"200"`
	Quantity *float64 `json:"quantity"`
	UnitCost *float64 `json:"unitCost"`
}

// PurchaseOrderRow is one order of a purchase-orders import.
type PurchaseOrderRow struct {
	ExternalPoNumber      *string     `json:"externalPoNumber" max:"200"`
	SupplierID            *string     `json:"supplierId" max:"200"`
	DestinationLocationID *string     `json:"destinationLocationId" max:"200"`
	Status                *string     `json:"status" max:"200"`
	ExpectedAt            *string     `json:"expectedAt" max:"200"`
	Lines                 []POLineRow `json:"lines"`
}

// OrderLineRow is one line of an order row.
type OrderLineRow struct {
	LineID     *string  `json:"lineId" max:"200"`
	SKU        *string  `json:"skuId" max:"200"`
	Quantity   *float64 `json:"quantity"`
	LocationID *string  `json:"locationId" max:"200"`
}

// OrderRow is one order of an orders import.
type OrderRow struct {
	ExternalOrderID *string `json:"externalOrderId" max:"200"`
	Status          *string `json:"status" max:"200"`
	Channel         *string `json:"channel" max:"200"`
	OrderedAt       *string `json:"orderedAt" max:"200"`
	// OrderTermsRow: the optional allocation fields (order_terms.go).
	OrderTermsRow
	Lines []OrderLineRow `json:"lines"`
}

// DemandHistoryRow is one week of a demand-history import.
type DemandHistoryRow struct {
	SKU              *string  `json:"skuId" max:"200"`
	LocationID       *string  `json:"locationId" max:"200"`
	WeekStarting     *string  `json:"weekStarting" max:"200"`
	Channel          *string  `json:"channel" max:"200"`
	ActualDemand     *float64 `json:"actualDemand"`
	ForecastedDemand *float64 `json:"forecastedDemand"`
	OnHand           *float64 `json:"onHand"`
	Stockout         *bool    `json:"stockout"`
}
