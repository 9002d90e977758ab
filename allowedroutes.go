package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"
)

// Bounds of a virtual key's allowed_routes.
const (
	maxAllowedRoutes   = 64
	maxAllowedRouteLen = 256
)

// CheckAllowedRoutes checks the allowed_routes of a virtual key as
// written (VirtualKey.AllowedRoutes), as the data plane reads them: at
// most 64 entries, each a method (or "*") and a path below the gateway
// prefix. The error is a 400 *Error whose Param and Message name
// allowed_routes[i] for the first bad entry.
func CheckAllowedRoutes(routes []string) error {
	const param = "allowed_routes"
	if len(routes) > maxAllowedRoutes {
		return policyInvalid(param, param+" may hold at most "+strconv.Itoa(maxAllowedRoutes)+" entries")
	}
	for i, r := range routes {
		if msg := allowedRouteProblem(r); msg != "" {
			p := param + "[" + strconv.Itoa(i) + "]"
			return policyInvalid(p, p+" "+msg)
		}
	}
	return nil
}

// allowedRouteProblem says what is wrong with one allowed_routes entry, or
// "" when it is a method (upper-case letters, or "*" for any) and a path
// prefix below the gateway prefix, separated by one space: a clean
// absolute path without query, fragment, escapes or spaces.
func allowedRouteProblem(r string) string {
	const shape = `must be a method (or "*") and a path below the gateway prefix, e.g. "POST /chat/completions"`
	if len(r) > maxAllowedRouteLen {
		return "must be at most " + strconv.Itoa(maxAllowedRouteLen) + " bytes"
	}
	m, p, ok := strings.Cut(r, " ")
	if !ok || m == "" || p == "" || p[0] != '/' {
		return shape
	}
	if m != "*" {
		if len(m) > 16 {
			return shape
		}
		for i := 0; i < len(m); i++ {
			if m[i] < 'A' || m[i] > 'Z' {
				return shape + "; methods are upper-case"
			}
		}
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || c == '?' || c == '#' || c == '%' {
			return shape + "; the path has no spaces, query, fragment or escapes"
		}
	}
	if cleanPath(p) != p {
		return shape + "; the path has no empty, . or .. segments"
	}
	return ""
}

// routeAllowed reports whether routes (valid allowed_routes; empty allows
// every route) allow method on path, the request path below the gateway
// prefix. A path prefix matches on whole segments: "/files" matches
// "/files" and "/files/f-1", not "/filesystem".
func routeAllowed(routes []string, method, path string) bool {
	if len(routes) == 0 {
		return true
	}
	for _, r := range routes {
		m, p, _ := strings.Cut(r, " ")
		if m != "*" && m != method {
			continue
		}
		if p == "/" || path == p || strings.HasPrefix(path, p) && (p[len(p)-1] == '/' || path[len(p)] == '/') {
			return true
		}
	}
	return false
}

// checkVirtualKeyRoute refuses, with 403 route_not_allowed, a request
// through vk (named in param) whose route its AllowedRoutes do not allow.
// The route is the request's own, from its state; without one (no
// request in ctx) a key with AllowedRoutes is refused.
func (g *Gateway) checkVirtualKeyRoute(ctx context.Context, vk *VirtualKey, param string) error {
	if len(vk.AllowedRoutes) == 0 {
		return nil
	}
	method, path := "", ""
	if st := stateFrom(ctx); st != nil {
		method, path = st.log.Method, strings.TrimPrefix(st.log.Path, g.prefix)
		if routeAllowed(vk.AllowedRoutes, method, path) {
			return nil
		}
	}
	return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodeRouteNotAllowed, Param: param,
		Message: "virtual key " + quoteShort(vk.Slug) + " may not be used for " + method + " " + quoteShort(path) + ": its allowed_routes do not list it"}
}
