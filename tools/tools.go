// Package tools is the hosted commerce tool service: the tool catalogue (commerce and planning
// tools, each gated by an organization capability), the tool sets one caller may use, strict
// argument decoding, confirmation tokens for state-changing tools, the narrow backend contracts
// the tools call and the adapters from the domain services to them, and the MCP wire types
// (mcp.go) that rpc/ (the MCP transport) and http/ (the fasthttp listener) share. It calls the
// domain's services; the domain does not know it.
package tools

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

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/strictjson"
)

// Meta keys on tool definitions.
const (
	MetaCapability = "com.supplyplan/capability"
	MetaPublic     = "com.supplyplan/public"
)

// Deps are the services the merchant tools call. A nil service leaves its tools unlisted.
type Deps struct {
	Catalog supplyplan.CatalogService
	// ATP answers check_availability's dated figures and promise checks (nil: without date and
	// quantity the tool still answers from Catalog).
	ATP       ATPBackend
	Forecasts ForecastBackend
	Transfers TransferBackend
	Audit     supplyplan.ToolAuditLog
	Confirm   *Confirmer
}

// Access says who calls: a key of the organization, or nobody (public tools of a listed
// merchant only).
type Access struct {
	Principal supplyplan.Principal
	Public    bool
}

type toolCall struct {
	ctx    context.Context
	org    supplyplan.Organization
	access Access
	deps   *Deps
	name   string
	args   json.RawMessage
}

type toolSpec struct {
	def        Def
	capability string
	public     bool
	needs      func(*Deps) bool
	run        func(*toolCall) (any, string, error)
}

var toolCatalog []*toolSpec

// Definitions returns every hosted tool definition, whatever the organization.
func Definitions() []Def {
	out := make([]Def, len(toolCatalog))
	for i, t := range toolCatalog {
		out[i] = t.def
	}
	return out
}

// NewSet returns the tools org may use with access: those of its capabilities whose service is
// wired, and only the public ones without a key.
func NewSet(org supplyplan.Organization, access Access, deps *Deps) Set {
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
	org    supplyplan.Organization
	access Access
	deps   *Deps
	tools  []*toolSpec
	defs   []Def
}

func (ts *orgTools) Tools() []Def { return ts.defs }

func (ts *orgTools) Call(ctx context.Context, name string, args json.RawMessage) (Result, error) {
	for _, t := range ts.tools {
		if t.def.Name != name {
			continue
		}
		v, text, err := t.run(&toolCall{ctx: ctx, org: ts.org, access: ts.access, deps: ts.deps, name: name, args: args})
		if err != nil {
			var e *supplyplan.Error
			if errors.As(err, &e) && e.Code != supplyplan.EINTERNAL && e.Code != supplyplan.EUNAVAILABLE {
				return ErrorResult(e), nil
			}
			return Result{}, err
		}
		return Result{Structured: v, Text: text}, nil
	}
	return Result{}, &supplyplan.Error{Code: supplyplan.ENOTFOUND, Message: "Unknown tool: " + name}
}

// ErrorResult renders a client error as a tool-level error result.
func ErrorResult(e *supplyplan.Error) Result {
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
	return Result{IsError: true, Text: msg,
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
		return supplyplan.Invalid("arguments", "must be a JSON object")
	}
	// Strict like every request body; a key that matches an argument only case-insensitively is
	// an unknown argument here, as any other unknown key.
	trimmed, ignored, err := strictjson.Check(trimmed, reflect.TypeOf(v))
	if err != nil {
		return err
	}
	if len(ignored) > 0 {
		return supplyplan.Invalid(ignored[0], "is not an argument of this tool (argument names are case-sensitive)")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typ):
			return supplyplan.Invalid(typ.Field, "has the wrong type (%s expected)", typ.Type.String())
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return supplyplan.Invalid(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "is not an argument of this tool")
		}
		return supplyplan.Invalid("arguments", "is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return supplyplan.Invalid("arguments", "unexpected data after the JSON object")
	}
	return supplyplan.CheckInput(v)
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
	return 0, supplyplan.Invalid("cursor", "is not a cursor returned by %s", tool)
}

func limitArg(p *int, def, max int) (int, error) {
	if p == nil {
		return def, nil
	}
	if *p < 1 || *p > max {
		return 0, supplyplan.Invalid("limit", "must be between 1 and %d", max)
	}
	return *p, nil
}

func requireString(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return supplyplan.Invalid(field, "is required")
	}
	if len(v) > 200 {
		return supplyplan.Invalid(field, "must be at most 200 characters")
	}
	return nil
}

// register adds a tool to the catalogue (called from init in catalogue order).
func register(t *toolSpec) {
	t.def.Meta = map[string]any{MetaCapability: t.capability, MetaPublic: t.public}
	t.def = PrepareDef(t.def)
	toolCatalog = append(toolCatalog, t)
}

func readOnly(title string) *Annotations {
	return &Annotations{Title: title, ReadOnlyHint: true, IdempotentHint: true}
}

func hasCatalog(d *Deps) bool   { return d != nil && d.Catalog != nil }
func hasForecasts(d *Deps) bool { return d != nil && d.Forecasts != nil }
func hasTransfers(d *Deps) bool { return d != nil && d.Transfers != nil }
func hasApproval(d *Deps) bool {
	return hasTransfers(d) && d.Audit != nil && d.Confirm != nil
}

func fmtQty(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
