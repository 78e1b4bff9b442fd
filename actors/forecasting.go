package actors

import (
	"context"

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

// PublishScenario publishes a scenario.
func (s *System) PublishScenario(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.Scenario, error) {
	now := supplyplan.Now()
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Scenario, []supplyplan.Record, error) {
		return st.PublishScenario(id, now)
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
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ExternalEvent, []supplyplan.Record, error) {
		return st.CreateEvent(in, now)
	})
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
	return tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.ExternalEvent, []supplyplan.Record, error) {
		return st.UpdateEvent(id, in, global, now)
	})
}

// DeleteEvent deletes a tenant event.
func (s *System) DeleteEvent(ctx context.Context, p supplyplan.Principal, id string) error {
	global := s.globalLookup()
	_, err := tenantTx(ctx, s, p.OrgID, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		recs, err := st.DeleteEvent(id, global)
		return struct{}{}, recs, err
	})
	return err
}

var (
	_ supplyplan.Authenticator      = (*System)(nil)
	_ supplyplan.PlatformService    = (*System)(nil)
	_ supplyplan.ForecastingService = (*System)(nil)
)
