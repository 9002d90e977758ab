package gateway

import (
	"net/netip"
	"testing"

	"github.com/modelgateway/gateway/internal/netguard"
)

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func FuzzCheckCustomHostURL(f *testing.F) {
	for _, s := range []string{"https://api.example.com/v1", "http://127.0.0.1:8080", "http://[::ffff:10.0.0.1]/", "http://user@host/",
		"ftp://x", "http://169.254.169.254/latest", "http://0x7f.1/", "http://[fe80::1%25eth0]/", "https://example.com/v1?x#y"} {
		f.Add(s)
	}
	g := newGuard(nil, nil, nil)
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := g.checkURL(raw, HeaderCustomHost)
		if err != nil {
			if e, ok := err.(*Error); !ok || e.Code != CodeInvalidCustomHost {
				t.Fatalf("error %v is not invalid_custom_host", err)
			}
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.User != nil || u.Host == "" {
			t.Fatalf("accepted %q", raw)
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil && !netguard.Public(a) {
			t.Fatalf("accepted non-public literal %q", raw)
		}
	})
}
