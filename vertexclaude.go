package gateway

import (
	"errors"
	"net/http"
	"strings"

	"github.com/modelgateway/gateway/internal/translate/messages"
)

var _ NativeTranslator = vertexAI{}

// vertexAnthropicVersion is the anthropic_version Vertex AI takes in the
// body of a Claude model's rawPredict.
const vertexAnthropicVersion = "vertex-2023-10-16"

// TranslateNative sends an Anthropic Messages request for a Claude model
// (an id starting with "claude-") to Vertex AI's own Messages endpoint,
// POST /publishers/anthropic/models/{model}:rawPredict, or
// :streamRawPredict when streamed, with the caller's body less its model
// and with Vertex's anthropic_version: cache_control, thinking and tool
// blocks reach the model as sent, and the answer, a Messages answer or
// event stream, comes back as sent. A count_tokens request
// (RouteCountTokens) for a Claude model goes to
// /publishers/anthropic/models/count-tokens:rawPredict, which reads the
// model from the body: the caller's body, model included, with Vertex's
// anthropic_version; its answer is Anthropic's {"input_tokens":n}, and
// one without a count is a 502. Errors come back Anthropic-shaped. Any
// other model, or route, is not taken natively.
func (vertexAI) TranslateNative(route string, _ *Target, body []byte) (*Translation, error) {
	if route != RouteMessages && route != RouteCountTokens || !strings.HasPrefix(requestModel(body), "claude-") {
		return nil, nil
	}
	if route == RouteCountTokens {
		c, err := messages.CountRequest(body, vertexAnthropicVersion)
		if err != nil {
			return nil, messagesError(err)
		}
		return &Translation{Path: "/publishers/anthropic/models/count-tokens:rawPredict", Body: c.Body, Response: vertexCountAnswer}, nil
	}
	c, err := messages.CloudRequest(body, vertexAnthropicVersion, true)
	if err != nil {
		return nil, messagesError(err)
	}
	if strings.ContainsAny(c.Model, "/?#%\\ \t\r\n") {
		return nil, badRequest(CodeInvalidJSON, "model", "model: not a Vertex AI model id")
	}
	action := ":rawPredict"
	if c.Stream {
		action = ":streamRawPredict"
	}
	p := "/publishers/anthropic/models/" + c.Model + action
	return &Translation{Path: p, Body: c.Body, Response: vertexClaudeAnswer}, nil
}

// vertexCountAnswer leaves the answer of count-tokens:rawPredict as
// Vertex AI sent it when it holds a count, and makes an error
// Anthropic-shaped.
func vertexCountAnswer(res *http.Response) error {
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return vertexClaudeAnswer(res)
	}
	b, err := readProviderAnswer(res.Body, maxHeldBody)
	if err != nil {
		return err
	}
	if _, err := messages.InputTokens(b, "input_tokens"); err != nil {
		return errors.Join(ErrUpstreamUnreachable, err)
	}
	setTranslatedBody(res, "application/json", b)
	return nil
}

// vertexClaudeAnswer leaves a Claude model's answer as Vertex AI sent it,
// but for an error, which it makes Anthropic-shaped when Google's.
func vertexClaudeAnswer(res *http.Response) error {
	if res.StatusCode >= 200 && res.StatusCode <= 299 {
		return nil
	}
	b, err := readProviderAnswer(res.Body, maxHeldBody)
	if err != nil {
		return err
	}
	if !messages.IsError(b) {
		b = messages.ErrorFromChat(res.StatusCode, googleErrorBody(ProviderVertexAI, googleErrorOf(b), res.StatusCode))
	}
	setTranslatedBody(res, "application/json", b)
	return nil
}
