package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
)

// Def is a tool definition in the MCP shape (tools/list), also served by GET /tools/list.
type Def struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	Meta         map[string]any  `json:"_meta,omitempty"`
	// Raw is the definition's JSON, encoded once (PrepareDef); tools/list writes it as is.
	Raw json.RawMessage `json:"-"`
}

// PrepareDef compacts the schemas and fills Raw. Definitions are static: prepare them once.
func PrepareDef(d Def) Def {
	compact := func(m json.RawMessage) json.RawMessage {
		if len(m) == 0 {
			return m
		}
		var b bytes.Buffer
		if err := json.Compact(&b, m); err != nil {
			panic("tools: invalid schema of tool " + d.Name + ": " + err.Error())
		}
		return b.Bytes()
	}
	d.InputSchema, d.OutputSchema, d.Raw = compact(d.InputSchema), compact(d.OutputSchema), nil
	raw, err := json.Marshal(d)
	if err != nil {
		panic("tools: encode tool " + d.Name + ": " + err.Error())
	}
	d.Raw = raw
	return d
}

// Annotations are MCP's behaviour hints.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

// Result is the outcome of a tool call: structured content (a JSON object matching the
// tool's output schema) and a text rendering. IsError marks a tool-level failure (bad arguments,
// unknown product, ...), which MCP returns as a result, not as a protocol error.
type Result struct {
	Structured any
	Text       string
	// TextJSON, when set, is Text already encoded as a JSON string (quotes included).
	TextJSON []byte
	IsError  bool
}

// Set is the tools one caller may use: the registry's discovery tools, or a merchant's tools
// filtered by capability and access.
type Set interface {
	// Tools lists the definitions in a stable order.
	Tools() []Def
	// Call runs a tool. A NOT_FOUND *Error means an unknown tool; any other error is internal.
	Call(ctx context.Context, name string, args json.RawMessage) (Result, error)
}

// MCPRequest is one HTTP request to an MCP endpoint, independent of the HTTP library.
type MCPRequest struct {
	Method string
	// Header returns a request header (case-insensitive name), "" when absent.
	Header func(name string) string
	Body   []byte
	// Resolve authenticates the caller and returns its tools. It runs after the Origin check. An
	// *Error with code UNAUTHORIZED (401), FORBIDDEN (403), NOT_FOUND (404) or UNAVAILABLE (503)
	// is rendered as the HTTP status.
	Resolve func(ctx context.Context) (Set, error)
}

// MCPResponse is the HTTP answer to an MCPRequest.
type MCPResponse struct {
	Status int
	Header [][2]string
	Body   []byte
	// Release, when set, recycles Body: call it once Body is written (or copied) and never use Body
	// afterwards.
	Release func()
}

// MCPHandler serves MCP streamable HTTP (implemented in rpc/, called by the HTTP servers).
type MCPHandler interface {
	HandleMCP(ctx context.Context, req MCPRequest) MCPResponse
}

// CallResultJSON encodes the result as an MCP CallToolResult: the text rendering, and for a success
// structuredContent. withJSONText adds the serialized structured content as a second text block, for
// clients of revisions without structuredContent (2025-03-26). Error results carry only the text
// (clients validate the structured content of successes only).
func (r Result) CallResultJSON(withJSONText bool) ([]byte, error) {
	return r.AppendCallResult(nil, withJSONText)
}

// EncodedSizeHint estimates the bytes of CallResultJSON (exact for pre-encoded structured content).
func (r Result) EncodedSizeHint() int {
	n := len(r.Text) + len(r.Text)/16 + len(r.TextJSON) + 96
	if sc, ok := r.Structured.(json.RawMessage); ok {
		n += len(sc)
	} else if r.Structured != nil {
		n += 1024
	}
	return n
}

// AppendCallResult is CallResultJSON appending to dst.
func (r Result) AppendCallResult(dst []byte, withJSONText bool) ([]byte, error) {
	text := r.TextJSON
	if text == nil {
		var err error
		if text, err = json.Marshal(r.Text); err != nil {
			return nil, err
		}
	}
	var sc []byte
	var err error
	if !r.IsError && r.Structured != nil {
		var ok bool
		if sc, ok = r.Structured.(json.RawMessage); !ok { // else already encoded by the tool
			if sc, err = json.Marshal(r.Structured); err != nil {
				return nil, err
			}
		}
	}
	need := len(text) + len(sc) + 96
	if withJSONText {
		need += len(sc) + len(sc)/8 + 32
	}
	dst = slices.Grow(dst, need)
	dst = append(dst, `{"content":[{"type":"text","text":`...)
	dst = append(dst, text...)
	dst = append(dst, '}')
	if r.IsError {
		return append(dst, `],"isError":true}`...), nil
	}
	if sc != nil && withJSONText {
		st, _ := json.Marshal(string(sc))
		dst = append(dst, `,{"type":"text","text":`...)
		dst = append(dst, st...)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if sc != nil {
		dst = append(dst, `,"structuredContent":`...)
		dst = append(dst, sc...)
	}
	return append(dst, '}'), nil
}
