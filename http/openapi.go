package http

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/valyala/fasthttp"
)

// The OpenAPI 3.1 documents of the API, the loop catalog and the loop runtime. They are generated from the Go
// descriptions next to the routers (openapi_api.go, openapi_loops.go, openapi_runtime.go) with the schemas derived
// from the handlers' types (openapi_schema.go), and committed: `go test ./http -run
// TestOpenAPIDocumentsUpToDate -update-openapi` writes them, and the test fails while a committed
// document differs from its description. Tests also check that every route of a router is in its
// document and the other way round.
var (
	//go:embed openapi/api.json
	apiOpenAPI []byte
	//go:embed openapi/loop-catalog.json
	loopCatalogOpenAPI []byte
	//go:embed openapi/loop-runtime.json
	loopRuntimeOpenAPI []byte
)

// OpenAPIDocument returns the API's OpenAPI document (GET /openapi.json).
func OpenAPIDocument() []byte { return apiOpenAPI }

// LoopCatalogOpenAPIDocument returns the loop catalog's OpenAPI document.
func LoopCatalogOpenAPIDocument() []byte { return loopCatalogOpenAPI }

// LoopRuntimeOpenAPIDocument returns the loop runtime's OpenAPI document.
func LoopRuntimeOpenAPIDocument() []byte { return loopRuntimeOpenAPI }

func serveOpenAPI(doc []byte) handlerFunc {
	return func(r *Request) error {
		r.Ctx.SetStatusCode(fasthttp.StatusOK)
		r.Ctx.SetContentType("application/json")
		r.Ctx.Response.Header.Set("Cache-Control", "public, max-age=300")
		r.Ctx.SetBody(doc)
		return nil
	}
}

// apiDoc builds one OpenAPI document from operation descriptions.
type apiDoc struct {
	ss     *schemaSet
	paths  map[string]schema
	routes []string // "METHOD /router/:pattern" of every operation, in order
	ids    map[string]bool
}

func newAPIDoc() *apiDoc {
	return &apiDoc{ss: newSchemaSet(), paths: map[string]schema{}, ids: map[string]bool{}}
}

// auth is how an operation authenticates its caller.
type auth struct {
	schemes    []string // alternatives: any one of them
	permission string
	note       string
	statuses   []int // the error statuses authentication adds
}

var (
	public = auth{}
	// platformKey is the super-administrator bearer key.
	platformKey = auth{schemes: []string{"platformKey"}, statuses: []int{401, 403}}
)

// roleKey is a tenant endpoint: an organization's bearer key whose role has perm.
func roleKey(perm string) auth {
	return auth{schemes: []string{"bearerKey"}, permission: perm, statuses: []int{401, 403}}
}

// importKeyOf is an import endpoint: an import key (x-api-key) with one of scopes.
func importKeyOf(scopes ...string) auth {
	return auth{schemes: []string{"importKey"}, permission: strings.Join(scopes, " or "), statuses: []int{401, 403}}
}

// opt configures an operation.
type opt func(d *apiDoc, op schema)

// operation adds the route method pattern (the router's syntax, ":name" parameters).
func (d *apiDoc) operation(method, pattern, id, tag, summary string, a auth, opts ...opt) {
	if d.ids[id] {
		panic("openapi: duplicate operationId " + id)
	}
	d.ids[id] = true
	d.routes = append(d.routes, method+" "+pattern)
	path, params := openAPIPath(pattern)
	op := schema{"operationId": id, "summary": summary, "tags": []string{tag}, "x-stability": "stable"}
	var ps []any
	for _, p := range params {
		ps = append(ps, schema{"name": p, "in": "path", "required": true, "schema": schema{"type": "string"}})
	}
	if len(ps) > 0 {
		op["parameters"] = ps
	}
	responses := schema{"default": errorResponseRef}
	op["responses"] = responses
	if len(a.schemes) > 0 {
		var sec []any
		for _, s := range a.schemes {
			sec = append(sec, schema{s: []string{}})
		}
		op["security"] = sec
		for _, st := range a.statuses {
			responses[fmt.Sprint(st)] = errorResponseRef
		}
	} else {
		op["security"] = []any{}
	}
	if a.permission != "" {
		op["x-permission"] = a.permission
	}
	if a.note != "" {
		op["description"] = a.note
	}
	if len(params) > 0 {
		responses["404"] = errorResponseRef
	}
	for _, o := range opts {
		o(d, op)
	}
	if _, ok := d.paths[path]; !ok {
		d.paths[path] = schema{}
	}
	m := strings.ToLower(method)
	if _, dup := d.paths[path][m]; dup {
		panic("openapi: duplicate route " + method + " " + pattern)
	}
	d.paths[path][m] = op
}

var errorResponseRef = schema{"$ref": "#/components/responses/Error"}

// openAPIPath turns "/a/:id/b" into "/a/{id}/b" and its parameter names.
func openAPIPath(pattern string) (string, []string) {
	segs := strings.Split(pattern, "/")
	var params []string
	for i, s := range segs {
		if strings.HasPrefix(s, ":") {
			params = append(params, s[1:])
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/"), params
}

// sch turns a description value into a schema: a schema as is, else the schema of its Go type.
func (d *apiDoc) sch(v any) schema {
	switch x := v.(type) {
	case schema:
		return x
	case optional:
		return d.sch(x.v)
	case objSpec:
		return d.object(x)
	case arrayOf:
		return schema{"type": "array", "items": d.sch(x.v)}
	}
	return d.ss.of(v)
}

// optional marks a property of obj as optional.
type optional struct{ v any }

func maybe(v any) optional { return optional{v} }

// objSpec is an inline object: name, value pairs (values as for sch; optional ones wrapped).
type objSpec []any

func obj(kv ...any) objSpec { return objSpec(kv) }

func (d *apiDoc) object(kv objSpec) schema {
	props := schema{}
	var required []string
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		props[name] = d.sch(kv[i+1])
		if _, ok := kv[i+1].(optional); !ok {
			required = append(required, name)
		}
	}
	out := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

// arrayOf is an array of v's schema.
type arrayOf struct{ v any }

func arr(v any) arrayOf { return arrayOf{v} }

// page is the list envelope {key: [item], total, limit, offset}.
func page(key string, item any) objSpec {
	return obj(key, arr(item), "total", 0, "limit", 0, "offset", 0)
}

const (
	ctJSON = "application/json"
	ctCSV  = "text/csv"
)

// resp documents a JSON response with the schema of v.
func resp(status int, desc string, v any) opt {
	return func(d *apiDoc, op schema) {
		addContent(op, status, desc, ctJSON, schema{"schema": d.sch(v)})
	}
}

// addContent adds a media type to the response of status (created with desc when new).
func addContent(op schema, status int, desc, ct string, media schema) {
	rs := op["responses"].(schema)
	r, ok := rs[fmt.Sprint(status)].(schema)
	if !ok || r["$ref"] != nil {
		r = schema{"description": desc, "content": schema{}}
		rs[fmt.Sprint(status)] = r
	}
	r["content"].(schema)[ct] = media
}

// csvDownload documents the text/csv form of a 200 response (Accept: text/csv): a header row,
// then one row per item, with the same filters as the JSON form.
func csvDownload(columns string) opt {
	return func(d *apiDoc, op schema) {
		addContent(op, 200, "the result", ctCSV, schema{"schema": schema{"type": "string"},
			"example": columns + "\n"})
		describe("With `Accept: text/csv` the result is streamed as CSV (same filters; the header row names the columns: "+
			"`"+columns+"`; docs/api.md#csv).")(d, op)
	}
}

// noContent documents a 204.
func noContent(desc string) opt {
	return func(d *apiDoc, op schema) {
		op["responses"].(schema)["204"] = schema{"description": desc}
	}
}

// status documents a response without a body of its own shape (the error renderer's, or none).
func status(code int, desc string) opt {
	return func(d *apiDoc, op schema) {
		op["responses"].(schema)[fmt.Sprint(code)] = schema{"description": desc,
			"content": schema{ctJSON: schema{"schema": schema{"$ref": "#/components/schemas/Error"}}}}
	}
}

// body documents the JSON request body (required unless optionalBody).
func reqBody(v any) opt {
	return func(d *apiDoc, op schema) {
		op["requestBody"] = schema{"required": true, "content": schema{ctJSON: schema{"schema": d.sch(v)}}}
		op["responses"].(schema)["400"] = errorResponseRef
		op["responses"].(schema)["413"] = errorResponseRef
	}
}

// optionalBody documents a request body that may be left out.
func optionalBody(v any) opt {
	return func(d *apiDoc, op schema) {
		reqBody(v)(d, op)
		op["requestBody"].(schema)["required"] = false
	}
}

// qparam is a query parameter.
type qparam struct {
	name string
	sc   schema
	desc string
	req  bool
}

func qString(name, desc string) qparam {
	return qparam{name: name, sc: schema{"type": "string"}, desc: desc}
}
func qBool(name, desc string) qparam {
	return qparam{name: name, sc: schema{"type": "boolean"}, desc: desc}
}
func qInt(name string, def, min, max int, desc string) qparam {
	return qparam{name: name, sc: schema{"type": "integer", "default": def, "minimum": min, "maximum": max}, desc: desc}
}
func qNumber(name, desc string) qparam {
	return qparam{name: name, sc: schema{"type": "number"}, desc: desc}
}
func qTime(name, desc string) qparam {
	return qparam{name: name, sc: schema{"type": "string", "description": "an ISO 8601 date or date-time"}, desc: desc}
}
func qEnum(name string, vals []string, desc string) qparam {
	return qparam{name: name, sc: schema{"type": "string", "enum": vals}, desc: desc}
}

// pageQuery are limit (default 50, max 100) and offset.
var pageQuery = []qparam{qInt("limit", 50, 1, 100, "page size"), qInt("offset", 0, 0, 1<<31-1, "items to skip")}

// query documents query parameters.
func query(ps ...qparam) opt {
	return func(d *apiDoc, op schema) {
		list, _ := op["parameters"].([]any)
		for _, p := range ps {
			e := schema{"name": p.name, "in": "query", "schema": p.sc}
			if p.desc != "" {
				e["description"] = p.desc
			}
			if p.req {
				e["required"] = true
			}
			list = append(list, e)
		}
		op["parameters"] = list
		op["responses"].(schema)["400"] = errorResponseRef
	}
}

func queries(groups ...[]qparam) []qparam {
	var out []qparam
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// header documents a request header.
func header(name, desc string, required bool) opt {
	return func(d *apiDoc, op schema) {
		list, _ := op["parameters"].([]any)
		e := schema{"name": name, "in": "header", "schema": schema{"type": "string"}, "description": desc}
		if required {
			e["required"] = true
		}
		op["parameters"] = append(list, e)
	}
}

// beta labels the operation beta (the spec's stability label).
func beta(d *apiDoc, op schema) { op["x-stability"] = "beta" }

// describe sets the operation's description.
func describe(text string) opt {
	return func(d *apiDoc, op schema) {
		if prev, ok := op["description"].(string); ok {
			text = prev + "\n\n" + text
		}
		op["description"] = text
	}
}

// idempotent documents the Idempotency-Key header of a write.
func idempotent(d *apiDoc, op schema) {
	header("Idempotency-Key", "retries with the same key and body get the first response (docs/api.md#idempotency-keys)", false)(d, op)
}

// document renders the OpenAPI document.
func (d *apiDoc) document(info schema, servers []any, securitySchemes schema, tags []any, moreResponses ...schema) []byte {
	d.ss.of(errorBody{})
	responses := schema{"Error": schema{
		"description": "An error: `{\"error\", \"code\", \"details\"?}` (docs/api.md#errors).",
		"content":     schema{ctJSON: schema{"schema": schema{"$ref": "#/components/schemas/Error"}}},
	}}
	for _, m := range moreResponses {
		for k, v := range m {
			responses[k] = v
		}
	}
	doc := schema{
		"openapi":           "3.1.0",
		"info":              info,
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"servers":           servers,
		"tags":              tags,
		"paths":             d.paths,
		"components": schema{
			"schemas":         d.ss.components,
			"securitySchemes": securitySchemes,
			"responses":       responses,
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// sortedRoutes returns the documented routes, sorted.
func (d *apiDoc) sortedRoutes() []string {
	out := append([]string(nil), d.routes...)
	sort.Strings(out)
	return out
}
