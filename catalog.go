package supplyplan

import (
	"context"
	"slices"
	"time"
)

// Product is a catalog item. Its ID is the caller's externalId; rows elsewhere refer to it as
// skuId or productMasterId (an skuId may also match the product's sku).
type Product struct {
	ID            string    `json:"id"`
	ExternalID    string    `json:"externalId"`
	Name          string    `json:"name"`
	SKU           string    `json:"sku"`
	CategoryID    string    `json:"categoryId,omitempty"`
	UnitCost      *float64  `json:"unitCost,omitempty"`
	UnitPrice     *float64  `json:"unitPrice,omitempty"`
	ShelfLifeDays *int      `json:"shelfLifeDays,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// Location is a stock-holding site. ID is the caller's locationId; Code is stored normalized as
// "<organizationId>-<locationId>".
type Location struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Code      string    `json:"code"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// DefaultBin is the bin of stock imported without a binId.
const DefaultBin = "DEFAULT"

// Lot is a quantity with an expiry, for expiry alerts and first-expired-first-out picking.
type Lot struct {
	LotID     string     `json:"lotId"`
	Quantity  float64    `json:"quantity"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// InventoryLevel is the stock of one product at one location.
type InventoryLevel struct {
	SKU              string  `json:"skuId"`
	LocationID       string  `json:"locationId"`
	QuantityOnHand   float64 `json:"quantityOnHand"`
	QuantityReserved float64 `json:"quantityReserved"`
	ReorderPoint     float64 `json:"reorderPoint"`
	// Bins may be shared between the stored levels of a tenant (CatalogState.shareLevel): copy it
	// (cloneBins) before changing it.
	Bins      map[string]float64 `json:"bins,omitempty"`
	Lots      []Lot              `json:"lots,omitempty"`
	UpdatedAt time.Time          `json:"updatedAt"`
}

// FEFOLots returns the lots that can still be on hand. Picks, shipments and transfers take stock
// out without naming lots, first expired first out; so when the lots hold more than
// QuantityOnHand, the surplus is taken from the lots in expiry order (lots without expiry last,
// ties in stored order) and emptied lots are left out. The stored slice is never changed: the
// result is a new slice, or l.Lots itself when the lots fit in the stock on hand.
func (l *InventoryLevel) FEFOLots() []Lot {
	total := 0.0
	for _, x := range l.Lots {
		total += max(x.Quantity, 0)
	}
	surplus := total - max(l.QuantityOnHand, 0)
	if surplus <= 1e-9 {
		return l.Lots
	}
	order := make([]int, len(l.Lots))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ea, eb := l.Lots[a].ExpiresAt, l.Lots[b].ExpiresAt
		switch {
		case ea == nil && eb == nil:
			return 0
		case ea == nil:
			return 1
		case eb == nil:
			return -1
		}
		return ea.Compare(*eb)
	})
	left := make([]float64, len(l.Lots))
	for i, x := range l.Lots {
		left[i] = max(x.Quantity, 0)
	}
	for _, i := range order {
		take := min(left[i], surplus)
		left[i] -= take
		if surplus -= take; surplus <= 1e-9 {
			break
		}
	}
	out := make([]Lot, 0, len(l.Lots))
	for i, x := range l.Lots {
		if left[i] > 1e-9 {
			x.Quantity = left[i]
			out = append(out, x)
		}
	}
	return out
}

// Available is on hand minus reserved.
func (l *InventoryLevel) Available() float64 { return l.QuantityOnHand - l.QuantityReserved }

// Supplier provides purchase orders. ID is the caller's externalId.
type Supplier struct {
	ID           string    `json:"id"`
	ExternalID   string    `json:"externalId"`
	Name         string    `json:"name"`
	LeadTimeDays *int      `json:"leadTimeDays,omitempty"`
	Email        string    `json:"email,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// PurchaseOrder statuses. Open ones (not RECEIVED, CANCELLED or CLOSED) count as inbound stock.
var PurchaseOrderStatuses = []string{"DRAFT", "PENDING", "SUBMITTED", "CONFIRMED", "SHIPPED", "RECEIVED", "CANCELLED", "CLOSED"}

// POLine is one line of a purchase order.
type POLine struct {
	SKU      string  `json:"skuId"`
	Quantity float64 `json:"quantity"`
	UnitCost float64 `json:"unitCost"`
}

// PurchaseOrder is an inbound order from a supplier, keyed by the caller's externalPoNumber.
type PurchaseOrder struct {
	ExternalPoNumber      string     `json:"externalPoNumber"`
	SupplierID            string     `json:"supplierId"`
	DestinationLocationID string     `json:"destinationLocationId"`
	Status                string     `json:"status"`
	ExpectedAt            *time.Time `json:"expectedAt,omitempty"`
	Lines                 []POLine   `json:"lines"`
	CreatedAt             time.Time  `json:"createdAt"`
	UpdatedAt             time.Time  `json:"updatedAt"`
}

// Open reports whether the order still brings stock.
func (po *PurchaseOrder) Open() bool {
	switch po.Status {
	case "RECEIVED", "CANCELLED", "CLOSED":
		return false
	}
	return true
}

// OrderLine is one line of a customer order.
type OrderLine struct {
	// LineID names the line in its order (import: lines[].lineId, default the line's 1-based
	// position). Empty on orders stored before allocation existed: LineIDOf gives the default.
	LineID     string  `json:"lineId,omitempty"`
	SKU        string  `json:"skuId"`
	Quantity   float64 `json:"quantity"`
	LocationID string  `json:"locationId"`
}

// Order is a customer order, keyed by the caller's externalOrderId.
type Order struct {
	ExternalOrderID string     `json:"externalOrderId"`
	Status          string     `json:"status"`
	Channel         string     `json:"channel,omitempty"`
	OrderedAt       *time.Time `json:"orderedAt,omitempty"`
	// OrderTerms are the allocation fields (priority, requestedDate, fill, minQuantity,
	// maxLocations, maxLatenessDays, version; docs/allocation.md), absent ones at their defaults.
	OrderTerms
	Lines     []OrderLine `json:"lines"`
	CreatedAt time.Time   `json:"createdAt"`
	UpdatedAt time.Time   `json:"updatedAt"`
}

// Page is one page of a list.
type Page[T any] struct {
	Items  []T `json:"items"`
	Total  int `json:"total"`
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// ProductFilter selects products. Query matches id, sku or name (case-insensitive substring).
type ProductFilter struct {
	Query      string
	CategoryID string
	Limit      int
	Offset     int
}

// LocationFilter selects locations.
type LocationFilter struct {
	Query  string
	Limit  int
	Offset int
}

// InventoryFilter selects inventory levels.
type InventoryFilter struct {
	SKU          string
	LocationID   string
	BelowReorder bool
	Limit        int
	Offset       int
}

// Availability is the stock picture of a product at one location: what can be promised now and
// what is on its way.
type Availability struct {
	SKU        string  `json:"skuId"`
	LocationID string  `json:"locationId"`
	OnHand     float64 `json:"quantityOnHand"`
	Reserved   float64 `json:"quantityReserved"`
	Available  float64 `json:"available"`
	Inbound    float64 `json:"inbound"`
	// ATP is available-to-promise: available now plus open purchase orders due within the horizon.
	ATP          float64 `json:"availableToPromise"`
	ReorderPoint float64 `json:"reorderPoint"`
}

// CatalogService reads a tenant's catalog, stock and orders (REST read APIs and the tool service).
type CatalogService interface {
	ListProducts(ctx context.Context, p Principal, f ProductFilter) (Page[Product], error)
	GetProduct(ctx context.Context, p Principal, id string) (Product, error)
	ListLocations(ctx context.Context, p Principal, f LocationFilter) (Page[Location], error)
	ListInventory(ctx context.Context, p Principal, f InventoryFilter) (Page[InventoryLevel], error)
	// Availability returns the stock picture of sku at the given locations (every location holding
	// or expecting it when locationIDs is empty).
	Availability(ctx context.Context, p Principal, sku string, locationIDs []string) ([]Availability, error)
	GetOrder(ctx context.Context, p Principal, externalOrderID string) (Order, error)
}

// DemandReader reads a tenant's demand history through the API.
type DemandReader interface {
	DemandHistory(ctx context.Context, p Principal, key DemandKey, from, to time.Time) ([]WeekValue, error)
}

// SignalPublisher takes demand signals into the same path as the Kafka stream and answers once each
// is durable, with one outcome per signal. It is where those signals are validated
// (NormalizeSignal): an invalid one is SignalRejected with reason RejectInvalidSignal.
type SignalPublisher interface {
	Publish(ctx context.Context, signals []DemandSignal) ([]SignalOutcome, error)
}
