package http

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

func itoa(n int) string { return strconv.Itoa(n) }

// pageParams reads limit (default 50, max 100) and offset.
func pageParams(q *Query) (limit, offset int) {
	return q.Int("limit", supplyplan.DefaultPageLimit, 1, supplyplan.MaxPageLimit), q.Int("offset", 0, 0, 1<<31-1)
}

func (s *Server) listProducts(r *Request) error {
	q := r.Query()
	f := supplyplan.ProductFilter{Query: q.String("q"), CategoryID: q.String("categoryId")}
	f.Limit, f.Offset = pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Catalog.ListProducts(r.Context, r.Principal, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"products": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *Server) getProduct(r *Request) error {
	p, err := s.svc.Catalog.GetProduct(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"product": p})
}

func (s *Server) listLocations(r *Request) error {
	q := r.Query()
	f := supplyplan.LocationFilter{Query: q.String("q")}
	f.Limit, f.Offset = pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Catalog.ListLocations(r.Context, r.Principal, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"locations": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *Server) listInventory(r *Request) error {
	q := r.Query()
	f := supplyplan.InventoryFilter{SKU: q.String("skuId"), LocationID: q.String("locationId"),
		BelowReorder: q.Bool("belowReorderPoint", false)}
	if f.SKU == "" {
		f.SKU = q.String("productMasterId")
	}
	f.Limit, f.Offset = pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Catalog.ListInventory(r.Context, r.Principal, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"levels": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *Server) demandHistory(r *Request) error {
	q := r.Query()
	key := supplyplan.DemandKey{SKU: q.String("skuId"), Location: q.String("locationId"), Channel: q.String("channel")}
	if key.SKU == "" {
		key.SKU = q.String("productMasterId")
	}
	if key.Channel == "" {
		key.Channel = supplyplan.ChannelAll
	}
	from, _, _ := q.Time("from")
	to, _, _ := q.Time("to")
	if err := q.Err(); err != nil {
		return err
	}
	fe := supplyplan.FieldErrors{}
	if key.SKU == "" {
		fe.Add("skuId", "is required")
	}
	if key.Location == "" {
		fe.Add("locationId", "is required")
	}
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		fe.Add("to", "must not be before from")
	}
	if err := fe.Err(); err != nil {
		return err
	}
	if !from.IsZero() {
		from = supplyplan.WeekStart(from)
	}
	weeks, err := s.svc.Demand.DemandHistory(r.Context, r.Principal, key, from, to)
	if err != nil {
		return err
	}
	if weeks == nil {
		weeks = []supplyplan.WeekValue{}
	}
	if wantsCSV(r) {
		return demandCSV(r, key, weeks)
	}
	var total float64
	for _, w := range weeks {
		total += w.Actual
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"skuId": key.SKU, "locationId": key.Location, "channel": key.Channel,
		"weeks": weeks, "totalActualDemand": supplyplan.Quantity(total), "from": zeroNil(from), "to": zeroNil(to)})
}

func zeroNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}
