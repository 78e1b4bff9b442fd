package http

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// A Request goes back to the pool after its handler, unless it was retained (a streamed body, a
// detached request): a retained one is never handed to another request.
func TestRetainedRequestIsNotReused(t *testing.T) {
	s := NewServer(Config{}, Services{})
	var retained *Request
	seen := map[*Request]int{}
	s.router.handle("GET", "/test/retain", func(r *Request) error {
		r.retain()
		retained = r
		return nil
	})
	s.router.handle("GET", "/test/plain/:id", func(r *Request) error {
		seen[r]++
		if got, want := r.Param("id"), string(r.Ctx.Path()[len("/test/plain/"):]); got != want {
			t.Errorf("parameter %q in request for %q (state of another request?)", got, want)
		}
		if r.retained || r.Principal.KeyID != "" {
			t.Error("a pooled Request came back with another request's state")
		}
		r.Principal.KeyID = "key_x" // state a reused Request must not carry over
		return nil
	})
	do := func(path string) {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI(path)
		ctx.Request.Header.SetMethod("GET")
		s.Handler()(&ctx)
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("%s: %d %s", path, ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
	do("/test/retain")
	reused := 0
	for i := range 200 {
		do("/test/plain/" + string(rune('a'+i%26)))
	}
	for r, n := range seen {
		if r == retained {
			t.Fatal("a retained Request served another request")
		}
		if n > 1 {
			reused++
		}
	}
	if reused == 0 {
		t.Log("the pool handed out no Request twice (the reuse half of the test is void on this run)")
	}
}
