package actors

import (
	"context"
	"time"

	"github.com/supplyplan/supplyplan"
)

// Catalog is the read side of a tenant's catalog (products, locations, inventory, orders, kept by
// the tenant's actor) and of its demand history (kept by the demand store).
type Catalog struct {
	core   *Core
	demand supplyplan.DemandStore
}

// NewCatalog returns the catalog service.
func NewCatalog(core *Core, demand supplyplan.DemandStore) *Catalog {
	return &Catalog{core: core, demand: demand}
}

var (
	_ supplyplan.CatalogService = (*Catalog)(nil)
	_ supplyplan.DemandReader   = (*Catalog)(nil)
)

// ListProducts lists a tenant's products.
func (s *Catalog) ListProducts(ctx context.Context, p supplyplan.Principal, f supplyplan.ProductFilter) (supplyplan.Page[supplyplan.Product], error) {
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Page[supplyplan.Product], error) {
		return st.ListProducts(f), nil
	})
}

// GetProduct returns a product by id or sku.
func (s *Catalog) GetProduct(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.Product, error) {
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Product, error) {
		pr, err := st.GetProduct(id)
		return pr, err
	})
}

// ListLocations lists a tenant's locations.
func (s *Catalog) ListLocations(ctx context.Context, p supplyplan.Principal, f supplyplan.LocationFilter) (supplyplan.Page[supplyplan.Location], error) {
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Page[supplyplan.Location], error) {
		return st.ListLocations(f), nil
	})
}

// ListInventory lists inventory levels.
func (s *Catalog) ListInventory(ctx context.Context, p supplyplan.Principal, f supplyplan.InventoryFilter) (supplyplan.Page[supplyplan.InventoryLevel], error) {
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Page[supplyplan.InventoryLevel], error) {
		return st.ListInventory(f), nil
	})
}

// Availability returns a product's stock picture per location.
func (s *Catalog) Availability(ctx context.Context, p supplyplan.Principal, sku string, locationIDs []string) ([]supplyplan.Availability, error) {
	now := time.Now().UTC()
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.Availability, error) {
		a, err := st.Availability(sku, locationIDs, now)
		return a, err
	})
}

// GetOrder returns an order by its external id.
func (s *Catalog) GetOrder(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.Order, error) {
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Order, error) {
		o, err := st.GetOrder(id)
		return o, err
	})
}

// DemandHistory returns one weekly series. The product may be named by id or sku; the product and
// location must exist in the tenant.
func (s *Catalog) DemandHistory(ctx context.Context, p supplyplan.Principal, key supplyplan.DemandKey, from, to time.Time) ([]supplyplan.WeekValue, error) {
	resolved, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.DemandKey, []supplyplan.Record, error) {
		fe := supplyplan.FieldErrors{}
		k := key
		if pr, ok := st.ProductBySKU(key.SKU); ok {
			k.SKU = pr.ID
		} else {
			fe.Add("skuId", "unknown product %q", key.SKU)
		}
		if _, ok := st.Locations[key.Location]; !ok {
			fe.Add("locationId", "unknown location %q", key.Location)
		}
		return k, nil, fe.Err()
	})
	if err != nil {
		return nil, err
	}
	if s.demand == nil {
		return nil, supplyplan.Errorf(supplyplan.EUNAVAILABLE, "No demand store configured")
	}
	return s.demand.Series(ctx, p.OrgID, resolved, from, to)
}
