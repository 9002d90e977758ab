package gateway

import (
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
// event stream, comes back as sent. Errors come back Anthropic-shaped.
// Any other model, or route, is not taken natively.
func (vertexAI) TranslateNative(route string, _ *Target, body []byte) (*Translation, error) {
	if route != RouteMessages || !strings.HasPrefix(requestModel(body), "claude-") {
		return nil, nil
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
