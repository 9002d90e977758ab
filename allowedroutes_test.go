package gateway

import (
	"strings"
	"testing"
)

// FuzzAllowedRoutes: a route the validator accepts matches only its own
// method (or any, for "*") and paths at or below its prefix on whole
// segments, and neither function panics on any input.
func FuzzAllowedRoutes(f *testing.F) {
	for _, s := range [][3]string{
		{"POST /chat/completions", "POST", "/chat/completions"},
		{"* /files", "DELETE", "/files/f-1"},
		{"GET /models", "GET", "/modelsx"},
		{"GET /", "GET", "/anything"},
		{"GET /files/", "GET", "/files"},
		{"get /x", "GET", "/x"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, route, method, path string) {
		if allowedRouteProblem(route) != "" {
			return
		}
		if !routeAllowed([]string{route}, method, path) {
			return
		}
		m, p, _ := strings.Cut(route, " ")
		if m != "*" && m != method {
			t.Fatalf("%q allows method %q", route, method)
		}
		if p != "/" && path != p && !strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
			t.Fatalf("%q allows path %q", route, path)
		}
	})
}
