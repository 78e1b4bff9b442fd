package supplyplan

import (
	"math"
	"slices"
	"strings"
	"time"
)

// The transfer operations that change stock as well: they read and write both the catalog's stock
// levels (CatalogState) and the transfers (TransfersState).

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
	// What the source's orders hold in the reservation ledger is not available to move.
	if avail := src.Available() - s.ReservedAt(t.ProductMasterID, t.SourceLocationID, now); avail < t.Quantity {
		return Transfer{}, nil, Invalid("quantity", "exceeds the %g available at %s", math.Max(avail, 0), t.SourceLocationID)
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

// ExecuteRecommendation moves an APPROVED recommendation to EXECUTED and creates its inventory
// transfer (DRAFT: the quantity is reserved at the source, out of its available stock).
func (s *TenantState) ExecuteRecommendation(id, by, comment string, now time.Time) (Recommendation, Transfer, []Record, error) {
	cur, ok := s.Recommendations[id]
	if !ok {
		return Recommendation{}, Transfer{}, nil, NotFound("Recommendation")
	}
	if st := cur.EffectiveStatus(now); st != RecApproved {
		return Recommendation{}, Transfer{}, nil, Conflict("Recommendation is %s; only an APPROVED recommendation can be executed", st)
	}
	t, recs, err := s.newTransfer(Transfer{ID: NewID("trf"), ProductMasterID: cur.ProductMasterID, SourceLocationID: cur.SourceLocationID,
		DestLocationID: cur.DestLocationID, Quantity: cur.Quantity, RecommendationID: cur.ID, Notes: comment}, by, now)
	if err != nil {
		if e, ok := err.(*Error); ok && e.Code == EVALIDATION {
			return Recommendation{}, Transfer{}, nil, Conflict("The source can no longer supply this transfer: %s", e.Error())
		}
		return Recommendation{}, Transfer{}, nil, err
	}
	r := *cur
	r.Status, r.ExecutedAt, r.ExecutedBy, r.TransferID, r.UpdatedAt = RecExecuted, &now, by, t.ID, now
	if comment != "" {
		r.Comment = comment
	}
	return r, t, append(recs, Put(KindRecommendation, r.ID, &r)), nil
}
