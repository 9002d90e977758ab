package bedrock

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/translate/messages"
)

// countRequest is the body of CountTokens counting an InvokeModel body.
type countRequest struct {
	Input struct {
		InvokeModel struct {
			Body []byte `json:"body"` // base64 in JSON
		} `json:"invokeModel"`
	} `json:"input"`
}

// countTokens sends a count_tokens request, c being its InvokeModel form,
// to CountTokens (POST /model/{modelId}/count-tokens) with the InvokeModel
// body it would count, base64 in {"input":{"invokeModel":{"body":…}}},
// and turns the answer, {"inputTokens":n}, into Anthropic's
// {"input_tokens":n}. CountTokens counts for foundation models only, so a
// cross-region inference profile's id is sent as the model it names.
func countTokens(c *messages.Cloud) (*gateway.Translation, error) {
	body, err := withMaxTokens(c.Body)
	if err != nil {
		return nil, err
	}
	path, raw, err := modelPath(foundationModel(c.Model), "count-tokens")
	if err != nil {
		return nil, err
	}
	var req countRequest
	req.Input.InvokeModel.Body = body
	b, err := json.Marshal(&req)
	if err != nil {
		return nil, err
	}
	return &gateway.Translation{Path: path, RawPath: raw, Body: b, Response: countAnswer}, nil
}

// withMaxTokens returns an InvokeModel body with max_tokens, which
// CountTokens requires of a Claude model's body although a count_tokens
// request need not give it: 1, or one more than the thinking budget,
// which max_tokens must exceed. It changes no count of input tokens.
func withMaxTokens(body []byte) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, err
	}
	if _, ok := obj["max_tokens"]; ok {
		return body, nil
	}
	var thinking struct {
		BudgetTokens int64 `json:"budget_tokens"`
	}
	json.Unmarshal(obj["thinking"], &thinking)
	obj["max_tokens"] = strconv.AppendInt(nil, max(thinking.BudgetTokens, 0)+1, 10)
	return json.Marshal(obj)
}

// foundationModel returns the foundation model id a cross-region
// inference profile id names ("us.anthropic.claude-…" is
// "anthropic.claude-…"), and any other id or ARN as it is.
func foundationModel(model string) string {
	if i := strings.Index(model, ".anthropic."); i > 0 && !strings.ContainsAny(model[:i], ".:/") {
		return model[i+1:]
	}
	return model
}

// countAnswer turns CountTokens' answer into Anthropic's, and an error
// into an Anthropic-shaped one. An answer without a count is a 502.
func countAnswer(res *http.Response) error {
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return claudeError(res)
	}
	b, err := readAnswer(res, maxErrorBody)
	if err != nil {
		return err
	}
	n, err := messages.InputTokens(b, "inputTokens")
	if err != nil {
		return badAnswer("a token count without inputTokens")
	}
	setBody(res, "application/json", messages.CountTokensBody(n))
	return nil
}
