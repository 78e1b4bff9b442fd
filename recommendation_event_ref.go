package supplyplan

import (
	"fmt"
	"time"
)

// A recommendation event in the outbox (recommendation.created, recommendation.expired) carries
// the recommendation without its explanation, and the transaction that creates or expires it
// writes the recommendation record in the same journal entry: a generation over 10,000 products x
// 50 locations wrote its 50,000 recommendations twice, 40 % of a 126 MB entry. The journal writes
// such an event as a reference to that record (record kind "recevent": the event's id, type,
// organization and timestamp, and the recommendation's id), and replay rebuilds the event from
// the recommendation the state holds when the reference is applied (the records of an entry are
// applied in order). EncodeRecords takes this form only when the event's data is, field for
// field, the last record of that recommendation before the event without its explanation; any
// other event is written whole. Like allocation references (allocation_event_ref.go), only the
// journal takes this form: the live state, the outbox relay and snapshots hold whole events, and
// journals written before it hold whole events that replay as they always did.

// KindRecommendationEventRef is the journal's record kind of a recommendation event written as a
// reference to its recommendation; applying it puts the rebuilt event in the outbox.
const KindRecommendationEventRef = "recevent"

func init() {
	RegisterKind(KindRecommendationEventRef, func() any { return new(recommendationEventRef) })
}

// recommendationEventRef is the journaled form of a recommendation event.
type recommendationEventRef struct {
	ID               string    `json:"id"`
	Type             string    `json:"type"`
	OrganizationID   string    `json:"organizationId"`
	Timestamp        time.Time `json:"timestamp"`
	RecommendationID string    `json:"recommendationId"`
}

// lastRecommendations maps a recommendation's id to the index of its last record in an entry,
// built on the first recommendation event EncodeRecords meets.
type lastRecommendations map[string]int

// appendRecommendationEventRef writes recs[i] as a recommendation event reference when it is an
// outbox event whose data the recommendation record before it rebuilds exactly; false leaves b as
// it was (the record is written whole).
func appendRecommendationEventRef(b []byte, recs []Record, i int, last *lastRecommendations) ([]byte, bool) {
	r := recs[i]
	if r.Kind != KindPendingEvent || r.Del {
		return b, false
	}
	e, ok := r.Value.(*DomainEvent)
	if !ok || e == nil || r.ID != e.ID {
		return b, false
	}
	d, ok := e.Data.(Recommendation)
	if !ok || d.Explanation != nil {
		return b, false
	}
	if *last == nil {
		*last = lastRecommendations{}
		for j := range recs {
			if recs[j].Kind == KindRecommendation {
				(*last)[recs[j].ID] = j
			}
		}
	}
	j, ok := (*last)[d.ID]
	if !ok || j >= i || recs[j].Del { // none before the event, or a later one: the state would differ
		return b, false
	}
	if rec, ok := recs[j].Value.(*Recommendation); !ok || rec == nil || !recommendationRebuilds(rec, &d) {
		return b, false
	}
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"k":"` + KindRecommendationEventRef + `","i":`)
	w.str(r.ID)
	w.raw(`,"v":{"id":`)
	w.str(e.ID)
	w.raw(`,"type":`)
	w.str(e.Type)
	w.raw(`,"organizationId":`)
	w.str(e.OrganizationID)
	w.raw(`,"timestamp":`)
	w.time(e.Timestamp)
	w.raw(`,"recommendationId":`)
	w.str(d.ID)
	w.raw("}}")
	if !w.ok {
		return b, false
	}
	return w.b, true
}

// recommendationRebuilds reports whether rec without its explanation is d in every field: the
// same strings, the same pointers (ROI and times: the event is a copy of the record), times equal
// in every part and the quantity bit for bit (== takes -0 for 0), so that the event rebuilt from
// the replayed record encodes to the bytes of the one written.
func recommendationRebuilds(rec *Recommendation, d *Recommendation) bool {
	x := *rec
	x.Explanation = nil
	return x == *d && sameBits(x.Quantity, d.Quantity)
}

// applyRecommendationEventRef puts the event a reference names in the outbox, rebuilt from the
// recommendation the state holds.
func (s *TenantState) applyRecommendationEventRef(r Record) error {
	if r.Del {
		return s.OutboxState.Apply(Del(KindPendingEvent, r.ID))
	}
	ref, ok := r.Value.(*recommendationEventRef)
	if !ok || ref == nil {
		return fmt.Errorf("%s record %s has value %T", r.Kind, r.ID, r.Value)
	}
	rec := s.Recommendations[ref.RecommendationID]
	if rec == nil {
		return fmt.Errorf("%s record %s: no recommendation %q", r.Kind, r.ID, ref.RecommendationID)
	}
	d := *rec
	d.Explanation = nil
	e := &DomainEvent{ID: ref.ID, Type: ref.Type, OrganizationID: ref.OrganizationID, Timestamp: ref.Timestamp, Data: d}
	return s.OutboxState.Apply(Put(KindPendingEvent, r.ID, e))
}
