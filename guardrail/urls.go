package guardrail

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Resolver looks up host names; *net.Resolver is one. The validUrls check
// with onlyDNS uses it to see that a URL's host resolves.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// maxURLs bounds the URLs one validUrls check looks at.
const maxURLs = 64

func validURLsFactory(r Resolver) Factory {
	return func(params json.RawMessage) (Check, error) {
		var p struct {
			OnlyDNS bool `json:"onlyDNS"`
			Not     bool `json:"not"`
		}
		if err := DecodeParameters(params, &p); err != nil {
			return nil, err
		}
		r := r
		if r == nil {
			r = net.DefaultResolver
		}
		return CheckFunc(func(ctx context.Context, in *Input) (Verdict, error) {
			urls := findURLs(in.Text)
			if len(urls) == 0 {
				return Verdict{Explanation: "The text holds no URL."}, nil
			}
			bad := 0
			for _, u := range urls {
				host, ok := urlHost(u)
				if ok && p.OnlyDNS && !isIP(host) {
					addrs, err := r.LookupHost(ctx, host)
					if ctx.Err() != nil {
						return Verdict{}, ctx.Err()
					}
					ok = err == nil && len(addrs) > 0
				}
				if !ok {
					bad++
				}
			}
			how := "well-formed"
			if p.OnlyDNS {
				how = "well-formed with a host that resolves"
			}
			return verdict(bad == 0, p.Not, fmt.Sprintf("All %d URLs are %s.", len(urls), how),
				fmt.Sprintf("%d of %d URLs are not %s.", bad, len(urls), how)), nil
		}), nil
	}
}

// findURLs returns the http and https URLs of s: from the scheme to the
// first white space, quote, comma or bracket, less trailing punctuation.
func findURLs(s string) []string {
	var out []string
	for len(out) < maxURLs {
		i := strings.Index(s, "http")
		if i < 0 {
			return out
		}
		s = s[i:]
		n := 0
		switch {
		case strings.HasPrefix(s, "https://"):
			n = 8
		case strings.HasPrefix(s, "http://"):
			n = 7
		default:
			s = s[4:]
			continue
		}
		end := strings.IndexFunc(s, func(r rune) bool {
			return r <= ' ' || strings.ContainsRune(`,"'{}<>`, r) || r == '\u00a0'
		})
		if end < 0 {
			end = len(s)
		}
		u := strings.TrimRight(s[:end], ".,;:!?)")
		if !strings.Contains(u, "[") {
			u = strings.TrimRight(u, "]")
		}
		if len(u) > n {
			out = append(out, u)
		}
		s = s[max(end, n):]
	}
	return out
}

// urlHost parses u and returns its host when u is a well-formed http or
// https URL: a host name of valid labels or an IP literal, and a port in
// range if any.
func urlHost(u string) (string, bool) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.Opaque != "" {
		return "", false
	}
	if port := p.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", false
		}
	}
	host := p.Hostname()
	if strings.HasPrefix(p.Host, "[") {
		a, err := netip.ParseAddr(host)
		return host, err == nil && a.Is6()
	}
	return host, validHostname(host)
}

func isIP(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

// validHostname reports whether h is a DNS name of letters, digits and
// hyphens (labels of 1 to 63 bytes, 253 in all, an optional final dot),
// or a dotted IPv4 address.
func validHostname(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Is4()
	}
	for l := range strings.SplitSeq(h, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
