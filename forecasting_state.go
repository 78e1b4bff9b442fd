package supplyplan

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Record kinds of forecasting.
const (
	KindScenario        = "scenario"
	KindEvent           = "event"
	KindForecastVersion = "fversion"
	KindForecastChange  = "fchange"
	KindChangeFigures   = "fchangefig"
)

func init() {
	RegisterKind(KindScenario, func() any { return new(Scenario) })
	RegisterKind(KindEvent, func() any { return new(ExternalEvent) })
	RegisterKind(KindForecastVersion, func() any { return new(ForecastVersion) })
	RegisterKind(KindForecastChange, func() any { return new(ChangeEntry) })
	RegisterKind(KindChangeFigures, func() any { return new(ChangeFigures) })
}

// ForecastingState is the tenant's forecasting: scenarios, external events, stored forecast
// versions and the change history (sub-state of TenantState). Scenarios and events are here,
// events by scope in event_index.go, versions and the change history in forecast_state.go; the
// event operations that name a product or location of the catalog are TenantState's
// (tenant_events.go).
type ForecastingState struct {
	Scenarios        map[string]*Scenario        `json:"scenarios"`
	Events           EventStore                  `json:"events"`
	ForecastVersions map[string]*ForecastVersion `json:"forecastVersions"`
	Changes          map[string]*ChangeEntry     `json:"forecastChanges"`

	events      eventIndex // events by scope (derived, rebuilt on load)
	changeOrder []string   // change-history ids, oldest first (derived, rebuilt on load)
	// pendingOrder holds the ids of the entries whose figures are still to be computed, oldest
	// first (derived, rebuilt on load). An entry leaves it lazily: an id whose entry is no longer
	// pending is dropped once it reaches the front (trimPending), and skipped before that.
	pendingOrder []string
}

// init makes every map non-nil and rebuilds the event index and the change order.
func (s *ForecastingState) init() {
	initMap(&s.Scenarios)
	initMap(&s.ForecastVersions)
	initMap(&s.Changes)
	s.events.reset(s.Events.Len())
	for i, e := range s.Events.slotted() {
		s.events.add(i, e)
	}
	s.changeOrder = make([]string, 0, len(s.Changes))
	for id := range s.Changes {
		s.changeOrder = append(s.changeOrder, id)
	}
	slices.Sort(s.changeOrder)
	s.pendingOrder = s.pendingOrder[:0]
	for _, id := range s.changeOrder {
		if s.Changes[id].EffectStatus == EffectPending {
			s.pendingOrder = append(s.pendingOrder, id)
		}
	}
}

// Apply stores one scenario, event, forecast version or change-history entry.
func (s *ForecastingState) Apply(r Record) error {
	switch r.Kind {
	case KindScenario:
		return putValue(s.Scenarios, r)
	case KindEvent:
		if r.Del {
			if i, old := s.Events.Delete(r.ID); old != nil {
				s.events.remove(i, old)
			}
			return nil
		}
		e, ok := r.Value.(*ExternalEvent)
		if !ok || e == nil {
			return fmt.Errorf("%s record %s has value %T", r.Kind, r.ID, r.Value)
		}
		e = withID(e, r.ID) // the same event but for a record written by hand
		i, old := s.Events.Put(e)
		if old != nil {
			s.events.remove(i, old)
		}
		s.events.add(i, e)
		return nil
	case KindForecastVersion:
		return putValue(s.ForecastVersions, r)
	case KindForecastChange:
		// Whether the entry existed, from the map's size around the put: one operation on the map.
		n := len(s.Changes)
		if err := putValue(s.Changes, r); err != nil {
			return err
		}
		existed := len(s.Changes) == n
		if r.Del {
			existed = len(s.Changes) < n
		}
		s.orderChange(r.ID, existed, r.Del)
		if !r.Del && !existed && r.Value.(*ChangeEntry).EffectStatus == EffectPending { // putValue checked the type
			s.queuePending(r.ID)
		}
		s.trimPending()
		return nil
	case KindChangeFigures:
		return s.applyFigures(r)
	}
	return unknownKind("forecasting state", r)
}

// EventLookup finds events outside the tenant (the platform's global events).
type EventLookup func(id string) (*ExternalEvent, bool)

// ListScenarios returns the scenarios passing f, newest first.
func (s *ForecastingState) ListScenarios(f ScenarioFilter) []Scenario {
	out := make([]Scenario, 0, len(s.Scenarios))
	for _, sc := range s.Scenarios {
		if f.Match(sc) {
			out = append(out, *sc)
		}
	}
	slices.SortFunc(out, func(a, b Scenario) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out
}

// GetScenario returns one scenario.
func (s *ForecastingState) GetScenario(id string) (Scenario, error) {
	sc, ok := s.Scenarios[id]
	if !ok {
		return Scenario{}, NotFound("Scenario")
	}
	return *sc, nil
}

// checkIncludedEvents verifies that every included event id names an event the tenant can see.
func (s *ForecastingState) checkIncludedEvents(in *AssumptionsInput, global EventLookup) error {
	if in == nil || in.IncludedEventIDs == nil {
		return nil
	}
	for _, id := range *in.IncludedEventIDs {
		if _, ok := s.Events.Get(id); ok {
			continue
		}
		if global != nil {
			if _, ok := global(id); ok {
				continue
			}
		}
		return Invalid("assumptions.includedEventIds", "unknown event %q", id)
	}
	return nil
}

// CreateScenario validates in and returns the new scenario and its records.
func (s *ForecastingState) CreateScenario(in ScenarioInput, global EventLookup, now time.Time) (Scenario, []Record, error) {
	if err := in.Validate(true); err != nil {
		return Scenario{}, nil, err
	}
	if err := s.checkIncludedEvents(in.Assumptions, global); err != nil {
		return Scenario{}, nil, err
	}
	sc := NewScenario(NewID("scn"), in, now)
	return sc, []Record{Put(KindScenario, sc.ID, &sc)}, nil
}

// UpdateScenario applies a partial update.
func (s *ForecastingState) UpdateScenario(id string, in ScenarioInput, global EventLookup, now time.Time) (Scenario, []Record, error) {
	cur, ok := s.Scenarios[id]
	if !ok {
		return Scenario{}, nil, NotFound("Scenario")
	}
	if err := in.Validate(false); err != nil {
		return Scenario{}, nil, err
	}
	if err := s.checkIncludedEvents(in.Assumptions, global); err != nil {
		return Scenario{}, nil, err
	}
	sc, err := cur.Update(in, now)
	if err != nil {
		return Scenario{}, nil, err
	}
	return sc, []Record{Put(KindScenario, sc.ID, &sc)}, nil
}

// PublishScenario publishes a scenario (idempotent on PUBLISHED).
func (s *ForecastingState) PublishScenario(id string, now time.Time) (Scenario, []Record, error) {
	cur, ok := s.Scenarios[id]
	if !ok {
		return Scenario{}, nil, NotFound("Scenario")
	}
	sc, changed, err := cur.Publish(now)
	if err != nil || !changed {
		return sc, nil, err
	}
	return sc, []Record{Put(KindScenario, sc.ID, &sc)}, nil
}

// ArchiveScenario archives a scenario (idempotent on ARCHIVED).
func (s *ForecastingState) ArchiveScenario(id string, now time.Time) (Scenario, []Record, error) {
	cur, ok := s.Scenarios[id]
	if !ok {
		return Scenario{}, nil, NotFound("Scenario")
	}
	sc, changed := cur.Archive(now)
	if !changed {
		return sc, nil, nil
	}
	return sc, []Record{Put(KindScenario, sc.ID, &sc)}, nil
}

// DeleteEvent removes one of the tenant's events.
func (s *ForecastingState) DeleteEvent(id string, global EventLookup) ([]Record, error) {
	if _, ok := s.Events.Get(id); !ok {
		if global != nil {
			if _, ok := global(id); ok {
				return nil, Errorf(EFORBIDDEN, "Global events are managed by the platform operator")
			}
		}
		return nil, NotFound("Event")
	}
	return []Record{Del(KindEvent, id)}, nil
}
