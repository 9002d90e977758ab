package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/wire"
)

// Error codes of the errors Request returns, as the gateway writes them
// in the "code" of its 400 answer.
const (
	// CodeUnsupportedParameter: the request uses something a chat target
	// cannot do (a document block, a server tool, top_k…).
	CodeUnsupportedParameter = "unsupported_parameter"

	// CodeInvalidJSON: the body or one of its members is not what the
	// Messages API takes.
	CodeInvalidJSON = "invalid_json"
)

// Error is a request the translator refuses: Param is the JSON path of
// the offending member (e.g. messages[2].content[0].type), for the 400
// that names it.
type Error struct {
	Code    string // CodeUnsupportedParameter or CodeInvalidJSON
	Param   string // "" when the body as a whole is at fault
	Message string
}

func (e *Error) Error() string {
	if e.Param == "" {
		return "messages: " + e.Message
	}
	return "messages: " + e.Param + ": " + e.Message
}

func unsupported(param, msg string) *Error {
	return &Error{Code: CodeUnsupportedParameter, Param: param, Message: msg}
}

func invalid(param, msg string) *Error {
	return &Error{Code: CodeInvalidJSON, Param: param, Message: msg}
}

// Bounds of a request, far above what any agent sends, so that an absurd
// body is refused before it costs much.
const (
	maxDepth    = 128   // nesting of arrays and objects
	maxMessages = 50000 // messages
	maxBlocks   = 10000 // content blocks of one message
	maxTools    = 2048
	maxStops    = 1024
	maxDropped  = 32 // paths listed in Translation.Dropped
)

// Translation is a Messages request translated to chat.
type Translation struct {
	// Body is the chat completion request, as JSON.
	Body []byte

	// Model and Stream are the request's, for the route and the answer.
	Model  string
	Stream bool

	// StopSequences are the request's stop_sequences, for Answer and
	// Stream to tell a stop sequence from the end of a turn.
	StopSequences []string

	// Dropped lists, as JSON paths, what the chat target cannot take and
	// was left out without changing the answer's meaning: cache_control
	// (only Anthropic caches on it), thinking blocks when the dialect has
	// no reasoning member, redacted thinking, the signatures of thinking
	// blocks, is_error of tool results. At most 32 are listed; the last
	// then says how many more were dropped.
	Dropped []string
}

func (t *Translation) drop(path string) {
	switch n := len(t.Dropped); {
	case n == 0:
		t.Dropped = append(make([]string, 0, 8), path)
	case n < maxDropped-1:
		t.Dropped = append(t.Dropped, path)
	case n == maxDropped-1:
		t.Dropped = append(t.Dropped, "and more")
	}
}

// The request's wire types. Members that need no translation
// (cache_control, citations) are not decoded.
type (
	msgRequest struct {
		Model         string          `json:"model"`
		MaxTokens     *int            `json:"max_tokens"`
		System        json.RawMessage `json:"system"`
		Messages      []msgMessage    `json:"messages"`
		Tools         []msgTool       `json:"tools"`
		ToolChoice    *msgToolChoice  `json:"tool_choice"`
		StopSequences []string        `json:"stop_sequences"`
		Temperature   *float64        `json:"temperature"`
		TopP          *float64        `json:"top_p"`
		TopK          *int            `json:"top_k"`
		Metadata      *struct {
			UserID string `json:"user_id"`
		} `json:"metadata"`
		Stream   bool         `json:"stream"`
		Thinking *msgThinking `json:"thinking"`

		// system is System decoded, when decodeFast decoded it.
		system *msgContent
	}
	msgMessage struct {
		Role    string     `json:"role"`
		Content msgContent `json:"content"`
	}
	msgContent struct {
		Text   *string
		Blocks []msgBlock
	}
	msgBlock struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Source    *msgSource      `json:"source"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   *msgContent     `json:"content"`
		IsError   bool            `json:"is_error"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Cache     json.RawMessage `json:"cache_control"`
	}
	msgSource struct {
		Type      string `json:"type"` // base64, url, file, text, content
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	}
	msgTool struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Cache       json.RawMessage `json:"cache_control"`
	}
	msgToolChoice struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	msgThinking struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	}
)

// contentOf decodes a content member: a string or an array of blocks.
func contentOf(raw []byte) (msgContent, error) {
	var c msgContent
	var d wire.Decoder
	d.Reset(raw)
	decodeContent(&d, &c, &blockBufs{size: len(raw)})
	if d.End() {
		return c, nil
	}
	c = msgContent{}
	err := c.UnmarshalJSON(raw)
	return c, err
}

// UnmarshalJSON decodes a string or an array of blocks.
func (c *msgContent) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		c.Text = &s
		return nil
	case len(b) > 0 && b[0] == '[':
		return json.Unmarshal(b, &c.Blocks)
	case string(b) == "null":
		return nil
	}
	return &json.UnmarshalTypeError{Value: "content", Type: reflect.TypeFor[[]msgBlock]()}
}

// members are the top-level members Request reads or knowingly ignores.
var members = map[string]bool{"model": true, "max_tokens": true, "system": true, "messages": true,
	"tools": true, "tool_choice": true, "stop_sequences": true, "temperature": true, "top_p": true,
	"top_k": true, "metadata": true, "stream": true, "thinking": true, "service_tier": true}

// The chat request written, over internal/chat's types, with the members
// of other chat dialects.
type (
	chatRequest struct {
		Model               string              `json:"model"`
		Messages            []chatMessage       `json:"messages"`
		Tools               []chat.Tool         `json:"tools,omitempty"`
		ToolChoice          json.RawMessage     `json:"tool_choice,omitempty"`
		ParallelToolCalls   *bool               `json:"parallel_tool_calls,omitempty"`
		Stop                []string            `json:"stop,omitempty"`
		MaxTokens           *int                `json:"max_tokens,omitempty"`
		MaxCompletionTokens *int                `json:"max_completion_tokens,omitempty"`
		ReasoningEffort     string              `json:"reasoning_effort,omitempty"`
		Temperature         *float64            `json:"temperature,omitempty"`
		TopP                *float64            `json:"top_p,omitempty"`
		TopK                *int                `json:"top_k,omitempty"`
		Stream              bool                `json:"stream,omitempty"`
		StreamOptions       *chat.StreamOptions `json:"stream_options,omitempty"`
		User                string              `json:"user,omitempty"`
	}
	chatMessage = wire.Message
)

// Request translates a Messages request body to a chat completion
// request for a target of dialect d. What a chat target cannot do is an
// *Error with Code CodeUnsupportedParameter naming the member; a body that
// is not a Messages request is an *Error with Code CodeInvalidJSON.
//
// The mapping: system (a string or text blocks, joined by blank lines)
// becomes the first message, a system message. A user message's
// tool_result blocks become tool messages, in order and ahead of its other
// blocks; images in a tool result follow them as a user message, since
// chat's tool messages hold text only. An assistant message's text
// becomes its content, its tool_use blocks its tool_calls, and its
// thinking the dialect's reasoning member. Images (base64 or url) become
// image_url parts. tool_choice any is required, tool a named function;
// disable_parallel_tool_use is parallel_tool_calls false. stop_sequences
// is stop, metadata.user_id user. A stream asks for usage in its last
// chunk. thinking enabled becomes reasoning_effort by budget_tokens (below
// 4096 low, below 16384 medium, else high) and max_tokens then becomes
// max_completion_tokens, which bounds reasoning and answer together as
// Anthropic's max_tokens does. service_tier is ignored.
func Request(body []byte, d Dialect) (*Translation, error) {
	t, out, err := translate(body, d)
	if err != nil {
		return nil, err
	}
	t.Body = appendChat(make([]byte, 0, len(body)+256), out)
	return t, nil
}

// translate translates a request to the chat request that Request
// encodes.
func translate(body []byte, d Dialect) (*Translation, *chatRequest, error) {
	r, names, err := decode(body)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range names {
		if !members[n] {
			return nil, nil, unsupported(n, "has no equivalent in chat completions")
		}
	}
	if r.Model == "" {
		return nil, nil, invalid("model", "is required")
	}
	if r.MaxTokens == nil {
		return nil, nil, invalid("max_tokens", "is required")
	}
	if *r.MaxTokens < 1 {
		return nil, nil, invalid("max_tokens", "must be at least 1")
	}
	t := &Translation{Model: r.Model, Stream: r.Stream, StopSequences: r.StopSequences}
	out := chatRequest{Model: r.Model, Temperature: r.Temperature, TopP: r.TopP, Stop: r.StopSequences, Stream: r.Stream}
	if r.Stream {
		out.StreamOptions = &chat.StreamOptions{IncludeUsage: true}
	}
	if r.TopK != nil {
		if !d.TopK {
			return nil, nil, unsupported("top_k", "the target takes no top_k")
		}
		out.TopK = r.TopK
	}
	if r.Metadata != nil {
		out.User = r.Metadata.UserID
	}
	if th := r.Thinking; th != nil {
		switch th.Type {
		case "enabled":
			out.ReasoningEffort = effort(th.BudgetTokens)
		case "disabled":
		default:
			return nil, nil, unsupported("thinking.type", "must be enabled or disabled")
		}
	}
	if out.ReasoningEffort != "" {
		out.MaxCompletionTokens = r.MaxTokens
	} else {
		out.MaxTokens = r.MaxTokens
	}
	out.Messages = make([]chatMessage, 0, 1+chatMessages(r.Messages))
	if out.Messages, err = system(out.Messages, r, t); err != nil {
		return nil, nil, err
	}
	if len(r.Messages) == 0 {
		return nil, nil, invalid("messages", "must hold at least one message")
	}
	for i := range r.Messages {
		if out.Messages, err = appendMessage(out.Messages, &r.Messages[i], i, d, t); err != nil {
			return nil, nil, err
		}
	}
	if out.Tools, err = tools(r.Tools, t); err != nil {
		return nil, nil, err
	}
	if tc := r.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto":
			out.ToolChoice = json.RawMessage(`"auto"`)
		case "any":
			out.ToolChoice = json.RawMessage(`"required"`)
		case "none":
			out.ToolChoice = json.RawMessage(`"none"`)
		case "tool":
			if tc.Name == "" {
				return nil, nil, invalid("tool_choice.name", "is required when type is tool")
			}
			out.ToolChoice = appendString([]byte(`{"type":"function","function":{"name":`), tc.Name)
			out.ToolChoice = append(out.ToolChoice, '}', '}')
		default:
			return nil, nil, invalid("tool_choice.type", "must be auto, any, tool or none")
		}
		if tc.DisableParallelToolUse && len(out.Tools) > 0 {
			f := false
			out.ParallelToolCalls = &f
		}
	}
	return t, &out, nil
}

// decode checks the body's bounds and decodes it, returning its top-level
// member names too.
func decode(body []byte) (*msgRequest, []string, error) {
	r := &msgRequest{}
	names, ok := decodeFast(body, r)
	if !ok {
		// Something the fast decoder leaves to encoding/json: an error,
		// or a body it would decode otherwise.
		var deep bool
		if names, deep = scan(body, maxDepth); deep {
			return nil, nil, invalid("", "the body nests deeper than "+strconv.Itoa(maxDepth)+" levels")
		}
		*r = msgRequest{}
		if err := json.Unmarshal(body, r); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				p := te.Field
				if p == "" {
					return nil, nil, invalid("", "the request body must be a JSON object")
				}
				return nil, nil, invalid(p, "has the wrong JSON type ("+te.Value+")")
			}
			return nil, nil, invalid("", "the request body is not valid JSON")
		}
	}
	switch {
	case len(r.Messages) > maxMessages:
		return nil, nil, invalid("messages", "more than "+strconv.Itoa(maxMessages)+" messages")
	case len(r.Tools) > maxTools:
		return nil, nil, invalid("tools", "more than "+strconv.Itoa(maxTools)+" tools")
	case len(r.StopSequences) > maxStops:
		return nil, nil, invalid("stop_sequences", "more than "+strconv.Itoa(maxStops)+" sequences")
	}
	for i := range r.Messages {
		if len(r.Messages[i].Content.Blocks) > maxBlocks {
			return nil, nil, invalid("messages["+strconv.Itoa(i)+"].content", "more than "+strconv.Itoa(maxBlocks)+" blocks")
		}
	}
	return r, names, nil
}

// effort buckets a thinking budget into a reasoning effort. Claude Code's
// budgets fall one to a bucket: 4000 ("think") low, 10000 medium, 31999
// ("ultrathink") high.
func effort(budget int) string {
	switch {
	case budget < 4096:
		return "low"
	case budget < 16384:
		return "medium"
	}
	return "high"
}

// system appends the system prompt of r to out as a system message.
func system(out []chatMessage, r *msgRequest, t *Translation) ([]chatMessage, error) {
	c := r.system
	if c == nil {
		raw := bytes.TrimSpace(r.System)
		if len(raw) == 0 || string(raw) == "null" {
			return out, nil
		}
		cc, err := contentOf(raw)
		if err != nil {
			return nil, invalid("system", "must be a string or an array of text blocks")
		}
		c = &cc
	}
	if c.Text != nil {
		return append(out, chatMessage{Message: chat.Message{Role: "system", Content: chat.Content{Text: c.Text}}}), nil
	}
	var text joined
	for j := range c.Blocks {
		b := &c.Blocks[j]
		if b.Type != "text" {
			return nil, unsupported("system["+strconv.Itoa(j)+"].type", "system blocks must be text")
		}
		if b.Cache != nil {
			t.drop("system[" + strconv.Itoa(j) + "].cache_control")
		}
		text.add("\n\n", &b.Text)
	}
	return append(out, chatMessage{Message: chat.Message{Role: "system", Content: chat.Content{Text: text.ptr()}}}), nil
}

// chatMessages returns how many chat messages msgs become, but for the
// user messages their tool results' images add: one for each message,
// and one for each tool result of a user message.
func chatMessages(msgs []msgMessage) int {
	n := len(msgs)
	for i := range msgs {
		if msgs[i].Role != "user" {
			continue
		}
		for j := range msgs[i].Content.Blocks {
			if msgs[i].Content.Blocks[j].Type == "tool_result" {
				n++
			}
		}
	}
	return n
}

// appendChat appends the chat request as json.Marshal writes it.
func appendChat(b []byte, r *chatRequest) []byte {
	b = append(b, `{"model":`...)
	b = wire.AppendString(b, r.Model)
	b = append(b, `,"messages":`...)
	b = wire.AppendMessages(b, r.Messages)
	b = wire.ToolsMember(b, "tools", r.Tools)
	b = wire.RawMember(b, "tool_choice", r.ToolChoice)
	b = wire.BoolMember(b, "parallel_tool_calls", r.ParallelToolCalls)
	b = wire.StringsMember(b, "stop", r.Stop)
	b = wire.IntMember(b, "max_tokens", r.MaxTokens)
	b = wire.IntMember(b, "max_completion_tokens", r.MaxCompletionTokens)
	b = wire.StringMember(b, "reasoning_effort", r.ReasoningEffort)
	b = wire.FloatMember(b, "temperature", r.Temperature)
	b = wire.FloatMember(b, "top_p", r.TopP)
	b = wire.IntMember(b, "top_k", r.TopK)
	b = wire.StreamMember(b, r.Stream, r.StreamOptions)
	b = wire.StringMember(b, "user", r.User)
	return append(b, '}')
}
