package http

import "testing"

func TestRouterPrecedenceAndParams(t *testing.T) {
	rt := newRouter()
	var hit string
	mk := func(name string) handlerFunc { return func(*Request) error { hit = name; return nil } }
	rt.handle("GET", "/x/:id", mk("get-id"))
	rt.handle("GET", "/x/pending", mk("pending"))
	rt.handle("POST", "/x/:id/approve", mk("approve"))
	rt.handle("DELETE", "/x/:id", mk("delete-id"))
	rt.handle("GET", "/", mk("root")) // the console's home: a route with one empty segment
	rt.handle("GET", "/:page", mk("page"))
	tests := []struct {
		method, path, want, allow, id string
	}{
		{"GET", "/x/pending", "pending", "", ""},
		{"GET", "/x/abc", "get-id", "", "abc"},
		{"GET", "/x/abc/", "get-id", "", "abc"},
		{"POST", "/x/abc/approve", "approve", "", "abc"},
		{"HEAD", "/x/abc", "get-id", "", "abc"},
		{"PUT", "/x/abc", "", "DELETE, GET", ""},
		{"POST", "/x/pending", "", "GET", ""},
		{"GET", "/y", "page", "", ""},
		{"GET", "/", "root", "", ""},
		{"GET", "", "root", "", ""},
		{"POST", "/", "", "GET", ""},
	}
	for _, tc := range tests {
		hit = ""
		h, ps, allow := rt.match([]byte(tc.method), []byte(tc.path))
		if h != nil {
			_ = h(nil)
		}
		if hit != tc.want || allow != tc.allow || ps.get("id") != tc.id {
			t.Errorf("%s %s: hit %q allow %q id %q, want %q %q %q", tc.method, tc.path, hit, allow, ps.get("id"), tc.want, tc.allow, tc.id)
		}
	}
}

// The split on every request (splitPathBytes, no allocation) agrees with splitPath, and a path of
// more segments than it holds takes the general way with the same result.
func TestRouterSplitWithoutAllocation(t *testing.T) {
	paths := []string{"", "/", "//", "/a", "a", "/a/", "/a//b", "//a//b//", "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p",
		"/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", "/api/forecast/scenarios/scn_1", "/x/%20/y"}
	for _, p := range paths {
		var buf [maxPathSegs][]byte
		got, ok := splitPathBytes([]byte(p), buf[:0])
		want := splitPath(p)
		if !ok {
			if len(want) <= maxPathSegs {
				t.Errorf("%q: not split, want %q", p, want)
			}
			continue
		}
		if len(got) != len(want) {
			t.Errorf("%q: %q, want %q", p, got, want)
			continue
		}
		for i := range got {
			if string(got[i]) != want[i] {
				t.Errorf("%q: %q, want %q", p, got, want)
			}
		}
	}
	rt := newRouter()
	long := "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/:id"
	rt.handle("GET", long, func(*Request) error { return nil })
	rt.handle("GET", "/api/forecast/scenarios/:id", func(*Request) error { return nil })
	r, ps, _ := rt.matchRoute([]byte("GET"), []byte("/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/42"), nil)
	if r == nil || ps.get("id") != "42" {
		t.Errorf("long path: route %v params %v, want %s with id 42", r, ps, long)
	}
	var pbuf [4]param
	path := []byte("/api/forecast/scenarios/scn_1")
	allocs := testing.AllocsPerRun(100, func() {
		if r, _, _ := rt.matchRoute([]byte("GET"), path, pbuf[:0]); r == nil {
			t.Fatal("no match")
		}
	})
	if allocs > 1 { // the parameter's value
		t.Errorf("%v allocations per match, want at most 1", allocs)
	}
}
