package supplyplan

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// DecodedRows are the rows of one chunk of an import, decoded (outside the tenant actor, by
// internal/importjson) but not yet checked against the tenant's state: the input of ApplyImport.
// Index[i] is the 0-based request row of the i-th row.
type DecodedRows struct {
	Kind           ImportKind
	Index          []int
	Catalog        []CatalogRow
	Inventory      []InventoryRow
	Suppliers      []SupplierRow
	PurchaseOrders []PurchaseOrderRow
	Orders         []OrderRow
	Demand         []DemandHistoryRow
	Errors         []RowError
	// DemandOut is room for ApplyImport's resolved demand rows (reused memory, may be nil), and
	// Scratch the decoder's memory behind the rows (importjson.Release hands both back).
	DemandOut []DemandRow
	Scratch   any
}

// ImportResult is what applying a chunk produced.
type ImportResult struct {
	Records []Record
	Errors  []RowError
	Applied int
	// Demand holds the resolved rows of a demand-history chunk; they go to the demand store.
	Demand []DemandRow
}

// overlay tracks entities created or changed earlier in the same chunk, before their records apply.
type overlay struct {
	s         *CatalogState
	orgID     string // locations created by an inventory row are coded <orgId>-<id>
	products  map[string]*Product
	skus      map[string]string
	locations map[string]*Location
	levels    map[string]*InventoryLevel
	suppliers map[string]*Supplier
	orders    map[string]*Order // orders written earlier in the chunk (their versions)
}

func (o *overlay) product(ref string) (*Product, bool) {
	if p, ok := o.products[ref]; ok {
		return p, true
	}
	if id, ok := o.skus[ref]; ok {
		return o.products[id], true
	}
	return o.s.ProductBySKU(ref)
}

func (o *overlay) location(id string) (*Location, bool) {
	if l, ok := o.locations[id]; ok {
		return l, true
	}
	l, ok := o.s.Locations[id]
	return l, ok
}

func (o *overlay) supplier(id string) bool {
	if _, ok := o.suppliers[id]; ok {
		return true
	}
	_, ok := o.s.Suppliers[id]
	return ok
}

// ApplyImport checks decoded rows against the state and returns the records applying the valid
// ones. Imports are upserts keyed by the caller's ids, so applying a chunk twice (a job resumed
// after a crash) leaves the same state as applying it once.
func (s *TenantState) ApplyImport(d DecodedRows, now time.Time) ImportResult {
	return s.CatalogState.applyImport(s.OrgID, d, now)
}

// applyImport is ApplyImport: every import writes to the catalog.
func (s *CatalogState) applyImport(orgID string, d DecodedRows, now time.Time) ImportResult {
	o := &overlay{s: s, orgID: orgID, products: map[string]*Product{}, skus: map[string]string{}, locations: map[string]*Location{},
		levels: map[string]*InventoryLevel{}, suppliers: map[string]*Supplier{}, orders: map[string]*Order{}}
	res := ImportResult{Errors: slices.Clone(d.Errors)}
	reject := func(e *RowError) { res.Errors = append(res.Errors, *e) }
	switch d.Kind {
	case ImportCatalog:
		for i, row := range d.Catalog {
			if e := s.applyCatalogRow(o, d.Index[i], row, now, &res); e != nil {
				reject(e)
			}
		}
	case ImportInventory:
		for i, row := range d.Inventory {
			if e := s.applyInventoryRow(o, d.Index[i], row, now, &res); e != nil {
				reject(e)
			}
		}
	case ImportSuppliers:
		for i, row := range d.Suppliers {
			if e := s.applySupplierRow(o, d.Index[i], row, now, &res); e != nil {
				reject(e)
			}
		}
	case ImportPurchaseOrders:
		for i, row := range d.PurchaseOrders {
			if e := s.applyPORow(o, d.Index[i], row, now, &res); e != nil {
				reject(e)
			}
		}
	case ImportOrders:
		for i, row := range d.Orders {
			if e := s.applyOrderRow(o, d.Index[i], row, now, &res); e != nil {
				reject(e)
			}
		}
	case ImportDemandHistory:
		res.Demand = slices.Grow(d.DemandOut[:0], len(d.Demand))
		for i, row := range d.Demand {
			dr, e := s.resolveDemandRow(o, d.Index[i], row)
			if e != nil {
				reject(e)
				continue
			}
			res.Demand = append(res.Demand, dr)
			res.Applied++
		}
	}
	slices.SortFunc(res.Errors, func(a, b RowError) int { return a.Row - b.Row })
	return res
}

func (s *CatalogState) applyCatalogRow(o *overlay, i int, row CatalogRow, now time.Time, res *ImportResult) *RowError {
	if e := firstErr(required(i, "externalId", row.ExternalID), nonNegative(i, "unitCost", row.UnitCost),
		nonNegative(i, "unitPrice", row.UnitPrice)); e != nil {
		return e
	}
	if row.ShelfLifeDays != nil && (*row.ShelfLifeDays < 0 || *row.ShelfLifeDays > MaxShelfLifeDays) {
		return &RowError{Row: i, Field: "shelfLifeDays", Code: RowInvalidValue, Message: fmt.Sprintf("shelfLifeDays must be between 0 and %d", MaxShelfLifeDays)}
	}
	id := val(row.ExternalID)
	var p Product
	if cur, ok := o.products[id]; ok {
		p = *cur
	} else if cur, ok := s.Products[id]; ok {
		p = *cur
	} else {
		p = Product{ID: id, ExternalID: id, Name: id, SKU: id, CreatedAt: now}
	}
	if row.Name != nil && val(row.Name) != "" {
		p.Name = val(row.Name)
	}
	if row.SKU != nil && val(row.SKU) != "" {
		sku := val(row.SKU)
		if owner, ok := o.skus[sku]; ok && owner != id {
			return &RowError{Row: i, Field: "sku", Code: RowInvalidValue, Message: fmt.Sprintf("sku %q is already used by product %q", sku, owner)}
		}
		if owner, ok := s.skuIndex[sku]; ok && owner != id {
			return &RowError{Row: i, Field: "sku", Code: RowInvalidValue, Message: fmt.Sprintf("sku %q is already used by product %q", sku, owner)}
		}
		p.SKU = sku
	}
	if row.CategoryID != nil {
		p.CategoryID = val(row.CategoryID)
	}
	if row.UnitCost != nil {
		v := *row.UnitCost
		p.UnitCost = &v
	}
	if row.UnitPrice != nil {
		v := *row.UnitPrice
		p.UnitPrice = &v
	}
	if row.ShelfLifeDays != nil {
		v := *row.ShelfLifeDays
		p.ShelfLifeDays = &v
	}
	p.UpdatedAt = now
	o.products[id] = &p
	o.skus[p.SKU] = id
	res.Records = append(res.Records, Put(KindProduct, id, &p))
	res.Applied++
	return nil
}

func (s *CatalogState) applyInventoryRow(o *overlay, i int, row InventoryRow, now time.Time, res *ImportResult) *RowError {
	if e := firstErr(required(i, "skuId", row.SKU), required(i, "locationId", row.LocationID),
		nonNegative(i, "quantityOnHand", row.QuantityOnHand), nonNegative(i, "quantityReserved", row.QuantityReserved),
		nonNegative(i, "reorderPoint", row.ReorderPoint)); e != nil {
		return e
	}
	p, ok := o.product(val(row.SKU))
	if !ok {
		return &RowError{Row: i, Field: "skuId", Code: RowUnknownProduct, Message: fmt.Sprintf("unknown product %q: import it in the catalog first", val(row.SKU))}
	}
	var lots []Lot
	for j, l := range row.Lots {
		f := fmt.Sprintf("lots[%d]", j)
		if e := firstErr(required(i, f+".lotId", l.LotID), nonNegative(i, f+".quantity", l.Quantity)); e != nil {
			return e
		}
		exp, e := parseRowTime(i, f+".expiresAt", l.ExpiresAt)
		if e != nil {
			return e
		}
		lots = append(lots, Lot{LotID: val(l.LotID), Quantity: num(l.Quantity, 0), ExpiresAt: exp})
	}
	locID := val(row.LocationID)
	loc, exists := o.location(locID)
	if !exists || (row.LocationName != nil && val(row.LocationName) != "" && val(row.LocationName) != loc.Name) {
		nl := Location{ID: locID, Name: locID, Code: o.orgID + "-" + locID, CreatedAt: now}
		if exists {
			nl = *loc
		}
		if row.LocationName != nil && val(row.LocationName) != "" {
			nl.Name = val(row.LocationName)
		}
		nl.UpdatedAt = now
		o.locations[locID] = &nl
		res.Records = append(res.Records, Put(KindLocation, locID, &nl))
	}
	key := InventoryKey(p.ID, locID)
	var lvl InventoryLevel
	if cur, ok := o.levels[key]; ok {
		lvl = *cur
	} else if cur, ok := s.Inventory[key]; ok {
		lvl = *cur
		lvl.Bins = cloneBins(cur.Bins)
	} else {
		lvl = InventoryLevel{SKU: p.ID, LocationID: locID}
	}
	bin := val(row.BinID)
	switch {
	case bin != "":
		// A row with a bin sets that bin; the level's on-hand is the sum of its bins.
		if lvl.Bins == nil {
			lvl.Bins = map[string]float64{}
		}
		delete(lvl.Bins, DefaultBin) // binned rows replace the default bin of unbinned stock
		if row.QuantityOnHand != nil {
			lvl.Bins[bin] = *row.QuantityOnHand
		}
		lvl.QuantityOnHand = sumBins(lvl.Bins)
		if !StoredOK(lvl.QuantityOnHand) {
			return &RowError{Row: i, Field: "quantityOnHand", Code: RowInvalidValue,
				Message: fmt.Sprintf("quantityOnHand would take the bins of %s at %s above %g in total", p.ID, locID, float64(MaxStored))}
		}
	default:
		lvl.QuantityOnHand = num(row.QuantityOnHand, 0)
		lvl.Bins = map[string]float64{DefaultBin: lvl.QuantityOnHand}
	}
	lvl.QuantityReserved = num(row.QuantityReserved, lvl.QuantityReserved)
	if row.QuantityReserved == nil && bin == "" {
		lvl.QuantityReserved = 0
	}
	if row.ReorderPoint != nil || bin == "" {
		lvl.ReorderPoint = num(row.ReorderPoint, 0)
	}
	if row.Lots != nil {
		lvl.Lots = lots
	}
	lvl.UpdatedAt = now
	o.levels[key] = &lvl
	res.Records = append(res.Records, Put(KindInventory, key, &lvl))
	res.Applied++
	return nil
}

func cloneBins(b map[string]float64) map[string]float64 {
	if b == nil {
		return nil
	}
	out := make(map[string]float64, len(b))
	for k, v := range b {
		out[k] = v
	}
	return out
}

func sumBins(b map[string]float64) float64 {
	var t float64
	for _, v := range b {
		t += v
	}
	return t
}

func (s *CatalogState) applySupplierRow(o *overlay, i int, row SupplierRow, now time.Time, res *ImportResult) *RowError {
	if e := required(i, "externalId", row.ExternalID); e != nil {
		return e
	}
	if row.LeadTimeDays != nil && (*row.LeadTimeDays < 0 || *row.LeadTimeDays > 3650) {
		return &RowError{Row: i, Field: "leadTimeDays", Code: RowInvalidValue, Message: "leadTimeDays must be between 0 and 3650"}
	}
	id := val(row.ExternalID)
	var sp Supplier
	if cur, ok := o.suppliers[id]; ok {
		sp = *cur
	} else if cur, ok := s.Suppliers[id]; ok {
		sp = *cur
	} else {
		sp = Supplier{ID: id, ExternalID: id, Name: id, CreatedAt: now}
	}
	if row.Name != nil && val(row.Name) != "" {
		sp.Name = val(row.Name)
	}
	if row.LeadTimeDays != nil {
		v := *row.LeadTimeDays
		sp.LeadTimeDays = &v
	}
	if row.Email != nil {
		sp.Email = val(row.Email)
	}
	sp.UpdatedAt = now
	o.suppliers[id] = &sp
	res.Records = append(res.Records, Put(KindSupplier, id, &sp))
	res.Applied++
	return nil
}

func (s *CatalogState) applyPORow(o *overlay, i int, row PurchaseOrderRow, now time.Time, res *ImportResult) *RowError {
	if e := firstErr(required(i, "externalPoNumber", row.ExternalPoNumber), required(i, "supplierId", row.SupplierID),
		required(i, "destinationLocationId", row.DestinationLocationID)); e != nil {
		return e
	}
	if !o.supplier(val(row.SupplierID)) {
		return &RowError{Row: i, Field: "supplierId", Code: RowUnknownSupplier, Message: fmt.Sprintf("unknown supplier %q: import it first", val(row.SupplierID))}
	}
	dest := val(row.DestinationLocationID)
	if _, ok := o.location(dest); !ok {
		return &RowError{Row: i, Field: "destinationLocationId", Code: RowUnknownLocation, Message: fmt.Sprintf("unknown location %q", dest)}
	}
	status, e := rowStatus(i, row.Status, "PENDING", PurchaseOrderStatuses)
	if e != nil {
		return e
	}
	expected, e := parseRowTime(i, "expectedAt", row.ExpectedAt)
	if e != nil {
		return e
	}
	if e := rowLines(i, row.Lines == nil, len(row.Lines)); e != nil {
		return e
	}
	lines := make([]POLine, 0, len(row.Lines))
	for j, l := range row.Lines {
		f := fmt.Sprintf("lines[%d]", j)
		if e := firstErr(required(i, f+".skuId", l.SKU), requiredNum(i, f+".quantity", l.Quantity), requiredNum(i, f+".unitCost", l.UnitCost),
			nonNegative(i, f+".unitCost", l.UnitCost), positive(i, f+".quantity", l.Quantity)); e != nil {
			return e
		}
		p, ok := o.product(val(l.SKU))
		if !ok {
			return &RowError{Row: i, Field: f + ".skuId", Code: RowUnknownProduct, Message: fmt.Sprintf("unknown product %q", val(l.SKU))}
		}
		lines = append(lines, POLine{SKU: p.ID, Quantity: *l.Quantity, UnitCost: *l.UnitCost})
	}
	id := val(row.ExternalPoNumber)
	po := PurchaseOrder{ExternalPoNumber: id, CreatedAt: now}
	if cur, ok := s.PurchaseOrders[id]; ok {
		po.CreatedAt = cur.CreatedAt
	}
	po.SupplierID, po.DestinationLocationID, po.Status, po.ExpectedAt, po.Lines, po.UpdatedAt =
		val(row.SupplierID), dest, status, expected, lines, now
	res.Records = append(res.Records, Put(KindPurchaseOrder, id, &po))
	res.Applied++
	return nil
}

// rowStatus upper-cases an optional status and checks it against the allowed ones; absent or
// empty means def.
func rowStatus(i int, v *string, def string, allowed []string) (string, *RowError) {
	if v == nil || *v == "" {
		return def, nil
	}
	status := strings.ToUpper(*v)
	if !slices.Contains(allowed, status) {
		return "", &RowError{Row: i, Field: "status", Code: RowInvalidValue, Message: "status must be one of " + strings.Join(allowed, ", ")}
	}
	return status, nil
}

// rowLines checks that a row's lines are present and not empty.
func rowLines(i int, missing bool, n int) *RowError {
	if missing {
		return &RowError{Row: i, Field: "lines", Code: RowRequired, Message: "lines is required"}
	}
	if n == 0 {
		return &RowError{Row: i, Field: "lines", Code: RowInvalidValue, Message: "lines must not be empty"}
	}
	return nil
}

// OrderStatuses are the accepted order statuses.
var OrderStatuses = []string{"PENDING", "OPEN", "ALLOCATED", "PICKED", "SHIPPED", "DELIVERED", "CANCELLED", "RETURNED"}

func (s *CatalogState) applyOrderRow(o *overlay, i int, row OrderRow, now time.Time, res *ImportResult) *RowError {
	if e := required(i, "externalOrderId", row.ExternalOrderID); e != nil {
		return e
	}
	status, e := rowStatus(i, row.Status, "OPEN", OrderStatuses)
	if e != nil {
		return e
	}
	ordered, e := parseRowTime(i, "orderedAt", row.OrderedAt)
	if e != nil {
		return e
	}
	if e := rowLines(i, row.Lines == nil, len(row.Lines)); e != nil {
		return e
	}
	terms, e := row.Terms(i)
	if e != nil {
		return e
	}
	ids := make([]string, len(row.Lines))
	for j, l := range row.Lines {
		ids[j] = val(l.LineID)
	}
	lineIDs, e := LineIDs(i, ids)
	if e != nil {
		return e
	}
	lines := make([]OrderLine, 0, len(row.Lines))
	for j, l := range row.Lines {
		f := fmt.Sprintf("lines[%d]", j)
		if e := firstErr(required(i, f+".skuId", l.SKU), requiredNum(i, f+".quantity", l.Quantity), positive(i, f+".quantity", l.Quantity),
			required(i, f+".locationId", l.LocationID)); e != nil {
			return e
		}
		p, ok := o.product(val(l.SKU))
		if !ok {
			return &RowError{Row: i, Field: f + ".skuId", Code: RowUnknownProduct, Message: fmt.Sprintf("unknown product %q", val(l.SKU))}
		}
		if _, ok := o.location(val(l.LocationID)); !ok {
			return &RowError{Row: i, Field: f + ".locationId", Code: RowUnknownLocation, Message: fmt.Sprintf("unknown location %q", val(l.LocationID))}
		}
		lines = append(lines, OrderLine{LineID: lineIDs[j], SKU: p.ID, Quantity: *l.Quantity, LocationID: val(l.LocationID)})
	}
	id := val(row.ExternalOrderID)
	ord := Order{ExternalOrderID: id, CreatedAt: now}
	cur, ok := o.orders[id]
	if !ok {
		cur, ok = s.Orders[id]
	}
	if ok {
		if terms.Version < cur.Version {
			// An older version than the one stored (delivered out of order): accepted and ignored.
			res.Applied++
			return nil
		}
		ord.CreatedAt = cur.CreatedAt
	}
	ord.Status, ord.Channel, ord.OrderedAt, ord.Lines, ord.UpdatedAt = status, val(row.Channel), ordered, lines, now
	ord.OrderTerms = terms
	o.orders[id] = &ord
	res.Records = append(res.Records, Put(KindOrder, id, &ord))
	res.Applied++
	return nil
}

func (s *CatalogState) resolveDemandRow(o *overlay, i int, row DemandHistoryRow) (DemandRow, *RowError) {
	if e := firstErr(required(i, "skuId", row.SKU), required(i, "locationId", row.LocationID), required(i, "weekStarting", row.WeekStarting),
		nonNegative(i, "actualDemand", row.ActualDemand), nonNegative(i, "forecastedDemand", row.ForecastedDemand)); e != nil {
		return DemandRow{}, e
	}
	if row.OnHand != nil && !NumberOK(*row.OnHand) {
		return DemandRow{}, &RowError{Row: i, Field: "onHand", Code: RowInvalidValue, Message: "onHand must be a number " + NumberRange}
	}
	t, ok := ParseTime(*row.WeekStarting)
	if !ok {
		return DemandRow{}, &RowError{Row: i, Field: "weekStarting", Code: RowInvalidValue, Message: "weekStarting " + TimeMessage}
	}
	p, ok := o.product(val(row.SKU))
	if !ok {
		return DemandRow{}, &RowError{Row: i, Field: "skuId", Code: RowUnknownProduct, Message: fmt.Sprintf("unknown product %q", val(row.SKU))}
	}
	loc := val(row.LocationID)
	if _, ok := o.location(loc); !ok {
		return DemandRow{}, &RowError{Row: i, Field: "locationId", Code: RowUnknownLocation, Message: fmt.Sprintf("unknown location %q", loc)}
	}
	ch := val(row.Channel)
	if ch == "" {
		ch = ChannelAll
	}
	if len(ch) > MaxNameLen {
		return DemandRow{}, &RowError{Row: i, Field: "channel", Code: RowInvalidValue, Message: "channel is too long"}
	}
	actual := num(row.ActualDemand, 0)
	return DemandRow{SKU: p.ID, Location: loc, Channel: ch, Week: WeekStart(t), Actual: actual,
		Forecasted: num(row.ForecastedDemand, actual),
		Stockout:   (row.Stockout != nil && *row.Stockout) || (row.OnHand != nil && *row.OnHand <= 0)}, nil
}

func requiredNum(i int, field string, v *float64) *RowError {
	if v == nil {
		return &RowError{Row: i, Field: field, Code: RowRequired, Message: field + " is required"}
	}
	return nil
}

func positive(i int, field string, v *float64) *RowError {
	if v != nil && (!NumberOK(*v) || *v <= 0) {
		return &RowError{Row: i, Field: field, Code: RowInvalidValue, Message: field + " must be a number > 0 and at most 1e12"}
	}
	return nil
}
