package http

import (
	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

func (s *Server) routes() {
	rt := s.router
	rt.handle("GET", "/health", s.health)
	rt.handle("GET", "/ready", s.ready)
	rt.handle("GET", "/openapi.json", serveOpenAPI(apiOpenAPI))

	// Platform (super-administrator key).
	rt.handle("GET", "/api/platform/organizations", s.platform(s.listOrganizations))
	rt.handle("POST", "/api/platform/organizations", s.platform(s.createOrganization))
	rt.handle("GET", "/api/platform/organizations/:id", s.platform(s.getOrganization))
	rt.handle("PUT", "/api/platform/organizations/:id/entitlements", s.platform(s.setEntitlements))
	rt.handle("GET", "/api/platform/organizations/:id/api-keys", s.platform(s.listAPIKeys))
	rt.handle("POST", "/api/platform/organizations/:id/api-keys", s.platform(s.createAPIKey))
	rt.handle("DELETE", "/api/platform/organizations/:id/api-keys/:keyId", s.platform(s.revokeAPIKey))
	rt.handle("GET", "/api/platform/events", s.platform(s.listGlobalEvents))
	rt.handle("POST", "/api/platform/events", s.platform(s.createGlobalEvent))
	rt.handle("DELETE", "/api/platform/events/:id", s.platform(s.deleteGlobalEvent))
	rt.handle("GET", "/api/platform/organizations/:id/billing", s.platform(s.getBilling))
	s.mcpPlatformRoutes()

	// Forecasting: scenarios and external events.
	read, write := supplyplan.PermForecastRead, supplyplan.PermForecastWrite
	f := featureForecasting
	rt.handle("GET", "/api/forecast/scenarios", s.tenant(read, f, s.listScenarios))
	rt.handle("POST", "/api/forecast/scenarios", s.tenant(write, f, s.createScenario))
	rt.handle("GET", "/api/forecast/scenarios/:id", s.tenant(read, f, s.getScenario))
	rt.handle("PUT", "/api/forecast/scenarios/:id", s.tenant(write, f, s.updateScenario))
	rt.handle("DELETE", "/api/forecast/scenarios/:id", s.tenant(write, f, s.archiveScenario))
	rt.handle("POST", "/api/forecast/scenarios/:id/publish", s.tenant(write, f, s.publishScenario))
	rt.handle("POST", "/api/forecast/scenarios/:id/generate", s.tenant(write, f, s.generateScenario))
	rt.handle("POST", "/api/forecast/scenarios/compare", s.tenant(read, f, s.compareScenarios))
	rt.handle("GET", "/api/forecast", s.tenant(read, f, s.getForecast))
	rt.handle("GET", "/api/forecast/change-history", s.tenant(read, f, s.changeHistory))
	rt.handle("GET", "/api/forecast/channel-projection", s.tenant(read, f, s.channelProjection))
	rt.handle("GET", "/api/forecast/long-term", s.tenant(read, f, s.longTerm))
	rt.handle("GET", "/api/forecast/accuracy", s.tenant(read, f, s.forecastAccuracy))
	rt.handle("GET", "/api/forecast/events/:id/lift", s.tenant(read, f, s.eventLift))
	rt.handle("GET", "/api/forecast/events", s.tenant(read, f, s.listEvents))
	rt.handle("POST", "/api/forecast/events", s.tenant(write, f, s.createEvent))
	rt.handle("GET", "/api/forecast/events/:id", s.tenant(read, f, s.getEvent))
	rt.handle("PUT", "/api/forecast/events/:id", s.tenant(write, f, s.updateEvent))
	rt.handle("DELETE", "/api/forecast/events/:id", s.tenant(write, f, s.deleteEvent))

	// Bulk import (x-api-key with import scopes).
	imw := s.importKey(supplyplan.ScopeImportWrite)
	for _, k := range supplyplan.ImportKinds {
		rt.handle("POST", "/api/import/"+string(k), imw(s.submitImport(k)))
	}
	imr := s.importKey(supplyplan.ScopeImportRead, supplyplan.ScopeImportWrite)
	rt.handle("GET", "/api/import/status/:jobId", imr(s.importStatus))
	rt.handle("GET", "/api/import/jobs", imr(s.listImportJobs))

	// Read APIs of the data plane (forecast.read or transfers.read: every role has both).
	rt.handle("GET", "/api/products", s.tenant(read, nil, s.listProducts))
	rt.handle("GET", "/api/products/:id", s.tenant(read, nil, s.getProduct))
	rt.handle("GET", "/api/locations", s.tenant(read, nil, s.listLocations))
	rt.handle("GET", "/api/inventory/levels", s.tenant(read, nil, s.listInventory))
	rt.handle("GET", "/api/demand/history", s.tenant(read, nil, s.demandHistory))
	rt.handle("POST", "/api/demand/signals", s.signalAuth(s.postSignals))

	// Transfers: recommendations and inventory transfers.
	tr, tw := supplyplan.PermTransfersRead, supplyplan.PermTransfersWrite
	ta, tx := supplyplan.PermTransfersApprove, supplyplan.PermTransfersExecute
	rt.handle("GET", "/api/transfers/recommendations", s.tenant(tr, nil, s.listRecommendations))
	rt.handle("POST", "/api/transfers/recommendations", s.tenant(tw, nil, s.generateRecommendations))
	rt.handle("GET", "/api/transfers/recommendations/pending", s.tenant(tr, nil, s.pendingRecommendations))
	rt.handle("GET", "/api/transfers/recommendations/:id", s.tenant(tr, nil, s.getRecommendation))
	rt.handle("POST", "/api/transfers/recommendations/:id/approve", s.tenant(ta, nil, s.approveRecommendation))
	rt.handle("POST", "/api/transfers/recommendations/:id/reject", s.tenant(ta, nil, s.rejectRecommendation))
	rt.handle("POST", "/api/transfers/recommendations/:id/execute", s.tenant(tx, nil, s.executeRecommendation))
	rt.handle("GET", "/api/inventory/transfers", s.tenant(tr, nil, s.listTransfers))
	rt.handle("POST", "/api/inventory/transfers", s.tenant(tw, nil, s.createTransfer))
	rt.handle("GET", "/api/inventory/transfers/bins", s.tenant(tr, nil, s.transferBins))
	rt.handle("GET", "/api/inventory/transfers/:id", s.tenant(tr, nil, s.getTransfer))
	rt.handle("POST", "/api/inventory/transfers/:id", s.tenant(tw, nil, s.updateTransfer))

	// Order allocation: ATP, orders, the reservation ledger, runs (allocation.go).
	s.allocationRoutes()

	// Alerts (tenant administrator).
	ar, aw := supplyplan.PermAlertsRead, supplyplan.PermAlertsWrite
	rt.handle("GET", "/api/admin/alerts/config", s.tenant(ar, nil, s.getAlertConfig))
	rt.handle("PUT", "/api/admin/alerts/config", s.tenant(aw, nil, s.putAlertConfig))
	rt.handle("GET", "/api/admin/alerts/history", s.tenant(ar, nil, s.alertHistory))
	rt.handle("POST", "/api/admin/alerts/trigger", s.tenant(aw, nil, s.triggerAlert))
	rt.handle("POST", "/api/admin/alerts/evaluate", s.tenant(aw, nil, s.evaluateAlerts))

	// Outbound webhook endpoints (tenant administrator).
	wr, ww := supplyplan.PermWebhooksRead, supplyplan.PermWebhooksWrite
	rt.handle("GET", "/api/webhooks/event-types", s.tenant(wr, nil, s.webhookEventTypes))
	rt.handle("GET", "/api/webhooks/endpoints", s.tenant(wr, nil, s.listEndpoints))
	rt.handle("POST", "/api/webhooks/endpoints", s.tenant(ww, nil, s.createEndpoint))
	rt.handle("GET", "/api/webhooks/endpoints/:id", s.tenant(wr, nil, s.getEndpoint))
	rt.handle("PUT", "/api/webhooks/endpoints/:id", s.tenant(ww, nil, s.updateEndpoint))
	rt.handle("DELETE", "/api/webhooks/endpoints/:id", s.tenant(ww, nil, s.deleteEndpoint))
	rt.handle("POST", "/api/webhooks/endpoints/:id/rotate-secret", s.tenant(ww, nil, s.rotateEndpointSecret))
	rt.handle("GET", "/api/webhooks/endpoints/:id/deliveries", s.tenant(wr, nil, s.listDeliveries))
	rt.handle("POST", "/api/webhooks/endpoints/:id/deliveries/:deliveryId/retry", s.tenant(ww, nil, s.retryDelivery))

	// Inbound webhooks: the live payment-provider route (signature, no key) and the stubs.
	rt.handle("POST", "/webhooks/payment-provider", s.paymentWebhook)
	rt.handle("POST", "/api/webhooks/payment-provider", s.notImplementedWebhook)
	rt.handle("POST", "/api/webhooks/retail-provider", s.notImplementedWebhook)
}

var healthBody = []byte(`{"status":"ok"}`)

func (s *Server) health(r *Request) error {
	r.Ctx.SetStatusCode(fasthttp.StatusOK)
	r.Ctx.SetContentType("application/json")
	r.Ctx.SetBody(healthBody)
	return nil
}
