package supplyplan

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The allocation operations that read the catalog as well: the ledger (AllocationState) joined
// to the tenant's stock, purchase orders, transfers and orders. tenantWorld is the
// AllocationWorld over the tenant's state; every figure of available-to-promise the service shows
// (GET /api/inventory/atp, the availability reads and the check_availability tool, the lowAtp
// alert, transfer recommendations and manual transfers) comes from the same ledger and the same
// receipts.

// DefaultTransferLeadTimeDays is the transfer lead time when the settings give none.
const DefaultTransferLeadTimeDays = 3.0

// AllocationSettings are the process's allocation settings (flags), given to every tenant state
// when it is created; they are not journaled.
type AllocationSettings struct {
	// HoldTTL is how long a HELD reservation lives (DefaultHoldTTL when 0).
	HoldTTL time.Duration
	// Retention is how long RELEASED and EXPIRED reservations stay listed
	// (DefaultReservationRetention when 0).
	Retention time.Duration
	// CommitOnAllocate creates reservations COMMITTED instead of HELD.
	CommitOnAllocate bool
	// SafetyStock is the part of a level allocation may not promise.
	SafetyStock SafetyStockPolicy
	// TransferLeadTimeDays dates the transfers in transit (shipped + this) and ranks the locations
	// an order may be sourced from besides the requested one (DefaultTransferLeadTimeDays when 0).
	TransferLeadTimeDays float64
	// TransferCostPerUnit ranks those locations after the lead time.
	TransferCostPerUnit float64
}

// SetAllocationSettings sets the settings allocation and ATP use in this state.
func (s *TenantState) SetAllocationSettings(set AllocationSettings) {
	s.allocation = set
	s.receipts.p.Store(nil)
	s.sources.reset()
}

func (s *TenantState) transferLead() float64 {
	if s.allocation.TransferLeadTimeDays > 0 {
		return s.allocation.TransferLeadTimeDays
	}
	return DefaultTransferLeadTimeDays
}

// allocConfig is the allocator's configuration of this tenant.
func (s *TenantState) allocConfig() AllocationConfig {
	return AllocationConfig{OrgID: s.OrgID, HoldTTL: s.allocation.HoldTTL, CommitOnAllocate: s.allocation.CommitOnAllocate,
		Retention: s.allocation.Retention}
}

// init makes the maps non-nil and derives the ledger's indexes (after a snapshot decode too).
func (s *AllocationState) init() { s.rebuildIndex() }

// receiptIndex is the stock on its way, by (product, location): open purchase-order lines (due at
// expectedAt, else created + the supplier's lead time, else UndatedPOLeadTime after creation, as
// the transfer recommendations date them) and transfers in transit (due at shipped + the transfer
// lead time).
type receiptIndex struct {
	leadDays float64
	byKey    map[stockKey][]Receipt
}

// receiptCache holds the derived receipt index. Reads of the state run in parallel under the
// actor's read lock, and each may build the index and store it: hence the atomic pointer.
type receiptCache struct{ p atomic.Pointer[receiptIndex] }

// receiptsIndex returns the receipt index, building it when a purchase order, supplier or transfer
// changed since (a derived cache of the actor's state).
func (s *TenantState) receiptsIndex() *receiptIndex {
	lead := s.transferLead()
	if x := s.receipts.p.Load(); x != nil && x.leadDays == lead {
		return x
	}
	x := &receiptIndex{leadDays: lead, byKey: make(map[stockKey][]Receipt, len(s.PurchaseOrders)+len(s.Transfers))} // about a key each
	for _, po := range s.PurchaseOrders {
		if !po.Open() {
			continue
		}
		at := s.poDue(po)
		for _, l := range po.Lines {
			if l.Quantity > 0 {
				k := stockKey{l.SKU, po.DestinationLocationID}
				x.byKey[k] = append(x.byKey[k], Receipt{At: at, Quantity: l.Quantity, Ref: "po:" + po.ExternalPoNumber})
			}
		}
	}
	for _, t := range s.Transfers {
		if t.Status != TransferInTransit || t.Quantity <= 0 {
			continue
		}
		shipped := t.UpdatedAt
		if t.ShippedAt != nil {
			shipped = *t.ShippedAt
		}
		k := stockKey{t.ProductMasterID, t.DestLocationID}
		x.byKey[k] = append(x.byKey[k], Receipt{At: shipped.Add(time.Duration(lead * float64(24*time.Hour))), Quantity: t.Quantity,
			Ref: "transfer:" + t.ID})
	}
	s.receipts.p.Store(x)
	return x
}

// poDue is when an open purchase order is expected: expectedAt, else its creation plus its
// supplier's lead time, else UndatedPOLeadTime after its creation.
func (s *CatalogState) poDue(po *PurchaseOrder) time.Time {
	if po.ExpectedAt != nil {
		return *po.ExpectedAt
	}
	lead := UndatedPOLeadTime
	if sp, ok := s.Suppliers[po.SupplierID]; ok && sp.LeadTimeDays != nil {
		lead = time.Duration(*sp.LeadTimeDays) * 24 * time.Hour
	}
	return po.CreatedAt.Add(lead)
}

// sourcesMemo remembers tenantWorld.Sources by sku across allocations (an orders import allocates
// chunk after chunk over the same skus; finding a sku's locations looks up every location's level).
// It is derived from the locations, which levels exist, the receipts and the settings, and dropped
// when any of them changes (TenantState.Apply, SetAllocationSettings). Its lock lets the reads
// that run in parallel with the actor use it.
type sourcesMemo struct {
	mu    sync.Mutex
	bySKU map[string][]SourceCandidate
	// all is every location, shared by the skus stocked or expected at each one (nil until needed)
	all []SourceCandidate
}

func (m *sourcesMemo) get(sku string) ([]SourceCandidate, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.bySKU[sku]
	return c, ok
}

func (m *sourcesMemo) put(sku string, c []SourceCandidate) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bySKU == nil {
		m.bySKU = map[string][]SourceCandidate{}
	}
	m.bySKU[sku] = c
}

// shared returns the list of every location when c names each of them once (the usual case of
// a sku stocked everywhere), so that such skus share one list.
func (m *sourcesMemo) shared(c []SourceCandidate) []SourceCandidate {
	if m == nil {
		return c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.all == nil || len(m.all) != len(c) {
		m.all = c
	}
	return m.all
}

// forget drops what is remembered of sku (a level of it came or went).
func (m *sourcesMemo) forget(sku string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.bySKU, sku)
}

func (m *sourcesMemo) reset() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bySKU, m.all = nil, nil
}

// tenantWorld is the AllocationWorld over a tenant's state. A sku is a product id (order lines
// store the product's id), a location exists or not (every location of the catalog may ship).
type tenantWorld struct {
	s      *TenantState
	rc     *receiptIndex
	keyBuf []byte
}

// level returns the stock level of (sku, loc) without building its key as a string.
func (w *tenantWorld) level(sku, loc string) (*InventoryLevel, bool) {
	k := append(append(append(w.keyBuf[:0], sku...), 0), loc...) // InventoryKey
	w.keyBuf = k
	l, ok := w.s.Inventory[string(k)] // no allocation for a map index
	return l, ok
}

func (s *TenantState) world() *tenantWorld {
	return &tenantWorld{s: s, rc: s.receiptsIndex()}
}

func (w *tenantWorld) KnownSKU(sku string) bool {
	_, ok := w.s.Products[sku]
	return ok
}

func (w *tenantWorld) LocationActive(loc string) bool {
	_, ok := w.s.Locations[loc]
	return ok
}

func (w *tenantWorld) Supply(sku, loc string) Supply {
	sup := Supply{Receipts: w.rc.byKey[stockKey{sku, loc}]}
	if l, ok := w.level(sku, loc); ok {
		sup.OnHand, sup.ReservedOutside = l.QuantityOnHand, l.QuantityReserved
		sup.SafetyStock = w.s.allocation.SafetyStock.Protected(nil, l.ReorderPoint)
	}
	return sup
}

// Sources lists every location holding a level of sku or expecting it: the transfer lead time and
// cost per unit are the same between any two locations, so the allocator ranks them by id. The
// list is shared (sourcesMemo): callers must not change it.
func (w *tenantWorld) Sources(sku, _ string) []SourceCandidate {
	if c, ok := w.s.sources.get(sku); ok {
		return c
	}
	lead, cost := w.s.transferLead(), w.s.allocation.TransferCostPerUnit
	out := make([]SourceCandidate, 0, len(w.s.Locations))
	for loc := range w.s.Locations {
		_, stocked := w.level(sku, loc)
		if stocked || len(w.rc.byKey[stockKey{sku, loc}]) > 0 {
			out = append(out, SourceCandidate{LocationID: loc, LeadTimeDays: lead, UnitCost: cost})
		}
	}
	if len(out) == len(w.s.Locations) { // every location (each once: they come from the map's keys)
		out = w.s.sources.shared(out)
	}
	w.s.sources.put(sku, out)
	return out
}

// LineIDOf returns the id of line j: its LineID, else its 1-based position (orders stored before
// allocation existed have none).
func (o *Order) LineIDOf(j int) string {
	if o.Lines[j].LineID != "" {
		return o.Lines[j].LineID
	}
	return strconv.Itoa(j + 1)
}

// confirmed reports whether the order's status confirms it (ALLOCATED, PICKED): its reservations
// are COMMITTED.
func (o *Order) confirmed() bool {
	_, c := AllocStatusOf(o.Status)
	return c
}

// allocOrder is the order as allocation sees it. Its creation is when it was ordered (orderedAt),
// else when it was first imported.
func (o *Order) allocOrder() AllocOrder {
	status, _ := AllocStatusOf(o.Status)
	created := o.CreatedAt
	if o.OrderedAt != nil {
		created = *o.OrderedAt
	}
	ao := AllocOrder{ID: o.ExternalOrderID, Status: status, CreatedAt: created, OrderTerms: o.OrderTerms, Lines: make([]AllocLine, len(o.Lines))}
	for j, l := range o.Lines {
		ao.Lines[j] = AllocLine{LineID: o.LineIDOf(j), SKU: l.SKU, LocationID: l.LocationID, Quantity: l.Quantity}
	}
	return ao
}

// orderLookup finds an order as allocation sees it (the inconsistency finder's OrderLookup).
func (s *TenantState) orderLookup(id string) (AllocOrder, bool) {
	o, ok := s.Orders[id]
	if !ok {
		return AllocOrder{}, false
	}
	return o.allocOrder(), true
}

// allocOrders returns every order as allocation sees it, by id.
func (s *TenantState) allocOrders() []AllocOrder {
	out := make([]AllocOrder, 0, len(s.Orders))
	for _, o := range s.Orders {
		out = append(out, o.allocOrder())
	}
	slices.SortFunc(out, func(a, b AllocOrder) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// AllocationWrite is what allocating orders produced: the outcomes, the records to journal in the
// same write as the change that caused them (the ledger's, the stock levels shipped orders took
// stock from, and the events into the outbox), and the events to publish once that write is
// durable.
type AllocationWrite struct {
	Outcomes []AllocationOutcome
	Records  []Record
	Events   []DomainEvent
}

// AllocateOrders allocates orders as one batch (AllocateBatch), in their state as the caller is
// about to store them: an order's cancellation releases its reservations, a shipment consumes
// them (the stock leaves the levels in the same write), a confirmed order's reservations are
// committed, and an allocation event goes to the outbox once per (order, version).
func (s *TenantState) AllocateOrders(orders []*Order, now time.Time) AllocationWrite {
	if len(orders) == 0 {
		return AllocationWrite{}
	}
	batch := make([]AllocOrder, len(orders))
	confirmed := map[string]bool{}
	for i, o := range orders {
		batch[i] = o.allocOrder()
		confirmed[o.ExternalOrderID] = o.confirmed()
	}
	outs := NewAllocator(&s.AllocationState, s.world(), s.allocConfig(), now).AllocateBatch(batch)
	n, events := 0, 0
	for i := range outs {
		out := &outs[i]
		if confirmed[out.OrderID] && !out.Ignored {
			s.commitOutcome(out, now)
		}
		n += len(out.Records) + len(out.Consumed)
		if out.Event != nil {
			events++
		}
	}
	w := AllocationWrite{Outcomes: outs, Records: make([]Record, 0, n+events), Events: make([]DomainEvent, 0, events)}
	levels := map[string]*InventoryLevel{}
	var levelKeys []string
	for i := range outs {
		out := &outs[i]
		w.Records = append(w.Records, out.Records...)
		for _, c := range out.Consumed {
			key := InventoryKey(c.SKU, c.LocationID)
			l, ok := levels[key]
			if !ok {
				v := s.levelCopy(c.SKU, c.LocationID, now)
				l = &v
				levels[key] = l
				levelKeys = append(levelKeys, key)
			}
			pickBins(l.Bins, c.Quantity, "")
			l.QuantityOnHand = math.Max(0, snap(l.QuantityOnHand-c.Quantity))
			l.UpdatedAt = now
		}
		if out.Event != nil {
			w.Events = append(w.Events, *out.Event)
			w.Records = append(w.Records, EventRecord(*out.Event))
		}
	}
	for _, k := range levelKeys {
		w.Records = append(w.Records, Put(KindInventory, k, levels[k]))
	}
	return w
}

// commitOutcome makes the reservations of a confirmed order's outcome COMMITTED: the ones it
// creates, and the HELD ones it keeps.
func (s *TenantState) commitOutcome(out *AllocationOutcome, now time.Time) {
	a := out.Allocation
	if a == nil || a.Status == AllocFailed || a.Status == AllocReleased || a.Status == AllocShipped {
		return
	}
	put := map[string]int{}
	for i, r := range out.Records {
		if r.Kind == KindReservation && !r.Del {
			put[r.ID] = i
		}
	}
	for _, l := range a.Lines {
		for _, al := range l.Allocations {
			if i, ok := put[al.ReservationID]; ok {
				if v := out.Records[i].Value.(*Reservation); v.Status == ResHeld {
					c := *v
					c.Status, c.ExpiresAt = ResCommitted, nil
					out.Records[i].Value = &c
				}
				continue
			}
			if r := s.Reservations[al.ReservationID]; r != nil && r.Status == ResHeld && r.ActiveAt(now) {
				c := *r
				c.Status, c.ExpiresAt, c.UpdatedAt = ResCommitted, nil, now
				out.Records = append(out.Records, Put(KindReservation, c.ID, &c))
			}
		}
	}
}

// AllocateImported allocates the orders a chunk of an orders import writes (recs as ApplyImport
// returned them, not yet applied): the records go into the chunk's write.
func (s *TenantState) AllocateImported(recs []Record, now time.Time) AllocationWrite {
	var orders []*Order
	for _, r := range recs {
		if r.Kind != KindOrder || r.Del {
			continue
		}
		if o, ok := r.Value.(*Order); ok {
			orders = append(orders, o)
		}
	}
	return s.AllocateOrders(orders, now)
}

// AllocateOrderByID allocates one stored order again (POST /api/orders/{id}/allocate).
func (s *TenantState) AllocateOrderByID(id string, now time.Time) (OrderView, AllocationWrite, error) {
	o, ok := s.Orders[id]
	if !ok {
		return OrderView{}, AllocationWrite{}, NotFound("Order")
	}
	w := s.AllocateOrders([]*Order{o}, now)
	return s.orderView(o, w.Outcomes[0].Allocation), w, nil
}

// CommitOrderByID confirms an allocated order: its HELD reservations become COMMITTED.
func (s *TenantState) CommitOrderByID(id string, now time.Time) (OrderView, []Record, error) {
	o, ok := s.Orders[id]
	if !ok {
		return OrderView{}, nil, NotFound("Order")
	}
	a := s.Allocations[id]
	if a == nil || a.Status == AllocFailed || a.Status == AllocReleased || a.Status == AllocShipped {
		st := "never allocated"
		if a != nil {
			st = string(a.Status)
		}
		return OrderView{}, nil, Conflict("Order %s holds no stock to commit (its allocation is %s)", id, st)
	}
	return s.orderView(o, a), s.CommitOrder(id, now), nil
}

// orderView renders an order with its allocation.
func (s *TenantState) orderView(o *Order, a *Allocation) OrderView {
	v := OrderView{ExternalOrderID: o.ExternalOrderID, Status: o.Status, Channel: o.Channel, OrderedAt: o.OrderedAt,
		Priority: o.Priority, RequestedDate: o.RequestedDate, Fill: o.FillOrDefault(), MinQuantity: o.MinQuantity,
		MaxLocations: o.Locations(), MaxLatenessDays: o.MaxLatenessDays, Version: o.Version, Lines: make([]OrderLineView, len(o.Lines)),
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
	for j, l := range o.Lines {
		v.Lines[j] = OrderLineView{LineID: o.LineIDOf(j), SKU: l.SKU, Quantity: l.Quantity, LocationID: l.LocationID}
	}
	if a != nil {
		av := a.View()
		v.Allocation = &av
	}
	return v
}

// GetOrderView returns an order with its allocation.
func (s *TenantState) GetOrderView(id string) (OrderView, error) {
	o, ok := s.Orders[id]
	if !ok {
		return OrderView{}, NotFound("Order")
	}
	return s.orderView(o, s.Allocations[id]), nil
}

// ListOrders returns the orders passing f with their allocations, newest first (then by id).
func (s *TenantState) ListOrders(f OrderFilter) (Page[OrderView], error) {
	fe := FieldErrors{}
	sku := ""
	if f.SKU != "" {
		if p, ok := s.ProductBySKU(f.SKU); ok {
			sku = p.ID
		} else {
			fe.Add("skuId", "unknown product %q", f.SKU)
		}
	}
	if err := fe.Err(); err != nil {
		return Page[OrderView]{}, err
	}
	status := strings.ToUpper(f.Status)
	var sel []*Order
	for _, o := range s.Orders {
		if status != "" && o.Status != status {
			continue
		}
		if f.AllocationStatus != "" {
			st := AllocNone
			if a := s.Allocations[o.ExternalOrderID]; a != nil {
				st = a.Status
			}
			if string(st) != f.AllocationStatus {
				continue
			}
		}
		if (sku != "" || f.LocationID != "") && !slices.ContainsFunc(o.Lines, func(l OrderLine) bool {
			return (sku == "" || l.SKU == sku) && (f.LocationID == "" || l.LocationID == f.LocationID)
		}) {
			continue
		}
		sel = append(sel, o)
	}
	slices.SortFunc(sel, func(a, b *Order) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ExternalOrderID, b.ExternalOrderID)
	})
	p := page(sel, f.Limit, f.Offset)
	out := Page[OrderView]{Items: make([]OrderView, len(p.Items)), Total: p.Total, Limit: p.Limit, Offset: p.Offset}
	for i, o := range p.Items {
		out.Items[i] = s.orderView(o, s.Allocations[o.ExternalOrderID])
	}
	return out, nil
}

// ListATP answers available-to-promise figures (GET /api/inventory/atp): one per (sku, location)
// holding, expecting or reserving stock, by sku then location, at the end of the query's day.
func (s *TenantState) ListATP(q ATPQuery, now time.Time) (Page[ATPLine], error) {
	fe := FieldErrors{}
	pid := ""
	if q.SKU != "" {
		if p, ok := s.ProductBySKU(q.SKU); ok {
			pid = p.ID
		} else {
			fe.Add("skuId", "unknown product %q", q.SKU)
		}
	}
	if q.LocationID != "" {
		if _, ok := s.Locations[q.LocationID]; !ok {
			fe.Add("locationId", "unknown location %q", q.LocationID)
		}
	}
	if !(q.Quantity >= 0) || !NumberOK(q.Quantity) {
		fe.Add("quantity", "must be a number > 0 and at most 1e12")
	}
	if err := fe.Err(); err != nil {
		return Page[ATPLine]{}, err
	}
	day := StartOfDay(now)
	if q.Date != nil {
		day = StartOfDay(*q.Date)
	}
	end := day.Add(24*time.Hour - time.Millisecond) // receipts due by the end of the day
	w := s.world()
	keys := page(s.atpKeys(pid, q.LocationID, w), q.Limit, q.Offset)
	out := Page[ATPLine]{Items: make([]ATPLine, len(keys.Items)), Total: keys.Total, Limit: keys.Limit, Offset: keys.Offset}
	for i, k := range keys.Items {
		sup := w.Supply(k.sku, k.loc)
		line := ATPLine{ATPFigure: s.AllocationState.ATP(k.sku, k.loc, sup, end, now)}
		line.Date = day
		if q.Quantity > 0 {
			can := line.Available >= q.Quantity-quantityEps
			line.CanPromise = &can
			line.EarliestDate = s.EarliestPromise(k.sku, k.loc, sup, q.Quantity, now, now)
		}
		out.Items[i] = line
	}
	return out, nil
}

// atpKeys lists the (product, location) pairs holding a level, expecting a receipt or holding
// ledger entries, restricted to a product and a location when given, by product then location.
func (s *TenantState) atpKeys(pid, loc string, w *tenantWorld) []stockKey {
	x := s.index()
	if pid != "" && loc != "" {
		return []stockKey{{pid, loc}}
	}
	seen := map[stockKey]bool{}
	var out []stockKey
	add := func(k stockKey) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if pid != "" {
		for l := range s.Locations {
			k := stockKey{pid, l}
			_, stocked := s.Inventory[InventoryKey(pid, l)]
			if stocked || len(w.rc.byKey[k]) > 0 || x.byKey[k] != nil {
				add(k)
			}
		}
	} else {
		for _, l := range s.Inventory {
			if loc == "" || l.LocationID == loc {
				add(stockKey{l.SKU, l.LocationID})
			}
		}
		for k := range w.rc.byKey {
			if loc == "" || k.loc == loc {
				add(k)
			}
		}
		for k := range x.byKey {
			if loc == "" || k.loc == loc {
				add(k)
			}
		}
	}
	slices.SortFunc(out, compareKeys)
	return out
}

// EarliestPromise returns the earliest time at or after from when the available-to-promise of
// (sku, loc) covers need, given what the tenant's state holds there (sup); nil when the known
// receipts never cover it.
func (s *AllocationState) EarliestPromise(sku, loc string, sup Supply, need float64, from, now time.Time) *time.Time {
	var promises []tlEvent
	if kl := s.index().byKey[stockKey{sku, loc}]; kl != nil {
		promises = kl.promises.events
	}
	tl := newTimeline(sup.Receipts, promises)
	stock := sup.OnHand - sup.ReservedOutside - sup.SafetyStock - s.ReservedAt(sku, loc, now)
	at, ok := tl.earliest(stock, need, from.UnixMilli(), math.MaxInt64)
	if !ok {
		return nil
	}
	t := time.UnixMilli(at).UTC()
	return &t
}

// Availability returns a product's stock picture per location (CatalogState.Availability) with
// the ledger's reservations in reserved and available, and availableToPromise the ledger's ATP at
// the end of the ATP horizon.
func (s *TenantState) Availability(ref string, locationIDs []string, now time.Time) ([]Availability, error) {
	out, err := s.CatalogState.Availability(ref, locationIDs, now)
	if err != nil {
		return nil, err
	}
	p, _ := s.ProductBySKU(ref)
	w := s.world()
	for i := range out {
		a := &out[i]
		a.Reserved += s.ReservedAt(p.ID, a.LocationID, now)
		a.Available = a.OnHand - a.Reserved
		a.ATP = s.AllocationState.ATP(p.ID, a.LocationID, w.Supply(p.ID, a.LocationID), now.Add(ATPHorizon), now).Available
	}
	return out, nil
}

// StockSnapshot is CatalogState.StockSnapshot with the ledger's figures: each location's
// reserved stock includes its active reservations, and the backorders promised within the window
// come off the weeks of inbound they will take (a later promise takes from earlier weeks when its
// week's receipts do not cover it, as available-to-promise looks ahead; what no week covers is
// reserved from stock).
func (s *TenantState) StockSnapshot(productRef, locationID string, weeks int, now time.Time) ([]ProductStock, error) {
	out, err := s.CatalogState.StockSnapshot(productRef, locationID, weeks, now)
	if err != nil || (len(s.Reservations) == 0 && len(s.Allocations) == 0) {
		return out, err
	}
	week0 := WeekStart(now)
	for i := range out {
		for j := range out[i].Locations {
			l := &out[i].Locations[j]
			l.Reserved += s.ReservedAt(out[i].ProductID, l.LocationID, now)
			promises := s.PromisesAt(out[i].ProductID, l.LocationID)
			if len(promises) == 0 {
				continue
			}
			taken := make([]float64, len(l.InboundByWeek))
			for _, p := range promises {
				w := max(0, int(math.Floor(p.At.Sub(week0).Hours()/(24*7))))
				if w < len(taken) {
					taken[w] += p.Quantity
				}
			}
			var carry float64
			for w := len(taken) - 1; w >= 0; w-- {
				v := l.InboundByWeek[w] - taken[w] - carry
				carry = 0
				if v < 0 {
					carry, v = -v, 0
				}
				l.InboundByWeek[w] = v
			}
			l.Reserved += carry
		}
	}
	return out, nil
}

// LowATPInputs returns what the lowAtp alert reads of available-to-promise, per inventory key
// (InventoryKey), for a deadline per product (now plus its lead time): inbound is the receipts due
// by the deadline, promised what ATP takes off besides the level's quantityReserved (the ledger's
// reservations, backorders promised, protected safety stock). A level's available (on hand −
// quantityReserved) − promised + inbound is its ATP at the deadline. Keys absent from a map read 0.
func (s *TenantState) LowATPInputs(deadline func(productID string) time.Time, now time.Time) (inbound, promised map[string]float64) {
	inbound, promised = map[string]float64{}, map[string]float64{}
	w := s.world()
	keys := map[stockKey]bool{}
	for k := range w.rc.byKey {
		keys[k] = true
	}
	for k := range s.index().byKey {
		keys[k] = true
	}
	if s.allocation.SafetyStock.ReorderPointShare > 0 {
		for _, l := range s.Inventory {
			if l.ReorderPoint > 0 {
				keys[stockKey{l.SKU, l.LocationID}] = true
			}
		}
	}
	for k := range keys {
		key := InventoryKey(k.sku, k.loc)
		lvl, ok := s.Inventory[key]
		if !ok {
			continue
		}
		f := s.AllocationState.ATP(k.sku, k.loc, w.Supply(k.sku, k.loc), deadline(k.sku), now)
		if f.Incoming != 0 {
			inbound[key] = f.Incoming
		}
		if p := snap(lvl.Available() + f.Incoming - f.Available); p != 0 {
			promised[key] = p
		}
	}
	return inbound, promised
}

// PlanAllocationRun plans a re-allocation run over every order of the tenant (PlanRun); unless
// it is a dry run the records apply it (the run stored, the events of orders never notified at
// their version in the outbox). Confirmed orders keep their reservations COMMITTED.
func (s *TenantState) PlanAllocationRun(req RunRequest, by string, now time.Time) (AllocationRun, []Record, []DomainEvent) {
	run, recs, evs := s.PlanRun(s.world(), s.allocOrders(), req, s.allocConfig(), by, now)
	for i, r := range recs {
		v, ok := r.Value.(*Reservation)
		if r.Kind != KindReservation || r.Del || !ok || v.Status != ResHeld {
			continue
		}
		if o := s.Orders[v.OrderID]; o != nil && o.confirmed() {
			c := *v
			c.Status, c.ExpiresAt = ResCommitted, nil
			recs[i].Value = &c
		}
	}
	for _, e := range evs {
		recs = append(recs, EventRecord(e))
	}
	return run, recs, evs
}

// ListRuns returns the stored runs, newest first, without their changes (GetRun has them).
func (s *TenantState) ListRuns(limit, offset int) Page[AllocationRun] {
	out := make([]AllocationRun, 0, len(s.AllocationRuns))
	for _, r := range s.AllocationRuns {
		v := *r
		v.Changes = []OrderChange{}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b AllocationRun) int { return cmp.Compare(b.ID, a.ID) })
	return page(out, limit, offset)
}

// GetRun returns a stored run.
func (s *TenantState) GetRun(id string) (AllocationRun, error) {
	r, ok := s.AllocationRuns[id]
	if !ok {
		return AllocationRun{}, NotFound("Allocation run")
	}
	return *r, nil
}

// ListAudits returns the repair audit entries, newest first.
func (s *TenantState) ListAudits(limit, offset int) Page[AllocationAudit] {
	out := make([]AllocationAudit, 0, len(s.AllocationAudits))
	for _, a := range s.AllocationAudits {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b AllocationAudit) int { return cmp.Compare(b.ID, a.ID) })
	return page(out, limit, offset)
}

// AllocationInconsistencies lists the ledger entries that disagree with the stock or the orders.
func (s *TenantState) AllocationInconsistencies(now time.Time) []Inconsistency {
	out := s.FindInconsistencies(s.world(), s.orderLookup, now)
	if out == nil {
		out = []Inconsistency{}
	}
	return out
}

// RepairAllocations fixes what AllocationInconsistencies finds, with one audit entry per fix in
// the same write.
func (s *TenantState) RepairAllocations(by string, now time.Time) ([]AllocationAudit, []Record) {
	audits, recs := s.Repair(s.world(), s.orderLookup, by, now)
	if audits == nil {
		audits = []AllocationAudit{}
	}
	return audits, recs
}

// SweepAllocations returns the ledger's housekeeping records at now (Sweep): expired holds,
// terminal reservations past retention, audits and runs beyond their caps.
func (s *TenantState) SweepAllocations(now time.Time) []Record {
	return s.Sweep(now, s.allocConfig())
}
