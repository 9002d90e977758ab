package gateway

import "net/http"

// serveCompletions serves POST /completions: the body is read (up to
// Options.MaxBodyBytes, else 413), checked (checkCompletionBody, else the
// lossless decode and Validate: 400 naming the field), then sent as the
// caller wrote it to the selected provider, whose answer, streamed or not,
// comes back unchanged. Other methods get 405 with Allow: POST, since
// providers serve nothing else there.
func (g *Gateway) serveCompletions(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r, http.MethodPost)
		return
	}
	body, err := readBody(w, r, g.opts.MaxBodyBytes)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	model, ok := checkCompletionBody(body)
	if !ok {
		// The full decode is the authority: it names the field at fault,
		// or accepts what the quick check declined.
		var req CompletionRequest
		if err = decodeBody(body, &req); err == nil {
			err = req.Validate()
		}
		model = req.Model
	}
	if st := stateFrom(r.Context()); st != nil {
		st.log.Ingress = ingressCompletions
		st.log.Model = clipModel(model) // refused below when it is longer
	}
	if err != nil {
		WriteError(w, r, err)
		return
	}
	g.forward(w, r, body)
}
