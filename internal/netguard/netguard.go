// Package netguard decides which IP addresses a caller-supplied host may
// reach, and dials only addresses that pass.
package netguard

import (
	"net/netip"
)

var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this" network
	netip.MustParsePrefix("10.0.0.0/8"),      // private
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local, cloud metadata
	netip.MustParsePrefix("172.16.0.0/12"),   // private
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay
	netip.MustParsePrefix("192.168.0.0/16"),  // private
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("::/128"),          // unspecified
	netip.MustParsePrefix("::1/128"),         // loopback
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64 (embeds IPv4)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local NAT64
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2001::/32"),       // Teredo (embeds IPv4)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4 (embeds IPv4)
	netip.MustParsePrefix("3fff::/20"),       // documentation
	netip.MustParsePrefix("fc00::/7"),        // unique local
	netip.MustParsePrefix("fe80::/10"),       // link-local
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
	netip.MustParsePrefix("ff00::/8"),        // multicast
}

// Public reports whether a is a global unicast address that a
// caller-supplied host may reach: not loopback, private, link-local
// (which holds the cloud metadata services), CGNAT, multicast, reserved or
// documentation space; for IPv6, only the global unicast space 2000::/3
// less its special blocks. IPv4-mapped and IPv4-compatible IPv6 forms are
// judged by the IPv4 address they carry (resolvers answer IPv4 addresses
// in the mapped form).
func Public(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.WithZone("")
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is6() {
		b := a.As16()
		// IPv4-compatible ::a.b.c.d (deprecated but still routed by some stacks).
		if [12]byte(b[:12]) == ([12]byte{}) {
			return Public(netip.AddrFrom4([4]byte(b[12:])))
		}
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return false // unallocated or special space, e.g. ::ffff:0:a.b.c.d
	}
	for _, p := range blocked {
		if p.Contains(a) {
			return false
		}
	}
	return a.IsGlobalUnicast()
}

// globalUnicast6 is the IPv6 space allocated for global unicast.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")
