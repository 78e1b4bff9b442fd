package supplyplan

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTenantStateDispatch checks that TenantState.Apply hands each record kind to the sub-state
// that owns it, that a sub-state refuses the kinds of the others, and that an unknown kind fails.
func TestTenantStateDispatch(t *testing.T) {
	tests := []struct {
		kind  string
		value any
		owner string
		held  func(*TenantState) int
	}{
		{KindProduct, &Product{ID: "x", SKU: "sku-x"}, "catalog", func(s *TenantState) int { return len(s.CatalogState.Products) }},
		{KindLocation, &Location{ID: "x"}, "catalog", func(s *TenantState) int { return len(s.CatalogState.Locations) }},
		{KindInventory, &InventoryLevel{SKU: "x"}, "catalog", func(s *TenantState) int { return len(s.CatalogState.Inventory) }},
		{KindSupplier, &Supplier{}, "catalog", func(s *TenantState) int { return len(s.CatalogState.Suppliers) }},
		{KindPurchaseOrder, &PurchaseOrder{}, "catalog", func(s *TenantState) int { return len(s.CatalogState.PurchaseOrders) }},
		{KindOrder, &Order{}, "catalog", func(s *TenantState) int { return len(s.CatalogState.Orders) }},
		{KindScenario, &Scenario{ID: "x"}, "forecasting", func(s *TenantState) int { return len(s.ForecastingState.Scenarios) }},
		{KindEvent, &ExternalEvent{ID: "x"}, "forecasting", func(s *TenantState) int { return s.ForecastingState.Events.Len() }},
		{KindForecastVersion, &ForecastVersion{ID: "x"}, "forecasting", func(s *TenantState) int { return len(s.ForecastingState.ForecastVersions) }},
		{KindForecastChange, &ChangeEntry{ID: "x"}, "forecasting", func(s *TenantState) int { return len(s.ForecastingState.Changes) }},
		{KindImportJob, &ImportJob{JobID: "x"}, "imports", func(s *TenantState) int { return len(s.ImportsState.ImportJobs) }},
		{KindTransfer, &Transfer{ID: "x"}, "transfers", func(s *TenantState) int { return len(s.TransfersState.Transfers) }},
		{KindRecommendation, &Recommendation{ID: "x"}, "transfers", func(s *TenantState) int { return len(s.TransfersState.Recommendations) }},
		{KindPendingEvent, &DomainEvent{ID: "x"}, "outbox", func(s *TenantState) int { return len(s.OutboxState.PendingEvents) }},
		{KindToolAudit, &ToolAudit{ID: "x"}, "toolaudit", func(s *TenantState) int { return len(s.ToolAuditState.ToolAudits) }},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			st := NewTenantState("o")
			if err := st.Apply(Put(tc.kind, "x", tc.value)); err != nil {
				t.Fatal(err)
			}
			if got := tc.held(st); got != 1 {
				t.Fatalf("%s sub-state holds %d records after a put, want 1", tc.owner, got)
			}
			parts := map[string]interface{ Apply(Record) error }{"catalog": &st.CatalogState, "forecasting": &st.ForecastingState,
				"imports": &st.ImportsState, "transfers": &st.TransfersState, "outbox": &st.OutboxState, "toolaudit": &st.ToolAuditState}
			for name, part := range parts {
				if name == tc.owner {
					continue
				}
				if err := part.Apply(Put(tc.kind, "y", tc.value)); err == nil || !strings.Contains(err.Error(), "unknown record kind") {
					t.Errorf("%s sub-state took a %s record (err %v)", name, tc.kind, err)
				}
			}
			if err := st.Apply(Put(tc.kind, "x", new(struct{}))); err == nil {
				t.Error("a value of the wrong type was stored")
			}
			if err := st.Apply(Del(tc.kind, "x")); err != nil {
				t.Fatal(err)
			}
			if got := tc.held(st); got != 0 {
				t.Fatalf("%s sub-state holds %d records after a delete, want 0", tc.owner, got)
			}
		})
	}
	if err := NewTenantState("o").Apply(Put("nosuchkind", "x", &Product{})); err == nil {
		t.Error("an unknown kind was applied")
	}
}

// TestTenantStateIndexesFollowApply checks the derived indexes of the sub-states: the sku index
// (a product whose sku changes), the event index (an event that changes scope) and the change
// order, also when a record is refused.
func TestTenantStateIndexesFollowApply(t *testing.T) {
	st := NewTenantState("o")
	apply := func(r Record) {
		t.Helper()
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	apply(Put(KindProduct, "P", &Product{ID: "P", SKU: "old"}))
	apply(Put(KindProduct, "P", &Product{ID: "P", SKU: "new"}))
	if _, ok := st.ProductBySKU("old"); ok {
		t.Error("the old sku still finds the product")
	}
	if p, ok := st.ProductBySKU("new"); !ok || p.ID != "P" {
		t.Errorf("ProductBySKU(new) = %v, %v", p, ok)
	}
	if err := st.Apply(Put(KindProduct, "P", &Location{})); err == nil {
		t.Fatal("a location was stored as a product")
	}
	if p, ok := st.ProductBySKU("new"); !ok || p.ID != "P" {
		t.Errorf("a refused record changed the sku index: %v, %v", p, ok)
	}

	apply(Put(KindEvent, "E", &ExternalEvent{ID: "E", ProductMasterID: "P"}))
	if got := len(st.EventsFor("P", "L", nil)); got != 1 {
		t.Errorf("EventsFor(P, L) = %d, want 1", got)
	}
	apply(Put(KindEvent, "E", &ExternalEvent{ID: "E", LocationID: "M"}))
	if got := len(st.EventsFor("P", "L", nil)); got != 0 {
		t.Errorf("EventsFor(P, L) after a move = %d, want 0", got)
	}
	if !st.HasEventsFor("", "M") {
		t.Error("the moved event is not found at its new location")
	}
	apply(Del(KindEvent, "E"))
	if st.HasEventsFor("", "M") {
		t.Error("a deleted event is still indexed")
	}

	for _, id := range []string{"chg_2", "chg_1", "chg_3"} {
		apply(Put(KindForecastChange, id, &ChangeEntry{ID: id, EffectStatus: EffectPending}))
	}
	apply(Del(KindForecastChange, "chg_2"))
	var got []string
	for _, e := range st.PendingChanges(10) {
		got = append(got, e.ID)
	}
	if strings.Join(got, ",") != "chg_1,chg_3" {
		t.Errorf("PendingChanges = %v, want [chg_1 chg_3]", got)
	}
}

// TestPlatformOutboxLayout checks that the platform's outbox (OutboxState inside BillingState)
// keeps its place in the platform snapshot: a top-level "pendingEvents" object.
func TestPlatformOutboxLayout(t *testing.T) {
	const snapshot = `{"orgs":{},"keys":{},"globalEvents":{},"pendingEvents":{"evt_1":{"id":"evt_1","type":"ops.payment_failed"}}}`
	var st PlatformState
	if err := json.Unmarshal([]byte(snapshot), &st); err != nil {
		t.Fatal(err)
	}
	if got := st.PendingEventList(); len(got) != 1 || got[0].Type != "ops.payment_failed" {
		t.Fatalf("PendingEventList = %+v", got)
	}
	if err := st.Apply(Put(KindPendingEvent, "evt_2", &DomainEvent{ID: "evt_2"})); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	if len(top["pendingEvents"]) != 2 {
		t.Errorf("encoded pendingEvents = %v, want 2 events at the top level", top["pendingEvents"])
	}
}
