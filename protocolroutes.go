package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway/internal/translate/messages"
	"github.com/modelgateway/gateway/internal/translate/responses"
)

// protocolRoutes registers the coding agents' protocols under prefix p:
// Anthropic Messages and OpenAI Responses, for every provider kind.
func (g *Gateway) protocolRoutes(p string) {
	g.mux.HandleFunc(p+"/messages", g.serveMessages)
	g.mux.HandleFunc(p+"/messages/count_tokens", g.serveMessages)
	g.mux.HandleFunc(p+"/responses", g.serveResponses)
	g.mux.HandleFunc(p+"/responses/{id}", g.serveStoredResponse)
	g.mux.HandleFunc(p+"/responses/{id}/input_items", g.serveStoredResponse)
}

// anthropicShaped reports whether the gateway's errors to r are written
// as Anthropic's (POST /messages and /messages/count_tokens), since
// Anthropic's SDKs read them so.
func anthropicShaped(r *http.Request, st *requestState) bool {
	if st == nil || st.gw == nil {
		return false
	}
	p, ok := strings.CutPrefix(r.URL.Path, st.gw.prefix)
	return ok && (p == RouteMessages || p == RouteCountTokens)
}

// writeAnthropicError answers w with the Anthropic-shaped body of e.
func writeAnthropicError(w http.ResponseWriter, e *Error) {
	body := messages.ErrorBody(e.Status, e.Type, e.Code, e.Param, e.Message)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	w.Write(body)
}

// readProtocolBody reads the body of a POST to an agents' protocol route
// and notes its model and the ingress in the request log. It answers the
// caller itself when it reports false. The body is checked where it is
// translated: a target that takes the protocol natively gets it as sent,
// and refuses it itself.
func (g *Gateway) readProtocolBody(w http.ResponseWriter, r *http.Request, name string) ([]byte, bool) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r, http.MethodPost)
		return nil, false
	}
	st := stateFrom(r.Context())
	if st != nil {
		st.log.Ingress = name
	}
	body, err := readBody(w, r, g.opts.MaxBodyBytes)
	if err != nil {
		WriteError(w, r, err)
		return nil, false
	}
	if st != nil {
		st.log.Model = clipModel(requestModel(body))
	}
	return body, true
}

// serveMessages serves POST /messages and /messages/count_tokens: the
// Messages body as sent to anthropic targets, natively to a kind that
// takes it for the model (NativeTranslator), translated to a chat
// completion for every other. Every error, the gateway's own included, is
// Anthropic-shaped.
func (g *Gateway) serveMessages(w http.ResponseWriter, r *http.Request) {
	body, ok := g.readProtocolBody(w, r, ingressMessages)
	if !ok {
		return
	}
	in := &ingress{kind: ingressMessage, betas: r.Header.Values("Anthropic-Beta")}
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		in.kind = ingressCountTokens
	}
	stateFrom(r.Context()).ingress = in
	g.forward(w, r, body)
}

// serveResponses serves POST /responses: the body as sent to openai and
// azure-openai targets, which keep the response themselves; translated to
// a chat completion for every other kind, the answer kept in
// Options.Responses when the request asks (store), so that a later
// previous_response_id and the GET routes find it.
func (g *Gateway) serveResponses(w http.ResponseWriter, r *http.Request) {
	body, ok := g.readProtocolBody(w, r, ingressResponses)
	if !ok {
		return
	}
	var req struct {
		PreviousResponseID string `json:"previous_response_id"`
	}
	json.Unmarshal(body, &req) // a body that is not a Responses request is refused where it is translated
	st := stateFrom(r.Context())
	in := &ingress{kind: ingressResponse, respID: responses.NewID("resp"), created: time.Now().Unix(),
		store: g.opts.Responses, ws: st.identity.WorkspaceID, g: g}
	if id := req.PreviousResponseID; id != "" {
		prev, err := g.storedResponse(r, st, id)
		switch {
		case err == nil:
			in.prev, err = conversation(prev)
			if err != nil {
				WriteError(w, r, err)
				return
			}
		case !errors.Is(err, ErrNotFound):
			g.fail(w, r, "response store", err)
			return
		}
	}
	in.previousID = req.PreviousResponseID
	st.ingress = in
	g.forward(w, r, body)
}

// storedResponse returns the response id of the caller's workspace, or
// ErrNotFound.
func (g *Gateway) storedResponse(r *http.Request, st *requestState, id string) (*StoredResponse, error) {
	if g.opts.Responses == nil {
		return nil, ErrNotFound
	}
	return g.opts.Responses.Response(r.Context(), st.identity.WorkspaceID, id)
}

// conversation returns the items a response continuing stored one is
// given first: its input, then its output.
func conversation(s *StoredResponse) ([]json.RawMessage, error) {
	var items []json.RawMessage
	var resp struct {
		Output []json.RawMessage `json:"output"`
	}
	if json.Unmarshal(s.Input, &items) != nil || json.Unmarshal(s.Response, &resp) != nil {
		return nil, errors.New("gateway: stored response " + s.ID + " is not valid JSON")
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	return append(items, resp.Output...), nil
}

// serveStoredResponse serves GET and DELETE /responses/{id} and GET
// /responses/{id}/input_items: from Options.Responses for a response the
// gateway keeps (never calling a provider), else passed to an openai or
// azure-openai target, which keeps its own; any other target has none
// (404).
func (g *Gateway) serveStoredResponse(w http.ResponseWriter, r *http.Request) {
	items := strings.HasSuffix(r.URL.Path, "/input_items")
	switch {
	case r.Method == http.MethodGet, r.Method == http.MethodDelete && !items:
	case items:
		methodNotAllowed(w, r, http.MethodGet)
		return
	default:
		methodNotAllowed(w, r, "GET, DELETE")
		return
	}
	st := stateFrom(r.Context())
	st.log.Ingress = ingressResponses
	if !st.identity.Can(ScopeCompletionsWrite) {
		WriteError(w, r, missingScope(ScopeCompletionsWrite))
		return
	}
	id := r.PathValue("id")
	s, err := g.storedResponse(r, st, id)
	switch {
	case errors.Is(err, ErrNotFound):
		st.ingress = &ingress{kind: ingressResponseRead}
		g.forward(w, r, nil)
		return
	case err != nil:
		g.fail(w, r, "response store", err)
		return
	}
	switch {
	case r.Method == http.MethodDelete:
		if err := g.opts.Responses.DeleteResponse(r.Context(), st.identity.WorkspaceID, id); err != nil && !errors.Is(err, ErrNotFound) {
			g.fail(w, r, "response store", err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response", "deleted": true})
	case items:
		var list []json.RawMessage
		if json.Unmarshal(s.Input, &list) != nil {
			g.fail(w, r, "response store", errors.New("gateway: stored response "+id+" has input that is not a JSON array"))
			return
		}
		writeJSON(w, http.StatusOK, itemList(list))
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(s.Response)))
		w.WriteHeader(http.StatusOK)
		w.Write(s.Response)
	}
}

// itemList is the answer of GET /responses/{id}/input_items.
func itemList(items []json.RawMessage) any {
	if items == nil {
		items = []json.RawMessage{}
	}
	id := func(b json.RawMessage) *string {
		var v struct {
			ID *string `json:"id"`
		}
		json.Unmarshal(b, &v)
		return v.ID
	}
	var first, last *string
	if len(items) > 0 {
		first, last = id(items[0]), id(items[len(items)-1])
	}
	return struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		FirstID *string           `json:"first_id"`
		LastID  *string           `json:"last_id"`
		HasMore bool              `json:"has_more"`
	}{"list", items, first, last, false}
}
