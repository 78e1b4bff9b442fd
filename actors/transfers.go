package actors

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/supplyplan/supplyplan"
)

// TransferConfig configures recommendations.
type TransferConfig struct {
	// Expiry is how long a PENDING recommendation stays actionable (default 72 h).
	Expiry time.Duration
	// WindowWeeks is the projection window (default 8).
	WindowWeeks int
	// LeadTimeDays is the transfer lead time (default 3).
	LeadTimeDays float64
	// CostPerUnit is the cost of moving one unit, for ROI (the service's default is 0.5).
	CostPerUnit float64
	// MinStockDifferencePct is the default of the request field (the service's default is 0.2).
	MinStockDifferencePct float64
	// SweepEvery records time-based expiries (default 1 minute).
	SweepEvery time.Duration
}

func (c TransferConfig) withDefaults() TransferConfig {
	if c.Expiry <= 0 {
		c.Expiry = 72 * time.Hour
	}
	if c.WindowWeeks <= 0 {
		c.WindowWeeks = 8
	}
	if c.LeadTimeDays <= 0 {
		c.LeadTimeDays = 3
	}
	c.CostPerUnit = max(c.CostPerUnit, 0)
	c.MinStockDifferencePct = min(max(c.MinStockDifferencePct, 0), 1)
	if c.SweepEvery <= 0 {
		c.SweepEvery = time.Minute
	}
	return c
}

// Transfers is the transfer service: recommendations (generated from each location's projected
// stock and forecast, then approved, rejected, executed or expired) and inventory transfers, kept
// by the tenant's actor. Approving a recommendation happens here (ApproveRecommendation).
type Transfers struct {
	core       *Core
	cfg        TransferConfig
	forecaster supplyplan.Forecaster     // demand over the projection window (nil: none)
	events     supplyplan.EventPublisher // recommendation.* and transfer.* events (nil: dropped)
	stopSweep  func()
}

// NewTransfers returns the transfer service; Open starts its expiry sweep.
func NewTransfers(core *Core, cfg TransferConfig, forecaster supplyplan.Forecaster, events supplyplan.EventPublisher) *Transfers {
	return &Transfers{core: core, cfg: cfg.withDefaults(), forecaster: forecaster, events: events}
}

var _ supplyplan.TransferService = (*Transfers)(nil)

// Open starts the sweep that records time-based expiries.
func (s *Transfers) Open(context.Context) error {
	s.stopSweep = s.core.every(s.cfg.SweepEvery, s.sweepRecommendations)
	return nil
}

// Close stops the sweep.
func (s *Transfers) Close(context.Context) error {
	if s.stopSweep != nil {
		s.stopSweep()
	}
	return nil
}

// GenerateRecommendations projects every product's stock per location, proposes transfers and
// stores the new recommendations. The tenant actor is used twice (snapshot, then apply); the
// forecasts and the engine run outside it, in parallel across products.
func (s *Transfers) GenerateRecommendations(ctx context.Context, p supplyplan.Principal, in supplyplan.GenerateInput) (supplyplan.GenerateResult, error) {
	if err := in.Validate(); err != nil {
		return supplyplan.GenerateResult{}, err
	}
	cfg := s.cfg
	now := supplyplan.Now()
	prodRef, locID := deref(in.ProductMasterID), deref(in.LocationID)
	snap, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.ProductStock, []supplyplan.Record, error) {
		ps, err := st.StockSnapshot(prodRef, locID, cfg.WindowWeeks, now)
		return ps, nil, err
	})
	if err != nil {
		return supplyplan.GenerateResult{}, err
	}
	opt := supplyplan.RecommendOptions{WindowWeeks: cfg.WindowWeeks, LeadTimeDays: cfg.LeadTimeDays,
		MinStockDifferencePct: cfg.MinStockDifferencePct, TransferCostPerUnit: cfg.CostPerUnit, UnitMargin: in.UnitMargin}
	if in.MinStockDifferencePct != nil {
		opt.MinStockDifferencePct = *in.MinStockDifferencePct
	}
	if in.RequirePositiveROI != nil {
		opt.RequirePositiveROI = *in.RequirePositiveROI
	}
	// Forecast and propose a chunk of products at a time, releasing each product's stock once
	// proposed: at 10,000 products x 50 locations the forecasts of every location at once (and
	// their keys) were ~130 MB live beside the snapshot, the proposals and the journal entry.
	var props []supplyplan.Proposal
	evaluated := make(map[string]bool, len(snap))
	for lo := 0; lo < len(snap); lo += generateChunk {
		chunk := snap[lo:min(lo+generateChunk, len(snap))]
		if err := s.fillForecasts(ctx, p.OrgID, chunk, cfg.WindowWeeks, now); err != nil {
			return supplyplan.GenerateResult{}, err
		}
		props = append(props, proposeParallel(chunk, opt, locID)...)
		for i := range chunk {
			evaluated[chunk[i].ProductID] = true
			chunk[i] = supplyplan.ProductStock{}
		}
	}
	type generated struct {
		res supplyplan.GenerateResult
		evs []supplyplan.DomainEvent
	}
	g, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (generated, []supplyplan.Record, error) {
		r, recs := st.ApplyProposals(props, evaluated, locID, cfg.Expiry, now)
		var out outbox
		for _, c := range r.Created {
			out.add(p.OrgID, "recommendation.created", recommendationEvent(c))
		}
		for _, rec := range recs {
			if x, ok := rec.Value.(*supplyplan.Recommendation); ok && x.Status == supplyplan.RecExpired {
				out.add(p.OrgID, "recommendation.expired", recommendationEvent(*x))
			}
		}
		return generated{r, out.events}, append(recs, out.records()...), nil
	})
	if err != nil {
		return g.res, err
	}
	s.publishAll(g.evs)
	return g.res, nil
}

// generateChunk is how many products a generation forecasts and proposes for at a time.
const generateChunk = 500

// proposeParallel runs the engine over products on every core, keeping product order.
func proposeParallel(snap []supplyplan.ProductStock, opt supplyplan.RecommendOptions, locID string) []supplyplan.Proposal {
	results := make([][]supplyplan.Proposal, len(snap))
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	next := make(chan int, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				props := supplyplan.ProposeTransfers(snap[i], opt)
				if locID != "" {
					kept := props[:0]
					for _, pr := range props {
						if pr.Source == locID || pr.Dest == locID {
							kept = append(kept, pr)
						}
					}
					props = kept
				}
				results[i] = props
			}
		}()
	}
	for i := range snap {
		next <- i
	}
	close(next)
	wg.Wait()
	var out []supplyplan.Proposal
	for _, r := range results {
		out = append(out, r...)
	}
	return out
}

// fillForecasts sets each location's weekly forecast (channel ALL, mean) over the window. With the
// built-in engine the results are read straight from its batch run (and its cache), without building
// a map of copies: at 10,000 products x 50 locations that map was most of the time and the garbage.
func (s *Transfers) fillForecasts(ctx context.Context, orgID string, snap []supplyplan.ProductStock, weeks int, now time.Time) error {
	f := s.forecaster
	if f == nil {
		return nil
	}
	n := 0
	for _, ps := range snap {
		n += len(ps.Locations)
	}
	keys := make([]supplyplan.DemandKey, 0, n) // 24 MB at 500,000 sku-locations: grown by appending it was 90
	for _, ps := range snap {
		for _, l := range ps.Locations {
			keys = append(keys, supplyplan.DemandKey{SKU: ps.ProductID, Location: l.LocationID, Channel: supplyplan.ChannelAll})
		}
	}
	if engine, ok := f.(*Forecasts); ok {
		qs, err := engine.meanQuantities(ctx, orgID, keys, weeks, now)
		if err != nil {
			return fmt.Errorf("forecast for recommendations: %w", err)
		}
		if qs == nil { // no demand store: no forecast
			return nil
		}
		i := 0
		for p := range snap {
			for l := range snap[p].Locations {
				if qs[i] != nil {
					snap[p].Locations[l].Forecast = qs[i]
				}
				i++
			}
		}
		return nil
	}
	fc, err := supplyplan.ForecastMany(ctx, f, orgID, keys, weeks, now)
	if err != nil {
		return fmt.Errorf("forecast for recommendations: %w", err)
	}
	for i := range snap {
		for j := range snap[i].Locations {
			l := &snap[i].Locations[j]
			if sf, ok := fc[supplyplan.DemandKey{SKU: snap[i].ProductID, Location: l.LocationID, Channel: supplyplan.ChannelAll}]; ok {
				l.Forecast = sf.Quantity
			}
		}
	}
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// ListRecommendations lists recommendations.
func (s *Transfers) ListRecommendations(ctx context.Context, p supplyplan.Principal, f supplyplan.RecommendationFilter) (supplyplan.Page[supplyplan.Recommendation], error) {
	now := supplyplan.Now()
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Page[supplyplan.Recommendation], []supplyplan.Record, error) {
		return st.ListRecommendations(f, now), nil, nil
	})
}

// GetRecommendation returns one recommendation.
func (s *Transfers) GetRecommendation(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.Recommendation, error) {
	now := supplyplan.Now()
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Recommendation, []supplyplan.Record, error) {
		r, err := st.GetRecommendation(id, now)
		return r, nil, err
	})
}

// ApproveRecommendation approves a PENDING recommendation.
func (s *Transfers) ApproveRecommendation(ctx context.Context, p supplyplan.Principal, id, comment string) (supplyplan.Recommendation, error) {
	now := supplyplan.Now()
	return s.changeRecommendation(ctx, p, id, "recommendation.approved", func(r supplyplan.Recommendation) (supplyplan.Recommendation, error) {
		return r.Approve(p.Actor(), comment, now)
	})
}

// changeRecommendation applies approve or reject and its event in one transaction.
func (s *Transfers) changeRecommendation(ctx context.Context, p supplyplan.Principal, id, typ string, fn func(supplyplan.Recommendation) (supplyplan.Recommendation, error)) (supplyplan.Recommendation, error) {
	type changed struct {
		rec supplyplan.Recommendation
		evs []supplyplan.DomainEvent
	}
	c, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (changed, []supplyplan.Record, error) {
		r, recs, err := st.ChangeRecommendation(id, fn)
		if err != nil {
			return changed{}, nil, err
		}
		var out outbox
		out.add(p.OrgID, typ, recommendationEvent(r))
		return changed{r, out.events}, append(recs, out.records()...), nil
	})
	if err == nil {
		s.publishAll(c.evs)
	}
	return c.rec, err
}

// RejectRecommendation rejects a PENDING or APPROVED recommendation.
func (s *Transfers) RejectRecommendation(ctx context.Context, p supplyplan.Principal, id, comment string) (supplyplan.Recommendation, error) {
	now := supplyplan.Now()
	return s.changeRecommendation(ctx, p, id, "recommendation.rejected", func(r supplyplan.Recommendation) (supplyplan.Recommendation, error) {
		return r.Reject(p.Actor(), comment, now)
	})
}

type executed struct {
	rec supplyplan.Recommendation
	trf supplyplan.Transfer
	evs []supplyplan.DomainEvent
}

// ExecuteRecommendation executes an APPROVED recommendation: its transfer is created and the
// quantity reserved at the source.
func (s *Transfers) ExecuteRecommendation(ctx context.Context, p supplyplan.Principal, id, comment string) (supplyplan.Recommendation, supplyplan.Transfer, error) {
	now := supplyplan.Now()
	x, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (executed, []supplyplan.Record, error) {
		r, t, recs, err := st.ExecuteRecommendation(id, p.Actor(), comment, now)
		if err != nil {
			return executed{}, nil, err
		}
		var out outbox
		out.add(p.OrgID, "recommendation.executed", recommendationEvent(r))
		out.add(p.OrgID, "transfer.created", t)
		return executed{r, t, out.events}, append(recs, out.records()...), nil
	})
	if err == nil {
		s.publishAll(x.evs)
	}
	return x.rec, x.trf, err
}

// ListTransfers lists inventory transfers.
func (s *Transfers) ListTransfers(ctx context.Context, p supplyplan.Principal, f supplyplan.TransferFilter) (supplyplan.Page[supplyplan.Transfer], error) {
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Page[supplyplan.Transfer], []supplyplan.Record, error) {
		return st.ListTransfers(f), nil, nil
	})
}

// CreateTransfer creates a manual transfer (DRAFT, quantity reserved at the source).
func (s *Transfers) CreateTransfer(ctx context.Context, p supplyplan.Principal, in supplyplan.TransferInput) (supplyplan.Transfer, error) {
	now := supplyplan.Now()
	return s.transferTx(ctx, p, func(st *supplyplan.TenantState) (supplyplan.Transfer, []supplyplan.Record, string, error) {
		t, recs, err := st.CreateTransfer(in, p.Actor(), now)
		return t, recs, "transfer.created", err
	})
}

// transferTx runs a transfer change and its event (named by fn, "" for none) in one transaction.
func (s *Transfers) transferTx(ctx context.Context, p supplyplan.Principal, fn func(*supplyplan.TenantState) (supplyplan.Transfer, []supplyplan.Record, string, error)) (supplyplan.Transfer, error) {
	type done struct {
		t   supplyplan.Transfer
		evs []supplyplan.DomainEvent
	}
	d, err := tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (done, []supplyplan.Record, error) {
		t, recs, typ, err := fn(st)
		if err != nil {
			return done{}, nil, err
		}
		var out outbox
		if typ != "" {
			out.add(p.OrgID, typ, t)
		}
		return done{t, out.events}, append(recs, out.records()...), nil
	})
	if err == nil {
		s.publishAll(d.evs)
	}
	return d.t, err
}

// GetTransfer returns one transfer.
func (s *Transfers) GetTransfer(ctx context.Context, p supplyplan.Principal, id string) (supplyplan.Transfer, error) {
	return tenantTx(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) (supplyplan.Transfer, []supplyplan.Record, error) {
		t, err := st.GetTransfer(id)
		return t, nil, err
	})
}

// UpdateTransfer moves a transfer along its states.
func (s *Transfers) UpdateTransfer(ctx context.Context, p supplyplan.Principal, id string, in supplyplan.TransferUpdate) (supplyplan.Transfer, error) {
	now := supplyplan.Now()
	return s.transferTx(ctx, p, func(st *supplyplan.TenantState) (supplyplan.Transfer, []supplyplan.Record, string, error) {
		var before supplyplan.TransferStatus
		if cur, ok := st.Transfers[id]; ok {
			before = cur.Status
		}
		t, recs, err := st.UpdateTransfer(id, in, p.Actor(), now)
		typ := ""
		if err == nil && t.Status != before {
			typ = "transfer." + transferEventName(t.Status)
		}
		return t, recs, typ, err
	})
}

func transferEventName(st supplyplan.TransferStatus) string {
	switch st {
	case supplyplan.TransferInTransit:
		return "in_transit"
	case supplyplan.TransferReceived:
		return "received"
	case supplyplan.TransferCancelled:
		return "cancelled"
	}
	return "updated"
}

// Bins lists a location's bins.
func (s *Transfers) Bins(ctx context.Context, p supplyplan.Principal, locationID, sku string) ([]supplyplan.Bin, error) {
	return tenantRead(ctx, s.core, p.OrgID, func(st *supplyplan.TenantState) ([]supplyplan.Bin, error) {
		return st.Bins(locationID, sku)
	})
}

// sweepRecommendations records time-based expiries for every tenant.
func (s *Transfers) sweepRecommendations(ctx context.Context) {
	now := supplyplan.Now()
	s.core.eachTenant(func(org string) {
		evs, err := tenantTx(ctx, s.core, org, func(st *supplyplan.TenantState) ([]supplyplan.DomainEvent, []supplyplan.Record, error) {
			recs := st.ExpireDue(now)
			var out outbox
			for _, r := range recs {
				out.add(org, "recommendation.expired", recommendationEvent(*r.Value.(*supplyplan.Recommendation)))
			}
			recs = append(recs, out.records()...)
			return out.events, append(recs, st.PurgeFinished(now)...), nil
		})
		if err != nil {
			s.core.log.Warn("recommendation sweep failed", "org", org, "err", err)
			return
		}
		s.publishAll(evs)
	})
}

// recommendationEvent is the payload of recommendation.* events (the explanation is left out).
func recommendationEvent(r supplyplan.Recommendation) supplyplan.Recommendation {
	r.Explanation = nil
	return r
}

// outbox collects the events of one transaction: their records go into the tenant's outbox in the
// same journal entry as the change, so an event is never lost between the change and its delivery
// (the relay drains the outbox); publishAll puts them on the bus once the entry is durable.
type outbox struct{ events []supplyplan.DomainEvent }

func (o *outbox) add(orgID, typ string, data any) {
	o.events = append(o.events, supplyplan.DomainEvent{ID: supplyplan.NewID("evt"), Type: typ, OrganizationID: orgID,
		Timestamp: supplyplan.Now(), Data: data})
}

func (o *outbox) records() []supplyplan.Record {
	recs := make([]supplyplan.Record, len(o.events))
	for i, e := range o.events {
		recs[i] = supplyplan.EventRecord(e)
	}
	return recs
}

// publishAll puts durable events on the bus.
func (s *Transfers) publishAll(evs []supplyplan.DomainEvent) {
	if s.events == nil {
		return
	}
	for _, e := range evs {
		s.events.Publish(e)
	}
}
