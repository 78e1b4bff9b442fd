package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/supplyplan/supplyplan"
)

// ListScenarios lists a tenant's scenarios.
func (s *System) ListScenarios(ctx context.Context, p supplyplan.Principal, f supplyplan.ScenarioFilter) ([]supplyplan.Scenario, error) {
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.Scenario, []supplyplan.Record, error) {
		return st.ListScenarios(f), nil, nil
	})
}

// CreateScenario creates a DRAFT scenario.
func (s *System) CreateScenario(ctx context.Context, p supplyplan.Principal, in supplyplan.ScenarioInput) (supplyplan.Scenario, error) {
	now, global := supplyplan.Now(), s.globalLookup()
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
		return st.CreateScenario(in, global, now)
	})
}

// GetScenario returns one scenario.
func (s *System) GetScenario(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.Scenario, error) {
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
		sc, err := st.GetScenario(id)
		return sc, nil, err
	})
}

// UpdateScenario applies a partial update.
func (s *System) UpdateScenario(ctx context.Context, p supplyplan.Principal, id string, in supplyplan.ScenarioInput) (supplyplan.Scenario, error) {
	now, global := supplyplan.Now(), s.globalLookup()
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
		return st.UpdateScenario(id, in, global, now)
	})
}

// ArchiveScenario archives a scenario.
func (s *System) ArchiveScenario(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.Scenario, error) {
	now := supplyplan.Now()
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
		return st.ArchiveScenario(id, now)
	})
}

// PublishScenario publishes a scenario. When it changes state, the change history records the
// forecast of record moving from the newest version of the scenarios published before to this
// scenario's newest version.
func (s *System) PublishScenario(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.Scenario, error) {
	now := supplyplan.Now()
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
		sc, recs, err := st.PublishScenario(id, now)
		if err != nil || len(recs) == 0 {
			return sc, recs, err
		}
		var prev, next *float64
		var prevID string
		for _, o := range st.Scenarios {
			if o.ID == id || o.Status != supplyplan.ScenarioPublished {
				continue
			}
			if v, ok := st.LatestVersion(o.ID); ok && v.ID > prevID {
				t := v.TotalQuantity
				prev, prevID = &t, v.ID
			}
		}
		if v, ok := st.LatestVersion(id); ok {
			t := v.TotalQuantity
			next = &t
		}
		reason := fmt.Sprintf("scenario %q published", sc.Name)
		if next == nil {
			reason += " (not generated yet: no forecast total)"
		}
		ch := supplyplan.NewChange(supplyplan.ChangePublish, p.Actor(), reason, prev, next, now)
		ch.ScenarioID = id
		return sc, append(recs, st.AddChange(ch)...), nil
	})
}

// ListEvents lists the tenant's events and the global ones that pass f.
func (s *System) ListEvents(ctx context.Context, p supplyplan.Principal, f supplyplan.EventFilter) ([]supplyplan.ExternalEvent, error) {
	globals := s.index.Load().globalL
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.ExternalEvent, []supplyplan.Record, error) {
		return st.ListEvents(f, globals), nil, nil
	})
}

// CreateEvent creates a tenant event.
func (s *System) CreateEvent(ctx context.Context, p supplyplan.Principal, in supplyplan.EventInput) (supplyplan.ExternalEvent, error) {
	now := supplyplan.Now()
	e, err := tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ExternalEvent, []supplyplan.Record, error) {
		return st.CreateEvent(in, now)
	})
	if err == nil {
		s.eventChanged(p, supplyplan.ChangeEventCreated, nil, &e, now)
	}
	return e, err
}

// eventChanged invalidates forecasts and queues the change-history entry of an event write.
func (s *System) eventChanged(p supplyplan.Principal, typ string, old, new *supplyplan.ExternalEvent, now time.Time) {
	s.fc.bumpEvents(p.OrgID)
	s.changes.add(p.OrgID, eventChange{typ: typ, old: old, new: new, actor: p.Actor(), at: now})
}

// GetEvent returns a tenant event or a global one.
func (s *System) GetEvent(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.ExternalEvent, error) {
	global := s.globalLookup()
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ExternalEvent, []supplyplan.Record, error) {
		e, err := st.GetEvent(id, global)
		return e, nil, err
	})
}

// UpdateEvent applies a partial update to a tenant event.
func (s *System) UpdateEvent(ctx context.Context, p supplyplan.Principal, id string, in supplyplan.EventInput) (supplyplan.ExternalEvent, error) {
	now, global := supplyplan.Now(), s.globalLookup()
	type updated struct{ old, new supplyplan.ExternalEvent }
	u, err := tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (updated, []supplyplan.Record, error) {
		var old supplyplan.ExternalEvent
		if cur, ok := st.Events[id]; ok {
			old = *cur
		}
		e, recs, err := st.UpdateEvent(id, in, global, now)
		return updated{old, e}, recs, err
	})
	if err == nil {
		s.eventChanged(p, supplyplan.ChangeEventUpdated, &u.old, &u.new, now)
	}
	return u.new, err
}

// DeleteEvent deletes a tenant event.
func (s *System) DeleteEvent(ctx context.Context, p supplyplan.Principal, id string) error {
	global := s.globalLookup()
	old, err := tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ExternalEvent, []supplyplan.Record, error) {
		var old supplyplan.ExternalEvent
		if cur, ok := st.Events[id]; ok {
			old = *cur
		}
		recs, err := st.DeleteEvent(id, global)
		return old, recs, err
	})
	if err == nil {
		s.eventChanged(p, supplyplan.ChangeEventDeleted, &old, nil, supplyplan.Now())
	}
	return err
}

var (
	_ supplyplan.Authenticator      = (*System)(nil)
	_ supplyplan.PlatformService    = (*System)(nil)
	_ supplyplan.ForecastingService = (*System)(nil)
)
