package gateway

import (
	"net/http"
)

// execute runs a plan for the request. This first executor takes the first
// target of the plan and makes one attempt.
func (g *Gateway) execute(w http.ResponseWriter, r *http.Request, st *requestState, plan *planNode, body []byte) {
	t := plan.leaves()[0]
	a := g.newAttempt(r, st, t)
	if a.err != nil {
		WriteError(w, r, a.err)
		return
	}
	g.try(w, r, a, body)
	if a.err != nil {
		WriteError(w, r, a.err)
	}
}

// newAttempt prepares an attempt at t; a.err is set when t's provider kind
// is unknown.
func (g *Gateway) newAttempt(r *http.Request, st *requestState, t *Target) *attempt {
	a := &attempt{target: t, cache: "DISABLED"}
	a.path, a.rawPath = g.providerPath(r)
	a.provider, a.err = g.provider(t.Provider, HeaderProvider)
	a.timeout = t.RequestTimeout
	if st.opts.RequestTimeout > 0 {
		a.timeout = st.opts.RequestTimeout
	}
	st.log.Provider = t.Provider
	if t.Host.ModelName != "" {
		st.log.Model = t.Host.ModelName
	}
	return a
}
