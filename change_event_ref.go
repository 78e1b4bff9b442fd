package supplyplan

import "fmt"

// An event write inside the forecast horizon journals, next to the event, its change-history
// entry pending with the event as written (PendingEffect.New), which the change recorder reads to
// compute the entry's figures: the entry repeated the event whole, 40 % of the write's journal
// bytes. The journal writes such an entry as a reference (record kind "fchangeref": the entry
// without the pending effect's new event), and replay takes the new event from the state, which
// holds it when the reference is applied: the event's record comes before the entry in the same
// journal entry, and the records of an entry are applied in order. EncodeRecords takes this form
// only when the pending effect's new event is the very value (the same pointer) of the last
// record of that event before the entry, a few records back at most; any other entry is written
// whole. Like the outbox references (allocation_event_ref.go), only the journal takes this form:
// the live state and snapshots hold whole entries, and journals written before it hold whole
// entries that replay as they always did. An older binary refuses the new kind rather than
// replaying an entry without its event.

// KindChangeEventRef is the journal's record kind of a pending change-history entry written
// without the event of its transaction; applying it stores the entry with that event.
const KindChangeEventRef = "fchangeref"

// changeEventLookback bounds how far before an entry EncodeRecords looks for its event's record
// (an event write puts the event right before its entry).
const changeEventLookback = 4

func init() {
	RegisterKind(KindChangeEventRef, func() any { return new(ChangeEntry) })
}

// appendChangeEventRef writes recs[i] as a change-history entry reference when it is a pending
// entry whose new event is the value of the event's last record before it in recs; false leaves
// b as it was (the record is written whole).
func appendChangeEventRef(b []byte, recs []Record, i int) ([]byte, bool) {
	r := recs[i]
	if r.Kind != KindForecastChange || r.Del {
		return b, false
	}
	e, ok := r.Value.(*ChangeEntry)
	if !ok || e == nil || r.ID != e.ID || e.Pending == nil || e.Pending.New == nil || e.Pending.New.ID != e.EventID {
		return b, false
	}
	for j := i - 1; j >= 0 && j >= i-changeEventLookback; j-- {
		x := recs[j]
		if x.Kind != KindEvent || x.ID != e.EventID {
			continue
		}
		if v, ok := x.Value.(*ExternalEvent); x.Del || !ok || v != e.Pending.New {
			return b, false // the event's last record before the entry is not the entry's event
		}
		mark := len(b)
		w := jsonWriter{b: b, ok: true}
		w.raw(`{"k":"` + KindChangeEventRef + `","i":`)
		w.str(r.ID)
		w.raw(`,"v":`)
		if w.b, w.ok = e.appendJSONForm(w.b, true); !w.ok {
			return b[:mark], false
		}
		w.raw("}")
		return w.b, true
	}
	return b, false
}

// applyChangeEventRef stores the entry a reference holds with the event the state holds as its
// pending effect's new event.
func (s *ForecastingState) applyChangeEventRef(r Record) error {
	if r.Del {
		return s.Apply(Del(KindForecastChange, r.ID))
	}
	e, ok := r.Value.(*ChangeEntry)
	if !ok || e == nil {
		return fmt.Errorf("%s record %s has value %T", r.Kind, r.ID, r.Value)
	}
	ev, _ := s.Events.Get(e.EventID)
	if ev == nil {
		return fmt.Errorf("%s record %s: no event %q", r.Kind, r.ID, e.EventID)
	}
	p := PendingEffect{New: ev}
	if e.Pending != nil {
		p.Old = e.Pending.Old
	}
	c := *e
	c.Pending = &p
	return s.Apply(Put(KindForecastChange, r.ID, &c))
}
