package supplyplan

import (
	"cmp"
	"slices"
	"time"
)

// Record kinds of transfers.
const (
	KindTransfer       = "transfer"
	KindRecommendation = "recommendation"
)

func init() {
	RegisterKind(KindTransfer, func() any { return new(Transfer) })
	RegisterKind(KindRecommendation, func() any { return new(Recommendation) })
}

// TransfersState is the tenant's inventory transfers and transfer recommendations (sub-state of
// TenantState). Creating, moving and executing a transfer also changes stock: those operations
// are TenantState's (tenant_transfers.go).
type TransfersState struct {
	Transfers       map[string]*Transfer       `json:"transfers"`
	Recommendations map[string]*Recommendation `json:"recommendations"`

	// quarantined are the stored numbers left out since takeQuarantined last ran (quarantine.go).
	quarantined []QuarantinedValue
}

// init makes every map non-nil.
func (s *TransfersState) init() {
	initMap(&s.Transfers)
	initMap(&s.Recommendations)
}

// Apply stores one transfer or recommendation, after quarantining the numbers out of bounds in
// its value.
func (s *TransfersState) Apply(r Record) error {
	if !r.Del && r.Value != nil {
		quarantine(r.Kind, r.ID, r.Value, &s.quarantined)
	}
	switch r.Kind {
	case KindTransfer:
		return putValue(s.Transfers, r)
	case KindRecommendation:
		return putValue(s.Recommendations, r)
	}
	return unknownKind("transfers state", r)
}

// quarantineAll cleans every record of a decoded snapshot.
func (s *TransfersState) quarantineAll() {
	for id, v := range s.Transfers {
		quarantine(KindTransfer, id, v, &s.quarantined)
	}
}

// takeQuarantined returns the values quarantined since the last call, and forgets them.
func (s *TransfersState) takeQuarantined() []QuarantinedValue {
	q := s.quarantined
	s.quarantined = nil
	return q
}

// RejectionMemory is how long a rejected recommendation keeps the same move from being proposed
// again (unless the situation got worse).
const RejectionMemory = 14 * 24 * time.Hour

// RecommendationRetention is how long a recommendation stays after it reached a final state
// (EXPIRED, REJECTED, EXECUTED): longer than RejectionMemory, which reads the rejected ones.
// Without it every generation's recommendations stayed forever, ~1 KB each.
const RecommendationRetention = 30 * 24 * time.Hour

// PurgeFinished returns the deletions of the recommendations that reached a final state more
// than RecommendationRetention before now. PENDING and APPROVED ones stay.
func (s *TransfersState) PurgeFinished(now time.Time) []Record {
	var ids []string
	for id, r := range s.Recommendations {
		var at *time.Time
		switch r.Status {
		case RecExpired:
			at = r.ExpiredAt
		case RecRejected:
			at = r.RejectedAt
		case RecExecuted:
			at = r.ExecutedAt
		default:
			continue
		}
		if at == nil {
			at = &r.UpdatedAt
		}
		if now.Sub(*at) > RecommendationRetention {
			ids = append(ids, id)
		}
	}
	return delAll(KindRecommendation, ids)
}

type movePair struct{ product, src, dst string }

// ApplyProposals turns engine proposals into recommendations: a move that is already PENDING or
// APPROVED is not duplicated; a move rejected within RejectionMemory is proposed again only when
// the situation got worse (more urgent, or at least 25% more quantity). PENDING recommendations
// of the evaluated products that the engine no longer proposes expire (their justification is
// gone), as do those past their expiry.
func (s *TransfersState) ApplyProposals(props []Proposal, evaluated map[string]bool, locationID string, expiry time.Duration, now time.Time) (GenerateResult, []Record) {
	res := GenerateResult{Created: []Recommendation{}, Products: len(evaluated)}
	open := map[movePair]bool{}
	rejected := map[movePair]*Recommendation{}
	for _, r := range s.Recommendations {
		k := movePair{r.ProductMasterID, r.SourceLocationID, r.DestLocationID}
		switch r.EffectiveStatus(now) {
		case RecPending, RecApproved:
			open[k] = true
		case RecRejected:
			if r.RejectedAt != nil && now.Sub(*r.RejectedAt) < RejectionMemory {
				if prev := rejected[k]; prev == nil || prev.RejectedAt.Before(*r.RejectedAt) {
					rejected[k] = r
				}
			}
		}
	}
	var recs []Record
	proposed := map[movePair]bool{}
	for _, p := range props {
		k := movePair{p.ProductID, p.Source, p.Dest}
		proposed[k] = true
		if open[k] {
			res.SkippedPending++
			continue
		}
		if prev := rejected[k]; prev != nil && !(p.Priority.rank() < prev.Priority.rank() || p.Quantity >= 1.25*prev.Quantity) {
			res.SkippedRejected++
			continue
		}
		e := p.Explanation
		r := Recommendation{ID: NewID("rec"), ProductMasterID: p.ProductID, SourceLocationID: p.Source, DestLocationID: p.Dest,
			Quantity: p.Quantity, Priority: p.Priority, Status: RecPending, Reason: p.Reason, EstimatedROI: p.ROI,
			Explanation: &e, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(expiry)}
		open[k] = true
		recs = append(recs, Put(KindRecommendation, r.ID, &r))
		res.Created = append(res.Created, r)
	}
	for _, r := range s.Recommendations {
		if r.Status != RecPending {
			continue
		}
		k := movePair{r.ProductMasterID, r.SourceLocationID, r.DestLocationID}
		var reason string
		switch {
		case !now.Before(r.ExpiresAt):
			reason = ExpiryTime
		case evaluated[r.ProductMasterID] && !proposed[k] && (locationID == "" || r.SourceLocationID == locationID || r.DestLocationID == locationID):
			reason = ExpiryJustification
		default:
			continue
		}
		if x, ok := r.Expire(reason, now); ok {
			recs = append(recs, Put(KindRecommendation, x.ID, &x))
			res.Expired++
		}
	}
	return res, recs
}

// ExpireDue records the time-based expiry of PENDING recommendations past expiresAt.
func (s *TransfersState) ExpireDue(now time.Time) []Record {
	var recs []Record
	for _, r := range s.Recommendations {
		if r.Status == RecPending && !now.Before(r.ExpiresAt) {
			if x, ok := r.Expire(ExpiryTime, now); ok {
				recs = append(recs, Put(KindRecommendation, x.ID, &x))
			}
		}
	}
	return recs
}

// ListRecommendations filters recommendations (by effective status), most urgent then newest first.
func (s *TransfersState) ListRecommendations(f RecommendationFilter, now time.Time) Page[Recommendation] {
	out := make([]Recommendation, 0)
	for _, r := range s.Recommendations {
		st := r.EffectiveStatus(now)
		if f.ValidOnly && st != RecPending && st != RecApproved {
			continue
		}
		if (f.Status != "" && st != f.Status) || (f.Priority != "" && r.Priority != f.Priority) ||
			(f.ProductMasterID != "" && r.ProductMasterID != f.ProductMasterID) ||
			(f.SourceLocationID != "" && r.SourceLocationID != f.SourceLocationID) ||
			(f.DestLocationID != "" && r.DestLocationID != f.DestLocationID) {
			continue
		}
		v := *r
		v.Status = st
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Recommendation) int {
		if c := cmp.Compare(a.Priority.rank(), b.Priority.rank()); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return page(out, f.Limit, f.Offset)
}

// GetRecommendation returns one recommendation with its effective status.
func (s *TransfersState) GetRecommendation(id string, now time.Time) (Recommendation, error) {
	r, ok := s.Recommendations[id]
	if !ok {
		return Recommendation{}, NotFound("Recommendation")
	}
	v := *r
	v.Status = r.EffectiveStatus(now)
	return v, nil
}

// ChangeRecommendation applies approve or reject.
func (s *TransfersState) ChangeRecommendation(id string, fn func(Recommendation) (Recommendation, error)) (Recommendation, []Record, error) {
	cur, ok := s.Recommendations[id]
	if !ok {
		return Recommendation{}, nil, NotFound("Recommendation")
	}
	r, err := fn(*cur)
	if err != nil {
		return Recommendation{}, nil, err
	}
	return r, []Record{Put(KindRecommendation, r.ID, &r)}, nil
}

// ListTransfers returns transfers, newest first.
func (s *TransfersState) ListTransfers(f TransferFilter) Page[Transfer] {
	out := make([]Transfer, 0)
	for _, t := range s.Transfers {
		if (f.Status != "" && t.Status != f.Status) || (f.ProductMasterID != "" && t.ProductMasterID != f.ProductMasterID) ||
			(f.SourceLocationID != "" && t.SourceLocationID != f.SourceLocationID) || (f.DestLocationID != "" && t.DestLocationID != f.DestLocationID) {
			continue
		}
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b Transfer) int { return cmp.Compare(b.ID, a.ID) })
	return page(out, f.Limit, f.Offset)
}

// GetTransfer returns one transfer.
func (s *TransfersState) GetTransfer(id string) (Transfer, error) {
	t, ok := s.Transfers[id]
	if !ok {
		return Transfer{}, NotFound("Transfer")
	}
	return *t, nil
}
