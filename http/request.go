package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/strictjson"
)

// Request is one routed request. Nothing in it may be kept after the handler returns: fasthttp
// reuses the RequestCtx and its byte slices. Handlers read the body with Body (or Decode), never
// with Ctx.PostBody: the body is still on the connection when the handler starts, and Body reads it
// under the route's limit and the body budget.
type Request struct {
	Ctx       *fasthttp.RequestCtx
	Context   context.Context
	Principal supplyplan.Principal
	Org       supplyplan.Organization
	params    params
	// paramBuf holds params (no allocation of their own for up to four).
	paramBuf [4]param
	server   *Server
	// budget is the listener's body budget, and decodeLimit the largest JSON body Decode takes
	// (the server's BodyLimit).
	budget      *BodyBudget
	decodeLimit int
	// bodyLimit is the largest body this request may send: the server's BodyLimit, raised to the
	// import limit by the import and signal routes once their key is checked.
	bodyLimit int
	body      body
	bodyErr   error
	bodyRead  bool
	// rate is what the rate limiter decided, for the response's RateLimit headers.
	rate rateState
	// requestID is the request's id (the loop runtime records it in the audit); on the API it is
	// written into idBuf.
	requestID []byte
	idBuf     [requestIDMax]byte
	// start is when the request arrived (the API sets it; zero elsewhere): the clock read of the
	// request log also serves its deadline and its rate limit.
	start time.Time
	// retained keeps the Request out of the server's pool (retain).
	retained bool
}

// retain marks the Request as used after its handler returns (a body written while the response
// streams, a request detached from its connection): it is not reused for another request.
func (r *Request) retain() { r.retained = true }

// Body reads the request body once, under the request's limit (413 beyond, before reading when
// Content-Length says so) and the server's body budget (503 with Retry-After when spent).
func (r *Request) Body() ([]byte, error) {
	if !r.bodyRead {
		r.bodyRead = true
		r.body, r.bodyErr = readBody(r.Ctx, r.bodyLimit, r.budget)
	}
	return r.body.b, r.bodyErr
}

// Param returns a path parameter (a copy).
func (r *Request) Param(name string) string { return r.params.get(name) }

// JSON writes v with status. It encodes into a pooled buffer that SetBody copies from, so that a
// response costs no allocation of its own beyond what encoding/json needs.
func (r *Request) JSON(status int, v any) error {
	e := responseEncoders.Get().(*responseEncoder)
	defer func() {
		if e.buf.Cap() <= maxPooledResponse {
			e.buf.Reset()
			responseEncoders.Put(e)
		}
	}()
	r.Ctx.SetStatusCode(status)
	r.Ctx.SetContentType("application/json")
	// Values with a hand-written encoding (supplyplan.AppendJSON: an event, a scenario) skip the
	// reflection.
	if b, ok := supplyplan.AppendJSON(e.raw[:0], v); ok {
		if cap(b) > maxPooledResponse {
			r.Raw(b)
			return nil
		}
		r.Ctx.SetBody(b)
		e.raw = b
		return nil
	}
	if err := e.enc.Encode(v); err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	b := e.buf.Bytes()
	b = b[:len(b)-1] // without the newline Encode ends with: the bytes json.Marshal makes
	if e.buf.Cap() > maxPooledResponse {
		r.Raw(b) // the buffer is not pooled (above): it goes out as it is
		return nil
	}
	r.Ctx.SetBody(b)
	return nil
}

// Raw makes b the response body without copying it, for a body written into a buffer of its own
// that nothing changes afterwards. A large body set with SetBody is copied into fasthttp's pooled
// buffer, which keeps it for the next response (uncalibrated pools keep any size): the 80 MB of
// 50,000 generated recommendations stayed resident after their response.
func (r *Request) Raw(b []byte) {
	r.Ctx.Response.SetBodyRaw(b)
}

// responseEncoder is a json.Encoder writing into its own buffer (json.Marshal's settings: HTML
// characters escaped), and a buffer for the hand-written encodings.
type responseEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
	raw []byte
}

// maxPooledResponse is the largest buffer kept for reuse; larger responses are rare (exports).
const maxPooledResponse = 1 << 20

var responseEncoders = sync.Pool{New: func() any {
	e := &responseEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// NoContent answers 204.
func (r *Request) NoContent() error {
	r.Ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// Decode parses the JSON object body into v, naming the field at fault on a type error. Bodies over
// the server's BodyLimit are 413.
func (r *Request) Decode(v any) error {
	b, err := r.Body()
	if err != nil {
		return err
	}
	return decodeJSON(b, r.decodeLimit, v)
}

// DecodeOptional is Decode but an empty body leaves v unchanged.
func (r *Request) DecodeOptional(v any) error {
	b, err := r.Body()
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return decodeJSON(b, r.decodeLimit, v)
}

// decodeJSON is the one request decoder: one JSON object, known field types, nothing after it,
// and strict (strictjson.Check): valid UTF-8, no key twice, keys matched case-sensitively.
func decodeJSON(body []byte, limit int, v any) error {
	return decodeJSONAs(body, limit, v, reflect.TypeOf(v))
}

// decodeJSONAs is decodeJSON with the strict checks made against schema rather than v's type
// (for a v that keeps parts raw, such as json.RawMessage rows decoded later).
func decodeJSONAs(body []byte, limit int, v any, schema reflect.Type) error {
	if limit > 0 && len(body) > limit {
		return &supplyplan.Error{Code: supplyplan.ETOOLARGE, Message: "Payload too large",
			Details: map[string][]string{"body": {fmt.Sprintf("must be at most %d bytes", limit)}}}
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return supplyplan.Invalid("body", "a JSON object is required")
	}
	if trimmed[0] != '{' {
		return supplyplan.Invalid("body", "must be a JSON object")
	}
	clean, _, err := strictjson.Check(trimmed, schema)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(clean, v); err != nil {
		return jsonError(err)
	}
	return supplyplan.CheckInput(v) // every string and number within its bound (limits.go)
}

// jsonError turns an encoding/json error into a VALIDATION_ERROR naming the field.
func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &supplyplan.Error{Code: supplyplan.EVALIDATION, Message: "Malformed JSON",
			Details: map[string][]string{"body": {fmt.Sprintf("invalid JSON at offset %d: %s", syn.Offset, syn.Error())}}}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "body"
		}
		return &supplyplan.Error{Code: supplyplan.EVALIDATION, Message: "Validation failed",
			Details: map[string][]string{field: {"must be " + kindName(typ.Type)}}}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &supplyplan.Error{Code: supplyplan.EVALIDATION, Message: "Malformed JSON",
			Details: map[string][]string{"body": {"unexpected end of JSON"}}}
	default:
		return &supplyplan.Error{Code: supplyplan.EVALIDATION, Message: "Malformed JSON",
			Details: map[string][]string{"body": {err.Error()}}}
	}
}

func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "of type " + t.String()
}

// Query reads and validates query parameters, collecting every problem before failing.
type Query struct {
	args *fasthttp.Args
	fe   supplyplan.FieldErrors
}

// Query starts reading the query string.
func (r *Request) Query() *Query {
	return &Query{args: r.Ctx.QueryArgs(), fe: supplyplan.FieldErrors{}}
}

// Err returns the collected validation error, if any.
func (q *Query) Err() error { return q.fe.Err() }

// Has reports whether the parameter is present.
func (q *Query) Has(name string) bool { return q.args.Has(name) }

// String returns the parameter (a copy), "" when absent.
func (q *Query) String(name string) string { return string(q.args.Peek(name)) }

// Bool parses true/false/1/0; def when absent.
func (q *Query) Bool(name string, def bool) bool {
	if !q.args.Has(name) {
		return def
	}
	switch strings.ToLower(string(q.args.Peek(name))) {
	case "true", "1", "yes":
		return true
	case "false", "0", "no":
		return false
	}
	q.fe.Add(name, "must be true or false")
	return def
}

// Enum returns the parameter if it is one of allowed, "" when absent.
func (q *Query) Enum(name string, allowed []string) string {
	v := string(q.args.Peek(name))
	if v == "" {
		return ""
	}
	if !slices.Contains(allowed, v) {
		q.fe.Add(name, "must be one of %s", strings.Join(allowed, ", "))
		return ""
	}
	return v
}

// Time parses an ISO date or date-time; ok is false when absent or invalid.
func (q *Query) Time(name string) (t time.Time, dateOnly, ok bool) {
	v := string(q.args.Peek(name))
	if v == "" {
		return time.Time{}, false, false
	}
	t, ok = supplyplan.ParseTime(v)
	if !ok {
		q.fe.Add(name, supplyplan.TimeMessage)
		return time.Time{}, false, false
	}
	return t, supplyplan.IsDateOnly(v), true
}

// Int parses an integer in [lo, hi]; def when absent.
func (q *Query) Int(name string, def, lo, hi int) int {
	if !q.args.Has(name) {
		return def
	}
	n, err := strconv.Atoi(string(q.args.Peek(name)))
	if err != nil || n < lo || n > hi {
		q.fe.Add(name, "must be an integer between %d and %d", lo, hi)
		return def
	}
	return n
}

// Float parses a number in [lo, hi]; ok is false when absent or invalid.
func (q *Query) Float(name string, lo, hi float64) (float64, bool) {
	if !q.args.Has(name) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(q.args.Peek(name)), 64)
	if err != nil || f < lo || f > hi {
		q.fe.Add(name, "must be a number between %g and %g", lo, hi)
		return 0, false
	}
	return f, true
}

func enumStrings[T ~string](vals []T) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out
}
