package main

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// The order allocation through the API (docs/allocation.md): orders imported with their terms are
// allocated in the import's write; the orders, ATP and the ledger read the same state; runs,
// inconsistencies and repairs; roles; events at a webhook receiver.

// into decodes a response body into v, failing the test unless the status is want.
func into(tb testing.TB, r resp, want int, v any) {
	tb.Helper()
	if r.Status != want {
		tb.Fatalf("status %d, want %d; body %s", r.Status, want, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("decode %s: %v", r.Body, err)
	}
}

type orderBody struct {
	Order supplyplan.OrderView `json:"order"`
}

type atpBody struct {
	ATP   []supplyplan.ATPLine `json:"atp"`
	Total int                  `json:"total"`
}

type reservationsBody struct {
	Reservations []supplyplan.Reservation `json:"reservations"`
	Total        int                      `json:"total"`
}

// seedAllocation imports products X and Y, stock at DC and STORE, a supplier and a purchase order
// of 20 X due at DC in three days.
func seedAllocation(t *testing.T, s *testServer) {
	t.Helper()
	checkCounts(t, s.Import("catalog", map[string]any{"products": []any{map[string]any{"externalId": "X"}, map[string]any{"externalId": "Y"}}}), 2, 0)
	checkCounts(t, s.Import("inventory", map[string]any{"levels": []any{
		map[string]any{"skuId": "X", "locationId": "DC", "quantityOnHand": 10},
		map[string]any{"skuId": "X", "locationId": "STORE", "quantityOnHand": 4},
		map[string]any{"skuId": "Y", "locationId": "DC", "quantityOnHand": 3},
	}}), 3, 0)
	checkCounts(t, s.Import("suppliers", map[string]any{"suppliers": []any{map[string]any{"externalId": "S"}}}), 1, 0)
	due := time.Now().UTC().Add(72 * time.Hour).Format(time.RFC3339)
	checkCounts(t, s.Import("purchase-orders", map[string]any{"purchaseOrders": []any{map[string]any{"externalPoNumber": "PO-1", "supplierId": "S",
		"destinationLocationId": "DC", "expectedAt": due, "lines": []any{map[string]any{"skuId": "X", "quantity": 20, "unitCost": 1}}}}}), 1, 0)
}

func TestAllocationThroughTheAPI(t *testing.T) {
	s := MustStart(t, "", func(c *Config) { c.AlertEvalInterval = -1 })
	seedAllocation(t, s)
	viewer, planner, manager := s.Key("VIEWER"), s.Key("PLANNER"), s.Key("MANAGER")
	soon := time.Now().UTC().Add(24 * time.Hour).Format("2006-01-02")
	job := s.Import("orders", map[string]any{"orders": []any{
		map[string]any{"externalOrderId": "SO-1", "priority": 1, "lines": []any{map[string]any{"lineId": "a", "skuId": "X", "quantity": 6, "locationId": "DC"},
			map[string]any{"lineId": "b", "skuId": "X", "quantity": 6, "locationId": "DC"}}},
		map[string]any{"externalOrderId": "SO-2", "priority": 2, "requestedDate": soon, "maxLatenessDays": 7,
			"lines": []any{map[string]any{"skuId": "X", "quantity": 15, "locationId": "DC"}}},
		map[string]any{"externalOrderId": "SO-3", "fill": "FILL_OR_KILL", "lines": []any{map[string]any{"skuId": "Y", "quantity": 4, "locationId": "DC"}}},
		map[string]any{"externalOrderId": "SO-4", "maxLocations": 2, "lines": []any{map[string]any{"skuId": "Y", "quantity": 9, "locationId": "STORE"}}},
		map[string]any{"externalOrderId": "SO-5", "fill": "SOMETIMES", "lines": []any{map[string]any{"skuId": "X", "quantity": 1, "locationId": "DC"}}},
	}})
	checkCounts(t, job, 4, 1)
	if got := rowErrors(job); got[4] != "fill:INVALID_VALUE" {
		t.Fatalf("row errors %v", got)
	}
	// SO-1: the same item twice, checked against the sum: 6 + 4 of the 10 at DC
	var o orderBody
	into(t, s.Do("GET", "/api/orders/SO-1", viewer, nil), 200, &o)
	a := o.Order.Allocation
	if a == nil || a.Status != supplyplan.AllocPartial || len(a.Lines) != 2 || a.Lines[0].LineID != "a" || a.Lines[0].Allocations[0].Quantity != 6 ||
		a.Lines[1].Allocations[0].Quantity != 4 || a.Lines[1].Shortfall != 2 {
		t.Fatalf("SO-1 = %+v", a)
	}
	// SO-2: nothing left at DC: 15 backordered from the purchase order, promised when it arrives
	into(t, s.Do("GET", "/api/orders/SO-2", viewer, nil), 200, &o)
	a = o.Order.Allocation
	if a == nil || a.Status != supplyplan.AllocBackordered || a.Lines[0].BackorderedQuantity != 15 || a.Lines[0].PromiseDate == nil ||
		a.Lines[0].PromiseDate.Before(time.Now().Add(71*time.Hour)) || o.Order.MaxLatenessDays != 7 || o.Order.Priority != 2 {
		t.Fatalf("SO-2 = %+v", o.Order)
	}
	// SO-3 fails (FILL_OR_KILL, 4 of 3); SO-4 splits: Y only at DC, which the order may use
	into(t, s.Do("GET", "/api/orders/SO-3", viewer, nil), 200, &o)
	if a = o.Order.Allocation; a == nil || a.Status != supplyplan.AllocFailed || a.ReasonCode != supplyplan.ReasonInsufficientATP {
		t.Fatalf("SO-3 = %+v", a)
	}
	into(t, s.Do("GET", "/api/orders/SO-4", viewer, nil), 200, &o)
	if a = o.Order.Allocation; a == nil || a.Status != supplyplan.AllocPartial || a.Lines[0].Allocations[0].LocationID != "DC" ||
		a.Lines[0].Allocations[0].Quantity != 3 {
		t.Fatalf("SO-4 = %+v", a)
	}
	var orders struct {
		Orders []supplyplan.OrderView `json:"orders"`
		Total  int                    `json:"total"`
	}
	into(t, s.Do("GET", "/api/orders?allocationStatus=PARTIAL", viewer, nil), 200, &orders)
	if orders.Total != 2 {
		t.Fatalf("PARTIAL orders: %+v", orders)
	}
	// ATP: X at DC all reserved now; in four days the purchase order's 20 less the 15 promised
	var atp atpBody
	into(t, s.Do("GET", "/api/inventory/atp?skuId=X", viewer, nil), 200, &atp)
	if atp.Total != 2 || atp.ATP[0].LocationID != "DC" || atp.ATP[0].Available != 0 || atp.ATP[0].Reserved != 10 || atp.ATP[1].Available != 4 {
		t.Fatalf("ATP today = %+v", atp)
	}
	later := time.Now().UTC().Add(96 * time.Hour).Format("2006-01-02")
	into(t, s.Do("GET", "/api/inventory/atp?skuId=X&locationId=DC&quantity=6&date="+later, viewer, nil), 200, &atp)
	if l := atp.ATP[0]; l.Available != 5 || l.Incoming != 20 || l.Backordered != 15 || l.CanPromise == nil || *l.CanPromise {
		t.Fatalf("ATP in 4 days = %+v", atp.ATP)
	}
	var res reservationsBody
	into(t, s.Do("GET", "/api/allocation/reservations?skuId=X&status=HELD", viewer, nil), 200, &res)
	if res.Total != 2 {
		t.Fatalf("HELD reservations of X: %+v", res)
	}
	// roles: a viewer reads only; a planner allocates and dry-runs; applying a run needs a manager
	if r := s.Do("POST", "/api/orders/SO-3/allocate", viewer, nil); r.Status != 403 {
		t.Fatalf("viewer allocate: %d %s", r.Status, r.Body)
	}
	into(t, s.Do("POST", "/api/orders/SO-3/allocate", planner, nil), 200, &o)
	if r := s.Do("POST", "/api/allocation/runs", planner, map[string]any{"strategy": "PROTECT_EXISTING", "dryRun": false}); r.Status != 403 {
		t.Fatalf("planner applying a run: %d %s", r.Status, r.Body)
	}
	// bad input: 400 naming the field
	for path, field := range map[string]string{
		"/api/inventory/atp?date=someday":              "date",
		"/api/inventory/atp?skuId=NOPE":                "skuId",
		"/api/inventory/atp?quantity=-1":               "quantity",
		"/api/orders?allocationStatus=MAYBE":           "allocationStatus",
		"/api/allocation/reservations?status=SLEEPING": "status",
	} {
		r := s.Do("GET", path, viewer, nil)
		var e struct {
			Code    string              `json:"code"`
			Details map[string][]string `json:"details"`
		}
		into(t, r, 400, &e)
		if e.Code != "VALIDATION_ERROR" || len(e.Details[field]) == 0 {
			t.Errorf("%s: %s", path, r.Body)
		}
	}
	for _, body := range []any{map[string]any{}, map[string]any{"strategy": "FAST"}, map[string]any{"strategy": "PROTECT_EXISTING", "dryRun": "no"},
		map[string]any{"strategy": "PROTECT_EXISTING", "scope": map[string]any{"skuIds": "X"}}} {
		if r := s.Do("POST", "/api/allocation/runs", planner, body); r.Status != 400 {
			t.Errorf("run %v: %d %s", body, r.Status, r.Body)
		}
	}
	if r := s.Do("GET", "/api/orders/NOPE", viewer, nil); r.Status != 404 {
		t.Fatalf("unknown order: %d", r.Status)
	}
	if r := s.Do("POST", "/api/orders/NOPE/allocate", planner, nil); r.Status != 404 {
		t.Fatalf("allocate an unknown order: %d", r.Status)
	}
	// cancel SO-1: its 10 come back; a PROTECT_EXISTING run by a manager gives them to SO-4 and
	// SO-2 (dry run first: the same difference, nothing written)
	checkCounts(t, s.Import("orders", map[string]any{"orders": []any{map[string]any{"externalOrderId": "SO-1", "status": "CANCELLED",
		"lines": []any{map[string]any{"skuId": "X", "quantity": 6, "locationId": "DC"}}}}}), 1, 0)
	into(t, s.Do("GET", "/api/inventory/atp?skuId=X&locationId=DC", viewer, nil), 200, &atp)
	if atp.ATP[0].Available != 10 {
		t.Fatalf("ATP after the cancel = %+v", atp.ATP)
	}
	var dry, run struct {
		Run supplyplan.AllocationRun `json:"run"`
	}
	into(t, s.Do("POST", "/api/allocation/runs", planner, map[string]any{"strategy": "PROTECT_EXISTING"}), 200, &dry)
	into(t, s.Do("POST", "/api/allocation/runs", manager, map[string]any{"strategy": "PROTECT_EXISTING", "dryRun": false}), 201, &run)
	if !dry.Run.DryRun || run.Run.DryRun || dry.Run.OrdersChanged == 0 || dry.Run.OrdersChanged != run.Run.OrdersChanged ||
		dry.Run.After.Reserved != run.Run.After.Reserved {
		t.Fatalf("dry %+v\nrun %+v", dry.Run, run.Run)
	}
	into(t, s.Do("GET", "/api/orders/SO-2", viewer, nil), 200, &o)
	if a := o.Order.Allocation; a.Lines[0].Allocations == nil || a.Lines[0].Allocations[0].Quantity != 10 || a.Lines[0].BackorderedQuantity != 5 {
		t.Fatalf("SO-2 after the run = %+v", a)
	}
	into(t, s.Do("GET", "/api/allocation/runs/"+run.Run.ID, viewer, nil), 200, &run)
	// plant an inconsistency: the stock re-imported below what is reserved
	checkCounts(t, s.Import("inventory", map[string]any{"levels": []any{map[string]any{"skuId": "X", "locationId": "DC", "quantityOnHand": 4}}}), 1, 0)
	var inc struct {
		Inconsistencies []supplyplan.Inconsistency `json:"inconsistencies"`
	}
	into(t, s.Do("GET", "/api/allocation/inconsistencies", viewer, nil), 200, &inc)
	if len(inc.Inconsistencies) != 1 || inc.Inconsistencies[0].Code != supplyplan.IncBeyondOnHand {
		t.Fatalf("inconsistencies = %+v", inc)
	}
	if r := s.Do("POST", "/api/allocation/inconsistencies/repair", planner, nil); r.Status != 403 {
		t.Fatalf("planner repair: %d", r.Status)
	}
	var fixed struct {
		Fixed []supplyplan.AllocationAudit `json:"fixed"`
	}
	into(t, s.Do("POST", "/api/allocation/inconsistencies/repair", manager, nil), 200, &fixed)
	if len(fixed.Fixed) == 0 || fixed.Fixed[0].By == "" {
		t.Fatalf("repair = %+v", fixed)
	}
	into(t, s.Do("GET", "/api/allocation/inconsistencies", viewer, nil), 200, &inc)
	if len(inc.Inconsistencies) != 0 {
		t.Fatalf("after the repair: %+v", inc)
	}
	var audits struct {
		Audits []supplyplan.AllocationAudit `json:"audits"`
		Total  int                          `json:"total"`
	}
	into(t, s.Do("GET", "/api/allocation/audits", viewer, nil), 200, &audits)
	if audits.Total != len(fixed.Fixed) {
		t.Fatalf("audits %d, repair wrote %d", audits.Total, len(fixed.Fixed))
	}
	// everything survives a restart (journal and snapshot)
	s2 := s.Restart()
	into(t, s2.Do("GET", "/api/orders/SO-2", viewer, nil), 200, &o)
	if o.Order.Allocation == nil || o.Order.Allocation.Lines[0].BackorderedQuantity != 5 {
		t.Fatalf("SO-2 after restart: %+v", o.Order.Allocation)
	}
	into(t, s2.Do("GET", "/api/allocation/inconsistencies", viewer, nil), 200, &inc)
	if len(inc.Inconsistencies) != 0 {
		t.Fatalf("after restart: %+v", inc)
	}
}

// TestAllocationEventsAtWebhookReceiver: order.allocation_succeeded and order.allocation_failed
// reach a signed endpoint, once per (orderId, orderVersion).
func TestAllocationEventsAtWebhookReceiver(t *testing.T) {
	s := MustStart(t, "", outboundTestConfig(""))
	rcv := startReceiver(t)
	_, secret := createEndpoint(t, s, rcv.URL, "order.*")
	rcv.SetSecrets(secret)
	seedAllocation(t, s)
	checkCounts(t, s.Import("orders", map[string]any{"orders": []any{
		map[string]any{"externalOrderId": "OK-1", "version": 1, "lines": []any{map[string]any{"skuId": "X", "quantity": 4, "locationId": "DC"}}},
		map[string]any{"externalOrderId": "NO-1", "fill": "FILL_OR_KILL", "lines": []any{map[string]any{"skuId": "Y", "quantity": 5, "locationId": "DC"}}},
	}}), 2, 0)
	type payload struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	events := func(typ string) []payload {
		var out []payload
		for _, m := range rcv.Typed(typ) {
			var p payload
			_ = json.Unmarshal(m.Body, &p)
			if !m.Verified {
				t.Errorf("an unverified %s delivery: %s", typ, m.Body)
			}
			out = append(out, p)
		}
		return out
	}
	eventually(t, 30*time.Second, func() error {
		if len(events(supplyplan.EventAllocationSucceeded)) < 1 || len(events(supplyplan.EventAllocationFailed)) < 1 {
			return fmt.Errorf("received %d messages", len(rcv.Messages()))
		}
		return nil
	})
	var ok supplyplan.AllocationSucceeded
	if err := json.Unmarshal(events(supplyplan.EventAllocationSucceeded)[0].Data, &ok); err != nil || ok.OrderID != "OK-1" || ok.OrderVersion != 1 ||
		ok.Partial || len(ok.Lines) != 1 || ok.Lines[0].LineID != "1" || ok.Lines[0].Allocations[0].Quantity != 4 || ok.Lines[0].Allocations[0].ReservationID == "" {
		t.Fatalf("succeeded = %+v %v", ok, err)
	}
	var no supplyplan.AllocationFailed
	if err := json.Unmarshal(events(supplyplan.EventAllocationFailed)[0].Data, &no); err != nil || no.OrderID != "NO-1" ||
		no.ReasonCode != supplyplan.ReasonInsufficientATP || len(no.Lines) != 1 || no.Lines[0].Shortfall != 5 {
		t.Fatalf("failed = %+v %v", no, err)
	}
	// the same version again (import replayed, allocate call): no event; a new version: one more
	checkCounts(t, s.Import("orders", map[string]any{"orders": []any{map[string]any{"externalOrderId": "OK-1", "version": 1,
		"lines": []any{map[string]any{"skuId": "X", "quantity": 4, "locationId": "DC"}}}}}), 1, 0)
	s.Do("POST", "/api/orders/OK-1/allocate", s.Key("PLANNER"), nil).Must(t, 200)
	checkCounts(t, s.Import("orders", map[string]any{"orders": []any{map[string]any{"externalOrderId": "OK-1", "version": 2,
		"lines": []any{map[string]any{"skuId": "X", "quantity": 5, "locationId": "DC"}}}}}), 1, 0)
	eventually(t, 30*time.Second, func() error {
		if n := len(events(supplyplan.EventAllocationSucceeded)); n < 2 {
			return fmt.Errorf("%d order.allocation_succeeded received", n)
		}
		return nil
	})
	// Deliveries to one endpoint keep the order their events were written in, so a second event of
	// OK-1@1 (from the replayed import or the allocate call, both before version 2) would have
	// arrived before OK-1@2.
	seen := map[string]int{}
	for _, p := range append(events(supplyplan.EventAllocationSucceeded), events(supplyplan.EventAllocationFailed)...) {
		var d struct {
			OrderID      string `json:"orderId"`
			OrderVersion int64  `json:"orderVersion"`
		}
		_ = json.Unmarshal(p.Data, &d)
		seen[fmt.Sprintf("%s@%d", d.OrderID, d.OrderVersion)]++
	}
	if want := map[string]int{"OK-1@1": 1, "OK-1@2": 1, "NO-1@0": 1}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("events per (order, version): %v, want %v", seen, want)
	}
}

// TestAllocationConcurrentHTTPClients: clients allocating the same sku at once over HTTP, while
// orders of it keep arriving by import, never reserve more than the stock; checked against the
// ledger and the stock after every round.
func TestAllocationConcurrentHTTPClients(t *testing.T) {
	s := MustStart(t, "", func(c *Config) { c.AlertEvalInterval = -1 })
	checkCounts(t, s.Import("catalog", map[string]any{"products": []any{map[string]any{"externalId": "X"}}}), 1, 0)
	planner, viewer := s.Key("PLANNER"), s.Key("VIEWER")
	const clients = 24
	for round, stock := range []int{30, 7, 61} {
		checkCounts(t, s.Import("inventory", map[string]any{"levels": []any{map[string]any{"skuId": "X", "locationId": "DC", "quantityOnHand": 0}}}), 1, 0)
		var rows []any
		for i := range clients {
			rows = append(rows, map[string]any{"externalOrderId": fmt.Sprintf("C%d-%02d", round, i),
				"lines": []any{map[string]any{"skuId": "X", "quantity": 1 + i%4, "locationId": "DC"}, map[string]any{"skuId": "X", "quantity": 1, "locationId": "DC"}}})
		}
		checkCounts(t, s.Import("orders", map[string]any{"orders": rows}), clients, 0)
		checkCounts(t, s.Import("inventory", map[string]any{"levels": []any{map[string]any{"skuId": "X", "locationId": "DC", "quantityOnHand": stock}}}), 1, 0)
		var wg sync.WaitGroup
		var failures atomic.Int64
		for i := range clients {
			wg.Add(2)
			go func() {
				defer wg.Done()
				r, err := tryRequest(s.URL, "POST", fmt.Sprintf("/api/orders/C%d-%02d/allocate", round, i), map[string]string{"Authorization": "Bearer " + planner}, nil)
				if err != nil || r.Status != 200 {
					failures.Add(1)
				}
			}()
			go func() { // new orders of the same sku arrive meanwhile
				defer wg.Done()
				r, err := tryRequest(s.URL, "POST", "/api/import/orders", map[string]string{"x-api-key": s.Key("import")},
					map[string]any{"orders": []any{map[string]any{"externalOrderId": fmt.Sprintf("N%d-%02d", round, i),
						"lines": []any{map[string]any{"skuId": "X", "quantity": 2, "locationId": "DC"}}}}})
				if err != nil || r.Status != 202 {
					failures.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := failures.Load(); n > 0 {
			t.Fatalf("round %d: %d requests failed", round, n)
		}
		// every import job done, then the ledger against the stock
		eventually(t, time.Minute, func() error {
			var jobs struct {
				Jobs []supplyplan.ImportJob `json:"jobs"`
			}
			into(t, doRequest(t, s.URL, "GET", "/api/import/jobs?limit=100", map[string]string{"x-api-key": s.Key("import")}, nil), 200, &jobs)
			for _, j := range jobs.Jobs {
				if !j.Done() {
					return fmt.Errorf("job %s is %s", j.JobID, j.Status)
				}
			}
			return nil
		})
		var reserved float64
		for off := 0; ; off += 100 {
			var res reservationsBody
			into(t, s.Do("GET", fmt.Sprintf("/api/allocation/reservations?skuId=X&locationId=DC&limit=100&offset=%d", off), viewer, nil), 200, &res)
			for _, r := range res.Reservations {
				if r.Status.Active() {
					reserved += r.Quantity
				}
			}
			if off+len(res.Reservations) >= res.Total {
				break
			}
		}
		if reserved > float64(stock) {
			t.Fatalf("round %d: %g reserved of %d on hand", round, reserved, stock)
		}
		if reserved != float64(stock) { // more is ordered than there is: everything goes
			t.Errorf("round %d: %g reserved, want all %d", round, reserved, stock)
		}
		var atp atpBody
		into(t, s.Do("GET", "/api/inventory/atp?skuId=X&locationId=DC", viewer, nil), 200, &atp)
		if atp.ATP[0].Available != 0 || atp.ATP[0].Reserved != reserved {
			t.Fatalf("round %d: ATP %+v with %g reserved", round, atp.ATP[0], reserved)
		}
		var inc struct {
			Inconsistencies []supplyplan.Inconsistency `json:"inconsistencies"`
		}
		into(t, s.Do("GET", "/api/allocation/inconsistencies", viewer, nil), 200, &inc)
		if len(inc.Inconsistencies) != 0 {
			t.Fatalf("round %d: %+v", round, inc.Inconsistencies)
		}
		// release the round's orders
		var cancel []any
		for i := range clients {
			for _, p := range []string{"C", "N"} {
				cancel = append(cancel, map[string]any{"externalOrderId": fmt.Sprintf("%s%d-%02d", p, round, i), "status": "CANCELLED",
					"lines": []any{map[string]any{"skuId": "X", "quantity": 1, "locationId": "DC"}}})
			}
		}
		checkCounts(t, s.Import("orders", map[string]any{"orders": cancel}), 2*clients, 0)
	}
}

// TestAllocationHoldExpiresInTheServer: a HELD reservation expires after --allocation-hold-ttl by
// the service's clock, and the sweep records it.
func TestAllocationHoldExpiresInTheServer(t *testing.T) {
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	s := MustStart(t, "", func(c *Config) {
		c.AlertEvalInterval = -1
		c.Clock = clock
		c.AllocationHoldTTL = 10 * time.Minute
		c.AllocationSweepInterval = 50 * time.Millisecond
	})
	seedAllocation(t, s)
	checkCounts(t, s.Import("orders", map[string]any{"orders": []any{map[string]any{"externalOrderId": "H",
		"lines": []any{map[string]any{"skuId": "X", "quantity": 7, "locationId": "DC"}}}}}), 1, 0)
	viewer := s.Key("VIEWER")
	var res reservationsBody
	into(t, s.Do("GET", "/api/allocation/reservations?orderId=H", viewer, nil), 200, &res)
	if res.Total != 1 || res.Reservations[0].Status != supplyplan.ResHeld {
		t.Fatalf("reservations %+v", res)
	}
	offset.Store(int64(11 * time.Minute))
	eventually(t, 30*time.Second, func() error {
		into(t, s.Do("GET", "/api/allocation/reservations?orderId=H", viewer, nil), 200, &res)
		if r := res.Reservations[0]; r.Status != supplyplan.ResExpired || r.ReleasedAt == nil {
			return fmt.Errorf("reservation %+v", r)
		}
		var o orderBody
		into(t, s.Do("GET", "/api/orders/H", viewer, nil), 200, &o)
		if o.Order.Allocation.Status != supplyplan.AllocFailed {
			return fmt.Errorf("allocation %+v", o.Order.Allocation)
		}
		return nil
	})
	var atp atpBody
	into(t, s.Do("GET", "/api/inventory/atp?skuId=X&locationId=DC", viewer, nil), 200, &atp)
	if atp.ATP[0].Available != 10 {
		t.Fatalf("ATP after the expiry: %+v", atp.ATP)
	}
}

// TestCheckAvailabilityToolReadsTheLedger: the MCP tool check_availability answers from the same
// ledger as the API: reserved stock is not available, and a quantity is checked by a date.
func TestCheckAvailabilityToolReadsTheLedger(t *testing.T) {
	s := MustStart(t, "", func(c *Config) { c.AlertEvalInterval = -1 })
	seedAllocation(t, s)
	checkCounts(t, s.Import("orders", map[string]any{"orders": []any{map[string]any{"externalOrderId": "T-1",
		"lines": []any{map[string]any{"skuId": "X", "quantity": 8, "locationId": "DC"}}}}}), 1, 0)
	tools := sdkSession(t, "http://"+s.Main.Tools.Addr()+"/mcp?org=demo", s.Key(supplyplan.CredDemoTool), "")
	av := sdkCall(t, tools, "check_availability", map[string]any{"productId": "X", "locationIds": []any{"DC"}})
	dc := av["locations"].([]any)[0].(map[string]any)
	if dc["quantityReserved"] != 8.0 || dc["available"] != 2.0 {
		t.Fatalf("availability = %v", av)
	}
	// 15 at DC: not today (2 left), from the purchase order's arrival in three days
	av = sdkCall(t, tools, "check_availability", map[string]any{"productId": "X", "quantity": 15})
	if av["canPromise"] != false {
		t.Fatalf("15 today = %v", av)
	}
	for _, l := range av["locations"].([]any) {
		l := l.(map[string]any)
		if l["locationId"] != "DC" {
			continue
		}
		at, err := time.Parse(time.RFC3339, fmt.Sprint(l["earliestDate"]))
		if l["canPromise"] != false || err != nil || at.Before(time.Now().Add(71*time.Hour)) {
			t.Fatalf("DC = %v", l)
		}
	}
	later := time.Now().UTC().Add(96 * time.Hour).Format("2006-01-02")
	av = sdkCall(t, tools, "check_availability", map[string]any{"productId": "X", "quantity": 15, "date": later})
	if av["canPromise"] != true {
		t.Fatalf("15 in four days = %v", av)
	}
}
