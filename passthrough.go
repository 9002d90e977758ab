package gateway

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// passThrough forwards any provider path: the provider's base URL plus the
// path and query, the body streamed as sent, the response streamed back
// unchanged.
func (g *Gateway) passThrough(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete:
	default:
		methodNotAllowed(w, r, "GET, POST, PUT, DELETE")
		return
	}
	g.forward(w, r, nil)
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	WriteError(w, r, &Error{Status: http.StatusMethodNotAllowed, Type: TypeInvalidRequest, Code: CodeMethodNotAllowed,
		Message: r.Method + " is not allowed on " + r.URL.Path + "; allowed: " + allow})
}

// forward selects the provider and runs the request's plan. body, when not
// nil, is the request body the route already read; otherwise the body
// streams from the caller.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	st := stateFrom(r.Context())
	if st.badAuth && (st.opts.VirtualKey == "" || st.opts.Config != "") {
		WriteError(w, r, badAuthorization())
		return
	}
	plan, err := g.selectPlan(r.Context(), st.identity, &st.opts)
	if err != nil {
		if ge := (*Error)(nil); !errors.As(err, &ge) {
			// A store failed: the caller gets a bare 500, the operator the cause.
			g.errLog.ErrorContext(r.Context(), "gateway: provider selection", "err", err)
		}
		WriteError(w, r, err)
		return
	}
	w, done, err := g.admitPolicies(w, r, st)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	defer done()
	g.execute(w, r, st, plan, body)
}

// providerPath returns the request path with the gateway prefix removed, as
// decoded and as escaped by the caller.
func (g *Gateway) providerPath(r *http.Request) (path, raw string) {
	path = strings.TrimPrefix(r.URL.Path, g.prefix)
	raw = strings.TrimPrefix(r.URL.EscapedPath(), (&url.URL{Path: g.prefix}).EscapedPath())
	return path, raw
}
