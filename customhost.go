package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/modelgateway/gateway/internal/netguard"
)

// guard enforces the custom-host policy: a host the caller supplies must be
// http(s) and resolve only to public addresses, unless it is on the
// allowlist. The check is made on the address actually dialed, so a name
// that resolves differently between check and dial (DNS rebinding) is
// still caught; the transport never follows redirects (ReverseProxy never
// does) and uses no proxy.
type guard struct {
	allow    map[string]bool // "host" or "host:port", lower-case
	resolver Resolver
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
}

// blockedAddrError reports a custom host that resolved to an address the
// policy refuses. Its text names the address for the error log only; the
// caller's message does not.
type blockedAddrError struct {
	host string
	addr netip.Addr
}

func (e *blockedAddrError) Error() string {
	return "gateway: custom host " + e.host + " resolves to non-public address " + e.addr.String()
}

func newGuard(allow []string, r Resolver, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *guard {
	g := &guard{allow: make(map[string]bool, len(allow)), resolver: r, dial: dial}
	for _, a := range allow {
		g.allow[strings.ToLower(strings.TrimSpace(a))] = true
	}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	if g.dial == nil {
		g.dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return g
}

// allowedHost reports whether hostport ("host" or "host:port") is on the
// allowlist.
func (g *guard) allowedHost(hostport string) bool {
	hostport = strings.ToLower(hostport)
	if g.allow[hostport] {
		return true
	}
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return g.allow[h] || g.allow["["+h+"]"]
	}
	return false
}

// checkURL validates a caller-supplied base URL. It refuses what can be
// refused before dialing: other schemes, user info, and literal addresses
// that are not public. Names are checked when dialed.
func (g *guard) checkURL(raw, param string) (*url.URL, error) {
	bad := func(msg string) error {
		return badRequest(CodeInvalidCustomHost, param, "custom host "+msg)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, bad("is not a valid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad("must be an http or https URL")
	case u.Host == "" || u.Opaque != "":
		return nil, bad("must be an absolute URL with a host")
	case u.User != nil:
		return nil, bad("must not carry user info")
	case u.Fragment != "" || u.RawQuery != "" || u.ForceQuery:
		return nil, bad("must not carry a query or fragment")
	}
	host := u.Hostname()
	if host == "" || strings.ContainsAny(host, "%@/\\") {
		return nil, bad("has an invalid host")
	}
	if a, err := netip.ParseAddr(host); err == nil && !netguard.Public(a) && !g.allowedHost(u.Host) {
		return nil, bad("is not a public address")
	}
	return u, nil
}

// dialContext resolves addr, refuses it unless every address is public or
// the host is allowlisted, and dials the first address that was checked.
func (g *guard) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	allowed := g.allowedHost(addr)
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = g.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, errors.New("gateway: no addresses for custom host")
		}
	}
	if !allowed {
		for _, a := range addrs {
			if !netguard.Public(a) {
				return nil, &blockedAddrError{host: host, addr: a}
			}
		}
	}
	var firstErr error
	for _, a := range addrs {
		c, err := g.dial(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// transport returns a transport for caller-supplied hosts: a clone of base
// when it is an *http.Transport (else NewTransport's), dialing
// through the guard and never through a proxy.
func (g *guard) transport(base http.RoundTripper) http.RoundTripper {
	t, ok := base.(*http.Transport)
	if ok {
		t = t.Clone()
	} else {
		t = NewTransport()
	}
	t.Proxy = nil
	t.DialContext = g.dialContext
	// A TLS dialer of the base transport would dial without the guard.
	t.DialTLSContext = nil
	//lint:ignore SA1019 the deprecated field still dials when set, so it is cleared too
	t.DialTLS = nil
	return t
}
