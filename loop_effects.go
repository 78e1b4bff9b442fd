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
// closes the purchase order. The runtime records each effect on the instance (PENDING) in the same
// journal entry as the transition, then applies it through the tenant's own actor
// (TenantState.ApplyLoopEffect), which remembers the effect's id so that a retry after a crash
// applies it once; the instance then records it APPLIED.

// BuiltinProcurementLoop is the built-in procurement loop's name.
const BuiltinProcurementLoop = GlobalLoopScope + "/procurement"

// BuiltinOrdersLoop is the built-in orders loop's name.
const BuiltinOrdersLoop = GlobalLoopScope + "/orders"

// Effect kinds and statuses.
const (
	LoopEffectStockReceipt  = "STOCK_RECEIPT"
	LoopEffectPurchaseOrder = "PURCHASE_ORDER_STATUS"
	LoopEffectAllocation    = "ORDER_ALLOCATION"

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
	// OrderID is a customer order to allocate through order allocation.
	OrderID string `json:"orderId,omitempty"`
}

// Kind names the effect for the instance's record.
func (e *LoopTenantEffect) Kind() string {
	if e.OrderID != "" {
		return LoopEffectAllocation
	}
	if len(e.Lines) > 0 {
		return LoopEffectStockReceipt
	}
	return LoopEffectPurchaseOrder
}

// LoopEffectPlanner computes the effect of transition on inst (nil: none). It runs in the
// runtime's actor: it reads only its arguments.
type LoopEffectPlanner func(inst *LoopInstance, transition string, payload json.RawMessage, seq int64) (*LoopTenantEffect, error)

// loopEffectID is the effect's id: the instance and the seq of its event.
func loopEffectID(instanceID string, seq int64) string { return fmt.Sprintf("%s#%d", instanceID, seq) }

// PlanLoopEffects is the effect planner of the built-in loops: the procurement loop's receipts and
// closings. Other loops have no effects.
func PlanLoopEffects(inst *LoopInstance, transition string, payload json.RawMessage, seq int64) (*LoopTenantEffect, error) {
	if inst.Loop == BuiltinOrdersLoop && transition == "allocate" && inst.Subject != nil && inst.Subject.Kind == LoopSubjectOrder {
		return &LoopTenantEffect{ID: loopEffectID(inst.ID, seq), InstanceID: inst.ID, Seq: seq, OrderID: inst.Subject.ID}, nil
	}
	if inst.Loop != BuiltinProcurementLoop {
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
// procurement receipt): the others need no alert evaluation.
func LoopEventChangesStock(eventType string) bool {
	return eventType == "loop.procurement.receive" || eventType == "loop.procurement.receive_partial"
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

// CheckLoopStock checks that the lines name known products and locations, each problem keyed by
// its payload path.
func (s *TenantState) CheckLoopStock(lines []LoopStockLine) error {
	fe := FieldErrors{}
	for i, l := range lines {
		if _, ok := s.ProductBySKU(l.SKU); !ok {
			fe.Add(fmt.Sprintf("payload.lines[%d].sku", i), "unknown product %q", l.SKU)
		}
		if _, ok := s.Locations[l.LocationID]; !ok && l.LocationID != "" {
			fe.Add(fmt.Sprintf("payload.lines[%d].locationId", i), "unknown location %q", l.LocationID)
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
	if err := s.CheckLoopStock(e.Lines); err != nil {
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

// AllocateLoopOrder applies an order allocation effect once: the order is allocated through order
// allocation (its lines, fill policy and sourcing; docs/allocation.md), as POST
// /api/orders/{id}/allocate does. It returns the records, the allocation's events and its status.
func (s *TenantState) AllocateLoopOrder(e LoopTenantEffect, now time.Time) ([]Record, []DomainEvent, string, error) {
	if _, ok := s.LoopEffects[e.ID]; ok {
		return nil, nil, "", nil
	}
	v, w, err := s.AllocateOrderByID(e.OrderID, now)
	if err != nil {
		return nil, nil, "", err
	}
	status := ""
	if v.Allocation != nil {
		status = string(v.Allocation.Status)
	}
	recs := append(w.Records, Put(KindLoopEffectApplied, e.ID, &LoopEffectRecord{ID: e.ID, AppliedAt: now}))
	return recs, w.Events, status, nil
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
