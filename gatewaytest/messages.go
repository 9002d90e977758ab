package gatewaytest

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// anthropicPath reports whether path belongs to the Anthropic Messages API,
// whose errors, authentication and streams follow Anthropic's conventions.
func anthropicPath(path string) bool {
	return path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/")
}

func (s *Server) messagesRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/messages", s.handleMessages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.handleCountTokens)
}

// checkAnthropic applies to a request for an Anthropic path what api.anthropic.com
// checks before anything else: the x-api-key header when a token is required,
// the body size, and the anthropic-version header. It answers the request and
// reports false when a check fails.
func checkAnthropic(w http.ResponseWriter, r *http.Request, token string, tooLarge bool) bool {
	if token != "" {
		got := r.Header.Get("X-Api-Key")
		if got == "" {
			writeAnthropicError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
			return false
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			writeAnthropicError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
			return false
		}
	}
	if tooLarge {
		writeAnthropicError(w, http.StatusRequestEntityTooLarge, "request_too_large", "Request exceeds the maximum allowed number of bytes.")
		return false
	}
	if r.Header.Get("Anthropic-Version") == "" {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return false
	}
	return true
}

// anthropicErrorJSON returns an Anthropic error body.
func anthropicErrorJSON(typ, message string) []byte {
	b, _ := json.Marshal(anthropicErrorBody{Type: "error", Error: anthropicError{Type: typ, Message: message}})
	return append(b, '\n')
}

func writeAnthropicError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(anthropicErrorJSON(typ, message))
}

// defaultAnthropicErrorBody is the Anthropic error body a scripted status
// without a body gets on an Anthropic path.
func defaultAnthropicErrorBody(status int) []byte {
	switch {
	case status == http.StatusUnauthorized:
		return anthropicErrorJSON("authentication_error", "invalid x-api-key")
	case status == http.StatusForbidden:
		return anthropicErrorJSON("permission_error", "Your API key does not have permission to use the specified resource.")
	case status == http.StatusNotFound:
		return anthropicErrorJSON("not_found_error", "Not Found")
	case status == http.StatusRequestEntityTooLarge:
		return anthropicErrorJSON("request_too_large", "Request exceeds the maximum allowed number of bytes.")
	case status == http.StatusTooManyRequests:
		return anthropicErrorJSON("rate_limit_error", "Number of requests has exceeded your rate limit.")
	case status == 529:
		return anthropicErrorJSON("overloaded_error", "Overloaded")
	case status >= 500:
		return anthropicErrorJSON("api_error", "Internal server error")
	default:
		msg := http.StatusText(status)
		if msg == "" {
			msg = fmt.Sprintf("status %d", status)
		}
		return anthropicErrorJSON("invalid_request_error", msg)
	}
}

// ThinkingText returns the thinking the [Server] writes for prompt on
// POST /v1/messages when the request enables extended thinking: "Thinking: "
// followed by the prompt. It streams in pieces the way [CompletionText] does.
func ThinkingText(prompt string) string { return "Thinking: " + prompt }

// thinkingSignature is the signature of a thinking block the server wrote.
// The server checks it when the block comes back in a later request, as
// Anthropic does, so a proxy that alters or drops it is caught.
func thinkingSignature(thinking string) string {
	sum := sha256.Sum256([]byte("gatewaytest thinking\x00" + thinking))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// messagesRequest is the part of an Anthropic Messages request the server reads.
type messagesRequest struct {
	Model         string             `json:"model"`
	MaxTokens     *int               `json:"max_tokens"`
	Messages      []anthropicMessage `json:"messages"`
	System        json.RawMessage    `json:"system"`
	Tools         []anthropicTool    `json:"tools"`
	ToolChoice    *anthropicChoice   `json:"tool_choice"`
	Thinking      *thinkingConfig    `json:"thinking"`
	StopSequences []string           `json:"stop_sequences"`
	Stream        *bool              `json:"stream"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicTool struct {
	Type         string          `json:"type"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control"`
}

type anthropicChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

type thinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens *int   `json:"budget_tokens"`
}

// inBlock is a content block of a request.
type inBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	Thinking     string          `json:"thinking"`
	Signature    string          `json:"signature"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// blocks decodes a content field: a string is one text block.
func blocks(raw json.RawMessage) ([]inBlock, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []inBlock{{Type: "text", Text: s}}, true
	}
	var bs []inBlock
	if json.Unmarshal(raw, &bs) == nil && bs != nil {
		return bs, true
	}
	return nil, false
}

// promptText is the text a request block contributes to the prompt.
func (b *inBlock) promptText() string {
	switch b.Type {
	case "text":
		return b.Text
	case "thinking":
		return b.Thinking
	case "tool_use":
		return b.Name + " " + string(b.Input)
	case "tool_result":
		if inner, ok := blocks(b.Content); ok {
			var sb strings.Builder
			for i := range inner {
				sb.WriteString(inner[i].promptText())
			}
			return sb.String()
		}
	}
	return ""
}

// present reports whether a raw JSON field was given and is not null.
func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != nullJSON }

// parsedMessages is a validated Messages request.
type parsedMessages struct {
	req      messagesRequest
	units    []string // prompt texts in cache order: tools, system, messages
	cacheEnd int      // units[:cacheEnd] are the cached prefix, up to the last unit with cache_control; 0 without
	prompt   string   // what the answer echoes
	ask      string   // the text that may name a tool
	thinking bool
}

// messagesError is a request the server refuses with 400 and an Anthropic
// invalid_request_error.
type messagesError string

func (e messagesError) Error() string { return string(e) }

// parseMessages decodes and validates a Messages request body. countOnly
// relaxes the checks that POST /v1/messages/count_tokens does not make.
func parseMessages(body []byte, countOnly bool) (*parsedMessages, error) {
	p := &parsedMessages{}
	req := &p.req
	if err := json.Unmarshal(body, req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, messagesError(te.Field + ": Input has the wrong type")
		}
		return nil, messagesError("There was an error parsing the body of your request as JSON.")
	}
	if req.Model == "" {
		return nil, messagesError("model: Field required")
	}
	if !countOnly {
		if req.MaxTokens == nil {
			return nil, messagesError("max_tokens: Field required")
		}
		if *req.MaxTokens < 1 {
			return nil, messagesError("max_tokens: Input should be greater than or equal to 1")
		}
	}
	if len(req.Messages) == 0 {
		return nil, messagesError("messages: Field required")
	}
	if t := req.Thinking; t != nil {
		switch t.Type {
		case "enabled":
			if t.BudgetTokens == nil {
				return nil, messagesError("thinking.enabled.budget_tokens: Field required")
			}
			if *t.BudgetTokens < 1024 {
				return nil, messagesError("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
			}
			if !countOnly && *t.BudgetTokens >= *req.MaxTokens {
				return nil, messagesError("`max_tokens` must be greater than `thinking.budget_tokens`")
			}
			p.thinking = true
		case "adaptive":
			p.thinking = true
		case "disabled":
		default:
			return nil, messagesError(fmt.Sprintf("thinking.type: Input tag '%s' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'", t.Type))
		}
	}
	names := map[string]bool{}
	mark := func(cc json.RawMessage) {
		if present(cc) {
			p.cacheEnd = len(p.units)
		}
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return nil, messagesError(fmt.Sprintf("tools.%d.name: Field required", i))
		}
		names[t.Name] = true
		p.units = append(p.units, t.Name+" "+t.Description)
		mark(t.CacheControl)
	}
	if c := req.ToolChoice; c != nil {
		switch c.Type {
		case "auto", "any", "none":
		case "tool":
			if !names[c.Name] {
				return nil, messagesError(fmt.Sprintf("tool_choice.tool.name: tool '%s' is not one of the tools given", c.Name))
			}
		default:
			return nil, messagesError(fmt.Sprintf("tool_choice.type: Input tag '%s' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", c.Type))
		}
	}
	if present(req.System) {
		sys, ok := blocks(req.System)
		if !ok {
			return nil, messagesError("system: Input should be a valid string or a list of text blocks")
		}
		for i := range sys {
			p.units = append(p.units, sys[i].promptText())
			mark(sys[i].CacheControl)
		}
	}
	var prev []inBlock
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, messagesError(fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i))
		}
		bs, ok := blocks(m.Content)
		if !ok {
			return nil, messagesError(fmt.Sprintf("messages.%d.content: Input should be a valid string or a list of content blocks", i))
		}
		var prompt, ask strings.Builder
		for j := range bs {
			b := &bs[j]
			switch b.Type {
			case "thinking":
				if m.Role != "assistant" || b.Signature != thinkingSignature(b.Thinking) {
					return nil, messagesError(fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j))
				}
			case "tool_result":
				if !hasToolUse(prev, b.ToolUseID) {
					return nil, messagesError(fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID))
				}
			case "text":
				ask.WriteString(b.Text)
			}
			if b.Type == "text" || b.Type == "tool_result" {
				prompt.WriteString(b.promptText())
			}
			p.units = append(p.units, b.promptText())
			mark(b.CacheControl)
		}
		if m.Role == "user" {
			p.prompt, p.ask = prompt.String(), ask.String()
		}
		prev = nil
		if m.Role == "assistant" {
			prev = bs
		}
	}
	return p, nil
}

func hasToolUse(bs []inBlock, id string) bool {
	for i := range bs {
		if bs[i].Type == "tool_use" && bs[i].ID == id {
			return true
		}
	}
	return false
}

// tokens counts the prompt pieces of units.
func tokens(units []string) int {
	n := 0
	for _, u := range units {
		n += len(pieces(u))
	}
	return n
}

// cacheKey identifies a cached prefix: the model and the prompt units.
func cacheKey(model string, units []string) string {
	h := sha256.New()
	h.Write([]byte(model))
	for _, u := range units {
		fmt.Fprintf(h, "\x00%d:%s", len(u), u)
	}
	return string(h.Sum(nil))
}

// usage returns the usage of p's prompt, reading and writing the server's
// prompt cache when the request marks a prefix with cache_control.
func (s *Server) messagesUsage(p *parsedMessages) anthropicUsage {
	u := anthropicUsage{InputTokens: tokens(p.units), ServiceTier: "standard"}
	if p.cacheEnd == 0 {
		return u
	}
	cached := tokens(p.units[:p.cacheEnd])
	key := cacheKey(p.req.Model, p.units[:p.cacheEnd])
	s.mu.Lock()
	hit := s.promptCache[key]
	s.promptCache[key] = true
	s.mu.Unlock()
	u.InputTokens -= cached
	if hit {
		u.CacheReadInputTokens = cached
	} else {
		u.CacheCreationInputTokens = cached
	}
	return u
}

func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body) // buffered by ServeHTTP
	p, err := parseMessages(body, true)
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	writeOK(w, r, struct {
		InputTokens int `json:"input_tokens"`
	}{tokens(p.units)})
}

// outBlock is one content block of an answer with the deltas that stream it.
type outBlock struct {
	final  msgBlock
	start  msgBlock
	deltas []msgDelta
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body) // buffered by ServeHTTP
	p, err := parseMessages(body, false)
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	req := &p.req
	text, stopSeq := cutStop(CompletionText(p.prompt), req.StopSequences)
	pc, finish := pieces(text), "end_turn"
	if len(pc) > *req.MaxTokens {
		pc, finish = pc[:*req.MaxTokens], "max_tokens"
	} else if stopSeq != nil {
		finish = "stop_sequence"
	}

	var out []outBlock
	if p.thinking {
		th := ThinkingText(p.prompt)
		sig := thinkingSignature(th)
		b := outBlock{
			final: msgBlock{Type: "thinking", Thinking: &th, Signature: &sig},
			start: msgBlock{Type: "thinking", Thinking: strPtr(""), Signature: strPtr("")},
		}
		for _, t := range pieces(th) {
			b.deltas = append(b.deltas, msgDelta{Type: "thinking_delta", Thinking: strPtr(t)})
		}
		b.deltas = append(b.deltas, msgDelta{Type: "signature_delta", Signature: strPtr(sig)})
		out = append(out, b)
	}
	joined := strings.Join(pc, "")
	tb := outBlock{final: msgBlock{Type: "text", Text: &joined}, start: msgBlock{Type: "text", Text: strPtr("")}}
	for _, t := range pc {
		tb.deltas = append(tb.deltas, msgDelta{Type: "text_delta", Text: strPtr(t)})
	}
	out = append(out, tb)
	if finish == "end_turn" {
		if tool := s.messagesTool(p); tool != nil {
			args := toolArguments(tool.InputSchema)
			id := s.nextID("toolu_")
			b := outBlock{
				final: msgBlock{Type: "tool_use", ID: id, Name: tool.Name, Input: json.RawMessage(args)},
				start: msgBlock{Type: "tool_use", ID: id, Name: tool.Name, Input: json.RawMessage("{}")},
			}
			for _, c := range argumentChunks(args) {
				b.deltas = append(b.deltas, msgDelta{Type: "input_json_delta", PartialJSON: strPtr(c)})
			}
			out = append(out, b)
			finish = "tool_use"
		}
	}

	u := s.messagesUsage(p)
	for _, b := range out {
		u.OutputTokens += len(b.deltas)
		if b.final.Type == "thinking" {
			u.OutputTokens-- // the signature is not a token
		}
	}
	msg := anthropicMessageResp{
		ID: s.nextID("msg_"), Type: "message", Role: "assistant", Model: req.Model,
		StopReason: strPtr(finish), StopSequence: stopSeq, Usage: u,
	}
	if !streamRequested(req.Stream) {
		msg.Content = make([]msgBlock, len(out))
		for i, b := range out {
			msg.Content[i] = b.final
		}
		writeOK(w, r, msg)
		return
	}

	start := msg
	start.Content = []msgBlock{}
	start.StopReason, start.StopSequence = nil, nil
	start.Usage.OutputTokens = 1
	events := [][]byte{mustMarshal(messagesEvent{Type: "message_start", Message: &start})}
	for i, b := range out {
		events = append(events, mustMarshal(messagesEvent{Type: "content_block_start", Index: &i, ContentBlock: &b.start}))
		if i == 0 {
			events = append(events, []byte(`{"type":"ping"}`))
		}
		for _, d := range b.deltas {
			events = append(events, mustMarshal(messagesEvent{Type: "content_block_delta", Index: &i, Delta: d}))
		}
		events = append(events, mustMarshal(messagesEvent{Type: "content_block_stop", Index: &i}))
	}
	final := u
	final.ServiceTier = ""
	events = append(events,
		mustMarshal(messagesEvent{Type: "message_delta",
			Delta: stopDelta{StopReason: strPtr(finish), StopSequence: stopSeq}, Usage: &final}),
		[]byte(`{"type":"message_stop"}`))
	s.writeStream(w, r, http.StatusOK, events, -1)
}

// cutStop cuts text before the earliest stop sequence it contains and
// returns that sequence, or text unchanged and nil.
func cutStop(text string, stops []string) (string, *string) {
	at, which := -1, ""
	for _, st := range stops {
		if st == "" {
			continue
		}
		if i := strings.Index(text, st); i >= 0 && (at < 0 || i < at) {
			at, which = i, st
		}
	}
	if at < 0 {
		return text, nil
	}
	return text[:at], &which
}

// messagesTool returns the tool the answer calls, or nil.
func (s *Server) messagesTool(p *parsedMessages) *anthropicTool {
	names := make([]string, len(p.req.Tools))
	for i, t := range p.req.Tools {
		names[i] = t.Name
	}
	mode, forced := "auto", ""
	if c := p.req.ToolChoice; c != nil {
		mode, forced = c.Type, c.Name
		if mode == "any" {
			mode = "required"
		}
	}
	i := pickTool(names, p.ask, mode, forced)
	if i < 0 {
		return nil
	}
	return &p.req.Tools[i]
}

// The JSON shapes of the Messages API, as Anthropic writes them.

type anthropicError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type anthropicErrorBody struct {
	Type  string         `json:"type"`
	Error anthropicError `json:"error"`
}

type anthropicUsage struct {
	InputTokens              int    `json:"input_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
}

// msgBlock is a content block of an answer. Text, Thinking and Signature are
// pointers so that a block start can write them empty.
type msgBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type msgDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

// stopDelta is the delta of a message_delta event.
type stopDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

type anthropicMessageResp struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []msgBlock     `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

type messagesEvent struct {
	Type         string                `json:"type"`
	Message      *anthropicMessageResp `json:"message,omitempty"`
	Index        *int                  `json:"index,omitempty"`
	ContentBlock *msgBlock             `json:"content_block,omitempty"`
	Delta        any                   `json:"delta,omitempty"`
	Usage        *anthropicUsage       `json:"usage,omitempty"`
}
