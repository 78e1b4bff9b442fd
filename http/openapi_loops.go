package http

import (
	sp "github.com/supplyplan/supplyplan"
)

// loopCatalogDescription describes every route of the loop catalog listener (loopcatalog.go)
// for its OpenAPI document.
func loopCatalogDescription() *apiDoc {
	d := newAPIDoc()
	ops := d.operation
	str := ""
	caller := auth{schemes: []string{"bearerKey", "platformKey"}, statuses: []int{401, 403},
		note: "An organization's role key (its loops and the global ones; ADMIN writes) or the platform key (the global `supplyplan/...` loops)."}
	write := auth{schemes: caller.schemes, statuses: caller.statuses, permission: "ADMIN of the scope's organization, or the platform key for the global scope",
		note: caller.note}
	tags := schema{"type": "object", "additionalProperties": schema{"type": "string"}, "description": "dist-tag → version"}
	version := sp.LoopVersion{}

	ops("GET", "/health", "health", "Operations", "Liveness", public,
		resp(200, "alive", obj("status", schema{"type": "string", "const": "ok"})))
	ops("GET", "/openapi.json", "openapi", "Operations", "This OpenAPI document", public,
		resp(200, "the OpenAPI 3.1 document", schema{"type": "object"}))
	ops("GET", "/.well-known/loop-catalog/keys", "loopKeys", "Loop catalog", "The catalog's public signing keys (JWKS)", public,
		resp(200, "the key set", sp.JWKS{}))
	ops("GET", "/v1/loops", "listLoops", "Loop catalog", "List the loops the caller reads", caller,
		query(queries([]qparam{qEnum("domain", enumStrings(sp.LoopDomains), ""), qString("text", "matches name, description, keywords")}, pageQuery)...),
		resp(200, "loops", page("loops", sp.LoopSummary{})))
	ops("GET", "/v1/loops/:scope/:name", "getLoop", "Loop catalog", "A loop with its versions and dist-tags", caller,
		resp(200, "the loop", sp.LoopDocument{}))
	ops("GET", "/v1/loops/:scope/:name/resolve", "resolveLoop", "Loop catalog", "Resolve a dist-tag or semver range to a version", caller,
		query(qString("range", "a dist-tag or a semver range (default latest)"), qBool("includePrerelease", "")),
		resp(200, "the version chosen", sp.LoopResolution{}))
	ops("GET", "/v1/loops/:scope/:name/audit", "loopAudit", "Loop catalog", "A loop's audit chain", caller,
		query(pageQuery...), resp(200, "entries", page("entries", sp.LoopAuditEntry{})))
	ops("GET", "/v1/loops/:scope/:name/dist-tags", "distTags", "Loop catalog", "A loop's dist-tags", caller, resp(200, "dist-tags", tags))
	ops("PUT", "/v1/loops/:scope/:name/dist-tags/:tag", "setDistTag", "Loop catalog", "Point a dist-tag at a version", write,
		reqBody(obj("version", str)), resp(200, "dist-tags", tags))
	ops("DELETE", "/v1/loops/:scope/:name/dist-tags/:tag", "removeDistTag", "Loop catalog", "Remove a dist-tag", write, resp(200, "dist-tags", tags))
	ops("PUT", "/v1/loops/:scope/:name/versions/:version", "publishLoop", "Loop catalog", "Publish a version (create-only)", write,
		reqBody(schema{"type": "object", "description": "the loop manifest (docs/loops.md)"}),
		resp(201, "published", version), resp(200, "the same content was published already", version),
		status(409, "VERSION_EXISTS (other content) or BREAKING_CHANGE"))
	ops("GET", "/v1/loops/:scope/:name/versions/:version", "getLoopVersion", "Loop catalog", "A version", caller, resp(200, "the version", version))
	ops("DELETE", "/v1/loops/:scope/:name/versions/:version", "removeLoopVersion", "Loop catalog", "Remove a version (within the delete window, unreferenced)", write,
		resp(200, "the removed version", version), status(409, "outside the window or referenced"))
	ops("POST", "/v1/loops/:scope/:name/versions/:version/deprecate", "deprecateLoopVersion", "Loop catalog", "Deprecate a version (an empty message un-deprecates)", write,
		reqBody(obj("message", str)), resp(200, "the version", version))
	ops("POST", "/v1/loops/:scope/:name/versions/:version/yank", "yankLoopVersion", "Loop catalog", "Yank a version", write,
		optionalBody(obj("reason", maybe(str))), resp(200, "the version", version))
	ops("POST", "/v1/loops/:scope/:name/versions/:version/unyank", "unyankLoopVersion", "Loop catalog", "Unyank a version", write,
		optionalBody(schema{"type": "object"}), resp(200, "the version", version))
	ops("GET", "/v1/blobs/:digest", "loopBlob", "Loop catalog", "A canonical manifest by its digest", caller,
		header("If-None-Match", "the blob's ETag: 304 when it matches", false),
		resp(200, "the canonical manifest", schema{"type": "object"}), noBody(304, "not modified"))
	return d
}

// noBody documents a response without a body.
func noBody(code int, desc string) opt {
	return func(d *apiDoc, op schema) {
		op["responses"].(schema)[itoa(code)] = schema{"description": desc}
	}
}

// securitySchemes are the credentials of the API and the loop catalog.
var securitySchemes = schema{
	"bearerKey": schema{"type": "http", "scheme": "bearer", "bearerFormat": "sp_<kind>_<token>",
		"description": "An organization's API key with a role (ADMIN, MANAGER, PLANNER, VIEWER): `Authorization: Bearer <key>`."},
	"platformKey": schema{"type": "http", "scheme": "bearer", "bearerFormat": "sp_<kind>_<token>",
		"description": "The platform (super-administrator) key: `Authorization: Bearer <key>`."},
	"importKey": schema{"type": "apiKey", "in": "header", "name": "x-api-key",
		"description": "An organization's import key with scope import:read or import:write."},
	"paymentProviderSignature": schema{"type": "apiKey", "in": "header", "name": "payment-provider-signature",
		"description": "`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \"<t>.<raw body>\")>` (docs/alerts.md)."},
}

// buildAPIOpenAPI renders the API's OpenAPI document.
func buildAPIOpenAPI() ([]byte, *apiDoc) {
	d := apiDescription()
	info := schema{"title": "Supplyplan API", "version": "1",
		"description": "The REST API of Supplyplan, a multi-tenant supply planning service (docs/api.md). " +
			"Each operation carries the spec's stability label in `x-stability` and, for tenant endpoints, the permission it needs in `x-permission`."}
	tagList := []any{}
	for _, t := range []string{"Operations", "Platform", "Forecasting", "Import", "Catalog", "Transfers", "Allocation", "Alerts", "Webhooks", "Inbound webhooks"} {
		tagList = append(tagList, schema{"name": t})
	}
	return d.document(info, []any{schema{"url": "http://127.0.0.1:8080", "description": "default --api-addr"}}, securitySchemes, tagList), d
}

// buildLoopCatalogOpenAPI renders the loop catalog's OpenAPI document.
func buildLoopCatalogOpenAPI() ([]byte, *apiDoc) {
	d := loopCatalogDescription()
	info := schema{"title": "Supplyplan loop catalog", "version": "1",
		"description": "Published loops (workflow definitions), their versions, dist-tags, lifecycle, blobs and keys (docs/loop-catalog-api.md)."}
	return d.document(info, []any{schema{"url": "http://127.0.0.1:3011", "description": "default --loop-catalog-addr"}},
		schema{"bearerKey": securitySchemes["bearerKey"], "platformKey": securitySchemes["platformKey"]},
		[]any{schema{"name": "Operations"}, schema{"name": "Loop catalog"}}), d
}
