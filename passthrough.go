package gateway

import (
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
	if st := stateFrom(r.Context()); st != nil {
		st.log.Ingress = ingressOf(r.Method, strings.TrimPrefix(r.URL.Path, g.prefix))
	}
	g.forward(w, r, nil)
}

// ingressOf names the protocol of a request to a provider path that is
// passed through or translated (RequestLog.Ingress).
func ingressOf(method, path string) string {
	if method == http.MethodPost {
		switch path {
		case RouteChatCompletions:
			return ingressChatCompletions
		case RouteEmbeddings:
			return ingressEmbeddings
		}
	}
	return ingressPassThrough
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	WriteError(w, r, &Error{Status: http.StatusMethodNotAllowed, Type: TypeInvalidRequest, Code: CodeMethodNotAllowed,
		Message: r.Method + " is not allowed on " + r.URL.Path + "; allowed: " + allow})
}

// providerPath returns the request path with the gateway prefix removed, as
// decoded and as escaped by the caller.
func (g *Gateway) providerPath(r *http.Request) (path, raw string) {
	path = strings.TrimPrefix(r.URL.Path, g.prefix)
	raw = strings.TrimPrefix(r.URL.EscapedPath(), (&url.URL{Path: g.prefix}).EscapedPath())
	return path, raw
}
