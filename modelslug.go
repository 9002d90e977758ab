package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/modelgateway/gateway/internal/jsonscan"
)

// A request that selects no provider by header may name one in its
// model, "@{slug}/{model}": slug is a virtual key of the caller's
// workspace (or of no workspace), found by the same lookup as
// x-gateway-virtual-key; model, which the key must offer
// (VirtualKey.Models), is what the provider gets. It is resolved in
// forward, the point every typed route, pass-through and ServeDataPlane
// share, before the admissions and limits, which then see the key as
// RequestOptions.VirtualKey.

// resolveModelSlug resolves the "@{slug}/{model}" of a request that
// selects no provider by header, and returns the body (read when the
// endpoint did not read it), with the prefix stripped in place. It
// answers the caller itself when it reports false.
func (g *Gateway) resolveModelSlug(w http.ResponseWriter, r *http.Request, st *requestState, body []byte) ([]byte, bool) {
	o := &st.opts
	if o.VirtualKey != "" || o.Config != "" || o.Provider != "" || o.CustomHost != "" || r.Method != http.MethodPost {
		return body, true
	}
	if body == nil {
		if st.ingress == nil && ingressOf(r.Method, strings.TrimPrefix(r.URL.Path, g.prefix)) == ingressPassThrough {
			return nil, true
		}
		var ok bool
		if body, ok = g.readSmallBody(w, r); !ok || body == nil {
			return body, ok
		}
	}
	start, end := modelSpan(body)
	raw := body[start:end]
	escaped := bytes.IndexByte(raw, '\\') >= 0
	var model string
	switch {
	case escaped:
		model = unquote(body[start-1 : end+1]) // rare: decoded, and written back whole
	case len(raw) > 0 && raw[0] == '@':
		model = string(raw)
	}
	if !strings.HasPrefix(model, "@") {
		return body, true
	}
	slash := strings.IndexByte(model, '/')
	if slash < 0 {
		g.fail(w, r, "", badModelSlug(model))
		return nil, false
	}
	t, err := g.modelTarget(r.Context(), st, model[1:slash], model[slash+1:])
	if err != nil {
		g.fail(w, r, "virtual key store", err)
		return nil, false
	}
	st.selected = t
	if escaped {
		q, _ := json.Marshal(model[slash+1:])
		return slices.Concat(body[:start-1], q, body[end+1:]), true
	}
	// In place: the body is the gateway's own buffer.
	return append(body[:start], body[start+slash+1:]...), true
}

// modelTarget returns the target of a request whose model is
// "@{slug}/{model}", sets the request's virtual key and model, and
// checks that the key offers model.
func (g *Gateway) modelTarget(ctx context.Context, st *requestState, slug, model string) (*routedTarget, error) {
	if slug == "" || model == "" {
		return nil, badModelSlug("@" + slug + "/" + model)
	}
	if err := checkModel(model); err != nil {
		return nil, err
	}
	vk, err := g.lookupVirtualKey(ctx, st.identity, slug)
	if errors.Is(err, ErrNotFound) {
		return nil, badRequest(CodeUnknownProvider, "model", "unknown provider "+quoteShort("@"+slug)+" in model")
	} else if err != nil {
		return nil, err
	}
	if vk.Models != nil && !slices.Contains(vk.Models, model) {
		return nil, badRequest(CodeModelNotAllowed, "model", "model "+quoteShort(model)+" is not offered by provider "+quoteShort("@"+slug))
	}
	t, err := g.keyTarget(ctx, vk, slug, "model")
	if err != nil {
		return nil, err
	}
	t.Host.mergeUnderStored(st.opts.Host)
	t.forwardHeaders = st.opts.ForwardHeaders
	st.opts.VirtualKey = slug
	st.log.Model = model
	return t, nil
}

func badModelSlug(model string) error {
	return badRequest(CodeInvalidJSON, "model", "model "+quoteShort(model)+" names a provider: write it as @{provider}/{model}")
}

// unquote decodes the JSON string q; "" when it is not one. Its own
// function, so that only an escaped model pays for the decoding's heap
// variable.
func unquote(q []byte) string {
	var s string
	if json.Unmarshal(q, &s) != nil {
		return ""
	}
	return s
}

// readSmallBody reads the body of a request to pick its provider, at
// most MaxBodyBytes; a longer one is left to stream as sent, and nil is
// returned.
func (g *Gateway) readSmallBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := g.opts.MaxBodyBytes
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength > limit {
		return nil, true
	}
	b, err := readAll(r.Body, r.ContentLength, limit+1)
	if err != nil {
		if r.Context().Err() == nil {
			g.fail(w, r, "", &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest,
				Message: "the request body could not be read", Err: err})
		}
		return nil, false
	}
	if int64(len(b)) > limit {
		rest := r.Body
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), rest), rest}
		return nil, true
	}
	return b, true
}

// modelSpan returns where the top-level model string of a JSON body
// starts and ends, its quotes excluded; 0, 0 when it names none.
func modelSpan(b []byte) (start, end int) {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, 0
	}
	for i++; ; {
		i = jsonscan.SkipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return 0, 0
		}
		e := jsonscan.SkipString(b, i)
		if e > len(b) || e-i < 2 || b[e-1] != '"' {
			return 0, 0
		}
		name := b[i+1 : e-1]
		i = jsonscan.SkipSpace(b, e)
		if i >= len(b) || b[i] != ':' {
			return 0, 0
		}
		i = jsonscan.SkipSpace(b, i+1)
		if i >= len(b) {
			return 0, 0
		}
		if string(name) == "model" {
			if b[i] != '"' {
				return 0, 0
			}
			e = jsonscan.SkipString(b, i)
			if e > len(b) || e-i < 2 || b[e-1] != '"' {
				return 0, 0
			}
			return i + 1, e - 1
		}
		i = jsonscan.SkipSpace(b, jsonscan.SkipValue(b, i))
		if i >= len(b) || b[i] != ',' {
			return 0, 0
		}
		i++
	}
}
