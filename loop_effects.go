package supplyplan

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The loop runtime's effects on planning data. A transition of a built-in loop may change the
// tenant's data (docs/loops.md, "Built-in loops"): the procurement loop's receipts add stock at
// their location and lower the open quantity of its purchase order; closing or cancelling it
// closes the purchase order. The orders loop allocates its order, ships it (its reservations leave
// on-hand) or cancels it (its reservations are released), through order allocation. The returns
// loop's resolve puts its restock lines back on hand. The runtime records each effect on the instance (PENDING) in the same
// journal entry as the transition, then applies it through the tenant's own actor
// (TenantState.ApplyLoopEffect), which remembers the effect's id so that a retry after a crash
// applies it once; the instance then records it APPLIED.

// BuiltinProcurementLoop is the built-in procurement loop's name.
const BuiltinProcurementLoop = GlobalLoopScope + "/procurement"

// BuiltinOrdersLoop is the built-in orders loop's name.
const BuiltinOrdersLoop = GlobalLoopScope + "/orders"

// BuiltinReturnsLoop is the built-in returns loop's name.
const BuiltinReturnsLoop = GlobalLoopScope + "/returns"

// LoopHasEffects reports whether instances of loop may change planning data (their transitions'
// effects are checked against the tenant before they are recorded).
func LoopHasEffects(loop string) bool {
	return loop == BuiltinProcurementLoop || loop == BuiltinOrdersLoop || loop == BuiltinReturnsLoop
}

// Effect kinds and statuses.
const (
	LoopEffectStockReceipt  = "STOCK_RECEIPT"
	LoopEffectPurchaseOrder = "PURCHASE_ORDER_STATUS"
	LoopEffectAllocation    = "ORDER_ALLOCATION"
	LoopEffectShipment      = "ORDER_SHIPMENT"
	LoopEffectCancellation  = "ORDER_CANCELLATION"

	LoopEffectPending = "PENDING"
	LoopEffectApplied = "APPLIED"
	LoopEffectFailed  = "FAILED"
)

// LoopStockLine is a quantity received at a location.
type LoopStockLine struct {
	SKU        string     `json:"sku"`
	LocationID string     `json:"locationId"`
	Quantity   float64    `json:"quantity"`
	LotID      string     `json:"lotId,omitempty"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
}

// LoopEffect is an effect as the instance records it.
type LoopEffect struct {
	Seq                 int64           `json:"seq"`
	ID                  string          `json:"id"`
	Kind                string          `json:"kind"`
	Status              string          `json:"status"`
	Lines               []LoopStockLine `json:"lines,omitempty"`
	PurchaseOrderID     string          `json:"purchaseOrderId,omitempty"`
	PurchaseOrderStatus string          `json:"purchaseOrderStatus,omitempty"`
	OrderID             string          `json:"orderId,omitempty"`
	// Result is what the effect produced (an order allocation's status).
	Result    string     `json:"result,omitempty"`
	Error     string     `json:"error,omitempty"`
	AppliedAt *time.Time `json:"appliedAt,omitempty"`
}

// LoopTenantEffect is what the tenant applies: stock received and a purchase order's change.
type LoopTenantEffect struct {
	ID         string          `json:"id"`
	InstanceID string          `json:"instanceId"`
	Seq        int64           `json:"seq"`
	Lines      []LoopStockLine `json:"lines,omitempty"`
	// PurchaseOrderID's open quantities are lowered by Lines; PurchaseOrderStatus, when set,
	// becomes its status.
	PurchaseOrderID     string `json:"purchaseOrderId,omitempty"`
	PurchaseOrderStatus string `json:"purchaseOrderStatus,omitempty"`
	// OrderID is a customer order to allocate through order allocation, or, with OrderStatus
	// (SHIPPED or CANCELLED), to ship or cancel through it.
	OrderID     string `json:"orderId,omitempty"`
	OrderStatus string `json:"orderStatus,omitempty"`
	// Restock: Lines are a return's restock (payload.restock), not a receipt (payload.lines).
	Restock bool `json:"restock,omitempty"`
}

// Kind names the effect for the instance's record.
func (e *LoopTenantEffect) Kind() string {
	if e.OrderID != "" {
		switch e.OrderStatus {
		case OrderShipped:
			return LoopEffectShipment
		case OrderCancelled:
			return LoopEffectCancellation
		}
		return LoopEffectAllocation
	}
	if len(e.Lines) > 0 {
		return LoopEffectStockReceipt
	}
	return LoopEffectPurchaseOrder
}

// Tenant is the effect of inst as the tenant applies it (a pending effect retried at the next
// start). The stock lines of the returns loop's effect are its restock (PlanLoopEffects), so a
// retry's errors name payload.restock, as the first attempt's do.
func (e LoopEffect) Tenant(inst *LoopInstance) LoopTenantEffect {
	t := LoopTenantEffect{ID: e.ID, InstanceID: inst.ID, Seq: e.Seq, Lines: e.Lines, PurchaseOrderID: e.PurchaseOrderID,
		PurchaseOrderStatus: e.PurchaseOrderStatus, OrderID: e.OrderID,
		Restock: inst.Loop == BuiltinReturnsLoop && e.Kind == LoopEffectStockReceipt}
	switch e.Kind {
	case LoopEffectShipment:
		t.OrderStatus = OrderShipped
	case LoopEffectCancellation:
		t.OrderStatus = OrderCancelled
	}
	return t
}

// LoopEffectPlanner computes the effect of transition on inst (nil: none). It runs in the
// runtime's actor: it reads only its arguments.
type LoopEffectPlanner func(inst *LoopInstance, transition string, payload json.RawMessage, seq int64) (*LoopTenantEffect, error)

// loopEffectID is the effect's id: the instance and the seq of its event.
func loopEffectID(instanceID string, seq int64) string { return fmt.Sprintf("%s#%d", instanceID, seq) }

// PlanLoopEffects is the effect planner of the built-in loops: the procurement loop's receipts and
// closings, the orders loop's allocation, shipment and cancellation of its order, the returns
// loop's restock. Other loops (quality, an organization's own) have no effects.
func PlanLoopEffects(inst *LoopInstance, transition string, payload json.RawMessage, seq int64) (*LoopTenantEffect, error) {
	switch inst.Loop {
	case BuiltinOrdersLoop:
		if inst.Subject == nil || inst.Subject.Kind != LoopSubjectOrder {
			return nil, nil // not started from an order: a state machine only
		}
		e := &LoopTenantEffect{ID: loopEffectID(inst.ID, seq), InstanceID: inst.ID, Seq: seq, OrderID: inst.Subject.ID}
		switch transition {
		case "allocate":
		case "ship":
			e.OrderStatus = OrderShipped
		case "cancel", "expire":
			e.OrderStatus = OrderCancelled
		default:
			return nil, nil
		}
		return e, nil
	case BuiltinReturnsLoop:
		if transition != "resolve" {
			return nil, nil
		}
		lines, err := ReturnRestockLines(payload)
		if err != nil || len(lines) == 0 {
			return nil, err
		}
		return &LoopTenantEffect{ID: loopEffectID(inst.ID, seq), InstanceID: inst.ID, Seq: seq, Lines: lines, Restock: true}, nil
	case BuiltinProcurementLoop:
	default:
		return nil, nil
	}
	po := ""
	if inst.Subject != nil && inst.Subject.Kind == LoopSubjectPurchaseOrder {
		po = inst.Subject.ID
	}
	e := &LoopTenantEffect{ID: loopEffectID(inst.ID, seq), InstanceID: inst.ID, Seq: seq, PurchaseOrderID: po}
	switch transition {
	case "receive", "receive_partial":
		lines, err := ProcurementReceiptLines(inst, payload)
		if err != nil {
			return nil, err
		}
		e.Lines = lines
		if transition == "receive" && po != "" {
			e.PurchaseOrderStatus = "RECEIVED"
		}
		return e, nil
	case "close_short":
		e.PurchaseOrderStatus = "CLOSED"
	case "cancel", "withdraw", "expire":
		e.PurchaseOrderStatus = "CANCELLED"
	default:
		return nil, nil
	}
	if po == "" {
		return nil, nil
	}
	return e, nil
}

// LoopEventChangesStock reports whether an outbound loop event announces a change of stock (a
// procurement receipt, an order's allocation, shipment or cancellation, a return's restock): the
// others need no alert evaluation.
func LoopEventChangesStock(eventType string) bool {
	switch eventType {
	case "loop.procurement.receive", "loop.procurement.receive_partial", "loop.orders.allocate", "loop.orders.ship",
		"loop.orders.cancel", "loop.orders.expire", "loop.orders.canceled", "loop.returns.resolve":
		return true
	}
	return false
}

// ReturnRestockLines reads the restock lines of a return's resolve: each goes back on hand at its
// location (the payload's schema has checked their shape).
func ReturnRestockLines(payload json.RawMessage) ([]LoopStockLine, error) {
	var p struct {
		Restock []struct {
			SKU        string  `json:"sku"`
			LocationID string  `json:"locationId"`
			Quantity   float64 `json:"quantity"`
		} `json:"restock"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, Invalid("payload", "%v", err)
	}
	out := make([]LoopStockLine, 0, len(p.Restock))
	for _, l := range p.Restock {
		out = append(out, LoopStockLine{SKU: l.SKU, LocationID: l.LocationID, Quantity: l.Quantity})
	}
	return out, nil
}

// ProcurementReceiptLines reads the lines of a procurement receipt: a line without locationId is
// received at the instance's destination (its purchase order's or recommendation's).
func ProcurementReceiptLines(inst *LoopInstance, payload json.RawMessage) ([]LoopStockLine, error) {
	var p struct {
		Lines []struct {
			SKU        string  `json:"sku"`
			LocationID string  `json:"locationId"`
			Quantity   float64 `json:"quantity"`
			LotID      string  `json:"lotId"`
			ExpiresAt  string  `json:"expiresAt"`
		} `json:"lines"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, Invalid("payload", "%v", err)
	}
	dest := ""
	if inst.Subject != nil {
		dest = inst.Subject.DestinationLocationID
	}
	fe := FieldErrors{}
	out := make([]LoopStockLine, 0, len(p.Lines))
	for i, l := range p.Lines {
		loc := l.LocationID
		if loc == "" {
			loc = dest
		}
		if loc == "" {
			fe.Add(fmt.Sprintf("payload.lines[%d].locationId", i), "is required: the instance has no destination location (start it from a purchase order or recommendation, or name the location)")
		}
		line := LoopStockLine{SKU: l.SKU, LocationID: loc, Quantity: l.Quantity, LotID: l.LotID}
		if l.ExpiresAt != "" {
			t, ok := ParseTime(l.ExpiresAt)
			if !ok {
				fe.Add(fmt.Sprintf("payload.lines[%d].expiresAt", i), "must be a date")
			} else {
				line.ExpiresAt = &t
			}
		}
		out = append(out, line)
	}
	return out, fe.Err()
}

// KindLoopEffectApplied is the record of an effect a tenant applied (by effect id).
const KindLoopEffectApplied = "loopeffect"

func init() {
	RegisterKind(KindLoopEffectApplied, func() any { return new(LoopEffectRecord) })
}

// LoopEffectRecord remembers that a tenant applied an effect.
type LoopEffectRecord struct {
	ID        string    `json:"id"`
	AppliedAt time.Time `json:"appliedAt"`
}

// LoopEffectsState is the effects a tenant applied (sub-state of TenantState).
type LoopEffectsState struct {
	LoopEffects map[string]*LoopEffectRecord `json:"loopEffects,omitempty"`
}

func (s *LoopEffectsState) init() { initMap(&s.LoopEffects) }

// Apply stores one applied effect.
func (s *LoopEffectsState) Apply(r Record) error {
	if r.Kind != KindLoopEffectApplied {
		return unknownKind("loop effects", r)
	}
	s.init()
	return putValue(s.LoopEffects, r)
}

// ForgetInstances returns the deletions of the applied-effect ids of the given loop instances
// (an effect id is "<instance id>#<seq>"). The runtime calls it for the instances it purged: their
// effects are never sent again, so the ids that kept a resend from applying twice can go.
func (s *LoopEffectsState) ForgetInstances(instanceIDs map[string]bool) []Record {
	var ids []string
	for id := range s.LoopEffects {
		if i := strings.LastIndexByte(id, '#'); i > 0 && instanceIDs[id[:i]] {
			ids = append(ids, id)
		}
	}
	return delAll(KindLoopEffectApplied, ids)
}

// CheckLoopStock checks that the effect's lines name known products and locations, each problem
// keyed by its payload path (payload.lines[i], or payload.restock[i] for a return's restock).
func (s *TenantState) CheckLoopStock(e *LoopTenantEffect) error {
	field := "payload.lines"
	if e.Restock {
		field = "payload.restock"
	}
	fe := FieldErrors{}
	for i, l := range e.Lines {
		if _, ok := s.ProductBySKU(l.SKU); !ok {
			fe.Add(fmt.Sprintf("%s[%d].sku", field, i), "unknown product %q", l.SKU)
		}
		if _, ok := s.Locations[l.LocationID]; !ok && l.LocationID != "" {
			fe.Add(fmt.Sprintf("%s[%d].locationId", field, i), "unknown location %q", l.LocationID)
		}
	}
	return fe.Err()
}

// ApplyLoopEffect applies an effect once: stock received is added to on-hand at its location (a
// lot with its expiry, when named) and taken off its purchase order's open quantity; the order's
// status changes when the effect says so. applied is false when the effect was applied before.
func (s *TenantState) ApplyLoopEffect(e LoopTenantEffect, now time.Time) (recs []Record, applied bool, err error) {
	if _, ok := s.LoopEffects[e.ID]; ok {
		return nil, false, nil
	}
	if e.OrderID != "" {
		return nil, false, Errorf(EINTERNAL, "an order allocation effect is applied by AllocateLoopOrder")
	}
	if err := s.CheckLoopStock(&e); err != nil {
		return nil, false, err
	}
	levels := map[string]*InventoryLevel{}
	var keys []string
	for _, l := range e.Lines {
		p, _ := s.ProductBySKU(l.SKU)
		k := InventoryKey(p.ID, l.LocationID)
		lv, ok := levels[k]
		if !ok {
			c := s.levelCopy(p.ID, l.LocationID, now)
			lv = &c
			levels[k] = lv
			keys = append(keys, k)
		}
		// Lots picks and shipments used up go before a receipt adds one, so the stored lots follow
		// the stock rather than growing with every receipt (levelCopy cloned them).
		lv.Lots = lv.FEFOLots()
		lv.QuantityOnHand += l.Quantity
		if lv.Bins == nil {
			lv.Bins = map[string]float64{}
		}
		bin := DefaultBin
		if len(lv.Bins) > 0 && lv.Bins[DefaultBin] == 0 {
			bin = firstBin(lv.Bins)
		}
		lv.Bins[bin] += l.Quantity
		if l.LotID != "" {
			if i := slices.IndexFunc(lv.Lots, func(x Lot) bool { return x.LotID == l.LotID }); i >= 0 {
				lv.Lots[i].Quantity += l.Quantity
			} else {
				lv.Lots = append(lv.Lots, Lot{LotID: l.LotID, Quantity: l.Quantity, ExpiresAt: l.ExpiresAt})
			}
		}
		lv.UpdatedAt = now
	}
	for _, k := range keys {
		recs = append(recs, Put(KindInventory, k, levels[k]))
	}
	if e.PurchaseOrderID != "" {
		if cur, ok := s.PurchaseOrders[e.PurchaseOrderID]; ok {
			po := *cur
			po.Lines = slices.Clone(cur.Lines)
			for _, l := range e.Lines {
				p, _ := s.ProductBySKU(l.SKU)
				left := l.Quantity
				for i := range po.Lines {
					if left <= 0 {
						break
					}
					if po.Lines[i].SKU != l.SKU && (p == nil || po.Lines[i].SKU != p.ID && po.Lines[i].SKU != p.SKU) {
						continue
					}
					take := math.Min(left, po.Lines[i].Quantity)
					po.Lines[i].Quantity -= take
					left -= take
				}
			}
			if e.PurchaseOrderStatus != "" {
				po.Status = e.PurchaseOrderStatus
			} else if len(e.Lines) > 0 && !slices.ContainsFunc(po.Lines, func(l POLine) bool { return l.Quantity > 0 }) {
				po.Status = "RECEIVED"
			}
			po.UpdatedAt = now
			recs = append(recs, Put(KindPurchaseOrder, po.ExternalPoNumber, &po))
		}
	}
	recs = append(recs, Put(KindLoopEffectApplied, e.ID, &LoopEffectRecord{ID: e.ID, AppliedAt: now}))
	return recs, true, nil
}

// ApplyLoopOrder applies an orders loop effect once, through order allocation
// (docs/allocation.md). Without OrderStatus the order is allocated (its lines, fill policy and
// sourcing), as POST /api/orders/{id}/allocate does. With SHIPPED or CANCELLED the order takes that
// status, as an orders import saying so does: shipping consumes its reservations (the quantities
// leave on-hand at their locations), cancelling releases them (available to promise again); an
// order already in that status changes nothing, and shipping a cancelled order (or cancelling a
// shipped one) is a conflict. It returns the records, the allocation's events and its status.
func (s *TenantState) ApplyLoopOrder(e LoopTenantEffect, now time.Time) ([]Record, []DomainEvent, string, error) {
	if _, ok := s.LoopEffects[e.ID]; ok {
		return nil, nil, "", nil
	}
	applied := Put(KindLoopEffectApplied, e.ID, &LoopEffectRecord{ID: e.ID, AppliedAt: now})
	if e.OrderStatus == "" {
		v, w, err := s.AllocateOrderByID(e.OrderID, now)
		if err != nil {
			return nil, nil, "", err
		}
		status := ""
		if v.Allocation != nil {
			status = string(v.Allocation.Status)
		}
		return append(w.Records, applied), w.Events, status, nil
	}
	cur, ok := s.Orders[e.OrderID]
	if !ok {
		return nil, nil, "", NotFound("Order")
	}
	switch have, _ := AllocStatusOf(cur.Status); {
	case e.OrderStatus != OrderShipped && e.OrderStatus != OrderCancelled:
		return nil, nil, "", Errorf(EINTERNAL, "an order effect sets SHIPPED or CANCELLED, not %q", e.OrderStatus)
	case have == e.OrderStatus:
		status := ""
		if a := s.Allocations[e.OrderID]; a != nil {
			status = string(a.Status)
		}
		return []Record{applied}, nil, status, nil
	case have != OrderOpen:
		return nil, nil, "", Conflict("Order %s is %s: it cannot become %s", cur.ExternalOrderID, cur.Status, e.OrderStatus)
	}
	o := *cur
	o.Status, o.UpdatedAt = e.OrderStatus, now
	w := s.AllocateOrders([]*Order{&o}, now)
	status := ""
	if a := w.Outcomes[0].Allocation; a != nil {
		status = string(a.Status)
	}
	recs := make([]Record, 0, len(w.Records)+2)
	recs = append(recs, Put(KindOrder, o.ExternalOrderID, &o))
	recs = append(recs, w.Records...)
	return append(recs, applied), w.Events, status, nil
}

// LoopSubjectOf resolves the planning data an instance of a built-in loop starts from: for the
// procurement loop, input {"purchaseOrderId"} (an open purchase order) or {"recommendationId"} (an
// APPROVED transfer recommendation); for the orders loop, {"orderId"} (a customer order). None: no
// subject.
func (s *TenantState) LoopSubjectOf(loop string, input json.RawMessage) (*LoopSubject, error) {
	if loop == BuiltinOrdersLoop {
		var in struct {
			OrderID *string `json:"orderId"`
		}
		if err := json.Unmarshal(input, &in); err != nil || in.OrderID == nil {
			return nil, nil
		}
		o, ok := s.Orders[strings.TrimSpace(*in.OrderID)]
		if !ok {
			return nil, Invalid("input.orderId", "unknown order %q", *in.OrderID)
		}
		sub := &LoopSubject{Kind: LoopSubjectOrder, ID: o.ExternalOrderID}
		for _, l := range o.Lines {
			sub.Lines = append(sub.Lines, LoopSubjectLine{SKU: l.SKU, Quantity: l.Quantity})
		}
		return sub, nil
	}
	if loop != BuiltinProcurementLoop {
		return nil, nil
	}
	var in struct {
		PurchaseOrderID  *string `json:"purchaseOrderId"`
		RecommendationID *string `json:"recommendationId"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, nil // the input is not the procurement shape: no subject
	}
	switch {
	case in.PurchaseOrderID != nil && in.RecommendationID != nil:
		return nil, Invalid("input.purchaseOrderId", "give a purchase order or a recommendation, not both")
	case in.PurchaseOrderID != nil:
		po, ok := s.PurchaseOrders[strings.TrimSpace(*in.PurchaseOrderID)]
		if !ok {
			return nil, Invalid("input.purchaseOrderId", "unknown purchase order %q", *in.PurchaseOrderID)
		}
		if !po.Open() {
			return nil, Conflict("Purchase order %s is %s: a procurement starts from an open purchase order", po.ExternalPoNumber, po.Status)
		}
		sub := &LoopSubject{Kind: LoopSubjectPurchaseOrder, ID: po.ExternalPoNumber, DestinationLocationID: po.DestinationLocationID, SupplierID: po.SupplierID}
		for _, l := range po.Lines {
			sub.Lines = append(sub.Lines, LoopSubjectLine{SKU: l.SKU, Quantity: l.Quantity})
		}
		return sub, nil
	case in.RecommendationID != nil:
		r, ok := s.Recommendations[strings.TrimSpace(*in.RecommendationID)]
		if !ok {
			return nil, Invalid("input.recommendationId", "unknown recommendation %q", *in.RecommendationID)
		}
		if r.Status != RecApproved {
			return nil, Conflict("Recommendation %s is %s: a procurement starts from an APPROVED recommendation", r.ID, r.Status)
		}
		sku := r.ProductMasterID
		if p, ok := s.Products[r.ProductMasterID]; ok && p.SKU != "" {
			sku = p.SKU
		}
		return &LoopSubject{Kind: LoopSubjectRecommendation, ID: r.ID, DestinationLocationID: r.DestLocationID,
			Lines: []LoopSubjectLine{{SKU: sku, Quantity: r.Quantity}}}, nil
	}
	return nil, nil
}

// RecordEffect records the outcome of an effect on its instance: APPLIED changes nothing else; a
// FAILED effect (the tenant refused it: the product or location is gone) fails the instance, with
// an audit event saying why.
func (s *LoopRunState) RecordEffect(instanceID, effectID, status, result, msg string, now time.Time) (LoopResult, []Record, error) {
	cur, ok := s.Instances[instanceID]
	if !ok {
		return LoopResult{}, nil, NotFound("Instance")
	}
	i := slices.IndexFunc(cur.Effects, func(e LoopEffect) bool { return e.ID == effectID })
	if i < 0 || cur.Effects[i].Status != LoopEffectPending {
		return LoopResult{Instance: *cur}, nil, nil
	}
	inst := *cur
	inst.Effects = slices.Clone(cur.Effects)
	inst.Effects[i].Status, inst.Effects[i].Result, inst.Effects[i].Error = status, result, msg
	if status == LoopEffectApplied {
		inst.Effects[i].AppliedAt = &now
		return LoopResult{Instance: inst}, []Record{Put(KindLoopInstance, inst.ID, &inst)}, nil
	}
	res := LoopResult{}
	reason := "effect " + effectID + " failed: " + msg
	from := inst.State
	if inst.Status.Open() {
		inst.Status = LoopFailed
		inst.ClosedAt, inst.CloseReason = &now, reason
		inst.TimerDueAt, inst.TimerTransition, inst.TimerRemainingMs = nil, "", 0
	}
	recs, err := s.change(&inst, LoopEvent{Type: LoopEventFailed, From: from, To: inst.State, Status: inst.Status, Reason: reason,
		Actor: SystemLoopActor}, nil, LoopRequestMeta{Actor: SystemLoopActor}, now, &res, nil)
	return res, recs, err
}
