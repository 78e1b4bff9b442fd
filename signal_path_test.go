package supplyplan

import (
	"testing"
	"time"
)

// The tenant resolves a signal's product by id or SKU and rejects unknown products and
// locations; the store's answer makes each resolved signal APPLIED, DUPLICATE or REJECTED (late).
func TestResolveSignalsAndOutcomes(t *testing.T) {
	st := NewTenantState("org")
	applyAll(t, st, []Record{Put(KindProduct, "prd_1", &Product{ID: "prd_1", SKU: "SKU-1"}), Put(KindLocation, "L1", &Location{ID: "L1"})})
	at := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	signals := []DemandSignal{
		{SignalID: "a", OrganizationID: "org", SKU: "SKU-1", Location: "L1", Quantity: 1, OccurredAt: at},
		{SignalID: "b", OrganizationID: "org", SKU: "nope", Location: "L1", Quantity: 1, OccurredAt: at},
		{SignalID: "c", OrganizationID: "org", SKU: "prd_1", Location: "L2", Quantity: 1, OccurredAt: at},
		{SignalID: "d", OrganizationID: "org", SKU: "prd_1", Location: "L1", Quantity: 2, OccurredAt: at},
	}
	out := make([]SignalOutcome, len(signals))
	valid, slot := st.ResolveSignals(signals, out)
	if len(valid) != 2 || slot[0] != 0 || slot[1] != 3 || valid[0].SKU != "prd_1" || valid[1].SKU != "prd_1" || valid[1].SignalID != "d" {
		t.Fatalf("valid %+v at %v, want a and d with the product id", valid, slot)
	}
	if signals[0].SKU != "SKU-1" {
		t.Fatal("the caller's signal was changed")
	}
	if out[1].Status != SignalRejected || out[1].Reason != RejectUnknownProduct || out[2].Reason != RejectUnknownLocation {
		t.Fatalf("outcomes %+v", out)
	}
	if n := SignalOutcomes(out, slot, []SignalWrite{SignalWritten, SignalSeen}); n != 1 || out[0].Status != SignalApplied || out[3].Status != SignalDuplicate {
		t.Fatalf("%d applied, outcomes %+v", n, out)
	}
	if n := SignalOutcomes(out, slot, []SignalWrite{SignalTooLate, SignalWritten}); n != 1 || out[0].Status != SignalRejected ||
		out[0].Reason != RejectLateSignal || out[0].Message == "" || out[3].Status != SignalApplied {
		t.Fatalf("%d applied, outcomes %+v", n, out)
	}
}
