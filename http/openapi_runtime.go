package http

import (
	sp "github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/jwtauth"
)

// jwtScope is a runtime route: a JWT (jwtauth) whose scopes include scope.
func jwtScope(scope string) auth {
	return auth{schemes: []string{"loopJWT"}, permission: scope, statuses: []int{401, 403}}
}

// jwtSecurity lists the scope in the operation's security requirement (OpenAPI 3.1 allows scopes
// for any scheme type), and documents the 401/403 challenge.
func jwtSecurity(scope string) opt {
	return func(d *apiDoc, op schema) {
		op["security"] = []any{schema{"loopJWT": []string{scope}}}
		rs := op["responses"].(schema)
		rs["401"] = schema{"$ref": "#/components/responses/Unauthorized"}
		rs["403"] = schema{"$ref": "#/components/responses/Forbidden"}
	}
}

// ifMatchHeader documents the If-Match of a change to an instance, and its 412.
func ifMatchHeader(d *apiDoc, op schema) {
	header("If-Match", "the instance's version as the caller saw it (its ETag, e.g. `\"3\"`); another version is 412 PRECONDITION_FAILED", false)(d, op)
	status(412, "PRECONDITION_FAILED: the instance is at another version")(d, op)
}

// runtimeIdempotent documents the Idempotency-Key of a runtime POST and its 422.
func runtimeIdempotent(d *apiDoc, op schema) {
	header("Idempotency-Key", "printable ASCII, at most 255 characters: sending it again answers the stored response "+
		"with `Idempotent-Replayed: true` (kept 24 hours)", false)(d, op)
	status(422, "IDEMPOTENCY_KEY_REUSED: the key was used with another method, path or body")(d, op)
}

// loopRuntimeDescription describes every route of the loop runtime listener (loopruntime.go) for
// its OpenAPI document.
func loopRuntimeDescription() *apiDoc {
	d := newAPIDoc()
	str := ""
	instance := sp.LoopInstance{}
	reason := obj("reason", maybe(str))
	op := func(method, pattern, id, summary, scope string, opts ...opt) {
		all := append([]opt{jwtSecurity(scope)}, opts...)
		if method == "POST" {
			all = append(all, runtimeIdempotent)
		}
		d.operation(method, pattern, id, "Loop runtime", summary, jwtScope(scope), all...)
	}
	filter := []qparam{qString("loop", "the loop, `<scope>/<name>`"), qEnum("status", enumStrings(sp.LoopInstanceStatuses), ""),
		qString("state", "the manifest's state"), qString("businessKey", ""), qTime("createdAfter", ""), qTime("createdBefore", "")}
	lifecycle := func(action, id, summary, scope, note string, required bool) {
		body := reqBody(obj("reason", str))
		if !required {
			body = optionalBody(reason)
		}
		op("POST", "/v1/instances/:id/"+action, id, summary, scope, body, ifMatchHeader, describe(note),
			resp(200, "the instance (ETag: its version)", instance), status(409, "the instance is not open"))
	}

	d.operation("GET", "/health", "health", "Operations", "Liveness", public,
		resp(200, "alive", obj("status", schema{"type": "string", "const": "ok"})))
	d.operation("GET", "/openapi.json", "openapi", "Operations", "This OpenAPI document", public,
		resp(200, "the OpenAPI 3.1 document", schema{"type": "object"}))
	op("POST", "/v1/instances", "startInstance", "Start an instance of a loop", jwtauth.ScopeWrite,
		reqBody(obj("loop", str, "version", maybe(str), "range", maybe(str), "digest", maybe(str), "businessKey", maybe(str),
			"input", maybe(schema{"type": "object"}), "onConflict", maybe(schema{"type": "string", "enum": []string{sp.LoopOnConflictFail, sp.LoopOnConflictUseExisting}}))),
		resp(201, "started (Location, ETag)", instance), resp(200, "the open instance of the business key (onConflict USE_EXISTING)", instance),
		status(409, "INSTANCE_EXISTS (onConflict FAIL, the default), or the planning data the input names is closed"))
	op("GET", "/v1/instances", "listInstances", "List instances, newest first", jwtauth.ScopeRead,
		query(queries(filter, pageQuery)...), resp(200, "instances", page("instances", instance)))
	op("POST", "/v1/instances/cancel", "bulkCancelInstances", "Cancel the open instances a filter selects", jwtauth.ScopeAdmin,
		reqBody(obj("filter", obj("loop", maybe(str), "status", maybe(str), "state", maybe(str), "businessKey", maybe(str),
			"createdAfter", maybe(str), "createdBefore", maybe(str)), "reason", maybe(str), "dryRun", maybe(false), "expectedCount", maybe(0))),
		resp(200, "the count (a dry run changes nothing)", sp.LoopBulkCancelResult{}),
		status(409, "COUNT_CHANGED: expectedCount no longer holds"))
	op("GET", "/v1/instances/:id", "getInstance", "An instance (ETag: its version)", jwtauth.ScopeRead, resp(200, "the instance", instance))
	op("POST", "/v1/instances/:id/transitions", "fireTransition", "Fire a transition", jwtauth.ScopeWrite,
		reqBody(obj("name", str, "payload", maybe(schema{}))), ifMatchHeader,
		describe("403 when no role the token's scopes grant may fire the transition (loops:write is PLANNER; loops:admin also ADMIN and MANAGER)."),
		resp(200, "the instance", instance),
		status(409, "the transition cannot fire from the state (`details.name` lists the allowed ones) or the instance is not RUNNING"))
	lifecycle("cancel", "cancelInstance", "Cancel gracefully (the loop's own cancel transition first)", jwtauth.ScopeWrite, "The instance ends CANCELED.", true)
	lifecycle("terminate", "terminateInstance", "Terminate in the current state", jwtauth.ScopeAdmin, "The instance ends TERMINATED; nothing else runs.", true)
	lifecycle("suspend", "suspendInstance", "Suspend (no transitions, the timeout paused)", jwtauth.ScopeWrite, "The instance is SUSPENDED.", false)
	lifecycle("resume", "resumeInstance", "Resume (the timeout's remaining time armed again)", jwtauth.ScopeWrite, "The instance is RUNNING again.", false)
	op("GET", "/v1/instances/:id/events", "instanceEvents", "An instance's audit events", jwtauth.ScopeRead,
		query(qInt("afterSeq", 0, 0, 1<<53, "events after this seq"), qInt("limit", sp.DefaultLoopEventsLimit, 1, sp.MaxLoopEventsPerList, "")),
		resp(200, "events", obj("events", arr(sp.LoopEvent{}), "nextAfterSeq", 0)))
	op("GET", "/v1/instances/:id/audit/verify", "verifyInstanceAudit", "Recompute an instance's hash chain", jwtauth.ScopeRead,
		resp(200, "the verification", sp.LoopAuditVerification{}))
	return d
}

// loopRuntimeSecuritySchemes is the runtime's credential: a signed JWT.
var loopRuntimeSecuritySchemes = schema{
	"loopJWT": schema{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
		"description": "A signed JWT (RS256, ES256 or EdDSA) of a trusted issuer: `aud` the runtime's audience, `org` the organization's id or slug, " +
			"`scope` space-separated among `" + jwtauth.ScopeRead + "`, `" + jwtauth.ScopeWrite + "`, `" + jwtauth.ScopeAdmin + "` " +
			"(the scopes an operation needs are in its security requirement and `x-permission`); a POST's `jti` is single-use (docs/loop-runtime-api.md#authentication)."},
}

// buildLoopRuntimeOpenAPI renders the loop runtime's OpenAPI document.
func buildLoopRuntimeOpenAPI() ([]byte, *apiDoc) {
	d := loopRuntimeDescription()
	info := schema{"title": "Supplyplan loop runtime", "version": "1",
		"description": "Instances of published loops: their transitions, cancellations, timeouts and hash-chained audit (docs/loop-runtime-api.md). " +
			"Every answer carries `X-Request-Id`."}
	challenge := schema{"WWW-Authenticate": schema{"description": "`Bearer realm=\"supplyplan-loops\", error=\"...\", error_description=\"...\"`",
		"schema": schema{"type": "string"}}}
	errContent := schema{ctJSON: schema{"schema": schema{"$ref": "#/components/schemas/Error"}}}
	return d.document(info, []any{schema{"url": "http://127.0.0.1:3012", "description": "default --loop-runtime-addr"}},
		loopRuntimeSecuritySchemes, []any{schema{"name": "Operations"}, schema{"name": "Loop runtime"}},
		schema{
			"Unauthorized": schema{"description": "invalid_request or invalid_token (missing, malformed, expired, wrong issuer or audience, unknown key, replayed jti, unknown organization): " +
				"the error shape with `reason` the OAuth error code", "headers": challenge, "content": errContent},
			"Forbidden": schema{"description": "insufficient_scope, or no role of the token may fire the transition", "headers": challenge, "content": errContent},
		}), d
}
