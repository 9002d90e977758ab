package gateway

import (
	"net/http"
	"strings"
)

// Handle registers h as a control route of the gateway: a route of a
// product (keys, logs, budgets, …) that runs behind the gateway's trace,
// key and header stages, so that IdentityFrom, TraceIDFrom and
// RequestOptionsFrom work in h, and is never rate-limited, admitted,
// routed to a provider or stored as a request log. pattern is an
// http.ServeMux pattern whose path is relative to the gateway's prefix:
// "/virtual-keys/{slug}" or "GET /models" serve /v1/virtual-keys/{slug} and
// GET /v1/models under the default prefix. Control routes check the
// caller's scopes themselves (Identity.Can). A control route may serve a
// data-plane request in process, as a route that runs a stored prompt
// does: g.ServeHTTP with a request made from its own (r.Clone) runs the
// whole pipeline as a request of its own, with the caller's identity and
// trace id, and is logged as such. Handle panics when pattern is
// not a path from "/" or conflicts with a registered route, as
// http.ServeMux.Handle does.
func (g *Gateway) Handle(pattern string, h http.Handler) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "", pattern
	}
	path = strings.TrimLeft(path, " \t")
	if !strings.HasPrefix(path, "/") {
		panic("gateway: Handle pattern " + pattern + " must name a path from /")
	}
	if method != "" {
		path = method + " " + g.prefix + path
	} else {
		path = g.prefix + path
	}
	g.mux.Handle(path, g.control(h))
}

// Provider returns the provider kind registered under slug: a built-in
// one or one of Options.Providers (slugs are compared in lower case). A
// product checks with it the provider a tenant writes.
func (g *Gateway) Provider(slug string) (Provider, bool) {
	p, ok := g.providers[strings.ToLower(slug)]
	return p, ok
}

// CheckHost checks a base URL a tenant writes (a virtual key's base_url,
// a config's custom_host) as the data plane checks it when it is used: an
// http or https URL without user info, query or fragment, whose literal
// address, if it is one, is public unless Options.CustomHostAllow names
// the host. Names are resolved and checked on every dial, not here. The
// error is a 400 *Error; its Param is empty for the product to name the
// field.
func (g *Gateway) CheckHost(rawURL string) error {
	_, err := g.guard.checkURL(rawURL, "")
	return err
}
