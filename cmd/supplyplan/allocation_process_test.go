package main

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// TestKill9DuringAllocation: clients allocate orders and import new ones (allocated on import)
// while the process is killed with SIGKILL. After a restart every reservation a client was
// answered with is in the ledger, every accepted import finishes with its orders allocated, the
// ledger reserves no more than the stock, and no order is half applied (its allocation lists
// exactly the reservations the ledger holds for it: the inconsistency finder finds nothing).
func TestKill9DuringAllocation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	data := t.TempDir()
	p := startProc(t, data, "--snapshot-every", "40")
	imp := map[string]string{"x-api-key": p.Creds.Keys["import"]}
	planner := map[string]string{"Authorization": "Bearer " + p.Creds.Keys["PLANNER"]}
	s := &testServer{t: t, URL: p.URL, Creds: p.Creds}
	const stock, preloaded = 900, 400
	checkCounts(t, s.Import("catalog", map[string]any{"products": []any{map[string]any{"externalId": "X"}}}), 1, 0)
	checkCounts(t, s.Import("inventory", map[string]any{"levels": []any{map[string]any{"skuId": "X", "locationId": "DC", "quantityOnHand": 0}}}), 1, 0)
	var rows []any
	for i := range preloaded {
		rows = append(rows, map[string]any{"externalOrderId": fmt.Sprintf("P-%03d", i),
			"lines": []any{map[string]any{"skuId": "X", "quantity": 1 + i%3, "locationId": "DC"}}})
	}
	checkCounts(t, s.Import("orders", map[string]any{"orders": rows}), preloaded, 0) // nothing in stock: all FAILED
	checkCounts(t, s.Import("inventory", map[string]any{"levels": []any{map[string]any{"skuId": "X", "locationId": "DC", "quantityOnHand": stock}}}), 1, 0)

	var mu sync.Mutex
	acked := map[string]float64{} // reservation id -> quantity a client was answered with
	jobs := map[string]string{}   // import job -> its order
	var allocations atomic.Int64
	var next atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if w%4 == 3 { // a new order through the import path
					id := fmt.Sprintf("N-%d-%d", w, i)
					r, err := tryRequest(p.URL, "POST", "/api/import/orders", imp, map[string]any{"orders": []any{map[string]any{"externalOrderId": id,
						"lines": []any{map[string]any{"skuId": "X", "quantity": 1, "locationId": "DC"}}}}})
					if err != nil {
						return
					}
					if r.Status != 202 {
						t.Errorf("import %s: %d %s", id, r.Status, r.Body)
						return
					}
					var acc struct {
						JobID string `json:"jobId"`
					}
					_ = json.Unmarshal(r.Body, &acc)
					mu.Lock()
					jobs[acc.JobID] = id
					mu.Unlock()
					continue
				}
				n := next.Add(1) - 1
				if n >= preloaded {
					return
				}
				r, err := tryRequest(p.URL, "POST", fmt.Sprintf("/api/orders/P-%03d/allocate", n), planner, nil)
				if err != nil {
					return // the server died under us: never acknowledged
				}
				var o orderBody
				if r.Status != 200 || json.Unmarshal(r.Body, &o) != nil || o.Order.Allocation == nil {
					t.Errorf("allocate P-%03d: %d %s", n, r.Status, r.Body)
					return
				}
				mu.Lock()
				for _, l := range o.Order.Allocation.Lines {
					for _, a := range l.Allocations {
						acked[a.ReservationID] = float64(a.Quantity)
					}
				}
				mu.Unlock()
				allocations.Add(1)
			}
		}()
	}
	eventually(t, time.Minute, func() error {
		if n := allocations.Load(); n < 150 {
			return fmt.Errorf("%d allocations acknowledged, want 150 before the kill", n)
		}
		return nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exit
	close(stop)
	wg.Wait()

	p2 := startProc(t, data)
	s2 := &testServer{t: t, URL: p2.URL, Creds: p2.Creds}
	for job := range jobs {
		if j := s2.WaitJob(p2.Creds.Keys["import"], job); str(j, "status") != "COMPLETED" || num(j, "appliedCount") != 1 {
			t.Fatalf("import job %s after the restart: %v", job, j)
		}
	}
	viewer := p2.Creds.Keys["VIEWER"]
	held := map[string]supplyplan.Reservation{}
	var reserved float64
	for off := 0; ; off += 100 {
		var res reservationsBody
		into(t, s2.Do("GET", fmt.Sprintf("/api/allocation/reservations?limit=100&offset=%d", off), viewer, nil), 200, &res)
		for _, r := range res.Reservations {
			held[r.ID] = r
			if r.Status.Active() {
				reserved += r.Quantity
			}
		}
		if off+len(res.Reservations) >= res.Total {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d allocations (%d reservations) and %d imports acknowledged before kill -9; %g reserved after the restart",
		allocations.Load(), len(acked), len(jobs), reserved)
	for id, q := range acked {
		r, ok := held[id]
		if !ok || !r.Status.Active() || r.Quantity != q {
			t.Errorf("acknowledged reservation %s (%g) after the restart: %+v (found %v)", id, q, r, ok)
		}
	}
	if reserved > stock {
		t.Errorf("%g reserved of %d on hand", reserved, stock)
	}
	for _, id := range jobs {
		var o orderBody
		into(t, s2.Do("GET", "/api/orders/"+id, viewer, nil), 200, &o)
		if o.Order.Allocation == nil {
			t.Errorf("imported order %s has no allocation", id)
		}
	}
	var inc struct {
		Inconsistencies []supplyplan.Inconsistency `json:"inconsistencies"`
	}
	into(t, s2.Do("GET", "/api/allocation/inconsistencies", viewer, nil), 200, &inc)
	if len(inc.Inconsistencies) != 0 {
		t.Errorf("after the restart: %+v", inc.Inconsistencies)
	}
}
