package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/supplyplan/supplyplan"
)

const recommendationSchema = `{"type":"object","properties":{
  "id":{"type":"string"},"skuId":{"type":"string"},"fromLocationId":{"type":"string"},"toLocationId":{"type":"string"},
  "quantity":{"type":"number"},"status":{"type":"string"},"reason":{"type":"string"},
  "expiresAt":{"type":"string","format":"date-time"}},
  "required":["id","skuId","fromLocationId","toLocationId","quantity","status"]}`

func init() {
	register(&toolSpec{
		capability: supplyplan.CapForecast, needs: hasForecasts,
		def: Def{
			Name: "get_demand_forecast", Title: "Get demand forecast",
			Description: "Weekly demand forecast of a product (optionally at one location) for the next weeks.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
  "productId":{"type":"string","maxLength":200},
  "locationId":{"type":"string","maxLength":200,"description":"One location (default: all locations)"},
  "weeks":{"type":"integer","minimum":1,"maximum":52,"default":12}},
  "required":["productId"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{
  "skuId":{"type":"string"},"locationId":{"type":"string"},"model":{"type":"string"},
  "weeks":{"type":"array","items":{"type":"object","properties":{
    "weekStart":{"type":"string","format":"date-time"},"forecast":{"type":"number"},"lower":{"type":"number"},"upper":{"type":"number"}},
    "required":["weekStart","forecast"]}}},"required":["skuId","weeks"]}`),
			Annotations: readOnly("Get demand forecast"),
		},
		run: getDemandForecast,
	})
	register(&toolSpec{
		capability: supplyplan.CapTransfers, needs: hasTransfers,
		def: Def{
			Name: "list_transfer_recommendations", Title: "List transfer recommendations",
			Description: "Inventory transfer recommendations between locations (default: PENDING and APPROVED).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
  "status":{"type":"string","enum":["PENDING","APPROVED","EXECUTED","REJECTED","EXPIRED"]},
  "limit":{"type":"integer","minimum":1,"maximum":100,"default":20}},"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{
  "recommendations":{"type":"array","items":` + recommendationSchema + `}},"required":["recommendations"]}`),
			Annotations: readOnly("List transfer recommendations"),
		},
		run: listTransferRecommendations,
	})
	register(&toolSpec{
		capability: supplyplan.CapTransfers, needs: hasTransfers,
		def: Def{
			Name: "explain_recommendation", Title: "Explain recommendation",
			Description: "Why a transfer recommendation exists: the stock, demand and cover figures behind it.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
  "recommendationId":{"type":"string","maxLength":200}},"required":["recommendationId"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{
  "recommendation":` + recommendationSchema + `,"explanation":{"type":"string"},
  "factors":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"value":{"type":"number"},"detail":{"type":"string"}},"required":["name","value"]}}},
  "required":["recommendation","explanation","factors"]}`),
			Annotations: readOnly("Explain recommendation"),
		},
		run: explainRecommendation,
	})
	register(&toolSpec{
		capability: supplyplan.CapTransfers, needs: hasApproval,
		def: Def{
			Name: "approve_transfer_recommendation", Title: "Approve transfer recommendation",
			Description: "Approve a PENDING transfer recommendation. Two steps: call without confirmationToken to get a summary " +
				"and a short-lived token, then call again with the same arguments plus confirmationToken to approve. " +
				"Each token acts once and every approval is audited.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
  "recommendationId":{"type":"string","maxLength":200},
  "confirmationToken":{"type":"string","maxLength":1000,"description":"Token returned by the first call"}},
  "required":["recommendationId"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{
  "status":{"type":"string","enum":["confirmation_required","approved"]},
  "summary":{"type":"string"},"confirmationToken":{"type":"string"},"expiresAt":{"type":"string","format":"date-time"},
  "auditId":{"type":"string"},"recommendation":` + recommendationSchema + `},"required":["status","summary"]}`),
			Annotations: &Annotations{Title: "Approve transfer recommendation", IdempotentHint: false},
		},
		run: approveTransferRecommendation,
	})
}

func getDemandForecast(c *toolCall) (any, string, error) {
	var in struct {
		ProductID  string `json:"productId" max:"200"`
		LocationID string `json:"locationId" max:"200"`
		Weeks      *int   `json:"weeks"`
	}
	if err := DecodeArgs(c.args, &in); err != nil {
		return nil, "", err
	}
	if err := requireString("productId", in.ProductID); err != nil {
		return nil, "", err
	}
	weeks := 12
	if in.Weeks != nil {
		if *in.Weeks < 1 || *in.Weeks > 52 {
			return nil, "", supplyplan.Invalid("weeks", "must be between 1 and 52")
		}
		weeks = *in.Weeks
	}
	f, err := c.deps.Forecasts.DemandForecast(c.ctx, c.access.Principal, ForecastQuery{SKU: in.ProductID, LocationID: in.LocationID, Weeks: weeks})
	if err != nil {
		return nil, "", err
	}
	if f.Weeks == nil {
		f.Weeks = []ForecastWeek{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Forecast of %s for %d week(s)", f.SKU, len(f.Weeks))
	for _, w := range f.Weeks {
		fmt.Fprintf(&b, "\n- week of %s: %s", w.WeekStart.Format("2006-01-02"), fmtQty(supplyplan.RoundQuantity(float64(w.Forecast))))
	}
	return f, b.String(), nil
}

func listTransferRecommendations(c *toolCall) (any, string, error) {
	var in struct {
		Status string `json:"status" max:"200"`
		Limit  *int   `json:"limit"`
	}
	if err := DecodeArgs(c.args, &in); err != nil {
		return nil, "", err
	}
	if in.Status != "" && !slices.Contains(supplyplan.RecommendationStatuses, supplyplan.RecommendationStatus(in.Status)) {
		return nil, "", supplyplan.Invalid("status", "must be one of PENDING, APPROVED, EXECUTED, REJECTED, EXPIRED")
	}
	limit, err := limitArg(in.Limit, 20, 100)
	if err != nil {
		return nil, "", err
	}
	recs, err := c.deps.Transfers.ListTransferRecommendations(c.ctx, c.access.Principal, TransferFilter{Status: in.Status, Limit: limit})
	if err != nil {
		return nil, "", err
	}
	if recs == nil {
		recs = []Recommendation{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d recommendation(s)", len(recs))
	for _, r := range recs {
		fmt.Fprintf(&b, "\n- %s", describeRec(r))
	}
	return map[string]any{"recommendations": recs}, b.String(), nil
}

func describeRec(r Recommendation) string {
	return fmt.Sprintf("%s: move %s of %s from %s to %s (%s)", r.ID, fmtQty(r.Quantity), r.SKU, r.FromLocationID, r.ToLocationID, r.Status)
}

func explainRecommendation(c *toolCall) (any, string, error) {
	var in struct {
		RecommendationID string `json:"recommendationId" max:"200"`
	}
	if err := DecodeArgs(c.args, &in); err != nil {
		return nil, "", err
	}
	if err := requireString("recommendationId", in.RecommendationID); err != nil {
		return nil, "", err
	}
	ex, err := c.deps.Transfers.ExplainRecommendation(c.ctx, c.access.Principal, in.RecommendationID)
	if err != nil {
		return nil, "", err
	}
	if ex.Factors == nil {
		ex.Factors = []RecommendationFactor{}
	}
	return ex, describeRec(ex.Recommendation) + "\n" + ex.Explanation, nil
}

func approveTransferRecommendation(c *toolCall) (any, string, error) {
	var in struct {
		RecommendationID  string `json:"recommendationId" max:"200"`
		ConfirmationToken string `json:"confirmationToken" max:"1000"`
	}
	if err := DecodeArgs(c.args, &in); err != nil {
		return nil, "", err
	}
	if err := requireString("recommendationId", in.RecommendationID); err != nil {
		return nil, "", err
	}
	canon := canonicalArgs(c.args)
	if in.ConfirmationToken == "" {
		ex, err := c.deps.Transfers.ExplainRecommendation(c.ctx, c.access.Principal, in.RecommendationID)
		if err != nil {
			return nil, "", err
		}
		if ex.Recommendation.Status != "PENDING" {
			return nil, "", supplyplan.Conflict("Recommendation %s is %s; only PENDING recommendations can be approved", ex.Recommendation.ID, ex.Recommendation.Status)
		}
		token, exp := c.deps.Confirm.Issue(c.org.ID, c.name, canon)
		summary := "Approve: " + describeRec(ex.Recommendation) + ". Call again with confirmationToken before " +
			exp.UTC().Format(time.RFC3339) + " to approve."
		out := map[string]any{"status": "confirmation_required", "summary": summary, "confirmationToken": token,
			"expiresAt": exp.UTC(), "recommendation": ex.Recommendation}
		return out, summary, nil
	}
	claims, err := c.deps.Confirm.Verify(in.ConfirmationToken, c.org.ID, c.name, canon)
	if err != nil {
		return nil, "", err
	}
	audit := supplyplan.ToolAudit{ID: claims.ID, OrganizationID: c.org.ID, Tool: c.name, Arguments: canon,
		Actor: c.access.Principal.Actor(), Status: supplyplan.AuditConfirmed, CreatedAt: supplyplan.Now()}
	if err := c.deps.Audit.ClaimToolConfirmation(c.ctx, audit); err != nil {
		return nil, "", err
	}
	rec, err := c.deps.Transfers.ApproveTransferRecommendation(c.ctx, c.access.Principal, in.RecommendationID)
	status, detail := supplyplan.AuditSucceeded, ""
	if err != nil {
		status, detail = supplyplan.AuditFailed, supplyplan.ErrorMessage(err)
	}
	if cerr := c.deps.Audit.CompleteToolAudit(c.ctx, c.org.ID, audit.ID, status, detail); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return nil, "", err
	}
	summary := "Approved: " + describeRec(rec)
	return map[string]any{"status": "approved", "summary": summary, "auditId": audit.ID, "recommendation": rec}, summary, nil
}
