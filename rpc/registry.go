package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/tools"
)

// Directory is what the registry tools read.
type Directory struct {
	Merchants supplyplan.MerchantDirectory
	// ToolDeps decides which merchant tools are wired (list_merchant_tools shows the same
	// definitions as the tool service).
	ToolDeps *tools.Deps
	// ToolsURL is the public base URL of the hosted tool service, e.g. http://127.0.0.1:8081.
	ToolsURL func() string
}

// RegistryTools returns the discovery tools: search_merchants, get_merchant, list_merchant_tools.
func RegistryTools(d Directory) tools.Set { return &registryTools{d: d} }

type registryTools struct {
	d     Directory
	cache atomic.Pointer[viewCache]
}

// viewCache holds each listed merchant's view, encoded once per directory snapshot: a search then
// only filters and concatenates bytes. A snapshot is identified by its slice (the directory
// publishes a new slice on every change) and the tool service URL.
type viewCache struct {
	first *supplyplan.Merchant
	n     int
	base  string
	views map[string]cachedView // by slug
}

type cachedView struct {
	view     merchantView
	json     []byte
	lineJSON []byte // the merchant's text line, JSON-escaped (no quotes)
}

// jsonEscaped returns s encoded as JSON string content, without the quotes. Escaping is per
// character, so escaped pieces concatenate into the escaped whole.
func jsonEscaped(s string) []byte {
	b, _ := json.Marshal(s)
	return b[1 : len(b)-1]
}

func (t *registryTools) views(all []supplyplan.Merchant) *viewCache {
	base := t.base()
	var first *supplyplan.Merchant
	if len(all) > 0 {
		first = &all[0]
	}
	if c := t.cache.Load(); c != nil && c.first == first && c.n == len(all) && c.base == base {
		return c
	}
	c := &viewCache{first: first, n: len(all), base: base, views: make(map[string]cachedView, len(all))}
	for _, m := range all {
		v := t.view(m)
		b, _ := json.Marshal(v)
		c.views[m.Org.Slug] = cachedView{view: v, json: b,
			lineJSON: jsonEscaped(fmt.Sprintf("\n- %s (%s): %s [%s]", v.DisplayName, v.Slug, v.Description, strings.Join(v.Capabilities, ", ")))}
	}
	t.cache.Store(c)
	return c
}

const merchantSchema = `{"type":"object","properties":{
  "slug":{"type":"string"},"organizationId":{"type":"string"},"displayName":{"type":"string"},
  "description":{"type":"string"},"categories":{"type":"array","items":{"type":"string"}},
  "region":{"type":"string"},"website":{"type":"string"},
  "capabilities":{"type":"array","items":{"type":"string"}},
  "mcpUrl":{"type":"string"},"toolsListUrl":{"type":"string"},"updatedAt":{"type":"string","format":"date-time"}},
  "required":["slug","organizationId","displayName","categories","capabilities","mcpUrl","toolsListUrl"]}`

var registryDefs = []tools.Def{
	{
		Name: "search_merchants", Title: "Search merchants",
		Description: "Find merchants listed in this Supplyplan registry by text, category, capability or region. " +
			"Results are in a stable order (by slug); pass nextCursor back as cursor for the next page.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
  "query":{"type":"string","maxLength":200,"description":"Words matched against name, description, slug, region and categories"},
  "category":{"type":"string","maxLength":50},
  "capability":{"type":"string","maxLength":100,"description":"e.g. commerce.inventory"},
  "region":{"type":"string","maxLength":50},
  "limit":{"type":"integer","minimum":1,"maximum":100,"default":20},
  "cursor":{"type":"string"}},"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{
  "merchants":{"type":"array","items":` + merchantSchema + `},
  "count":{"type":"integer"},"nextCursor":{"type":"string"}},"required":["merchants","count"]}`),
		Annotations: &tools.Annotations{Title: "Search merchants", ReadOnlyHint: true, IdempotentHint: true},
	},
	{
		Name: "get_merchant", Title: "Get merchant",
		Description: "A listed merchant's profile, capabilities and how to connect to its tools (MCP endpoint, REST endpoints, authentication).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
  "slug":{"type":"string","maxLength":63}},"required":["slug"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{
  "merchant":` + merchantSchema + `,
  "connect":{"type":"object","properties":{
    "transport":{"type":"string"},"mcpUrl":{"type":"string"},"toolsListUrl":{"type":"string"},"toolsCallUrl":{"type":"string"},
    "authentication":{"type":"string"},"publicTools":{"type":"array","items":{"type":"string"}}},
    "required":["transport","mcpUrl","toolsListUrl","toolsCallUrl","authentication","publicTools"]},
  "server":{"type":"object"}},"required":["merchant","connect","server"]}`),
		Annotations: &tools.Annotations{Title: "Get merchant", ReadOnlyHint: true, IdempotentHint: true},
	},
	{
		Name: "list_merchant_tools", Title: "List merchant tools",
		Description: "The tool definitions a listed merchant offers on the hosted tool service (the same list GET /tools/list returns with the merchant's key). " +
			"Tools marked com.supplyplan/public in _meta are callable without a key.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
  "slug":{"type":"string","maxLength":63}},"required":["slug"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{
  "slug":{"type":"string"},"mcpUrl":{"type":"string"},"toolsListUrl":{"type":"string"},
  "tools":{"type":"array","items":{"type":"object","properties":{
    "name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},
    "inputSchema":{"type":"object"},"outputSchema":{"type":"object"}},"required":["name","inputSchema"]}}},
  "required":["slug","tools","mcpUrl","toolsListUrl"]}`),
		Annotations: &tools.Annotations{Title: "List merchant tools", ReadOnlyHint: true, IdempotentHint: true},
	},
}

func init() {
	for i, d := range registryDefs {
		registryDefs[i] = tools.PrepareDef(d)
	}
}

func (t *registryTools) Tools() []tools.Def { return registryDefs }

func (t *registryTools) Call(ctx context.Context, name string, args json.RawMessage) (tools.Result, error) {
	var v any
	var text string
	var err error
	switch name {
	case "search_merchants":
		res, err := t.search(args)
		if e, ok := err.(*supplyplan.Error); ok {
			return tools.ErrorResult(e), nil
		}
		return res, err
	case "get_merchant":
		v, text, err = t.get(args)
	case "list_merchant_tools":
		v, text, err = t.listTools(args)
	default:
		return tools.Result{}, supplyplan.NotFound("Unknown tool: " + name)
	}
	if err != nil {
		if e, ok := err.(*supplyplan.Error); ok {
			return tools.ErrorResult(e), nil
		}
		return tools.Result{}, err
	}
	return tools.Result{Structured: v, Text: text}, nil
}

type merchantView struct {
	Slug           string   `json:"slug"`
	OrganizationID string   `json:"organizationId"`
	DisplayName    string   `json:"displayName"`
	Description    string   `json:"description,omitempty"`
	Categories     []string `json:"categories"`
	Region         string   `json:"region,omitempty"`
	Website        string   `json:"website,omitempty"`
	Capabilities   []string `json:"capabilities"`
	MCPURL         string   `json:"mcpUrl"`
	ToolsListURL   string   `json:"toolsListUrl"`
	UpdatedAt      string   `json:"updatedAt,omitempty"`
}

func (t *registryTools) base() string {
	if t.d.ToolsURL == nil {
		return ""
	}
	return strings.TrimRight(t.d.ToolsURL(), "/")
}

func (t *registryTools) view(m supplyplan.Merchant) merchantView {
	base, slug := t.base(), url.QueryEscape(m.Org.Slug)
	caps := m.Org.Capabilities
	if caps == nil {
		caps = []string{}
	}
	cats := m.Profile.Categories
	if cats == nil {
		cats = []string{}
	}
	return merchantView{Slug: m.Org.Slug, OrganizationID: m.Org.ID, DisplayName: m.Profile.DisplayName,
		Description: m.Profile.Description, Categories: cats, Region: m.Profile.Region, Website: m.Profile.Website,
		Capabilities: caps, MCPURL: base + "/mcp?org=" + slug, ToolsListURL: base + "/tools/list?org=" + slug,
		UpdatedAt: m.Profile.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z")}
}

func (t *registryTools) search(args json.RawMessage) (tools.Result, error) {
	var in struct {
		Query      string `json:"query"`
		Category   string `json:"category"`
		Capability string `json:"capability"`
		Region     string `json:"region"`
		Limit      *int   `json:"limit"`
		Cursor     string `json:"cursor"`
	}
	if err := tools.DecodeArgs(args, &in); err != nil {
		return tools.Result{}, err
	}
	q := supplyplan.MerchantQuery{Query: in.Query, Category: in.Category, Capability: in.Capability, Region: in.Region, Cursor: in.Cursor}
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > supplyplan.MaxMerchantPage {
			return tools.Result{}, supplyplan.Invalid("limit", "must be between 1 and %d", supplyplan.MaxMerchantPage)
		}
		q.Limit = *in.Limit
	}
	if len(in.Query) > 200 {
		return tools.Result{}, supplyplan.Invalid("query", "must be at most 200 characters")
	}
	all := t.d.Merchants.ListedMerchants()
	page, next, err := supplyplan.SearchMerchantIndexes(all, q)
	if err != nil {
		return tools.Result{}, err
	}
	// Both renderings are assembled from the snapshot's pre-encoded pieces.
	cache := t.views(all)
	size, lines := 64, 96
	for _, j := range page {
		cv := cache.views[all[j].Org.Slug]
		size += len(cv.json) + 1
		lines += len(cv.lineJSON)
	}
	out := make([]byte, 0, size)
	out = append(out, `{"merchants":[`...)
	text := make([]byte, 0, lines)
	text = append(text, '"')
	text = strconv.AppendInt(text, int64(len(page)), 10)
	text = append(text, " merchant(s)"...)
	for i, j := range page {
		m := all[j]
		cv, ok := cache.views[m.Org.Slug]
		if !ok { // not in this snapshot (cannot happen with one ListedMerchants call)
			v := t.view(m)
			cv.json, _ = json.Marshal(v)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, cv.json...)
		text = append(text, cv.lineJSON...)
	}
	out = append(out, `],"count":`...)
	out = strconv.AppendInt(out, int64(len(page)), 10)
	if next != "" {
		out = append(out, `,"nextCursor":"`...)
		out = append(out, next...) // base64url: no escaping needed
		out = append(out, '"')
		text = append(text, `\nMore results: call again with cursor `...)
		text = append(text, next...)
	}
	out = append(out, '}')
	text = append(text, '"')
	return tools.Result{Structured: json.RawMessage(out), TextJSON: text}, nil
}

func (t *registryTools) find(args json.RawMessage) (supplyplan.Merchant, error) {
	var in struct {
		Slug string `json:"slug"`
	}
	if err := tools.DecodeArgs(args, &in); err != nil {
		return supplyplan.Merchant{}, err
	}
	if in.Slug == "" {
		return supplyplan.Merchant{}, supplyplan.Invalid("slug", "is required")
	}
	for _, m := range t.d.Merchants.ListedMerchants() {
		if m.Org.Slug == in.Slug {
			return m, nil
		}
	}
	return supplyplan.Merchant{}, supplyplan.NotFound("Merchant " + in.Slug)
}

func (t *registryTools) merchantTools(m supplyplan.Merchant) []tools.Def {
	ts := tools.NewSet(m.Org, tools.Access{Principal: supplyplan.Principal{OrgID: m.Org.ID}}, t.d.ToolDeps)
	return ts.Tools()
}

func (t *registryTools) get(args json.RawMessage) (any, string, error) {
	m, err := t.find(args)
	if err != nil {
		return nil, "", err
	}
	v := t.view(m)
	public := []string{}
	for _, d := range t.merchantTools(m) {
		if p, _ := d.Meta[tools.MetaPublic].(bool); p {
			public = append(public, d.Name)
		}
	}
	auth := "Send the merchant's tool key as 'Authorization: Bearer <key>' or 'x-api-key: <key>'. " +
		"Without a key only the public tools are listed and callable."
	server := map[string]any{
		"name": "com.supplyplan/" + m.Org.Slug, "title": m.Profile.DisplayName, "description": truncate(m.Profile.Description, 100),
		"version": "1.0.0",
		"remotes": []map[string]any{{"type": "streamable-http", "url": v.MCPURL,
			"headers": []map[string]any{{"name": "Authorization", "isSecret": true, "isRequired": false,
				"description": "Bearer <tool key of the merchant>; optional for public tools"}}}},
	}
	if m.Profile.Website != "" {
		server["websiteUrl"] = m.Profile.Website
	}
	out := map[string]any{
		"merchant": v,
		"connect": map[string]any{"transport": "streamable-http", "mcpUrl": v.MCPURL, "toolsListUrl": v.ToolsListURL,
			"toolsCallUrl": t.base() + "/tools/call", "authentication": auth, "publicTools": public},
		"server": server,
	}
	text := fmt.Sprintf("%s (%s): %s\nCapabilities: %s\nMCP endpoint: %s\nTool list: %s\nPublic tools: %s",
		v.DisplayName, v.Slug, v.Description, strings.Join(v.Capabilities, ", "), v.MCPURL, v.ToolsListURL, strings.Join(public, ", "))
	return out, text, nil
}

func (t *registryTools) listTools(args json.RawMessage) (any, string, error) {
	m, err := t.find(args)
	if err != nil {
		return nil, "", err
	}
	v := t.view(m)
	defs := t.merchantTools(m)
	if defs == nil {
		defs = []tools.Def{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d tool(s) of %s at %s", len(defs), v.Slug, v.MCPURL)
	for _, d := range defs {
		fmt.Fprintf(&b, "\n- %s: %s", d.Name, d.Title)
	}
	return map[string]any{"slug": v.Slug, "mcpUrl": v.MCPURL, "toolsListUrl": v.ToolsListURL, "tools": defs}, b.String(), nil
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
