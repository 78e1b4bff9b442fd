package tools_test

import (
	"context"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/tooltest"
	"github.com/supplyplan/supplyplan/tools"
)

// fakeForecaster forecasts 10 units a week at STORE-BERLIN and 5 at WH-EAST; nothing elsewhere.
type fakeForecaster struct{}

func (fakeForecaster) ForecastSeries(_ context.Context, _ string, k supplyplan.DemandKey, horizon int, _ time.Time) (supplyplan.SeriesForecast, error) {
	per := map[string]float64{"STORE-BERLIN": 10, "WH-EAST": 5}[k.Location]
	if per == 0 {
		return supplyplan.SeriesForecast{}, supplyplan.NotFound("Demand history")
	}
	sf := supplyplan.SeriesForecast{Key: k, Model: "ets", Start: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)}
	for range horizon {
		sf.Quantity = append(sf.Quantity, per)
		sf.Lower = append(sf.Lower, per-2)
		sf.Upper = append(sf.Upper, per+2)
	}
	return sf, nil
}

func TestForecastToolsAdapter(t *testing.T) {
	f := tools.ForecastTools{Forecaster: fakeForecaster{}, Catalog: tooltest.NewCatalog()}
	p := supplyplan.Principal{OrgID: "o"}
	one, err := f.DemandForecast(context.Background(), p, tools.ForecastQuery{SKU: "TENT-2P", LocationID: "STORE-BERLIN", Weeks: 3})
	if err != nil || len(one.Weeks) != 3 || one.Weeks[0].Forecast != 10 || one.Weeks[0].Lower == nil || *one.Weeks[0].Upper != 12 || one.Model != "ets" {
		t.Fatalf("one location = %+v %v", one, err)
	}
	if !one.Weeks[1].WeekStart.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("week 2 starts %v", one.Weeks[1].WeekStart)
	}
	all, err := f.DemandForecast(context.Background(), p, tools.ForecastQuery{SKU: "TENT-2P", Weeks: 2})
	if err != nil || len(all.Weeks) != 2 || all.Weeks[0].Forecast != 15 || all.Weeks[0].Lower != nil {
		t.Fatalf("all locations = %+v %v", all, err)
	}
	if _, err := f.DemandForecast(context.Background(), p, tools.ForecastQuery{SKU: "NOPE", Weeks: 2}); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("unknown product err = %v", err)
	}
	// LAMP-H has no stock anywhere: no series to forecast.
	if _, err := f.DemandForecast(context.Background(), p, tools.ForecastQuery{SKU: "LAMP-H", Weeks: 2}); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("no history err = %v", err)
	}
	// Through the tool: listed once a ForecastBackend is wired.
	org := supplyplan.Organization{ID: "o", Capabilities: []string{supplyplan.CapForecast}}
	ts := tools.NewSet(org, tools.Access{Principal: p}, &tools.Deps{Forecasts: f})
	res := call(t, ts, "get_demand_forecast", map[string]any{"productId": "TENT-2P", "weeks": 2})
	if res.IsError || len(structured(t, res)["weeks"].([]any)) != 2 {
		t.Fatalf("tool = %+v", res)
	}
}
