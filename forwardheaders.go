package gateway

import (
	"encoding/json"
	"net/textproto"
	"strings"
)

// ParseForwardHeaders parses an x-gateway-forward-headers value: a JSON
// array of header names, or a comma-separated list. It returns canonical
// names without duplicates. Names that must never be forwarded (hop-by-hop
// headers, Host, Content-Length, Transfer-Encoding, the gateway's own
// x-gateway-* headers, Authorization and cloud metadata headers) are
// refused with a 400 naming the header, rather than silently dropped.
func ParseForwardHeaders(v string) ([]string, error) {
	var names []string
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "[") {
		if err := json.Unmarshal([]byte(t), &names); err != nil {
			return nil, invalidHeader(HeaderForwardHeaders, "must be a JSON array of header names or a comma-separated list")
		}
	} else {
		for _, n := range strings.Split(v, ",") {
			// Empty list elements are ignored (RFC 9110, section 5.6.1).
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	if len(names) > maxForwardHeaders {
		return nil, invalidHeader(HeaderForwardHeaders, "must name at most 64 headers")
	}
	out := make([]string, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" || !validHeaderName(n) {
			return nil, invalidHeader(HeaderForwardHeaders, "holds an invalid header name")
		}
		c := textproto.CanonicalMIMEHeaderKey(n)
		if neverForwarded(c) {
			return nil, invalidHeader(HeaderForwardHeaders, c+" cannot be forwarded")
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

func validHeaderName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// neverForwarded reports whether the canonical header name c is on the
// deny-list of forward-headers.
func neverForwarded(c string) bool {
	switch c {
	case "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Host", "Content-Length", "Authorization",
		"Metadata", "Metadata-Flavor", "X-Aws-Ec2-Metadata-Token", "X-Aws-Ec2-Metadata-Token-Ttl-Seconds",
		"X-Google-Metadata-Request":
		return true
	}
	return strings.HasPrefix(c, "X-Gateway-")
}

// connectionListed reports whether name is one of the options listed in
// conn, the values of a request's Connection header: comma-separated
// lists, possibly on several lines, compared case-insensitively. The
// headers a Connection header names are hop-by-hop (RFC 9110, section
// 7.6.1), meant for the gateway alone, so none of them reaches a provider,
// whatever else asks for it: requestHeaders, the forward-headers list or a
// Provider's well-known headers. It allocates nothing, and costs one
// comparison when conn is nil.
func connectionListed(conn []string, name string) bool {
	for _, v := range conn {
		for v != "" {
			var opt string
			opt, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(textproto.TrimString(opt), name) {
				return true
			}
		}
	}
	return false
}
