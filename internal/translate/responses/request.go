package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/wire"
)

// errNotArray stands for a member that is not an array where one must be.
var errNotArray = errors.New("not an array")

// Bounds of a request: beyond them it is refused rather than translated.
const (
	maxItems = 10000 // input items, earlier ones prepended included
	maxParts = 1000  // content parts of one message
	maxTools = 1000
	maxDepth = 64 // nesting of objects and arrays in the body
)

// Request is a parsed Responses request: what the translation reads, and
// the members the caller handles itself (store, previous_response_id,
// metadata) or echoes in the Response. Parse returns it; it is not safe
// for concurrent use.
type Request struct {
	Model  string
	Stream bool
	// Store is the request's store member; absent is true.
	Store bool
	// PreviousResponseID names the response this one continues; the
	// caller finds its items and gives them to Prepend.
	PreviousResponseID string
	// Metadata is kept for the stored response and echoed; it is not
	// sent to the provider.
	Metadata map[string]string
	// Input is the input member as sent: a string or an array of items.
	// Items turns it into items for storing.
	Input json.RawMessage
	// IDs returns a new identifier with the given prefix for the items of
	// the answer ("msg", "fc", "rs", "call"); nil is NewID.
	IDs func(prefix string) string

	w     wireRequest
	size  int // of the body, to size the chat request's
	items []inputItem
	parts []decodedParts // the content of the items of input, by index
	tools []decodedTool
	prior int // items prepended from an earlier response
}

// wireRequest is the Responses request as sent.
type wireRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Text               *wireText         `json:"text"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	User               string            `json:"user"`
	Metadata           map[string]string `json:"metadata"`
	Store              *bool             `json:"store"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          *wireReasoning    `json:"reasoning"`
	Stream             bool              `json:"stream"`
	Truncation         string            `json:"truncation"`

	// Accepted and dropped: hints a chat completion does without.
	Include          []string        `json:"include"`
	PromptCacheKey   string          `json:"prompt_cache_key"`
	ServiceTier      string          `json:"service_tier"`
	SafetyIdentifier string          `json:"safety_identifier"`
	StreamOptions    json.RawMessage `json:"stream_options"`

	// Refused when set: a chat completion cannot do them.
	Background   *bool           `json:"background"`
	Prompt       json.RawMessage `json:"prompt"`
	Conversation json.RawMessage `json:"conversation"`
	TopLogprobs  *int            `json:"top_logprobs"`
	MaxToolCalls *int            `json:"max_tool_calls"`
}

type wireText struct {
	Format    json.RawMessage `json:"format"`
	Verbosity string          `json:"verbosity"`
}

type wireReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// inputItem is one input item; the members of every item type are here,
// told apart by Type (absent on a message given as {role, content}).
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Summary   []textPart      `json:"summary"`
}

// decodedInput is what is decoded in the same pass as the body, so
// that it is not read twice: an input array's items and their content
// parts, and the tools.
type decodedInput struct {
	ok    bool // the input was an array and decoded
	items []inputItem
	parts []decodedParts // the items' content, by index
	tools []decodedTool  // by index
}

// decodedTool is a tool decoded with the body, when ok.
type decodedTool struct {
	ok   bool
	tool wireTool
}

// decodedParts is an item's content decoded with the item, when ok: an
// array of parts that decodes.
type decodedParts struct {
	ok    bool
	parts []textPart
}

// textPart is a content part of a message or reasoning item.
type textPart struct {
	Type     string  `json:"type"`
	Text     string  `json:"text"`
	Refusal  string  `json:"refusal"`
	ImageURL *string `json:"image_url"`
	FileID   *string `json:"file_id"`
	Detail   string  `json:"detail"`
}

// wireTool is a tool as sent: a function tool is flat.
type wireTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// Parse decodes a Responses request and checks its shape. A member that
// is malformed or cannot be translated is an *Error naming it.
func Parse(body []byte) (*Request, error) {
	r := &Request{size: len(body)}
	var in decodedInput
	if !decodeRequest(body, &r.w, &in) {
		in = decodedInput{}
		// Something the fast decoder leaves to encoding/json: an error,
		// or a body it would decode otherwise.
		r.w = wireRequest{}
		if err := checkDepth(body); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(body, &r.w); err != nil {
			return nil, decodeError(err, "")
		}
	}
	w := &r.w
	if w.Model == "" {
		return nil, invalid("model", "is required")
	}
	switch {
	case w.Background != nil && *w.Background:
		return nil, unsupported("background", "background responses cannot be translated")
	case isSet(w.Prompt):
		return nil, unsupported("prompt", "prompt templates cannot be translated")
	case isSet(w.Conversation):
		return nil, unsupported("conversation", "conversations cannot be translated; use previous_response_id")
	case w.TopLogprobs != nil && *w.TopLogprobs > 0:
		return nil, unsupported("top_logprobs", "log probabilities cannot be translated")
	case w.MaxToolCalls != nil:
		return nil, unsupported("max_tool_calls", "a limit on tool calls cannot be translated")
	case w.Truncation != "" && w.Truncation != "disabled" && w.Truncation != "auto":
		return nil, invalid("truncation", "must be auto or disabled")
	}
	r.Model, r.Stream, r.Metadata, r.Input = w.Model, w.Stream, w.Metadata, w.Input
	r.Store = w.Store == nil || *w.Store
	if w.PreviousResponseID != nil {
		r.PreviousResponseID = *w.PreviousResponseID
	}
	items, err := in.items, error(nil)
	if !in.ok {
		items, err = parseInput(w.Input, "input")
	} else if len(items) > maxItems {
		err = tooManyItems("input")
	}
	if err != nil {
		return nil, err
	}
	if !isSet(w.Input) {
		return nil, invalid("input", "is required")
	}
	r.items, r.parts, r.tools = items, in.parts, in.tools
	if len(w.Tools) > maxTools {
		return nil, invalid("tools", "at most "+strconv.Itoa(maxTools)+" tools")
	}
	return r, nil
}

// Items returns an input member (a string, or an array of items) as
// items: a string is one user message. The caller stores them with the
// response so that a later request can Prepend them.
func Items(input json.RawMessage) ([]json.RawMessage, error) {
	input = bytes.TrimSpace(input)
	if len(input) > 0 && input[0] == '"' {
		var s string
		if err := json.Unmarshal(input, &s); err != nil {
			return nil, invalid("input", "must be a string or an array of items")
		}
		b := append([]byte(`{"type":"message","role":"user","content":[{"type":"input_text","text":`), nil...)
		b = appendString(b, s)
		return []json.RawMessage{append(b, "}]}"...)}, nil
	}
	var items []json.RawMessage
	if len(input) > 0 && json.Unmarshal(input, &items) != nil {
		return nil, invalid("input", "must be a string or an array of items")
	}
	return items, nil
}

// Prepend puts items before the request's input: the input and output
// items of the response named by previous_response_id, in that order,
// as Items and the Response's Output gave them. An item that cannot be
// translated is an *Error naming previous_response_id.
func (r *Request) Prepend(items []json.RawMessage) error {
	if len(items)+len(r.items) > maxItems {
		return invalid("previous_response_id", "the conversation holds more than "+strconv.Itoa(maxItems)+" items")
	}
	prev := make([]inputItem, len(items), len(items)+len(r.items))
	for i, raw := range items {
		if err := wire.Decode(raw, &prev[i], readItem); err != nil {
			return invalid("previous_response_id", "earlier item "+strconv.Itoa(i)+" is not an input item")
		}
	}
	r.items = append(prev, r.items...)
	r.prior += len(items)
	return nil
}

// parseInput decodes the input member: a string is one user message.
func parseInput(raw json.RawMessage, param string) ([]inputItem, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		s, err := stringOf(raw)
		if err != nil {
			return nil, invalid(param, "must be a string or an array of items")
		}
		content := wire.AppendString(nil, s)
		return []inputItem{{Type: "message", Role: "user", Content: content}}, nil
	}
	if raw[0] != '[' {
		return nil, invalid(param, "must be a string or an array of items")
	}
	items, err := decodeItems(raw)
	if err != nil {
		return nil, decodeError(err, param)
	}
	if len(items) > maxItems {
		return nil, tooManyItems(param)
	}
	return items, nil
}

// tooManyItems is the error for an input of more than maxItems items.
func tooManyItems(param string) *Error {
	return invalid(param, "at most "+strconv.Itoa(maxItems)+" items")
}

// Options say how a request is written for the chat dialect of the target.
// The zero value writes plain OpenAI chat completions.
type Options struct {
	// ReasoningField is the assistant-message member that carries the
	// model's earlier reasoning back to it: "reasoning_content" (DeepSeek,
	// vLLM, Qwen) or "reasoning" (OpenRouter, Ollama). Empty drops
	// reasoning items, with a note.
	ReasoningField string
}

// Translation is a Responses request written as a chat completion.
type Translation struct {
	// Chat is the chat completion request. It lacks the members chat.Request
	// has no field for (reasoning_effort, reasoning of earlier turns):
	// send Body.
	Chat *chat.Request
	// Body is the chat completion request's JSON, every member included.
	Body []byte
	// Notes name what was dropped because a chat completion has no
	// equivalent, one short sentence each.
	Notes []string
}

// chatMessage is a chat message with the reasoning member of the
// dialects that take one back.
type chatMessage = wire.Message

// chatRequest is a chat request with the members chat.Request lacks.
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	*chat.Request
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
}

// Chat translates the request to a chat completion. A member that cannot
// be translated is an *Error naming it.
func (r *Request) Chat(opt Options) (*Translation, error) {
	t, out, err := r.translate(opt)
	if err != nil {
		return nil, err
	}
	t.Body = appendChat(make([]byte, 0, r.size+512), out)
	return t, nil
}

// translate translates the request to the chat request that Chat encodes.
func (r *Request) translate(opt Options) (*Translation, *chatRequest, error) {
	w := &r.w
	t := &Translation{Chat: &chat.Request{Model: w.Model, Temperature: w.Temperature, TopP: w.TopP,
		MaxCompletionTokens: w.MaxOutputTokens, User: w.User, Stream: w.Stream}}
	// An item becomes at most one message, and instructions one more.
	out := chatRequest{Model: w.Model, Request: t.Chat, Messages: make([]chatMessage, 0, len(r.items)+1)}
	c := t.Chat
	if w.Stream {
		c.StreamOptions = &chat.StreamOptions{IncludeUsage: true}
	}
	note := func(s string) {
		if t.Notes == nil {
			t.Notes = make([]string, 0, 4)
		}
		t.Notes = append(t.Notes, s)
	}
	if w.Instructions != nil && *w.Instructions != "" {
		out.Messages = append(out.Messages, chatMessage{Message: chat.Message{Role: "system", Content: chat.Content{Text: w.Instructions}}})
	}
	msgs, err := r.messages(out.Messages, opt, note)
	if err != nil {
		return nil, nil, err
	}
	out.Messages = msgs
	if len(out.Messages) == 0 {
		return nil, nil, invalid("input", "must hold at least one message")
	}
	if len(w.Tools) > 0 {
		c.Tools = make([]chat.Tool, 0, len(w.Tools))
	}
	for i, raw := range w.Tools {
		var dt decodedTool
		if i < len(r.tools) {
			dt = r.tools[i]
		}
		tool, err := chatTool(raw, dt, i)
		if err != nil {
			return nil, nil, err
		}
		c.Tools = append(c.Tools, tool)
	}
	if len(c.Tools) > 0 {
		c.ParallelToolCalls = w.ParallelToolCalls
	}
	if c.ToolChoice, err = chatToolChoice(w.ToolChoice); err != nil {
		return nil, nil, err
	}
	if w.Text != nil {
		if c.ResponseFormat, err = chatFormat(w.Text.Format); err != nil {
			return nil, nil, err
		}
		if w.Text.Verbosity != "" {
			note("text.verbosity dropped: chat completions have no equivalent")
		}
	}
	if w.Reasoning != nil {
		if w.Reasoning.Effort != nil {
			out.ReasoningEffort = *w.Reasoning.Effort
		}
		if w.Reasoning.Summary != nil {
			note("reasoning.summary dropped: the model's reasoning is returned as it comes")
		}
	}
	if len(w.Include) > 0 {
		note("include dropped: none of its data exists in a chat completion")
	}
	if w.PromptCacheKey != "" {
		note("prompt_cache_key dropped: chat completions have no equivalent")
	}
	if w.ServiceTier != "" {
		note("service_tier dropped: chat completions have no equivalent")
	}
	if w.SafetyIdentifier != "" {
		note("safety_identifier dropped: chat completions have no equivalent")
	}
	if w.Truncation == "auto" {
		note("truncation auto dropped: the input is sent whole")
	}
	c.Messages = make([]chat.Message, len(out.Messages))
	for i := range out.Messages {
		c.Messages[i] = out.Messages[i].Message
	}
	return t, &out, nil
}

func (r *Request) newID(prefix string) string {
	if r.IDs != nil {
		return r.IDs(prefix)
	}
	return NewID(prefix)
}

func text(s string) chat.Content { return chat.Content{Text: &s} }

// isSet reports whether a member is present and not null.
func isSet(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// decodeError names the member a decoding error is about.
func decodeError(err error, prefix string) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		param := prefix
		if te.Field != "" {
			param = strings.TrimPrefix(prefix+"."+te.Field, ".")
		}
		return invalid(param, "has the wrong JSON type ("+te.Value+")")
	}
	if prefix == "" {
		return invalid("", "the request body must be a JSON object")
	}
	return invalid(prefix, "is not valid")
}

// checkDepth refuses a body nested deeper than maxDepth, before any
// decoding: tool schemas and the like are passed on to providers.
func checkDepth(b []byte) error {
	depth := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return invalid("", "the request body is nested deeper than "+strconv.Itoa(maxDepth)+" levels")
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// appendChat appends the chat request as json.Marshal writes it.
func appendChat(b []byte, r *chatRequest) []byte {
	c := r.Request
	b = append(b, `{"model":`...)
	b = wire.AppendString(b, r.Model)
	b = append(b, `,"messages":`...)
	b = wire.AppendMessages(b, r.Messages)
	b = wire.ToolsMember(b, "tools", c.Tools)
	b = wire.RawMember(b, "tool_choice", c.ToolChoice)
	b = wire.BoolMember(b, "parallel_tool_calls", c.ParallelToolCalls)
	if f := c.ResponseFormat; f != nil {
		b = append(b, `,"response_format":{"type":`...)
		b = wire.AppendString(b, f.Type)
		if s := f.JSONSchema; s != nil {
			b = append(b, `,"json_schema":{"name":`...)
			b = wire.AppendString(b, s.Name)
			b = wire.StringMember(b, "description", s.Description)
			b = wire.RawMember(b, "schema", s.Schema)
			b = wire.BoolMember(b, "strict", s.Strict)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	b = wire.StringsMember(b, "stop", c.Stop)
	b = wire.IntMember(b, "max_tokens", c.MaxTokens)
	b = wire.IntMember(b, "max_completion_tokens", c.MaxCompletionTokens)
	b = wire.FloatMember(b, "temperature", c.Temperature)
	b = wire.FloatMember(b, "top_p", c.TopP)
	b = wire.IntMember(b, "n", c.N)
	b = wire.StreamMember(b, c.Stream, c.StreamOptions)
	b = wire.StringMember(b, "user", c.User)
	b = wire.StringMember(b, "reasoning_effort", r.ReasoningEffort)
	return append(b, '}')
}
