package http

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// TestScenarioJSON: the scenario endpoints' hand-written body is json.Marshal's, and a scenario
// it cannot encode (a number that is not finite) still gets encoding/json's answer.
func TestScenarioJSON(t *testing.T) {
	lift, nan := 0.05, math.NaN()
	at := time.Date(2026, 11, 27, 21, 0, 0, 123000000, time.UTC)
	for _, sc := range []supplyplan.Scenario{
		{ID: "scn_1", Name: "Benchmark <scenario>", Type: "PROMOTIONAL", Status: "DRAFT", CreatedAt: at, UpdatedAt: at,
			Assumptions: supplyplan.Assumptions{Narrative: "steady", GlobalLiftPct: &lift,
				CategoryAdjustments: []supplyplan.CategoryAdjustment{{CategoryID: "beverages", LiftPct: 0.1}}, IncludedEventIDs: []string{}}},
		{ID: "scn_2", Description: "d", PublishedAt: &at, ArchivedAt: &at},
		{ID: "scn_3", Assumptions: supplyplan.Assumptions{GlobalLiftPct: &nan}},
	} {
		var ctx fasthttp.RequestCtx
		r := &Request{Ctx: &ctx}
		want, wantErr := json.Marshal(scenarioBody{sc})
		err := r.scenarioJSON(fasthttp.StatusOK, &sc)
		if (err != nil) != (wantErr != nil) || err == nil && string(ctx.Response.Body()) != string(want) {
			t.Errorf("scenario %s: got %s (%v), want %s (%v)", sc.ID, ctx.Response.Body(), err, want, wantErr)
		}
	}
}

// TestEventJSON: an event write's hand-written answer is json.Marshal's.
func TestEventJSON(t *testing.T) {
	lift, nan := 0.25, math.NaN()
	at := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, ev := range []supplyplan.ExternalEvent{
		{ID: "evt_1", Name: "Promo <1>", Type: "PROMOTION", StartsAt: at, EndsAt: at.AddDate(0, 0, 7), CreatedAt: at, UpdatedAt: at,
			Value: &supplyplan.EventValue{LiftPct: &lift, StackingMode: "MULTIPLICATIVE"}, ProductMasterID: "p",
			ProductMaster: &supplyplan.ProductRef{ID: "p", Name: "P", SKU: "sku-1"}},
		{ID: "evt_2", Value: &supplyplan.EventValue{LiftPct: &nan}},
	} {
		var ctx fasthttp.RequestCtx
		r := &Request{Ctx: &ctx}
		want, wantErr := json.Marshal(ev)
		err := r.eventJSON(fasthttp.StatusCreated, &ev)
		if (err != nil) != (wantErr != nil) || err == nil && string(ctx.Response.Body()) != string(want) {
			t.Errorf("event %s: got %s (%v), want %s (%v)", ev.ID, ctx.Response.Body(), err, want, wantErr)
		}
	}
}
