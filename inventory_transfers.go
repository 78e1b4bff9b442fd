package supplyplan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// TransferStatus is the lifecycle state of an inventory transfer.
type TransferStatus string

// Transfer states: DRAFT (quantity reserved at the source) -> IN_TRANSIT (shipped: left the
// source's on-hand) -> RECEIVED (added at the destination); DRAFT or IN_TRANSIT -> CANCELLED
// (reservation released, or shipped stock returned to the source).
const (
	TransferDraft     TransferStatus = "DRAFT"
	TransferInTransit TransferStatus = "IN_TRANSIT"
	TransferReceived  TransferStatus = "RECEIVED"
	TransferCancelled TransferStatus = "CANCELLED"
)

// TransferStatuses lists every status.
var TransferStatuses = []TransferStatus{TransferDraft, TransferInTransit, TransferReceived, TransferCancelled}

// BinPick is stock taken from (or put into) one bin.
type BinPick struct {
	BinID    string  `json:"binId"`
	Quantity float64 `json:"quantity"`
}

// StatusChange is one step of a transfer's history.
type StatusChange struct {
	Status TransferStatus `json:"status"`
	At     time.Time      `json:"at"`
	By     string         `json:"by"`
	Note   string         `json:"note,omitempty"`
}

// Transfer is a movement of stock of one product between two locations.
type Transfer struct {
	ID               string         `json:"id"`
	ProductMasterID  string         `json:"productMasterId"`
	SourceLocationID string         `json:"sourceLocationId"`
	DestLocationID   string         `json:"destLocationId"`
	Quantity         float64        `json:"quantity"`
	Status           TransferStatus `json:"status"`
	RecommendationID string         `json:"recommendationId,omitempty"`
	SourceBinID      string         `json:"sourceBinId,omitempty"`
	DestBinID        string         `json:"destBinId,omitempty"`
	// Picks are the source bins the quantity was taken from when it shipped.
	Picks       []BinPick      `json:"picks,omitempty"`
	Notes       string         `json:"notes,omitempty"`
	CreatedBy   string         `json:"createdBy"`
	CreatedAt   time.Time      `json:"createdAt"`
	UpdatedAt   time.Time      `json:"updatedAt"`
	ShippedAt   *time.Time     `json:"shippedAt,omitempty"`
	ReceivedAt  *time.Time     `json:"receivedAt,omitempty"`
	CancelledAt *time.Time     `json:"cancelledAt,omitempty"`
	History     []StatusChange `json:"history"`
}

// TransferInput is the body of a manual transfer.
type TransferInput struct {
	ProductMasterID  *string  `json:"productMasterId" max:"200"`
	SourceLocationID *string  `json:"sourceLocationId" max:"200"`
	DestLocationID   *string  `json:"destLocationId" max:"200"`
	Quantity         *float64 `json:"quantity"`
	SourceBinID      *string  `json:"sourceBinId" max:"200"`
	DestBinID        *string  `json:"destBinId" max:"200"`
	Notes            *string  `json:"notes" max:"5000"`
}

// TransferUpdate is the body of POST /api/inventory/transfers/[id].
type TransferUpdate struct {
	Status *string `json:"status" max:"200"`
	Notes  *string `json:"notes" max:"5000"`
}

// TransferFilter selects transfers in a listing.
type TransferFilter struct {
	Status           TransferStatus
	ProductMasterID  string
	SourceLocationID string
	DestLocationID   string
	Limit, Offset    int
}

// Bin is a storage bin of a location with what it holds.
type Bin struct {
	BinID      string    `json:"binId"`
	LocationID string    `json:"locationId"`
	Items      []BinItem `json:"items"`
	Total      float64   `json:"totalQuantity"`
}

// BinItem is one product's quantity in a bin.
type BinItem struct {
	SKU      string  `json:"skuId"`
	Quantity float64 `json:"quantity"`
}

func firstBin(b map[string]float64) string {
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[0]
}

// pickBins takes qty from bins: the preferred bin first, then the fullest bins (ties by id). It
// changes bins and returns the picks.
func pickBins(bins map[string]float64, qty float64, preferred string) []BinPick {
	if bins == nil {
		return nil
	}
	order := make([]string, 0, len(bins))
	for k := range bins {
		if k != preferred {
			order = append(order, k)
		}
	}
	slices.SortFunc(order, func(a, b string) int {
		if c := cmp.Compare(bins[b], bins[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	if _, ok := bins[preferred]; ok && preferred != "" {
		order = append([]string{preferred}, order...)
	}
	var picks []BinPick
	for _, k := range order {
		if qty <= 0 {
			break
		}
		take := math.Min(bins[k], qty)
		if take <= 0 {
			continue
		}
		bins[k] -= take
		qty -= take
		picks = append(picks, BinPick{BinID: k, Quantity: take})
	}
	return picks
}

func describeQty(q float64) string {
	if q == math.Trunc(q) {
		return fmt.Sprintf("%.0f", q)
	}
	return fmt.Sprintf("%.1f", q)
}
