package http

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/url"
	"path"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/web"
)

// ConsoleConfig configures the operator console.
type ConsoleConfig struct {
	Addr string
	// SessionTTL is the absolute lifetime of a session, SessionIdle how long an unused one lives.
	SessionTTL  time.Duration
	SessionIdle time.Duration
	// BodyLimit caps form bodies; ImportMaxBytes and ImportMaxRows cap an uploaded import file (as
	// the API's import endpoints do).
	BodyLimit      int
	ImportMaxBytes int
	ImportMaxRows  int
	RequestTimeout time.Duration
	// SecureCookie adds the Secure attribute (set it when the console is served over HTTPS).
	SecureCookie bool
	Logger       *slog.Logger
	BodyBudget   *BodyBudget
	// Now is the session clock (tests); nil: time.Now.
	Now func() time.Time
	// Sessions keeps the sessions (nil: in this process's memory). Give every node the same
	// shared store (redisstore.ConsoleSessions) in the distributed mode.
	Sessions SessionStore
	// Owners and NodeID route each organization's pages to its owner (see Config.Owners); the
	// sessions must then be shared.
	Owners Owners
	NodeID string
}

// ConsoleServer is the operator console: server-rendered pages over the services the REST API
// calls, with the same permission checks (tenantCheck, importCheck).
type ConsoleServer struct {
	cfg      ConsoleConfig
	svc      Services
	log      *slog.Logger
	router   *router
	sessions *sessionStore
	pages    map[string]*template.Template
	static   fs.FS
	etags    map[string]string
	fwd      *forwarder
	listener
}

// Session cookie names. The login cookie carries the sign-in form's CSRF token (double submit).
const (
	sessionCookie = "sp_console"
	loginCookie   = "sp_console_login"
	csrfField     = "_csrf"
	csrfHeader    = "X-CSRF-Token"
)

// consoleCSP allows scripts and styles from the console's own origin only: no inline script, no
// inline style element, no eval (htmx runs with allowEval off, see layout.html).
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// NewConsoleServer builds the console and parses its templates.
func NewConsoleServer(cfg ConsoleConfig, svc Services) (*ConsoleServer, error) {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 2 * time.Hour
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 1 << 20
	}
	if cfg.ImportMaxBytes <= 0 {
		cfg.ImportMaxBytes = 32 << 20
	}
	if cfg.ImportMaxRows <= 0 {
		cfg.ImportMaxRows = 50000
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	s := &ConsoleServer{cfg: cfg, svc: svc, log: cfg.Logger, router: newRouter(), static: web.Static(),
		sessions: &sessionStore{store: cfg.Sessions, ttl: cfg.SessionTTL, idle: cfg.SessionIdle, now: now}}
	if s.sessions.store == nil {
		s.sessions.store = NewMemorySessions()
	}
	if err := s.parseTemplates(); err != nil {
		return nil, err
	}
	if err := s.hashStatic(); err != nil {
		return nil, err
	}
	s.fwd = newForwarder(cfg.Owners, cfg.NodeID, cfg.Addr, false, cfg.Logger)
	s.consoleRoutes()
	s.listener = newListener("console", cfg.Addr, "supplyplan-console", cfg.BodyBudget, cfg.Logger, s.handle)
	return s, nil
}

// Handler exposes the request handler (in-memory tests).
func (s *ConsoleServer) Handler() fasthttp.RequestHandler { return s.handle }

func (s *ConsoleServer) parseTemplates() error {
	tfs := web.Templates()
	names, err := fs.Glob(tfs, "*.html")
	if err != nil {
		return err
	}
	s.pages = map[string]*template.Template{}
	for _, n := range names {
		if n == "layout.html" || n == "partials.html" {
			continue
		}
		t, err := template.New(n).Funcs(consoleFuncs).ParseFS(tfs, "layout.html", "partials.html", n)
		if err != nil {
			return fmt.Errorf("parse console template %s: %w", n, err)
		}
		s.pages[strings.TrimSuffix(n, ".html")] = t
	}
	return nil
}

// hashStatic computes an ETag per static file (they never change while the binary runs).
func (s *ConsoleServer) hashStatic() error {
	s.etags = map[string]string{}
	return fs.WalkDir(s.static, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(s.static, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		s.etags[p] = `"` + hex.EncodeToString(sum[:8]) + `"`
		return nil
	})
}

// SessionCount is the number of live sessions (tests, operations).
func (s *ConsoleServer) SessionCount() int { return s.sessions.count() }

// ---- sessions ----

// consoleSession is a signed-in browser (see supplyplan.ConsoleSession).
type consoleSession = supplyplan.ConsoleSession

// SessionStore keeps the console's sessions: in this process's memory by default, shared by every
// node in Redis (redisstore.Sessions) when the console runs on several.
type SessionStore interface {
	// PutSession stores a new session.
	PutSession(ctx context.Context, s supplyplan.ConsoleSession) error
	// TouchSession returns the live session id and marks it used at now; a session past its
	// Expires or unused for its Idle is gone (false).
	TouchSession(ctx context.Context, id string, now time.Time) (supplyplan.ConsoleSession, bool, error)
	// SetSessionImportKey keeps an import key for the session's next uploads.
	SetSessionImportKey(ctx context.Context, id, key string) error
	// DeleteSession revokes a session.
	DeleteSession(ctx context.Context, id string) error
	// SessionCount is the number of live sessions.
	SessionCount(ctx context.Context) (int, error)
}

// sessionStore is the console's use of a SessionStore: its lifetimes and clock.
type sessionStore struct {
	store SessionStore
	ttl   time.Duration
	idle  time.Duration
	now   func() time.Time
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashToken(t string) string {
	sum := sha256.Sum256([]byte(t))
	return hex.EncodeToString(sum[:])
}

// sessionsUnavailable is the answer when the session store cannot be reached.
func sessionsUnavailable(err error) error {
	return &supplyplan.Error{Code: supplyplan.EUNAVAILABLE, Message: "Sessions are unavailable: retry shortly", RetryAfter: time.Second}
}

// create stores a session for secret and returns the cookie value.
func (st *sessionStore) create(ctx context.Context, secret string) (string, *consoleSession, error) {
	token := randomToken()
	now := st.now()
	sess := &consoleSession{ID: hashToken(token), Secret: secret, CSRF: randomToken(), Created: now,
		Expires: now.Add(st.ttl), Idle: st.idle}
	if err := st.store.PutSession(ctx, *sess); err != nil {
		return "", nil, err
	}
	return token, sess, nil
}

// get returns the live session of a cookie value and marks it used.
func (st *sessionStore) get(ctx context.Context, token string) (*consoleSession, bool, error) {
	if token == "" {
		return nil, false, nil
	}
	x, ok, err := st.store.TouchSession(ctx, hashToken(token), st.now())
	if err != nil || !ok {
		return nil, false, err
	}
	return &x, true, nil
}

func (st *sessionStore) setImportKey(ctx context.Context, id, key string) error {
	return st.store.SetSessionImportKey(ctx, id, key)
}

func (st *sessionStore) delete(ctx context.Context, id string) error {
	return st.store.DeleteSession(ctx, id)
}

func (st *sessionStore) count() int {
	n, _ := st.store.SessionCount(context.Background())
	return n
}

// memSessions is the in-memory SessionStore (one process).
type memSessions struct {
	mu sync.Mutex
	m  map[string]*memSession
}

type memSession struct {
	s    supplyplan.ConsoleSession
	seen time.Time
}

// NewMemorySessions returns an in-memory SessionStore: the embedded default.
func NewMemorySessions() SessionStore { return &memSessions{m: map[string]*memSession{}} }

func (x *memSession) expired(now time.Time) bool {
	return now.After(x.s.Expires) || now.Sub(x.seen) > x.s.Idle
}

func (st *memSessions) PutSession(_ context.Context, s supplyplan.ConsoleSession) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	for id, x := range st.m { // sweep expired sessions on sign-in: the map never grows unbounded
		if x.expired(s.Created) {
			delete(st.m, id)
		}
	}
	st.m[s.ID] = &memSession{s: s, seen: s.Created}
	return nil
}

func (st *memSessions) TouchSession(_ context.Context, id string, now time.Time) (supplyplan.ConsoleSession, bool, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	x, ok := st.m[id]
	if !ok {
		return supplyplan.ConsoleSession{}, false, nil
	}
	if x.expired(now) {
		delete(st.m, id)
		return supplyplan.ConsoleSession{}, false, nil
	}
	x.seen = now
	return x.s, true, nil
}

func (st *memSessions) SetSessionImportKey(_ context.Context, id, key string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if x, ok := st.m[id]; ok {
		x.s.ImportKey = key
	}
	return nil
}

func (st *memSessions) DeleteSession(_ context.Context, id string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.m, id)
	return nil
}

func (st *memSessions) SessionCount(context.Context) (int, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.m), nil
}

// ---- requests ----

// consoleRequest is one console request: the signed-in principal, its organization (tenant
// sessions) and the parsed form of a POST.
type consoleRequest struct {
	Ctx     *fasthttp.RequestCtx
	Context context.Context
	srv     *ConsoleServer
	params  params
	sess    *consoleSession
	P       supplyplan.Principal
	Org     supplyplan.Organization
	form    *url.Values
	files   map[string]uploadedFile
	body    body
}

type consoleHandler func(*consoleRequest) error

// uploadedFile is a file part of a multipart form: its name and Content-Type as the browser sent
// them, and its bytes.
type uploadedFile struct {
	name, contentType string
	data              []byte
}

// isCSV reports whether the file is CSV: sent as text/csv or named *.csv (browsers on some
// systems send a .csv file as application/vnd.ms-excel or application/octet-stream).
func (f uploadedFile) isCSV() bool {
	return isCSV([]byte(f.contentType)) || strings.HasSuffix(strings.ToLower(f.name), ".csv")
}

// Param is a path parameter.
func (r *consoleRequest) Param(name string) string { return r.params.get(name) }

// Query reads a query parameter.
func (r *consoleRequest) Query(name string) string {
	return string(r.Ctx.QueryArgs().Peek(name))
}

// QueryAll reads every value of a repeated query parameter.
func (r *consoleRequest) QueryAll(name string) []string {
	var out []string
	for _, v := range r.Ctx.QueryArgs().PeekMulti(name) {
		if len(v) > 0 {
			out = append(out, string(v))
		}
	}
	return out
}

// Form reads a field of the POSTed form.
func (r *consoleRequest) Form(name string) string {
	if r.form == nil {
		return ""
	}
	return strings.TrimSpace(r.form.Get(name))
}

// FormAll reads every value of a repeated form field.
func (r *consoleRequest) FormAll(name string) []string {
	if r.form == nil {
		return nil
	}
	return (*r.form)[name]
}

// htmx reports whether the request is an htmx partial request.
func (r *consoleRequest) htmx() bool { return len(r.Ctx.Request.Header.Peek("HX-Request")) > 0 }

// can reports whether the session may use perm (with the feature's entitlement): the API's rule.
func (r *consoleRequest) can(perm supplyplan.Permission, feat *feature) bool {
	_, err := tenantCheck(r.srv.svc.Auth, r.P, perm, feat)
	return err == nil
}

// require enforces perm: the same check as the REST endpoint of the action.
func (r *consoleRequest) require(perm supplyplan.Permission, feat *feature) error {
	_, err := tenantCheck(r.srv.svc.Auth, r.P, perm, feat)
	return err
}

func (s *ConsoleServer) handle(ctx *fasthttp.RequestCtx) {
	defer func() {
		if rec := recover(); rec != nil {
			s.log.Error("console handler panic", "path", string(ctx.Path()), "panic", rec, "stack", string(debug.Stack()))
			ctx.ResetBody()
			s.plainError(ctx, fasthttp.StatusInternalServerError, "Internal error")
		}
	}()
	defer discardUnread(ctx)
	h := &ctx.Response.Header
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	hf, ps, allow := s.router.match(ctx.Method(), ctx.Path())
	if hf == nil {
		if allow != "" {
			ctx.Response.Header.Set("Allow", allow)
			s.plainError(ctx, fasthttp.StatusMethodNotAllowed, "Method not allowed")
			return
		}
		s.plainError(ctx, fasthttp.StatusNotFound, "Not found")
		return
	}
	rctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	r := &Request{Ctx: ctx, Context: rctx, params: ps, budget: s.budget, decodeLimit: s.cfg.BodyLimit, bodyLimit: s.cfg.BodyLimit}
	defer func() { r.body.release() }()
	if err := hf(r); err != nil {
		s.log.Error("console request failed", "method", string(ctx.Method()), "path", string(ctx.Path()), "err", err)
		s.plainError(ctx, fasthttp.StatusInternalServerError, "Internal error")
	}
}

func (s *ConsoleServer) plainError(ctx *fasthttp.RequestCtx, status int, msg string) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString(msg + "\n")
}

// page wraps a handler that needs a session. Without one a page redirects to the sign-in form,
// and an htmx or POST request gets 401. Every POST must carry the session's CSRF token (form
// field _csrf or header X-CSRF-Token) and, when the browser sends one, a same-origin Origin.
func (s *ConsoleServer) page(h consoleHandler) handlerFunc {
	return func(req *Request) error {
		ctx := req.Ctx
		cr := &consoleRequest{Ctx: ctx, Context: req.Context, srv: s, params: req.params}
		sess, ok, err := s.sessions.get(req.Context, string(ctx.Request.Header.Cookie(sessionCookie)))
		if err != nil {
			s.log.Warn("console sessions unavailable", "err", err)
			ctx.Response.Header.Set("Retry-After", "1")
			return s.renderErr(cr, sessionsUnavailable(err))
		}
		if ok {
			p, live := s.svc.Auth.Authenticate(sess.Secret)
			if !live { // the key was revoked: so is every session it opened
				s.dropSession(req.Context, sess.ID)
				ok = false
			} else {
				cr.sess, cr.P = sess, p
				if !p.Platform {
					if cr.Org, live = s.svc.Auth.Organization(p.OrgID); !live {
						s.dropSession(req.Context, sess.ID)
						ok = false
					}
				}
			}
		}
		post := string(ctx.Method()) != "GET" && string(ctx.Method()) != "HEAD"
		if !ok {
			if post || cr.htmx() {
				return s.status(cr, fasthttp.StatusUnauthorized, "Your session has ended: sign in again.")
			}
			seeOther(ctx, "/login?next="+url.QueryEscape(string(ctx.RequestURI())))
			return nil
		}
		if s.fwd != nil {
			key := PlatformOwnerKey
			if !cr.P.Platform {
				key = cr.P.OrgID
			}
			deadline, _ := req.Context.Deadline()
			err := s.fwd.route(ctx, key, ctx.Request.Header.Peek(requestIDHeader), deadline, func() ([]byte, error) {
				req.bodyLimit = s.formLimit(ctx)
				return req.Body()
			})
			if err == errForwarded { // the owner's page is the response
				return nil
			}
			if err != nil {
				if supplyplan.ErrorCode(err) == supplyplan.EUNAVAILABLE {
					ctx.Response.Header.Set("Retry-After", "1")
				}
				return s.renderErr(cr, err)
			}
		}
		if post {
			if !sameOrigin(ctx) {
				return s.status(cr, fasthttp.StatusForbidden, "Cross-origin request refused.")
			}
			if err := s.readForm(cr, req); err != nil {
				return s.renderErr(cr, err)
			}
			token := string(ctx.Request.Header.Peek(csrfHeader))
			if token == "" {
				token = cr.Form(csrfField)
			}
			if subtle.ConstantTimeCompare([]byte(token), []byte(sess.CSRF)) != 1 {
				return s.status(cr, fasthttp.StatusForbidden, "Missing or invalid CSRF token: reload the page and try again.")
			}
		}
		ctx.Response.Header.Set("Cache-Control", "no-store")
		return s.renderErr(cr, h(cr))
	}
}

// sameOrigin accepts a request without an Origin header (older browsers, same-origin GET) or with
// the console's own origin.
func sameOrigin(ctx *fasthttp.RequestCtx) bool {
	o := string(ctx.Request.Header.Peek("Origin"))
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == string(ctx.Host())
}

// formLimit is the largest form body of a request: an upload's (multipart) is the import limit.
func (s *ConsoleServer) formLimit(ctx *fasthttp.RequestCtx) int {
	if mt, _, _ := mime.ParseMediaType(string(ctx.Request.Header.ContentType())); mt == "multipart/form-data" {
		return s.cfg.ImportMaxBytes + 64<<10
	}
	return s.cfg.BodyLimit
}

// readForm reads a urlencoded or multipart body (multipart: under the import limit, files kept
// apart).
func (s *ConsoleServer) readForm(cr *consoleRequest, req *Request) error {
	mt, params, _ := mime.ParseMediaType(string(cr.Ctx.Request.Header.ContentType()))
	req.bodyLimit = s.formLimit(cr.Ctx)
	b, err := req.Body()
	if err != nil {
		return err
	}
	vals := url.Values{}
	cr.form = &vals
	switch mt {
	case "multipart/form-data":
		return parseMultipart(b, params["boundary"], cr)
	case "", "application/x-www-form-urlencoded":
		v, err := url.ParseQuery(string(b))
		if err != nil {
			return supplyplan.Invalid("body", "is not a valid form")
		}
		*cr.form = v
	default:
		return supplyplan.Invalid("content-type", "must be application/x-www-form-urlencoded or multipart/form-data")
	}
	return nil
}

// status renders a status page (or, for htmx, a small fragment) with msg.
func (s *ConsoleServer) status(cr *consoleRequest, code int, msg string) error {
	cr.Ctx.SetStatusCode(code)
	if cr.htmx() {
		cr.Ctx.SetContentType("text/html; charset=utf-8")
		cr.Ctx.SetBodyString(`<p class="error" role="alert">` + template.HTMLEscapeString(msg) + "</p>")
		return nil
	}
	return s.render(cr, "status", "Error", "", map[string]any{"Code": code, "Message": msg})
}

// renderErr renders an error a handler returned: the API's status and message.
func (s *ConsoleServer) renderErr(cr *consoleRequest, err error) error {
	if err == nil {
		return nil
	}
	code := supplyplan.ErrorCode(err)
	if code == supplyplan.EINTERNAL {
		s.log.Error("console request failed", "path", string(cr.Ctx.Path()), "err", err)
		return s.status(cr, fasthttp.StatusInternalServerError, "Internal error")
	}
	return s.status(cr, StatusOf(code), errorText(err))
}

// errorText is an API error as one line: its message and field details.
func errorText(err error) string {
	var e *supplyplan.Error
	if !errors.As(err, &e) {
		return "Internal error"
	}
	msg := e.Message
	fields := make([]string, 0, len(e.Details))
	for f := range e.Details {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		msg += "; " + f + ": " + strings.Join(e.Details[f], ", ")
	}
	return msg
}

// fieldErrors returns the field details of a validation error (nil for other errors): a form shows
// each next to its field.
func fieldErrors(err error) map[string][]string {
	var e *supplyplan.Error
	if errors.As(err, &e) && e.Code == supplyplan.EVALIDATION {
		if len(e.Details) == 0 {
			return map[string][]string{"": {e.Message}}
		}
		return e.Details
	}
	return nil
}

// view is what every page template gets.
type view struct {
	Title   string
	Nav     string
	Org     supplyplan.Organization
	Role    supplyplan.Role
	CSRF    string
	Signed  bool
	Tenant  bool
	Perm    map[string]bool
	Flash   string
	Errors  map[string][]string
	Data    any
	Elapsed string
}

// perms are the permissions the templates ask about (Perm["transfers.approve"], ...).
var consolePerms = []supplyplan.Permission{supplyplan.PermForecastRead, supplyplan.PermForecastWrite,
	supplyplan.PermTransfersRead, supplyplan.PermTransfersWrite, supplyplan.PermTransfersApprove, supplyplan.PermTransfersExecute,
	supplyplan.PermAlertsRead, supplyplan.PermAlertsWrite, supplyplan.PermWebhooksRead, supplyplan.PermWebhooksWrite,
	supplyplan.PermAllocationRead}

func (s *ConsoleServer) newView(cr *consoleRequest, title, nav string, data any) *view {
	v := &view{Title: title, Nav: nav, Data: data, Perm: map[string]bool{}}
	if cr.sess != nil {
		v.Signed, v.CSRF, v.Role, v.Org = true, cr.sess.CSRF, cr.P.Role, cr.Org
		v.Tenant = !cr.P.Platform && cr.P.Role != ""
		for _, p := range consolePerms {
			var feat *feature
			if p == supplyplan.PermForecastRead || p == supplyplan.PermForecastWrite {
				feat = featureForecasting
			}
			v.Perm[string(p)] = cr.can(p, feat)
		}
		v.Perm["platform"] = cr.P.Platform
	}
	v.Flash = string(cr.Ctx.QueryArgs().Peek("flash"))
	return v
}

// render writes page name (a template of web/templates) inside the layout.
func (s *ConsoleServer) render(cr *consoleRequest, name, title, nav string, data any) error {
	return s.renderView(cr, name, s.newView(cr, title, nav, data))
}

func (s *ConsoleServer) renderView(cr *consoleRequest, name string, v *view) error {
	t, ok := s.pages[name]
	if !ok {
		return fmt.Errorf("no console template %q", name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	cr.Ctx.SetContentType("text/html; charset=utf-8")
	cr.Ctx.SetBody(buf.Bytes())
	return nil
}

// fragment writes one named template of page name (an htmx partial) with data.
func (s *ConsoleServer) fragment(cr *consoleRequest, page, name string, data any) error {
	t, ok := s.pages[page]
	if !ok {
		return fmt.Errorf("no console template %q", page)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return fmt.Errorf("render %s/%s: %w", page, name, err)
	}
	cr.Ctx.SetContentType("text/html; charset=utf-8")
	cr.Ctx.SetBody(buf.Bytes())
	return nil
}

// redirect sends the browser to target (303 after a POST), with an optional flash message.
func redirect(cr *consoleRequest, target, flash string) error {
	if flash != "" {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		target += sep + "flash=" + url.QueryEscape(flash)
	}
	seeOther(cr.Ctx, target)
	return nil
}

// seeOther answers 303 with a relative Location (fasthttp's Redirect would make it absolute from
// the Host header).
func seeOther(ctx *fasthttp.RequestCtx, target string) {
	ctx.Response.Header.Set("Location", target)
	ctx.SetStatusCode(fasthttp.StatusSeeOther)
}

// clearCookie tells the browser to drop cookie name of path.
func clearCookie(ctx *fasthttp.RequestCtx, name, path string) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(name)
	c.SetPath(path)
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteStrictMode)
	c.SetMaxAge(-1)
	ctx.Response.Header.SetCookie(c)
}

// ---- sign-in ----

func (s *ConsoleServer) loginForm(req *Request) error {
	ctx := req.Ctx
	token := randomToken()
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(loginCookie)
	c.SetValue(token)
	c.SetPath("/login")
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteStrictMode)
	c.SetSecure(s.cfg.SecureCookie)
	c.SetMaxAge(3600)
	ctx.Response.Header.SetCookie(c)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	cr := &consoleRequest{Ctx: ctx, Context: req.Context, srv: s}
	v := s.newView(cr, "Sign in", "", map[string]any{"Next": safeNext(string(ctx.QueryArgs().Peek("next")))})
	v.CSRF = token
	return s.renderView(cr, "login", v)
}

// safeNext keeps a post-sign-in target on this site (a path, never //host or a URL).
func safeNext(n string) string {
	if !strings.HasPrefix(n, "/") || strings.HasPrefix(n, "//") || strings.HasPrefix(n, "/\\") || strings.HasPrefix(n, "/login") {
		return "/"
	}
	return n
}

func (s *ConsoleServer) login(req *Request) error {
	ctx := req.Ctx
	cr := &consoleRequest{Ctx: ctx, Context: req.Context, srv: s}
	if !sameOrigin(ctx) {
		return s.status(cr, fasthttp.StatusForbidden, "Cross-origin request refused.")
	}
	if err := s.readForm(cr, req); err != nil {
		return s.renderErr(cr, err)
	}
	want := string(ctx.Request.Header.Cookie(loginCookie))
	if want == "" || subtle.ConstantTimeCompare([]byte(cr.Form(csrfField)), []byte(want)) != 1 {
		return s.status(cr, fasthttp.StatusForbidden, "Missing or invalid CSRF token: reload the sign-in page and try again.")
	}
	key := cr.Form("apiKey")
	fail := func(msg string) error {
		ctx.SetStatusCode(fasthttp.StatusUnauthorized)
		v := s.newView(cr, "Sign in", "", map[string]any{"Next": safeNext(cr.Form("next"))})
		v.CSRF, v.Errors = want, map[string][]string{"apiKey": {msg}}
		return s.renderView(cr, "login", v)
	}
	if !wellFormedKey([]byte(key)) {
		return fail("not a Supplyplan key (keys look like sp_<kind>_<token>)")
	}
	p, ok := s.svc.Auth.Authenticate(key)
	if !ok {
		return fail("unknown or revoked key")
	}
	if !p.Platform && p.Role == "" {
		return fail("import keys cannot sign in: use a role key (ADMIN, MANAGER, PLANNER or VIEWER); the import screen asks for the import key")
	}
	token, _, err := s.sessions.create(cr.Context, key)
	if err != nil {
		s.log.Warn("console sessions unavailable", "err", err)
		ctx.Response.Header.Set("Retry-After", "1")
		return s.renderErr(cr, sessionsUnavailable(err))
	}
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(sessionCookie)
	c.SetValue(token)
	c.SetPath("/")
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteStrictMode)
	c.SetSecure(s.cfg.SecureCookie)
	c.SetMaxAge(int(s.cfg.SessionTTL / time.Second))
	ctx.Response.Header.SetCookie(c)
	clearCookie(ctx, loginCookie, "/login")
	next := safeNext(cr.Form("next"))
	if p.Platform && next == "/" {
		next = "/platform"
	}
	seeOther(ctx, next)
	return nil
}

// dropSession deletes a session whose key is revoked (a failure is logged: the key check refuses
// the session on every request anyway).
func (s *ConsoleServer) dropSession(ctx context.Context, id string) {
	if err := s.sessions.delete(ctx, id); err != nil {
		s.log.Warn("console session not deleted", "err", err)
	}
}

// logout revokes the session on the server and clears the cookie.
func (s *ConsoleServer) logout(cr *consoleRequest) error {
	if err := s.sessions.delete(cr.Context, cr.sess.ID); err != nil {
		s.log.Warn("console sessions unavailable", "err", err)
		cr.Ctx.Response.Header.Set("Retry-After", "1")
		return sessionsUnavailable(err) // the session is still live: say so rather than pretend
	}
	clearCookie(cr.Ctx, sessionCookie, "/")
	return redirect(cr, "/login", "Signed out.")
}

// ---- static files ----

func (s *ConsoleServer) serveStatic(req *Request) error {
	ctx := req.Ctx
	parts := make([]string, 0, len(req.params))
	for _, x := range req.params {
		parts = append(parts, x.value)
	}
	p := path.Clean(strings.Join(parts, "/"))
	etag, ok := s.etags[p]
	if !ok {
		s.plainError(ctx, fasthttp.StatusNotFound, "Not found")
		return nil
	}
	ctx.Response.Header.Set("ETag", etag)
	ctx.Response.Header.Set("Cache-Control", "public, max-age=3600")
	if string(ctx.Request.Header.Peek("If-None-Match")) == etag {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return nil
	}
	b, err := fs.ReadFile(s.static, p)
	if err != nil {
		return err
	}
	ct := mime.TypeByExtension(path.Ext(p))
	switch path.Ext(p) {
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".css":
		ct = "text/css; charset=utf-8"
	case "", ".md":
		ct = "text/plain; charset=utf-8"
	}
	ctx.SetContentType(ct)
	ctx.SetBody(b)
	return nil
}

// ---- template helpers ----

var consoleFuncs = template.FuncMap{
	"num": func(v any) string {
		switch x := v.(type) {
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64)
		case supplyplan.Quantity:
			return strconv.FormatFloat(float64(x), 'f', 2, 64)
		case *float64:
			if x == nil {
				return "—"
			}
			return strconv.FormatFloat(*x, 'f', 2, 64)
		case int:
			return strconv.Itoa(x)
		}
		return fmt.Sprint(v)
	},
	"pct": func(v *float64) string {
		if v == nil {
			return "—"
		}
		return strconv.FormatFloat(*v*100, 'f', 1, 64) + " %"
	},
	"when": func(v any) string {
		switch t := v.(type) {
		case time.Time:
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04")
		case *time.Time:
			if t == nil || t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04")
		}
		return ""
	},
	"day": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02")
	},
	"query": func(kv ...any) template.URL {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if s := fmt.Sprint(kv[i+1]); s != "" && s != "0" {
				v.Set(fmt.Sprint(kv[i]), s)
			}
		}
		return template.URL(v.Encode())
	},
	"weekTime": func(d supplyplan.Date) time.Time { return time.Time(d) },
	"mul100":   func(f float64) float64 { return f * 100 },
	"backq": func(q seriesQuery) string {
		v := url.Values{}
		for k, x := range map[string]string{"sku": q.SKU, "location": q.Location, "channel": q.Channel, "scenario": q.Scenario} {
			if x != "" {
				v.Set(k, x)
			}
		}
		for _, c := range q.Compare {
			v.Add("compare", c)
		}
		return v.Encode()
	},
	"row": rowData,
	"act": func(row map[string]any, action, label string) map[string]any {
		rec := row["Data"].(supplyplan.Recommendation)
		return map[string]any{"ID": rec.ID, "Action": action, "Label": label, "CSRF": row["CSRF"], "Back": row["Back"]}
	},
	"list":     func(xs ...string) []string { return xs },
	"join":     strings.Join,
	"add":      func(a, b int) int { return a + b },
	"sub":      func(a, b int) int { return a - b },
	"has":      func(list []string, x string) bool { return contains(list, x) },
	"progress": func(done, total int) int { return progressPct(done, total) },
}

// rowData is what a table-row template gets: the item, the session's permissions and CSRF token,
// and the list's query to come back to.
func rowData(v *view, item any, back string) map[string]any {
	return map[string]any{"Data": item, "Perm": v.Perm, "CSRF": v.CSRF, "Back": back}
}

func contains(list []string, x string) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

func progressPct(done, total int) int {
	if total <= 0 {
		return 100
	}
	return min(100, done*100/total)
}
