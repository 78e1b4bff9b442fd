package supplyplan

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Page limits of the read APIs (the spec's list limits).
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 100
)

// ATPHorizon is how far ahead open purchase orders count toward available-to-promise.
const ATPHorizon = 14 * 24 * time.Hour

func page[T any](all []T, limit, offset int) Page[T] {
	if limit <= 0 {
		limit = DefaultPageLimit
	}
	p := Page[T]{Total: len(all), Limit: limit, Offset: offset, Items: []T{}}
	if offset < len(all) {
		end := min(offset+limit, len(all))
		p.Items = all[offset:end]
	}
	return p
}

// ListProducts returns products by id, filtered.
func (s *TenantState) ListProducts(f ProductFilter) Page[Product] {
	q := strings.ToLower(f.Query)
	out := make([]Product, 0, len(s.Products))
	for _, p := range s.Products {
		if f.CategoryID != "" && p.CategoryID != f.CategoryID {
			continue
		}
		if q != "" && !strings.Contains(strings.ToLower(p.ID), q) && !strings.Contains(strings.ToLower(p.SKU), q) &&
			!strings.Contains(strings.ToLower(p.Name), q) {
			continue
		}
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Product) int { return cmp.Compare(a.ID, b.ID) })
	return page(out, f.Limit, f.Offset)
}

// GetProduct returns a product by id or sku.
func (s *TenantState) GetProduct(ref string) (Product, error) {
	p, ok := s.ProductBySKU(ref)
	if !ok {
		return Product{}, NotFound("Product")
	}
	return *p, nil
}

// ListLocations returns locations by id.
func (s *TenantState) ListLocations(f LocationFilter) Page[Location] {
	q := strings.ToLower(f.Query)
	out := make([]Location, 0, len(s.Locations))
	for _, l := range s.Locations {
		if q != "" && !strings.Contains(strings.ToLower(l.ID), q) && !strings.Contains(strings.ToLower(l.Name), q) {
			continue
		}
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b Location) int { return cmp.Compare(a.ID, b.ID) })
	return page(out, f.Limit, f.Offset)
}

// ListInventory returns levels by product then location.
func (s *TenantState) ListInventory(f InventoryFilter) Page[InventoryLevel] {
	sku := f.SKU
	if p, ok := s.ProductBySKU(sku); ok {
		sku = p.ID
	}
	out := make([]InventoryLevel, 0)
	for _, l := range s.Inventory {
		if (sku != "" && l.SKU != sku) || (f.LocationID != "" && l.LocationID != f.LocationID) {
			continue
		}
		if f.BelowReorder && l.Available() >= l.ReorderPoint {
			continue
		}
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b InventoryLevel) int {
		if c := cmp.Compare(a.SKU, b.SKU); c != 0 {
			return c
		}
		return cmp.Compare(a.LocationID, b.LocationID)
	})
	return page(out, f.Limit, f.Offset)
}

// Inbound returns, per location, the open purchase-order quantity of a product, and the part due
// before the ATP horizon.
func (s *TenantState) Inbound(productID string, now time.Time) (total, due map[string]float64) {
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
func (s *TenantState) Availability(ref string, locationIDs []string, now time.Time) ([]Availability, error) {
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

// GetOrder returns an order by its external id.
func (s *TenantState) GetOrder(id string) (Order, error) {
	o, ok := s.Orders[id]
	if !ok {
		return Order{}, NotFound("Order")
	}
	return *o, nil
}

// GetImportJob returns a job.
func (s *TenantState) GetImportJob(id string) (ImportJob, error) {
	j, ok := s.ImportJobs[id]
	if !ok {
		return ImportJob{}, NotFound("Import job")
	}
	return *j, nil
}
