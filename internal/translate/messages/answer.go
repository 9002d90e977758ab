package messages

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/wire"
)

// The chat answer's wire types, with the members other chat dialects add:
// reasoning text (reasoning_content, reasoning), the stop sequence met
// (vLLM's stop_reason, SGLang's matched_stop) and cache writes.
type (
	// chatCompletion is a whole answer, or one chunk of a stream.
	chatCompletion struct {
		ID      string       `json:"id"`
		Model   string       `json:"model"`
		Choices []chatChoice `json:"choices"`
		Usage   *chatUsage   `json:"usage"`
		Error   *chatError   `json:"error"` // in a stream
	}
	chatError struct {
		Message stringOnly `json:"message"`
		Type    stringOnly `json:"type"`
		Code    stringOnly `json:"code"`
	}
	chatChoice struct {
		Index        int               `json:"index"`
		Message      chatAnswerMessage `json:"message"`
		Delta        chatAnswerMessage `json:"delta"`
		FinishReason string            `json:"finish_reason"`
		StopReason   stringOnly        `json:"stop_reason"`
		MatchedStop  stringOnly        `json:"matched_stop"`
	}
	chatAnswerMessage struct {
		Content          stringOnly      `json:"content"`
		Refusal          stringOnly      `json:"refusal"`
		ReasoningContent stringOnly      `json:"reasoning_content"`
		Reasoning        stringOnly      `json:"reasoning"`
		ToolCalls        []chat.ToolCall `json:"tool_calls"`
	}
	chatUsage struct {
		PromptTokens        int          `json:"prompt_tokens"`
		CompletionTokens    int          `json:"completion_tokens"`
		PromptTokensDetails *chatDetails `json:"prompt_tokens_details"`
	}
	chatDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	}
)

// stringOnly decodes a JSON string and takes anything else (null, a
// number, an object) as "", so that a dialect's member of another shape
// does not fail the whole answer.
type stringOnly string

// UnmarshalJSON implements json.Unmarshaler.
func (s *stringOnly) UnmarshalJSON(b []byte) error {
	if len(b) >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0 {
		*s = stringOnly(b[1 : len(b)-1]) // valid JSON, as the decoder checked
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = stringOnly(v)
	}
	return nil
}

// Usage is the token usage of a Messages answer.
type Usage struct {
	InputTokens              int // the prompt tokens neither read from nor written to a cache
	OutputTokens             int
	CacheReadInputTokens     int
	CacheCreationInputTokens int
}

// usage returns chat's usage as Messages counts it: input_tokens leave out
// the cached tokens, which Anthropic counts apart.
func (u *chatUsage) usage() Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CacheReadInputTokens = max(d.CachedTokens, 0)
		out.CacheCreationInputTokens = max(d.CacheWriteTokens, 0)
		out.InputTokens = max(u.PromptTokens-out.CacheReadInputTokens-out.CacheCreationInputTokens, 0)
	}
	return out
}

func (u Usage) append(b []byte) []byte {
	b = append(b, '{')
	b = appendInt(b, "input_tokens", u.InputTokens)
	b = append(b, ',')
	b = appendInt(b, "cache_creation_input_tokens", u.CacheCreationInputTokens)
	b = append(b, ',')
	b = appendInt(b, "cache_read_input_tokens", u.CacheReadInputTokens)
	b = append(b, ',')
	b = appendInt(b, "output_tokens", u.OutputTokens)
	return append(b, '}')
}

// stopReason maps chat's finish_reason to Messages' stop_reason, with the
// stop sequence met when the reason is one. matched is the stop sequence
// the target reports having met, if it does; a finish of "stop" is
// stop_sequence only then, and only for one of the request's sequences.
func stopReason(finish, matched string, stops []string, calledTools bool) (reason, sequence string) {
	switch finish {
	case "length":
		return "max_tokens", ""
	case "tool_calls", "function_call":
		return "tool_use", ""
	case "content_filter":
		return "refusal", ""
	}
	if calledTools {
		return "tool_use", "" // some targets finish a call with "stop"
	}
	if matched != "" {
		for _, s := range stops {
			if s == matched {
				return "stop_sequence", s
			}
		}
	}
	return "end_turn", ""
}

// ErrNoChoice is Answer's error for a chat answer without a choice.
var ErrNoChoice = errors.New("messages: the chat answer holds no choice")

// Answer translates a chat completion answer (JSON) into a Messages
// answer: id "msg_…" (from the chat id), the model's reasoning as a
// thinking block first, then its text (or refusal) as a text block, then
// each tool call as a tool_use block whose input is the parsed arguments
// (an object; arguments that are not one become {}), stop_reason mapped
// (stop end_turn, length max_tokens, tool_calls tool_use, content_filter
// refusal, a stop sequence met stop_sequence with its stop_sequence), and
// usage with the cached prompt tokens as cache_read_input_tokens. model is
// the model to report, "" for the chat answer's; stops are the request's
// stop_sequences.
func Answer(body []byte, model string, stops []string) ([]byte, error) {
	var c chatCompletion
	if err := wire.Decode(body, &c, decodeCompletion); err != nil {
		return nil, errors.New("messages: the chat answer is not valid JSON")
	}
	if len(c.Choices) == 0 {
		return nil, ErrNoChoice
	}
	ch := &c.Choices[0]
	m := &ch.Message
	if model == "" {
		model = c.Model
	}
	id := messageID(c.ID)
	b := make([]byte, 0, 256+len(body))
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendString(b, model)
	b = append(b, `,"content":[`...)
	n := 0
	sep := func() {
		if n > 0 {
			b = append(b, ',')
		}
		n++
	}
	if r := reasoningOf(m.ReasoningContent, m.Reasoning); r != "" {
		sep()
		b = append(b, `{"type":"thinking","thinking":`...)
		b = appendString(b, r)
		b = append(b, `,"signature":""}`...)
	}
	text := string(m.Content)
	if text == "" {
		text = string(m.Refusal)
	}
	if text != "" {
		sep()
		b = append(b, `{"type":"text","text":`...)
		b = appendString(b, text)
		b = append(b, '}')
	}
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		sep()
		b = append(b, `{"type":"tool_use","id":`...)
		b = appendString(b, toolID(tc.ID, id, i))
		b = append(b, `,"name":`...)
		b = appendString(b, tc.Function.Name)
		b = append(b, `,"input":`...)
		b = appendInput(b, tc.Function.Arguments)
		b = append(b, '}')
	}
	finish := ch.FinishReason
	if finish == "" && m.Refusal != "" && m.Content == "" {
		finish = "content_filter"
	}
	reason, seq := stopReason(finish, matchedStop(ch.StopReason, ch.MatchedStop), stops, len(m.ToolCalls) > 0)
	b = append(b, `],"stop_reason":`...)
	b = appendString(b, reason)
	b = append(b, `,"stop_sequence":`...)
	b = appendNullable(b, seq)
	b = append(b, `,"usage":`...)
	b = c.Usage.usage().append(b)
	return append(b, '}'), nil
}

func reasoningOf(a, b stringOnly) string {
	if a != "" {
		return string(a)
	}
	return string(b)
}

func matchedStop(a, b stringOnly) string {
	if a != "" {
		return string(a)
	}
	return string(b)
}

// appendNullable appends s as a string, or null when it is empty.
func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

// appendInput appends a tool call's arguments as the tool_use input: the
// object compacted, or {} when they are empty or not an object.
func appendInput(b []byte, args string) []byte {
	a := bytes.TrimSpace([]byte(args))
	if len(a) == 0 || a[0] != '{' || !json.Valid(a) {
		return append(b, '{', '}')
	}
	buf := bytes.NewBuffer(b)
	if json.Compact(buf, a) != nil {
		return append(b, '{', '}')
	}
	return buf.Bytes()
}

// messageID returns the Messages id of a chat answer id: "msg_" and the
// id's letters and digits (without a "chatcmpl-" prefix), else random.
func messageID(chatID string) string {
	b := make([]byte, 0, 4+len(chatID))
	b = append(b, "msg_"...)
	for i := 0; i < len(chatID) && len(b) < 64; i++ {
		if c := chatID[i]; c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			b = append(b, c)
		}
	}
	if s, ok := bytes.CutPrefix(b[4:], []byte("chatcmpl")); ok && len(s) > 0 {
		b = append(b[:4], s...)
	}
	if len(b) == 4 {
		return "msg_" + rand.Text()
	}
	return string(b)
}

// toolID returns a tool call's id, or one made from the message id and
// the call's place when the target sent none.
func toolID(id, msgID string, i int) string {
	if id != "" {
		return id
	}
	return "toolu_" + msgID[4:] + "_" + strconv.Itoa(i)
}
