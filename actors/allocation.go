package actors

import (
	"context"
	"time"

	"github.com/supplyplan/supplyplan"
)

// AllocationConfig configures the allocation service. The settings allocation decides with (hold
// time, protected safety stock, transfer lead time and cost) are the core's (Config.Allocation):
// every tenant state carries them.
type AllocationConfig struct {
	// SweepEvery records expired holds and forgets old reservations, runs and audits (default 1
	// minute). A hold stops counting at its expiry whatever the sweep: the sweep only writes it down.
	SweepEvery time.Duration
	// Now is the clock of allocation (tests); nil: supplyplan.Now.
	Now func() time.Time
}

// Allocation is the order allocation service: the reservation ledger of each tenant, kept by the
// tenant's actor like the rest of its state, so one writer decides every reservation of an
// organization (two concurrent allocations never see the same stock). Orders are allocated when
// an orders import writes them (Imports calls importedOrders inside its chunk's transaction) and
// on request; the events go to the tenant's outbox in the same write and on the bus once durable.
type Allocation struct {
	core      *Core
	cfg       AllocationConfig
	events    supplyplan.EventPublisher // order.allocation_* events (nil: the relay's sweep moves them)
	stopSweep func()
}

// NewAllocation returns the allocation service; Open starts its sweep.
func NewAllocation(core *Core, cfg AllocationConfig, events supplyplan.EventPublisher) *Allocation {
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = time.Minute
	}
	return &Allocation{core: core, cfg: cfg, events: events}
}

var _ supplyplan.AllocationService = (*Allocation)(nil)

// Open starts the sweep.
func (s *Allocation) Open(context.Context) error {
	s.stopSweep = s.core.every(s.cfg.SweepEvery, s.sweep)
	return nil
}

// Close stops the sweep.
func (s *Allocation) Close(context.Context) error {
	if s.stopSweep != nil {
		s.stopSweep()
	}
	return nil
}

func (s *Allocation) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now().UTC()
	}
	return supplyplan.Now()
}

// sweep records the expiry of holds past their time in every tenant, and drops what is past
// retention (no event).
func (s *Allocation) sweep(ctx context.Context) {
	now := s.now()
	s.core.eachTenant(func(org string) {
		if _, err := tenantTx(ctx, s.core, org, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
			return struct{}{}, st.SweepAllocations(now), nil
		}); err != nil {
			s.core.log.Warn("allocation sweep failed", "org", org, "err", err)
		}
	})
}

// Sweep runs one sweep now (tests, operations).
func (s *Allocation) Sweep(ctx context.Context) { s.sweep(ctx) }

// importedOrders allocates the orders of an orders-import chunk inside the chunk's transaction:
// it returns the records to journal with the chunk, and the events to publish once it is durable.
func (s *Allocation) importedOrders(st *supplyplan.TenantState, recs []supplyplan.Record) ([]supplyplan.Record, []supplyplan.DomainEvent) {
	w := st.AllocateImported(recs, s.now())
	return w.Records, w.Events
}

// publish puts durable events on the bus.
func (s *Allocation) publish(evs []supplyplan.DomainEvent) {
	if s.events == nil {
		return
	}
	for _, e := range evs {
		s.events.Publish(e)
	}
}

// ATP answers available-to-promise figures.
func (s *Allocation) ATP(ctx context.Context, p supplyplan.Principal, q supplyplan.ATPQuery) (supplyplan.Page[supplyplan.ATPLine], error) {
	now := s.now()
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Page[supplyplan.ATPLine], []supplyplan.Record, error) {
		pg, err := st.ListATP(q, now)
		return pg, nil, err
	})
}

// ListOrders lists orders with their allocations.
func (s *Allocation) ListOrders(ctx context.Context, p supplyplan.Principal, f supplyplan.OrderFilter) (supplyplan.Page[supplyplan.OrderView], error) {
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Page[supplyplan.OrderView], []supplyplan.Record, error) {
		pg, err := st.ListOrders(f)
		return pg, nil, err
	})
}

// GetOrder returns an order with its allocation.
func (s *Allocation) GetOrder(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.OrderView, error) {
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.OrderView, []supplyplan.Record, error) {
		v, err := st.GetOrderView(id)
		return v, nil, err
	})
}

// AllocateOrder allocates an order's current version again, in one write with its event (when
// its version was never announced).
func (s *Allocation) AllocateOrder(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.OrderView, error) {
	now := s.now()
	type result struct {
		v   supplyplan.OrderView
		evs []supplyplan.DomainEvent
	}
	r, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (result, []supplyplan.Record, error) {
		v, w, err := st.AllocateOrderByID(id, now)
		return result{v, w.Events}, w.Records, err
	})
	if err != nil {
		return supplyplan.OrderView{}, err
	}
	s.publish(r.evs)
	return r.v, nil
}

// CommitOrder confirms an order's reservations.
func (s *Allocation) CommitOrder(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.OrderView, error) {
	now := s.now()
	if _, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (struct{}, []supplyplan.Record, error) {
		_, recs, err := st.CommitOrderByID(id, now)
		return struct{}{}, recs, err
	}); err != nil {
		return supplyplan.OrderView{}, err
	}
	return s.GetOrder(ctx, p, id)
}

// ListReservations lists the ledger.
func (s *Allocation) ListReservations(ctx context.Context, p supplyplan.Principal, f supplyplan.ReservationFilter) (supplyplan.Page[supplyplan.Reservation], error) {
	now := s.now()
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Page[supplyplan.Reservation], []supplyplan.Record, error) {
		if f.SKU != "" {
			if pr, ok := st.ProductBySKU(f.SKU); ok {
				f.SKU = pr.ID
			}
		}
		return st.ListReservations(f, now), nil, nil
	})
}

// Run plans a re-allocation run; unless it is a dry run (the default) it applies it, which needs
// allocation.approve.
func (s *Allocation) Run(ctx context.Context, p supplyplan.Principal, in supplyplan.RunInput) (supplyplan.AllocationRun, error) {
	req, err := in.Validate()
	if err != nil {
		return supplyplan.AllocationRun{}, err
	}
	if !req.DryRun {
		if err := supplyplan.Authorize(p, supplyplan.PermAllocationApprove); err != nil {
			return supplyplan.AllocationRun{}, err
		}
	}
	now := s.now()
	type result struct {
		run supplyplan.AllocationRun
		evs []supplyplan.DomainEvent
	}
	r, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (result, []supplyplan.Record, error) {
		run, recs, evs := st.PlanAllocationRun(req, p.Actor(), now)
		return result{run, evs}, recs, nil
	})
	if err != nil {
		return supplyplan.AllocationRun{}, err
	}
	s.publish(r.evs)
	return r.run, nil
}

// ListRuns lists the stored runs, newest first.
func (s *Allocation) ListRuns(ctx context.Context, p supplyplan.Principal, limit, offset int) (supplyplan.Page[supplyplan.AllocationRun], error) {
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Page[supplyplan.AllocationRun], []supplyplan.Record, error) {
		return st.ListRuns(limit, offset), nil, nil
	})
}

// GetRun returns a stored run.
func (s *Allocation) GetRun(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.AllocationRun, error) {
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.AllocationRun, []supplyplan.Record, error) {
		r, err := st.GetRun(id)
		return r, nil, err
	})
}

// Inconsistencies lists the ledger entries that disagree with stock or orders.
func (s *Allocation) Inconsistencies(ctx context.Context, p supplyplan.Principal) ([]supplyplan.Inconsistency, error) {
	now := s.now()
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.Inconsistency, []supplyplan.Record, error) {
		return st.AllocationInconsistencies(now), nil, nil
	})
}

// Repair fixes the inconsistencies, with one audit entry per fix in the same write.
func (s *Allocation) Repair(ctx context.Context, p supplyplan.Principal) ([]supplyplan.AllocationAudit, error) {
	now := s.now()
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.AllocationAudit, []supplyplan.Record, error) {
		audits, recs := st.RepairAllocations(p.Actor(), now)
		return audits, recs, nil
	})
}

// ListAudits lists the repair audit entries, newest first.
func (s *Allocation) ListAudits(ctx context.Context, p supplyplan.Principal, limit, offset int) (supplyplan.Page[supplyplan.AllocationAudit], error) {
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Page[supplyplan.AllocationAudit], []supplyplan.Record, error) {
		return st.ListAudits(limit, offset), nil, nil
	})
}
