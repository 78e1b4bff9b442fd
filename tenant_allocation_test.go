package supplyplan

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// tenantFixture is a tenant state written through the import path, the way the actors write it:
// every write's records go through a JSON round trip (as the journal replays them) and apply.
type tenantFixture struct {
	t   *testing.T
	st  *TenantState
	now time.Time
	// events are the allocation events written to the outbox, in order.
	events []DomainEvent
}

func newTenantFixture(t *testing.T) *tenantFixture {
	t.Helper()
	st := NewTenantState("org_alloc")
	st.SetAllocationSettings(AllocationSettings{HoldTTL: 30 * time.Minute})
	return &tenantFixture{t: t, st: st, now: allocT0}
}

// apply applies one write.
func (f *tenantFixture) apply(recs []Record) {
	f.t.Helper()
	b, err := EncodeRecords(recs)
	if err != nil {
		f.t.Fatalf("encode: %v", err)
	}
	decoded, err := DecodeRecords(b)
	if err != nil {
		f.t.Fatalf("decode: %v", err)
	}
	for _, r := range decoded {
		if err := f.st.Apply(r); err != nil {
			f.t.Fatalf("apply %s %s: %v", r.Kind, r.ID, err)
		}
	}
}

// importRows imports one chunk; an orders chunk is allocated in the same write, as the import job
// does. It returns the chunk's row errors.
func (f *tenantFixture) importRows(kind ImportKind, body string) []RowError {
	f.t.Helper()
	rows := fixtureRows(f.t, kind, []byte(body))
	res := f.st.ApplyImport(rows, f.now)
	recs := res.Records
	if kind == ImportOrders {
		w := f.st.AllocateImported(recs, f.now)
		recs = append(recs, w.Records...)
		f.events = append(f.events, w.Events...)
	}
	f.apply(recs)
	return res.Errors
}

func (f *tenantFixture) mustImport(kind ImportKind, body string) {
	f.t.Helper()
	if errs := f.importRows(kind, body); len(errs) > 0 {
		f.t.Fatalf("%s import: %+v", kind, errs)
	}
}

// seed imports products A and B, locations DC and STORE, and stock.
func (f *tenantFixture) seed(stock string) {
	f.t.Helper()
	f.mustImport(ImportCatalog, `{"products":[{"externalId":"A","sku":"SKU-A"},{"externalId":"B"}]}`)
	f.mustImport(ImportInventory, stock)
}

func (f *tenantFixture) allocation(id string) *Allocation {
	f.t.Helper()
	a := f.st.Allocations[id]
	if a == nil {
		f.t.Fatalf("order %s has no allocation", id)
	}
	return a
}

// reservedAt sums the active reservations of the ledger at (sku, loc), from the reservations
// themselves (not the index).
func (f *tenantFixture) reservedAt(sku, loc string) float64 {
	var t float64
	for _, r := range f.st.Reservations {
		if r.SKU == sku && r.LocationID == loc && r.ActiveAt(f.now) {
			t += r.Quantity
		}
	}
	return t
}

// checkLedger fails when the ledger reserves more than the stock allows anywhere, or the finder
// reports anything.
func (f *tenantFixture) checkLedger() {
	f.t.Helper()
	for _, l := range f.st.Inventory {
		if got := f.reservedAt(l.SKU, l.LocationID); got > l.QuantityOnHand-l.QuantityReserved+1e-9 {
			f.t.Errorf("%s@%s: %g reserved of %g on hand (%g reserved outside)", l.SKU, l.LocationID, got, l.QuantityOnHand, l.QuantityReserved)
		}
	}
	if inc := f.st.AllocationInconsistencies(f.now); len(inc) > 0 {
		f.t.Errorf("inconsistencies: %+v", inc)
	}
}

func TestTenantAllocationOnImport(t *testing.T) {
	f := newTenantFixture(t)
	f.seed(`{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":10},{"skuId":"A","locationId":"STORE","quantityOnHand":3},
		{"skuId":"B","locationId":"DC","quantityOnHand":5}]}`)
	f.mustImport(ImportOrders, `{"orders":[
		{"externalOrderId":"SO-1","priority":1,"lines":[{"skuId":"SKU-A","quantity":6,"locationId":"DC"},{"skuId":"B","quantity":2,"locationId":"DC"}]},
		{"externalOrderId":"SO-2","priority":0,"lines":[{"lineId":"x","skuId":"A","quantity":6,"locationId":"DC"}]},
		{"externalOrderId":"SO-3","fill":"FILL_OR_KILL","lines":[{"skuId":"B","quantity":9,"locationId":"DC"}]}]}`)
	// SO-2 goes first (priority 0) and takes 6 of A at DC; SO-1 gets the 4 left (PARTIAL).
	if a := f.allocation("SO-2"); a.Status != AllocAllocated || a.Lines[0].LineID != "x" || a.Lines[0].Reserved() != 6 {
		t.Errorf("SO-2: %v", allocView(a))
	}
	a := f.allocation("SO-1")
	if a.Status != AllocPartial || a.Lines[0].Reserved() != 4 || a.Lines[0].Shortfall != 2 || a.Lines[1].Reserved() != 2 {
		t.Errorf("SO-1: %v", allocView(a))
	}
	if a := f.allocation("SO-3"); a.Status != AllocFailed || a.ReasonCode != ReasonInsufficientATP {
		t.Errorf("SO-3: %v", allocView(a))
	}
	if got := f.reservedAt("A", "DC"); got != 10 {
		t.Errorf("reserved A@DC = %g, want 10", got)
	}
	// One event per order: two succeeded (SO-1 partial), one failed.
	kinds := map[string]string{}
	for _, e := range f.events {
		switch d := e.Data.(type) {
		case AllocationSucceeded:
			kinds[d.OrderID] = fmt.Sprintf("%s partial=%v", e.Type, d.Partial)
		case AllocationFailed:
			kinds[d.OrderID] = e.Type + " " + d.ReasonCode
		}
	}
	want := map[string]string{"SO-1": EventAllocationSucceeded + " partial=true", "SO-2": EventAllocationSucceeded + " partial=false",
		"SO-3": EventAllocationFailed + " " + ReasonInsufficientATP}
	if len(f.events) != 3 || fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	if len(f.st.PendingEvents) != 3 {
		t.Errorf("%d events in the outbox, want 3", len(f.st.PendingEvents))
	}
	// The order shows its allocation; ATP and availability read the ledger.
	v, err := f.st.GetOrderView("SO-1")
	if err != nil || v.Allocation == nil || v.Allocation.Status != AllocPartial || v.Fill != FillPartial || v.MaxLocations != 1 || v.Priority != 1 ||
		v.Lines[0].LineID != "1" || v.Lines[1].LineID != "2" {
		t.Errorf("order view %+v %v", v, err)
	}
	pg, err := f.st.ListATP(ATPQuery{SKU: "SKU-A"}, f.now)
	if err != nil || pg.Total != 2 || pg.Items[0].LocationID != "DC" || pg.Items[0].Available != 0 || pg.Items[0].Reserved != 10 ||
		pg.Items[1].LocationID != "STORE" || pg.Items[1].Available != 3 {
		t.Errorf("ATP %+v %v", pg, err)
	}
	av, err := f.st.Availability("A", []string{"DC"}, f.now)
	if err != nil || av[0].Reserved != 10 || av[0].Available != 0 || av[0].ATP != 0 {
		t.Errorf("availability %+v %v", av, err)
	}
	// A transfer cannot move what orders hold.
	if _, _, err := f.st.CreateTransfer(TransferInput{ProductMasterID: ptr("A"), SourceLocationID: ptr("DC"), DestLocationID: ptr("STORE"),
		Quantity: ptr(1.0)}, "test", f.now); ErrorCode(err) != EVALIDATION || !strings.Contains(err.Error(), "0 available") {
		t.Errorf("a transfer of reserved stock: %v", err)
	}
	f.checkLedger()

	// The same import again (a replayed chunk): nothing changes, no second event.
	f.events = nil
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"SO-2","priority":0,"lines":[{"lineId":"x","skuId":"A","quantity":6,"locationId":"DC"}]}]}`)
	if len(f.events) != 0 || f.allocation("SO-2").Lines[0].Reserved() != 6 {
		t.Errorf("a replay: events %v, %v", f.events, allocView(f.allocation("SO-2")))
	}
	f.checkLedger()
}

// TestTenantAllocationSameItemTwice: two lines of one sku in one order are checked against their
// sum (the oversell of a batch with the same item twice).
func TestTenantAllocationSameItemTwice(t *testing.T) {
	f := newTenantFixture(t)
	f.seed(`{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":10}]}`)
	f.mustImport(ImportOrders, `{"orders":[
		{"externalOrderId":"FOK","fill":"FILL_OR_KILL","lines":[{"skuId":"A","quantity":6,"locationId":"DC"},{"skuId":"A","quantity":6,"locationId":"DC"}]}]}`)
	if a := f.allocation("FOK"); a.Status != AllocFailed || f.reservedAt("A", "DC") != 0 {
		t.Errorf("FILL_OR_KILL with 12 of 10: %v, %g reserved", allocView(a), f.reservedAt("A", "DC"))
	}
	f.mustImport(ImportOrders, `{"orders":[
		{"externalOrderId":"P","lines":[{"skuId":"A","quantity":6,"locationId":"DC"},{"skuId":"A","quantity":6,"locationId":"DC"}]},
		{"externalOrderId":"Q","lines":[{"skuId":"A","quantity":1,"locationId":"DC"}]}]}`)
	a := f.allocation("P")
	if a.Status != AllocPartial || a.Lines[0].Reserved() != 6 || a.Lines[1].Reserved() != 4 {
		t.Errorf("PARTIAL 6+6 of 10: %v", allocView(a))
	}
	if q := f.allocation("Q"); q.Status != AllocFailed || f.reservedAt("A", "DC") != 10 {
		t.Errorf("the order after it: %v, %g reserved", allocView(q), f.reservedAt("A", "DC"))
	}
	f.checkLedger()
}

// TestTenantAllocationReleases: a cancel gives the stock back, a line reduced releases its part,
// a shipment consumes the reservation from on hand (ATP does not move), a confirmed order's
// reservations are committed, an older version is ignored.
func TestTenantAllocationReleases(t *testing.T) {
	f := newTenantFixture(t)
	f.seed(`{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":10,"binId":"A-1"}]}`)
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"O","version":2,"lines":[{"skuId":"A","quantity":8,"locationId":"DC"}]}]}`)
	atp := func() float64 {
		pg, err := f.st.ListATP(ATPQuery{SKU: "A", LocationID: "DC"}, f.now)
		if err != nil {
			t.Fatal(err)
		}
		return pg.Items[0].Available
	}
	if atp() != 2 {
		t.Fatalf("ATP after 8 reserved = %g", atp())
	}
	// version 1 arrives late: ignored, the order and its allocation stay at version 2
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"O","version":1,"status":"CANCELLED","lines":[{"skuId":"A","quantity":8,"locationId":"DC"}]}]}`)
	if o := f.st.Orders["O"]; o.Version != 2 || o.Status != "OPEN" || atp() != 2 || f.allocation("O").OrderVersion != 2 {
		t.Errorf("an older version applied: %+v, ATP %g", o, atp())
	}
	// version 3 reduces the line: 3 come back
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"O","version":3,"lines":[{"skuId":"A","quantity":5,"locationId":"DC"}]}]}`)
	if atp() != 5 || f.allocation("O").Lines[0].Reserved() != 5 {
		t.Errorf("after the line reduced: ATP %g, %v", atp(), allocView(f.allocation("O")))
	}
	reduced := 0
	for _, r := range f.st.Reservations {
		if r.ReleaseReason == ReleaseLineReduced {
			reduced++
		}
	}
	if reduced != 1 {
		t.Errorf("%d reservations released LINE_REDUCED, want 1", reduced)
	}
	// two versions in one chunk: the higher wins, whatever their order
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"O","version":5,"lines":[{"skuId":"A","quantity":4,"locationId":"DC"}]},
		{"externalOrderId":"O","version":4,"lines":[{"skuId":"A","quantity":9,"locationId":"DC"}]}]}`)
	if o := f.st.Orders["O"]; o.Version != 5 || f.allocation("O").OrderVersion != 5 || atp() != 6 {
		t.Errorf("versions 5 then 4 in one chunk: order v%d, allocation %v, ATP %g", o.Version, allocView(f.allocation("O")), atp())
	}
	// confirmed: its hold is committed and does not expire
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"O","version":6,"status":"ALLOCATED","lines":[{"skuId":"A","quantity":4,"locationId":"DC"}]}]}`)
	for _, r := range f.st.OrderReservations("O") {
		if r.Status.Active() && r.Status != ResCommitted {
			t.Errorf("a confirmed order's reservation is %s", r.Status)
		}
	}
	f.now = f.now.Add(2 * time.Hour)
	if atp() != 6 {
		t.Errorf("a committed reservation expired: ATP %g", atp())
	}
	f.checkLedger()
	// shipped: the reservation is consumed; on hand drops by 4, ATP stays
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"O","version":7,"status":"SHIPPED","lines":[{"skuId":"A","quantity":4,"locationId":"DC"}]}]}`)
	lvl := f.st.Inventory[InventoryKey("A", "DC")]
	if lvl.QuantityOnHand != 6 || lvl.Bins["A-1"] != 6 || atp() != 6 || f.allocation("O").Status != AllocShipped || f.reservedAt("A", "DC") != 0 {
		t.Errorf("after shipping: level %+v, ATP %g, %v", lvl, atp(), allocView(f.allocation("O")))
	}
	// a new order, then cancelled: the stock comes back at once
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"C","lines":[{"skuId":"A","quantity":6,"locationId":"DC"}]}]}`)
	if atp() != 0 {
		t.Fatalf("ATP after C = %g", atp())
	}
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"C","status":"CANCELLED","lines":[{"skuId":"A","quantity":6,"locationId":"DC"}]}]}`)
	if atp() != 6 || f.allocation("C").Status != AllocReleased {
		t.Errorf("after the cancel: ATP %g, %v", atp(), allocView(f.allocation("C")))
	}
	f.checkLedger()
}

// TestTenantAllocationExpiry: a hold stops counting at its expiry; the sweep records it.
func TestTenantAllocationExpiry(t *testing.T) {
	f := newTenantFixture(t)
	f.seed(`{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":10}]}`)
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"H","lines":[{"skuId":"A","quantity":7,"locationId":"DC"}]}]}`)
	if recs := f.st.SweepAllocations(f.now.Add(29 * time.Minute)); len(recs) != 0 {
		t.Fatalf("sweep before the expiry: %v", recs)
	}
	f.now = f.now.Add(31 * time.Minute)
	pg, _ := f.st.ListATP(ATPQuery{SKU: "A", LocationID: "DC"}, f.now)
	if pg.Items[0].Available != 10 {
		t.Errorf("ATP past the hold's expiry = %g, want 10", pg.Items[0].Available)
	}
	f.apply(f.st.SweepAllocations(f.now))
	rs := f.st.OrderReservations("H")
	if len(rs) != 1 || rs[0].Status != ResExpired || rs[0].ReleaseReason != ReleaseHoldExpired {
		t.Errorf("after the sweep: %+v", rs)
	}
	if a := f.allocation("H"); a.Status != AllocFailed || a.Lines[0].Shortfall != 7 {
		t.Errorf("allocation after expiry: %v", allocView(a))
	}
	f.checkLedger()
}

// TestTenantAllocationBackorderAndLowATP: a backorder against an open purchase order with its
// promise date; ATP, the lowAtp inputs and the transfer snapshot read the same ledger.
func TestTenantAllocationBackorderAndLowATP(t *testing.T) {
	f := newTenantFixture(t)
	f.seed(`{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":4,"reorderPoint":3},{"skuId":"A","locationId":"STORE","quantityOnHand":20}]}`)
	f.mustImport(ImportSuppliers, `{"suppliers":[{"externalId":"S"}]}`)
	due := allocT0.Add(72 * time.Hour).Format(time.RFC3339)
	f.mustImport(ImportPurchaseOrders, `{"purchaseOrders":[{"externalPoNumber":"PO","supplierId":"S","destinationLocationId":"DC","expectedAt":"`+due+`",
		"lines":[{"skuId":"A","quantity":10,"unitCost":1}]}]}`)
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"BO","maxLatenessDays":7,"lines":[{"skuId":"A","quantity":9,"locationId":"DC"}]}]}`)
	a := f.allocation("BO")
	if a.Status != AllocBackordered || a.Lines[0].Reserved() != 4 || a.Lines[0].BackorderedQuantity != 5 || a.Lines[0].PromiseDate == nil ||
		!a.Lines[0].PromiseDate.Equal(allocT0.Add(72*time.Hour)) {
		t.Fatalf("BO: %v promise %v", allocView(a), a.Lines[0].PromiseDate)
	}
	pg, _ := f.st.ListATP(ATPQuery{SKU: "A", LocationID: "DC", Date: ptr(allocT0.Add(96 * time.Hour)), Quantity: 6}, f.now)
	l := pg.Items[0]
	if l.Available != 5 || l.Incoming != 10 || l.Backordered != 5 || l.CanPromise == nil || *l.CanPromise || l.EarliestDate != nil {
		t.Errorf("ATP in 4 days: %+v can %v earliest %v", l.ATPFigure, l.CanPromise, l.EarliestDate)
	}
	// lowAtp: DC's ATP at the end of the lead time is 5 - 0 = 5 (reserved 4, backorder 5 of the 10 due)
	inbound, promised := f.st.LowATPInputs(func(string) time.Time { return allocT0.Add(14 * 24 * time.Hour) }, f.now)
	key := InventoryKey("A", "DC")
	if inbound[key] != 10 || promised[key] != 9 {
		t.Errorf("lowAtp inputs: inbound %g promised %g, want 10 and 9", inbound[key], promised[key])
	}
	th := DefaultAlertThresholds()
	lvl := f.st.Inventory[key]
	conds := th.EvaluateItem(EvalItem{Product: f.st.Products["A"], Level: lvl, LeadTimeDays: 14, InboundDue: inbound[key], Promised: promised[key]}, f.now, nil)
	for _, c := range conds {
		if c.Key.Kind == string(AlertLowATP) {
			t.Errorf("lowAtp with ATP 5 above the reorder point 3: %+v", c)
		}
	}
	// a second order takes the rest: ATP 0 is below the reorder point
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"BO2","maxLatenessDays":7,"lines":[{"skuId":"A","quantity":5,"locationId":"DC"}]}]}`)
	inbound, promised = f.st.LowATPInputs(func(string) time.Time { return allocT0.Add(14 * 24 * time.Hour) }, f.now)
	conds = th.EvaluateItem(EvalItem{Product: f.st.Products["A"], Level: lvl, LeadTimeDays: 14, InboundDue: inbound[key], Promised: promised[key]}, f.now, nil)
	fired := false
	for _, c := range conds {
		fired = fired || (c.Key.Kind == string(AlertLowATP) && c.State == CondOn)
	}
	if !fired {
		t.Errorf("no lowAtp with everything promised: %+v (inbound %g promised %g)", conds, inbound[key], promised[key])
	}
	// transfer recommendations see the ledger: DC's reserved stock and the inbound promised away
	snap, err := f.st.StockSnapshot("A", "", 4, f.now)
	if err != nil {
		t.Fatal(err)
	}
	for _, ls := range snap[0].Locations {
		if ls.LocationID != "DC" {
			continue
		}
		var in float64
		for _, w := range ls.InboundByWeek {
			in += w
		}
		if ls.Reserved != 4 || in != 0 {
			t.Errorf("DC in the stock snapshot: reserved %g, inbound %g (want 4 and 0: the 10 due are promised)", ls.Reserved, in)
		}
	}
	f.checkLedger()
	// the purchase order is cancelled under the backorders: the finder sees it, the repair drops them
	f.mustImport(ImportPurchaseOrders, `{"purchaseOrders":[{"externalPoNumber":"PO","supplierId":"S","destinationLocationId":"DC","status":"CANCELLED",
		"lines":[{"skuId":"A","quantity":10,"unitCost":1}]}]}`)
	found := f.st.AllocationInconsistencies(f.now)
	if !slices.ContainsFunc(found, func(i Inconsistency) bool {
		return i.Code == IncBackorderUnsupported && i.SKU == "A" && i.LocationID == "DC"
	}) {
		t.Fatalf("after the PO was cancelled: %+v", found)
	}
	audits, recs := f.st.RepairAllocations("apikey:test", f.now)
	f.apply(recs)
	if len(audits) == 0 || len(f.st.AllocationAudits) != len(audits) {
		t.Errorf("repair: %d audits, %d stored", len(audits), len(f.st.AllocationAudits))
	}
	f.checkLedger()
}

// TestTenantAllocationPlantedInconsistency: stock re-imported below what is reserved is found and
// repaired with an audit.
func TestTenantAllocationPlantedInconsistency(t *testing.T) {
	f := newTenantFixture(t)
	f.seed(`{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":10}]}`)
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"O1","priority":0,"lines":[{"skuId":"A","quantity":4,"locationId":"DC"}]},
		{"externalOrderId":"O2","priority":5,"lines":[{"skuId":"A","quantity":6,"locationId":"DC"}]}]}`)
	f.mustImport(ImportInventory, `{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":5}]}`)
	found := f.st.AllocationInconsistencies(f.now)
	if len(found) != 1 || found[0].Code != IncBeyondOnHand || found[0].SKU != "A" || found[0].LocationID != "DC" {
		t.Fatalf("finder: %+v", found)
	}
	audits, recs := f.st.RepairAllocations("apikey:test", f.now)
	f.apply(recs)
	if len(audits) == 0 || audits[0].By != "apikey:test" {
		t.Errorf("audits %+v", audits)
	}
	// the lower-priority order's reservation went
	if f.allocation("O2").Lines[0].Reserved() != 0 || f.allocation("O1").Lines[0].Reserved() != 4 {
		t.Errorf("after repair: O1 %v, O2 %v", allocView(f.allocation("O1")), allocView(f.allocation("O2")))
	}
	f.checkLedger()
	if page := f.st.ListAudits(10, 0); page.Total != len(audits) {
		t.Errorf("audits listed %d, want %d", page.Total, len(audits))
	}
}

// TestTenantAllocationRuns: a dry run and a real run of the same state give the same difference;
// only a real run writes.
func TestTenantAllocationRuns(t *testing.T) {
	f := newTenantFixture(t)
	f.seed(`{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":4}]}`)
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"LOW","priority":9,"lines":[{"skuId":"A","quantity":4,"locationId":"DC"}]},
		{"externalOrderId":"HIGH","priority":1,"orderedAt":"2026-11-03T00:00:00Z","lines":[{"skuId":"A","quantity":4,"locationId":"DC"}]}]}`)
	// HIGH sorts first by priority: it holds the 4
	if f.allocation("HIGH").Status != AllocAllocated || f.allocation("LOW").Status != AllocFailed {
		t.Fatalf("HIGH %v LOW %v", allocView(f.allocation("HIGH")), allocView(f.allocation("LOW")))
	}
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"HIGH","status":"CANCELLED","lines":[{"skuId":"A","quantity":4,"locationId":"DC"}]}]}`)
	req, err := RunInput{Strategy: ptr(string(StrategyProtectExisting))}.Validate()
	if err != nil || !req.DryRun {
		t.Fatalf("run input: %+v %v", req, err)
	}
	dry, recs, _ := f.st.PlanAllocationRun(req, "apikey:test", f.now)
	if len(recs) != 0 || dry.OrdersChanged != 1 || dry.Changes[0].OrderID != "LOW" {
		t.Fatalf("dry run: %+v, %d records", dry, len(recs))
	}
	req.DryRun = false
	applied, recs, evs := f.st.PlanAllocationRun(req, "apikey:test", f.now)
	f.apply(recs)
	if applied.OrdersChanged != dry.OrdersChanged || applied.ReservationsCreated != 1 || len(evs) != 0 || f.allocation("LOW").Status != AllocAllocated {
		t.Errorf("run: %+v, events %d, LOW %v", applied, len(evs), allocView(f.allocation("LOW")))
	}
	if got, err := f.st.GetRun(applied.ID); err != nil || got.OrdersChanged != 1 {
		t.Errorf("stored run %+v %v", got, err)
	}
	if pg := f.st.ListRuns(10, 0); pg.Total != 1 || len(pg.Items[0].Changes) != 0 {
		t.Errorf("runs listed %+v", pg)
	}
	f.checkLedger()
}

// TestTenantAllocationImportRows: the new order fields are checked per row and named.
func TestTenantAllocationImportRows(t *testing.T) {
	f := newTenantFixture(t)
	f.seed(`{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":1}]}`)
	errs := f.importRows(ImportOrders, `{"orders":[
		{"externalOrderId":"a","fill":"MAYBE","lines":[{"skuId":"A","quantity":1,"locationId":"DC"}]},
		{"externalOrderId":"c","lines":[{"lineId":"1","skuId":"A","quantity":1,"locationId":"DC"},{"skuId":"A","quantity":1,"locationId":"DC"},{"lineId":"1","skuId":"A","quantity":1,"locationId":"DC"}]},
		{"externalOrderId":"d","maxLocations":0,"lines":[{"skuId":"A","quantity":1,"locationId":"DC"}]},
		{"externalOrderId":"e","requestedDate":"soon","lines":[{"skuId":"A","quantity":1,"locationId":"DC"}]},
		{"externalOrderId":"f","version":-1,"lines":[{"skuId":"A","quantity":1,"locationId":"DC"}]}]}`)
	got := map[int]string{}
	for _, e := range errs {
		got[e.Row] = e.Field + ":" + e.Code
	}
	// A field of the wrong type is the wire decoder's error (internal/importjson,
	// TestDecodeOrderTermsRowErrors).
	want := map[int]string{0: "fill:INVALID_VALUE", 1: "lines[2].lineId:INVALID_VALUE", 2: "maxLocations:INVALID_VALUE",
		3: "requestedDate:INVALID_VALUE", 4: "version:INVALID_VALUE"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("row errors %v, want %v", got, want)
	}
	if len(f.st.Orders) != 0 || len(f.st.Allocations) != 0 {
		t.Errorf("a rejected row wrote: %d orders", len(f.st.Orders))
	}
}

// TestTenantAllocationSnapshot: a state with a ledger encodes and decodes to the same state (the
// derived indexes rebuilt), and reads the same.
func TestTenantAllocationSnapshot(t *testing.T) {
	f := newTenantFixture(t)
	f.seed(`{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":10},{"skuId":"B","locationId":"DC","quantityOnHand":2}]}`)
	f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"O1","lines":[{"skuId":"A","quantity":4,"locationId":"DC"},{"skuId":"B","quantity":3,"locationId":"DC"}]}]}`)
	b, err := json.Marshal(f.st)
	if err != nil {
		t.Fatal(err)
	}
	loaded := NewTenantState("")
	loaded.SetAllocationSettings(AllocationSettings{HoldTTL: time.Hour})
	if err := json.Unmarshal(b, loaded); err != nil {
		t.Fatal(err)
	}
	if loaded.allocation.HoldTTL != time.Hour {
		t.Errorf("loading a snapshot lost the settings: %+v", loaded.allocation)
	}
	for _, k := range [][2]string{{"A", "DC"}, {"B", "DC"}} {
		if got, want := loaded.ReservedAt(k[0], k[1], f.now), f.st.ReservedAt(k[0], k[1], f.now); got != want || math.IsNaN(got) {
			t.Errorf("reserved %v: loaded %g, written %g", k, got, want)
		}
	}
	if inc := loaded.AllocationInconsistencies(f.now); len(inc) != 0 {
		t.Errorf("loaded state: %+v", inc)
	}
	if a, _ := loaded.GetAllocation("O1"); a.Status != AllocPartial {
		t.Errorf("loaded allocation %v", allocView(&a))
	}
}

// TestTenantAllocationSourcesFollowChanges: the locations a sku may be sourced from are
// remembered across allocations (sourcesMemo) and follow a level that comes, a purchase order and
// a level that goes.
func TestTenantAllocationSourcesFollowChanges(t *testing.T) {
	f := newTenantFixture(t)
	f.seed(`{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":1},{"skuId":"B","locationId":"STORE","quantityOnHand":5},
		{"skuId":"B","locationId":"WH","quantityOnHand":5}]}`)
	order := func(id string) *Allocation {
		t.Helper()
		f.mustImport(ImportOrders, `{"orders":[{"externalOrderId":"`+id+`","maxLocations":3,"maxLatenessDays":30,
			"lines":[{"skuId":"A","quantity":3,"locationId":"DC"}]}]}`)
		return f.allocation(id)
	}
	if a := order("O-1"); a.Status != AllocPartial || a.Lines[0].Reserved() != 1 {
		t.Fatalf("O-1: %v", allocView(a))
	}
	f.mustImport(ImportInventory, `{"levels":[{"skuId":"A","locationId":"STORE","quantityOnHand":3}]}`) // a new level
	if a := order("O-2"); a.Status != AllocAllocated || len(a.Lines[0].Allocations) != 1 || a.Lines[0].Allocations[0].LocationID != "STORE" {
		t.Fatalf("O-2 after a level of A at STORE: %v", allocView(a))
	}
	f.mustImport(ImportSuppliers, `{"suppliers":[{"externalId":"S1"}]}`)
	f.mustImport(ImportPurchaseOrders, `{"purchaseOrders":[{"externalPoNumber":"PO-1","supplierId":"S1","destinationLocationId":"WH",
		"expectedAt":"2026-11-10T00:00:00Z","lines":[{"skuId":"A","quantity":4,"unitCost":1}]}]}`)
	if a := order("O-3"); a.Status != AllocBackordered || len(a.Lines[0].Backorders) != 1 || a.Lines[0].Backorders[0].LocationID != "WH" {
		t.Fatalf("O-3 after a purchase order of A to WH: %v", allocView(a))
	}
	f.checkLedger()
	f.apply([]Record{Del(KindInventory, InventoryKey("A", "STORE"))}) // a level that goes
	if got := f.st.world().Sources("A", "DC"); len(got) != 2 || got[0].LocationID == "STORE" || got[1].LocationID == "STORE" {
		t.Fatalf("sources of A after its level at STORE went: %+v", got)
	}
}
