// Package chat holds the wire types of OpenAI's chat completions and
// embeddings APIs that the gateway's translators read and write: the
// request a caller sends, and the answer, stream chunk and error a
// translated provider's reply becomes. Only what translation needs is
// typed; members a type does not name are kept in Extra where a
// translator must see them (to refuse what its provider cannot do).
package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// Request is a chat completion request (POST /chat/completions).
type Request struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	Tools               []Tool          `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
	Stop                Stop            `json:"stop,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	N                   *int            `json:"n,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *StreamOptions  `json:"stream_options,omitempty"`
	User                string          `json:"user,omitempty"`

	// Extra holds the members the fields above do not name, e.g. seed,
	// logprobs, presence_penalty: a translator refuses those its provider
	// cannot honour, naming them.
	Extra map[string]json.RawMessage `json:"-"`
}

// known are the members Request names.
var known = map[string]bool{"model": true, "messages": true, "tools": true, "tool_choice": true,
	"parallel_tool_calls": true, "response_format": true, "stop": true, "max_tokens": true,
	"max_completion_tokens": true, "temperature": true, "top_p": true, "n": true, "stream": true,
	"stream_options": true, "user": true}

// ParamError is a request member the caller got wrong, or that the
// provider cannot honour: the gateway answers it with a 400 naming Param.
type ParamError struct {
	Param   string
	Message string
}

func (e *ParamError) Error() string { return e.Param + ": " + e.Message }

// ParseRequest decodes a chat completion request. A malformed member is a
// *ParamError naming it.
func ParseRequest(body []byte) (*Request, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil || members == nil {
		return nil, &ParamError{Message: "the request body must be a JSON object"}
	}
	r := &Request{}
	type plain Request
	if err := json.Unmarshal(body, (*plain)(r)); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, &ParamError{Param: te.Field, Message: "must be a JSON " + jsonKind(te.Type.Kind().String())}
		}
		var pe *ParamError
		if errors.As(err, &pe) {
			return nil, pe
		}
		return nil, &ParamError{Message: "the request body is not valid JSON"}
	}
	for k, v := range members {
		if !known[k] && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			if r.Extra == nil {
				r.Extra = make(map[string]json.RawMessage)
			}
			r.Extra[k] = v
		}
	}
	if r.Model == "" {
		return nil, &ParamError{Param: "model", Message: "is required"}
	}
	if len(r.Messages) == 0 {
		return nil, &ParamError{Param: "messages", Message: "must hold at least one message"}
	}
	for i, m := range r.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return nil, &ParamError{Param: "messages[" + strconv.Itoa(i) + "].role", Message: "must be system, developer, user, assistant or tool"}
		}
	}
	return r, nil
}

func jsonKind(k string) string {
	switch k {
	case "int", "int64", "float64":
		return "number"
	case "slice":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	}
	return k
}

// MaxOutputTokens returns max_completion_tokens, else max_tokens, else 0.
func (r *Request) MaxOutputTokens() int {
	switch {
	case r.MaxCompletionTokens != nil:
		return *r.MaxCompletionTokens
	case r.MaxTokens != nil:
		return *r.MaxTokens
	}
	return 0
}

// IncludeUsage reports whether a streamed answer ends with a usage chunk.
func (r *Request) IncludeUsage() bool {
	return r.Stream && r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// Message is one message of the conversation.
type Message struct {
	Role       string     `json:"role"`
	Content    Content    `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// Content is a message's content: a string, or an array of parts. Null
// (an assistant message that only calls tools) is neither.
type Content struct {
	Text  *string
	Parts []Part
}

// UnmarshalJSON decodes a string, an array of parts or null.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = Content{}
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content{Text: &s}
		return nil
	case len(b) > 0 && b[0] == '[':
		var parts []Part
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		*c = Content{Parts: parts}
		return nil
	}
	return &ParamError{Param: "messages", Message: "content must be a string or an array of content parts"}
}

// MarshalJSON encodes the string, the parts or null.
func (c Content) MarshalJSON() ([]byte, error) {
	switch {
	case c.Text != nil:
		return json.Marshal(*c.Text)
	case c.Parts != nil:
		return json.Marshal(c.Parts)
	}
	return []byte("null"), nil
}

// String returns the text of the content: the string, or its text parts
// joined.
func (c Content) String() string {
	if c.Text != nil {
		return *c.Text
	}
	var b bytes.Buffer
	for _, p := range c.Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Part is one part of a multi-part content: text, or an image.
type Part struct {
	Type     string    `json:"type"` // "text", "image_url", …
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is an image part's image: an https URL or a data: URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// DataURL splits a base64 data: URL into its media type and data.
func DataURL(u string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	mediaType, ok = strings.CutSuffix(meta, ";base64")
	return mediaType, data, ok && mediaType != ""
}

// ToolCall is a call of a function the model asks for.
type ToolCall struct {
	Index    *int         `json:"index,omitempty"` // in stream chunks only
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a tool call names, with its arguments as a
// JSON text.
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Tool is a function the model may call.
type Tool struct {
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// Function describes a callable function; Parameters is a JSON Schema.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ToolChoice is the decoded tool_choice: Mode "auto", "none", "required",
// or "function" with the function's Name.
type ToolChoice struct {
	Mode string
	Name string
}

// ParseToolChoice decodes tool_choice; absent is Mode "".
func (r *Request) ParseToolChoice() (ToolChoice, error) {
	raw := bytes.TrimSpace(r.ToolChoice)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ToolChoice{}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return ToolChoice{Mode: s}, nil
		}
		return ToolChoice{}, &ParamError{Param: "tool_choice", Message: "must be auto, none, required or a function"}
	}
	var f struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &f) != nil || f.Type != "function" || f.Function.Name == "" {
		return ToolChoice{}, &ParamError{Param: "tool_choice", Message: "must be auto, none, required or a function"}
	}
	return ToolChoice{Mode: "function", Name: f.Function.Name}, nil
}

// ResponseFormat is response_format: "text", "json_object", or
// "json_schema" with its schema.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is a named schema the answer must follow.
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Stop is stop: one string or up to four.
type Stop []string

// UnmarshalJSON decodes a string, an array of strings or null.
func (s *Stop) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*s = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = Stop{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return &ParamError{Param: "stop", Message: "must be a string or an array of strings"}
	}
	*s = many
	return nil
}

// StreamOptions are the options of a streamed answer.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage,omitempty"`
}

// Completion is a whole chat completion answer.
type Completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"` // "chat.completion"
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage,omitempty"`
}

// Choice is one choice of an answer.
type Choice struct {
	Index        int              `json:"index"`
	Message      AssistantMessage `json:"message"`
	Logprobs     json.RawMessage  `json:"logprobs"` // always null
	FinishReason string           `json:"finish_reason"`
}

// AssistantMessage is the model's message: its text (null when it only
// calls tools) and its tool calls.
type AssistantMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	Refusal   *string    `json:"refusal"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Usage counts the tokens of a request and its answer.
type Usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	PromptTokensDetails *PromptDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptDetails breaks the prompt tokens down.
type PromptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// Chunk is one event of a streamed answer.
type Chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"` // "chat.completion.chunk"
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
}

// ChunkChoice is the delta of one choice in a chunk.
type ChunkChoice struct {
	Index        int             `json:"index"`
	Delta        Delta           `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"` // always null
	FinishReason *string         `json:"finish_reason"`
}

// Delta is what a chunk adds to a choice's message.
type Delta struct {
	Role      string     `json:"role,omitempty"`
	Content   *string    `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Objects of the answers.
const (
	ObjectCompletion = "chat.completion"
	ObjectChunk      = "chat.completion.chunk"
)

// null is the JSON null of Logprobs members.
var null = json.RawMessage("null")

// Event returns c as one server-sent event: "data: {…}\n\n".
func Event(c *Chunk) []byte {
	for i := range c.Choices {
		if c.Choices[i].Logprobs == nil {
			c.Choices[i].Logprobs = null
		}
	}
	if c.Choices == nil {
		c.Choices = []ChunkChoice{}
	}
	b, _ := json.Marshal(c)
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, '\n', '\n')
}

// Done is the event that ends a stream.
var Done = []byte("data: [DONE]\n\n")

// Encode returns a whole answer's JSON.
func Encode(c *Completion) []byte {
	for i := range c.Choices {
		if c.Choices[i].Logprobs == nil {
			c.Choices[i].Logprobs = null
		}
	}
	b, _ := json.Marshal(c)
	return b
}

// ErrorBody returns an OpenAI-shaped error body. An empty code or param is
// null.
func ErrorBody(message, typ, code, param string) []byte {
	nullable := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": typ, "code": nullable(code), "param": nullable(param)}})
	return b
}
