package outbound

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// reach is the "Globally Reachable" column of the IANA special-purpose address registries.
type reach int

const (
	notGlobal reach = iota // False
	global                 // True
	// naEmbedded is N/A for a block that carries IPv4 addresses (6to4, Teredo): the carried
	// addresses decide.
	naEmbedded
)

// special is one row of the address table: a block, its registry name and reachability, and for
// blocks that carry IPv4 addresses, how to extract them.
type special struct {
	prefix netip.Prefix
	name   string
	reach  reach
	embed  func(a [16]byte) []netip.Addr
}

func row(prefix, name string, r reach, embed func([16]byte) []netip.Addr) special {
	return special{prefix: netip.MustParsePrefix(prefix), name: name, reach: r, embed: embed}
}

func v4At(i int) func([16]byte) []netip.Addr {
	return func(b [16]byte) []netip.Addr { return []netip.Addr{netip.AddrFrom4([4]byte(b[i : i+4]))} }
}

// teredo carries the server's IPv4 in bits 32-63 and the client's, inverted, in bits 96-127
// (RFC 4380 section 4).
func teredo(b [16]byte) []netip.Addr {
	client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
	return []netip.Addr{netip.AddrFrom4([4]byte(b[4:8])), netip.AddrFrom4(client)}
}

// addressTable encodes the IANA IPv4 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv4-special-registry) and the IANA IPv6 Special-Purpose
// Address Registry (https://www.iana.org/assignments/iana-ipv6-special-registry) with their
// "Globally Reachable" column, as published in 2025, plus the blocks the registries leave to
// other documents: IPv4 multicast (RFC 5771), the deprecated IPv4-compatible IPv6 addresses
// (RFC 4291 section 2.5.5.1), the deprecated IPv6 site-local block (RFC 3879) and IPv6 multicast
// (RFC 4291). The most specific matching row decides (192.0.0.9/32 is reachable inside the
// unreachable 192.0.0.0/24). IPv6 outside every row must also lie in 2000::/3, the only block the
// IANA IPv6 Address Space registry allocates to global unicast.
//
// ISATAP interface identifiers (::5efe:a.b.c.d in any /64, RFC 5214) are not unpacked: behind a
// global prefix they reach a host through that site's own ISATAP router, where a private IPv4 is
// the normal case, so they are judged by their prefix like any global address.
var addressTable = []special{
	// IPv4 Special-Purpose Address Registry.
	row("0.0.0.0/8", `"This network"`, notGlobal, nil),
	row("0.0.0.0/32", `"This host on this network"`, notGlobal, nil),
	row("10.0.0.0/8", "Private-Use", notGlobal, nil),
	row("100.64.0.0/10", "Shared Address Space (carrier-grade NAT)", notGlobal, nil),
	row("127.0.0.0/8", "Loopback", notGlobal, nil),
	row("169.254.0.0/16", "Link Local", notGlobal, nil),
	row("172.16.0.0/12", "Private-Use", notGlobal, nil),
	row("192.0.0.0/24", "IETF Protocol Assignments", notGlobal, nil),
	row("192.0.0.0/29", "IPv4 Service Continuity Prefix", notGlobal, nil),
	row("192.0.0.8/32", "IPv4 dummy address", notGlobal, nil),
	row("192.0.0.9/32", "Port Control Protocol Anycast", global, nil),
	row("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", global, nil),
	row("192.0.0.170/32", "NAT64/DNS64 Discovery", notGlobal, nil),
	row("192.0.0.171/32", "NAT64/DNS64 Discovery", notGlobal, nil),
	row("192.0.2.0/24", "Documentation (TEST-NET-1)", notGlobal, nil),
	row("192.31.196.0/24", "AS112-v4", global, nil),
	row("192.52.193.0/24", "AMT", global, nil),
	row("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", notGlobal, nil),
	row("192.88.99.2/32", "6a44-relay anycast address", notGlobal, nil),
	row("192.168.0.0/16", "Private-Use", notGlobal, nil),
	row("192.175.48.0/24", "Direct Delegation AS112 Service", global, nil),
	row("198.18.0.0/15", "Benchmarking", notGlobal, nil),
	row("198.51.100.0/24", "Documentation (TEST-NET-2)", notGlobal, nil),
	row("203.0.113.0/24", "Documentation (TEST-NET-3)", notGlobal, nil),
	row("240.0.0.0/4", "Reserved", notGlobal, nil),
	row("255.255.255.255/32", "Limited Broadcast", notGlobal, nil),
	// IPv4 Multicast Address Space registry.
	row("224.0.0.0/4", "Multicast", notGlobal, nil),

	// IPv6 Special-Purpose Address Registry.
	row("::1/128", "Loopback Address", notGlobal, nil),
	row("::/128", "Unspecified Address", notGlobal, nil),
	row("::ffff:0:0/96", "IPv4-mapped Address", notGlobal, v4At(12)),
	row("64:ff9b::/96", "IPv4-IPv6 Translation (NAT64)", global, v4At(12)),
	row("64:ff9b:1::/48", "IPv4-IPv6 Translation (local-use NAT64)", notGlobal, nil),
	row("100::/64", "Discard-Only Address Block", notGlobal, nil),
	row("100:0:0:1::/64", "Dummy IPv6 Prefix", notGlobal, nil),
	row("2001::/23", "IETF Protocol Assignments", notGlobal, nil),
	row("2001::/32", "TEREDO", naEmbedded, teredo),
	row("2001:1::1/128", "Port Control Protocol Anycast", global, nil),
	row("2001:1::2/128", "Traversal Using Relays around NAT Anycast", global, nil),
	row("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", global, nil),
	row("2001:2::/48", "Benchmarking", notGlobal, nil),
	row("2001:3::/32", "AMT", global, nil),
	row("2001:4:112::/48", "AS112-v6", global, nil),
	row("2001:10::/28", "Deprecated (previously ORCHID)", notGlobal, nil),
	row("2001:20::/28", "ORCHIDv2", global, nil),
	row("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", global, nil),
	row("2001:db8::/32", "Documentation", notGlobal, nil),
	row("2002::/16", "6to4", naEmbedded, v4At(2)),
	row("2620:4f:8000::/48", "Direct Delegation AS112 Service", global, nil),
	row("3fff::/20", "Documentation", notGlobal, nil),
	row("5f00::/16", "Segment Routing (SRv6) SIDs", notGlobal, nil),
	row("fc00::/7", "Unique-Local", notGlobal, nil),
	row("fe80::/10", "Link-Local Unicast", notGlobal, nil),
	// Other documents.
	row("::/96", "IPv4-compatible Address (deprecated)", notGlobal, v4At(12)),
	row("fec0::/10", "Site-Local (deprecated)", notGlobal, nil),
	row("ff00::/8", "Multicast", notGlobal, nil),
}

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// lookup returns the most specific row containing a.
func lookup(a netip.Addr) (special, bool) {
	var best special
	found := false
	for _, r := range addressTable {
		if r.prefix.Addr().Is4() == a.Is4() && r.prefix.Contains(a) && (!found || r.prefix.Bits() > best.prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}

// Refusal says why a is not a globally reachable unicast address ("" when it is one). IPv4
// addresses carried inside IPv6 ones (NAT64, 6to4, Teredo, IPv4-mapped and -compatible) are
// checked as well: a carried address that is not globally reachable refuses the whole address.
func Refusal(a netip.Addr) string {
	a = a.WithZone("")
	if !a.IsValid() {
		return "not an IP address"
	}
	r, ok := lookup(a)
	if !ok {
		if a.Is6() && !globalUnicast6.Contains(a) {
			return "outside 2000::/3, the IPv6 global unicast space"
		}
		return ""
	}
	if r.embed != nil {
		for _, v4 := range r.embed(a.As16()) {
			if why := Refusal(v4); why != "" {
				return fmt.Sprintf("%s (%s) carrying %s: %s", r.name, r.prefix, v4, why)
			}
		}
	}
	if r.reach == notGlobal {
		return fmt.Sprintf("%s (%s), not globally reachable", r.name, r.prefix)
	}
	return ""
}

// Blocked reports whether ip is not a globally reachable unicast address (see Refusal). A 16-byte
// net.IP holding an IPv4 address is taken as that IPv4 address.
func Blocked(ip net.IP) bool {
	if v4 := ip.To4(); v4 != nil {
		return Refusal(netip.AddrFrom4([4]byte(v4))) != ""
	}
	a, ok := netip.AddrFromSlice(ip)
	return !ok || Refusal(a) != ""
}

// numericHost reports whether a host name ends in a number (the WHATWG URL standard's test for
// an IPv4 host: "127.1", "0x7f000001", "2130706433", "0177.0.0.1"), and the IPv4 address such a
// parser reads from it when it can. Go's resolver does not read these forms (it asks DNS), other
// HTTP clients and resolvers do, so they are refused rather than guessed at.
func numericHost(host string) (netip.Addr, bool) {
	host = strings.TrimSuffix(host, ".")
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if _, ok := ipv4Number(last); !ok && strings.Trim(last, "0123456789") != "" {
		return netip.Addr{}, false
	}
	if len(labels) > 4 {
		return netip.Addr{}, true
	}
	var nums []uint64
	for _, l := range labels {
		n, ok := ipv4Number(l)
		if !ok {
			return netip.Addr{}, true
		}
		nums = append(nums, n)
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, true
		}
		v |= n << (8 * (3 - i))
	}
	lastN := nums[len(nums)-1]
	if lastN >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, true
	}
	v |= lastN
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// ipv4Number parses one label of a WHATWG IPv4 host: decimal, 0x hexadecimal or 0-prefixed octal.
func ipv4Number(s string) (uint64, bool) {
	base := 10
	switch {
	case s == "":
		return 0, false
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	n, err := strconv.ParseUint(s, base, 32)
	return n, err == nil
}

// localhostName reports whether host is "localhost" or a name under it, which RFC 6761 section
// 6.3 reserves for the loopback interface whatever DNS says.
func localhostName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}
