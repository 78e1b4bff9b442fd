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
