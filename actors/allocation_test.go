package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/wait"
)

// testClock is a clock the test moves.
type testClock struct{ ns atomic.Int64 }

func newTestClock(t time.Time) *testClock {
	c := &testClock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *testClock) Now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// ledgerAt sums the active reservations at (sku, loc) from the reservation list and reads the
// level's on hand.
func ledgerAt(t *testing.T, s *services, p supplyplan.Principal, sku, loc string) (reserved, onHand float64) {
	t.Helper()
	ctx := context.Background()
	for off := 0; ; off += supplyplan.MaxPageLimit {
		pg, err := s.allocation.ListReservations(ctx, p, supplyplan.ReservationFilter{SKU: sku, LocationID: loc, Limit: supplyplan.MaxPageLimit, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range pg.Items {
			if r.Status == supplyplan.ResHeld || r.Status == supplyplan.ResCommitted {
				reserved += r.Quantity
			}
		}
		if off+len(pg.Items) >= pg.Total {
			break
		}
	}
	lv, err := s.catalog.ListInventory(ctx, p, supplyplan.InventoryFilter{SKU: sku, LocationID: loc})
	if err != nil || len(lv.Items) != 1 {
		t.Fatalf("level %s@%s: %+v %v", sku, loc, lv, err)
	}
	return reserved, lv.Items[0].QuantityOnHand - lv.Items[0].QuantityReserved
}

// TestAllocationConcurrentClients: many clients allocating orders of the same sku at once never
// reserve more than there is, whatever interleaving (one writer per tenant); checked against the
// ledger and the stock after every round.
func TestAllocationConcurrentClients(t *testing.T) {
	s, rec := withBus(t, options{})
	p := s.bootstrap(t)
	ctx := context.Background()
	if j := submit(t, s, p, supplyplan.ImportCatalog, []string{`{"externalId":"X"}`}); j.Status != supplyplan.JobCompleted {
		t.Fatal(j)
	}
	const orders = 40
	for round, stock := range []int{100, 37, 0, 250} {
		// the orders arrive while there is nothing: every one FAILED, nothing held
		if j := submit(t, s, p, supplyplan.ImportInventory, []string{`{"skuId":"X","locationId":"DC","quantityOnHand":0}`}); j.Status != supplyplan.JobCompleted {
			t.Fatal(j)
		}
		rows := make([]string, orders)
		for i := range rows {
			rows[i] = fmt.Sprintf(`{"externalOrderId":"R%d-%02d","lines":[{"skuId":"X","quantity":%d,"locationId":"DC"},{"skuId":"X","quantity":1,"locationId":"DC"}]}`,
				round, i, 2+i%5)
		}
		if j := submit(t, s, p, supplyplan.ImportOrders, rows); j.AppliedCount != orders {
			t.Fatal(j)
		}
		// restock, then every client allocates its order at once
		if j := submit(t, s, p, supplyplan.ImportInventory, []string{fmt.Sprintf(`{"skuId":"X","locationId":"DC","quantityOnHand":%d}`, stock)}); j.Status != supplyplan.JobCompleted {
			t.Fatal(j)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var allocated float64
		for i := range orders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := s.allocation.AllocateOrder(ctx, p, fmt.Sprintf("R%d-%02d", round, i))
				if err != nil {
					t.Errorf("allocate: %v", err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if v.Allocation == nil {
					t.Errorf("order %s has no allocation", v.ExternalOrderID)
					return
				}
				for _, l := range v.Allocation.Lines {
					for _, a := range l.Allocations {
						allocated += float64(a.Quantity)
					}
				}
			}()
		}
		wg.Wait()
		reserved, avail := ledgerAt(t, s, p, "X", "DC")
		if reserved > avail || allocated != reserved {
			t.Fatalf("round %d: %g reserved of %g available; the answers allocated %g", round, reserved, avail, allocated)
		}
		total := 0
		for i := range orders {
			total += 3 + i%5
		}
		if want := float64(min(stock, total)); reserved != want {
			t.Errorf("round %d: %g reserved, want %g (stock %d, ordered %d)", round, reserved, want, stock, total)
		}
		found, err := s.allocation.Inconsistencies(ctx, p)
		if err != nil || len(found) != 0 {
			t.Fatalf("round %d: inconsistencies %+v %v", round, found, err)
		}
		atp, err := s.allocation.ATP(ctx, p, supplyplan.ATPQuery{SKU: "X", LocationID: "DC"})
		if err != nil || atp.Items[0].Available < 0 || atp.Items[0].Available != avail-reserved {
			t.Fatalf("round %d: ATP %+v %v", round, atp, err)
		}
		// cancel everything: the stock is back
		for i := range rows {
			rows[i] = fmt.Sprintf(`{"externalOrderId":"R%d-%02d","status":"CANCELLED","lines":[{"skuId":"X","quantity":1,"locationId":"DC"}]}`, round, i)
		}
		submit(t, s, p, supplyplan.ImportOrders, rows)
		if reserved, _ := ledgerAt(t, s, p, "X", "DC"); reserved != 0 {
			t.Fatalf("round %d: %g still reserved after every order was cancelled", round, reserved)
		}
	}
	// one event per (order, version): every order failed on import, then allocate calls announced
	// nothing more (the version was notified)
	events := map[string]int{}
	rec.mu.Lock()
	for _, e := range rec.evs {
		if e.Type == supplyplan.EventAllocationSucceeded || e.Type == supplyplan.EventAllocationFailed {
			events[e.Type]++
		}
	}
	rec.mu.Unlock()
	if events[supplyplan.EventAllocationFailed] != 4*orders || events[supplyplan.EventAllocationSucceeded] != 0 {
		t.Errorf("events %v, want %d order.allocation_failed only", events, 4*orders)
	}
}

// TestAllocationHoldExpiry: a HELD reservation stops counting at its expiry and the sweep records
// it EXPIRED (the service's clock is the test's).
func TestAllocationHoldExpiry(t *testing.T) {
	clock := newTestClock(time.Now().UTC())
	s := newServices(t, options{allocation: AllocationConfig{Now: clock.Now, SweepEvery: time.Hour},
		allocSettings: supplyplan.AllocationSettings{HoldTTL: 10 * time.Minute}})
	p := s.bootstrap(t)
	ctx := context.Background()
	submit(t, s, p, supplyplan.ImportCatalog, []string{`{"externalId":"X"}`})
	submit(t, s, p, supplyplan.ImportInventory, []string{`{"skuId":"X","locationId":"DC","quantityOnHand":10}`})
	submit(t, s, p, supplyplan.ImportOrders, []string{`{"externalOrderId":"H","lines":[{"skuId":"X","quantity":6,"locationId":"DC"}]}`})
	o, err := s.allocation.GetOrder(ctx, p, "H")
	if err != nil || o.Allocation == nil || o.Allocation.Status != supplyplan.AllocAllocated {
		t.Fatalf("H: %+v %v", o, err)
	}
	pg, _ := s.allocation.ListReservations(ctx, p, supplyplan.ReservationFilter{OrderID: "H"})
	if pg.Total != 1 || pg.Items[0].Status != supplyplan.ResHeld || pg.Items[0].ExpiresAt == nil {
		t.Fatalf("reservations %+v", pg)
	}
	clock.Add(11 * time.Minute)
	atp, _ := s.allocation.ATP(ctx, p, supplyplan.ATPQuery{SKU: "X", LocationID: "DC"})
	if atp.Items[0].Available != 10 {
		t.Errorf("ATP past the expiry = %g, want 10", atp.Items[0].Available)
	}
	s.allocation.Sweep(ctx)
	pg, _ = s.allocation.ListReservations(ctx, p, supplyplan.ReservationFilter{OrderID: "H"})
	if pg.Items[0].Status != supplyplan.ResExpired || pg.Items[0].ReleaseReason != supplyplan.ReleaseHoldExpired {
		t.Errorf("after the sweep: %+v", pg.Items[0])
	}
	o, _ = s.allocation.GetOrder(ctx, p, "H")
	if o.Allocation.Status != supplyplan.AllocFailed {
		t.Errorf("allocation after expiry: %+v", o.Allocation)
	}
	// allocating it again takes the stock back, with a new hold
	if o, err = s.allocation.AllocateOrder(ctx, p, "H"); err != nil || o.Allocation.Status != supplyplan.AllocAllocated {
		t.Fatalf("re-allocate: %+v %v", o, err)
	}
	if r, avail := ledgerAt(t, s, p, "X", "DC"); r != 6 || avail != 10 {
		t.Errorf("after re-allocating: %g reserved of %g", r, avail)
	}
	// committed: no expiry
	if o, err = s.allocation.CommitOrder(ctx, p, "H"); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Hour)
	s.allocation.Sweep(ctx)
	if r, _ := ledgerAt(t, s, p, "X", "DC"); r != 6 {
		t.Errorf("a committed reservation expired: %g reserved", r)
	}
	if _, err := s.allocation.CommitOrder(ctx, p, "NOPE"); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Errorf("commit of an unknown order: %v", err)
	}
}

// TestAllocationRunsNeedApproval: a dry run is open to allocation.write; applying needs
// allocation.approve.
func TestAllocationRunsNeedApproval(t *testing.T) {
	s := newServices(t, options{})
	p := s.bootstrap(t)
	ctx := context.Background()
	planner := p
	planner.Role = supplyplan.RolePlanner
	strategy := string(supplyplan.StrategyRedistribute)
	if run, err := s.allocation.Run(ctx, planner, supplyplan.RunInput{Strategy: &strategy}); err != nil || !run.DryRun {
		t.Fatalf("a planner's dry run: %+v %v", run, err)
	}
	no := false
	if _, err := s.allocation.Run(ctx, planner, supplyplan.RunInput{Strategy: &strategy, DryRun: &no}); supplyplan.ErrorCode(err) != supplyplan.EFORBIDDEN {
		t.Fatalf("a planner's real run: %v", err)
	}
	if run, err := s.allocation.Run(ctx, p, supplyplan.RunInput{Strategy: &strategy, DryRun: &no}); err != nil || run.DryRun {
		t.Fatalf("an admin's run: %+v %v", run, err)
	}
	if runs, err := s.allocation.ListRuns(ctx, p, 10, 0); err != nil || runs.Total != 1 {
		t.Fatalf("runs: %+v %v", runs, err)
	}
	bad := "SOMETIMES"
	if _, err := s.allocation.Run(ctx, p, supplyplan.RunInput{Strategy: &bad}); supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
		t.Fatalf("an unknown strategy: %v", err)
	}
}

// TestAllocationEventBurstRelayed: an import writes one allocation event per order; the relay
// moves a burst of them in batches, every event reaches the subscribed endpoint once and the
// outbox empties.
func TestAllocationEventBurstRelayed(t *testing.T) {
	snd := &sender{}
	s, _ := withBus(t, options{outbound: OutboundConfig{Sender: snd}})
	p := s.bootstrap(t)
	ctx := context.Background()
	if _, err := s.webhooks.CreateEndpoint(ctx, p, supplyplan.WebhookEndpointInput{URL: ptrTo("https://hooks.example/in"),
		EventTypes: &[]string{"order.*"}}); err != nil {
		t.Fatal(err)
	}
	submit(t, s, p, supplyplan.ImportCatalog, []string{`{"externalId":"X"}`})
	submit(t, s, p, supplyplan.ImportInventory, []string{`{"skuId":"X","locationId":"DC","quantityOnHand":1000}`})
	const orders = 3000
	rows := make([]string, orders)
	for i := range rows {
		rows[i] = fmt.Sprintf(`{"externalOrderId":"B-%04d","fill":"FILL_OR_KILL","lines":[{"skuId":"X","quantity":1,"locationId":"DC"}]}`, i)
	}
	if j := submit(t, s, p, supplyplan.ImportOrders, rows); j.AppliedCount != orders {
		t.Fatal(j)
	}
	wait.Eventually(t, time.Minute, func() error {
		if n := snd.count(); n < orders {
			return fmt.Errorf("%d of %d events delivered", n, orders)
		}
		pending, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (int, []supplyplan.Record, error) {
			return len(st.PendingEvents), nil, nil
		})
		if err != nil || pending != 0 {
			return fmt.Errorf("%d events still in the outbox (%v)", pending, err)
		}
		return nil
	})
	snd.mu.Lock()
	defer snd.mu.Unlock()
	kinds, orderIDs := map[string]int{}, map[string]bool{}
	for _, m := range snd.sent {
		var p struct {
			Type string `json:"type"`
			Data struct {
				OrderID string `json:"orderId"`
			} `json:"data"`
		}
		if err := json.Unmarshal(m.Body, &p); err != nil {
			t.Fatalf("payload %s: %v", m.Body, err)
		}
		kinds[p.Type]++
		if orderIDs[p.Data.OrderID] {
			t.Fatalf("order %s announced twice", p.Data.OrderID)
		}
		orderIDs[p.Data.OrderID] = true
	}
	if len(snd.sent) != orders || kinds[supplyplan.EventAllocationSucceeded] != 1000 || kinds[supplyplan.EventAllocationFailed] != 2000 {
		t.Fatalf("%d deliveries: %v", len(snd.sent), kinds)
	}
}
