package actors

import (
	"context"

	"github.com/supplyplan/supplyplan"
)

// Forecasting is the service of a tenant's scenarios and external events (promotions, price
// changes, holidays...), kept by the tenant's actor. An event write invalidates the forecasts it
// touches and has its change-history figures computed (Forecasts).
type Forecasting struct {
	core      *Core
	forecasts *Forecasts
}

// NewForecasting returns the scenario and event service.
func NewForecasting(core *Core, forecasts *Forecasts) *Forecasting {
	return &Forecasting{core: core, forecasts: forecasts}
}

var _ supplyplan.ForecastingService = (*Forecasting)(nil)

// ListScenarios lists a tenant's scenarios.
func (s *Forecasting) ListScenarios(ctx context.Context, p supplyplan.Principal, f supplyplan.ScenarioFilter) ([]supplyplan.Scenario, error) {
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.Scenario, error) {
		return st.ListScenarios(f), nil
	})
}

// CreateScenario creates a DRAFT scenario.
func (s *Forecasting) CreateScenario(ctx context.Context, p supplyplan.Principal, in supplyplan.ScenarioInput) (supplyplan.Scenario, error) {
	now, global := supplyplan.Now(), s.core.globalLookup()
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
		return st.CreateScenario(in, global, now)
	})
}

// GetScenario returns one scenario.
func (s *Forecasting) GetScenario(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.Scenario, error) {
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Scenario, error) {
		sc, err := st.GetScenario(id)
		return sc, err
	})
}

// UpdateScenario applies a partial update.
func (s *Forecasting) UpdateScenario(ctx context.Context, p supplyplan.Principal, id string, in supplyplan.ScenarioInput) (supplyplan.Scenario, error) {
	now, global := supplyplan.Now(), s.core.globalLookup()
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
		return st.UpdateScenario(id, in, global, now)
	})
}

// ArchiveScenario archives a scenario.
func (s *Forecasting) ArchiveScenario(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.Scenario, error) {
	now := supplyplan.Now()
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
		return st.ArchiveScenario(id, now)
	})
}

// PublishScenario publishes a scenario. When it changes state, the change history records the
// forecast of record moving from the newest version of the scenarios published before to this
// scenario's newest version.
func (s *Forecasting) PublishScenario(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.Scenario, error) {
	now := supplyplan.Now()
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
		sc, recs, err := st.PublishScenario(id, now)
		if err != nil || len(recs) == 0 {
			return sc, recs, err
		}
		prev, _ := st.ForecastOfRecord(id)
		next, _ := st.LatestVersion(id)
		ch := supplyplan.PublishChange(sc, prev, next, p.Actor(), now)
		return sc, append(recs, st.AddChange(ch)...), nil
	})
}

// ListEvents lists the tenant's events and the global ones that pass f.
func (s *Forecasting) ListEvents(ctx context.Context, p supplyplan.Principal, f supplyplan.EventFilter) ([]supplyplan.ExternalEvent, error) {
	globals := s.core.globalEvents()
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.ExternalEvent, error) {
		return st.ListEvents(f, globals), nil
	})
}

// CreateEvent creates a tenant event. Its change-history entry is written in the same journal
// record (see TenantState.EventChange).
func (s *Forecasting) CreateEvent(ctx context.Context, p supplyplan.Principal, in supplyplan.EventInput) (supplyplan.ExternalEvent, error) {
	now := supplyplan.Now()
	// Validation and the event's fields are built here, on the request's goroutine: the actor
	// only checks the references, names the event and journals it.
	prepared, err := supplyplan.PrepareEvent(in, now)
	if err != nil {
		return supplyplan.ExternalEvent{}, err
	}
	// The event is stored as prepared here (AddEvent keeps the pointer: one allocation of it per
	// write), and the transaction answers with its expanded references only.
	stored := &prepared
	actor := p.Actor()
	type created struct {
		product *supplyplan.ProductRef
		loc     *supplyplan.LocationRef
	}
	c, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (created, []supplyplan.Record, error) {
		recs, err := st.AddEvent(stored)
		if err != nil {
			return created{}, nil, err
		}
		product, loc := st.EventRefs(stored)
		// The entry's pending effect points at the event as stored, not at a copy of it.
		return created{product, loc}, st.AppendEventChange(recs, supplyplan.ChangeEventCreated, actor, nil, stored, now), nil
	})
	if err != nil {
		return supplyplan.ExternalEvent{}, err
	}
	s.eventWritten(p.OrgID, nil, stored)
	e := *stored
	e.ProductMaster, e.Location = c.product, c.loc
	return e, nil
}

// eventWritten invalidates the forecasts an event write touches and wakes the change recorder,
// which computes the figures of pending change-history entries.
func (s *Forecasting) eventWritten(org string, old, new *supplyplan.ExternalEvent) {
	if s.forecasts != nil {
		s.forecasts.eventWritten(org, old, new)
	}
}

// GetEvent returns a tenant event or a global one.
func (s *Forecasting) GetEvent(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.ExternalEvent, error) {
	global := s.core.globalLookup()
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ExternalEvent, error) {
		e, err := st.GetEvent(id, global)
		return e, err
	})
}

// UpdateEvent applies a partial update to a tenant event, with its change-history entry in the same
// journal record.
func (s *Forecasting) UpdateEvent(ctx context.Context, p supplyplan.Principal, id string, in supplyplan.EventInput) (supplyplan.ExternalEvent, error) {
	now, global := supplyplan.Now(), s.core.globalLookup()
	type updated struct{ old, new supplyplan.ExternalEvent }
	u, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (updated, []supplyplan.Record, error) {
		cur, _ := st.Events.Get(id)
		e, recs, err := st.UpdateEvent(id, in, global, now)
		if err != nil {
			return updated{}, nil, err
		}
		// The entry keeps both versions as stored (a stored event is never changed in place): no
		// copies, and the journal writes the new one as a reference to its record.
		stored := recs[0].Value.(*supplyplan.ExternalEvent)
		return updated{*cur, e}, st.AppendEventChange(recs, supplyplan.ChangeEventUpdated, p.Actor(), cur, stored, now), nil
	})
	if err == nil {
		s.eventWritten(p.OrgID, &u.old, &u.new)
	}
	return u.new, err
}

// DeleteEvent deletes a tenant event, with its change-history entry in the same journal record.
func (s *Forecasting) DeleteEvent(ctx context.Context, p supplyplan.Principal, id string) error {
	now, global := supplyplan.Now(), s.core.globalLookup()
	old, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ExternalEvent, []supplyplan.Record, error) {
		var old supplyplan.ExternalEvent
		if cur, ok := st.Events.Get(id); ok {
			old = *cur
		}
		recs, err := st.DeleteEvent(id, global)
		if err != nil {
			return old, nil, err
		}
		return old, append(recs, st.EventChange(supplyplan.ChangeEventDeleted, p.Actor(), &old, nil, now)...), nil
	})
	if err == nil {
		s.eventWritten(p.OrgID, &old, nil)
	}
	return err
}
