package outbound

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/supplyplan/supplyplan"
)

func TestBlocked(t *testing.T) {
	for ip, want := range map[string]bool{
		"127.0.0.1": true, "10.0.0.1": true, "172.16.5.4": true, "192.168.1.1": true, "169.254.169.254": true,
		"100.64.0.1": true, "0.0.0.0": true, "::1": true, "fc00::1": true, "fe80::1": true, "::ffff:127.0.0.1": true,
		"224.0.0.1": true, "93.184.216.34": false, "8.8.8.8": false, "2606:4700::1111": false,
	} {
		if got := Blocked(net.ParseIP(ip)); got != want {
			t.Errorf("Blocked(%s) = %v, want %v", ip, got, want)
		}
	}
}

func TestPrivateDestinationsRefusedAtRegistrationAndConnect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	ctx := context.Background()
	strict := New(Config{})
	if err := strict.CheckURL(ctx, "url", srv.URL); supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
		t.Fatalf("loopback accepted: %v", err)
	}
	if err := strict.CheckURL(ctx, "url", "https://93.184.216.34/hook"); err != nil {
		t.Fatalf("public address refused: %v", err)
	}
	// Even if a URL got past registration (DNS rebinding), the connection is refused.
	r := strict.Send(ctx, supplyplan.OutboundMessage{Channel: supplyplan.DestWebhook, URL: srv.URL, Body: []byte(`{}`)})
	if r.StatusCode != -1 || r.Err == nil {
		t.Fatalf("send to loopback = %+v", r)
	}
	open := New(Config{AllowPrivate: true})
	if r := open.Send(ctx, supplyplan.OutboundMessage{Channel: supplyplan.DestWebhook, URL: srv.URL, Body: []byte(`{}`)}); r.StatusCode != 204 || r.Err != nil {
		t.Fatalf("send with AllowPrivate = %+v", r)
	}
	if r := open.Send(ctx, supplyplan.OutboundMessage{Channel: supplyplan.DestEmail, To: "a@b.co"}); r.StatusCode != -1 {
		t.Fatalf("e-mail without SMTP = %+v", r)
	}
}
