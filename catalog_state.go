package supplyplan

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync/atomic"
)

// Record kinds of the catalog.
const (
	KindProduct       = "product"
	KindLocation      = "location"
	KindInventory     = "inventory"
	KindSupplier      = "supplier"
	KindPurchaseOrder = "po"
	KindOrder         = "order"
)

func init() {
	RegisterKind(KindProduct, func() any { return new(Product) })
	RegisterKind(KindLocation, func() any { return new(Location) })
	RegisterKind(KindInventory, func() any { return new(InventoryLevel) })
	RegisterKind(KindSupplier, func() any { return new(Supplier) })
	RegisterKind(KindPurchaseOrder, func() any { return new(PurchaseOrder) })
	RegisterKind(KindOrder, func() any { return new(Order) })
}

// InventoryKey is the key of a product's level at a location.
func InventoryKey(productID, locationID string) string { return productID + "\x00" + locationID }

// CatalogState is the tenant's catalog and stock: products, locations, stock levels, suppliers,
// purchase orders and orders (sub-state of TenantState). Its stock reads are in catalog_stock.go,
// its bulk imports in import_apply.go.
type CatalogState struct {
	Products       map[string]*Product        `json:"products"`
	Locations      map[string]*Location       `json:"locations"`
	Inventory      map[string]*InventoryLevel `json:"inventory"`
	Suppliers      map[string]*Supplier       `json:"suppliers"`
	PurchaseOrders map[string]*PurchaseOrder  `json:"purchaseOrders"`
	Orders         map[string]*Order          `json:"orders"`

	skuIndex map[string]string // product sku -> product id (derived, rebuilt on load)
	levels   *levelOrder       // Inventory by product then location (derived, catalog_index.go)
	// quarantined are the stored numbers left out since takeQuarantined last ran (quarantine.go).
	quarantined []QuarantinedValue
}

// init makes every map non-nil and rebuilds the sku index.
func (s *CatalogState) init() {
	initMap(&s.Products)
	initMap(&s.Locations)
	initMap(&s.Inventory)
	initMap(&s.Suppliers)
	initMap(&s.PurchaseOrders)
	initMap(&s.Orders)
	s.skuIndex = make(map[string]string, len(s.Products))
	for id, p := range s.Products {
		s.skuIndex[p.SKU] = id
	}
	s.levels = &levelOrder{stale: true}
}

// initMap makes *m non-nil.
func initMap[T any](m *map[string]*T) {
	if *m == nil {
		*m = map[string]*T{}
	}
}

// Apply stores one catalog record, after quarantining the numbers out of bounds in its value.
func (s *CatalogState) Apply(r Record) error {
	if !r.Del && r.Value != nil {
		quarantine(r.Kind, r.ID, r.Value, &s.quarantined)
	}
	switch r.Kind {
	case KindProduct:
		old, existed := s.Products[r.ID]
		if err := putValue(s.Products, r); err != nil {
			return err
		}
		if existed && s.skuIndex[old.SKU] == r.ID {
			delete(s.skuIndex, old.SKU)
		}
		if p, ok := s.Products[r.ID]; ok {
			s.skuIndex[p.SKU] = r.ID
		}
		return nil
	case KindLocation:
		return putValue(s.Locations, r)
	case KindInventory:
		old := s.Inventory[r.ID]
		if err := putValue(s.Inventory, r); err != nil {
			return err
		}
		cur := s.Inventory[r.ID]
		if cur != nil {
			s.shareLevel(cur)
		}
		s.levels.update(old, cur)
		return nil
	case KindSupplier:
		return putValue(s.Suppliers, r)
	case KindPurchaseOrder:
		return putValue(s.PurchaseOrders, r)
	case KindOrder:
		return putValue(s.Orders, r)
	}
	return unknownKind("catalog state", r)
}

// quarantineAll cleans every record of a decoded snapshot.
func (s *CatalogState) quarantineAll() {
	for id, v := range s.Products {
		quarantine(KindProduct, id, v, &s.quarantined)
	}
	for id, v := range s.Inventory {
		quarantine(KindInventory, id, v, &s.quarantined)
	}
	for id, v := range s.PurchaseOrders {
		quarantine(KindPurchaseOrder, id, v, &s.quarantined)
	}
	for id, v := range s.Orders {
		quarantine(KindOrder, id, v, &s.quarantined)
	}
}

// shareLevel makes a stored level share what it can with the rest of the state (a tenant holds
// millions of levels, docs/decisions.md): its product and location ids become the strings of the
// product and the location, and bins holding everything in the default bin become the one map of
// that quantity (sharedDefaultBins). The level is the record's value, fresh for this write.
func (s *CatalogState) shareLevel(l *InventoryLevel) {
	if p, ok := s.Products[l.SKU]; ok {
		l.SKU = p.ID
	}
	if loc, ok := s.Locations[l.LocationID]; ok {
		l.LocationID = loc.ID
	}
	l.Bins = shareBins(l.Bins)
}

// shareAll shares what the levels of a decoded snapshot can share.
func (s *CatalogState) shareAll() {
	for _, l := range s.Inventory {
		s.shareLevel(l)
	}
}

// maxSharedBin bounds the quantities whose default-bin map is shared: whole units below it.
const maxSharedBin = 1 << 16

// defaultBinMaps holds, per whole quantity q, the map {DEFAULT: q}, made on first use. Every
// level imported without a bin has such a map; a Go map of one entry takes about 250 bytes, more
// than the rest of the level.
var defaultBinMaps [maxSharedBin]atomic.Pointer[map[string]float64]

// shareBins returns the shared map with the same content as b when there is one, else b. Stored
// values are never changed in place (TenantState), so a shared map is never written: a change
// starts from a copy (cloneBins).
func shareBins(b map[string]float64) map[string]float64 {
	if len(b) != 1 {
		return b
	}
	q, ok := b[DefaultBin]
	if !ok || q < 0 || q >= maxSharedBin || q != math.Trunc(q) || (q == 0 && math.Signbit(q)) {
		return b
	}
	slot := &defaultBinMaps[int(q)]
	if m := slot.Load(); m != nil {
		return *m
	}
	m := map[string]float64{DefaultBin: q}
	slot.CompareAndSwap(nil, &m)
	return *slot.Load()
}

// takeQuarantined returns the values quarantined since the last call, and forgets them.
func (s *CatalogState) takeQuarantined() []QuarantinedValue {
	q := s.quarantined
	s.quarantined = nil
	return q
}

// ProductBySKU finds a product by id, or else by sku.
func (s *CatalogState) ProductBySKU(ref string) (*Product, bool) {
	if p, ok := s.Products[ref]; ok {
		return p, true
	}
	if id, ok := s.skuIndex[ref]; ok {
		return s.Products[id], true
	}
	return nil, false
}

// Page limits of the read APIs (the spec's list limits).
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 100
)

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

// SortedWindow returns the elements at positions [offset, offset+limit) of all in the order of cmp
// (a total order). all is reordered. A window near the start (the first pages of a list) is
// selected with a bounded heap, O(n log k), rather than by sorting all n elements.
func SortedWindow[T any](all []T, cmp func(a, b T) int, offset, limit int) []T {
	offset = max(offset, 0)
	k := offset + max(limit, 0)
	if k >= len(all)/4 {
		slices.SortFunc(all, cmp)
		return all[min(offset, len(all)):min(k, len(all))]
	}
	// h is a max-heap (by cmp) of the k smallest elements seen so far.
	h := make([]T, 0, k)
	down := func(i int) {
		for {
			l, big := 2*i+1, i
			if l < len(h) && cmp(h[l], h[big]) > 0 {
				big = l
			}
			if r := l + 1; r < len(h) && cmp(h[r], h[big]) > 0 {
				big = r
			}
			if big == i {
				return
			}
			h[i], h[big] = h[big], h[i]
			i = big
		}
	}
	for _, x := range all {
		switch {
		case len(h) < k:
			h = append(h, x)
			for i := len(h) - 1; i > 0; {
				parent := (i - 1) / 2
				if cmp(h[i], h[parent]) <= 0 {
					break
				}
				h[i], h[parent] = h[parent], h[i]
				i = parent
			}
		case k > 0 && cmp(x, h[0]) < 0:
			h[0] = x
			down(0)
		}
	}
	slices.SortFunc(h, cmp)
	return h[min(offset, len(h)):]
}

// ListProducts returns products by id, filtered.
func (s *CatalogState) ListProducts(f ProductFilter) Page[Product] {
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
func (s *CatalogState) GetProduct(ref string) (Product, error) {
	p, ok := s.ProductBySKU(ref)
	if !ok {
		return Product{}, NotFound("Product")
	}
	return *p, nil
}

// ListLocations returns locations by id.
func (s *CatalogState) ListLocations(f LocationFilter) Page[Location] {
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

// GetOrder returns an order by its external id.
func (s *CatalogState) GetOrder(id string) (Order, error) {
	o, ok := s.Orders[id]
	if !ok {
		return Order{}, NotFound("Order")
	}
	return *o, nil
}
