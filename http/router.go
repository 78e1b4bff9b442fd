package http

import (
	"bytes"
	"sort"
	"strings"

	"github.com/supplyplan/supplyplan/internal/telemetry"
)

// handlerFunc handles one routed request; a returned error is rendered by writeError.
type handlerFunc func(*Request) error

type route struct {
	method  string
	pattern string   // the route template, as registered ("/api/x/:id"): the route of logs and metrics
	segs    []string // ":name" segments are parameters
	static  int      // number of literal segments, to prefer /x/pending over /x/:id
	h       handlerFunc
	// obs counts the route's requests (nil without metrics); set once when the server is built.
	obs *telemetry.Route
}

// router matches "/a/:id/b" patterns. With a few dozen routes a scan is fast enough and keeps
// the precedence rule obvious: the match with the most literal segments wins.
type router struct {
	byLen map[int][]*route
}

func newRouter() *router { return &router{byLen: map[int][]*route{}} }

func (rt *router) handle(method, pattern string, h handlerFunc) {
	segs := splitPath(pattern)
	r := &route{method: method, pattern: pattern, segs: segs, h: h}
	for _, s := range segs {
		if !strings.HasPrefix(s, ":") {
			r.static++
		}
	}
	rt.byLen[len(segs)] = append(rt.byLen[len(segs)], r)
	sort.SliceStable(rt.byLen[len(segs)], func(i, j int) bool {
		return rt.byLen[len(segs)][i].static > rt.byLen[len(segs)][j].static
	})
}

// params holds path parameters in pattern order.
type params []param

type param struct{ name, value string }

func (p params) get(name string) string {
	for _, x := range p {
		if x.name == name {
			return x.value
		}
	}
	return ""
}

// match returns the handler and parameters for method and path, or nil and the allowed methods of
// the best path match (empty when no path matches).
func (rt *router) match(method, path []byte) (handlerFunc, params, string) {
	r, ps, allow := rt.matchRoute(method, path, nil)
	if r == nil {
		return nil, nil, allow
	}
	return r.h, ps, ""
}

// each calls fn with every route.
func (rt *router) each(fn func(*route)) {
	for _, rs := range rt.byLen {
		for _, r := range rs {
			fn(r)
		}
	}
}

// maxPathSegs is how many segments of a path matchRoute splits without allocating; a longer path
// (no route has that many) takes the general way.
const maxPathSegs = 16

// matchRoute is match returning the route itself (its template and metrics). The parameters are
// appended to ps (a caller's buffer; nil: a new slice). It runs on every request: the path is split
// into sub-slices on the stack, and only the parameters' values become strings.
func (rt *router) matchRoute(method, path []byte, ps params) (*route, params, string) {
	var buf [maxPathSegs][]byte
	segs, ok := splitPathBytes(path, buf[:0])
	if !ok {
		return rt.matchRouteSlow(method, path)
	}
	var allowed []string
	bestStatic := -1
	for _, r := range rt.byLen[len(segs)] {
		if r.static < bestStatic {
			break // routes are sorted by literal count; a less specific path match cannot win
		}
		if !r.matchesBytes(segs) {
			continue
		}
		if string(method) == r.method || (string(method) == "HEAD" && r.method == "GET") {
			for i, s := range r.segs {
				if strings.HasPrefix(s, ":") {
					ps = append(ps, param{s[1:], string(segs[i])})
				}
			}
			return r, ps, ""
		}
		bestStatic = r.static
		allowed = append(allowed, r.method)
	}
	sort.Strings(allowed)
	return nil, nil, strings.Join(allowed, ", ")
}

// matchRouteSlow is matchRoute for a path of more than maxPathSegs segments.
func (rt *router) matchRouteSlow(method, path []byte) (*route, params, string) {
	segs := splitPath(string(path))
	var allowed []string
	bestStatic := -1
	for _, r := range rt.byLen[len(segs)] {
		if r.static < bestStatic {
			break
		}
		if !r.matches(segs) {
			continue
		}
		if string(method) == r.method || (string(method) == "HEAD" && r.method == "GET") {
			var ps params
			for i, s := range r.segs {
				if strings.HasPrefix(s, ":") {
					ps = append(ps, param{s[1:], segs[i]})
				}
			}
			return r, ps, ""
		}
		bestStatic = r.static
		allowed = append(allowed, r.method)
	}
	sort.Strings(allowed)
	return nil, nil, strings.Join(allowed, ", ")
}

// matchesBytes is matches for a path split by splitPathBytes.
func (r *route) matchesBytes(segs [][]byte) bool {
	for i, s := range r.segs {
		if strings.HasPrefix(s, ":") {
			if len(segs[i]) == 0 {
				return false
			}
			continue
		}
		if s != string(segs[i]) {
			return false
		}
	}
	return true
}

// splitPathBytes is splitPath into buf without copying: false when the path has more segments
// than buf holds.
func splitPathBytes(p []byte, buf [][]byte) ([][]byte, bool) {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	for len(p) > 0 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	for {
		if len(buf) == cap(buf) {
			return nil, false
		}
		i := bytes.IndexByte(p, '/')
		if i < 0 {
			return append(buf, p), true
		}
		buf = append(buf, p[:i])
		p = p[i+1:]
	}
}

func (r *route) matches(segs []string) bool {
	for i, s := range r.segs {
		if strings.HasPrefix(s, ":") {
			if segs[i] == "" {
				return false
			}
			continue
		}
		if s != segs[i] {
			return false
		}
	}
	return true
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return []string{""}
	}
	return strings.Split(p, "/")
}
