package supplyplan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Order allocation against available-to-promise (docs/allocation.md): the types of the reservation
// ledger, of an order's allocation and of the allocation events. The ledger itself is
// AllocationState (allocation_state.go), the formula atp.go, the allocation allocate.go, the
// re-allocation runs allocation_runs.go and the inconsistency finder allocation_check.go.

// Record kinds of the allocation sub-state.
const (
	KindReservation     = "reservation"
	KindAllocation      = "allocation"
	KindAllocationAudit = "allocaudit"
	KindAllocationRun   = "allocrun"
)

// AllocationKinds are the record kinds AllocationState.Apply takes.
var AllocationKinds = []string{KindReservation, KindAllocation, KindAllocationAudit, KindAllocationRun}

func init() {
	RegisterKind(KindReservation, func() any { return new(Reservation) })
	RegisterKind(KindAllocation, func() any { return new(Allocation) })
	RegisterKind(KindAllocationAudit, func() any { return new(AllocationAudit) })
	RegisterKind(KindAllocationRun, func() any { return new(AllocationRun) })
}

// Allocation event types (outbound webhooks), emitted once per (orderId, orderVersion).
const (
	EventAllocationSucceeded = "order.allocation_succeeded"
	EventAllocationFailed    = "order.allocation_failed"
)

// Limits of allocation inputs (docs/allocation.md#limits).
const (
	// DefaultHoldTTL is how long a HELD reservation lives before it expires.
	DefaultHoldTTL = 30 * time.Minute
	// DefaultReservationRetention is how long a RELEASED or EXPIRED reservation stays listed before
	// the sweep deletes it (the ledger grows with the open orders, not with the writes).
	DefaultReservationRetention = 7 * 24 * time.Hour
	// MaxAllocationLocations bounds an order's maxLocations.
	MaxAllocationLocations = 100
	// MaxLatenessDays bounds an order's maxLatenessDays (ten years).
	MaxLatenessDays = 3650
	// MaxOrderPriority bounds the absolute value of an order's priority.
	MaxOrderPriority = 1_000_000
	// MaxAllocationAudits is how many repair audit entries are kept (the oldest go first).
	MaxAllocationAudits = 10_000
	// MaxAllocationRuns is how many re-allocation runs are kept (the oldest go first).
	MaxAllocationRuns = 100
	// MaxRunChangesStored is how many order changes a stored run keeps (its response has them all).
	MaxRunChangesStored = 1_000
	// MaxRunScopeIDs bounds each id list of a run's scope.
	MaxRunScopeIDs = 1_000
)

// quantityEps absorbs float64 noise when quantities are compared (1e-9 of a unit).
const quantityEps = 1e-9

// ReservationStatus is the lifecycle state of a reservation: HELD (expires at expiresAt unless
// committed), COMMITTED (confirmed, no expiry) and the terminal RELEASED and EXPIRED.
type ReservationStatus string

// Reservation states.
const (
	ResHeld      ReservationStatus = "HELD"
	ResCommitted ReservationStatus = "COMMITTED"
	ResReleased  ReservationStatus = "RELEASED"
	ResExpired   ReservationStatus = "EXPIRED"
)

// ReservationStatuses lists every status.
var ReservationStatuses = []ReservationStatus{ResHeld, ResCommitted, ResReleased, ResExpired}

// Active reports whether the status holds stock (HELD or COMMITTED).
func (s ReservationStatus) Active() bool { return s == ResHeld || s == ResCommitted }

// Why a reservation was released.
const (
	ReleaseCancelled   = "ORDER_CANCELLED"
	ReleaseShipped     = "SHIPPED" // consumed: the stock left with the order
	ReleaseLineReduced = "LINE_REDUCED"
	ReleaseLineRemoved = "LINE_REMOVED"
	ReleaseReallocated = "REALLOCATED"
	ReleaseFailed      = "ALLOCATION_FAILED" // the new version could not be allocated under its policy
	ReleaseRepair      = "REPAIR"
	ReleaseHoldExpired = "HOLD_EXPIRED"
)

// Reservation is stock of one sku at one location promised to one line of one order.
type Reservation struct {
	ID           string            `json:"id"`
	OrderID      string            `json:"orderId"`
	OrderVersion int64             `json:"orderVersion"`
	LineID       string            `json:"lineId"`
	SKU          string            `json:"skuId"`
	LocationID   string            `json:"locationId"`
	Quantity     float64           `json:"quantity"`
	Status       ReservationStatus `json:"status"`
	// ExpiresAt is set while HELD.
	ExpiresAt     *time.Time `json:"expiresAt,omitempty"`
	Priority      int        `json:"priority"`
	CreatedAt     time.Time  `json:"createdAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
	ReleasedAt    *time.Time `json:"releasedAt,omitempty"`
	ReleaseReason string     `json:"releaseReason,omitempty"`
}

// ActiveAt reports whether the reservation holds stock at now: HELD and not yet expired, or
// COMMITTED. A HELD reservation past expiresAt no longer counts even before the sweep records it.
func (r *Reservation) ActiveAt(now time.Time) bool {
	switch r.Status {
	case ResCommitted:
		return true
	case ResHeld:
		return r.ExpiresAt == nil || now.Before(*r.ExpiresAt)
	}
	return false
}

// released returns a copy of r in a terminal status.
func (r Reservation) released(status ReservationStatus, reason string, now time.Time) Reservation {
	at := now
	if status == ResExpired && r.ExpiresAt != nil && r.ExpiresAt.Before(now) {
		at = *r.ExpiresAt
	}
	r.Status, r.ReleaseReason, r.ReleasedAt, r.UpdatedAt, r.ExpiresAt = status, reason, &at, now, nil
	return r
}

// AllocationStatus is the outcome of an order's allocation.
type AllocationStatus string

// Allocation outcomes. ALLOCATED: every line reserved in full from stock. BACKORDERED: every line
// covered by reservations and backorders with promise dates, at least one backorder. PARTIAL:
// something reserved or backordered, some quantity neither. FAILED: nothing (see the reason code).
// RELEASED (the order was cancelled) and SHIPPED (its reservations were consumed) close it.
const (
	AllocAllocated   AllocationStatus = "ALLOCATED"
	AllocPartial     AllocationStatus = "PARTIAL"
	AllocBackordered AllocationStatus = "BACKORDERED"
	AllocFailed      AllocationStatus = "FAILED"
	AllocReleased    AllocationStatus = "RELEASED"
	AllocShipped     AllocationStatus = "SHIPPED"
)

// Reason codes of order.allocation_failed.
const (
	ReasonInsufficientATP  = "INSUFFICIENT_ATP"
	ReasonUnknownSKU       = "UNKNOWN_SKU"
	ReasonLocationInactive = "LOCATION_INACTIVE"
	ReasonPolicyViolation  = "POLICY_VIOLATION"
)

// LineAllocation is one reservation of a line, as orders show it.
type LineAllocation struct {
	LocationID    string  `json:"locationId"`
	Quantity      float64 `json:"quantity"`
	ReservationID string  `json:"reservationId"`
}

// Backorder is quantity of a line promised from receipts (open purchase orders, transfers in
// transit) at a location, due on PromiseDate.
type Backorder struct {
	LocationID  string    `json:"locationId"`
	Quantity    float64   `json:"quantity"`
	PromiseDate time.Time `json:"promiseDate"`
}

// AllocationLine is the allocation of one order line.
type AllocationLine struct {
	LineID string `json:"lineId"`
	SKU    string `json:"skuId"`
	// Quantity is the line's ordered quantity.
	Quantity    float64          `json:"quantity"`
	Allocations []LineAllocation `json:"allocations"`
	// BackorderedQuantity is the sum of Backorders.
	BackorderedQuantity float64     `json:"backorderedQuantity"`
	Backorders          []Backorder `json:"backorders,omitempty"`
	// Shortfall is what is neither reserved nor backordered.
	Shortfall float64 `json:"shortfall"`
	// PromiseDate is when everything reserved and backordered is available: the requested date
	// (or now) when reserved from stock, the last backorder's date otherwise; null when nothing is.
	PromiseDate *time.Time `json:"promiseDate"`
}

// Reserved is the quantity the line holds in reservations.
func (l *AllocationLine) Reserved() float64 {
	var t float64
	for _, a := range l.Allocations {
		t += a.Quantity
	}
	return t
}

// Allocation is the allocation of one order (record kind "allocation", id = order id): the order
// version allocated and the result per line.
type Allocation struct {
	OrderID      string           `json:"orderId"`
	OrderVersion int64            `json:"orderVersion"`
	Status       AllocationStatus `json:"status"`
	ReasonCode   string           `json:"reasonCode,omitempty"`
	Fill         FillPolicy       `json:"fill"`
	Priority     int              `json:"priority"`
	Lines        []AllocationLine `json:"lines"`
	// EarliestPromiseDate, on a FAILED allocation, is when the whole order could be covered if
	// lateness were no limit (null when the known receipts never cover it).
	EarliestPromiseDate *time.Time `json:"earliestPromiseDate,omitempty"`
	// Notified says the allocation event of OrderVersion was emitted (once per version).
	Notified  bool      `json:"notified"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// clone returns a deep copy of a.
func (a *Allocation) clone() *Allocation {
	c := *a
	c.Lines = make([]AllocationLine, len(a.Lines))
	for i, l := range a.Lines {
		l.Allocations = slices.Clone(l.Allocations)
		l.Backorders = slices.Clone(l.Backorders)
		c.Lines[i] = l
	}
	return &c
}

// Totals returns the reserved, backordered and short quantities of every line together.
func (a *Allocation) Totals() (reserved, backordered, shortfall float64) {
	for i := range a.Lines {
		reserved += a.Lines[i].Reserved()
		backordered += a.Lines[i].BackorderedQuantity
		shortfall += a.Lines[i].Shortfall
	}
	return
}

// FillPolicy says how much of an order may be allocated.
type FillPolicy string

// Fill policies. FILL_OR_KILL: every line reserved in full from stock now, or nothing.
// PARTIAL (default): whatever stock and receipts allow, line by line, each shipment at least
// minQuantity. SHIP_COMPLETE: every line covered (stock now, receipts within maxLatenessDays) so
// the order ships complete on one date, or nothing.
const (
	FillOrKill   FillPolicy = "FILL_OR_KILL"
	FillPartial  FillPolicy = "PARTIAL"
	FillComplete FillPolicy = "SHIP_COMPLETE"
)

// FillPolicies lists every fill policy.
var FillPolicies = []FillPolicy{FillOrKill, FillPartial, FillComplete}

// Order statuses as allocation sees them.
const (
	OrderOpen      = "OPEN"
	OrderCancelled = "CANCELLED"
	OrderShipped   = "SHIPPED"
)

// OrderTerms are an order's optional allocation fields (import: orders[].priority, ...).
type OrderTerms struct {
	// Priority: lower first (default 0).
	Priority      int        `json:"priority,omitempty"`
	RequestedDate *time.Time `json:"requestedDate,omitempty"`
	// Fill is the fill policy ("" means PARTIAL).
	Fill FillPolicy `json:"fill,omitempty"`
	// MinQuantity is the smallest shipment of a line under PARTIAL (a line's whole remaining
	// quantity is always allowed).
	MinQuantity float64 `json:"minQuantity,omitempty"`
	// MaxLocations is how many locations may serve one line (0 means 1: no splitting).
	MaxLocations int `json:"maxLocations,omitempty"`
	// MaxLatenessDays is how late after the requested date a backorder may be promised.
	MaxLatenessDays int `json:"maxLatenessDays,omitempty"`
	// Version orders the versions of an order: an older one than the one allocated is ignored.
	Version int64 `json:"version,omitempty"`
}

// FillOrDefault returns the fill policy, PARTIAL when unset.
func (t OrderTerms) FillOrDefault() FillPolicy {
	if t.Fill == "" {
		return FillPartial
	}
	return t.Fill
}

// Locations returns maxLocations, 1 when unset.
func (t OrderTerms) Locations() int { return max(1, t.MaxLocations) }

// AllocLine is one order line as allocation sees it.
type AllocLine struct {
	LineID string
	SKU    string
	// LocationID is the requested (fulfilment) location; empty lets allocation choose.
	LocationID string
	Quantity   float64
}

// AllocOrder is an order as allocation sees it: the integration builds it from the tenant's Order.
type AllocOrder struct {
	ID string
	// Status is OPEN, CANCELLED or SHIPPED (AllocStatusOf maps the import's statuses).
	Status    string
	CreatedAt time.Time
	OrderTerms
	Lines []AllocLine
}

// requested returns the requested date: RequestedDate, else the order's creation, else now.
func (o *AllocOrder) requested(now time.Time) time.Time {
	switch {
	case o.RequestedDate != nil:
		return *o.RequestedDate
	case !o.CreatedAt.IsZero():
		return o.CreatedAt
	}
	return now
}

// valid is Validate without building the error (the common case: nothing wrong).
func (o *AllocOrder) valid() bool {
	if o.ID == "" || (o.Fill != "" && !slices.Contains(FillPolicies, o.Fill)) || !NumberOK(o.MinQuantity) || o.MinQuantity < 0 ||
		o.MaxLocations < 0 || o.MaxLocations > MaxAllocationLocations || o.MaxLatenessDays < 0 || o.MaxLatenessDays > MaxLatenessDays ||
		o.Priority < -MaxOrderPriority || o.Priority > MaxOrderPriority || o.Version < 0 || len(o.Lines) == 0 {
		return false
	}
	for i, l := range o.Lines {
		if l.LineID == "" || l.SKU == "" || !NumberOK(l.Quantity) || l.Quantity <= 0 {
			return false
		}
		if len(o.Lines) <= 16 {
			for _, m := range o.Lines[:i] {
				if m.LineID == l.LineID {
					return false
				}
			}
		}
	}
	return len(o.Lines) <= 16 || o.Validate() == nil
}

// Validate checks the order's allocation fields; its message is the POLICY_VIOLATION detail.
func (o *AllocOrder) Validate() error {
	fe := FieldErrors{}
	if o.ID == "" {
		fe.Add("externalOrderId", "is required")
	}
	if o.Fill != "" && !slices.Contains(FillPolicies, o.Fill) {
		fe.Add("fill", "must be one of %s", joinEnum(FillPolicies))
	}
	if !NumberOK(o.MinQuantity) || o.MinQuantity < 0 {
		fe.Add("minQuantity", "must be a number >= 0 and at most 1e12")
	}
	if o.MaxLocations < 0 || o.MaxLocations > MaxAllocationLocations {
		fe.Add("maxLocations", "must be between 1 and %d", MaxAllocationLocations)
	}
	if o.MaxLatenessDays < 0 || o.MaxLatenessDays > MaxLatenessDays {
		fe.Add("maxLatenessDays", "must be between 0 and %d", MaxLatenessDays)
	}
	if o.Priority < -MaxOrderPriority || o.Priority > MaxOrderPriority {
		fe.Add("priority", "must be an integer between %d and %d", -MaxOrderPriority, MaxOrderPriority)
	}
	if o.Version < 0 {
		fe.Add("version", "must be >= 0")
	}
	if len(o.Lines) == 0 {
		fe.Add("lines", "must not be empty")
	}
	seen := make(map[string]bool, len(o.Lines))
	for i, l := range o.Lines {
		f := fmt.Sprintf("lines[%d]", i)
		switch {
		case l.LineID == "":
			fe.Add(f+".lineId", "is required")
		case seen[l.LineID]:
			fe.Add(f+".lineId", "%q is used by two lines", l.LineID)
		}
		seen[l.LineID] = true
		if l.SKU == "" {
			fe.Add(f+".skuId", "is required")
		}
		if !NumberOK(l.Quantity) || l.Quantity <= 0 {
			fe.Add(f+".quantity", "must be a number > 0 and at most 1e12")
		}
	}
	return fe.Err()
}

// AllocStatusOf maps an imported order status (OrderStatuses) to the allocation's view: OPEN,
// CANCELLED or SHIPPED, and whether the order is confirmed (its HELD reservations are committed).
func AllocStatusOf(orderStatus string) (status string, confirmed bool) {
	switch strings.ToUpper(orderStatus) {
	case "CANCELLED", "RETURNED":
		return OrderCancelled, false
	case "SHIPPED", "DELIVERED":
		return OrderShipped, false
	case "ALLOCATED", "PICKED":
		return OrderOpen, true
	}
	return OrderOpen, false
}

// allocationOrder compares orders in allocation order: priority (lower first), requested date
// (earlier first, none last), creation, id.
func allocationOrder(a, b *AllocOrder) int {
	if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
		return c
	}
	switch {
	case a.RequestedDate != nil && b.RequestedDate == nil:
		return -1
	case a.RequestedDate == nil && b.RequestedDate != nil:
		return 1
	case a.RequestedDate != nil:
		if c := a.RequestedDate.Compare(*b.RequestedDate); c != 0 {
			return c
		}
	}
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// SortForAllocation sorts orders in allocation order (priority, requested date, created, id).
func SortForAllocation(orders []AllocOrder) {
	slices.SortStableFunc(orders, func(a, b AllocOrder) int { return allocationOrder(&a, &b) })
}

// AllocationConfig are a tenant's allocation settings.
type AllocationConfig struct {
	// OrgID stamps the events.
	OrgID string
	// HoldTTL is how long a HELD reservation lives (DefaultHoldTTL when 0).
	HoldTTL time.Duration
	// CommitOnAllocate creates reservations COMMITTED (no expiry) instead of HELD.
	CommitOnAllocate bool
	// Retention is how long terminal reservations stay (DefaultReservationRetention when 0).
	Retention time.Duration
}

func (c AllocationConfig) holdTTL() time.Duration {
	if c.HoldTTL <= 0 {
		return DefaultHoldTTL
	}
	return c.HoldTTL
}

func (c AllocationConfig) retention() time.Duration {
	if c.Retention <= 0 {
		return DefaultReservationRetention
	}
	return c.Retention
}

// SourceCandidate is a location that may ship a sku, with what ranks it: lead time, then cost per
// unit (then location id).
type SourceCandidate struct {
	LocationID   string
	LeadTimeDays float64
	UnitCost     float64
}

// AllocationWorld is what allocation reads of the tenant besides the ledger; the integration
// implements it over the tenant state (catalog, inventory levels, purchase orders, transfers).
type AllocationWorld interface {
	// KnownSKU reports whether sku is a product of the catalog.
	KnownSKU(sku string) bool
	// LocationActive reports whether stock may be promised from loc.
	LocationActive(loc string) bool
	// Supply returns what (sku, loc) holds outside the ledger.
	Supply(sku, loc string) Supply
	// Sources lists the locations other than requested that may ship sku (any order: allocation
	// ranks them).
	Sources(sku, requested string) []SourceCandidate
}

// EventLine is one line of order.allocation_succeeded.
type EventLine struct {
	LineID              string           `json:"lineId"`
	Allocations         []LineAllocation `json:"allocations"`
	BackorderedQuantity float64          `json:"backorderedQuantity"`
	PromiseDate         *time.Time       `json:"promiseDate"`
}

// AllocationSucceeded is the data of order.allocation_succeeded.
type AllocationSucceeded struct {
	OrderID      string      `json:"orderId"`
	OrderVersion int64       `json:"orderVersion"`
	Partial      bool        `json:"partial"`
	Lines        []EventLine `json:"lines"`
}

// ShortLine is one line of order.allocation_failed.
type ShortLine struct {
	LineID    string  `json:"lineId"`
	Shortfall float64 `json:"shortfall"`
}

// AllocationFailed is the data of order.allocation_failed.
type AllocationFailed struct {
	OrderID             string      `json:"orderId"`
	OrderVersion        int64       `json:"orderVersion"`
	ReasonCode          string      `json:"reasonCode"`
	Message             string      `json:"message,omitempty"`
	Lines               []ShortLine `json:"lines"`
	EarliestPromiseDate *time.Time  `json:"earliestPromiseDate"`
}

// allocationEvent returns the event announcing a.
func allocationEvent(a *Allocation, orgID, message string, now time.Time) DomainEvent {
	typ, data := allocationEventData(a, message)
	return DomainEvent{ID: NewID("evt"), Type: typ, OrganizationID: orgID, Timestamp: now, Data: data}
}

// allocationEventData returns the type and data of the event announcing a (replay rebuilds the
// data of a journaled allocation event from its allocation the same way, allocation_event_ref.go).
func allocationEventData(a *Allocation, message string) (string, any) {
	if a.Status == AllocFailed {
		lines := make([]ShortLine, len(a.Lines))
		for i, l := range a.Lines {
			lines[i] = ShortLine{LineID: l.LineID, Shortfall: l.Shortfall}
		}
		return EventAllocationFailed, AllocationFailed{OrderID: a.OrderID, OrderVersion: a.OrderVersion, ReasonCode: a.ReasonCode, Message: message,
			Lines: lines, EarliestPromiseDate: a.EarliestPromiseDate}
	}
	lines := make([]EventLine, len(a.Lines))
	for i, l := range a.Lines {
		// shared with the allocation: a stored allocation is never changed in place
		lines[i] = EventLine{LineID: l.LineID, Allocations: l.Allocations, BackorderedQuantity: l.BackorderedQuantity,
			PromiseDate: l.PromiseDate}
		if lines[i].Allocations == nil {
			lines[i].Allocations = []LineAllocation{}
		}
	}
	return EventAllocationSucceeded, AllocationSucceeded{OrderID: a.OrderID, OrderVersion: a.OrderVersion, Partial: a.Status != AllocAllocated, Lines: lines}
}

// Consumption is stock that left a location with a shipped order: the integration takes it off
// the level's on-hand (and bins) in the same write as the ledger records.
type Consumption struct {
	SKU        string  `json:"skuId"`
	LocationID string  `json:"locationId"`
	Quantity   float64 `json:"quantity"`
}

// snap rounds float noise away from a quantity (values within quantityEps of an integer become it).
func snap(v float64) float64 {
	if r := math.Round(v); math.Abs(v-r) < quantityEps {
		return r
	}
	return v
}

// AllocationView is an order's allocation as GET /api/orders shows it (quantities rounded).
type AllocationView struct {
	Status              AllocationStatus `json:"status"`
	ReasonCode          string           `json:"reasonCode,omitempty"`
	OrderVersion        int64            `json:"orderVersion"`
	Lines               []LineView       `json:"lines"`
	EarliestPromiseDate *time.Time       `json:"earliestPromiseDate,omitempty"`
	UpdatedAt           time.Time        `json:"updatedAt"`
}

// LineView is one line of an AllocationView.
type LineView struct {
	LineID              string               `json:"lineId"`
	SKU                 string               `json:"skuId"`
	Quantity            Quantity             `json:"quantity"`
	Allocations         []LineAllocationView `json:"allocations"`
	BackorderedQuantity Quantity             `json:"backorderedQuantity"`
	Backorders          []BackorderView      `json:"backorders"`
	Shortfall           Quantity             `json:"shortfall"`
	PromiseDate         *time.Time           `json:"promiseDate"`
}

// LineAllocationView is one reservation of a LineView.
type LineAllocationView struct {
	LocationID    string   `json:"locationId"`
	Quantity      Quantity `json:"quantity"`
	ReservationID string   `json:"reservationId"`
}

// BackorderView is one backorder of a LineView.
type BackorderView struct {
	LocationID  string    `json:"locationId"`
	Quantity    Quantity  `json:"quantity"`
	PromiseDate time.Time `json:"promiseDate"`
}

// View renders the allocation for the API.
func (a *Allocation) View() AllocationView {
	v := AllocationView{Status: a.Status, ReasonCode: a.ReasonCode, OrderVersion: a.OrderVersion, EarliestPromiseDate: a.EarliestPromiseDate,
		UpdatedAt: a.UpdatedAt, Lines: make([]LineView, len(a.Lines))}
	for i, l := range a.Lines {
		lv := LineView{LineID: l.LineID, SKU: l.SKU, Quantity: Quantity(l.Quantity), BackorderedQuantity: Quantity(l.BackorderedQuantity),
			Shortfall: Quantity(l.Shortfall), PromiseDate: l.PromiseDate, Allocations: make([]LineAllocationView, len(l.Allocations)),
			Backorders: make([]BackorderView, len(l.Backorders))}
		for j, al := range l.Allocations {
			lv.Allocations[j] = LineAllocationView{LocationID: al.LocationID, Quantity: Quantity(al.Quantity), ReservationID: al.ReservationID}
		}
		for j, b := range l.Backorders {
			lv.Backorders[j] = BackorderView{LocationID: b.LocationID, Quantity: Quantity(b.Quantity), PromiseDate: b.PromiseDate}
		}
		v.Lines[i] = lv
	}
	return v
}
