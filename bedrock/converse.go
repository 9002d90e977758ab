package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/chat"
)

// Converse wire types: the request, and the answer, which reuses the
// message and content block types.
type (
	cvMessage struct {
		Role    string    `json:"role"`
		Content []cvBlock `json:"content"`
	}
	// cvBlock is one content block: exactly one member is set.
	cvBlock struct {
		Text       string        `json:"text,omitempty"`
		Image      *cvImage      `json:"image,omitempty"`
		ToolUse    *cvToolUse    `json:"toolUse,omitempty"`
		ToolResult *cvToolResult `json:"toolResult,omitempty"`
	}
	cvImage struct {
		Format string        `json:"format"`
		Source cvImageSource `json:"source"`
	}
	cvImageSource struct {
		Bytes string `json:"bytes"` // base64, as JSON writes a blob
	}
	cvToolUse struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	}
	cvToolResult struct {
		ToolUseID string   `json:"toolUseId"`
		Content   []cvText `json:"content"`
	}
	// cvText is a text block that keeps its text member even when empty.
	cvText struct {
		Text string `json:"text"`
	}
	cvInference struct {
		MaxTokens     *int     `json:"maxTokens,omitempty"`
		Temperature   *float64 `json:"temperature,omitempty"`
		TopP          *float64 `json:"topP,omitempty"`
		StopSequences []string `json:"stopSequences,omitempty"`
	}
	cvTool struct {
		ToolSpec cvToolSpec `json:"toolSpec"`
	}
	cvToolSpec struct {
		Name        string        `json:"name"`
		Description string        `json:"description,omitempty"`
		InputSchema cvInputSchema `json:"inputSchema"`
	}
	cvInputSchema struct {
		JSON json.RawMessage `json:"json"`
	}
	cvToolConfig struct {
		Tools      []cvTool       `json:"tools"`
		ToolChoice map[string]any `json:"toolChoice,omitempty"`
	}
	cvRequest struct {
		Messages        []cvMessage   `json:"messages"`
		System          []cvText      `json:"system,omitempty"`
		InferenceConfig *cvInference  `json:"inferenceConfig,omitempty"`
		ToolConfig      *cvToolConfig `json:"toolConfig,omitempty"`
	}
	// cvUsage counts tokens. Some answers name the cache counts
	// cacheReadInputTokenCount and cacheWriteInputTokenCount instead.
	cvUsage struct {
		InputTokens               int `json:"inputTokens"`
		OutputTokens              int `json:"outputTokens"`
		TotalTokens               int `json:"totalTokens"`
		CacheReadInputTokens      int `json:"cacheReadInputTokens"`
		CacheWriteInputTokens     int `json:"cacheWriteInputTokens"`
		CacheReadInputTokenCount  int `json:"cacheReadInputTokenCount"`
		CacheWriteInputTokenCount int `json:"cacheWriteInputTokenCount"`
	}
	cvResponse struct {
		Output struct {
			Message cvMessage `json:"message"`
		} `json:"output"`
		StopReason string  `json:"stopReason"`
		Usage      cvUsage `json:"usage"`
	}
)

// converseUnsupported are OpenAI parameters Converse has no equivalent of.
// Each is refused unless its value asks for nothing (false, 0, {}).
var converseUnsupported = []string{"logprobs", "top_logprobs", "logit_bias", "presence_penalty",
	"frequency_penalty", "seed", "audio", "modalities", "prediction", "reasoning_effort", "web_search_options"}

// imageFormats maps the media types of data: URLs to Converse's image
// formats.
var imageFormats = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg",
	"image/gif": "gif", "image/webp": "webp"}

// translateChat is Translate for RouteChatCompletions.
func translateChat(body []byte) (*gateway.Translation, error) {
	req, err := chat.ParseRequest(body)
	if err != nil {
		return nil, paramError(err)
	}
	action := "converse"
	if req.Stream {
		action = "converse-stream"
	}
	path, rawPath, err := modelPath(req.Model, action)
	if err != nil {
		return nil, err
	}
	native, err := converseRequest(req)
	if err != nil {
		return nil, err
	}
	return &gateway.Translation{Path: path, RawPath: rawPath, Body: native, Response: func(res *http.Response) error {
		return converseResponse(req, res)
	}}, nil
}

// noop reports whether an unsupported parameter's value asks for nothing.
func noop(v json.RawMessage) bool {
	switch string(bytes.TrimSpace(v)) {
	case "false", "0", "0.0", "{}", "[]":
		return true
	}
	return false
}

// converseRequest returns the Converse body for r.
func converseRequest(r *chat.Request) ([]byte, error) {
	for _, p := range converseUnsupported {
		if v, ok := r.Extra[p]; ok && !noop(v) {
			return nil, unsupported(p, "has no equivalent")
		}
	}
	if r.N != nil && *r.N != 1 {
		return nil, unsupported("n", "only one choice per request")
	}
	if rf := r.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		return nil, unsupported("response_format", rf.Type+" has no equivalent in Converse")
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 1) {
		return nil, unsupported("temperature", "must be between 0 and 1")
	}
	if len(r.Stop) > 4 {
		return nil, badRequest(gateway.CodeInvalidJSON, "stop", "stop: at most 4 sequences")
	}
	var out cvRequest
	inf := cvInference{Temperature: r.Temperature, TopP: r.TopP, StopSequences: r.Stop}
	if n := r.MaxOutputTokens(); n > 0 {
		inf.MaxTokens = &n
	}
	if inf.MaxTokens != nil || inf.Temperature != nil || inf.TopP != nil || len(inf.StopSequences) > 0 {
		out.InferenceConfig = &inf
	}

	toolBlocks := false // the conversation holds toolUse or toolResult blocks
	for i, m := range r.Messages {
		param := "messages[" + strconv.Itoa(i) + "]"
		switch m.Role {
		case "system", "developer":
			text, err := textOnly(m.Content, param)
			if err != nil {
				return nil, err
			}
			if text != "" {
				out.System = append(out.System, cvText{Text: text})
			}
			continue
		case "tool":
			if m.ToolCallID == "" {
				return nil, badRequest(gateway.CodeInvalidJSON, param+".tool_call_id", param+".tool_call_id: is required")
			}
			text, err := textOnly(m.Content, param)
			if err != nil {
				return nil, err
			}
			toolBlocks = true
			out.Messages = appendMessage(out.Messages, "user",
				cvBlock{ToolResult: &cvToolResult{ToolUseID: m.ToolCallID, Content: []cvText{{Text: text}}}})
			continue
		}
		blocks, err := converseContent(m.Content, param)
		if err != nil {
			return nil, err
		}
		if m.Role == "assistant" {
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Function.Name == "" {
					return nil, badRequest(gateway.CodeInvalidJSON, param+".tool_calls", param+".tool_calls: every call needs an id and a function name")
				}
				input := json.RawMessage(bytes.TrimSpace([]byte(tc.Function.Arguments)))
				if len(input) == 0 {
					input = json.RawMessage("{}")
				} else if !json.Valid(input) {
					return nil, badRequest(gateway.CodeInvalidJSON, param+".tool_calls", param+".tool_calls: function arguments must be JSON")
				}
				toolBlocks = true
				blocks = append(blocks, cvBlock{ToolUse: &cvToolUse{ToolUseID: tc.ID, Name: tc.Function.Name, Input: input}})
			}
		}
		if len(blocks) > 0 {
			out.Messages = appendMessage(out.Messages, m.Role, blocks...)
		}
	}
	if len(out.Messages) == 0 {
		return nil, badRequest(gateway.CodeInvalidJSON, "messages", "messages: bedrock needs at least one user or assistant message with content")
	}

	tc, err := r.ParseToolChoice()
	if err != nil {
		return nil, paramError(err)
	}
	var tools []cvTool
	for i, t := range r.Tools {
		if t.Type != "function" && t.Type != "" {
			return nil, unsupported("tools["+strconv.Itoa(i)+"].type", "tools of type "+strconv.Quote(t.Type))
		}
		if t.Function.Name == "" {
			return nil, badRequest(gateway.CodeInvalidJSON, "tools["+strconv.Itoa(i)+"].function.name", "tools["+strconv.Itoa(i)+"].function.name: is required")
		}
		schema := t.Function.Parameters
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tools = append(tools, cvTool{ToolSpec: cvToolSpec{Name: t.Function.Name, Description: t.Function.Description, InputSchema: cvInputSchema{JSON: schema}}})
	}
	if tc.Mode != "" && tc.Mode != "none" && len(tools) == 0 {
		return nil, badRequest(gateway.CodeInvalidJSON, "tool_choice", "tool_choice: needs tools")
	}
	if len(tools) > 0 && tc.Mode != "none" && r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
		return nil, unsupported("parallel_tool_calls", "false has no equivalent in Converse")
	}
	switch tc.Mode {
	case "none":
		// Converse has no "none": the model is not offered the tools at
		// all. Converse refuses toolUse and toolResult blocks without a
		// toolConfig, so a conversation holding them cannot say none.
		if toolBlocks {
			return nil, unsupported("tool_choice", "none with tool calls in the conversation")
		}
		tools = nil
	case "auto":
		out.ToolConfig = &cvToolConfig{Tools: tools, ToolChoice: map[string]any{"auto": struct{}{}}}
	case "required":
		out.ToolConfig = &cvToolConfig{Tools: tools, ToolChoice: map[string]any{"any": struct{}{}}}
	case "function":
		out.ToolConfig = &cvToolConfig{Tools: tools, ToolChoice: map[string]any{"tool": map[string]string{"name": tc.Name}}}
	}
	if out.ToolConfig == nil && len(tools) > 0 {
		out.ToolConfig = &cvToolConfig{Tools: tools}
	}
	if out.ToolConfig == nil && toolBlocks {
		return nil, badRequest(gateway.CodeInvalidJSON, "tools", "tools: bedrock needs the tools the conversation's tool calls used")
	}
	return json.Marshal(out)
}

// appendMessage adds blocks as a message of role, merged into the last
// message when it has the same role: Converse wants the roles to
// alternate, and OpenAI's consecutive tool results are one user turn.
func appendMessage(ms []cvMessage, role string, blocks ...cvBlock) []cvMessage {
	if n := len(ms); n > 0 && ms[n-1].Role == role {
		ms[n-1].Content = append(ms[n-1].Content, blocks...)
		return ms
	}
	return append(ms, cvMessage{Role: role, Content: blocks})
}

// textOnly returns the text of a system, developer or tool message, whose
// Converse blocks can only hold text.
func textOnly(c chat.Content, param string) (string, error) {
	for j, p := range c.Parts {
		if p.Type != "text" {
			return "", unsupported(param+".content", "content["+strconv.Itoa(j)+"] is "+strconv.Quote(p.Type)+" where only text is taken")
		}
	}
	return c.String(), nil
}

// converseContent turns a user or assistant message's content into
// Converse blocks. Empty texts are dropped: Converse refuses blank text
// blocks.
func converseContent(c chat.Content, param string) ([]cvBlock, error) {
	if c.Text != nil {
		if *c.Text == "" {
			return nil, nil
		}
		return []cvBlock{{Text: *c.Text}}, nil
	}
	var out []cvBlock
	for j, p := range c.Parts {
		at := param + ".content[" + strconv.Itoa(j) + "]"
		switch p.Type {
		case "text":
			if p.Text != "" {
				out = append(out, cvBlock{Text: p.Text})
			}
		case "image_url":
			if p.ImageURL == nil {
				return nil, badRequest(gateway.CodeInvalidJSON, param+".content", at+": image_url is required")
			}
			mt, data, ok := chat.DataURL(p.ImageURL.URL)
			if !ok {
				if strings.HasPrefix(p.ImageURL.URL, "https://") || strings.HasPrefix(p.ImageURL.URL, "http://") {
					return nil, unsupported(param+".content", "content["+strconv.Itoa(j)+"] is an image URL, and Converse takes the image's bytes: send a base64 data: URL")
				}
				return nil, badRequest(gateway.CodeInvalidJSON, param+".content", at+": an image must be a base64 data: URL")
			}
			format, ok := imageFormats[strings.ToLower(mt)]
			if !ok {
				return nil, unsupported(param+".content", "content["+strconv.Itoa(j)+"] is an image of type "+strconv.Quote(mt)+", and Converse takes png, jpeg, gif and webp")
			}
			if _, err := base64.StdEncoding.DecodeString(data); err != nil {
				return nil, badRequest(gateway.CodeInvalidJSON, param+".content", at+": the data: URL is not valid base64")
			}
			out = append(out, cvBlock{Image: &cvImage{Format: format, Source: cvImageSource{Bytes: data}}})
		default:
			return nil, unsupported(param+".content", "content parts of type "+strconv.Quote(p.Type))
		}
	}
	return out, nil
}

// converseFinish maps Converse's stopReason to OpenAI's finish_reason.
func converseFinish(reason string) string {
	switch reason {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "guardrail_intervened", "content_filtered":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence
}

// openAI returns u as OpenAI counts it: Converse's inputTokens leave out
// the tokens read from and written to the prompt cache, which OpenAI's
// prompt_tokens include.
func (u cvUsage) openAI() *chat.Usage {
	read, write := max(u.CacheReadInputTokens, u.CacheReadInputTokenCount), max(u.CacheWriteInputTokens, u.CacheWriteInputTokenCount)
	prompt := u.InputTokens + read + write
	return &chat.Usage{PromptTokens: prompt, CompletionTokens: u.OutputTokens, TotalTokens: prompt + u.OutputTokens,
		PromptTokensDetails: &chat.PromptDetails{CachedTokens: read}}
}

// converseResponse turns Bedrock's answer into OpenAI's, in place.
func converseResponse(req *chat.Request, res *http.Response) error {
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return bedrockError(res)
	}
	id := answerID(res)
	if req.Stream && strings.HasPrefix(res.Header.Get("Content-Type"), "application/vnd.amazon.eventstream") {
		res.Body = converseStream(req, id, res.Body)
		setBody(res, "text/event-stream", nil)
		return nil
	}
	b, err := readAnswer(res, maxAnswer)
	if err != nil {
		return err
	}
	var a cvResponse
	if err := json.Unmarshal(b, &a); err != nil {
		return badAnswer("invalid JSON")
	}
	msg := chat.AssistantMessage{Role: "assistant"}
	var text strings.Builder
	hasText := false
	for _, c := range a.Output.Message.Content {
		switch {
		case c.ToolUse != nil:
			args := string(c.ToolUse.Input)
			if args == "" || args == "null" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: c.ToolUse.ToolUseID, Type: "function",
				Function: chat.FunctionCall{Name: c.ToolUse.Name, Arguments: args}})
		case c.Text != "":
			text.WriteString(c.Text)
			hasText = true
		}
	}
	if hasText || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	c := &chat.Completion{ID: id, Object: chat.ObjectCompletion, Created: time.Now().Unix(), Model: req.Model,
		Choices: []chat.Choice{{Message: msg, FinishReason: converseFinish(a.StopReason)}}, Usage: a.Usage.openAI()}
	setBody(res, "application/json", chat.Encode(c))
	return nil
}
