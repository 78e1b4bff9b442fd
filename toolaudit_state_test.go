package supplyplan

import (
	"fmt"
	"testing"
	"time"
)

// TestToolAuditsCapped: past MaxToolAudits a new confirmation drops the oldest audits in the same
// write, but never one young enough to still refuse its token's replay.
func TestToolAuditsCapped(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ts := NewTenantState("org_1")
	var recs []Record
	for i := range MaxToolAudits {
		at := now.Add(-10 * time.Minute) // within the replay window
		if i < 3 {
			at = now.Add(-time.Duration(3-i) * 2 * time.Hour) // the three oldest, 6 h, 4 h, 2 h ago
		}
		recs = append(recs, Put(KindToolAudit, fmt.Sprintf("cfm_%05d", i), &ToolAudit{ID: fmt.Sprintf("cfm_%05d", i), CreatedAt: at}))
	}
	for _, r := range recs {
		if err := ts.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ts.ClaimToolConfirmation(ToolAudit{ID: "cfm_new", CreatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "cfm_new" || !got[1].Del || got[1].ID != "cfm_00000" {
		t.Fatalf("records %+v, want the new audit and the deletion of the oldest", got)
	}
	// Everything over the cap is recent: nothing can go yet.
	young := NewTenantState("org_1")
	for i := range MaxToolAudits {
		id := fmt.Sprintf("cfm_%05d", i)
		if err := young.Apply(Put(KindToolAudit, id, &ToolAudit{ID: id, CreatedAt: now.Add(-time.Minute)})); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := young.ClaimToolConfirmation(ToolAudit{ID: "cfm_new", CreatedAt: now}); err != nil || len(got) != 1 {
		t.Fatalf("records %+v %v, want only the new audit", got, err)
	}
	// A reused token is still refused.
	if _, err := ts.ClaimToolConfirmation(ToolAudit{ID: "cfm_00005", CreatedAt: now}); ErrorCode(err) != ECONFLICT {
		t.Fatalf("reused token = %v", err)
	}
}
