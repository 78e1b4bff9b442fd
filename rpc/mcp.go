// Package rpc serves MCP (JSON-RPC 2.0 over streamable HTTP) through sourcegraph/jsonrpc2: a
// transport-agnostic core (Handler.HandleMCP) used by the registry discovery endpoint (net/http,
// in this package) and by the hosted tool service (fasthttp, in http/). Only this package imports
// jsonrpc2.
//
// The endpoint is stateless: no session id is issued and every request is authenticated on its
// own, so any node can answer any request. Protocol revisions 2025-03-26, 2025-06-18 and
// 2025-11-25 (legacy: initialize handshake) and 2026-07-28 (modern: server/discover, per-request
// _meta and Mcp-Method/Mcp-Name headers) are served side by side, chosen per request.
package rpc

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/tools"
)

// Protocol revisions.
const (
	V20250326 = "2025-03-26"
	V20250618 = "2025-06-18"
	V20251125 = "2025-11-25"
	V20260728 = "2026-07-28"
)

// Versions lists every supported revision, newest first.
var Versions = []string{V20260728, V20251125, V20250618, V20250326}

var legacyVersions = []string{V20251125, V20250618, V20250326}

// JSON-RPC and MCP error codes.
const (
	codeServer                  = -32000 // transport errors (as the SDK servers answer them)
	codeHeaderMismatch          = -32020
	codeUnsupportedProtocolVers = -32022
)

// MCP _meta keys of the 2026-07-28 revision.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaServerInfo      = "io.modelcontextprotocol/serverInfo"
)

// Config configures an MCP endpoint.
type Config struct {
	Name         string
	Title        string
	Version      string
	Instructions string
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed besides loopback ones.
	// Requests without an Origin header (every non-browser client) are always allowed.
	AllowedOrigins []string
	// PageSize is the tools/list page size (default 50).
	PageSize int
	// MaxBody caps the request body (default 1 MiB).
	MaxBody int
	// MaxBatch caps a JSON-RPC batch (2025-03-26 only; default 20).
	MaxBatch int
	// ListTTL is the ttlMs hint of 2026-07-28 list results (default 60 s).
	ListTTL time.Duration
	Logger  *slog.Logger
}

// Handler is the transport-agnostic MCP endpoint.
type Handler struct {
	cfg  Config
	log  *slog.Logger
	info map[string]any
	rpc  jsonrpc2.Handler
}

// NewHandler returns an MCP endpoint.
func NewHandler(cfg Config) *Handler {
	if cfg.PageSize <= 0 {
		cfg.PageSize = 50
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 20
	}
	if cfg.ListTTL <= 0 {
		cfg.ListTTL = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{cfg: cfg, log: cfg.Logger,
		info: map[string]any{"name": cfg.Name, "title": cfg.Title, "version": cfg.Version}}
	h.rpc = jsonrpc2.HandlerWithError(h.dispatch).SuppressErrClosed()
	return h
}

var _ tools.MCPHandler = (*Handler)(nil)

// HandleMCP serves one HTTP request. Order of checks: Origin (403), CORS preflight, caller
// (401/403/404/503), HTTP method (405), Content-Type (415), Accept (406), size (413), protocol
// version header (400), body (400), then JSON-RPC dispatch (200, or 202 for notifications).
func (h *Handler) HandleMCP(ctx context.Context, req tools.MCPRequest) tools.MCPResponse {
	origin := req.Header("Origin")
	if origin != "" && !h.originAllowed(origin) {
		return transportError(403, codeServer, "Forbidden: origin "+strconv.Quote(origin)+" is not allowed", nil)
	}
	var cors [][2]string
	if origin != "" {
		cors = [][2]string{{"Access-Control-Allow-Origin", origin}, {"Vary", "Origin"},
			{"Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate"}}
	}
	if req.Method == "OPTIONS" {
		return tools.MCPResponse{Status: 204, Header: append(cors,
			[2]string{"Access-Control-Allow-Methods", "POST, GET, DELETE, OPTIONS"},
			[2]string{"Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, X-Api-Key, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID"},
			[2]string{"Access-Control-Max-Age", "600"})}
	}
	resp := h.handle(ctx, req)
	resp.Header = append(resp.Header, cors...)
	return resp
}

func (h *Handler) handle(ctx context.Context, req tools.MCPRequest) tools.MCPResponse {
	ts, err := req.Resolve(ctx)
	if err != nil {
		return h.callerError(req, err)
	}
	switch req.Method {
	case "POST":
	case "GET", "DELETE", "HEAD":
		// Stateless: no standalone SSE stream (GET) and no session to end (DELETE). The legacy
		// revisions allow 405 for both; 2026-07-28 requires it.
		r := transportError(405, codeServer, "Method not allowed: this stateless endpoint accepts POST only", nil)
		r.Header = append(r.Header, [2]string{"Allow", "POST, OPTIONS"})
		return r
	default:
		r := transportError(405, codeServer, "Method not allowed", nil)
		r.Header = append(r.Header, [2]string{"Allow", "POST, OPTIONS"})
		return r
	}
	if !isJSONContentType(req.Header("Content-Type")) {
		return transportError(415, codeServer, "Unsupported Media Type: Content-Type must be application/json", nil)
	}
	sse, ok := acceptSSE(req.Header("Accept"))
	if !ok {
		return transportError(406, codeServer, "Not Acceptable: Accept must include application/json or text/event-stream", nil)
	}
	if len(req.Body) > h.cfg.MaxBody {
		return transportError(413, codeServer, "Payload too large: at most "+strconv.Itoa(h.cfg.MaxBody)+" bytes", nil)
	}
	hv := req.Header("Mcp-Protocol-Version")
	if hv != "" && !slices.Contains(Versions, hv) {
		return unsupportedVersion(hv)
	}
	body := bytes.TrimSpace(req.Body)
	if len(body) == 0 {
		return transportError(400, jsonrpc2.CodeParseError, "Parse error: empty body", nil)
	}
	if body[0] == '[' {
		return h.batch(ctx, req, ts, hv, body, sse)
	}
	out := h.message(ctx, req, ts, hv, body, false)
	if out.body == nil {
		if out.status == 0 {
			return tools.MCPResponse{Status: 202}
		}
		return tools.MCPResponse{Status: out.status}
	}
	status := out.status
	if status == 0 {
		status = 200
	}
	r := render(status, out.body, sse)
	if out.pooled && !sse { // SSE copied the body into its framing
		r.Release = release(out.body)
	} else if out.pooled {
		release(out.body)()
	}
	return r
}

// callerError renders a failed Resolve.
func (h *Handler) callerError(req tools.MCPRequest, err error) tools.MCPResponse {
	var e *supplyplan.Error
	if !errors.As(err, &e) {
		h.log.Error("mcp caller resolution failed", "err", err)
		return transportError(500, jsonrpc2.CodeInternalError, "Internal error", nil)
	}
	switch e.Code {
	case supplyplan.EUNAUTHORIZED:
		challenge := `Bearer realm="mcp"`
		if req.Header("Authorization") != "" || req.Header("X-Api-Key") != "" {
			challenge += `, error="invalid_token"`
		}
		r := transportError(401, codeServer, "Unauthorized: "+e.Message, nil)
		r.Header = append(r.Header, [2]string{"WWW-Authenticate", challenge})
		return r
	case supplyplan.EFORBIDDEN, supplyplan.ETENANTREQUIRED:
		return transportError(403, codeServer, "Forbidden: "+e.Message, nil)
	case supplyplan.ENOTFOUND:
		return transportError(404, codeServer, e.Message, nil)
	case supplyplan.EVALIDATION:
		return transportError(400, jsonrpc2.CodeInvalidParams, e.Error(), nil)
	case supplyplan.EUNAVAILABLE:
		r := transportError(503, codeServer, "Service unavailable: "+e.Message, nil)
		r.Header = append(r.Header, [2]string{"Retry-After", "5"})
		return r
	}
	return transportError(500, jsonrpc2.CodeInternalError, "Internal error", nil)
}

func (h *Handler) originAllowed(origin string) bool {
	if slices.Contains(h.cfg.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	switch u.Hostname() {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// isJSONContentType reports whether a Content-Type is application/json (parameters allowed), without
// mime.ParseMediaType's allocations.
func isJSONContentType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// acceptSSE decides the response format: JSON unless the client accepts only SSE. ok is false
// when the client accepts neither.
func acceptSSE(accept string) (sse, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return false, true
	}
	json, stream := false, false
	for _, part := range strings.Split(accept, ",") {
		mt := strings.ToLower(strings.TrimSpace(strings.SplitN(part, ";", 2)[0]))
		switch mt {
		case "application/json", "application/*", "*/*":
			json = true
		case "text/event-stream", "text/*":
			stream = true
		}
	}
	if json {
		return false, true
	}
	return stream, stream
}

// render writes a JSON-RPC response (or batch) as JSON or as one SSE event.
func render(status int, body []byte, sse bool) tools.MCPResponse {
	if !sse {
		return tools.MCPResponse{Status: status, Header: [][2]string{{"Content-Type", "application/json"}}, Body: body}
	}
	var b bytes.Buffer
	b.Grow(len(body) + 24)
	b.WriteString("event: message\ndata: ")
	b.Write(body)
	b.WriteString("\n\n")
	return tools.MCPResponse{Status: status, Body: b.Bytes(), Header: [][2]string{
		{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache, no-transform"}, {"X-Accel-Buffering", "no"}}}
}

// transportError is an HTTP error with a JSON-RPC error body without id.
func transportError(status int, code int64, msg string, data any) tools.MCPResponse {
	return tools.MCPResponse{Status: status, Header: [][2]string{{"Content-Type", "application/json"}},
		Body: errorBody(json.RawMessage("null"), code, msg, data)}
}

func errorBody(id json.RawMessage, code int64, msg string, data any) []byte {
	e := struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}{code, msg, data}
	eb, _ := json.Marshal(e)
	b := make([]byte, 0, len(eb)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":`...)
	b = append(b, eb...)
	return append(b, '}')
}

func unsupportedVersion(requested string) tools.MCPResponse {
	return transportError(400, codeUnsupportedProtocolVers, "Unsupported protocol version: "+requested,
		map[string]any{"supported": Versions, "requested": requested})
}

// outcome is the result of one JSON-RPC message: a response body (nil for notifications and
// client responses) and, for a single message, the HTTP status (0: default).
type outcome struct {
	status int
	body   []byte
	pooled bool // body came from framePool
}

// release returns a pooled body to framePool.
func release(b []byte) func() {
	return func() {
		if cap(b) <= maxPooledFrame {
			b = b[:0]
			framePool.Put(&b)
		}
	}
}

// envelope is a JSON-RPC message as received, for validation before dispatch.
type envelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// message validates one JSON-RPC message, checks the revision's headers and dispatches it.
func (h *Handler) message(ctx context.Context, req tools.MCPRequest, ts tools.Set, hv string, raw []byte, inBatch bool) outcome {
	null := json.RawMessage("null")
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil || raw[0] != '{' {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) {
			return outcome{status: 400, body: errorBody(null, jsonrpc2.CodeParseError, "Parse error: invalid JSON", nil)}
		}
		return outcome{status: 400, body: errorBody(null, jsonrpc2.CodeInvalidRequest, "Invalid Request: a JSON-RPC message must be an object", nil)}
	}
	hasID := env.ID != nil
	id := env.ID
	if !hasID || !validID(id) {
		id = null
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		return outcome{status: 400, body: errorBody(id, jsonrpc2.CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`, nil)}
	}
	if env.Method == nil {
		if hasID && (env.Result != nil || env.Error != nil) {
			return outcome{status: 202} // a response from the client: accepted, nothing to answer
		}
		return outcome{status: 400, body: errorBody(id, jsonrpc2.CodeInvalidRequest, "Invalid Request: method is required", nil)}
	}
	method := *env.Method
	if hasID && !validID(env.ID) {
		return outcome{status: 400, body: errorBody(null, jsonrpc2.CodeInvalidRequest, "Invalid Request: id must be a string or an integer (not null)", nil)}
	}
	if len(env.Params) > 0 && env.Params[0] != '{' && string(env.Params) != "null" {
		if !hasID {
			return outcome{status: 400, body: nil}
		}
		return outcome{status: 400, body: errorBody(id, jsonrpc2.CodeInvalidParams, "Invalid params: params must be an object", nil)}
	}
	if !hasID {
		return outcome{status: 202} // notifications (initialized, cancelled, ...) need nothing from a stateless server
	}

	// Era: modern when the request says 2026-07-28 in its header or its _meta.
	metaVersion := metaString(env.Params, metaProtocolVersion)
	call := &callInfo{tools: ts, method: method}
	if hv == V20260728 || metaVersion != "" {
		if o, bad := checkModern(req, hv, metaVersion, method, env.Params, id); bad {
			return o
		}
		call.version, call.modern = metaVersion, true
		switch method {
		case "server/discover", "tools/list", "tools/call":
		default:
			return outcome{status: 404, body: errorBody(id, jsonrpc2.CodeMethodNotFound, "Method not found: "+method, nil)}
		}
	} else {
		call.version = hv
		if call.version == "" {
			call.version = V20250326
		}
		if inBatch && method == "initialize" {
			return outcome{status: 0, body: errorBody(id, jsonrpc2.CodeInvalidRequest, "Invalid Request: initialize must not be part of a batch", nil)}
		}
	}
	call.rawID, call.params = id, env.Params
	body, pooled, err := h.dispatchOne(ctx, call, stubMessage(id, method), id)
	if err != nil {
		h.log.Error("mcp dispatch failed", "method", method, "err", err)
		return outcome{500, errorBody(id, jsonrpc2.CodeInternalError, "Internal error", nil), false}
	}
	return outcome{0, body, pooled}
}

// checkModern validates the 2026-07-28 headers against the body.
func checkModern(req tools.MCPRequest, hv, metaVersion, method string, params json.RawMessage, id json.RawMessage) (outcome, bool) {
	switch {
	case hv == "":
		return outcome{status: 400, body: errorBody(id, codeHeaderMismatch, "Mcp-Protocol-Version header is required for requests carrying "+metaProtocolVersion, nil)}, true
	case metaVersion == "":
		return outcome{status: 400, body: errorBody(id, jsonrpc2.CodeInvalidParams, "missing or invalid _meta field "+strconv.Quote(metaProtocolVersion), nil)}, true
	case metaVersion != V20260728: // the only revision with per-request _meta
		return outcome{status: 400, body: errorBody(id, codeUnsupportedProtocolVers, "Unsupported protocol version: "+metaVersion,
			map[string]any{"supported": Versions, "requested": metaVersion})}, true
	case hv != metaVersion:
		return outcome{status: 400, body: errorBody(id, codeHeaderMismatch, "Mcp-Protocol-Version header "+strconv.Quote(hv)+" does not match _meta "+strconv.Quote(metaVersion), nil)}, true
	}
	mh := req.Header("Mcp-Method")
	if mh == "" {
		return outcome{status: 400, body: errorBody(id, codeHeaderMismatch, "missing required Mcp-Method header", nil)}, true
	}
	if mh != method {
		return outcome{status: 400, body: errorBody(id, codeHeaderMismatch, "Mcp-Method header "+strconv.Quote(mh)+" does not match the body method "+strconv.Quote(method), nil)}, true
	}
	if method == "tools/call" {
		nh := decodeHeaderValue(req.Header("Mcp-Name"))
		if nh == "" {
			return outcome{status: 400, body: errorBody(id, codeHeaderMismatch, "missing required Mcp-Name header for tools/call", nil)}, true
		}
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(params, &p)
		if nh != p.Name {
			return outcome{status: 400, body: errorBody(id, codeHeaderMismatch, "Mcp-Name header "+strconv.Quote(nh)+" does not match the tool name "+strconv.Quote(p.Name), nil)}, true
		}
	}
	return outcome{}, false
}

// decodeHeaderValue undoes the =?base64?...?= sentinel of header values (2026-07-28).
func decodeHeaderValue(v string) string {
	if inner, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if inner, ok = strings.CutSuffix(inner, "?="); ok {
			if b, err := base64.StdEncoding.DecodeString(inner); err == nil {
				return string(b)
			}
		}
	}
	return v
}

func metaString(params json.RawMessage, key string) string {
	if len(params) == 0 || !bytes.Contains(params, []byte(`"_meta"`)) {
		return ""
	}
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	s, _ := p.Meta[key].(string)
	return s
}

// validID accepts a JSON string or an integer (MCP forbids null ids; fractions are not ids).
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		_, err := strconv.ParseInt(string(id), 10, 64)
		return err == nil
	}
	return false
}

// batch handles a JSON array body: allowed by 2025-03-26 only (assumed without a version header).
func (h *Handler) batch(ctx context.Context, req tools.MCPRequest, ts tools.Set, hv string, body []byte, sse bool) tools.MCPResponse {
	version := hv
	if version == "" {
		version = V20250326
	}
	if version != V20250326 {
		return transportError(400, jsonrpc2.CodeInvalidRequest, "Invalid Request: JSON-RPC batching is not supported in protocol version "+version, nil)
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(body, &msgs); err != nil {
		if !json.Valid(body) {
			return transportError(400, jsonrpc2.CodeParseError, "Parse error: invalid JSON", nil)
		}
		return transportError(400, jsonrpc2.CodeInvalidRequest, "Invalid Request", nil)
	}
	if len(msgs) == 0 {
		return transportError(400, jsonrpc2.CodeInvalidRequest, "Invalid Request: empty batch", nil)
	}
	if len(msgs) > h.cfg.MaxBatch {
		return transportError(400, jsonrpc2.CodeInvalidRequest, "Invalid Request: a batch holds at most "+strconv.Itoa(h.cfg.MaxBatch)+" messages", nil)
	}
	var out [][]byte
	for _, m := range msgs {
		m = bytes.TrimSpace(m)
		if len(m) == 0 {
			continue
		}
		o := h.message(ctx, req, ts, hv, m, true)
		if o.body != nil {
			out = append(out, o.body)
			if o.pooled {
				defer release(o.body)() // after the join below copied it
			}
		}
	}
	if len(out) == 0 {
		return tools.MCPResponse{Status: 202}
	}
	b := append([]byte{'['}, bytes.Join(out, []byte{','})...)
	return render(200, append(b, ']'), sse)
}

// --- jsonrpc2 dispatch: one Conn per message over a one-shot ObjectStream (notes §5.1) ---

type callCtxKey struct{}

// callInfo is what the jsonrpc2 handler needs to know about the request, and where it leaves the
// encoded result.
type callInfo struct {
	tools   tools.Set
	method  string
	version string
	modern  bool

	rawID  []byte          // the client's id, echoed byte for byte
	params json.RawMessage // the request's params, exactly as received

	mu     sync.Mutex
	result []byte // the framed response without its closing brace, set when the handler succeeded
}

// framed is a result already written after frame()'s prefix.
type framed []byte

// framePool recycles response buffers (the HTTP adapters release them once written).
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const maxPooledFrame = 256 << 10

// frame starts a success response: {"jsonrpc":"2.0","id":<raw id>,"result": with room for n bytes.
func (c *callInfo) frame(n int) []byte {
	n += len(c.rawID) + 40
	var b []byte
	if n <= maxPooledFrame {
		p := framePool.Get().(*[]byte)
		b = (*p)[:0]
		if cap(b) < n {
			b = make([]byte, 0, n)
		}
	} else {
		b = make([]byte, 0, n)
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, c.rawID...)
	return append(b, `,"result":`...)
}

// oneShotStream feeds one message to a jsonrpc2.Conn and captures what it writes. The second read
// returns io.EOF, which closes the Conn; that is safe because the handler is synchronous.
type oneShotStream struct {
	mu   sync.Mutex
	msg  []byte
	read bool
	out  []byte
}

func (s *oneShotStream) ReadObject(v any) error {
	s.mu.Lock()
	first := !s.read
	s.read = true
	s.mu.Unlock()
	if first {
		return json.Unmarshal(s.msg, v)
	}
	return io.EOF
}

func (s *oneShotStream) WriteObject(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.out = b
	s.mu.Unlock()
	return nil
}

func (s *oneShotStream) Close() error { return nil }

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// stubMessage is the request jsonrpc2 reads: id and method only. The params travel in callInfo,
// exactly as received: jsonrpc2's Request decoder would decode the whole message three more times
// and re-encode params through a map (reordered keys, escaped HTML).
func stubMessage(id []byte, method string) []byte {
	m, _ := json.Marshal(method)
	b := make([]byte, 0, len(id)+len(m)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"method":`...)
	b = append(b, m...)
	return append(b, '}')
}

// dispatchOne runs one request through a fresh jsonrpc2.Conn and returns the response with the
// client's exact id bytes.
func (h *Handler) dispatchOne(ctx context.Context, call *callInfo, raw, rawID []byte) ([]byte, bool, error) {
	stream := &oneShotStream{msg: raw}
	conn := jsonrpc2.NewConn(context.WithValue(ctx, callCtxKey{}, call), stream, h.rpc, jsonrpc2.SetLogger(discardLogger{}))
	<-conn.DisconnectNotify()
	stream.mu.Lock()
	out := stream.out
	stream.mu.Unlock()
	call.mu.Lock()
	result := call.result
	call.mu.Unlock()
	if result != nil && out != nil {
		// jsonrpc2 framed the placeholder result; the real one was encoded once, in place, by the handler.
		return append(result, '}'), true, nil
	}
	if out == nil {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		return nil, false, errors.New("jsonrpc2 produced no response")
	}
	return withRawID(out, rawID), false, nil
}

// withRawID replaces the id jsonrpc2 wrote ({"id":X,...}) with the client's raw id: jsonrpc2.ID
// cannot represent negative integers and may re-escape strings.
func withRawID(out, rawID []byte) []byte {
	const prefix = `{"id":`
	if !bytes.HasPrefix(out, []byte(prefix)) {
		return out
	}
	rest := out[len(prefix):]
	var end int
	if len(rest) > 0 && rest[0] == '"' {
		dec := json.NewDecoder(bytes.NewReader(rest))
		var s string
		if dec.Decode(&s) != nil {
			return out
		}
		end = int(dec.InputOffset())
	} else {
		end = bytes.IndexByte(rest, ',')
		if end < 0 {
			return out
		}
	}
	if bytes.Equal(rest[:end], rawID) {
		return out
	}
	b := make([]byte, 0, len(out)+len(rawID))
	b = append(b, prefix...)
	b = append(b, rawID...)
	return append(b, rest[end:]...)
}

// resultPlaceholder is what the jsonrpc2 handler returns on success. Results are encoded exactly
// once, into callInfo.result, and spliced into the response by dispatchOne: letting jsonrpc2 carry
// them would re-validate and re-compact every byte three more times (SetResult, Response.MarshalJSON,
// and the stream's WriteObject), which dominated the CPU profile.
var resultPlaceholder = json.RawMessage("true")

// dispatch is the jsonrpc2 handler: MCP methods to results. Errors are *jsonrpc2.Error.
func (h *Handler) dispatch(ctx context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
	call, _ := ctx.Value(callCtxKey{}).(*callInfo)
	if call == nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "Internal error"}
	}
	res, err := h.method(ctx, call, r)
	if err != nil {
		return nil, err
	}
	var b []byte
	switch v := res.(type) {
	case framed:
		b = v
	default:
		enc, err := json.Marshal(v)
		if err != nil {
			h.log.Error("encode mcp result", "method", r.Method, "err", err)
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "Internal error"}
		}
		b = append(call.frame(len(enc)+1), enc...)
	}
	call.mu.Lock()
	call.result = b
	call.mu.Unlock()
	return resultPlaceholder, nil
}

// method runs one MCP method.
func (h *Handler) method(ctx context.Context, call *callInfo, r *jsonrpc2.Request) (any, error) {
	params := call.params
	if string(params) == "null" {
		params = nil
	}
	switch r.Method {
	case "initialize":
		return h.initialize(params)
	case "ping":
		return json.RawMessage(`{}`), nil
	case "server/discover":
		if !call.modern {
			break
		}
		return h.modernResult(call, map[string]any{"supportedVersions": Versions,
			"capabilities": map[string]any{"tools": map[string]any{"listChanged": false}},
			"instructions": h.cfg.Instructions}, true), nil
	case "tools/list":
		return h.listTools(call, params)
	case "tools/call":
		return h.callTool(ctx, call, params)
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "Method not found: " + r.Method}
}

func invalidParams(msg string) *jsonrpc2.Error {
	return &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "Invalid params: " + msg}
}

func (h *Handler) initialize(params json.RawMessage) (any, error) {
	var p struct {
		ProtocolVersion *string         `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil || p.ProtocolVersion == nil {
		return nil, invalidParams("initialize requires protocolVersion, capabilities and clientInfo")
	}
	version := *p.ProtocolVersion
	if !slices.Contains(legacyVersions, version) {
		version = V20251125 // the latest revision served with initialize
	}
	res := map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
		"serverInfo":      h.info,
	}
	if h.cfg.Instructions != "" {
		res["instructions"] = h.cfg.Instructions
	}
	return res, nil
}

// modernResult adds what every 2026-07-28 result carries.
func (h *Handler) modernResult(call *callInfo, res map[string]any, cacheable bool) map[string]any {
	if !call.modern {
		return res
	}
	res["resultType"] = "complete"
	res["_meta"] = map[string]any{metaServerInfo: h.info}
	if cacheable {
		res["ttlMs"] = h.cfg.ListTTL.Milliseconds()
		res["cacheScope"] = "private" // tool lists depend on the caller's key
	}
	return res
}

func (h *Handler) listTools(call *callInfo, params json.RawMessage) (any, error) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if len(params) > 0 && json.Unmarshal(params, &p) != nil {
		return nil, invalidParams("cursor must be a string")
	}
	all := call.tools.Tools()
	offset := 0
	if p.Cursor != nil {
		n, ok := parseCursor(*p.Cursor)
		if !ok || n > len(all) {
			return nil, invalidParams("unknown cursor")
		}
		offset = n
	}
	end := min(offset+h.cfg.PageSize, len(all))
	size := 256
	for _, d := range all[offset:end] {
		size += len(d.Raw) + 1
	}
	b := call.frame(size)
	b = append(b, `{"tools":[`...)
	for i, d := range all[offset:end] {
		if i > 0 {
			b = append(b, ',')
		}
		raw := d.Raw
		if len(raw) == 0 {
			var err error
			if raw, err = json.Marshal(d); err != nil {
				return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "Internal error"}
			}
		}
		b = append(b, raw...)
	}
	b = append(b, ']')
	if end < len(all) {
		b = append(b, `,"nextCursor":"`+makeCursor(end)+`"`...)
	}
	if call.modern {
		extra, _ := json.Marshal(h.modernResult(call, map[string]any{}, true))
		b = append(b, ',')
		b = append(b, extra[1:len(extra)-1]...)
	}
	return framed(append(b, '}')), nil
}

func makeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("tools:" + strconv.Itoa(offset)))
}

func parseCursor(c string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), "tools:")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

func (h *Handler) callTool(ctx context.Context, call *callInfo, params json.RawMessage) (any, error) {
	var p struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil || p.Name == nil || *p.Name == "" {
		return nil, invalidParams("tools/call requires a tool name")
	}
	if len(p.Arguments) > 0 && p.Arguments[0] != '{' && string(p.Arguments) != "null" {
		return nil, invalidParams("arguments must be an object")
	}
	res, err := call.tools.Call(ctx, *p.Name, p.Arguments)
	if err != nil {
		if supplyplan.ErrorCode(err) == supplyplan.ENOTFOUND {
			return nil, invalidParams(supplyplan.ErrorMessage(err))
		}
		if supplyplan.ErrorCode(err) == supplyplan.EUNAVAILABLE {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: supplyplan.ErrorMessage(err)}
		}
		h.log.Error("tool call failed", "tool", *p.Name, "err", err)
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "Internal error"}
	}
	b, err := res.AppendCallResult(call.frame(res.EncodedSizeHint()+128), call.version == V20250326)
	if err != nil {
		h.log.Error("encode tool result", "tool", *p.Name, "err", err)
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "Internal error"}
	}
	if call.modern {
		extra, _ := json.Marshal(h.modernResult(call, map[string]any{}, false))
		b = append(b[:len(b)-1], ',')
		b = append(b, extra[1:]...)
	}
	return framed(b), nil
}
