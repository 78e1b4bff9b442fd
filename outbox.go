package supplyplan

import (
	"cmp"
	"slices"
)

// KindPendingEvent is the record kind of the outbox (tenant and platform journals).
const KindPendingEvent = "pendingevent"

func init() {
	RegisterKind(KindPendingEvent, func() any { return new(DomainEvent) })
}

// OutboxState holds the domain events written with the change that caused them, waiting to be
// handed to the outbound delivery (the outbox: an event is never lost between the two). It is a
// sub-state of both TenantState and PlatformState (through BillingState).
type OutboxState struct {
	PendingEvents map[string]*DomainEvent `json:"pendingEvents,omitempty"`
}

// init makes the map non-nil.
func (s *OutboxState) init() { initMap(&s.PendingEvents) }

// Apply stores or drops one pending event.
func (s *OutboxState) Apply(r Record) error {
	if r.Kind != KindPendingEvent {
		return unknownKind("outbox", r)
	}
	s.init() // a platform snapshot written before the outbox existed
	return putValue(s.PendingEvents, r)
}

// PendingEventList returns the pending events, oldest first.
func (s *OutboxState) PendingEventList() []DomainEvent {
	out := make([]DomainEvent, 0, len(s.PendingEvents))
	for _, e := range s.PendingEvents {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b DomainEvent) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// EventRecord returns the record that stores e in the outbox of the state it is written to
// (tenant or platform): write it in the same transaction as the change the event announces, then
// publish e once the transaction is durable.
func EventRecord(e DomainEvent) Record { return Put(KindPendingEvent, e.ID, &e) }
