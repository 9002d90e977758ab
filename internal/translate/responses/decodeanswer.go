package responses

import (
	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/wire"
)

// The JSON names of a chat completion answer's fields, in the order the
// decoders below number them.
var (
	completionFields   = []string{"id", "created", "model", "choices", "usage"}
	answerChoiceFields = []string{"message", "finish_reason"}
	answerFields       = []string{"content", "refusal", "tool_calls", "reasoning_content", "reasoning"}
	chatUsageFields    = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details",
		"completion_tokens_details"}
	cachedFields        = []string{"cached_tokens"}
	outputDetailsFields = []string{"reasoning_tokens"}
)

// decodeCompletion reads a chat completion answer for wire.Decode, as
// json.Unmarshal reads it into a completion.
func decodeCompletion(d *wire.Decoder, c *completion) {
	d.Members(completionFields, func(n int) {
		switch n {
		case 0:
			c.ID = d.NullString()
		case 1:
			if !d.Null() {
				c.Created = int64(d.Int())
			}
		case 2:
			c.Model = d.NullString()
		case 3:
			if d.Null() {
				c.Choices = nil
				return
			}
			c.Choices = []completionChoice{}
			for d.Array(); d.Elem(); {
				c.Choices = append(c.Choices, completionChoice{})
				decodeChoice(d, &c.Choices[len(c.Choices)-1])
			}
		case 4:
			if d.Null() {
				c.Usage = nil
				return
			}
			if c.Usage == nil {
				c.Usage = new(chatUsage)
			}
			decodeChatUsage(d, c.Usage)
		}
	})
}

func decodeChoice(d *wire.Decoder, ch *completionChoice) {
	d.Members(answerChoiceFields, func(n int) {
		switch n {
		case 0:
			if !d.Null() {
				decodeAnswerMessage(d, &ch.Message)
			}
		case 1:
			ch.FinishReason = d.NullString()
		}
	})
}

func decodeAnswerMessage(d *wire.Decoder, m *answerMessage) {
	d.Members(answerFields, func(n int) {
		switch n {
		case 0:
			m.Content = nullableString(d)
		case 1:
			m.Refusal = nullableString(d)
		case 2:
			if d.Null() {
				m.ToolCalls = nil
				return
			}
			m.ToolCalls = []chat.ToolCall{}
			for d.Array(); d.Elem(); {
				m.ToolCalls = append(m.ToolCalls, chat.ToolCall{})
				d.ToolCall(&m.ToolCalls[len(m.ToolCalls)-1])
			}
		case 3:
			m.ReasoningContent = nullableString(d)
		case 4:
			m.Reasoning = d.Raw()
		}
	})
}

func decodeChatUsage(d *wire.Decoder, u *chatUsage) {
	d.Members(chatUsageFields, func(n int) {
		switch n {
		case 0:
			u.PromptTokens = nullableInt(d, u.PromptTokens)
		case 1:
			u.CompletionTokens = nullableInt(d, u.CompletionTokens)
		case 2:
			u.TotalTokens = nullableInt(d, u.TotalTokens)
		case 3:
			if d.Null() {
				u.PromptTokensDetails = nil
				return
			}
			if u.PromptTokensDetails == nil {
				u.PromptTokensDetails = new(chat.PromptDetails)
			}
			p := u.PromptTokensDetails
			d.Members(cachedFields, func(int) { p.CachedTokens = nullableInt(d, p.CachedTokens) })
		case 4:
			if d.Null() {
				u.CompletionDetails = nil
				return
			}
			if u.CompletionDetails == nil {
				u.CompletionDetails = new(completionDetails)
			}
			cd := u.CompletionDetails
			d.Members(outputDetailsFields, func(int) { cd.ReasoningTokens = nullableInt(d, cd.ReasoningTokens) })
		}
	})
}

// nullableString reads a string or null, as json.Unmarshal reads them
// into a *string.
func nullableString(d *wire.Decoder) *string {
	if d.Null() {
		return nil
	}
	s := d.String()
	return &s
}

// nullableInt reads an integer, or null, which json.Unmarshal leaves an
// int as it was (old).
func nullableInt(d *wire.Decoder, old int) int {
	if d.Null() {
		return old
	}
	return d.Int()
}
