package supplyplan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// naiveAlertPage is the alert history page by definition: every alert filtered, sorted newest
// first, the page cut out.
func naiveAlertPage(all map[string]*Alert, f AlertFilter) AlertPage {
	var out []Alert
	for _, a := range all {
		if f.Match(a) {
			out = append(out, *a)
		}
	}
	slices.SortFunc(out, func(a, b Alert) int { return -compareAlerts(&a, &b) })
	p := AlertPage{Alerts: []Alert{}, Pagination: NewPagination(f.Page, f.Limit, len(out))}
	if start := (f.Page - 1) * f.Limit; start < len(out) {
		p.Alerts = append(p.Alerts, out[start:min(start+f.Limit, len(out))]...)
	}
	return p
}

func naiveDeliveries(all map[string]*Delivery, ep string, f DeliveryFilter) DeliveryPage {
	var out []Delivery
	for _, d := range all {
		if d.Target == TargetEndpoint && d.EndpointID == ep && (f.Status == "" || d.Status == f.Status) {
			out = append(out, *d)
		}
	}
	slices.SortFunc(out, func(a, b Delivery) int { return cmp.Compare(b.ID, a.ID) })
	p := DeliveryPage{Deliveries: []Delivery{}, Pagination: NewPagination(f.Page, f.Limit, len(out))}
	if start := (f.Page - 1) * f.Limit; start < len(out) {
		p.Deliveries = append(p.Deliveries, out[start:min(start+f.Limit, len(out))]...)
	}
	return p
}

// TestOutboundIndexes: after random puts, updates (delivery results, moves between endpoints,
// out-of-order trigger times), deletes and a snapshot round trip, every page of alert history and
// of each endpoint's deliveries equals the page computed from the maps by sorting everything.
func TestOutboundIndexes(t *testing.T) {
	for _, limit := range []int{1024, 3} { // 3: most shifts mark an order stale
		t.Run(fmt.Sprint("shiftLimit=", limit), func(t *testing.T) {
			defer func(old int) { shiftLimit = old }(shiftLimit)
			shiftLimit = limit
			testOutboundIndexes(t)
		})
	}
}

func testOutboundIndexes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	base := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	st := NewOutboundState("org")
	kinds := []AlertKind{"stockout", "overstock", "lowAtp"}
	sevs := []Severity{"HIGH", "LOW"}
	statuses := []string{DeliveryPending, DeliverySucceeded, DeliveryFailed}
	eps := []string{"ep1", "ep2", "ep3"}
	var alertIDs, deliveryIDs []string
	check := func(st *OutboundState, step int) {
		t.Helper()
		yes, no := true, false
		from, to := base.Add(time.Duration(rng.IntN(300))*time.Minute), base.Add(time.Duration(100+rng.IntN(300))*time.Minute)
		for _, f := range []AlertFilter{{}, {Type: kinds[rng.IntN(3)]}, {Severity: "HIGH", Delivered: &no}, {Delivered: &yes},
			{From: &from}, {To: &to}, {From: &from, To: &to, Type: kinds[rng.IntN(3)]}} {
			f.Page, f.Limit = 1+rng.IntN(4), 1+rng.IntN(30)
			got, want := st.PageAlerts(f), naiveAlertPage(st.Alerts, f)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d: alerts %+v: got %d alerts %+v, want %d %+v", step, f, len(got.Alerts), got.Pagination, len(want.Alerts), want.Pagination)
			}
		}
		for _, ep := range append(eps, "none") {
			f := DeliveryFilter{Status: []string{"", DeliveryFailed}[rng.IntN(2)], Page: 1 + rng.IntN(3), Limit: 1 + rng.IntN(20)}
			if got, want := st.ListDeliveries(ep, f), naiveDeliveries(st.Deliveries, ep, f); !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d: deliveries of %s %+v: got %+v, want %+v", step, ep, f, got.Pagination, want.Pagination)
			}
		}
	}
	for step := range 3000 {
		var r Record
		switch x := rng.IntN(10); {
		case x < 4 || len(alertIDs) == 0:
			at := base.Add(time.Duration(rng.IntN(500)) * time.Minute) // often out of order, sometimes equal
			a := Alert{ID: fmt.Sprintf("alr_%05d", rng.IntN(100000)), Type: kinds[rng.IntN(3)], Severity: sevs[rng.IntN(2)], TriggeredAt: at}
			if old, ok := st.Alerts[a.ID]; ok && rng.IntN(2) == 0 {
				a.TriggeredAt = old.TriggeredAt
			}
			a.Delivered = rng.IntN(2) == 0
			alertIDs = append(alertIDs, a.ID)
			r = Put(KindAlertHistory, a.ID, &a)
		case x < 5:
			r = Del(KindAlertHistory, alertIDs[rng.IntN(len(alertIDs))])
		case x < 9 || len(deliveryIDs) == 0:
			id := fmt.Sprintf("dlv_%05d", rng.IntN(2000))
			d := Delivery{ID: id, Target: TargetEndpoint, EndpointID: eps[rng.IntN(3)], Status: statuses[rng.IntN(3)], EventID: "evt_" + id}
			if rng.IntN(5) == 0 {
				d.Target, d.EndpointID, d.DestinationID = TargetAlert, "", "dst1"
			}
			deliveryIDs = append(deliveryIDs, id)
			r = Put(KindDelivery, id, &d)
		default:
			r = Del(KindDelivery, deliveryIDs[rng.IntN(len(deliveryIDs))])
		}
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
		if step%50 == 0 {
			check(st, step)
		}
	}
	check(st, -1)
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back OutboundState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	check(&back, -2)
}
