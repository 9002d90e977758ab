package gateway

import "net/http"

// serveCompletions serves POST /completions. Other methods get 405.
func (g *Gateway) serveCompletions(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r, http.MethodPost)
		return
	}
	g.forward(w, r, nil)
}
