package netguard

import (
	"net/netip"
	"testing"
)

func TestPublic(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"127.0.0.1", false},
		{"127.0.0.2", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"172.32.0.1", true},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"100.127.255.255", false},
		{"0.0.0.0", false},
		{"255.255.255.255", false},
		{"224.0.0.1", false},
		{"::1", false},
		{"::", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:8.8.8.8", true},
		{"::ffff:0:a00:1", false},   // IPv4-translated 10.0.0.1
		{"::ffff:0:808:808", false}, // IPv4-translated 8.8.8.8: not global unicast space
		{"3fff::1", false},          // documentation
		{"4000::1", false},          // outside 2000::/3
		{"2a00:1450:4001::200e", true},
		{"::127.0.0.1", false},
		{"64:ff9b::a9fe:a9fe", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fd00::1", false},
		{"ff02::1", false},
		{"2002:a9fe:a9fe::1", false},
	} {
		if got := Public(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("Public(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if Public(netip.Addr{}) {
		t.Error("Public(zero Addr) = true, want false")
	}
}
