package http

import (
	"time"

	sp "github.com/supplyplan/supplyplan"
)

// apiDescription describes every route of the REST API (routes.go, allocation.go,
// platform_mcp.go) for its OpenAPI document. TestOpenAPIRoutesMatchRouter checks that the two
// lists are the same.
func apiDescription() *apiDoc {
	d := newAPIDoc()
	ops := d.operation
	str := ""
	num := 0.0
	n := 0
	yes := true
	ts := time.Time{}

	// Operations.
	ops("GET", "/health", "health", "Operations", "Liveness: the process answers", public,
		resp(200, "alive", obj("status", schema{"type": "string", "const": "ok"})))
	ops("GET", "/ready", "ready", "Operations", "Readiness: journal, stores and brokers are usable", public,
		describe("Only the platform key (`Authorization: Bearer`, optional) sees each check and its error; without it the body is the status alone."),
		resp(200, "ready", readyBody{}), resp(503, "a dependency is not usable", readyBody{}))
	ops("GET", "/openapi.json", "openapi", "Operations", "This OpenAPI document", public,
		resp(200, "the OpenAPI 3.1 document", schema{"type": "object"}))

	// Platform.
	pk := platformKey
	ops("GET", "/api/platform/organizations", "listOrganizations", "Platform", "List organizations", pk,
		resp(200, "organizations", obj("organizations", arr(sp.Organization{}))))
	ops("POST", "/api/platform/organizations", "createOrganization", "Platform", "Create an organization", pk,
		reqBody(sp.OrganizationInput{}), idempotent, resp(201, "created", obj("organization", sp.Organization{})))
	ops("GET", "/api/platform/organizations/:id", "getOrganization", "Platform", "Get an organization", pk,
		resp(200, "the organization", obj("organization", sp.Organization{})))
	ops("PUT", "/api/platform/organizations/:id/entitlements", "setEntitlements", "Platform", "Replace an organization's entitlements", pk,
		reqBody(obj("entitlements", arr(str))), resp(200, "the organization", obj("organization", sp.Organization{})))
	ops("GET", "/api/platform/organizations/:id/api-keys", "listAPIKeys", "Platform", "List an organization's API keys", pk,
		resp(200, "keys (never their secrets)", obj("apiKeys", arr(apiKeyView{}))))
	ops("POST", "/api/platform/organizations/:id/api-keys", "createAPIKey", "Platform", "Create an API key (role or import key)", pk,
		reqBody(sp.APIKeyInput{}), idempotent, resp(201, "the key; its secret is shown once", obj("apiKey", apiKeyView{}, "key", str)))
	ops("DELETE", "/api/platform/organizations/:id/api-keys/:keyId", "revokeAPIKey", "Platform", "Revoke an API key", pk,
		noContent("revoked"))
	ops("GET", "/api/platform/events", "listGlobalEvents", "Platform", "List global external events", pk,
		resp(200, "events", obj("events", arr(sp.ExternalEvent{}))))
	ops("POST", "/api/platform/events", "createGlobalEvent", "Platform", "Create a global external event", pk,
		reqBody(sp.EventInput{}), idempotent, resp(201, "the event", sp.ExternalEvent{}))
	ops("DELETE", "/api/platform/events/:id", "deleteGlobalEvent", "Platform", "Delete a global external event", pk,
		noContent("deleted"))
	ops("GET", "/api/platform/organizations/:id/billing", "getBilling", "Platform", "An organization's billing state", pk,
		resp(200, "billing", sp.BillingView{}))
	mcp := describe("Present when the MCP surfaces run (the default).")
	ops("GET", "/api/platform/organizations/:id/merchant", "getMerchant", "Platform", "Get an organization's merchant profile", pk, mcp,
		resp(200, "the profile", obj("merchant", sp.MerchantProfile{})))
	ops("PUT", "/api/platform/organizations/:id/merchant", "setMerchant", "Platform", "Set an organization's merchant profile", pk, mcp,
		reqBody(sp.MerchantInput{}), resp(200, "the profile", obj("merchant", sp.MerchantProfile{})))
	ops("PUT", "/api/platform/organizations/:id/capabilities", "setCapabilities", "Platform", "Replace an organization's tool capabilities", pk, mcp,
		reqBody(obj("capabilities", arr(str))), resp(200, "the organization", obj("organization", sp.Organization{})))
	ops("GET", "/api/platform/organizations/:id/tool-keys", "listToolKeys", "Platform", "List an organization's tool keys", pk, mcp,
		resp(200, "keys", obj("toolKeys", arr(namedKeyView{}))))
	ops("POST", "/api/platform/organizations/:id/tool-keys", "createToolKey", "Platform", "Create a tool key", pk, mcp,
		optionalBody(sp.KeyNameInput{}), idempotent, resp(201, "the key; its secret is shown once", obj("toolKey", namedKeyView{}, "key", str)))
	ops("DELETE", "/api/platform/organizations/:id/tool-keys/:keyId", "revokeToolKey", "Platform", "Revoke a tool key", pk, mcp,
		noContent("revoked"))
	ops("GET", "/api/platform/gateway-keys", "listGatewayKeys", "Platform", "List the registry's gateway keys", pk, mcp,
		resp(200, "keys", obj("gatewayKeys", arr(namedKeyView{}))))
	ops("POST", "/api/platform/gateway-keys", "createGatewayKey", "Platform", "Create a gateway key", pk, mcp,
		optionalBody(sp.KeyNameInput{}), idempotent, resp(201, "the key; its secret is shown once", obj("gatewayKey", namedKeyView{}, "key", str)))
	ops("DELETE", "/api/platform/gateway-keys/:id", "revokeGatewayKey", "Platform", "Revoke a gateway key", pk, mcp,
		noContent("revoked"))

	// Forecasting.
	fr, fw := forecastAuth(string(sp.PermForecastRead)), forecastAuth(string(sp.PermForecastWrite))
	scenario := obj("scenario", sp.Scenario{})
	ops("GET", "/api/forecast/scenarios", "listScenarios", "Forecasting", "List scenarios", fr,
		query(qEnum("status", enumStrings(sp.ScenarioStatuses), ""), qEnum("type", enumStrings(sp.ScenarioTypes), ""),
			qBool("includeArchived", "include ARCHIVED scenarios (default false)")),
		resp(200, "scenarios", obj("scenarios", arr(sp.Scenario{}))))
	ops("POST", "/api/forecast/scenarios", "createScenario", "Forecasting", "Create a scenario", fw,
		reqBody(sp.ScenarioInput{}), idempotent, resp(201, "created", scenario))
	ops("GET", "/api/forecast/scenarios/:id", "getScenario", "Forecasting", "Get a scenario", fr, resp(200, "the scenario", scenario))
	ops("PUT", "/api/forecast/scenarios/:id", "updateScenario", "Forecasting", "Update a scenario", fw,
		reqBody(sp.ScenarioInput{}), idempotent, resp(200, "updated", scenario), status(409, "the scenario is ARCHIVED"))
	ops("DELETE", "/api/forecast/scenarios/:id", "archiveScenario", "Forecasting", "Archive a scenario", fw,
		idempotent, resp(200, "archived", obj("success", yes, "scenario", sp.Scenario{})))
	ops("POST", "/api/forecast/scenarios/:id/publish", "publishScenario", "Forecasting", "Publish a scenario", fw,
		idempotent, resp(200, "published", obj("success", yes, "scenario", sp.Scenario{})), status(409, "the scenario is ARCHIVED"))
	ops("POST", "/api/forecast/scenarios/:id/generate", "generateScenario", "Forecasting", "Generate forecasts for a scenario", fw,
		optionalBody(sp.GenerateScenarioInput{}), idempotent, resp(200, "generated", sp.GenerateScenarioResult{}), status(409, "the scenario is ARCHIVED"))
	ops("POST", "/api/forecast/scenarios/compare", "compareScenarios", "Forecasting", "Compare scenarios", fr,
		reqBody(sp.CompareInput{}), resp(200, "the comparison", sp.CompareResult{}))
	ops("GET", "/api/forecast", "getForecast", "Forecasting", "Forecast demand", fr,
		query(qString("productMasterId", ""), qString("locationId", ""), qString("channel", ""),
			qInt("horizonWeeks", sp.DefaultHorizonWeeks, 1, sp.MaxHorizonWeeks, "weeks ahead"),
			qString("scenarioId", ""), qString("model", "force one model"),
			qEnum("point", []string{"median", "mean", "mape"}, ""), qEnum("transform", []string{"auto", "none", "log"}, ""),
			qEnum("events", []string{"all", "none"}, "none: leave external events out"),
			qEnum("interval", []string{"0.5", "0.8", "0.9", "0.95"}, "prediction interval"),
			qTime("asOf", "forecast as of this date"),
			qInt("limit", sp.DefaultPageLimit, 1, sp.MaxForecastPage, "series per page"), qInt("offset", 0, 0, 1<<31-1, "series to skip")),
		forecastCSVDoc, resp(200, "forecasts", sp.ForecastResponse{}))
	ops("GET", "/api/forecast/change-history", "changeHistory", "Forecasting", "Forecast change history", fr,
		query(qString("scenarioId", ""), qString("productMasterId", ""), qString("locationId", ""), qTime("from", ""), qTime("to", ""),
			qInt("page", 1, 1, 1<<31-1, ""), qInt("limit", sp.DefaultPageLimit, 1, sp.MaxPageLimit, "")),
		resp(200, "entries", obj("entries", arr(sp.ChangeEntry{}), "pagination", paginationSchema)))
	ops("GET", "/api/forecast/channel-projection", "channelProjection", "Forecasting", "Forecast split by channel", fr,
		query(qString("productMasterId", ""), qString("locationId", ""), qInt("horizonWeeks", sp.DefaultHorizonWeeks, 1, sp.MaxHorizonWeeks, "")),
		resp(200, "the projection", sp.ChannelProjection{}))
	ops("GET", "/api/forecast/long-term", "longTermForecast", "Forecasting", "Long-term forecast", fr,
		query(qString("productMasterId", ""), qString("locationId", ""), qInt("horizonMonths", 18, 1, 36, ""),
			qEnum("granularity", []string{"MONTH", "QUARTER"}, ""), qEnum("interval", []string{"0.5", "0.8", "0.9", "0.95"}, "")),
		resp(200, "the forecast", sp.LongTermForecast{}))
	ops("GET", "/api/forecast/accuracy", "forecastAccuracy", "Forecasting", "Forecast accuracy", fr,
		query(qInt("windowWeeks", 13, 1, 104, ""), qString("productMasterId", ""), qString("locationId", ""), qString("channel", ""), qString("scenarioId", "")),
		resp(200, "the report", sp.AccuracyReport{}))
	ops("GET", "/api/forecast/events/:id/lift", "eventLift", "Forecasting", "Measured lift of an external event", fr,
		resp(200, "the lift", sp.EventLiftReport{}))
	ops("GET", "/api/forecast/events", "listEvents", "Forecasting", "List external events", fr,
		query(qTime("from", "default today"), qTime("to", "default today plus 90 days"), qString("productMasterId", ""), qString("locationId", ""),
			qEnum("type", enumStrings(sp.EventTypes), ""), qBool("includeGlobal", "default true"), qBool("includeOrgWide", "default true")),
		resp(200, "events", obj("events", arr(sp.ExternalEvent{}))))
	ops("POST", "/api/forecast/events", "createEvent", "Forecasting", "Create an external event", fw,
		reqBody(sp.EventInput{}), idempotent, resp(201, "the event (no wrapper)", sp.ExternalEvent{}))
	ops("GET", "/api/forecast/events/:id", "getEvent", "Forecasting", "Get an external event", fr, resp(200, "the event", sp.ExternalEvent{}))
	ops("PUT", "/api/forecast/events/:id", "updateEvent", "Forecasting", "Update an external event", fw,
		reqBody(sp.EventInput{}), idempotent, resp(200, "the event", sp.ExternalEvent{}))
	ops("DELETE", "/api/forecast/events/:id", "deleteEvent", "Forecasting", "Delete an external event", fw, idempotent, noContent("deleted"))

	// Import.
	for _, k := range sp.ImportKinds {
		ops("POST", "/api/import/"+string(k), "import"+importOpName(k), "Import", "Import "+string(k), importKeyOf(string(sp.ScopeImportWrite)),
			importBody(k), idempotent,
			query(qBool("dryRun", "validate the rows against the tenant's data without writing (200 with the job's figures)")),
			resp(202, "accepted: the job runs in the background", obj("jobId", str, "status", str, "rowCount", n, "statusUrl", str)),
			resp(200, "dry run: what the import would do", jobView{}))
	}
	ops("GET", "/api/import/status/:jobId", "importStatus", "Import", "An import job", importKeyOf(string(sp.ScopeImportRead), string(sp.ScopeImportWrite)),
		query(qInt("wait", 0, 0, 60, "seconds to wait for the job to finish")),
		importErrorsCSVDoc, resp(200, "the job", jobView{}))
	ops("GET", "/api/import/jobs", "listImportJobs", "Import", "List import jobs, newest first", importKeyOf(string(sp.ScopeImportRead), string(sp.ScopeImportWrite)),
		query(pageQuery...), resp(200, "jobs (without their row errors)", page("jobs", jobView{})))

	// Catalog and demand.
	r := roleKey(string(sp.PermForecastRead))
	ops("GET", "/api/products", "listProducts", "Catalog", "List products", r,
		query(queries([]qparam{qString("q", "matches id, sku or name"), qString("categoryId", "")}, pageQuery)...),
		resp(200, "products", page("products", sp.Product{})))
	ops("GET", "/api/products/:id", "getProduct", "Catalog", "Get a product", r, resp(200, "the product", obj("product", sp.Product{})))
	ops("GET", "/api/locations", "listLocations", "Catalog", "List locations", r,
		query(queries([]qparam{qString("q", "")}, pageQuery)...), resp(200, "locations", page("locations", sp.Location{})))
	ops("GET", "/api/inventory/levels", "listInventory", "Catalog", "List inventory levels", r,
		query(queries([]qparam{qString("skuId", ""), qString("productMasterId", "alias of skuId"), qString("locationId", ""),
			qBool("belowReorderPoint", "")}, pageQuery)...),
		resp(200, "levels", page("levels", sp.InventoryLevel{})))
	ops("GET", "/api/demand/history", "demandHistory", "Catalog", "Weekly demand history of a series", r,
		query(qString("skuId", "required (or productMasterId)"), qString("productMasterId", ""), qString("locationId", "required"),
			qString("channel", "default ALL"), qTime("from", ""), qTime("to", "")),
		demandHistoryCSVDoc, resp(200, "the weeks", obj("skuId", str, "locationId", str, "channel", str, "weeks", arr(sp.WeekValue{}),
			"totalActualDemand", num, "from", nullable(schema{"type": "string", "format": "date-time"}),
			"to", nullable(schema{"type": "string", "format": "date-time"}))))
	ops("POST", "/api/demand/signals", "postSignals", "Catalog", "Ingest demand signals", auth{schemes: []string{"importKey", "bearerKey"},
		permission: "import:write (x-api-key) or forecast.write (bearer)", statuses: []int{401, 403}},
		reqBody(obj("signals", arr(signalRow{}))), idempotent,
		resp(200, "one outcome per signal, once durable", obj("applied", n, "duplicates", n, "rejected", n, "outcomes", arr(signalOutcomeView{}))))

	// Transfers.
	tr, tw := roleKey(string(sp.PermTransfersRead)), roleKey(string(sp.PermTransfersWrite))
	ta, tx := roleKey(string(sp.PermTransfersApprove)), roleKey(string(sp.PermTransfersExecute))
	recQuery := queries([]qparam{qEnum("status", enumStrings(sp.RecommendationStatuses), ""), qEnum("priority", enumStrings(sp.Priorities), ""),
		qString("productMasterId", ""), qString("sourceLocationId", ""), qString("destLocationId", ""),
		qBool("validOnly", "only recommendations whose stock situation still holds")}, pageQuery)
	comment := optionalBody(obj("comment", maybe(schema{"type": []string{"string", "null"}})))
	ops("GET", "/api/transfers/recommendations", "listRecommendations", "Transfers", "List recommendations", tr,
		query(recQuery...), recommendationsCSVDoc, resp(200, "recommendations", page("recommendations", sp.Recommendation{})))
	ops("POST", "/api/transfers/recommendations", "generateRecommendations", "Transfers", "Generate recommendations", tw,
		optionalBody(sp.GenerateInput{}), idempotent,
		resp(200, "what was generated", obj("success", yes, "created", n, "recommendations", arr(sp.Recommendation{}),
			"skippedPending", n, "skippedRecentlyRejected", n, "expired", n, "productsEvaluated", n)))
	ops("GET", "/api/transfers/recommendations/pending", "pendingRecommendations", "Transfers", "Pending recommendations that still hold", tr,
		query(recQuery...), recommendationsCSVDoc, resp(200, "recommendations", page("recommendations", sp.Recommendation{})))
	ops("GET", "/api/transfers/recommendations/:id", "getRecommendation", "Transfers", "Get a recommendation", tr,
		resp(200, "the recommendation", obj("recommendation", sp.Recommendation{})))
	ops("POST", "/api/transfers/recommendations/:id/approve", "approveRecommendation", "Transfers", "Approve a recommendation", ta,
		comment, idempotent, status(409, "not PENDING"),
		resp(200, "approved", obj("success", yes, "recommendation", obj("id", str, "status", sp.RecApproved, "approvedAt", &ts, "approvedBy", str, "comment", str))))
	ops("POST", "/api/transfers/recommendations/:id/reject", "rejectRecommendation", "Transfers", "Reject a recommendation", ta,
		comment, idempotent, status(409, "not PENDING or APPROVED"),
		resp(200, "rejected", obj("success", yes, "recommendation", obj("id", str, "status", sp.RecRejected, "rejectedAt", &ts, "rejectedBy", str, "comment", str))))
	ops("POST", "/api/transfers/recommendations/:id/execute", "executeRecommendation", "Transfers", "Execute a recommendation", tx,
		comment, idempotent, status(409, "not APPROVED"),
		resp(200, "executed: the transfer it created", obj("success", yes, "recommendation", obj("id", str, "status", sp.RecExecuted, "executedAt", &ts),
			"transfer", sp.Transfer{})))
	ops("GET", "/api/inventory/transfers", "listTransfers", "Transfers", "List inventory transfers", tr,
		query(queries([]qparam{qEnum("status", enumStrings(sp.TransferStatuses), ""), qString("productMasterId", ""),
			qString("sourceLocationId", ""), qString("destLocationId", "")}, pageQuery)...),
		resp(200, "transfers", page("transfers", sp.Transfer{})))
	ops("POST", "/api/inventory/transfers", "createTransfer", "Transfers", "Create an inventory transfer", tw,
		reqBody(sp.TransferInput{}), idempotent, resp(201, "created", obj("transfer", sp.Transfer{})))
	ops("GET", "/api/inventory/transfers/bins", "transferBins", "Transfers", "Bins of a location", tr,
		query(qparam{name: "locationId", sc: schema{"type": "string"}, req: true}, qString("skuId", ""), qString("productMasterId", "alias of skuId")),
		resp(200, "bins", obj("locationId", str, "bins", arr(sp.Bin{}), "asOf", ts)))
	ops("GET", "/api/inventory/transfers/:id", "getTransfer", "Transfers", "Get an inventory transfer", tr,
		resp(200, "the transfer", obj("transfer", sp.Transfer{})))
	ops("POST", "/api/inventory/transfers/:id", "updateTransfer", "Transfers", "Update an inventory transfer (status transitions)", tw,
		reqBody(sp.TransferUpdate{}), idempotent, resp(200, "updated", obj("transfer", sp.Transfer{})), status(409, "transition not allowed"))

	// Allocation.
	ar, aw, aa := roleKey(string(sp.PermAllocationRead)), roleKey(string(sp.PermAllocationWrite)), roleKey(string(sp.PermAllocationApprove))
	order := obj("order", sp.OrderView{})
	ops("GET", "/api/inventory/atp", "listATP", "Allocation", "Available to promise", ar,
		query(queries([]qparam{qString("skuId", ""), qString("productMasterId", "alias of skuId"), qString("locationId", ""),
			qTime("date", "default today"), qNumber("quantity", "can this quantity be promised, and from when")}, pageQuery)...),
		resp(200, "ATP lines", page("atp", sp.ATPLine{})))
	ops("GET", "/api/orders", "listOrders", "Allocation", "List orders with their allocation", ar,
		query(queries([]qparam{qEnum("status", sp.OrderStatuses, ""), qEnum("allocationStatus", enumStrings(sp.AllocationStatuses), ""),
			qString("skuId", ""), qString("locationId", "")}, pageQuery)...),
		resp(200, "orders", page("orders", sp.OrderView{})))
	ops("GET", "/api/orders/:id", "getOrder", "Allocation", "Get an order", ar, resp(200, "the order", order))
	ops("POST", "/api/orders/:id/allocate", "allocateOrder", "Allocation", "Allocate an order again", aw, idempotent, resp(200, "the order", order))
	ops("POST", "/api/orders/:id/commit", "commitOrder", "Allocation", "Commit an order's reservations", aw, idempotent, resp(200, "the order", order))
	ops("GET", "/api/allocation/reservations", "listReservations", "Allocation", "The reservation ledger", ar,
		query(queries([]qparam{qString("skuId", ""), qString("locationId", ""), qString("orderId", ""),
			qEnum("status", enumStrings(sp.ReservationStatuses), "")}, pageQuery)...),
		resp(200, "reservations", page("reservations", sp.Reservation{})))
	ops("POST", "/api/allocation/runs", "allocationRun", "Allocation", "Plan (dry run) or apply a re-allocation run", aw,
		describe("Applying (dryRun false) also needs allocation.approve."), reqBody(sp.RunInput{}), idempotent,
		resp(200, "dry run: the plan", obj("run", sp.AllocationRun{})), resp(201, "applied and stored", obj("run", sp.AllocationRun{})))
	ops("GET", "/api/allocation/runs", "listAllocationRuns", "Allocation", "List stored runs", ar,
		query(pageQuery...), resp(200, "runs", page("runs", sp.AllocationRun{})))
	ops("GET", "/api/allocation/runs/:id", "getAllocationRun", "Allocation", "Get a run", ar, resp(200, "the run", obj("run", sp.AllocationRun{})))
	ops("GET", "/api/allocation/inconsistencies", "allocationInconsistencies", "Allocation", "Find ledger inconsistencies", ar,
		resp(200, "what is inconsistent", obj("inconsistencies", arr(sp.Inconsistency{}))))
	ops("POST", "/api/allocation/inconsistencies/repair", "repairAllocations", "Allocation", "Repair ledger inconsistencies", aa, idempotent,
		resp(200, "the audit entries written", obj("fixed", arr(sp.AllocationAudit{}))))
	ops("GET", "/api/allocation/audits", "listAllocationAudits", "Allocation", "Allocation audit entries", ar,
		query(pageQuery...), resp(200, "entries", page("audits", sp.AllocationAudit{})))

	// Alerts.
	alr, alw := roleKey(string(sp.PermAlertsRead)), roleKey(string(sp.PermAlertsWrite))
	ops("GET", "/api/admin/alerts/config", "getAlertConfig", "Alerts", "Get the alert configuration", alr,
		resp(200, "the configuration", obj("config", sp.AlertConfig{})))
	ops("PUT", "/api/admin/alerts/config", "putAlertConfig", "Alerts", "Replace the alert configuration", alw,
		reqBody(obj("config", sp.AlertConfigInput{})), idempotent, resp(200, "stored", obj("success", yes, "config", sp.AlertConfig{})))
	ops("GET", "/api/admin/alerts/history", "alertHistory", "Alerts", "Alert history", alr,
		query(qTime("fromDate", ""), qTime("toDate", ""), qEnum("alertType", enumStrings(sp.AlertKinds), ""),
			qEnum("severity", enumStrings(sp.Severities), ""), qBool("delivered", ""),
			qInt("page", 1, 1, 1<<30, ""), qInt("limit", sp.DefaultAlertPage, 1, sp.MaxAlertPage, "")),
		alertHistoryCSVDoc, resp(200, "alerts", sp.AlertPage{}))
	ops("POST", "/api/admin/alerts/trigger", "triggerAlert", "Alerts", "Trigger an alert manually", alw, beta,
		reqBody(sp.TriggerInput{}), idempotent, resp(201, "the alert", obj("success", yes, "alert", sp.Alert{})),
		status(429, "suppressed by the cooldown (Retry-After)"))
	ops("POST", "/api/admin/alerts/evaluate", "evaluateAlerts", "Alerts", "Evaluate the alert rules now", alw, idempotent,
		resp(200, "the evaluation", obj("success", yes, "evaluation", sp.EvalReport{})))

	// Outbound webhooks.
	wr, ww := roleKey(string(sp.PermWebhooksRead)), roleKey(string(sp.PermWebhooksWrite))
	ops("GET", "/api/webhooks/event-types", "webhookEventTypes", "Webhooks", "Event types an endpoint can subscribe to", wr,
		resp(200, "event types", obj("eventTypes", arr(str))))
	ops("GET", "/api/webhooks/endpoints", "listEndpoints", "Webhooks", "List endpoints", wr,
		resp(200, "endpoints", obj("endpoints", arr(sp.WebhookEndpoint{}))))
	ops("POST", "/api/webhooks/endpoints", "createEndpoint", "Webhooks", "Create an endpoint", ww,
		reqBody(sp.WebhookEndpointInput{}), idempotent, resp(201, "the endpoint and its signing secret (shown once)", obj("endpoint", sp.WebhookEndpoint{}, "secret", str)))
	ops("GET", "/api/webhooks/endpoints/:id", "getEndpoint", "Webhooks", "Get an endpoint", wr,
		resp(200, "the endpoint", obj("endpoint", sp.WebhookEndpoint{})))
	ops("PUT", "/api/webhooks/endpoints/:id", "updateEndpoint", "Webhooks", "Update an endpoint", ww,
		reqBody(sp.WebhookEndpointInput{}), idempotent, resp(200, "the endpoint", obj("endpoint", sp.WebhookEndpoint{})))
	ops("DELETE", "/api/webhooks/endpoints/:id", "deleteEndpoint", "Webhooks", "Delete an endpoint", ww, idempotent, noContent("deleted"))
	ops("POST", "/api/webhooks/endpoints/:id/rotate-secret", "rotateEndpointSecret", "Webhooks", "Rotate an endpoint's signing secret", ww, idempotent,
		resp(200, "the new secret (shown once)", obj("endpoint", sp.WebhookEndpoint{}, "secret", str)))
	ops("GET", "/api/webhooks/endpoints/:id/deliveries", "listDeliveries", "Webhooks", "An endpoint's delivery log", wr,
		query(qEnum("status", []string{sp.DeliveryPending, sp.DeliverySucceeded, sp.DeliveryFailed}, ""),
			qInt("page", 1, 1, 1<<30, ""), qInt("limit", sp.DefaultAlertPage, 1, sp.MaxAlertPage, "")),
		resp(200, "deliveries", sp.DeliveryPage{}))
	ops("POST", "/api/webhooks/endpoints/:id/deliveries/:deliveryId/retry", "retryDelivery", "Webhooks", "Deliver an event again", ww, idempotent,
		resp(202, "queued", obj("success", yes, "delivery", sp.Delivery{})))

	// Inbound webhooks.
	sig := auth{schemes: []string{"paymentProviderSignature"}, statuses: []int{400}}
	ops("POST", "/webhooks/payment-provider", "paymentProviderWebhook", "Inbound webhooks", "Payment-provider events (signed)", sig,
		reqBody(schema{"type": "object", "description": "a payment-provider (Stripe-compatible) event"}),
		resp(200, "applied (or a duplicate)", obj("received", yes, "result", sp.PaymentResult{})),
		status(503, "PAYMENT_PROVIDER_WEBHOOK_SECRET is not set"))
	ops("POST", "/api/webhooks/payment-provider", "paymentProviderWebhookStub", "Inbound webhooks", "Stub: not live", public,
		status(501, "always"))
	ops("POST", "/api/webhooks/retail-provider", "retailProviderWebhook", "Inbound webhooks", "Not live", public,
		status(501, "always"))
	return d
}

// paginationSchema is the page/pageSize envelope of the change history and alert history.
var paginationSchema = schema{"type": "object", "required": []string{"page", "pageSize", "total", "totalPages"},
	"properties": schema{"page": schema{"type": "integer"}, "pageSize": schema{"type": "integer"},
		"total": schema{"type": "integer"}, "totalPages": schema{"type": "integer"}}}

// forecastAuth is a forecasting endpoint: perm and the ai.forecasting.demand entitlement.
func forecastAuth(perm string) auth {
	a := roleKey(perm)
	a.note = "Needs the organization entitlement `" + sp.EntitlementForecasting + "` (403 FEATURE_NOT_ENABLED without it)."
	return a
}

func importOpName(k sp.ImportKind) string {
	switch k {
	case sp.ImportCatalog:
		return "Catalog"
	case sp.ImportInventory:
		return "Inventory"
	case sp.ImportSuppliers:
		return "Suppliers"
	case sp.ImportPurchaseOrders:
		return "PurchaseOrders"
	case sp.ImportOrders:
		return "Orders"
	case sp.ImportDemandHistory:
		return "DemandHistory"
	}
	panic("openapi: unknown import kind " + string(k))
}

// importRowTypes are the row types of each import's array.
var importRowTypes = map[sp.ImportKind]any{
	sp.ImportCatalog:        sp.CatalogRow{},
	sp.ImportInventory:      sp.InventoryRow{},
	sp.ImportSuppliers:      sp.SupplierRow{},
	sp.ImportPurchaseOrders: sp.PurchaseOrderRow{},
	sp.ImportOrders:         sp.OrderRow{},
	sp.ImportDemandHistory:  sp.DemandHistoryRow{},
}

// importBody documents an import's JSON body (and, with csvImports, its CSV form).
func importBody(k sp.ImportKind) opt {
	return func(d *apiDoc, op schema) {
		reqBody(obj(k.ArrayKey(), arr(importRowTypes[k])))(d, op)
		csvImportDoc(k)(d, op)
	}
}
