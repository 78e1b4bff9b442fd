package supplyplan

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// replayEntry encodes recs as the journal does, decodes them and applies them to st; it returns
// the entry's bytes.
func replayEntry(t *testing.T, st *TenantState, recs []Record) []byte {
	t.Helper()
	b, err := EncodeRecords(recs)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	applyEntry(t, st, b)
	return b
}

func applyEntry(t *testing.T, st *TenantState, b []byte) {
	t.Helper()
	decoded, err := DecodeRecords(b)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	for _, r := range decoded {
		if err := st.Apply(r); err != nil {
			t.Fatalf("apply %s %s: %v", r.Kind, r.ID, err)
		}
	}
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, x, y []byte) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(x, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(y, &b); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(a, b)
}

// TestAllocationEventRefReplay: the allocation events of orders imports (succeeded, partial,
// backordered, failed, a new version, a cancellation) are journaled as references to their
// allocations, and replay rebuilds events that encode to the bytes of the events written. A
// journal written before the references existed (whole events) still replays to the same outbox.
func TestAllocationEventRefReplay(t *testing.T) {
	now := allocT0
	live := NewTenantState("org_ref")                                             // records applied as written (the actor's state)
	replayed, replayedOld := NewTenantState("org_ref"), NewTenantState("org_ref") // from the journal, this form and the one before
	write := func(recs []Record) (refs, events int) {
		t.Helper()
		for _, r := range recs {
			if r.Kind == KindPendingEvent && !r.Del {
				events++
			}
		}
		b := replayEntry(t, replayed, recs)
		decoded, err := DecodeRecords(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range decoded {
			if r.Kind == KindAllocationEventRef {
				refs++
			}
		}
		old, err := json.Marshal(recs) // the entry as journals before the references hold it
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(old, []byte(`"k":"pendingevent"`)) && events > 0 || bytes.Contains(old, []byte(KindAllocationEventRef)) {
			t.Fatalf("the whole form: %s", old)
		}
		applyEntry(t, replayedOld, old)
		for _, r := range recs {
			if err := live.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
		return refs, events
	}
	imp := func(kind ImportKind, body string) (refs, events int) {
		t.Helper()
		res := live.ApplyImport(fixtureRows(t, kind, []byte(body)), now)
		if len(res.Errors) > 0 {
			t.Fatalf("%s import: %+v", kind, res.Errors)
		}
		recs := res.Records
		if kind == ImportOrders {
			recs = append(recs, live.AllocateImported(recs, now).Records...)
		}
		return write(recs)
	}
	imp(ImportCatalog, `{"products":[{"externalId":"A"},{"externalId":"B"},{"externalId":"C"}]}`)
	imp(ImportInventory, `{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":10},{"skuId":"A","locationId":"STORE","quantityOnHand":4},
		{"skuId":"B","locationId":"DC","quantityOnHand":2.5}]}`)
	imp(ImportSuppliers, `{"suppliers":[{"externalId":"S1"}]}`)
	imp(ImportPurchaseOrders, `{"purchaseOrders":[{"externalPoNumber":"PO-1","supplierId":"S1","destinationLocationId":"DC",
		"expectedAt":"2026-11-05T00:00:00Z","lines":[{"skuId":"C","quantity":7,"unitCost":1}]}]}`)
	refs, events := imp(ImportOrders, `{"orders":[
		{"externalOrderId":"SO-1","lines":[{"skuId":"A","quantity":6,"locationId":"DC"},{"lineId":"b\u2028<&>","skuId":"B","quantity":1.25,"locationId":"DC"}]},
		{"externalOrderId":"SO-2","maxLocations":2,"lines":[{"skuId":"A","quantity":7,"locationId":"DC"}]},
		{"externalOrderId":"SO-3","maxLatenessDays":9,"requestedDate":"2026-11-03","lines":[{"skuId":"C","quantity":5,"locationId":"DC"}]},
		{"externalOrderId":"SO-4","fill":"FILL_OR_KILL","lines":[{"skuId":"B","quantity":9,"locationId":"DC"}]},
		{"externalOrderId":"SO-5","lines":[{"skuId":"A","quantity":50,"locationId":"DC"},{"skuId":"B","quantity":5,"locationId":"DC"}]},
		{"externalOrderId":"SO-6","status":"ALLOCATED","lines":[{"skuId":"B","quantity":0.5,"locationId":"DC"}]}]}`)
	if events != 6 || refs != events {
		t.Fatalf("first orders import: %d events, %d journaled as references", events, refs)
	}
	now = now.Add(time.Minute)
	refs, events = imp(ImportOrders, `{"orders":[
		{"externalOrderId":"SO-1","version":2,"lines":[{"skuId":"A","quantity":2,"locationId":"DC"}]},
		{"externalOrderId":"SO-2","status":"CANCELLED","lines":[{"skuId":"A","quantity":7,"locationId":"DC"}]}]}`)
	if events != 1 || refs != 1 {
		t.Fatalf("second orders import: %d events, %d journaled as references", events, refs)
	}
	statuses := map[AllocationStatus]bool{}
	for _, a := range live.Allocations {
		statuses[a.Status] = true
	}
	for _, st := range []AllocationStatus{AllocAllocated, AllocPartial, AllocBackordered, AllocFailed, AllocReleased} {
		if !statuses[st] {
			t.Errorf("no %s allocation: %v", st, statuses)
		}
	}
	if len(live.PendingEvents) != 7 {
		t.Fatalf("%d events in the outbox, want 7", len(live.PendingEvents))
	}
	for id, e := range live.PendingEvents {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(replayed.PendingEvents[id])
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("event %s replayed from references:\n got %s\nwant %s (%v)", id, got, want, err)
		}
		if _, ok := replayed.PendingEvents[id].Data.(map[string]any); ok {
			t.Errorf("event %s: replayed data is untyped", id)
		}
		old, err := json.Marshal(replayedOld.PendingEvents[id])
		if err != nil || !sameJSON(t, old, want) {
			t.Errorf("event %s replayed from whole events:\n got %s\nwant %s (%v)", id, old, want, err)
		}
	}
	for _, st := range []*TenantState{replayed, replayedOld} {
		if len(st.PendingEvents) != len(live.PendingEvents) {
			t.Errorf("replayed outbox holds %d events, want %d", len(st.PendingEvents), len(live.PendingEvents))
		}
		for id, a := range live.Allocations {
			want, _ := json.Marshal(a)
			if got, _ := json.Marshal(st.Allocations[id]); !bytes.Equal(got, want) {
				t.Errorf("allocation %s replayed:\n got %s\nwant %s", id, got, want)
			}
		}
	}
	// The relay drops a delivered event the same way whatever its journaled form.
	var drops []Record
	for id := range live.PendingEvents {
		drops = append(drops, Del(KindPendingEvent, id))
	}
	write(drops)
	if len(replayed.PendingEvents)+len(replayedOld.PendingEvents)+len(live.PendingEvents) != 0 {
		t.Errorf("events left after the relay dropped them")
	}
}

// TestAllocationEventRefRandom: on random allocations and events, EncodeRecords writes an event
// as a reference exactly when its allocation, the last one of its order before it within the
// look-back, rebuilds it; replay then rebuilds an event that encodes to the same bytes as the
// one written (any other is written whole and replays as before).
func TestAllocationEventRefRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 11))
	strs := []string{"a", "res_01ABC", "O-12/3", `quo"te`, "<tag>&", "é", "\u2028", "line\nbreak", "\xff\xfe", "x\xc3", ""}
	str := func() string { return strs[rng.IntN(len(strs))] }
	nums := []float64{0, 1, 2.5, 1e-7, 1e21, 0.1 + 0.2, math.Copysign(0, -1), 5e-324, 1e15, 123456789.125, math.NaN()}
	num := func() float64 { return nums[rng.IntN(len(nums))] }
	times := []time.Time{allocT0, allocT0.Add(123456789 * time.Nanosecond), {}, time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	tp := func() *time.Time {
		if rng.IntN(3) == 0 {
			return nil
		}
		v := times[rng.IntN(len(times))]
		return &v
	}
	statuses := []AllocationStatus{AllocAllocated, AllocPartial, AllocBackordered, AllocFailed}
	refs, whole := 0, 0
	for i := range 3000 {
		a := &Allocation{OrderID: str(), OrderVersion: rng.Int64N(4), Status: statuses[rng.IntN(len(statuses))], ReasonCode: str(),
			Fill: FillPartial, EarliestPromiseDate: tp(), CreatedAt: allocT0, UpdatedAt: allocT0}
		if rng.IntN(8) > 0 {
			a.Lines = []AllocationLine{}
			for range rng.IntN(4) {
				l := AllocationLine{LineID: str(), SKU: "A", Quantity: 1, BackorderedQuantity: num(), Shortfall: num(), PromiseDate: tp()}
				if rng.IntN(3) > 0 {
					l.Allocations = []LineAllocation{}
					for range rng.IntN(3) {
						l.Allocations = append(l.Allocations, LineAllocation{LocationID: str(), Quantity: num(), ReservationID: str()})
					}
				}
				a.Lines = append(a.Lines, l)
			}
		}
		e := allocationEvent(a, str(), []string{"", str()}[rng.IntN(2)], times[rng.IntN(len(times))])
		if rng.IntN(2) == 0 {
			e.ID = str()
		}
		// what may stand between them, or keep the allocation from rebuilding the event
		recs := []Record{Put(KindAllocation, a.OrderID, a)}
		for range rng.IntN(4) {
			recs = append(recs, Put(KindReservation, str(), &Reservation{ID: str(), Status: ResHeld, CreatedAt: allocT0, UpdatedAt: allocT0}))
		}
		perturbed := true
		switch rng.IntN(12) {
		case 0: // another allocation of the order after it
			b := a.clone()
			b.OrderVersion++
			recs = append(recs, Put(KindAllocation, a.OrderID, b))
		case 1: // the order's allocation deleted
			recs = append(recs, Del(KindAllocation, a.OrderID))
		case 2: // beyond the look-back
			for range allocEventLookback {
				recs = append(recs, Put(KindReservation, "r", &Reservation{ID: "r", CreatedAt: allocT0, UpdatedAt: allocT0}))
			}
		case 3: // the event's data differs from the allocation's
			c := a.clone()
			c.Status = statuses[rng.IntN(len(statuses))]
			if len(c.Lines) > 0 {
				c.Lines[0].BackorderedQuantity = num()
				c.Lines[0].Shortfall = num()
				c.Lines[0].LineID = str()
			}
			_, e.Data = allocationEventData(c, "")
		case 4: // an event whose lines are null
			switch d := e.Data.(type) {
			case AllocationSucceeded:
				d.Lines = nil
				e.Data = d
			case AllocationFailed:
				d.Lines = nil
				e.Data = d
			}
		default:
			perturbed = false
		}
		recs = append(recs, EventRecord(e))
		want, _ := json.Marshal(e)
		b, err := EncodeRecords(recs)
		if _, wantErr := json.Marshal(recs); (err == nil) != (wantErr == nil) {
			t.Fatalf("case %d: EncodeRecords %v, encoding/json %v", i, err, wantErr)
		}
		if err != nil {
			continue // a value encoding/json refuses (a time past year 9999, a NaN): the write is refused, as before
		}
		st := NewTenantState("org_ref")
		applyEntry(t, st, b)
		var got *DomainEvent // the only one (its id may have lost invalid UTF-8 on the way)
		for _, v := range st.PendingEvents {
			got = v
		}
		if len(st.PendingEvents) != 1 {
			t.Fatalf("case %d: the event is not in the outbox after replay: %s", i, b)
		}
		gotJSON, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := DecodeRecords(b)
		if err != nil {
			t.Fatal(err)
		}
		switch decoded[len(decoded)-1].Kind {
		case KindAllocationEventRef:
			refs++
			if !bytes.Equal(gotJSON, want) {
				t.Fatalf("case %d: replayed from a reference:\n got %s\nwant %s\nentry %s", i, gotJSON, want, b)
			}
		case KindPendingEvent:
			whole++
			// an event its allocation rebuilds (nothing in between, strings that round-trip) is
			// always written as a reference
			if !perturbed && !bytes.Contains(b, []byte(`\ufffd`)) {
				t.Fatalf("case %d: written whole, yet its allocation rebuilds it: %s", i, b)
			}
			if !sameJSON(t, gotJSON, want) && !bytes.Contains(b, []byte(`\ufffd`)) {
				t.Fatalf("case %d: replayed whole:\n got %s\nwant %s", i, gotJSON, want)
			}
		default:
			t.Fatalf("case %d: the event's record: %s", i, b)
		}
	}
	if refs < 300 || whole < 300 {
		t.Errorf("%d references and %d whole events: the cases do not cover both", refs, whole)
	}
}
