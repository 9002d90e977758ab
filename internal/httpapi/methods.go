package httpapi

import (
	"net/http"
	"slices"
	"strings"
)

// Handler is a control-plane handler: it writes its answer, or returns
// the error to answer with (before writing anything).
type Handler func(w http.ResponseWriter, r *http.Request) error

// Methods is a method dispatcher: the handler of each method a route
// serves. It replaces the hand-written switch on r.Method, so that every
// route answers the methods it does not serve the same way.
type Methods map[string]Handler

// Serve calls the handler of r.Method and returns its error; for a method
// m does not hold it calls nothing and returns a *MethodError listing
// m's methods.
func (m Methods) Serve(w http.ResponseWriter, r *http.Request) error {
	h, ok := m[r.Method]
	if !ok {
		return &MethodError{Method: r.Method, Path: r.URL.Path, Allow: m.Allow()}
	}
	return h(w, r)
}

// Check returns the *MethodError Serve would for r, or nil when m serves
// r.Method: for a route that refuses a method before it reads anything
// else, whatever handler it later chooses.
func (m Methods) Check(r *http.Request) error {
	if _, ok := m[r.Method]; ok {
		return nil
	}
	return &MethodError{Method: r.Method, Path: r.URL.Path, Allow: m.Allow()}
}

// methodOrder is the order an Allow header lists the usual methods in;
// others follow in lexical order.
var methodOrder = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions}

// Allow returns m's methods as an Allow header lists them: GET, HEAD,
// POST, PUT, PATCH, DELETE, OPTIONS in that order, then the others
// sorted, joined by ", ".
func (m Methods) Allow() string {
	out := make([]string, 0, len(m))
	for _, k := range methodOrder {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	var rest []string
	for k := range m {
		if !slices.Contains(methodOrder, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return strings.Join(append(out, rest...), ", ")
}

// Only returns nil when r's method is one of methods, else the
// *MethodError listing them: for a route that checks its method before
// anything else and serves each the same way.
func Only(r *http.Request, methods ...string) error {
	m := make(Methods, len(methods))
	for _, k := range methods {
		m[k] = nil
	}
	return m.Check(r)
}
