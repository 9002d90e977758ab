package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/sse"
	"github.com/modelgateway/gateway/internal/translate/messages"
	"github.com/modelgateway/gateway/internal/translate/responses"
)

// Routes of the coding agents' protocols: Anthropic Messages and OpenAI
// Responses. The gateway takes them for every provider kind, translating
// them to chat completions for a kind that does not take them natively.
const (
	RouteMessages    = "/messages"
	RouteCountTokens = "/messages/count_tokens"
	RouteResponses   = "/responses"
)

// NativeTranslator is implemented by a Provider that takes one of the
// agents' protocols (RouteMessages, RouteCountTokens) natively for some
// models, as cloud hosts of Claude models take Anthropic Messages. For a
// POST to the route the gateway asks it first; a nil Translation means the
// target does not take the protocol natively: a Messages request is then
// translated to a chat completion (then to the provider's own API when it
// is a Translator), and a count_tokens request is answered with the
// gateway's own estimate. For both routes, body carries the caller's
// anthropic-beta header, if any, as its anthropic_beta member, as cloud
// hosts of Claude models take it. The Translation's Response leaves the
// answer in the route's own shape: Messages answers and events, or
// {"input_tokens":n} for RouteCountTokens, and errors shaped as the
// protocol's. A provider that does not know a route returns nil for it.
type NativeTranslator interface {
	Provider
	TranslateNative(route string, t *Target, body []byte) (*Translation, error)
}

// Protocols a request came in as, as RequestLog.Ingress names them.
const (
	ingressChatCompletions = "chat_completions"
	ingressCompletions     = "completions"
	ingressEmbeddings      = "embeddings"
	ingressMessages        = "messages"
	ingressResponses       = "responses"
	ingressPassThrough     = "pass_through"
)

// ingressKind is what an agents' protocol route asks of each target.
type ingressKind uint8

const (
	ingressNone         ingressKind = iota
	ingressMessage                  // POST /messages
	ingressCountTokens              // POST /messages/count_tokens
	ingressResponse                 // POST /responses
	ingressResponseRead             // GET or DELETE /responses/{id}[/input_items], not stored by the gateway
)

// ingress is how a request of an agents' protocol goes to each target of
// its plan: unchanged to a kind that takes it natively, translated for the
// others.
type ingress struct {
	kind  ingressKind
	betas []string // the caller's anthropic-beta header, for a NativeTranslator

	// POST /responses.
	respID     string
	created    int64
	previousID string            // the request's previous_response_id
	prev       []json.RawMessage // the stored items previous_response_id names; nil: none stored here
	store      ResponseStore     // where the answer is kept when the request asks; nil: nowhere
	ws         string            // the caller's workspace
	g          *Gateway

	// hooks is the request's hookWriter when guardrails are attached.
	// When it has output guardrails, the response to keep waits in held
	// (with the request it answers in heldReq) until they have run on
	// it, so that what is kept is what the caller got.
	hooks   *hookWriter
	held    []byte
	heldReq *responses.Request
}

// takesMessages reports whether the provider kind takes Anthropic
// Messages as sent.
func takesMessages(prov Provider) bool {
	_, ok := prov.(anthropic)
	return ok
}

// takesResponses reports whether target t takes OpenAI Responses as sent.
func takesResponses(t *Target) bool {
	return t.Provider == ProviderOpenAI || t.Provider == ProviderAzureOpenAI
}

// translate returns how the request goes to target t of provider prov:
// a nil Translation and answer for the caller's bytes unchanged, a
// Translation, or an answer of the gateway's own for a target that is not
// to be called.
func (in *ingress) translate(prov Provider, t *Target, body []byte) (*Translation, *heldResponse, error) {
	if err := needsToken(prov, t); err != nil {
		return nil, nil, err
	}
	switch in.kind {
	case ingressMessage, ingressCountTokens:
		if takesMessages(prov) {
			return nil, nil, nil
		}
	case ingressResponse:
		if takesResponses(t) && in.prev == nil {
			return nil, nil, nil
		}
		if in.previousID != "" && in.prev == nil {
			return nil, nil, badRequest(CodeNotFound, "previous_response_id", "previous_response_id: no response found with id "+quoteShort(in.previousID))
		}
	case ingressResponseRead:
		if takesResponses(t) {
			return nil, nil, nil
		}
		return nil, ownAnswer(http.StatusNotFound, responses.ErrorBody("no response found with this id", TypeInvalidRequest, CodeNotFound, "")), nil
	}
	switch in.kind {
	case ingressCountTokens:
		if tl, err := in.native(prov, RouteCountTokens, t, body); err != nil || tl != nil {
			return tl, nil, err
		}
		n, err := messages.CountTokens(body)
		if err != nil {
			return nil, nil, messagesError(err)
		}
		return nil, ownAnswer(http.StatusOK, messages.CountTokensBody(n)), nil
	case ingressMessage:
		if tl, err := in.native(prov, RouteMessages, t, body); err != nil || tl != nil {
			return tl, nil, err
		}
		tl, err := in.messagesToChat(prov, t, body)
		return tl, nil, err
	}
	tl, err := in.responsesToChat(prov, t, body)
	return tl, nil, err
}

// native returns how a provider that takes route natively for the
// request's model sends it, with the caller's anthropic-beta header in
// the body; nil when prov does not take it.
func (in *ingress) native(prov Provider, route string, t *Target, body []byte) (*Translation, error) {
	nt, ok := prov.(NativeTranslator)
	if !ok {
		return nil, nil
	}
	return nt.TranslateNative(route, t, messages.WithBetas(body, in.betas))
}

// ownAnswer is an answer the gateway makes itself in place of a target's.
func ownAnswer(status int, body []byte) *heldResponse {
	return &heldResponse{status: status, header: http.Header{"Content-Type": {"application/json"}}, body: body, cache: CacheDisabled}
}

// needsToken refuses a request to a built-in kind's own host without the
// provider token it needs, before any call.
func needsToken(prov Provider, t *Target) error {
	if t.APIKey != "" || t.BaseURL != nil {
		return nil
	}
	switch prov.(type) {
	case anthropic, openAI, azureOpenAI, vertexAI, geminiAPI:
		return badRequest(CodeMissingAPIKey, "Authorization", t.Provider+" needs a provider token: send Authorization: Bearer or x-api-key, or use a virtual key")
	}
	return nil
}

// chatTranslation returns the request for the chat completion body sent
// to t: the provider's own when it is a Translator, else the body to
// /chat/completions.
func chatTranslation(prov Provider, t *Target, body []byte) (*Translation, error) {
	if tr, ok := prov.(Translator); ok {
		tl, err := tr.Translate(RouteChatCompletions, t, body)
		if err != nil || tl != nil {
			return tl, err
		}
	}
	return &Translation{Path: RouteChatCompletions, Body: body}, nil
}

// then returns a Response running first (which may be nil) and then
// next on the answer.
func then(first, next func(*http.Response) error) func(*http.Response) error {
	if first == nil {
		return next
	}
	return func(res *http.Response) error {
		if err := first(res); err != nil {
			return err
		}
		return next(res)
	}
}

// chatDialect returns the member of chat messages that carries a model's
// reasoning for the provider kind slug, "" when it has none.
func chatDialect(slug string) string {
	if slug == "deepseek" {
		return "reasoning_content"
	}
	return ""
}

// messagesError is the gateway's 400 for a Messages request a translator
// refused.
func messagesError(err error) error {
	var me *messages.Error
	if errors.As(err, &me) {
		return badRequest(me.Code, me.Param, me.Message)
	}
	return err
}

// messagesToChat translates a Messages request to a chat completion for
// t, and the answer back.
func (in *ingress) messagesToChat(prov Provider, t *Target, body []byte) (*Translation, error) {
	mt, err := messages.Request(body, messages.Dialect{Reasoning: chatDialect(t.Provider)})
	if err != nil {
		return nil, messagesError(err)
	}
	tl, err := chatTranslation(prov, t, mt.Body)
	if err != nil || tl == nil {
		return tl, err
	}
	estimate := 0
	if mt.Stream {
		estimate, _ = messages.CountTokens(body)
	}
	tl.Response = then(tl.Response, func(res *http.Response) error {
		return messagesAnswer(res, mt, estimate)
	})
	return tl, nil
}

// messagesAnswer turns a chat answer into a Messages one, in place.
func messagesAnswer(res *http.Response, mt *messages.Translation, estimate int) error {
	if res.StatusCode < 200 || res.StatusCode > 299 {
		b, err := readProviderAnswer(res.Body, maxHeldBody)
		if err != nil {
			return err
		}
		setTranslatedBody(res, "application/json", messages.ErrorFromChat(res.StatusCode, b))
		return nil
	}
	if mt.Stream && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		var buf bytes.Buffer
		s := messages.NewStream(&buf, messages.StreamOptions{StopSequences: mt.StopSequences, InputTokens: estimate})
		res.Body = translatedStream(res.Body, &buf, s.Chunk, func(err error) error {
			if err == nil {
				return s.Close()
			}
			s.Fail(http.StatusBadGateway, TypeGateway, CodeUpstreamUnreachable, "the provider's stream broke off")
			return err
		})
		setTranslatedBody(res, "text/event-stream", nil)
		return nil
	}
	b, err := readProviderAnswer(res.Body, maxProviderAnswer)
	if err != nil {
		return err
	}
	out, err := messages.Answer(b, "", mt.StopSequences)
	if err != nil {
		return errors.Join(ErrUpstreamUnreachable, err)
	}
	setTranslatedBody(res, "application/json", out)
	return nil
}

// readProviderAnswer reads and closes a provider's answer, up to max bytes.
func readProviderAnswer(body io.ReadCloser, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, max))
	body.Close()
	return b, err
}

// translatedStream returns the body of a translated stream: each event of
// the chat stream body is given to chunk, which writes its translation to
// buf, and the bytes written are read before the next event is. end is
// called once the chat stream ended: with nil at its end, with the error
// when it broke off; it writes what ends the translation to buf, and
// returns an error when the translation did not end whole. A stream that
// ends cut short, or whose events are not chat chunks, ends with an error
// after what end wrote, so that the caller's connection is aborted rather
// than ended as if whole.
func translatedStream(body io.ReadCloser, buf *bytes.Buffer, chunk func([]byte) error, end func(error) error) io.ReadCloser {
	events := sse.NewReader(body, maxProviderEvent)
	done := false
	return chat.NewStream(body, func() ([]byte, error) {
		buf.Reset()
		if done {
			return nil, io.EOF
		}
		_, data, err := events.Next()
		switch {
		case err == io.EOF:
			done = true
			if err := end(nil); err != nil {
				return buf.Bytes(), err
			}
			return buf.Bytes(), io.EOF
		case err != nil:
			done = true
			return buf.Bytes(), end(err)
		}
		if err := chunk(data); err != nil {
			done = true
			return buf.Bytes(), err
		}
		return buf.Bytes(), nil
	})
}

// responsesError is the gateway's 400 for a Responses request a
// translator refused.
func responsesError(err error) error {
	var re *responses.Error
	if errors.As(err, &re) {
		return badRequest(re.Code, re.Param, re.Message)
	}
	return err
}

// responsesToChat translates a Responses request to a chat completion for
// t, and the answer back, keeping the response when the request asks.
func (in *ingress) responsesToChat(prov Provider, t *Target, body []byte) (*Translation, error) {
	req, err := responses.Parse(body)
	if err != nil {
		return nil, responsesError(err)
	}
	if in.prev != nil {
		if err := req.Prepend(in.prev); err != nil {
			return nil, responsesError(err)
		}
	}
	rt, err := req.Chat(responses.Options{ReasoningField: chatDialect(t.Provider)})
	if err != nil {
		return nil, responsesError(err)
	}
	tl, err := chatTranslation(prov, t, rt.Body)
	if err != nil || tl == nil {
		return tl, err
	}
	tl.Response = then(tl.Response, func(res *http.Response) error {
		return in.responsesAnswer(res, req)
	})
	return tl, nil
}

// responsesAnswer turns a chat answer into a Response, in place, and
// keeps it when the request asks: a whole answer before it is sent, a
// streamed one once its last event was read; with output guardrails
// attached, once they ran (see keepJSON).
func (in *ingress) responsesAnswer(res *http.Response, req *responses.Request) error {
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil // a chat target's error is OpenAI-shaped, as the Responses API's are
	}
	if req.Stream && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		var buf bytes.Buffer
		s := req.NewStream(&buf, in.respID, in.created)
		ctx := res.Request.Context()
		res.Body = translatedStream(res.Body, &buf, s.Chunk, func(err error) error {
			if err == nil {
				s.Finish()
			} else {
				s.Fail("server_error", "the provider's stream broke off")
			}
			r := s.Response()
			if r == nil || r.Status == "failed" {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
			in.keep(ctx, req, r)
			return nil
		})
		setTranslatedBody(res, "text/event-stream", nil)
		return nil
	}
	b, err := readProviderAnswer(res.Body, maxProviderAnswer)
	if err != nil {
		return err
	}
	r, err := req.Answer(b, in.respID)
	if err != nil {
		return errors.Join(ErrUpstreamUnreachable, err)
	}
	r.CreatedAt = in.created
	out, err := r.AppendJSON(nil)
	if err != nil {
		return err
	}
	in.keepJSON(res.Request.Context(), req, out)
	setTranslatedBody(res, "application/json", out)
	return nil
}

// keep stores r, the response to req, when req asks and the gateway has a
// ResponseStore.
func (in *ingress) keep(ctx context.Context, req *responses.Request, r *responses.Response) {
	if in.store == nil || !req.Store {
		return
	}
	b, err := r.AppendJSON(nil)
	if err != nil {
		return
	}
	in.keepJSON(ctx, req, b)
}

// keepJSON stores the response whose JSON is b (see keep): at once, or,
// when output guardrails are attached, once they have run on the answer
// (see hookWriter.finish), as they left it.
func (in *ingress) keepJSON(ctx context.Context, req *responses.Request, b []byte) {
	if in.store == nil || !req.Store {
		return
	}
	in.heldReq = req
	if in.hooks != nil && len(in.hooks.c.Output) > 0 {
		in.held = b
		return
	}
	in.put(ctx, b)
}

// put stores b, the JSON of the response to in.heldReq.
func (in *ingress) put(ctx context.Context, b []byte) {
	req := in.heldReq
	own, err := responses.Items(req.Input)
	if err != nil {
		return
	}
	items := append(append([]json.RawMessage(nil), in.prev...), own...)
	input, err := json.Marshal(items)
	if err != nil {
		return
	}
	rec := &StoredResponse{ID: in.respID, Workspace: in.ws, Created: time.Unix(in.created, 0), Response: b, Input: input}
	if err := in.store.PutResponse(context.WithoutCancel(ctx), rec); err != nil {
		in.g.errLog.ErrorContext(ctx, "gateway: storing response "+strconv.Quote(in.respID), "err", err)
	}
}
