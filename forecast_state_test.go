package supplyplan

import (
	"testing"
	"time"
)

// A change entry's pending effect shares an event as stored (never changed in place) and copies
// one that carries its expanded product or location, without them.
func TestChangePendingSharesTheStoredEvent(t *testing.T) {
	s := NewTenantState("org_1")
	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	stored := &ExternalEvent{ID: "evt_1", Name: "Promo", Type: EventPromotion, ProductMasterID: "prd_1",
		StartsAt: now, EndsAt: now.AddDate(0, 0, 7)}
	recs := s.EventChange(ChangeEventCreated, "apikey:k", nil, stored, now)
	p := recs[0].Value.(*ChangeEntry).Pending
	if p == nil || p.New != stored {
		t.Fatalf("pending effect %+v does not share the stored event", p)
	}
	expanded := *stored
	expanded.ProductMaster = &ProductRef{ID: "prd_1", Name: "Product", SKU: "sku-1"}
	recs = s.EventChange(ChangeEventUpdated, "apikey:k", stored, &expanded, now)
	p = recs[0].Value.(*ChangeEntry).Pending
	if p.Old != stored || p.New == &expanded || p.New.ProductMaster != nil || p.New.ID != "evt_1" {
		t.Fatalf("pending effect old %p (stored %p), new %+v: want the stored old and a bare copy of the new", p.Old, stored, p.New)
	}
	if expanded.ProductMaster == nil {
		t.Fatal("the caller's event was changed")
	}
}
