package prompt

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
	"github.com/modelgateway/gateway/observe"
)

// Metadata keys the completions of a prompt carry in their request log,
// so that logs and analytics can be filtered by prompt. MetadataPrompt
// (the gateway's "_prompt") holds the prompt's slug.
const (
	MetadataPromptID      = observe.MetadataPromptID // the analytics' prompt_slug filter reads it
	MetadataPromptVersion = "_prompt_version"
)

// runRequest is the body of render and completions: the variables, and
// every other member of the body, which overrides the prompt's.
type runRequest struct {
	vars      map[string]any
	overrides map[string]json.RawMessage
}

// readRun reads the body of a render or completions request.
func readRun(w http.ResponseWriter, r *http.Request) (*runRequest, error) {
	data, err := control.ReadBody(r)
	if err != nil {
		return nil, err
	}
	var rr runRequest
	if len(bytes.TrimSpace(data)) > 0 {
		if firstByte(data) != '{' || json.Unmarshal(data, &rr.overrides) != nil {
			return nil, control.Invalid("", "the body must be a JSON object")
		}
	}
	raw, ok := rr.overrides["variables"]
	delete(rr.overrides, "variables")
	if ok && string(raw) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber() // numbers print as the caller wrote them
		if firstByte(raw) != '{' || dec.Decode(&rr.vars) != nil {
			return nil, control.Invalid("variables", "variables must be a JSON object")
		}
	}
	return &rr, nil
}

// prepare reads a render or completions request for the prompt key (an
// address) and returns the prompt, its version and the chat completions
// body they make.
func (p *plane) prepare(w http.ResponseWriter, r *http.Request, ws, key string) (*Record, *Version, []byte, error) {
	rr, err := readRun(w, r)
	if err != nil {
		return nil, nil, nil, err
	}
	rec, v, body, err := p.build(r.Context(), ws, key, rr)
	return rec, v, body, err
}

// build renders the prompt key of workspace ws with rr.
func (p *plane) build(ctx context.Context, ws, key string, rr *runRequest) (*Record, *Version, []byte, error) {
	rec, v, err := resolve(ctx, p.o.Store, KindPrompt, ws, key, "promptId")
	if err != nil {
		return nil, nil, nil, err
	}
	rendered, err := p.rn.render(ctx, ws, v, rr.vars)
	if err != nil {
		return nil, nil, nil, err
	}
	obj, err := chatBody(v, rendered, rr.overrides)
	if err != nil {
		return nil, nil, nil, err
	}
	body, err := obj.MarshalJSON()
	return rec, v, body, err
}

// render serves POST /prompts/{id}/render: {"success":true,"data"} with
// the chat completions body the prompt renders to.
func (p *plane) render(w http.ResponseWriter, r *http.Request, ws, key string) error {
	_, _, body, err := p.prepare(w, r, ws, key)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
	}{true, body})
	return nil
}

// maxMetadataKeys is the bound of a request's metadata.
const maxMetadataKeys = 64

// completions serves POST /prompts/{id}/completions: the rendered body
// is sent as POST /chat/completions through the whole data plane, in
// process and as the caller (its key, scopes, limits, budgets, cache and
// provider selection), and the answer, streamed or not, is the
// provider's. The request log of that chat completion carries the
// prompt's slug, ID and version as metadata.
func (p *plane) completions(w http.ResponseWriter, r *http.Request, ws, key string) error {
	rec, v, body, err := p.prepare(w, r, ws, key)
	if err != nil {
		return err
	}
	in := r.Clone(r.Context())
	path := r.URL.Path
	u := url.URL{Path: path[:strings.LastIndex(path, "/prompts/")] + gateway.RouteChatCompletions}
	in.URL, in.RequestURI, in.Method = &u, u.Path, http.MethodPost
	in.Body, in.ContentLength = readCloser{bytes.NewReader(body)}, int64(len(body))
	in.Header.Del("Content-Length")
	in.Header.Del("Transfer-Encoding")
	in.Header.Set("Content-Type", "application/json")
	opts, _ := gateway.RequestOptionsFrom(r.Context())
	if v.VirtualKey != "" && opts.VirtualKey == "" && opts.Provider == "" && opts.Config == "" && opts.CustomHost == "" {
		opts.VirtualKey = v.VirtualKey
	}
	md := make(map[string]string, len(opts.Metadata)+3)
	maps.Copy(md, opts.Metadata)
	md[gateway.MetadataPrompt] = rec.Slug
	md[MetadataPromptID] = rec.ID
	md[MetadataPromptVersion] = strconv.Itoa(v.Number)
	if len(md) > maxMetadataKeys {
		return control.Invalid(gateway.HeaderMetadata, "with the prompt's own three keys, metadata must have at most 64 keys")
	}
	opts.Metadata = md
	p.g.ServeDataPlane(w, in, opts)
	return nil
}

// readCloser is a body read from memory.
type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
