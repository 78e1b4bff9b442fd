package actors

import (
	"context"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
)

// TestFinishedRecommendationsPurged: the recommendation sweep deletes the recommendations that
// reached a final state more than RecommendationRetention ago (durably: they stay gone after a
// restart) and keeps pending, approved and recently finished ones.
func TestFinishedRecommendationsPurged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newServices(t, options{dir: dir})
	p := s.bootstrap(t)
	now := supplyplan.Now()
	old, recent := now.Add(-supplyplan.RecommendationRetention-time.Hour), now.Add(-24*time.Hour)
	rec := func(id string, st supplyplan.RecommendationStatus, at time.Time) *supplyplan.Recommendation {
		r := &supplyplan.Recommendation{ID: id, Status: st, CreatedAt: at, UpdatedAt: at, ExpiresAt: now.Add(time.Hour)}
		switch st {
		case supplyplan.RecExpired:
			r.ExpiredAt = &at
		case supplyplan.RecRejected:
			r.RejectedAt = &at
		case supplyplan.RecExecuted:
			r.ExecutedAt = &at
		}
		return r
	}
	plant := []*supplyplan.Recommendation{
		rec("rec_old_expired", supplyplan.RecExpired, old),
		rec("rec_old_rejected", supplyplan.RecRejected, old),
		rec("rec_old_executed", supplyplan.RecExecuted, old),
		rec("rec_recent_rejected", supplyplan.RecRejected, recent),
		rec("rec_old_approved", supplyplan.RecApproved, old),
		rec("rec_old_pending", supplyplan.RecPending, old), // not yet expired: ExpiresAt is ahead
	}
	if _, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		var recs []supplyplan.Record
		for _, r := range plant {
			recs = append(recs, supplyplan.Put(supplyplan.KindRecommendation, r.ID, r))
		}
		return struct{}{}, recs, nil
	}); err != nil {
		t.Fatal(err)
	}
	s.transfers.sweepRecommendations(ctx)
	want := map[string]bool{"rec_old_expired": false, "rec_old_rejected": false, "rec_old_executed": false,
		"rec_recent_rejected": true, "rec_old_approved": true, "rec_old_pending": true}
	check := func(s *services) {
		t.Helper()
		for id, kept := range want {
			_, err := s.transfers.GetRecommendation(ctx, p, id)
			if got := err == nil; got != kept {
				t.Errorf("%s kept = %v (%v), want %v", id, got, err, kept)
			}
		}
	}
	check(s)
	s.close(t)
	check(newServices(t, options{dir: dir}))
}
