// Package tooltest holds in-memory implementations of the tool service's backends for tests:
// a CatalogService with a small outdoor-gear catalog and a tools.PlanningBackend with two
// recommendations. Every organization sees the same data.
package tooltest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/tools"
)

func price(f float64) *float64 { return &f }

// Catalog is a fake supplyplan.CatalogService.
type Catalog struct {
	Products  []supplyplan.Product
	Locations []supplyplan.Location
	Levels    []supplyplan.InventoryLevel
	Inbound   map[string]float64 // sku|location -> open purchase order quantity
	Orders    []supplyplan.Order
}

// NewCatalog returns the fixture catalog: 3 products, 2 locations, stock with reservations, 1 order.
func NewCatalog() *Catalog {
	t := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	return &Catalog{
		Products: []supplyplan.Product{
			{ID: "TENT-2P", ExternalID: "TENT-2P", SKU: "TENT-2P", Name: "Trail tent, 2 person", CategoryID: "camping", UnitPrice: price(249), CreatedAt: t, UpdatedAt: t},
			{ID: "BOOT-42", ExternalID: "BOOT-42", SKU: "BOOT-42", Name: "Hiking boot, size 42", CategoryID: "footwear", UnitPrice: price(139.5), CreatedAt: t, UpdatedAt: t},
			{ID: "LAMP-H", ExternalID: "LAMP-H", SKU: "LAMP-H", Name: "Head lamp", CategoryID: "camping", CreatedAt: t, UpdatedAt: t},
		},
		Locations: []supplyplan.Location{
			{ID: "STORE-BERLIN", Name: "Berlin store", Code: "x-STORE-BERLIN", CreatedAt: t, UpdatedAt: t},
			{ID: "WH-EAST", Name: "East warehouse", Code: "x-WH-EAST", CreatedAt: t, UpdatedAt: t},
		},
		Levels: []supplyplan.InventoryLevel{
			{SKU: "TENT-2P", LocationID: "STORE-BERLIN", QuantityOnHand: 12, QuantityReserved: 3, ReorderPoint: 5, UpdatedAt: t},
			{SKU: "TENT-2P", LocationID: "WH-EAST", QuantityOnHand: 40, QuantityReserved: 0, ReorderPoint: 10, UpdatedAt: t},
			{SKU: "BOOT-42", LocationID: "STORE-BERLIN", QuantityOnHand: 4, QuantityReserved: 4, ReorderPoint: 2, UpdatedAt: t},
		},
		Inbound: map[string]float64{"TENT-2P|STORE-BERLIN": 6},
		Orders: []supplyplan.Order{{ExternalOrderID: "SO-1001", Status: "SHIPPED", Channel: "web", OrderedAt: &t,
			Lines: []supplyplan.OrderLine{{SKU: "TENT-2P", Quantity: 1, LocationID: "WH-EAST"}}, CreatedAt: t, UpdatedAt: t}},
	}
}

func page[T any](all []T, limit, offset int) supplyplan.Page[T] {
	if limit <= 0 {
		limit = 50
	}
	end := min(offset+limit, len(all))
	items := []T{}
	if offset < len(all) {
		items = all[offset:end]
	}
	return supplyplan.Page[T]{Items: items, Total: len(all), Limit: limit, Offset: offset}
}

// ListProducts implements supplyplan.CatalogService.
func (c *Catalog) ListProducts(_ context.Context, _ supplyplan.Principal, f supplyplan.ProductFilter) (supplyplan.Page[supplyplan.Product], error) {
	var out []supplyplan.Product
	q := strings.ToLower(f.Query)
	for _, p := range c.Products {
		if f.CategoryID != "" && p.CategoryID != f.CategoryID {
			continue
		}
		if q != "" && !strings.Contains(strings.ToLower(p.ID+" "+p.SKU+" "+p.Name), q) {
			continue
		}
		out = append(out, p)
	}
	return page(out, f.Limit, f.Offset), nil
}

// GetProduct implements supplyplan.CatalogService.
func (c *Catalog) GetProduct(_ context.Context, _ supplyplan.Principal, id string) (supplyplan.Product, error) {
	for _, p := range c.Products {
		if p.ID == id || p.SKU == id {
			return p, nil
		}
	}
	return supplyplan.Product{}, supplyplan.NotFound("Product")
}

// ListLocations implements supplyplan.CatalogService.
func (c *Catalog) ListLocations(_ context.Context, _ supplyplan.Principal, f supplyplan.LocationFilter) (supplyplan.Page[supplyplan.Location], error) {
	var out []supplyplan.Location
	q := strings.ToLower(f.Query)
	for _, l := range c.Locations {
		if q == "" || strings.Contains(strings.ToLower(l.ID+" "+l.Name), q) {
			out = append(out, l)
		}
	}
	return page(out, f.Limit, f.Offset), nil
}

// ListInventory implements supplyplan.CatalogService.
func (c *Catalog) ListInventory(_ context.Context, _ supplyplan.Principal, f supplyplan.InventoryFilter) (supplyplan.Page[supplyplan.InventoryLevel], error) {
	var out []supplyplan.InventoryLevel
	for _, l := range c.Levels {
		if (f.SKU == "" || l.SKU == f.SKU) && (f.LocationID == "" || l.LocationID == f.LocationID) {
			out = append(out, l)
		}
	}
	return page(out, f.Limit, f.Offset), nil
}

// Availability implements supplyplan.CatalogService: ATP is available plus inbound.
func (c *Catalog) Availability(ctx context.Context, p supplyplan.Principal, ref string, locationIDs []string) ([]supplyplan.Availability, error) {
	prod, err := c.GetProduct(ctx, p, ref) // like the real one: unknown products are NOT_FOUND
	if err != nil {
		return nil, err
	}
	sku := prod.ID
	out := []supplyplan.Availability{}
	for _, l := range c.Levels {
		if l.SKU != sku || (len(locationIDs) > 0 && !slices.Contains(locationIDs, l.LocationID)) {
			continue
		}
		in := c.Inbound[sku+"|"+l.LocationID]
		out = append(out, supplyplan.Availability{SKU: sku, LocationID: l.LocationID, OnHand: l.QuantityOnHand,
			Reserved: l.QuantityReserved, Available: l.Available(), Inbound: in, ATP: l.Available() + in, ReorderPoint: l.ReorderPoint})
	}
	return out, nil
}

// GetOrder implements supplyplan.CatalogService.
func (c *Catalog) GetOrder(_ context.Context, _ supplyplan.Principal, id string) (supplyplan.Order, error) {
	for _, o := range c.Orders {
		if o.ExternalOrderID == id {
			return o, nil
		}
	}
	return supplyplan.Order{}, supplyplan.NotFound("Order")
}

// Planning is a fake tools.PlanningBackend with recommendations REC-1 and REC-2 (PENDING).
type Planning struct {
	mu        sync.Mutex
	recs      map[string]*tools.Recommendation
	Approvals int
}

// NewPlanning returns the fixture planning service.
func NewPlanning() *Planning {
	return &Planning{recs: map[string]*tools.Recommendation{
		"REC-1": {ID: "REC-1", SKU: "TENT-2P", FromLocationID: "WH-EAST", ToLocationID: "STORE-BERLIN", Quantity: 8, Status: "PENDING", Reason: "cover below 2 weeks"},
		"REC-2": {ID: "REC-2", SKU: "BOOT-42", FromLocationID: "WH-EAST", ToLocationID: "STORE-BERLIN", Quantity: 4, Status: "PENDING"},
	}}
}

// DemandForecast implements tools.PlanningBackend.
func (p *Planning) DemandForecast(_ context.Context, _ supplyplan.Principal, q tools.ForecastQuery) (tools.ForecastResult, error) {
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	res := tools.ForecastResult{SKU: q.SKU, LocationID: q.LocationID, Model: "fake"}
	for i := range q.Weeks {
		res.Weeks = append(res.Weeks, tools.ForecastWeek{WeekStart: start.AddDate(0, 0, 7*i), Forecast: supplyplan.Quantity(10 + i)})
	}
	return res, nil
}

// ListTransferRecommendations implements tools.PlanningBackend.
func (p *Planning) ListTransferRecommendations(_ context.Context, _ supplyplan.Principal, f tools.TransferFilter) ([]tools.Recommendation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []tools.Recommendation
	for _, id := range []string{"REC-1", "REC-2"} {
		r := p.recs[id]
		if f.Status == "" || r.Status == f.Status {
			out = append(out, *r)
		}
	}
	return out, nil
}

// ExplainRecommendation implements tools.PlanningBackend.
func (p *Planning) ExplainRecommendation(_ context.Context, _ supplyplan.Principal, id string) (tools.RecommendationExplanation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.recs[id]
	if !ok {
		return tools.RecommendationExplanation{}, supplyplan.NotFound("Recommendation")
	}
	return tools.RecommendationExplanation{Recommendation: *r, Explanation: "The store covers less than two weeks of demand.",
		Factors: []tools.RecommendationFactor{{Name: "weeksOfCover", Value: 1.5}}}, nil
}

// ApproveTransferRecommendation implements tools.PlanningBackend.
func (p *Planning) ApproveTransferRecommendation(_ context.Context, _ supplyplan.Principal, id string) (tools.Recommendation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.recs[id]
	if !ok {
		return tools.Recommendation{}, supplyplan.NotFound("Recommendation")
	}
	if r.Status != "PENDING" {
		return tools.Recommendation{}, supplyplan.Conflict("Recommendation is %s", r.Status)
	}
	r.Status = "APPROVED"
	p.Approvals++
	return *r, nil
}

// Audit is an in-memory supplyplan.ToolAuditLog.
type Audit struct {
	mu     sync.Mutex
	Audits map[string]supplyplan.ToolAudit
}

// NewAudit returns an empty audit log.
func NewAudit() *Audit { return &Audit{Audits: map[string]supplyplan.ToolAudit{}} }

// ClaimToolConfirmation implements supplyplan.ToolAuditLog.
func (a *Audit) ClaimToolConfirmation(_ context.Context, x supplyplan.ToolAudit) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.Audits[x.ID]; ok {
		return supplyplan.Conflict("This confirmation token was already used")
	}
	a.Audits[x.ID] = x
	return nil
}

// CompleteToolAudit implements supplyplan.ToolAuditLog.
func (a *Audit) CompleteToolAudit(_ context.Context, _, id, status, detail string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	x := a.Audits[id]
	x.Status, x.Detail = status, detail
	a.Audits[id] = x
	return nil
}

// ListToolAudits implements supplyplan.ToolAuditLog.
func (a *Audit) ListToolAudits(_ context.Context, orgID string) ([]supplyplan.ToolAudit, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []supplyplan.ToolAudit
	for _, x := range a.Audits {
		if x.OrganizationID == orgID {
			out = append(out, x)
		}
	}
	return out, nil
}

// Args are arguments that make every hosted tool succeed on the fixtures (for "call every tool").
var Args = map[string]map[string]any{
	"search_products":                 {"query": "tent"},
	"get_product":                     {"productId": "TENT-2P"},
	"check_availability":              {"productId": "TENT-2P"},
	"list_locations":                  {},
	"get_order_status":                {"orderId": "SO-1001"},
	"get_demand_forecast":             {"productId": "TENT-2P", "weeks": 4},
	"list_transfer_recommendations":   {},
	"explain_recommendation":          {"recommendationId": "REC-1"},
	"approve_transfer_recommendation": {"recommendationId": "REC-2"},
	"search_merchants":                {"query": "demo"},
	"get_merchant":                    {"slug": "demo"},
	"list_merchant_tools":             {"slug": "demo"},
}
