package messages

import (
	"encoding/json"
	"errors"
	"strconv"
)

// Weights of CountTokens' estimate.
const (
	bytesPerToken   = 4    // of text, JSON schemas and tool inputs
	tokensPerImage  = 1600 // Anthropic's count for an image of about 1.15 megapixels, the most it keeps
	tokensPerBlock  = 3    // framing of each message and block
	tokensWithTools = 350  // the instructions a model gets when it is given tools
)

// CountTokens estimates the input tokens of a Messages request body, for
// POST /v1/messages/count_tokens against a target that cannot count
// them: about one token for four bytes of text (system, text blocks,
// thinking, tool inputs and results, tool names, descriptions and
// schemas), 1600 for an image, a few for each message and block, and 350
// when tools are given. It is an estimate, typically within a quarter of
// what a Claude model counts, and not a provider's count. A body that is
// not a Messages request is an *Error as for Request; max_tokens is not
// needed.
func CountTokens(body []byte) (int, error) {
	r, _, err := decode(body)
	if err != nil {
		return 0, err
	}
	if len(r.Messages) == 0 {
		return 0, invalid("messages", "must hold at least one message")
	}
	n := len(r.System)
	tokens := 0
	for i := range r.Messages {
		tokens += tokensPerBlock
		n, tokens = countContent(&r.Messages[i].Content, n, tokens)
	}
	if len(r.Tools) > 0 {
		tokens += tokensWithTools
	}
	for i := range r.Tools {
		t := &r.Tools[i]
		tokens += tokensPerBlock
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return tokens + (n+bytesPerToken-1)/bytesPerToken, nil
}

// countContent adds a content's bytes of text to n and its fixed counts
// to tokens.
func countContent(c *msgContent, n, tokens int) (int, int) {
	if c == nil {
		return n, tokens
	}
	if c.Text != nil {
		return n + len(*c.Text), tokens
	}
	for i := range c.Blocks {
		b := &c.Blocks[i]
		tokens += tokensPerBlock
		switch b.Type {
		case "image":
			tokens += tokensPerImage
		default:
			n += len(b.Text) + len(b.Thinking) + len(b.Name) + len(b.Input)
			n, tokens = countContent(b.Content, n, tokens)
		}
	}
	return n, tokens
}

// CountTokensBody returns the answer of /v1/messages/count_tokens:
// {"input_tokens":n}.
func CountTokensBody(n int) []byte {
	return append(strconv.AppendInt([]byte(`{"input_tokens":`), int64(n), 10), '}')
}

// InputTokens reads the count of a cloud host's answer to a count
// request: the member name of the JSON object body ("inputTokens" in
// Bedrock's CountTokens answer, "input_tokens" in Anthropic's and
// Vertex AI's). A body without a whole number of at least 0 there is an
// error, so that a caller is never told a count of 0 that no one made.
func InputTokens(body []byte, name string) (int, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return 0, errors.New("gateway: the token count answer is not a JSON object")
	}
	n, err := strconv.ParseInt(string(obj[name]), 10, 32)
	if err != nil || n < 0 {
		return 0, errors.New("gateway: the token count answer has no count in " + strconv.Quote(name))
	}
	return int(n), nil
}
