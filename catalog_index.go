package supplyplan

import (
	"cmp"
	"slices"
	"sync"
)

// levelOrder is a tenant's stock levels sorted by product then location (derived), so that a
// page of the inventory list (GET /api/inventory, the console's inventory screen) costs the page
// rather than a pass over and a selection among every level: a tenant of 50,000 levels is paged
// on every render. A write that keeps a level's place (a stock change, the usual write) replaces
// its pointer in place; a level added or deleted shifts the order, until the shifts since the
// last sort add up to a few times the order's length (a bulk import in no order): then the order
// is marked stale and the next read sorts it again, once, under mu (reads of a tenant run in
// parallel, tenantRead).
type levelOrder struct {
	mu    sync.Mutex
	list  []*InventoryLevel
	stale bool
	moved int // elements shifted since the last sort
}

func compareLevels(a, b *InventoryLevel) int {
	if c := cmp.Compare(a.SKU, b.SKU); c != 0 {
		return c
	}
	return cmp.Compare(a.LocationID, b.LocationID)
}

// update follows a level's write from old (nil: new) to cur (nil: deleted).
func (o *levelOrder) update(old, cur *InventoryLevel) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stale {
		return
	}
	if old != nil && cur != nil && compareLevels(old, cur) == 0 {
		if i, ok := slices.BinarySearchFunc(o.list, old, compareLevels); ok {
			o.list[i] = cur
			return
		}
		o.stale, o.list = true, nil
		return
	}
	if old != nil {
		i, ok := slices.BinarySearchFunc(o.list, old, compareLevels)
		if !ok {
			o.stale, o.list = true, nil
			return
		}
		if o.shift(len(o.list) - i) {
			o.list = slices.Delete(o.list, i, i+1)
		}
	}
	if cur != nil && !o.stale {
		if i, ok := slices.BinarySearchFunc(o.list, cur, compareLevels); ok {
			o.list[i] = cur
		} else if o.shift(len(o.list) - i) {
			o.list = slices.Insert(o.list, i, cur)
		}
	}
}

// shift accounts for moving n elements, or marks the order stale when the shifts since the last
// sort would exceed 4 times its length.
func (o *levelOrder) shift(n int) bool {
	if o.moved+n > 4*len(o.list)+1024 {
		o.stale, o.list = true, nil
		return false
	}
	o.moved += n
	return true
}

// sorted returns the levels in order, sorting them first when the order is stale. The caller
// holds the state for reading; the slice must not be kept.
func (o *levelOrder) sorted(all map[string]*InventoryLevel) []*InventoryLevel {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stale {
		o.list = make([]*InventoryLevel, 0, len(all))
		for _, l := range all {
			o.list = append(o.list, l)
		}
		slices.SortFunc(o.list, compareLevels)
		o.stale, o.moved = false, 0
	}
	return o.list
}

// ListInventory returns levels by product then location.
func (s *CatalogState) ListInventory(f InventoryFilter) Page[InventoryLevel] {
	sku := f.SKU
	if p, ok := s.ProductBySKU(sku); ok {
		sku = p.ID
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultPageLimit
	}
	all := s.levels.sorted(s.Inventory)
	if sku != "" { // one product's levels are adjacent
		lo, _ := slices.BinarySearchFunc(all, sku, func(l *InventoryLevel, sku string) int { return cmp.Compare(l.SKU, sku) })
		hi := lo
		for hi < len(all) && all[hi].SKU == sku {
			hi++
		}
		all = all[lo:hi]
	}
	out := Page[InventoryLevel]{Items: []InventoryLevel{}, Limit: limit, Offset: f.Offset}
	start := max(f.Offset, 0)
	if f.LocationID == "" && !f.BelowReorder {
		out.Total = len(all)
		for _, l := range all[min(start, len(all)):min(start+limit, len(all))] {
			out.Items = append(out.Items, *l)
		}
		return out
	}
	for _, l := range all {
		if (f.LocationID != "" && l.LocationID != f.LocationID) || (f.BelowReorder && l.Available() >= l.ReorderPoint) {
			continue
		}
		if out.Total >= start && out.Total < start+limit {
			out.Items = append(out.Items, *l)
		}
		out.Total++
	}
	return out
}
