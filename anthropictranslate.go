package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/sse"
)

// anthropicMaxTokens is the max_tokens sent to Anthropic, which requires
// one, when the OpenAI request sets none.
const anthropicMaxTokens = 4096

// maxProviderEvent bounds one event of a translated stream, and
// maxProviderAnswer a translated whole answer.
const (
	maxProviderEvent  = 8 << 20
	maxProviderAnswer = 64 << 20
)

var _ Translator = anthropic{}

// Translate turns an OpenAI chat completion into an Anthropic Messages
// request (POST /messages). Embeddings are refused: Anthropic has none.
func (p anthropic) Translate(route string, _ *Target, body []byte) (*Translation, error) {
	if route != RouteChatCompletions {
		return nil, badRequest(CodeUnsupportedParameter, "model", "anthropic serves no embeddings")
	}
	req, err := chat.ParseRequest(body)
	if err != nil {
		return nil, paramError(err)
	}
	native, err := anthropicRequest(req)
	if err != nil {
		return nil, err
	}
	return &Translation{Path: "/messages", Body: native, Response: func(res *http.Response) error {
		return anthropicResponse(req, res)
	}}, nil
}

// paramError turns a *chat.ParamError into the gateway's 400.
func paramError(err error) error {
	var pe *chat.ParamError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.Param != "" {
			msg = pe.Param + ": " + msg
		}
		return badRequest(CodeInvalidJSON, pe.Param, msg)
	}
	return err
}

// unsupported is the 400 for a parameter provider cannot honour.
func unsupported(provider, param, msg string) error {
	return badRequest(CodeUnsupportedParameter, param, param+": "+msg+" ("+provider+" cannot do it)")
}

// Anthropic Messages wire types.
type (
	anthMessage struct {
		Role    string      `json:"role"`
		Content []anthBlock `json:"content"`
	}
	anthBlock struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"`
		Source    *anthSource     `json:"source,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   string          `json:"content,omitempty"`
	}
	anthSource struct {
		Type      string `json:"type"` // base64 or url
		MediaType string `json:"media_type,omitempty"`
		Data      string `json:"data,omitempty"`
		URL       string `json:"url,omitempty"`
	}
	anthTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	anthRequest struct {
		Model         string            `json:"model"`
		System        []anthBlock       `json:"system,omitempty"`
		Messages      []anthMessage     `json:"messages"`
		MaxTokens     int               `json:"max_tokens"`
		Temperature   *float64          `json:"temperature,omitempty"`
		TopP          *float64          `json:"top_p,omitempty"`
		StopSequences []string          `json:"stop_sequences,omitempty"`
		Stream        bool              `json:"stream,omitempty"`
		Tools         []anthTool        `json:"tools,omitempty"`
		ToolChoice    map[string]any    `json:"tool_choice,omitempty"`
		Metadata      map[string]string `json:"metadata,omitempty"`
	}
	anthUsage struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	}
	anthResponse struct {
		ID         string      `json:"id"`
		Model      string      `json:"model"`
		Content    []anthBlock `json:"content"`
		StopReason string      `json:"stop_reason"`
		Usage      anthUsage   `json:"usage"`
	}
)

// anthropicUnsupported are OpenAI parameters Anthropic has no equivalent of.
var anthropicUnsupported = []string{"logprobs", "top_logprobs", "logit_bias", "presence_penalty",
	"frequency_penalty", "seed", "audio", "modalities", "prediction"}

func anthropicRequest(r *chat.Request) ([]byte, error) {
	const kind = ProviderAnthropic
	for _, p := range anthropicUnsupported {
		if _, ok := r.Extra[p]; ok {
			return nil, unsupported(kind, p, "has no equivalent")
		}
	}
	if r.N != nil && *r.N != 1 {
		return nil, unsupported(kind, "n", "only one choice per request")
	}
	if rf := r.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		return nil, unsupported(kind, "response_format", rf.Type+" has no equivalent")
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 1) {
		return nil, unsupported(kind, "temperature", "must be between 0 and 1")
	}
	if len(r.Stop) > 4 {
		return nil, badRequest(CodeInvalidJSON, "stop", "stop: at most 4 sequences")
	}
	out := anthRequest{Model: r.Model, MaxTokens: r.MaxOutputTokens(), Temperature: r.Temperature, TopP: r.TopP,
		StopSequences: r.Stop, Stream: r.Stream}
	if out.MaxTokens <= 0 {
		out.MaxTokens = anthropicMaxTokens
	}
	if r.User != "" {
		out.Metadata = map[string]string{"user_id": r.User}
	}
	for i, m := range r.Messages {
		param := "messages[" + strconv.Itoa(i) + "]"
		switch m.Role {
		case "system", "developer":
			out.System = append(out.System, anthBlock{Type: "text", Text: m.Content.String()})
			continue
		case "tool":
			out.Messages = appendAnth(out.Messages, "user", anthBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content.String()})
			continue
		}
		blocks, err := anthropicContent(m.Content, param)
		if err != nil {
			return nil, err
		}
		for _, tc := range m.ToolCalls {
			input := json.RawMessage(tc.Function.Arguments)
			if len(bytes.TrimSpace(input)) == 0 {
				input = json.RawMessage("{}")
			} else if !json.Valid(input) {
				return nil, badRequest(CodeInvalidJSON, param+".tool_calls", param+".tool_calls: function arguments must be JSON")
			}
			blocks = append(blocks, anthBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input})
		}
		if len(blocks) == 0 {
			continue
		}
		out.Messages = appendAnth(out.Messages, m.Role, blocks...)
	}
	for _, t := range r.Tools {
		schema := t.Function.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out.Tools = append(out.Tools, anthTool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	tc, err := r.ParseToolChoice()
	if err != nil {
		return nil, paramError(err)
	}
	switch tc.Mode {
	case "auto":
		out.ToolChoice = map[string]any{"type": "auto"}
	case "required":
		out.ToolChoice = map[string]any{"type": "any"}
	case "none":
		out.ToolChoice = map[string]any{"type": "none"}
	case "function":
		out.ToolChoice = map[string]any{"type": "tool", "name": tc.Name}
	}
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls && len(out.Tools) > 0 {
		if out.ToolChoice == nil {
			out.ToolChoice = map[string]any{"type": "auto"}
		}
		out.ToolChoice["disable_parallel_tool_use"] = true
	}
	return json.Marshal(out)
}

// appendAnth adds blocks as a message of role, merged into the last
// message when it has the same role: Anthropic wants the roles to
// alternate, and OpenAI's consecutive tool results are one user turn.
func appendAnth(ms []anthMessage, role string, blocks ...anthBlock) []anthMessage {
	if n := len(ms); n > 0 && ms[n-1].Role == role {
		ms[n-1].Content = append(ms[n-1].Content, blocks...)
		return ms
	}
	return append(ms, anthMessage{Role: role, Content: blocks})
}

// anthropicContent turns a message's content into Anthropic blocks.
func anthropicContent(c chat.Content, param string) ([]anthBlock, error) {
	if c.Text != nil {
		if *c.Text == "" {
			return nil, nil
		}
		return []anthBlock{{Type: "text", Text: *c.Text}}, nil
	}
	var out []anthBlock
	for j, p := range c.Parts {
		switch p.Type {
		case "text":
			out = append(out, anthBlock{Type: "text", Text: p.Text})
		case "image_url":
			if p.ImageURL == nil {
				return nil, badRequest(CodeInvalidJSON, param+".content", param+".content["+strconv.Itoa(j)+"]: image_url is required")
			}
			if mt, data, ok := chat.DataURL(p.ImageURL.URL); ok {
				out = append(out, anthBlock{Type: "image", Source: &anthSource{Type: "base64", MediaType: mt, Data: data}})
			} else if strings.HasPrefix(p.ImageURL.URL, "https://") {
				out = append(out, anthBlock{Type: "image", Source: &anthSource{Type: "url", URL: p.ImageURL.URL}})
			} else {
				return nil, badRequest(CodeInvalidJSON, param+".content", param+".content["+strconv.Itoa(j)+"]: an image must be a base64 data: URL or an https URL")
			}
		default:
			return nil, unsupported(ProviderAnthropic, param+".content", "content parts of type "+strconv.Quote(p.Type))
		}
	}
	return out, nil
}

// anthropicFinish maps Anthropic's stop_reason to OpenAI's finish_reason.
func anthropicFinish(reason string) string {
	switch reason {
	case "max_tokens":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn
}

func (u anthUsage) openAI() *chat.Usage {
	prompt := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	return &chat.Usage{PromptTokens: prompt, CompletionTokens: u.OutputTokens, TotalTokens: prompt + u.OutputTokens,
		PromptTokensDetails: &chat.PromptDetails{CachedTokens: u.CacheReadInputTokens}}
}

// anthropicResponse turns Anthropic's answer into OpenAI's, in place.
func anthropicResponse(req *chat.Request, res *http.Response) error {
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return anthropicError(res)
	}
	if req.Stream && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		res.Body = anthropicStream(req, res.Body)
		setTranslatedBody(res, "text/event-stream", nil)
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxProviderAnswer))
	res.Body.Close()
	if err != nil {
		return err
	}
	var a anthResponse
	if err := json.Unmarshal(b, &a); err != nil {
		return errors.Join(ErrUpstreamUnreachable, errors.New("gateway: anthropic answered with invalid JSON"))
	}
	msg := chat.AssistantMessage{Role: "assistant"}
	var text strings.Builder
	hasText := false
	for _, c := range a.Content {
		switch c.Type {
		case "text":
			text.WriteString(c.Text)
			hasText = true
		case "tool_use":
			args := string(c.Input)
			if args == "" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: c.ID, Type: "function", Function: chat.FunctionCall{Name: c.Name, Arguments: args}})
		}
	}
	if hasText || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	c := &chat.Completion{ID: a.ID, Object: chat.ObjectCompletion, Created: time.Now().Unix(), Model: a.Model,
		Choices: []chat.Choice{{Message: msg, FinishReason: anthropicFinish(a.StopReason)}}, Usage: a.Usage.openAI()}
	setTranslatedBody(res, "application/json", chat.Encode(c))
	return nil
}

// setTranslatedBody gives res a translated body: body itself when not nil
// (its length known), else the stream already in res.Body.
func setTranslatedBody(res *http.Response, contentType string, body []byte) {
	h := res.Header
	h.Set("Content-Type", contentType)
	h.Del("Content-Encoding")
	if body == nil {
		h.Del("Content-Length")
		res.ContentLength = -1
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	res.ContentLength = int64(len(body))
	res.Body = io.NopCloser(bytes.NewReader(body))
}

// anthropicError turns an Anthropic error answer into an OpenAI-shaped
// one with the same status.
func anthropicError(res *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(res.Body, maxHeldBody))
	res.Body.Close()
	if err != nil {
		return err
	}
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(b, &e)
	msg, typ := e.Error.Message, e.Error.Type
	if msg == "" {
		msg = "anthropic answered " + strconv.Itoa(res.StatusCode) + " " + http.StatusText(res.StatusCode)
	}
	if typ == "" {
		typ = TypeGateway
	}
	setTranslatedBody(res, "application/json", chat.ErrorBody(msg, typ, typ, ""))
	return nil
}

// anthropicStream translates Anthropic's message events into OpenAI
// chunks: the role first, text and tool-call deltas (each tool call keeps
// the index it got when it started), the finish reason, a usage chunk
// when the request asked for one, then data: [DONE]. An error event is
// passed on as an OpenAI error event, and the stream ends without
// [DONE].
func anthropicStream(req *chat.Request, body io.ReadCloser) io.ReadCloser {
	events := sse.NewReader(body, maxProviderEvent)
	var (
		id, model string
		created   = time.Now().Unix()
		usage     anthUsage
		tools     = map[int]int{} // Anthropic block index → OpenAI tool call index
		finished  bool
		done      bool
	)
	chunk := func(d chat.Delta, finish *string) []byte {
		return chat.Event(&chat.Chunk{ID: id, Object: chat.ObjectChunk, Created: created, Model: model,
			Choices: []chat.ChunkChoice{{Delta: d, FinishReason: finish}}})
	}
	next := func() ([]byte, error) {
		if done {
			return nil, io.EOF
		}
		typ, data, err := events.Next()
		if err == io.EOF {
			if !finished {
				return nil, io.ErrUnexpectedEOF // cut before message_stop
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
		var ev struct {
			Type    string          `json:"type"`
			Index   int             `json:"index"`
			Message *anthResponse   `json:"message"`
			Block   anthBlock       `json:"content_block"`
			Delta   json.RawMessage `json:"delta"`
			Usage   *anthUsage      `json:"usage"`
			Error   *struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &ev) != nil {
			return nil, errors.New("gateway: anthropic sent an event that is not JSON")
		}
		if ev.Type == "" {
			ev.Type = typ
		}
		switch ev.Type {
		case "message_start":
			if ev.Message != nil {
				id, model, usage = ev.Message.ID, ev.Message.Model, ev.Message.Usage
			}
			empty := ""
			return chunk(chat.Delta{Role: "assistant", Content: &empty}, nil), nil
		case "content_block_start":
			if ev.Block.Type == "tool_use" {
				i := len(tools)
				tools[ev.Index] = i
				return chunk(chat.Delta{ToolCalls: []chat.ToolCall{{Index: &i, ID: ev.Block.ID, Type: "function",
					Function: chat.FunctionCall{Name: ev.Block.Name}}}}, nil), nil
			}
			if ev.Block.Type == "text" && ev.Block.Text != "" {
				t := ev.Block.Text
				return chunk(chat.Delta{Content: &t}, nil), nil
			}
		case "content_block_delta":
			var d struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
			}
			json.Unmarshal(ev.Delta, &d)
			switch d.Type {
			case "text_delta":
				return chunk(chat.Delta{Content: &d.Text}, nil), nil
			case "input_json_delta":
				if i, ok := tools[ev.Index]; ok && d.PartialJSON != "" {
					return chunk(chat.Delta{ToolCalls: []chat.ToolCall{{Index: &i, Function: chat.FunctionCall{Arguments: d.PartialJSON}}}}, nil), nil
				}
			}
		case "message_delta":
			var d struct {
				StopReason string `json:"stop_reason"`
			}
			json.Unmarshal(ev.Delta, &d)
			if ev.Usage != nil {
				usage.OutputTokens = ev.Usage.OutputTokens
				if ev.Usage.InputTokens > 0 {
					usage.InputTokens = ev.Usage.InputTokens
				}
			}
			if d.StopReason != "" {
				f := anthropicFinish(d.StopReason)
				return chunk(chat.Delta{}, &f), nil
			}
		case "message_stop":
			finished, done = true, true
			var out []byte
			if req.IncludeUsage() {
				out = chat.Event(&chat.Chunk{ID: id, Object: chat.ObjectChunk, Created: created, Model: model,
					Choices: []chat.ChunkChoice{}, Usage: usage.openAI()})
			}
			return append(out, chat.Done...), io.EOF
		case "error":
			done = true
			msg, etype := "the provider's stream failed", TypeGateway
			if ev.Error != nil {
				msg, etype = ev.Error.Message, ev.Error.Type
			}
			return append(append([]byte("data: "), chat.ErrorBody(msg, etype, etype, "")...), '\n', '\n'), io.EOF
		}
		return nil, nil // ping, content_block_stop and the like
	}
	return chat.NewStream(body, next)
}
