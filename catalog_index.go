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
// its pointer in place; one that adds a level after the last keeps the order by appending;
// anything else (a level added in the middle, a deletion) marks the order stale, and the next
// read sorts again, once, under mu: reads of a tenant run in parallel (tenantRead).
type levelOrder struct {
	mu    sync.Mutex
	list  []*InventoryLevel
	stale bool
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
	switch {
	case old != nil && cur != nil && compareLevels(old, cur) == 0:
		if i, ok := slices.BinarySearchFunc(o.list, old, compareLevels); ok {
			o.list[i] = cur
			return
		}
	case old == nil && cur != nil && (len(o.list) == 0 || compareLevels(o.list[len(o.list)-1], cur) < 0):
		o.list = append(o.list, cur)
		return
	}
	o.stale, o.list = true, nil
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
		o.stale = false
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
