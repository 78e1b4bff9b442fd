package http

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/openapitest"
	"github.com/valyala/fasthttp"
)

var updateOpenAPI = flag.Bool("update-openapi", false, "write http/openapi/*.json from their Go descriptions")

// TestOpenAPIDocumentsUpToDate checks that the committed (embedded, served) documents are what the
// Go descriptions generate; -update-openapi writes them.
func TestOpenAPIDocumentsUpToDate(t *testing.T) {
	for _, tc := range []struct {
		file     string
		build    func() ([]byte, *apiDoc)
		embedded []byte
	}{
		{"openapi/api.json", buildAPIOpenAPI, apiOpenAPI},
		{"openapi/loop-catalog.json", buildLoopCatalogOpenAPI, loopCatalogOpenAPI},
		{"openapi/loop-runtime.json", buildLoopRuntimeOpenAPI, loopRuntimeOpenAPI},
	} {
		got, _ := tc.build()
		if *updateOpenAPI {
			if err := os.WriteFile(tc.file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !bytes.Equal(got, tc.embedded) {
			t.Errorf("http/%s differs from its Go description: run go test ./http -run TestOpenAPIDocumentsUpToDate -update-openapi", tc.file)
		}
	}
}

// routerRoutes lists a router's routes as "METHOD /path/{param}", sorted.
func routerRoutes(rt *router) []string {
	var out []string
	for _, rs := range rt.byLen {
		for _, r := range rs {
			segs := make([]string, len(r.segs))
			for i, s := range r.segs {
				if strings.HasPrefix(s, ":") {
					s = "{" + s[1:] + "}"
				}
				segs[i] = s
			}
			out = append(out, r.method+" /"+strings.Join(segs, "/"))
		}
	}
	sort.Strings(out)
	return out
}

type mcpStub struct{ supplyplan.MCPPlatformService }
type gatewayStub struct{ supplyplan.GatewayKeyStore }

// TestOpenAPIRoutesMatchRouter checks that every route of each router is in its document and
// every operation of the document is a route.
func TestOpenAPIRoutesMatchRouter(t *testing.T) {
	api := NewServer(Config{}, Services{MCP: mcpStub{}, Gateway: gatewayStub{}})
	catalog := NewLoopCatalogServer(LoopCatalogConfig{}, LoopCatalogServices{})
	runtime := NewLoopRuntimeServer(LoopRuntimeConfig{}, LoopRuntimeServices{})
	for _, tc := range []struct {
		name string
		rt   *router
		doc  []byte
	}{
		{"api", api.router, apiOpenAPI},
		{"loop catalog", catalog.router, loopCatalogOpenAPI},
		{"loop runtime", runtime.router, loopRuntimeOpenAPI},
	} {
		d, err := openapitest.Parse(tc.doc)
		if err != nil {
			t.Fatal(err)
		}
		routes, documented := routerRoutes(tc.rt), d.Routes()
		for _, r := range routes {
			if !slices.Contains(documented, r) {
				t.Errorf("%s: route %s is not in the OpenAPI document", tc.name, r)
			}
		}
		for _, r := range documented {
			if !slices.Contains(routes, r) {
				t.Errorf("%s: the OpenAPI document has %s, which the router does not serve", tc.name, r)
			}
		}
		if len(routes) < 10 {
			t.Errorf("%s: only %d routes found", tc.name, len(routes))
		}
	}
}

// TestOpenAPIDocumentsValidate checks the documents against the OpenAPI 3.1 schema, compiles
// every schema in them as JSON Schema 2020-12, and checks the labels the spec asks for.
func TestOpenAPIDocumentsValidate(t *testing.T) {
	for name, doc := range map[string][]byte{"api": apiOpenAPI, "loop catalog": loopCatalogOpenAPI, "loop runtime": loopRuntimeOpenAPI} {
		if err := openapitest.ValidateDocument(doc); err != nil {
			t.Errorf("%s: not a valid OpenAPI 3.1 document: %v", name, err)
		}
		d, err := openapitest.Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.CompileAll(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	d, _ := openapitest.Parse(apiOpenAPI)
	for _, r := range d.Routes() {
		method, path, _ := strings.Cut(r, " ")
		_, op, _ := d.Operation(method, path)
		want := "stable"
		if r == "POST /api/admin/alerts/trigger" {
			want = "beta"
		}
		if got := op["x-stability"]; got != want {
			t.Errorf("%s: x-stability %v, want %s", r, got, want)
		}
	}
}

// TestOpenAPIRejectsWrongBodies checks that the schemas do constrain responses: a body missing
// a required field, or with a wrong type, fails.
func TestOpenAPIRejectsWrongBodies(t *testing.T) {
	d, err := openapitest.Parse(apiOpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	ok := `{"status":"ok"}`
	if err := d.ValidateResponse("GET", "/health", 200, "application/json", []byte(ok)); err != nil {
		t.Errorf("valid health body: %v", err)
	}
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/health", 200, `{"status":"down"}`},
		{"GET", "/api/forecast/scenarios", 200, `{"scenarios":[{"id":1}]}`},
		{"GET", "/api/forecast/scenarios", 200, `{}`},
		{"GET", "/api/forecast/scenarios/abc", 404, `{"error":"Not found"}`}, // no code
		{"GET", "/api/products", 200, `{"products":[],"total":"1","limit":50,"offset":0}`},
	} {
		if err := d.ValidateResponse(tc.method, tc.path, tc.status, "application/json", []byte(tc.body)); err == nil {
			t.Errorf("%s %s %d %s: validated", tc.method, tc.path, tc.status, tc.body)
		}
	}
	if err := d.ValidateResponse("GET", "/api/nope", 200, "application/json", []byte(ok)); err == nil {
		t.Error("an undocumented path validated")
	}
}

// TestOpenAPIValidationCatchesErrors checks that the meta-schema check can fail: a document
// without info, a path parameter not marked required, and a response without a description.
func TestOpenAPIValidationCatchesErrors(t *testing.T) {
	for name, edit := range map[string]func(string) string{
		"no info": func(s string) string { return strings.Replace(s, `"info":`, `"infox":`, 1) },
		"optional path": func(s string) string {
			return strings.Replace(s, `"name": "id",`+"\n"+`            "required": true`, `"name": "id",`+"\n"+`            "required": false`, 1)
		},
		"bad status key":   func(s string) string { return strings.Replace(s, `"200": {`, `"2000": {`, 1) },
		"openapi 3.0":      func(s string) string { return strings.Replace(s, `"openapi": "3.1.0"`, `"openapi": "3.0.3"`, 1) },
		"security not arr": func(s string) string { return strings.Replace(s, `"security": [`, `"security": {"x":[]}, "y": [`, 1) },
	} {
		bad := edit(string(apiOpenAPI))
		if bad == string(apiOpenAPI) {
			t.Errorf("%s: the edit changed nothing", name)
			continue
		}
		if err := openapitest.ValidateDocument([]byte(bad)); err == nil {
			t.Errorf("%s: validated", name)
		}
	}
}

type schemaProbe struct {
	Name     string              `json:"name"`
	Note     string              `json:"note,omitempty"`
	Tags     []string            `json:"tags"`
	Opt      *int                `json:"opt,omitempty"`
	Ptr      *float64            `json:"ptr"`
	At       time.Time           `json:"at"`
	Qty      supplyplan.Quantity `json:"qty"`
	Status   supplyplan.Priority `json:"status"`
	Skip     string              `json:"-"`
	internal int
	schemaInner
}

type schemaInner struct {
	Inner bool `json:"inner"`
}

type selfMarshaled struct{}

func (selfMarshaled) MarshalJSON() ([]byte, error) { return []byte(`1`), nil }

// TestSchemaDerivation checks how schemas are derived from Go types: as encoding/json renders them.
func TestSchemaDerivation(t *testing.T) {
	ss := newSchemaSet()
	if got := ss.of(schemaProbe{}); got["$ref"] != "#/components/schemas/schemaProbe" {
		t.Fatalf("ref = %v", got)
	}
	c := ss.components["schemaProbe"]
	b, _ := json.Marshal(c)
	want := `{"properties":{"at":{"format":"date-time","type":"string"},"inner":{"type":"boolean"},"name":{"type":"string"},` +
		`"note":{"type":"string"},"opt":{"type":"integer"},"ptr":{"type":["number","null"]},` +
		`"qty":{"description":"A quantity, rounded to 2 decimals.","type":"number"},` +
		`"status":{"enum":["URGENT","HIGH","MEDIUM","LOW"],"type":"string"},"tags":{"items":{"type":"string"},"type":["array","null"]}},` +
		`"required":["name","tags","ptr","at","qty","status","inner"],"type":"object"}`
	if string(b) != want {
		t.Errorf("schema\n got %s\nwant %s", b, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("a type with its own MarshalJSON got a schema from its fields")
		}
	}()
	ss.of(selfMarshaled{})
}

// TestLoopRuntimeOpenAPI checks the runtime's document: served without a token, every /v1
// operation secured by the JWT scheme with one of the runtime's scopes (and its 401 challenge),
// the writes with If-Match / Idempotency-Key, and a 401 body validating.
func TestLoopRuntimeOpenAPI(t *testing.T) {
	s := NewLoopRuntimeServer(LoopRuntimeConfig{}, LoopRuntimeServices{})
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI("/openapi.json")
	s.Handler()(&ctx)
	if ctx.Response.StatusCode() != 200 || !bytes.Equal(ctx.Response.Body(), loopRuntimeOpenAPI) {
		t.Fatalf("GET /openapi.json = %d", ctx.Response.StatusCode())
	}
	d, err := openapitest.Parse(loopRuntimeOpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	scopes := []string{"loops:read", "loops:write", "loops:admin"}
	for _, r := range d.Routes() {
		method, path, _ := strings.Cut(r, " ")
		_, op, _ := d.Operation(method, path)
		if !strings.HasPrefix(path, "/v1/") {
			if sec, _ := op["security"].([]any); len(sec) != 0 {
				t.Errorf("%s: public route with security %v", r, sec)
			}
			continue
		}
		sec, _ := op["security"].([]any)
		req, _ := sec[0].(map[string]any)
		got, _ := req["loopJWT"].([]any)
		if len(sec) != 1 || len(got) != 1 || !slices.Contains(scopes, got[0].(string)) {
			t.Errorf("%s: security %v, want loopJWT with one of %v", r, sec, scopes)
		}
		rs := op["responses"].(map[string]any)
		if ref, _ := rs["401"].(map[string]any)["$ref"].(string); ref != "#/components/responses/Unauthorized" {
			t.Errorf("%s: 401 is %v", r, rs["401"])
		}
		if method == "POST" && rs["422"] == nil {
			t.Errorf("%s: no 422 (Idempotency-Key reuse)", r)
		}
		if strings.HasSuffix(path, "/transitions") && rs["412"] == nil {
			t.Errorf("%s: no 412 (If-Match)", r)
		}
	}
	ctx = fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI("/v1/instances")
	s.Handler()(&ctx)
	if ctx.Response.StatusCode() != 401 || len(ctx.Response.Header.Peek("WWW-Authenticate")) == 0 {
		t.Fatalf("no token = %d", ctx.Response.StatusCode())
	}
	if err := d.ValidateResponse("GET", "/v1/instances", 401, string(ctx.Response.Header.ContentType()), ctx.Response.Body()); err != nil {
		t.Errorf("401: %v", err)
	}
	if err := d.ValidateResponse("GET", "/v1/instances", 200, "application/json", []byte(`{"instances":[{"id":1}],"total":0,"limit":50,"offset":0}`)); err == nil {
		t.Error("an instance with a numeric id validated")
	}
}
