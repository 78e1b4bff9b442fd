// Package openapitest checks OpenAPI 3.1 documents in tests: the document against the OpenAPI
// 3.1 schema, its schemas against JSON Schema 2020-12, and responses against the schemas their
// operation documents. JSON Schema validation is github.com/santhosh-tekuri/jsonschema/v6.
package openapitest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// oasSchema is the OpenAPI 3.1 schema (https://spec.openapis.org/oas/3.1/schema/2022-10-07), as
// published by the OpenAPI Initiative (Apache 2.0; this copy comes from the Go module
// github.com/pb33f/libopenapi v0.41.8, datamodel/schemas/oas31-schema.json).
//
//go:embed schemas/oas-3.1-2022-10-07.json
var oasSchema []byte

const oasSchemaID = "https://spec.openapis.org/oas/3.1/schema/2022-10-07"

// ValidateDocument checks doc against the OpenAPI 3.1 schema.
func ValidateDocument(doc []byte) error {
	meta, err := jsonschema.UnmarshalJSON(bytes.NewReader(oasSchema))
	if err != nil {
		return fmt.Errorf("parse the OpenAPI 3.1 schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(oasSchemaID, meta); err != nil {
		return err
	}
	sch, err := c.Compile(oasSchemaID)
	if err != nil {
		return fmt.Errorf("compile the OpenAPI 3.1 schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("parse the document: %w", err)
	}
	return sch.Validate(inst)
}

// Document is a parsed OpenAPI document whose schemas are compiled on demand.
type Document struct {
	paths      map[string]map[string]any // path template → method → operation
	components map[string]any
	responses  map[string]any // components/responses
	mu         sync.Mutex
	compiled   map[string]*jsonschema.Schema
	n          int
}

// Parse parses doc.
func Parse(doc []byte) (*Document, error) {
	var d struct {
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas   map[string]any `json:"schemas"`
			Responses map[string]any `json:"responses"`
		} `json:"components"`
	}
	// The schemas refer to "#/components/schemas/X"; validated on their own they find X in $defs.
	doc = bytes.ReplaceAll(doc, []byte(`"#/components/schemas/`), []byte(`"#/$defs/`))
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return nil, err
	}
	return &Document{paths: d.Paths, components: d.Components.Schemas, responses: d.Components.Responses, compiled: map[string]*jsonschema.Schema{}}, nil
}

// Routes lists the document's operations as "METHOD /path/{param}", sorted.
func (d *Document) Routes() []string {
	var out []string
	for p, ops := range d.paths {
		for m := range ops {
			out = append(out, strings.ToUpper(m)+" "+p)
		}
	}
	sort.Strings(out)
	return out
}

// CompileAll compiles every schema of the document (request bodies, responses, parameters and
// components) as JSON Schema 2020-12.
func (d *Document) CompileAll() error {
	for name := range d.components {
		if _, err := d.compile(map[string]any{"$ref": "#/$defs/" + name}); err != nil {
			return fmt.Errorf("components/schemas/%s: %w", name, err)
		}
	}
	for p, ops := range d.paths {
		for m, op := range ops {
			var errs []string
			walkSchemas(op, func(where string, s any) {
				if _, err := d.compile(s); err != nil {
					errs = append(errs, where+": "+err.Error())
				}
			}, "")
			if len(errs) > 0 {
				return fmt.Errorf("%s %s: %s", strings.ToUpper(m), p, strings.Join(errs, "; "))
			}
		}
	}
	return nil
}

func walkSchemas(v any, f func(string, any), where string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "schema" {
				f(where+"/schema", e)
				continue
			}
			walkSchemas(e, f, where+"/"+k)
		}
	case []any:
		for i, e := range x {
			walkSchemas(e, f, where+"/"+strconv.Itoa(i))
		}
	}
}

func (d *Document) compile(s any) (*jsonschema.Schema, error) {
	key, _ := json.Marshal(s)
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.compiled[string(key)]; ok {
		return c, nil
	}
	root := map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": d.components}
	if m, ok := s.(map[string]any); ok {
		for k, v := range m {
			root[k] = v
		}
	} else {
		root["allOf"] = []any{s}
	}
	d.n++
	url := fmt.Sprintf("https://supplyplan.invalid/schema/%d.json", d.n)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(url, root); err != nil {
		return nil, err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	d.compiled[string(key)] = sch
	return sch, nil
}

// Operation finds the operation of method and a request path: the template whose segments match,
// literal segments preferred over parameters.
func (d *Document) Operation(method, path string) (template string, op map[string]any, ok bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best := -1
	for p, ops := range d.paths {
		ps := strings.Split(strings.Trim(p, "/"), "/")
		if len(ps) != len(segs) {
			continue
		}
		literal := 0
		match := true
		for i, s := range ps {
			if strings.HasPrefix(s, "{") {
				continue
			}
			if s != segs[i] {
				match = false
				break
			}
			literal++
		}
		if !match || literal <= best {
			continue
		}
		o, has := ops[strings.ToLower(method)].(map[string]any)
		if !has {
			continue
		}
		best, template, op, ok = literal, p, o, true
	}
	return
}

// ValidateResponse checks a response to method path against its operation's documented response
// of status (or the default one): the status must be documented, and a JSON body must validate
// against the schema of its media type.
func (d *Document) ValidateResponse(method, path string, status int, contentType string, body []byte) error {
	tmpl, op, ok := d.Operation(method, path)
	if !ok {
		return fmt.Errorf("%s %s: no operation in the document", method, path)
	}
	responses, _ := op["responses"].(map[string]any)
	r, ok := responses[strconv.Itoa(status)]
	if !ok {
		r, ok = responses["default"]
	}
	if !ok {
		return fmt.Errorf("%s %s: status %d is not documented", method, tmpl, status)
	}
	rm, _ := r.(map[string]any)
	if ref, ok := rm["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/components/responses/")
		if rm, ok = d.responses[name].(map[string]any); !ok {
			return fmt.Errorf("%s %s: unsupported response $ref %s", method, tmpl, ref)
		}
	}
	content, _ := rm["content"].(map[string]any)
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	if len(content) == 0 {
		if len(bytes.TrimSpace(body)) > 0 {
			return fmt.Errorf("%s %s %d: documented without a body, got %d bytes", method, tmpl, status, len(body))
		}
		return nil
	}
	media, ok := content[mt].(map[string]any)
	if !ok {
		return fmt.Errorf("%s %s %d: content type %q is not documented", method, tmpl, status, mt)
	}
	if mt != "application/json" {
		return nil
	}
	sch, err := d.compile(media["schema"])
	if err != nil {
		return fmt.Errorf("%s %s %d: compile: %w", method, tmpl, status, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s %d: body is not JSON: %w", method, tmpl, status, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%s %s %d: %w", method, tmpl, status, err)
	}
	return nil
}
