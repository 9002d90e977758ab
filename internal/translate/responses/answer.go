package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/wire"
)

// Response is a Response object (object "response"), as answered whole,
// carried by the stream's events and stored. Its JSON has every member
// the Responses API requires; request members are echoed as sent, or as
// their defaults.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"` // completed, incomplete, failed, in_progress
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []json.RawMessage  `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          reasoningEcho      `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               json.RawMessage    `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []json.RawMessage  `json:"tools"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *Usage             `json:"usage"`
	User               *string            `json:"user"`
	Metadata           map[string]string  `json:"metadata"`
}

// ResponseError is why a response failed.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails is why a response is incomplete: max_output_tokens or
// content_filter.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

type reasoningEcho struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// Usage counts a response's tokens.
type Usage struct {
	InputTokens         int          `json:"input_tokens"`
	InputTokensDetails  InputDetails `json:"input_tokens_details"`
	OutputTokens        int          `json:"output_tokens"`
	OutputTokensDetails OutputDetail `json:"output_tokens_details"`
	TotalTokens         int          `json:"total_tokens"`
}

// InputDetails breaks input tokens down.
type InputDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputDetail breaks output tokens down.
type OutputDetail struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Output items, as encoding/json writes them.
type (
	messageItem struct {
		ID      string `json:"id"`
		Type    string `json:"type"` // message
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []any  `json:"content"` // textPartOut and refusalPartOut
	}
	textPartOut struct {
		Type        string            `json:"type"` // output_text
		Annotations []json.RawMessage `json:"annotations"`
		Logprobs    []json.RawMessage `json:"logprobs"`
		Text        string            `json:"text"`
	}
	refusalPartOut struct {
		Type    string `json:"type"` // refusal
		Refusal string `json:"refusal"`
	}
	functionCallItem struct {
		ID        string `json:"id"`
		Type      string `json:"type"` // function_call
		Status    string `json:"status"`
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
	}
	reasoningItem struct {
		ID      string        `json:"id"`
		Type    string        `json:"type"` // reasoning
		Summary []summaryPart `json:"summary"`
	}
	summaryPart struct {
		Type string `json:"type"` // summary_text
		Text string `json:"text"`
	}
)

var empty = []json.RawMessage{}

func textPartOf(s string) any {
	return textPartOut{Type: "output_text", Annotations: empty, Logprobs: empty, Text: s}
}

func refusalPartOf(s string) any {
	return refusalPartOut{Type: "refusal", Refusal: s}
}

// completion is a chat completion answer with the members chat.Completion
// lacks: the reasoning of the dialects that return it, and reasoning
// tokens.
type completion struct {
	ID      string             `json:"id"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *chatUsage         `json:"usage"`
}

type completionChoice struct {
	Message      reply  `json:"message"`
	FinishReason string `json:"finish_reason"`
}

// reasoningFields are where chat dialects put the model's reasoning:
// reasoning_content (DeepSeek, vLLM, Qwen) or reasoning (OpenRouter,
// Ollama). The latter is a string where it is reasoning text at all.
type reasoningFields struct {
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
}

func (f *reasoningFields) text() string {
	if f.ReasoningContent != nil {
		return *f.ReasoningContent
	}
	if len(f.Reasoning) > 0 && f.Reasoning[0] == '"' {
		var s string
		if json.Unmarshal(f.Reasoning, &s) == nil {
			return s
		}
	}
	return ""
}

type chatUsage struct {
	PromptTokens        int                 `json:"prompt_tokens"`
	CompletionTokens    int                 `json:"completion_tokens"`
	TotalTokens         int                 `json:"total_tokens"`
	PromptTokensDetails *chat.PromptDetails `json:"prompt_tokens_details"`
	CompletionDetails   *completionDetails  `json:"completion_tokens_details"`
}

type completionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

func (u *chatUsage) usage() *Usage {
	if u == nil {
		return nil
	}
	out := &Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if out.TotalTokens == 0 {
		out.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	if u.PromptTokensDetails != nil {
		out.InputTokensDetails.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionDetails != nil {
		out.OutputTokensDetails.ReasoningTokens = u.CompletionDetails.ReasoningTokens
	}
	return out
}

// ErrAnswer is returned for a chat completion answer that is not JSON or
// holds no choice.
var ErrAnswer = errors.New("responses: the provider's chat completion is not valid")

// Response returns the Response object the request's answer starts as:
// status in_progress, no output, every request member echoed.
func (r *Request) Response(id string, createdAt int64) *Response {
	w := &r.w
	out := &Response{ID: id, Object: "response", CreatedAt: createdAt, Status: "in_progress",
		Instructions: w.Instructions, MaxOutputTokens: w.MaxOutputTokens, Model: w.Model, Output: empty,
		ParallelToolCalls: w.ParallelToolCalls == nil || *w.ParallelToolCalls, PreviousResponseID: w.PreviousResponseID,
		Store: r.Store, Temperature: 1, Text: json.RawMessage(`{"format":{"type":"text"}}`),
		ToolChoice: json.RawMessage(`"auto"`), Tools: w.Tools, TopP: 1, Truncation: "disabled", Metadata: w.Metadata}
	if w.Temperature != nil {
		out.Temperature = *w.Temperature
	}
	if w.TopP != nil {
		out.TopP = *w.TopP
	}
	if w.Text != nil && isSet(w.Text.Format) {
		b := append([]byte(`{"format":`), w.Text.Format...)
		if w.Text.Verbosity != "" {
			b = appendString(append(b, `,"verbosity":`...), w.Text.Verbosity)
		}
		out.Text = append(b, '}')
	}
	if isSet(w.ToolChoice) {
		out.ToolChoice = w.ToolChoice
	}
	if out.Tools == nil {
		out.Tools = empty
	}
	if w.Truncation != "" {
		out.Truncation = w.Truncation
	}
	if w.Reasoning != nil {
		out.Reasoning = reasoningEcho{Effort: w.Reasoning.Effort, Summary: w.Reasoning.Summary}
	}
	if w.User != "" {
		out.User = &w.User
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	return out
}

// Answer translates a whole chat completion answer into the Response
// object with the given id: a reasoning item from the answer's reasoning,
// a message item with the text (or refusal), then one function_call item
// per tool call. A finish reason of length or content_filter makes the
// response incomplete.
func (r *Request) Answer(body []byte, id string) (*Response, error) {
	var c completion
	if wire.Decode(body, &c, decodeCompletion) != nil || len(c.Choices) == 0 {
		return nil, ErrAnswer
	}
	created := c.Created
	if created == 0 {
		created = time.Now().Unix()
	}
	out := r.Response(id, created)
	if c.Model != "" {
		out.Model = c.Model
	}
	ch := &c.Choices[0]
	m := &ch.Message
	scratch := make([]byte, 0, 1024) // each item as appendItem writes it; most fit
	if s := m.text(); s != "" {
		out.Output = appendItem(out.Output, &scratch, reasoningItem{ID: r.newID("rs"), Type: "reasoning",
			Summary: []summaryPart{{Type: "summary_text", Text: s}}})
	}
	var parts []any
	if m.Content != nil && (*m.Content != "" || len(m.ToolCalls) == 0 && m.Refusal == nil) {
		parts = append(parts, textPartOf(*m.Content))
	}
	if m.Refusal != nil {
		parts = append(parts, refusalPartOf(*m.Refusal))
	}
	if len(parts) > 0 {
		out.Output = appendItem(out.Output, &scratch, messageItem{ID: r.newID("msg"), Type: "message", Status: "completed",
			Role: "assistant", Content: parts})
	}
	for _, tc := range m.ToolCalls {
		callID := tc.ID
		if callID == "" {
			callID = r.newID("call")
		}
		out.Output = appendItem(out.Output, &scratch, functionCallItem{ID: r.newID("fc"), Type: "function_call", Status: "completed",
			Arguments: tc.Function.Arguments, CallID: callID, Name: tc.Function.Name})
	}
	out.Status, out.IncompleteDetails = finish(ch.FinishReason)
	out.Usage = c.Usage.usage()
	return out, nil
}

// finish maps a chat finish reason to a response's status.
func finish(reason string) (string, *IncompleteDetails) {
	switch reason {
	case "length":
		return "incomplete", &IncompleteDetails{Reason: "max_output_tokens"}
	case "content_filter":
		return "incomplete", &IncompleteDetails{Reason: "content_filter"}
	}
	return "completed", nil
}

// appendItem appends item to items, written as JSON in scratch, a buffer
// kept from one call to the next, and copied out at its length.
func appendItem(items []json.RawMessage, scratch *[]byte, item any) []json.RawMessage {
	*scratch = appendValue((*scratch)[:0], item)
	return append(items, bytes.Clone(*scratch))
}
