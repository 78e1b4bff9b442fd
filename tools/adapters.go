package tools

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/supplyplan/supplyplan"
)

// TransferTools adapts the transfer recommendations service to the transfer tools. Approvals
// through a tool are recorded with the tool key as the actor (apikey:<tool key id>).
type TransferTools struct{ Service supplyplan.TransferService }

var _ TransferBackend = TransferTools{}

func toolRecommendation(r supplyplan.Recommendation) Recommendation {
	out := Recommendation{ID: r.ID, SKU: r.ProductMasterID, FromLocationID: r.SourceLocationID,
		ToLocationID: r.DestLocationID, Quantity: r.Quantity, Status: string(r.Status), Reason: r.Reason}
	if r.Status == supplyplan.RecPending && !r.ExpiresAt.IsZero() {
		exp := r.ExpiresAt
		out.ExpiresAt = &exp
	}
	return out
}

// ListTransferRecommendations lists by status; without one, the actionable ones (valid PENDING,
// then APPROVED).
func (t TransferTools) ListTransferRecommendations(ctx context.Context, p supplyplan.Principal, f TransferFilter) ([]Recommendation, error) {
	filters := []supplyplan.RecommendationFilter{{Status: supplyplan.RecommendationStatus(f.Status), Limit: f.Limit}}
	if f.Status == "" {
		filters = []supplyplan.RecommendationFilter{{Status: supplyplan.RecPending, ValidOnly: true, Limit: f.Limit}, {Status: supplyplan.RecApproved, Limit: f.Limit}}
	}
	out := []Recommendation{}
	for _, rf := range filters {
		page, err := t.Service.ListRecommendations(ctx, p, rf)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Items {
			if len(out) < f.Limit || f.Limit <= 0 {
				out = append(out, toolRecommendation(r))
			}
		}
	}
	return out, nil
}

// ExplainRecommendation renders the numbers behind a recommendation as factors.
func (t TransferTools) ExplainRecommendation(ctx context.Context, p supplyplan.Principal, id string) (RecommendationExplanation, error) {
	r, err := t.Service.GetRecommendation(ctx, p, id)
	if err != nil {
		return RecommendationExplanation{}, err
	}
	out := RecommendationExplanation{Recommendation: toolRecommendation(r), Explanation: r.Reason, Factors: []RecommendationFactor{}}
	add := func(name string, v *float64, detail string) {
		if v != nil {
			out.Factors = append(out.Factors, RecommendationFactor{Name: name, Value: *v, Detail: detail})
		}
	}
	val := func(v float64) *float64 { return &v }
	if e := r.Explanation; e != nil {
		add("destinationAvailable", val(e.Destination.Available), "on hand minus reserved at "+r.DestLocationID)
		add("destinationForecast", val(e.Destination.Forecast), fmt.Sprintf("forecast demand over %d weeks", e.WindowWeeks))
		add("destinationWeeksOfCoverBefore", e.Destination.WeeksOfCoverBefore, "")
		add("destinationWeeksOfCoverAfter", e.Destination.WeeksOfCoverAfter, "")
		add("destinationDaysToStockoutBefore", e.Destination.DaysToStockoutBefore, "")
		add("destinationShortfall", val(e.Shortfall), "what the destination lacks to stay at its reorder point")
		add("sourceAvailable", val(e.Source.Available), "on hand minus reserved at "+r.SourceLocationID)
		add("sourceSurplus", val(e.Surplus), "what the source can give and stay covered")
		add("stockDifferencePct", val(e.StockDifferencePct), "source coverage minus destination coverage")
		add("lostSalesAvoided", val(e.LostSalesAvoided), "")
		add("transferCost", val(e.TransferCost), "")
		add("marginSaved", e.MarginSaved, "")
		if e.Formula != "" {
			out.Explanation += " " + e.Formula
		}
	}
	add("estimatedROI", r.EstimatedROI, "")
	return out, nil
}

// ApproveTransferRecommendation approves a PENDING recommendation.
func (t TransferTools) ApproveTransferRecommendation(ctx context.Context, p supplyplan.Principal, id string) (Recommendation, error) {
	r, err := t.Service.ApproveRecommendation(ctx, p, id, "approved through the hosted tool service")
	if err != nil {
		return Recommendation{}, err
	}
	return toolRecommendation(r), nil
}

// ForecastTools adapts a Forecaster to get_demand_forecast. Without a location, the forecast is
// the sum over every location holding or expecting the product (Catalog finds them).
type ForecastTools struct {
	Forecaster supplyplan.Forecaster
	Catalog    supplyplan.CatalogService
}

var _ ForecastBackend = ForecastTools{}

// DemandForecast forecasts q.Weeks weeks from the current week.
func (f ForecastTools) DemandForecast(ctx context.Context, p supplyplan.Principal, q ForecastQuery) (ForecastResult, error) {
	prod, err := f.Catalog.GetProduct(ctx, p, q.SKU)
	if err != nil {
		return ForecastResult{}, err
	}
	locations := []string{q.LocationID}
	if q.LocationID == "" {
		av, err := f.Catalog.Availability(ctx, p, prod.ID, nil)
		if err != nil {
			return ForecastResult{}, err
		}
		locations = locations[:0]
		for _, a := range av {
			locations = append(locations, a.LocationID)
		}
	}
	keys := make([]supplyplan.DemandKey, 0, len(locations))
	for _, l := range locations {
		keys = append(keys, supplyplan.DemandKey{SKU: prod.ID, Location: l, Channel: supplyplan.ChannelAll})
	}
	series, err := supplyplan.ForecastMany(ctx, f.Forecaster, p.OrgID, keys, q.Weeks, time.Time{})
	if err != nil {
		return ForecastResult{}, err
	}
	if len(series) == 0 {
		return ForecastResult{}, supplyplan.NotFound("Demand history")
	}
	out := ForecastResult{SKU: prod.ID, LocationID: q.LocationID, Weeks: []ForecastWeek{}}
	var models []string
	for _, k := range keys {
		sf, ok := series[k]
		if !ok {
			continue
		}
		if !slices.Contains(models, sf.Model) {
			models = append(models, sf.Model)
		}
		for i, qty := range sf.Quantity {
			if i >= len(out.Weeks) {
				out.Weeks = append(out.Weeks, ForecastWeek{WeekStart: sf.Start.AddDate(0, 0, 7*i)})
			}
			out.Weeks[i].Forecast += supplyplan.Quantity(qty)
			if len(series) == 1 && i < len(sf.Lower) && i < len(sf.Upper) {
				lo, hi := supplyplan.Quantity(sf.Lower[i]), supplyplan.Quantity(sf.Upper[i])
				out.Weeks[i].Lower, out.Weeks[i].Upper = &lo, &hi
			}
		}
	}
	if len(models) == 1 {
		out.Model = models[0]
	} else if len(models) > 1 {
		out.Model = "mixed"
	}
	return out, nil
}
