package supplyplan

import (
	"cmp"
	"slices"
	"time"
)

// Caps of stored forecast data per tenant: the oldest go first.
const (
	MaxForecastVersions = 24
	MaxChangeEntries    = 10000
)

// AddForecastVersion returns the records storing v and dropping the oldest versions beyond the cap.
func (s *TenantState) AddForecastVersion(v ForecastVersion) []Record {
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
func (s *TenantState) LatestVersion(scenarioID string) (*ForecastVersion, bool) {
	var best *ForecastVersion
	for _, v := range s.ForecastVersions {
		if v.ScenarioID == scenarioID && (best == nil || v.ID > best.ID) {
			best = v
		}
	}
	return best, best != nil
}

// Versions returns every stored version, oldest first.
func (s *TenantState) Versions() []ForecastVersion {
	out := make([]ForecastVersion, 0, len(s.ForecastVersions))
	for _, v := range s.ForecastVersions {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b ForecastVersion) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// AddChange returns the records storing e and dropping the oldest entries beyond the cap.
func (s *TenantState) AddChange(e ChangeEntry) []Record {
	recs := []Record{Put(KindForecastChange, e.ID, &e)}
	if len(s.Changes)+1 > MaxChangeEntries {
		ids := make([]string, 0, len(s.Changes))
		for id := range s.Changes {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids[:len(ids)+1-MaxChangeEntries] {
			recs = append(recs, Del(KindForecastChange, id))
		}
	}
	return recs
}

// ListChanges filters the change history, newest first, and pages it (page from 1).
func (s *TenantState) ListChanges(f ChangeFilter) ([]ChangeEntry, int) {
	out := make([]ChangeEntry, 0)
	for _, e := range s.Changes {
		if (f.ScenarioID != "" && e.ScenarioID != f.ScenarioID) || (f.ProductMasterID != "" && e.ProductMasterID != f.ProductMasterID) ||
			(f.LocationID != "" && e.LocationID != f.LocationID) || (!f.From.IsZero() && e.CreatedAt.Before(f.From)) ||
			(!f.To.IsZero() && e.CreatedAt.After(f.To)) {
			continue
		}
		out = append(out, *e)
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

// NewChange returns a change entry with its delta computed.
func NewChange(typ, actor, reason string, prev, next *float64, now time.Time) ChangeEntry {
	e := ChangeEntry{ID: NewID("chg"), ChangeType: typ, Actor: actor, Reason: reason, PreviousTotal: prev, NewTotal: next, CreatedAt: now}
	if prev != nil && next != nil {
		d := *next - *prev
		e.Delta = &d
	}
	return e
}
