package http

import (
	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// Order allocation (docs/api.md#order-allocation): available-to-promise, orders with their
// allocation, the reservation ledger, re-allocation runs and the inconsistency finder.

func (s *Server) allocationRoutes() {
	rt := s.router
	ar, aw, aa := supplyplan.PermAllocationRead, supplyplan.PermAllocationWrite, supplyplan.PermAllocationApprove
	rt.handle("GET", "/api/inventory/atp", s.tenant(ar, nil, s.listATP))
	rt.handle("GET", "/api/orders", s.tenant(ar, nil, s.listOrders))
	rt.handle("GET", "/api/orders/:id", s.tenant(ar, nil, s.getOrder))
	rt.handle("POST", "/api/orders/:id/allocate", s.tenant(aw, nil, s.allocateOrder))
	rt.handle("POST", "/api/orders/:id/commit", s.tenant(aw, nil, s.commitOrder))
	rt.handle("GET", "/api/allocation/reservations", s.tenant(ar, nil, s.listReservations))
	rt.handle("POST", "/api/allocation/runs", s.tenant(aw, nil, s.allocationRun)) // dryRun false: allocation.approve (the service checks)
	rt.handle("GET", "/api/allocation/runs", s.tenant(ar, nil, s.listAllocationRuns))
	rt.handle("GET", "/api/allocation/runs/:id", s.tenant(ar, nil, s.getAllocationRun))
	rt.handle("GET", "/api/allocation/inconsistencies", s.tenant(ar, nil, s.allocationInconsistencies))
	rt.handle("POST", "/api/allocation/inconsistencies/repair", s.tenant(aa, nil, s.repairAllocations))
	rt.handle("GET", "/api/allocation/audits", s.tenant(ar, nil, s.listAllocationAudits))
}

func (s *Server) listATP(r *Request) error {
	q := r.Query()
	in := supplyplan.ATPQuery{SKU: q.String("skuId"), LocationID: q.String("locationId")}
	if in.SKU == "" {
		in.SKU = q.String("productMasterId")
	}
	if t, _, ok := q.Time("date"); ok {
		in.Date = &t
	}
	if v, ok := q.Float("quantity", 0, supplyplan.MaxNumber); ok {
		if v <= 0 {
			q.fe.Add("quantity", "must be a number > 0 and at most 1e12")
		}
		in.Quantity = v
	}
	in.Limit, in.Offset = pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Allocation.ATP(r.Context, r.Principal, in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"atp": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *Server) listOrders(r *Request) error {
	q := r.Query()
	f := supplyplan.OrderFilter{Status: q.Enum("status", supplyplan.OrderStatuses),
		AllocationStatus: q.Enum("allocationStatus", enumStrings(supplyplan.AllocationStatuses)),
		SKU:              q.String("skuId"), LocationID: q.String("locationId")}
	f.Limit, f.Offset = pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Allocation.ListOrders(r.Context, r.Principal, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"orders": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *Server) getOrder(r *Request) error {
	o, err := s.svc.Allocation.GetOrder(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"order": o})
}

func (s *Server) allocateOrder(r *Request) error {
	o, err := s.svc.Allocation.AllocateOrder(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"order": o})
}

func (s *Server) commitOrder(r *Request) error {
	o, err := s.svc.Allocation.CommitOrder(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"order": o})
}

func (s *Server) listReservations(r *Request) error {
	q := r.Query()
	f := supplyplan.ReservationFilter{SKU: q.String("skuId"), LocationID: q.String("locationId"), OrderID: q.String("orderId"),
		Status: supplyplan.ReservationStatus(q.Enum("status", enumStrings(supplyplan.ReservationStatuses)))}
	f.Limit, f.Offset = pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Allocation.ListReservations(r.Context, r.Principal, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"reservations": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *Server) allocationRun(r *Request) error {
	var in supplyplan.RunInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	run, err := s.svc.Allocation.Run(r.Context, r.Principal, in)
	if err != nil {
		return err
	}
	status := fasthttp.StatusCreated
	if run.DryRun {
		status = fasthttp.StatusOK
	}
	return r.JSON(status, map[string]any{"run": run})
}

func (s *Server) listAllocationRuns(r *Request) error {
	q := r.Query()
	limit, offset := pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Allocation.ListRuns(r.Context, r.Principal, limit, offset)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"runs": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *Server) getAllocationRun(r *Request) error {
	run, err := s.svc.Allocation.GetRun(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"run": run})
}

func (s *Server) allocationInconsistencies(r *Request) error {
	found, err := s.svc.Allocation.Inconsistencies(r.Context, r.Principal)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"inconsistencies": found})
}

func (s *Server) repairAllocations(r *Request) error {
	fixed, err := s.svc.Allocation.Repair(r.Context, r.Principal)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"fixed": fixed})
}

func (s *Server) listAllocationAudits(r *Request) error {
	q := r.Query()
	limit, offset := pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Allocation.ListAudits(r.Context, r.Principal, limit, offset)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"audits": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}
