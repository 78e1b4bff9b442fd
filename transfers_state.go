package supplyplan

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// RejectionMemory is how long a rejected recommendation keeps the same move from being proposed
// again (unless the situation got worse).
const RejectionMemory = 14 * 24 * time.Hour

// UndatedPOLeadTime is when an open purchase order without expectedAt is assumed to arrive, after
// its creation, when its supplier has no lead time.
const UndatedPOLeadTime = 14 * 24 * time.Hour

// StockSnapshot collects, per product, every location's stock and inbound by week over the window
// (forecasts are filled in by the caller). Only products stocked at two or more locations can move.
// productRef and locationID restrict the products (to one product, or to those at that location).
func (s *TenantState) StockSnapshot(productRef, locationID string, weeks int, now time.Time) ([]ProductStock, error) {
	productID := ""
	if productRef != "" {
		p, ok := s.ProductBySKU(productRef)
		if !ok {
			return nil, Invalid("productMasterId", "unknown product %q", productRef)
		}
		productID = p.ID
	}
	if locationID != "" {
		if _, ok := s.Locations[locationID]; !ok {
			return nil, Invalid("locationId", "unknown location %q", locationID)
		}
	}
	byProduct := map[string][]LocationStock{}
	for _, l := range s.Inventory {
		if productID != "" && l.SKU != productID {
			continue
		}
		byProduct[l.SKU] = append(byProduct[l.SKU], LocationStock{LocationID: l.LocationID, OnHand: l.QuantityOnHand,
			Reserved: l.QuantityReserved, ReorderPoint: l.ReorderPoint, InboundByWeek: make([]float64, weeks)})
	}
	week0 := WeekStart(now)
	for _, po := range s.PurchaseOrders {
		if !po.Open() {
			continue
		}
		var at time.Time
		switch {
		case po.ExpectedAt != nil:
			at = *po.ExpectedAt
		default:
			lead := UndatedPOLeadTime
			if sp, ok := s.Suppliers[po.SupplierID]; ok && sp.LeadTimeDays != nil {
				lead = time.Duration(*sp.LeadTimeDays) * 24 * time.Hour
			}
			at = po.CreatedAt.Add(lead)
		}
		w := int(math.Floor(at.Sub(week0).Hours() / (24 * 7)))
		if w < 0 {
			w = 0 // overdue: expected any day now
		}
		if w >= weeks {
			continue
		}
		for _, line := range po.Lines {
			locs := byProduct[line.SKU]
			for i := range locs {
				if locs[i].LocationID == po.DestinationLocationID {
					locs[i].InboundByWeek[w] += line.Quantity
				}
			}
		}
	}
	out := make([]ProductStock, 0, len(byProduct))
	for pid, locs := range byProduct {
		if len(locs) < 2 {
			continue
		}
		if locationID != "" && !slices.ContainsFunc(locs, func(l LocationStock) bool { return l.LocationID == locationID }) {
			continue
		}
		slices.SortFunc(locs, func(a, b LocationStock) int { return cmp.Compare(a.LocationID, b.LocationID) })
		ps := ProductStock{ProductID: pid, Locations: locs}
		if p, ok := s.Products[pid]; ok && p.UnitPrice != nil && p.UnitCost != nil && *p.UnitPrice > *p.UnitCost {
			m := *p.UnitPrice - *p.UnitCost
			ps.PriceMargin = &m
		}
		out = append(out, ps)
	}
	slices.SortFunc(out, func(a, b ProductStock) int { return cmp.Compare(a.ProductID, b.ProductID) })
	return out, nil
}

type movePair struct{ product, src, dst string }

// ApplyProposals turns engine proposals into recommendations: a move that is already PENDING or
// APPROVED is not duplicated; a move rejected within RejectionMemory is proposed again only when
// the situation got worse (more urgent, or at least 25% more quantity). PENDING recommendations
// of the evaluated products that the engine no longer proposes expire (their justification is
// gone), as do those past their expiry.
func (s *TenantState) ApplyProposals(props []Proposal, evaluated map[string]bool, locationID string, expiry time.Duration, now time.Time) (GenerateResult, []Record) {
	res := GenerateResult{Created: []Recommendation{}, Products: len(evaluated)}
	open := map[movePair]bool{}
	rejected := map[movePair]*Recommendation{}
	for _, r := range s.Recommendations {
		k := movePair{r.ProductMasterID, r.SourceLocationID, r.DestLocationID}
		switch r.EffectiveStatus(now) {
		case RecPending, RecApproved:
			open[k] = true
		case RecRejected:
			if r.RejectedAt != nil && now.Sub(*r.RejectedAt) < RejectionMemory {
				if prev := rejected[k]; prev == nil || prev.RejectedAt.Before(*r.RejectedAt) {
					rejected[k] = r
				}
			}
		}
	}
	var recs []Record
	proposed := map[movePair]bool{}
	for _, p := range props {
		k := movePair{p.ProductID, p.Source, p.Dest}
		proposed[k] = true
		if open[k] {
			res.SkippedPending++
			continue
		}
		if prev := rejected[k]; prev != nil && !(p.Priority.rank() < prev.Priority.rank() || p.Quantity >= 1.25*prev.Quantity) {
			res.SkippedRejected++
			continue
		}
		e := p.Explanation
		r := Recommendation{ID: NewID("rec"), ProductMasterID: p.ProductID, SourceLocationID: p.Source, DestLocationID: p.Dest,
			Quantity: p.Quantity, Priority: p.Priority, Status: RecPending, Reason: p.Reason, EstimatedROI: p.ROI,
			Explanation: &e, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(expiry)}
		open[k] = true
		recs = append(recs, Put(KindRecommendation, r.ID, &r))
		res.Created = append(res.Created, r)
	}
	for _, r := range s.Recommendations {
		if r.Status != RecPending {
			continue
		}
		k := movePair{r.ProductMasterID, r.SourceLocationID, r.DestLocationID}
		var reason string
		switch {
		case !now.Before(r.ExpiresAt):
			reason = ExpiryTime
		case evaluated[r.ProductMasterID] && !proposed[k] && (locationID == "" || r.SourceLocationID == locationID || r.DestLocationID == locationID):
			reason = ExpiryJustification
		default:
			continue
		}
		if x, ok := r.Expire(reason, now); ok {
			recs = append(recs, Put(KindRecommendation, x.ID, &x))
			res.Expired++
		}
	}
	return res, recs
}

// ExpireDue records the time-based expiry of PENDING recommendations past expiresAt.
func (s *TenantState) ExpireDue(now time.Time) []Record {
	var recs []Record
	for _, r := range s.Recommendations {
		if r.Status == RecPending && !now.Before(r.ExpiresAt) {
			if x, ok := r.Expire(ExpiryTime, now); ok {
				recs = append(recs, Put(KindRecommendation, x.ID, &x))
			}
		}
	}
	return recs
}

// ListRecommendations filters recommendations (by effective status), most urgent then newest first.
func (s *TenantState) ListRecommendations(f RecommendationFilter, now time.Time) Page[Recommendation] {
	out := make([]Recommendation, 0)
	for _, r := range s.Recommendations {
		st := r.EffectiveStatus(now)
		if f.ValidOnly && st != RecPending && st != RecApproved {
			continue
		}
		if (f.Status != "" && st != f.Status) || (f.Priority != "" && r.Priority != f.Priority) ||
			(f.ProductMasterID != "" && r.ProductMasterID != f.ProductMasterID) ||
			(f.SourceLocationID != "" && r.SourceLocationID != f.SourceLocationID) ||
			(f.DestLocationID != "" && r.DestLocationID != f.DestLocationID) {
			continue
		}
		v := *r
		v.Status = st
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Recommendation) int {
		if c := cmp.Compare(a.Priority.rank(), b.Priority.rank()); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return page(out, f.Limit, f.Offset)
}

// GetRecommendation returns one recommendation with its effective status.
func (s *TenantState) GetRecommendation(id string, now time.Time) (Recommendation, error) {
	r, ok := s.Recommendations[id]
	if !ok {
		return Recommendation{}, NotFound("Recommendation")
	}
	v := *r
	v.Status = r.EffectiveStatus(now)
	return v, nil
}

// ChangeRecommendation applies approve or reject.
func (s *TenantState) ChangeRecommendation(id string, fn func(Recommendation) (Recommendation, error)) (Recommendation, []Record, error) {
	cur, ok := s.Recommendations[id]
	if !ok {
		return Recommendation{}, nil, NotFound("Recommendation")
	}
	r, err := fn(*cur)
	if err != nil {
		return Recommendation{}, nil, err
	}
	return r, []Record{Put(KindRecommendation, r.ID, &r)}, nil
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
