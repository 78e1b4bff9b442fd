package http

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// BenchmarkForward compares a GET answered by the owner directly with the same GET sent to a node
// that forwards it (one more hop on loopback: both nodes' handling plus the forwarding client).
//
//	go test ./http -run '^$' -bench BenchmarkForward -benchtime 20000x
func BenchmarkForward(b *testing.B) {
	addrA, addrB := reserveAddr(b), reserveAddr(b)
	mustAPINode(b, "node-a", addrA, &fakeOwners{self: addrA, owner: map[string]string{"org-1": addrB}})
	mustAPINode(b, "node-b", addrB, &fakeOwners{self: addrB, owner: map[string]string{"org-1": addrB}})
	for _, c := range []struct{ name, addr string }{{"direct", addrB}, {"forwarded", addrA}} {
		b.Run(c.name, func(b *testing.B) {
			client := &fasthttp.Client{MaxConnsPerHost: 64}
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI("http://" + c.addr + "/api/inventory/transfers?limit=5")
			req.Header.Set("Authorization", "Bearer "+testAdminKey)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := client.DoTimeout(req, resp, 5*time.Second); err != nil || resp.StatusCode() != 200 {
					b.Fatalf("%v %d %s", err, resp.StatusCode(), resp.Body())
				}
			}
		})
	}
}
