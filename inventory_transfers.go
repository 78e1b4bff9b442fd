package supplyplan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
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

// levelCopy returns a copy of the level of product at loc that can be changed and stored.
func (s *TenantState) levelCopy(productID, loc string, now time.Time) InventoryLevel {
	if cur, ok := s.Inventory[InventoryKey(productID, loc)]; ok {
		l := *cur
		l.Bins = cloneBins(cur.Bins)
		l.Lots = slices.Clone(cur.Lots)
		return l
	}
	return InventoryLevel{SKU: productID, LocationID: loc, Bins: map[string]float64{}, UpdatedAt: now}
}

// CreateTransfer validates a manual transfer and reserves its quantity at the source.
func (s *TenantState) CreateTransfer(in TransferInput, by string, now time.Time) (Transfer, []Record, error) {
	if err := CheckInput(in); err != nil {
		return Transfer{}, nil, err
	}
	fe := FieldErrors{}
	req := func(field string, v *string) string {
		if v == nil || strings.TrimSpace(*v) == "" {
			fe.Add(field, "is required")
			return ""
		}
		return strings.TrimSpace(*v)
	}
	prod, src, dst := req("productMasterId", in.ProductMasterID), req("sourceLocationId", in.SourceLocationID), req("destLocationId", in.DestLocationID)
	if in.Quantity == nil {
		fe.Add("quantity", "is required")
	} else if q := *in.Quantity; !NumberOK(q) || q <= 0 {
		fe.Add("quantity", "must be a number > 0 and at most 1e12")
	}
	if err := fe.Err(); err != nil {
		return Transfer{}, nil, err
	}
	t := Transfer{ID: NewID("trf"), ProductMasterID: prod, SourceLocationID: src, DestLocationID: dst, Quantity: *in.Quantity,
		SourceBinID: val(in.SourceBinID), DestBinID: val(in.DestBinID), Notes: val(in.Notes)}
	return s.newTransfer(t, by, now)
}

// newTransfer checks references and stock, then creates a DRAFT transfer reserving its quantity.
func (s *TenantState) newTransfer(t Transfer, by string, now time.Time) (Transfer, []Record, error) {
	fe := FieldErrors{}
	p, ok := s.ProductBySKU(t.ProductMasterID)
	if !ok {
		fe.Add("productMasterId", "unknown product %q", t.ProductMasterID)
	} else {
		t.ProductMasterID = p.ID
	}
	if _, ok := s.Locations[t.SourceLocationID]; !ok {
		fe.Add("sourceLocationId", "unknown location %q", t.SourceLocationID)
	}
	if _, ok := s.Locations[t.DestLocationID]; !ok {
		fe.Add("destLocationId", "unknown location %q", t.DestLocationID)
	}
	if t.SourceLocationID == t.DestLocationID && t.SourceLocationID != "" {
		fe.Add("destLocationId", "must differ from sourceLocationId")
	}
	if err := fe.Err(); err != nil {
		return Transfer{}, nil, err
	}
	src := s.levelCopy(t.ProductMasterID, t.SourceLocationID, now)
	if t.SourceBinID != "" && src.Bins[t.SourceBinID] < t.Quantity {
		return Transfer{}, nil, Invalid("sourceBinId", "bin %q holds %g, less than %g", t.SourceBinID, src.Bins[t.SourceBinID], t.Quantity)
	}
	if src.Available() < t.Quantity {
		return Transfer{}, nil, Invalid("quantity", "exceeds the %g available at %s", math.Max(src.Available(), 0), t.SourceLocationID)
	}
	src.QuantityReserved += t.Quantity
	src.UpdatedAt = now
	t.Status, t.CreatedBy, t.CreatedAt, t.UpdatedAt = TransferDraft, by, now, now
	t.History = []StatusChange{{Status: TransferDraft, At: now, By: by}}
	return t, []Record{Put(KindTransfer, t.ID, &t), Put(KindInventory, InventoryKey(t.ProductMasterID, t.SourceLocationID), &src)}, nil
}

// UpdateTransfer moves a transfer along DRAFT -> IN_TRANSIT -> RECEIVED, or cancels it, adjusting
// stock. Other transitions are 409.
func (s *TenantState) UpdateTransfer(id string, in TransferUpdate, by string, now time.Time) (Transfer, []Record, error) {
	cur, ok := s.Transfers[id]
	if !ok {
		return Transfer{}, nil, NotFound("Transfer")
	}
	if err := CheckInput(in); err != nil {
		return Transfer{}, nil, err
	}
	t := *cur
	t.History = slices.Clone(cur.History)
	t.Picks = slices.Clone(cur.Picks)
	if in.Notes != nil {
		t.Notes = *in.Notes
	}
	if in.Status == nil {
		if in.Notes == nil {
			return Transfer{}, nil, Invalid("status", "is required (IN_TRANSIT, RECEIVED or CANCELLED)")
		}
		t.UpdatedAt = now
		return t, []Record{Put(KindTransfer, t.ID, &t)}, nil
	}
	next := TransferStatus(*in.Status)
	if !slices.Contains(TransferStatuses, next) {
		return Transfer{}, nil, Invalid("status", "must be one of %s", joinEnum(TransferStatuses))
	}
	src := s.levelCopy(t.ProductMasterID, t.SourceLocationID, now)
	var recs []Record
	switch {
	case t.Status == TransferDraft && next == TransferInTransit:
		// Ship: the reserved quantity leaves the source's on-hand, taken from its bins.
		src.QuantityReserved = math.Max(0, src.QuantityReserved-t.Quantity)
		src.QuantityOnHand = math.Max(0, src.QuantityOnHand-t.Quantity)
		t.Picks = pickBins(src.Bins, t.Quantity, t.SourceBinID)
		t.ShippedAt = &now
		recs = append(recs, Put(KindInventory, InventoryKey(t.ProductMasterID, t.SourceLocationID), &src))
	case t.Status == TransferInTransit && next == TransferReceived:
		dst := s.levelCopy(t.ProductMasterID, t.DestLocationID, now)
		bin := t.DestBinID
		if bin == "" {
			bin = DefaultBin
			if len(dst.Bins) > 0 && dst.Bins[DefaultBin] == 0 {
				bin = firstBin(dst.Bins)
			}
		}
		if !StoredOK(dst.QuantityOnHand + t.Quantity) {
			return Transfer{}, nil, Invalid("status", "receiving %s would take the stock of %s at %s above %g",
				describeQty(t.Quantity), t.ProductMasterID, t.DestLocationID, MaxStored)
		}
		if dst.Bins == nil {
			dst.Bins = map[string]float64{}
		}
		dst.Bins[bin] += t.Quantity
		dst.QuantityOnHand += t.Quantity
		dst.UpdatedAt = now
		t.ReceivedAt = &now
		recs = append(recs, Put(KindInventory, InventoryKey(t.ProductMasterID, t.DestLocationID), &dst))
	case t.Status == TransferDraft && next == TransferCancelled:
		src.QuantityReserved = math.Max(0, src.QuantityReserved-t.Quantity)
		t.CancelledAt = &now
		recs = append(recs, Put(KindInventory, InventoryKey(t.ProductMasterID, t.SourceLocationID), &src))
	case t.Status == TransferInTransit && next == TransferCancelled:
		// Returned: back into the bins it came from.
		if !StoredOK(src.QuantityOnHand + t.Quantity) {
			return Transfer{}, nil, Invalid("status", "returning %s would take the stock of %s at %s above %g",
				describeQty(t.Quantity), t.ProductMasterID, t.SourceLocationID, MaxStored)
		}
		for _, p := range t.Picks {
			src.Bins[p.BinID] += p.Quantity
		}
		if len(t.Picks) == 0 {
			src.Bins[DefaultBin] += t.Quantity
		}
		src.QuantityOnHand += t.Quantity
		t.CancelledAt = &now
		recs = append(recs, Put(KindInventory, InventoryKey(t.ProductMasterID, t.SourceLocationID), &src))
	default:
		return Transfer{}, nil, Conflict("Transfer cannot go from %s to %s", t.Status, next)
	}
	src.UpdatedAt = now
	t.Status, t.UpdatedAt = next, now
	t.History = append(t.History, StatusChange{Status: next, At: now, By: by})
	return t, append(recs, Put(KindTransfer, t.ID, &t)), nil
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

// ListTransfers returns transfers, newest first.
func (s *TenantState) ListTransfers(f TransferFilter) Page[Transfer] {
	out := make([]Transfer, 0)
	for _, t := range s.Transfers {
		if (f.Status != "" && t.Status != f.Status) || (f.ProductMasterID != "" && t.ProductMasterID != f.ProductMasterID) ||
			(f.SourceLocationID != "" && t.SourceLocationID != f.SourceLocationID) || (f.DestLocationID != "" && t.DestLocationID != f.DestLocationID) {
			continue
		}
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b Transfer) int { return cmp.Compare(b.ID, a.ID) })
	return page(out, f.Limit, f.Offset)
}

// GetTransfer returns one transfer.
func (s *TenantState) GetTransfer(id string) (Transfer, error) {
	t, ok := s.Transfers[id]
	if !ok {
		return Transfer{}, NotFound("Transfer")
	}
	return *t, nil
}

// Bins lists the bins of a location with what they hold (optionally of one product). Stock imported
// without a bin sits in the DEFAULT bin; a location without stock has one empty DEFAULT bin.
func (s *TenantState) Bins(locationID, sku string) ([]Bin, error) {
	if _, ok := s.Locations[locationID]; !ok {
		return nil, NotFound("Location")
	}
	productID := ""
	if sku != "" {
		p, ok := s.ProductBySKU(sku)
		if !ok {
			return nil, Invalid("skuId", "unknown product %q", sku)
		}
		productID = p.ID
	}
	byBin := map[string]*Bin{}
	for _, l := range s.Inventory {
		if l.LocationID != locationID || (productID != "" && l.SKU != productID) {
			continue
		}
		bins := l.Bins
		if len(bins) == 0 && l.QuantityOnHand > 0 {
			bins = map[string]float64{DefaultBin: l.QuantityOnHand}
		}
		for id, q := range bins {
			b := byBin[id]
			if b == nil {
				b = &Bin{BinID: id, LocationID: locationID}
				byBin[id] = b
			}
			if q > 0 {
				b.Items = append(b.Items, BinItem{SKU: l.SKU, Quantity: q})
				b.Total += q
			}
		}
	}
	if len(byBin) == 0 {
		byBin[DefaultBin] = &Bin{BinID: DefaultBin, LocationID: locationID}
	}
	out := make([]Bin, 0, len(byBin))
	for _, b := range byBin {
		if b.Items == nil {
			b.Items = []BinItem{}
		}
		slices.SortFunc(b.Items, func(x, y BinItem) int { return cmp.Compare(x.SKU, y.SKU) })
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b Bin) int { return cmp.Compare(a.BinID, b.BinID) })
	return out, nil
}

func describeQty(q float64) string {
	if q == math.Trunc(q) {
		return fmt.Sprintf("%.0f", q)
	}
	return fmt.Sprintf("%.1f", q)
}
