package outbound

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/supplyplan/supplyplan"
)

// TestRefusal holds the address table: every block of the IANA special-purpose registries that is
// not globally reachable, the reachable exceptions inside them, and IPv4 addresses carried inside
// IPv6 ones (NAT64, 6to4, Teredo, IPv4-mapped and -compatible).
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		refused bool
		says    string // part of the reason
	}{
		// IPv4 registry rows.
		{"0.0.0.0", true, "This host"},
		{"0.1.2.3", true, "This network"},
		{"10.0.0.1", true, "Private-Use"},
		{"100.64.0.1", true, "Shared Address Space"},
		{"100.127.255.254", true, "Shared Address Space"},
		{"127.0.0.1", true, "Loopback"},
		{"127.255.255.254", true, "Loopback"},
		{"169.254.169.254", true, "Link Local"},
		{"172.16.5.4", true, "Private-Use"},
		{"172.31.255.255", true, "Private-Use"},
		{"192.0.0.1", true, "Service Continuity"},
		{"192.0.0.8", true, "dummy"},
		{"192.0.0.100", true, "IETF Protocol Assignments"},
		{"192.0.0.170", true, "NAT64/DNS64"},
		{"192.0.0.171", true, "NAT64/DNS64"},
		{"192.0.2.10", true, "TEST-NET-1"},
		{"192.88.99.1", true, "6to4 Relay"},
		{"192.168.1.1", true, "Private-Use"},
		{"198.18.0.1", true, "Benchmarking"},
		{"198.19.255.255", true, "Benchmarking"},
		{"198.51.100.7", true, "TEST-NET-2"},
		{"203.0.113.9", true, "TEST-NET-3"},
		{"240.0.0.1", true, "Reserved"},
		{"255.255.255.254", true, "Reserved"},
		{"255.255.255.255", true, "Limited Broadcast"},
		{"224.0.0.1", true, "Multicast"},
		{"239.255.255.250", true, "Multicast"},
		// Reachable rows inside unreachable blocks, and ordinary public addresses.
		{"192.0.0.9", false, ""},
		{"192.0.0.10", false, ""},
		{"192.31.196.1", false, ""},
		{"192.52.193.1", false, ""},
		{"192.175.48.1", false, ""},
		{"93.184.216.34", false, ""},
		{"8.8.8.8", false, ""},
		{"100.63.255.255", false, ""},
		{"100.128.0.0", false, ""},
		{"172.32.0.1", false, ""},
		{"198.17.255.255", false, ""},
		{"198.20.0.0", false, ""},
		{"223.255.255.255", false, ""},
		// IPv6 registry rows.
		{"::1", true, "Loopback"},
		{"::", true, "Unspecified"},
		{"64:ff9b:1::a9fe:a9fe", true, "local-use NAT64"},
		{"100::1", true, "Discard-Only"},
		{"2001:2::1", true, "Benchmarking"},
		{"2001:10::1", true, "ORCHID"},
		{"2001:db8::1", true, "Documentation"},
		{"2001:4::1", true, "IETF Protocol Assignments"},
		{"3fff::1", true, "Documentation"},
		{"5f00::1", true, "Segment Routing"},
		{"fc00::1", true, "Unique-Local"},
		{"fd12:3456::1", true, "Unique-Local"},
		{"fe80::1", true, "Link-Local"},
		{"fe80::1%eth0", true, "Link-Local"},
		{"fec0::1", true, "Site-Local"},
		{"ff02::1", true, "Multicast"},
		{"4000::1", true, "2000::/3"},
		{"2001:1::1", false, ""},
		{"2001:1::3", false, ""},
		{"2001:3::1", false, ""},
		{"2001:4:112::1", false, ""},
		{"2001:20::1", false, ""},
		{"2620:4f:8000::1", false, ""},
		{"2606:4700::1111", false, ""},
		{"2a00:1450:4001::200e", false, ""},
		// IPv4 carried in IPv6.
		{"64:ff9b::a9fe:a9fe", true, "169.254.169.254"},     // NAT64 of the metadata service
		{"64:ff9b::7f00:1", true, "127.0.0.1"},              // NAT64 of loopback
		{"64:ff9b::10.1.2.3", true, "10.1.2.3"},             // NAT64 of a private address
		{"64:ff9b::808:808", false, ""},                     // NAT64 of 8.8.8.8
		{"2002:7f00:1::1", true, "127.0.0.1"},               // 6to4 of loopback
		{"2002:a9fe:a9fe::1", true, "169.254.169.254"},      // 6to4 of the metadata service
		{"2002:c0a8:101::1", true, "192.168.1.1"},           // 6to4 of a private address
		{"2002:808:808::1", false, ""},                      // 6to4 of 8.8.8.8
		{"2001:0:7f00:1::ffff:ffff", true, "127.0.0.1"},     // Teredo server loopback
		{"2001:0:808:808:0:0:80ff:fffe", true, "127.0.0.1"}, // Teredo client ~127.0.0.1
		{"2001:0:808:808:0:0:f7f7:f7f7", false, ""},         // Teredo 8.8.8.8 both ways
		{"2001:0:808:808:0:0:f5ff:fffe", true, "10.0.0.1"},  // Teredo client ~10.0.0.1
		{"::7f00:1", true, "127.0.0.1"},                     // IPv4-compatible loopback
		{"::127.0.0.1", true, "127.0.0.1"},
		{"::808:808", true, "IPv4-compatible"}, // deprecated even for a public address
		{"::ffff:127.0.0.1", true, "127.0.0.1"},
		{"::ffff:7f00:1", true, "127.0.0.1"},
		{"::ffff:169.254.169.254", true, "169.254.169.254"},
		{"::ffff:8.8.8.8", true, "IPv4-mapped"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			a, err := netip.ParseAddr(tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			why := Refusal(a)
			if got := why != ""; got != tc.refused {
				t.Fatalf("Refusal(%s) = %q, want refused %v", tc.addr, why, tc.refused)
			}
			if !strings.Contains(why, tc.says) {
				t.Fatalf("Refusal(%s) = %q, want it to mention %q", tc.addr, why, tc.says)
			}
		})
	}
}

// loopbackSpellings are 22 ways to write the loopback interface in a URL.
var loopbackSpellings = []string{
	"http://127.0.0.1/", "http://127.0.0.1:8080/x", "http://127.1/", "http://127.0.1/", "http://0x7f000001/",
	"http://0x7f.0.0.1/", "http://2130706433/", "http://0177.0.0.1/", "http://017700000001/",
	"http://127.255.255.254/", "http://localhost/", "http://LOCALHOST:80/", "http://localhost./",
	"http://api.localhost/", "http://[::1]/", "http://[0:0:0:0:0:0:0:1]/", "http://[::ffff:127.0.0.1]/",
	"http://[::ffff:7f00:1]/", "http://[::127.0.0.1]/", "http://[::7f00:1]/", "http://0.0.0.0/", "http://[::]/",
}

// TestCheckURLRefusesAtRegistration: the registration check refuses every loopback spelling and
// every blocked literal, names the field, and says which setting allows such destinations.
func TestCheckURLRefusesAtRegistration(t *testing.T) {
	if len(loopbackSpellings) != 22 {
		t.Fatalf("%d spellings", len(loopbackSpellings))
	}
	strict, open := New(Config{}), New(Config{AllowPrivate: true})
	ctx := context.Background()
	refused := append(append([]string{}, loopbackSpellings...),
		"http://[64:ff9b::a9fe:a9fe]/latest/meta-data", "http://[2002:7f00:1::1]/", "http://[2001:0:7f00:1::ffff:ffff]/",
		"http://198.18.0.1/", "http://240.0.0.1/", "http://255.255.255.255/", "http://100.64.0.1/", "http://192.0.0.1/",
		"http://192.0.2.1/", "http://224.0.0.1/", "http://[fe80::1%25eth0]/", "http://010.0.0.1/", "http://1.2.3.4.5/",
		"http://[::ffff:a9fe:a9fe]/")
	for _, u := range refused {
		err := strict.CheckURL(ctx, "config.destinations[0].value", u)
		var e *supplyplan.Error
		if supplyplan.ErrorCode(err) != supplyplan.EVALIDATION || !asError(err, &e) || len(e.Details["config.destinations[0].value"]) == 0 {
			t.Errorf("%s: %v, want VALIDATION_ERROR naming the field", u, err)
			continue
		}
		msg := e.Details["config.destinations[0].value"][0]
		if _, numeric := numericHost(mustHost(t, u)); !numeric && !strings.Contains(msg, "--webhook-allow-private") {
			t.Errorf("%s: %q does not mention --webhook-allow-private", u, msg)
		}
		if err := open.CheckURL(ctx, "url", u); err != nil {
			t.Errorf("%s with AllowPrivate: %v", u, err)
		}
	}
	for _, u := range []string{"https://93.184.216.34/hook", "http://8.8.8.8:8080/x", "https://[2606:4700::1111]/", "https://[64:ff9b::808:808]/", "http://192.0.0.9/"} {
		if err := strict.CheckURL(ctx, "url", u); err != nil {
			t.Errorf("%s refused: %v", u, err)
		}
	}
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname()
}

func asError(err error, target **supplyplan.Error) bool {
	e, ok := err.(*supplyplan.Error)
	if ok {
		*target = e
	}
	return ok
}

func TestNumericHost(t *testing.T) {
	for host, want := range map[string]string{
		"127.1": "127.0.0.1", "0x7f000001": "127.0.0.1", "2130706433": "127.0.0.1", "0177.0.0.1": "127.0.0.1",
		"127.0.1": "127.0.0.1", "0x7f.1": "127.0.0.1", "1.2.3.4": "1.2.3.4", "010.0.0.1": "8.0.0.1", "4294967295": "255.255.255.255",
		"256.1.1.1": "invalid", "1.2.3.4.5": "invalid", "4294967296": "invalid", "09.1": "invalid", "a.0x": "invalid",
		"example.com": "", "a1": "", "x.0xg": "", "localhost": "",
	} {
		a, numeric := numericHost(host)
		got := ""
		switch {
		case numeric && a.IsValid():
			got = a.String()
		case numeric:
			got = "invalid"
		}
		if got != want {
			t.Errorf("numericHost(%q) = %q, want %q", host, got, want)
		}
	}
}

// TestConnectGuard: the connection guard applies the same table after DNS resolution, so a name
// that resolves to a loopback address when connecting (as after DNS rebinding) is refused before
// a byte is sent, and the delivery error says which setting allows it.
func TestConnectGuard(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(204)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	strict := New(Config{})
	ctx := context.Background()
	for _, host := range []string{"127.0.0.1", "127.0.0.2", "localhost", "[::ffff:127.0.0.1]"} {
		r := strict.Send(ctx, supplyplan.OutboundMessage{Channel: supplyplan.DestWebhook, URL: "http://" + host + ":" + port + "/", Body: []byte(`{}`)})
		if r.StatusCode != -1 || r.Err == nil || !strings.Contains(r.Err.Error(), "--webhook-allow-private") || !strings.Contains(r.Err.Error(), "Loopback") {
			t.Errorf("send to %s = %+v", host, r)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the receiver got %d requests through the guard", n)
	}
	if err := New(Config{}).control("tcp", "[fe80::1%lo]:80", nil); err == nil || !strings.Contains(err.Error(), "Link-Local") {
		t.Fatalf("control(link-local with zone) = %v", err)
	}
	if err := New(Config{}).control("tcp", "93.184.216.34:443", nil); err != nil {
		t.Fatalf("control(public) = %v", err)
	}
}
