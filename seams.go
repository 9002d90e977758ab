package gateway

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// Handle registers h as a control route of the gateway: a route of a
// product (keys, logs, budgets, …) that runs behind the gateway's trace,
// key and header stages, so that IdentityFrom, TraceIDFrom and
// RequestOptionsFrom work in h, and is never rate-limited, admitted,
// routed to a provider or stored as a request log. pattern is an
// http.ServeMux pattern whose path is relative to the gateway's prefix:
// "/virtual-keys/{slug}" or "GET /models" serve /v1/virtual-keys/{slug} and
// GET /v1/models under the default prefix. Control routes check the
// caller's scopes themselves (Identity.Can); one may serve a data-plane
// request of its caller with ServeDataPlane. The body of a request to h
// is capped at Options.MaxBodyBytes: reading past it fails with an
// *http.MaxBytesError, which WriteError answers 413. Handle panics when pattern is
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
	limit := g.opts.MaxBodyBytes
	g.mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A control request is not a request log of the LogSinks (nor, so,
		// in analytics); the LogSink still gets its line.
		if st := stateFrom(r.Context()); st != nil {
			if st.dataPlane {
				// ServeDataPlane asked for the provider's answer: the
				// path goes through as any provider path does.
				g.passThrough(w, r)
				return
			}
			st.control = true
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		h.ServeHTTP(w, r)
	}))
}

// ServeDataPlane serves r, a request a control route made from its own
// (r.Clone, with a data-plane path and body of its choosing), as a
// data-plane request of the same caller: with the caller's identity and
// trace id, and opts as its request options in place of x-gateway-*
// headers (which the control route's request no longer has; start from
// RequestOptionsFrom). The whole pipeline runs (admissions and budgets,
// rate limits, routing, translation, cache, execution) and the request is
// logged as one of its own, with opts.Metadata. A path that a control
// route serves (GET /models, say) goes to the provider as a pass-through
// path, so that a control route may hand a request it does not answer
// itself to the provider. A product's route that runs a stored prompt
// uses it. Outside a control route, r is
// authenticated by its own headers.
func (g *Gateway) ServeDataPlane(w http.ResponseWriter, r *http.Request, opts RequestOptions) {
	st := &requestState{start: time.Now(), opts: opts, parsed: true, dataPlane: true}
	if caller := stateFrom(r.Context()); caller != nil {
		st.traceID, st.identity, st.key, st.badAuth = caller.traceID, caller.identity, caller.key, caller.badAuth
		st.log.TraceID, st.log.KeyID, st.log.WorkspaceID = caller.log.TraceID, caller.log.KeyID, caller.log.WorkspaceID
	}
	st.log.Metadata = opts.Metadata
	g.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
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

// GuardedClient returns a client for the URLs tenants write that a
// product calls itself (a guardrail's webhook or JWKS URL): it dials
// only the addresses CheckHost admits, resolving names at every dial,
// goes through no proxy, and follows no redirect (a 3xx is the answer).
// Its Timeout is zero: bound each call with its context.
func (g *Gateway) GuardedClient() *http.Client {
	return &http.Client{Transport: g.custom, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// HandleSigned registers serve to be asked about each request that no
// stage in front of the gateway authenticated, before the gateway looks
// for its API key: serve answers a request that carries, in place of a
// key, a credential of the product's own (the signature of a signed URL,
// say), and returns true with the workspace the request acted in, for its
// request log line; for any other request it writes nothing and returns
// false, and the gateway authenticates it as usual. serve runs behind the
// trace stage only: it must check the request's credential itself, and
// should remove any API key header it leaves unread. A request it answers
// is a control-plane request: never rate-limited, admitted, routed or
// given to the LogSinks. HandleSigned must be called before the gateway
// serves its first request.
func (g *Gateway) HandleSigned(serve func(w http.ResponseWriter, r *http.Request) (workspace string, ok bool)) {
	g.signed = append(g.signed, serve)
}

// serveSigned asks the HandleSigned functions about r, and reports
// whether one answered it.
func (g *Gateway) serveSigned(w http.ResponseWriter, r *http.Request, st *requestState) bool {
	for _, serve := range g.signed {
		if ws, ok := serve(w, r); ok {
			st.control = true
			st.log.WorkspaceID = ws
			return true
		}
	}
	return false
}

// Prefix returns the path the gateway serves under: Options.Prefix
// without its trailing slash, "/v1" by default, "" at the root. A product
// builds with it the absolute paths it hands out (a signed URL, say).
func (g *Gateway) Prefix() string { return g.prefix }
