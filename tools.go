package supplyplan

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Capabilities gate the hosted tools: an organization's tools are those whose capability is in its
// capability set.
const (
	CapCatalog   = "commerce.catalog"   // search_products, get_product (public)
	CapInventory = "commerce.inventory" // check_availability, list_locations (public)
	CapOrders    = "commerce.orders"    // get_order_status
	CapForecast  = "planning.forecast"  // get_demand_forecast
	CapTransfers = "planning.transfers" // list_transfer_recommendations, explain_recommendation, approve_transfer_recommendation
)

// AllCapabilities lists every capability the tool service knows.
var AllCapabilities = []string{CapCatalog, CapInventory, CapOrders, CapForecast, CapTransfers}

// DemoCapabilities are given to the demo organization.
var DemoCapabilities = AllCapabilities

// Meta keys on tool definitions.
const (
	MetaCapability = "com.supplyplan/capability"
	MetaPublic     = "com.supplyplan/public"
)

// ToolDeps are the services the merchant tools call. A nil service leaves its tools unlisted.
type ToolDeps struct {
	Catalog   CatalogService
	Forecasts ForecastToolService
	Transfers TransferToolService
	Audit     ToolAuditLog
	Confirm   *Confirmer
}

// ToolAccess says who calls: a key of the organization, or nobody (public tools of a listed
// merchant only).
type ToolAccess struct {
	Principal Principal
	Public    bool
}

type toolCall struct {
	ctx    context.Context
	org    Organization
	access ToolAccess
	deps   *ToolDeps
	name   string
	args   json.RawMessage
}

type toolSpec struct {
	def        ToolDef
	capability string
	public     bool
	needs      func(*ToolDeps) bool
	run        func(*toolCall) (any, string, error)
}

var toolCatalog []*toolSpec

// ToolCatalog returns every hosted tool definition, whatever the organization.
func ToolCatalog() []ToolDef {
	out := make([]ToolDef, len(toolCatalog))
	for i, t := range toolCatalog {
		out[i] = t.def
	}
	return out
}

// NewToolSet returns the tools org may use with access: those of its capabilities whose service is
// wired, and only the public ones without a key.
func NewToolSet(org Organization, access ToolAccess, deps *ToolDeps) ToolSet {
	ts := &orgTools{org: org, access: access, deps: deps}
	for _, t := range toolCatalog {
		if !slices.Contains(org.Capabilities, t.capability) || !t.needs(deps) || (access.Public && !t.public) {
			continue
		}
		ts.tools = append(ts.tools, t)
		ts.defs = append(ts.defs, t.def)
	}
	return ts
}

type orgTools struct {
	org    Organization
	access ToolAccess
	deps   *ToolDeps
	tools  []*toolSpec
	defs   []ToolDef
}

func (ts *orgTools) Tools() []ToolDef { return ts.defs }

func (ts *orgTools) Call(ctx context.Context, name string, args json.RawMessage) (ToolResult, error) {
	for _, t := range ts.tools {
		if t.def.Name != name {
			continue
		}
		v, text, err := t.run(&toolCall{ctx: ctx, org: ts.org, access: ts.access, deps: ts.deps, name: name, args: args})
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Code != EINTERNAL && e.Code != EUNAVAILABLE {
				return ErrorResult(e), nil
			}
			return ToolResult{}, err
		}
		return ToolResult{Structured: v, Text: text}, nil
	}
	return ToolResult{}, &Error{Code: ENOTFOUND, Message: "Unknown tool: " + name}
}

// ErrorResult renders a client error as a tool-level error result.
func ErrorResult(e *Error) ToolResult {
	msg := e.Message
	if len(e.Details) > 0 {
		keys := make([]string, 0, len(e.Details))
		for k := range e.Details {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+": "+strings.Join(e.Details[k], "; "))
		}
		msg += " (" + strings.Join(parts, ", ") + ")"
	}
	return ToolResult{IsError: true, Text: msg,
		Structured: map[string]any{"error": e.Message, "code": e.Code, "details": e.Details}}
}

// DecodeArgs decodes tool arguments into v: a JSON object (or nothing), no unknown fields, the
// field at fault named on a type error, every string and number within its bounds (CheckInput).
func DecodeArgs(args json.RawMessage, v any) error {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		return Invalid("arguments", "must be a JSON object")
	}
	// Strict like every request body; a key that matches an argument only case-insensitively is
	// an unknown argument here, as any other unknown key.
	trimmed, ignored, err := StrictJSON(trimmed, reflect.TypeOf(v))
	if err != nil {
		return err
	}
	if len(ignored) > 0 {
		return Invalid(ignored[0], "is not an argument of this tool (argument names are case-sensitive)")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typ):
			return Invalid(typ.Field, "has the wrong type (%s expected)", typ.Type.String())
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return Invalid(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "is not an argument of this tool")
		}
		return Invalid("arguments", "is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Invalid("arguments", "unexpected data after the JSON object")
	}
	return CheckInput(v)
}

// canonicalArgs renders args without the confirmation token, keys sorted, for token binding.
func canonicalArgs(args json.RawMessage) []byte {
	var m map[string]any
	_ = json.Unmarshal(args, &m)
	delete(m, "confirmationToken")
	if m == nil {
		m = map[string]any{}
	}
	b, _ := json.Marshal(m)
	return b
}

// offsetCursor encodes a list offset as an opaque cursor.
func offsetCursor(tool string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(tool + ":" + strconv.Itoa(offset)))
}

func parseOffsetCursor(tool, cursor string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err == nil {
		if rest, ok := strings.CutPrefix(string(b), tool+":"); ok {
			if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
				return n, nil
			}
		}
	}
	return 0, Invalid("cursor", "is not a cursor returned by %s", tool)
}

func limitArg(p *int, def, max int) (int, error) {
	if p == nil {
		return def, nil
	}
	if *p < 1 || *p > max {
		return 0, Invalid("limit", "must be between 1 and %d", max)
	}
	return *p, nil
}

func requireString(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return Invalid(field, "is required")
	}
	if len(v) > 200 {
		return Invalid(field, "must be at most 200 characters")
	}
	return nil
}

// register adds a tool to the catalogue (called from init in catalogue order).
func register(t *toolSpec) {
	t.def.Meta = map[string]any{MetaCapability: t.capability, MetaPublic: t.public}
	t.def = PrepareToolDef(t.def)
	toolCatalog = append(toolCatalog, t)
}

func readOnly(title string) *ToolAnnotations {
	return &ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true}
}

func hasCatalog(d *ToolDeps) bool   { return d != nil && d.Catalog != nil }
func hasForecasts(d *ToolDeps) bool { return d != nil && d.Forecasts != nil }
func hasTransfers(d *ToolDeps) bool { return d != nil && d.Transfers != nil }
func hasApproval(d *ToolDeps) bool {
	return hasTransfers(d) && d.Audit != nil && d.Confirm != nil
}

func fmtQty(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
