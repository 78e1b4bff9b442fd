package supplyplan

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Caps of stored forecast data per tenant: the oldest go first.
const (
	MaxForecastVersions = 24
	MaxChangeEntries    = 10000
)

// AddForecastVersion returns the records storing v and dropping the oldest versions beyond the cap.
func (s *ForecastingState) AddForecastVersion(v ForecastVersion) []Record {
	recs := []Record{Put(KindForecastVersion, v.ID, &v)}
	if len(s.ForecastVersions)+1 > MaxForecastVersions {
		ids := make([]string, 0, len(s.ForecastVersions))
		for id := range s.ForecastVersions {
			ids = append(ids, id)
		}
		slices.Sort(ids) // ids sort by creation
		for _, id := range ids[:len(ids)+1-MaxForecastVersions] {
			recs = append(recs, Del(KindForecastVersion, id))
		}
	}
	return recs
}

// LatestVersion returns the newest version of a scenario, if any.
func (s *ForecastingState) LatestVersion(scenarioID string) (*ForecastVersion, bool) {
	var best *ForecastVersion
	for _, v := range s.ForecastVersions {
		if v.ScenarioID == scenarioID && (best == nil || v.ID > best.ID) {
			best = v
		}
	}
	return best, best != nil
}

// Versions returns every stored version, oldest first.
func (s *ForecastingState) Versions() []ForecastVersion {
	out := make([]ForecastVersion, 0, len(s.ForecastVersions))
	for _, v := range s.ForecastVersions {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b ForecastVersion) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// AddChange returns the records storing e and dropping the oldest entries beyond the cap. It
// costs the same however many entries there are (the ids are kept in order).
func (s *ForecastingState) AddChange(e ChangeEntry) []Record {
	return s.appendChange(make([]Record, 0, 2), e) // room for the oldest entry's delete, once at the cap
}

// appendChange appends AddChange's records to recs.
func (s *ForecastingState) appendChange(recs []Record, e ChangeEntry) []Record {
	recs = append(recs, Put(KindForecastChange, e.ID, &e))
	if over := len(s.Changes) + 1 - MaxChangeEntries; over > 0 {
		for _, id := range s.changeOrder[:min(over, len(s.changeOrder))] {
			recs = append(recs, Del(KindForecastChange, id))
		}
	}
	return recs
}

// orderChange keeps changeOrder (the entry ids, oldest first) in step with Changes.
func (s *ForecastingState) orderChange(id string, existed, del bool) {
	switch {
	case del && existed:
		if len(s.changeOrder) > 0 && s.changeOrder[0] == id { // the usual case: the cap drops the oldest
			s.changeOrder = s.changeOrder[1:]
			return
		}
		if i, found := slices.BinarySearch(s.changeOrder, id); found {
			s.changeOrder = slices.Delete(s.changeOrder, i, i+1)
		}
	case !del && !existed:
		if n := len(s.changeOrder); n == 0 || s.changeOrder[n-1] < id { // ids sort by creation
			s.changeOrder = append(s.changeOrder, id)
			return
		}
		i, _ := slices.BinarySearch(s.changeOrder, id)
		s.changeOrder = slices.Insert(s.changeOrder, i, id)
	}
}

// ListChanges filters the change history, newest first, and pages it (page from 1).
func (s *ForecastingState) ListChanges(f ChangeFilter) ([]ChangeEntry, int) {
	out := make([]ChangeEntry, 0)
	for _, e := range s.Changes {
		if (f.ScenarioID != "" && e.ScenarioID != f.ScenarioID) || (f.ProductMasterID != "" && e.ProductMasterID != f.ProductMasterID) ||
			(f.LocationID != "" && e.LocationID != f.LocationID) || (!f.From.IsZero() && e.CreatedAt.Before(f.From)) ||
			(!f.To.IsZero() && e.CreatedAt.After(f.To)) {
			continue
		}
		c := *e
		c.Pending = nil
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b ChangeEntry) int { return cmp.Compare(b.ID, a.ID) })
	total := len(out)
	if f.Limit <= 0 {
		f.Limit = DefaultPageLimit
	}
	if f.Page <= 0 {
		f.Page = 1
	}
	start := (f.Page - 1) * f.Limit
	if start >= len(out) {
		return []ChangeEntry{}, total
	}
	return out[start:min(start+f.Limit, len(out))], total
}

// NewChange returns a change entry with its delta computed (totals and delta rounded to
// QuantityDecimals).
func NewChange(typ, actor, reason string, prev, next *float64, now time.Time) ChangeEntry {
	e := ChangeEntry{ID: NewID("chg"), ChangeType: typ, Actor: actor, Reason: reason, CreatedAt: now}
	e.SetTotals(prev, next)
	return e
}

// SetTotals sets an entry's previous and new totals and their delta (nil when either is unknown).
func (e *ChangeEntry) SetTotals(prev, next *float64) {
	e.PreviousTotal, e.NewTotal, e.Delta = totals(prev, next)
}

// SetTotals sets the figures' previous and new totals and their delta as ChangeEntry.SetTotals
// does.
func (f *ChangeFigures) SetTotals(prev, next *float64) {
	f.PreviousTotal, f.NewTotal, f.Delta = totals(prev, next)
}

// totals rounds a previous and a new total and gives their delta (nil when either is unknown).
func totals(prev, next *float64) (p, n, d *Quantity) {
	if prev != nil {
		q := Quantity(RoundQuantity(*prev))
		p = &q
	}
	if next != nil {
		q := Quantity(RoundQuantity(*next))
		n = &q
	}
	if p != nil && n != nil {
		q := Quantity(RoundQuantity(float64(*n - *p)))
		d = &q
	}
	return p, n, d
}

// ChangeHorizonWeeks is the window of an event entry's figures: the forecast weeks from the week
// the entry was written.
const ChangeHorizonWeeks = DefaultHorizonWeeks

// EventChange returns the records of the change-history entry of an event change (old nil: the
// event was created; new nil: deleted), to be written in the same transaction as the change. The
// entry is complete at once when neither version of the event overlaps its forecast weeks
// (OUTSIDE_HORIZON, delta 0); otherwise it is PENDING and keeps both versions until its figures
// are computed and written as an update of the same entry.
func (s *ForecastingState) EventChange(typ, actor string, old, new *ExternalEvent, now time.Time) []Record {
	return s.AppendEventChange(nil, typ, actor, old, new, now)
}

// AppendEventChange appends EventChange's records to recs (a write's own records: one slice for
// all of them).
func (s *ForecastingState) AppendEventChange(recs []Record, typ, actor string, old, new *ExternalEvent, now time.Time) []Record {
	ref := new
	if ref == nil {
		ref = old
	}
	var verb string // runs in the tenant's actor on every event write: no map, no fmt
	switch typ {
	case ChangeEventCreated:
		verb = "created"
	case ChangeEventUpdated:
		verb = "updated"
	case ChangeEventDeleted:
		verb = "deleted"
	}
	e := ChangeEntry{ID: NewID("chg"), ChangeType: typ, Actor: actor, EventID: ref.ID, ProductMasterID: ref.ProductMasterID,
		LocationID: ref.LocationID, HorizonWeeks: ChangeHorizonWeeks, CreatedAt: now,
		Reason: "event " + strconv.Quote(ref.Name) + " (" + string(ref.Type) + ") " + verb}
	from := WeekStart(now)
	to := from.AddDate(0, 0, 7*ChangeHorizonWeeks)
	overlaps := func(x *ExternalEvent) bool { return x != nil && x.StartsAt.Before(to) && x.EndsAt.After(from) }
	if overlaps(old) || overlaps(new) {
		e.EffectStatus = EffectPending
		e.Pending = &PendingEffect{Old: bareEvent(old), New: bareEvent(new)}
	} else {
		e.EffectStatus = EffectOutsideHorizon
		zero := Quantity(0)
		e.Delta = &zero
	}
	if recs == nil {
		recs = make([]Record, 0, 2) // room for the oldest entry's delete, once at the cap
	}
	return s.appendChange(recs, e)
}

// bareEvent copies an event without its expanded product and location.
//
// An event without them is returned as it is, not copied: a stored event is never changed in place
// (a write puts a new one), so the entry may share it. For a new event that is one copy of the
// event fewer per write, in memory for as long as the entry waits for its figures.
func bareEvent(e *ExternalEvent) *ExternalEvent {
	if e == nil || (e.ProductMaster == nil && e.Location == nil) {
		return e
	}
	c := *e
	c.ProductMaster, c.Location = nil, nil
	return &c
}

// queuePending adds a new pending entry's id to pendingOrder (at the end: ids sort by creation).
func (s *ForecastingState) queuePending(id string) {
	if n := len(s.pendingOrder); n == 0 || s.pendingOrder[n-1] < id {
		s.pendingOrder = append(s.pendingOrder, id)
		return
	}
	if i, found := slices.BinarySearch(s.pendingOrder, id); !found {
		s.pendingOrder = slices.Insert(s.pendingOrder, i, id)
	}
}

// trimPending drops the ids at the front of pendingOrder whose entries are no longer pending
// (computed, or gone beyond the cap). Entries are computed oldest first, so the front is where
// they leave; one computed out of order waits there until the ids before it have left.
func (s *ForecastingState) trimPending() {
	for len(s.pendingOrder) > 0 {
		if e := s.Changes[s.pendingOrder[0]]; e != nil && e.EffectStatus == EffectPending {
			return
		}
		s.pendingOrder[0] = ""
		s.pendingOrder = s.pendingOrder[1:]
	}
	s.pendingOrder = nil // no array kept for an empty queue (append starts a new one)
}

// PendingChanges returns up to limit event entries whose figures are still to be computed, oldest
// first: the stored entries themselves, which are never changed in place (a completion stores a
// new entry), so the change recorder reads them outside the actor without a copy of each (a
// copy was 440 bytes allocated per event write). It reads the pending entries only
// (pendingOrder), not the whole history: it runs in the tenant's actor every time the change
// recorder takes a batch, which under a stream of event writes was a scan of up to
// MaxChangeEntries entries per batch of changeBatch.
func (s *ForecastingState) PendingChanges(limit int) []*ChangeEntry {
	out := make([]*ChangeEntry, 0, min(limit, len(s.pendingOrder)))
	for _, id := range s.pendingOrder {
		if e := s.Changes[id]; e != nil && e.EffectStatus == EffectPending {
			out = append(out, e)
			if len(out) == limit {
				break
			}
		}
	}
	return out
}

// CompleteChange returns the record writing the computed figures f of pending entry id over it
// (nothing when the entry has gone, beyond the cap, or is no longer pending, or when f says
// pending). The record holds the figures only (ChangeFigures), not the whole entry again.
func (s *ForecastingState) CompleteChange(id string, f ChangeFigures) []Record {
	cur, ok := s.Changes[id]
	if !ok || cur.EffectStatus != EffectPending || f.EffectStatus == EffectPending {
		return nil
	}
	return []Record{Put(KindChangeFigures, id, &f)}
}

// ChangeFigures are the computed figures of a pending change-history entry: the record (kind
// "fchangefig") that completes it. The entry's record held the entry whole, a copy of what the
// state holds but for these fields, about 350 bytes of JSON per event write where these are 150.
type ChangeFigures struct {
	PreviousTotal *Quantity  `json:"previousTotal"`
	NewTotal      *Quantity  `json:"newTotal"`
	Delta         *Quantity  `json:"delta"`
	SeriesCount   int        `json:"seriesCount,omitempty"`
	EffectStatus  string     `json:"effectStatus"`
	UpdatedAt     *time.Time `json:"updatedAt,omitempty"`
}

// applyFigures writes the figures of r (a ChangeFigures record) over its entry, which leaves the
// pending entries. An entry that has gone (beyond the cap) is not brought back: the record is
// then a no-op. Journals written before this record kind completed entries with a whole entry
// (KindForecastChange), which replays as it always did.
func (s *ForecastingState) applyFigures(r Record) error {
	if r.Del {
		return fmt.Errorf("%s record %s: a deletion", r.Kind, r.ID)
	}
	f, ok := r.Value.(*ChangeFigures)
	if !ok || f == nil {
		return fmt.Errorf("%s record %s has value %T", r.Kind, r.ID, r.Value)
	}
	cur := s.Changes[r.ID]
	if cur == nil {
		return nil
	}
	e := *cur // entries are replaced, never changed in place (snapshot views share them)
	e.PreviousTotal, e.NewTotal, e.Delta, e.SeriesCount = f.PreviousTotal, f.NewTotal, f.Delta, f.SeriesCount
	e.EffectStatus, e.UpdatedAt, e.Pending = f.EffectStatus, f.UpdatedAt, nil
	s.Changes[r.ID] = &e
	s.trimPending()
	return nil
}
