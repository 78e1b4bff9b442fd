package supplyplan

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"
)

// ATPHorizon is how far ahead open purchase orders count toward available-to-promise.
const ATPHorizon = 14 * 24 * time.Hour

// UndatedPOLeadTime is when an open purchase order without expectedAt is assumed to arrive, after
// its creation, when its supplier has no lead time.
const UndatedPOLeadTime = 14 * 24 * time.Hour

// Inbound returns, per location, the open purchase-order quantity of a product, and the part due
// before the ATP horizon.
func (s *CatalogState) Inbound(productID string, now time.Time) (total, due map[string]float64) {
	total, due = map[string]float64{}, map[string]float64{}
	for _, po := range s.PurchaseOrders {
		if !po.Open() {
			continue
		}
		for _, l := range po.Lines {
			if l.SKU != productID {
				continue
			}
			total[po.DestinationLocationID] += l.Quantity
			if po.ExpectedAt != nil && !po.ExpectedAt.After(now.Add(ATPHorizon)) {
				due[po.DestinationLocationID] += l.Quantity
			}
		}
	}
	return total, due
}

// Availability returns the stock picture of a product at the given locations (every location that
// holds or expects it when none are given).
func (s *CatalogState) Availability(ref string, locationIDs []string, now time.Time) ([]Availability, error) {
	p, ok := s.ProductBySKU(ref)
	if !ok {
		return nil, NotFound("Product")
	}
	inbound, due := s.Inbound(p.ID, now)
	locs := slices.Clone(locationIDs)
	if len(locs) == 0 {
		seen := map[string]bool{}
		for _, l := range s.Inventory {
			if l.SKU == p.ID {
				seen[l.LocationID] = true
			}
		}
		for loc := range inbound {
			seen[loc] = true
		}
		for loc := range seen {
			locs = append(locs, loc)
		}
	}
	slices.Sort(locs)
	out := make([]Availability, 0, len(locs))
	for _, loc := range locs {
		if _, ok := s.Locations[loc]; !ok {
			return nil, NotFound("Location")
		}
		a := Availability{SKU: p.ID, LocationID: loc, Inbound: inbound[loc]}
		if l, ok := s.Inventory[InventoryKey(p.ID, loc)]; ok {
			a.OnHand, a.Reserved, a.ReorderPoint = l.QuantityOnHand, l.QuantityReserved, l.ReorderPoint
		}
		a.Available = a.OnHand - a.Reserved
		a.ATP = a.Available + due[loc]
		out = append(out, a)
	}
	return out, nil
}

// levelCopy returns a copy of the level of product at loc that can be changed and stored.
func (s *CatalogState) levelCopy(productID, loc string, now time.Time) InventoryLevel {
	if cur, ok := s.Inventory[InventoryKey(productID, loc)]; ok {
		l := *cur
		l.Bins = cloneBins(cur.Bins)
		l.Lots = slices.Clone(cur.Lots)
		return l
	}
	return InventoryLevel{SKU: productID, LocationID: loc, Bins: map[string]float64{}, UpdatedAt: now}
}

// Bins lists the bins of a location with what they hold (optionally of one product). Stock imported
// without a bin sits in the DEFAULT bin; a location without stock has one empty DEFAULT bin.
func (s *CatalogState) Bins(locationID, sku string) ([]Bin, error) {
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
	levels := maps.Values(s.Inventory)
	if productID != "" { // one product at one location: one level at most, not a pass over every level
		levels = func(yield func(*InventoryLevel) bool) {
			if l, ok := s.Inventory[InventoryKey(productID, locationID)]; ok {
				yield(l)
			}
		}
	}
	for l := range levels {
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

// StockSnapshot collects, per product, every location's stock and inbound by week over the window
// (forecasts are filled in by the caller). Only products stocked at two or more locations can move.
// productRef and locationID restrict the products (to one product, or to those at that location).
func (s *CatalogState) StockSnapshot(productRef, locationID string, weeks int, now time.Time) ([]ProductStock, error) {
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
			Reserved: l.QuantityReserved, ReorderPoint: l.ReorderPoint})
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
					if locs[i].InboundByWeek == nil { // only a level with inbound stock has weeks of it
						locs[i].InboundByWeek = make([]float64, weeks)
					}
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

// LeadTimes returns, per product id, the longest lead time of the suppliers of its open or past
// purchase orders (products without one use the default).
func (s *CatalogState) LeadTimes() map[string]int {
	out := map[string]int{}
	for _, po := range s.PurchaseOrders {
		sp, ok := s.Suppliers[po.SupplierID]
		if !ok || sp.LeadTimeDays == nil {
			continue
		}
		for _, l := range po.Lines {
			out[l.SKU] = max(out[l.SKU], *sp.LeadTimeDays)
		}
	}
	return out
}

// InboundWithin returns the open purchase-order quantity per inventory key expected by deadline
// given per product (orders without an expected date do not count).
func (s *CatalogState) InboundWithin(deadline func(productID string) time.Time) map[string]float64 {
	out := map[string]float64{}
	for _, po := range s.PurchaseOrders {
		if !po.Open() || po.ExpectedAt == nil {
			continue
		}
		for _, l := range po.Lines {
			if !po.ExpectedAt.After(deadline(l.SKU)) {
				out[InventoryKey(l.SKU, po.DestinationLocationID)] += l.Quantity
			}
		}
	}
	return out
}
