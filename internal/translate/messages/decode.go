package messages

import (
	"bytes"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/wire"
)

// The JSON names of the wire types' fields, for wire.Decoder.Unknown.
var (
	requestFields = []string{"model", "max_tokens", "system", "messages", "tools", "tool_choice",
		"stop_sequences", "temperature", "top_p", "top_k", "metadata", "stream", "thinking"}
	messageFields    = []string{"role", "content"}
	blockFields      = []string{"type", "text", "source", "id", "name", "input", "tool_use_id", "content", "is_error", "thinking", "signature", "cache_control"}
	sourceFields     = []string{"type", "media_type", "data", "url"}
	toolFields       = []string{"type", "name", "description", "input_schema", "cache_control"}
	toolChoiceFields = []string{"type", "name", "disable_parallel_tool_use"}
	thinkingFields   = []string{"type", "budget_tokens"}
	metadataFields   = []string{"user_id"}
)

// decodeFast decodes a request body into r as json.Unmarshal would, and
// reports whether it could; when it could not, r is left partly decoded
// and the caller decodes the body with encoding/json. It refuses bodies
// nested deeper than maxDepth. names are the body's top-level members
// that are not in members, in order.
func decodeFast(body []byte, r *msgRequest) (names []string, ok bool) {
	d := wire.Decoder{MaxDepth: maxDepth}
	d.Reset(body)
	if !d.Object() {
		return nil, false
	}
	var seen uint64
	blocks := blockBufs{size: len(body)}
	for {
		k, ok := d.Key()
		if !ok {
			break
		}
		switch string(k) {
		case "model":
			d.Seen(&seen, 0)
			r.Model = d.NullString()
		case "max_tokens":
			d.Seen(&seen, 1)
			r.MaxTokens = d.IntPtr()
		case "system":
			d.Seen(&seen, 2)
			mark := d.Mark()
			if p := d.Peek(); p == '"' || p == '[' {
				r.system = &msgContent{}
				decodeContent(&d, r.system, &blocks)
			} else {
				d.Skip()
			}
			r.System = d.From(mark)
		case "messages":
			d.Seen(&seen, 3)
			if d.Null() {
				continue
			}
			r.Messages = make([]msgMessage, 0, min(max(len(body)>>10, 4), 256))
			for d.Array(); d.Elem(); {
				r.Messages = append(r.Messages, msgMessage{})
				decodeMessage(&d, &r.Messages[len(r.Messages)-1], &blocks)
			}
		case "tools":
			d.Seen(&seen, 4)
			if d.Null() {
				continue
			}
			r.Tools = make([]msgTool, 0, min(max(len(body)>>10, 2), 256)) // about a tool for each KB
			for d.Array(); d.Elem(); {
				r.Tools = append(r.Tools, msgTool{})
				decodeTool(&d, &r.Tools[len(r.Tools)-1])
			}
		case "tool_choice":
			d.Seen(&seen, 5)
			if d.Null() {
				continue
			}
			tc := &msgToolChoice{}
			r.ToolChoice = tc
			d.Members(toolChoiceFields, func(n int) {
				switch n {
				case 0:
					tc.Type = d.NullString()
				case 1:
					tc.Name = d.NullString()
				case 2:
					tc.DisableParallelToolUse = d.NullBool()
				}
			})
		case "stop_sequences":
			d.Seen(&seen, 6)
			if d.Null() {
				continue
			}
			r.StopSequences = []string{}
			for d.Array(); d.Elem(); {
				r.StopSequences = append(r.StopSequences, d.NullString())
			}
		case "temperature":
			d.Seen(&seen, 7)
			r.Temperature = d.FloatPtr()
		case "top_p":
			d.Seen(&seen, 8)
			r.TopP = d.FloatPtr()
		case "top_k":
			d.Seen(&seen, 9)
			r.TopK = d.IntPtr()
		case "metadata":
			d.Seen(&seen, 10)
			if d.Null() {
				continue
			}
			r.Metadata = &struct {
				UserID string `json:"user_id"`
			}{}
			d.Members(metadataFields, func(int) { r.Metadata.UserID = d.NullString() })
		case "stream":
			d.Seen(&seen, 11)
			r.Stream = d.NullBool()
		case "thinking":
			d.Seen(&seen, 12)
			if d.Null() {
				continue
			}
			th := &msgThinking{}
			r.Thinking = th
			d.Members(thinkingFields, func(n int) {
				if n == 0 {
					th.Type = d.NullString()
				} else if !d.Null() {
					th.BudgetTokens = d.Int()
				}
			})
		default:
			if !members[string(k)] {
				names = append(names, string(k))
			}
			d.Unknown(k, requestFields)
		}
	}
	return names, d.End()
}

func decodeMessage(d *wire.Decoder, m *msgMessage, blocks *blockBufs) {
	d.Members(messageFields, func(n int) {
		if n == 0 {
			m.Role = d.NullString()
		} else {
			decodeContent(d, &m.Content, blocks)
		}
	})
}

// blockBufs holds the blocks of a body's content arrays: those of one
// level of nesting (a message's, then a tool result's in it) one after
// the other in one slice, each array a part of it, so that most arrays
// cost no allocation of their own. An array nested deeper is gathered on
// stack and copied out.
type blockBufs struct {
	size   int // of the text decoded, by which the first level is sized
	level  int
	levels [2][]msgBlock
	stack  []msgBlock
}

// decodeContent decodes a content member into c, as its UnmarshalJSON
// does, its blocks kept in blocks.
func decodeContent(d *wire.Decoder, c *msgContent, blocks *blockBufs) {
	switch d.Peek() {
	case '"':
		s := d.String()
		c.Text = &s
	case '[':
		level := blocks.level
		blocks.level++
		if level < len(blocks.levels) {
			// A block's content is decoded at the next level: buf does
			// not grow while the block is decoded.
			buf := &blocks.levels[level]
			if *buf == nil {
				n := 4 // a tool result's blocks
				if level == 0 {
					// About a block for each 512 bytes, and the system
					// prompt's few.
					n = min(blocks.size>>9, 256) + 4
				}
				*buf = make([]msgBlock, 0, n)
			}
			start := len(*buf)
			for d.Array(); d.Elem(); {
				*buf = append(*buf, msgBlock{})
				decodeBlock(d, &(*buf)[len(*buf)-1], blocks)
			}
			c.Blocks = (*buf)[start:len(*buf):len(*buf)]
			blocks.level--
			return
		}
		start := len(blocks.stack)
		for d.Array(); d.Elem(); {
			var b msgBlock
			decodeBlock(d, &b, blocks)
			blocks.stack = append(blocks.stack, b)
		}
		c.Blocks = append(make([]msgBlock, 0, len(blocks.stack)-start), blocks.stack[start:]...)
		clear(blocks.stack[start:])
		blocks.stack = blocks.stack[:start]
		blocks.level--
	default:
		if !d.Null() {
			d.Fail()
		}
	}
}

func decodeBlock(d *wire.Decoder, b *msgBlock, blocks *blockBufs) {
	d.Members(blockFields, func(n int) {
		switch n {
		case 0:
			b.Type = d.NullString()
		case 1:
			b.Text = d.NullString()
		case 2:
			if d.Null() {
				return
			}
			s := &msgSource{}
			b.Source = s
			d.Members(sourceFields, func(n int) {
				switch n {
				case 0:
					s.Type = d.NullString()
				case 1:
					s.MediaType = d.NullString()
				case 2:
					s.Data = d.NullString()
				case 3:
					s.URL = d.NullString()
				}
			})
		case 3:
			b.ID = d.NullString()
		case 4:
			b.Name = d.NullString()
		case 5:
			b.Input = d.Raw()
		case 6:
			b.ToolUseID = d.NullString()
		case 7:
			if d.Null() {
				return
			}
			b.Content = &msgContent{}
			decodeContent(d, b.Content, blocks)
		case 8:
			b.IsError = d.NullBool()
		case 9:
			b.Thinking = d.NullString()
		case 10:
			b.Signature = d.NullString()
		case 11:
			b.Cache = d.Raw()
		}
	})
}

func decodeTool(d *wire.Decoder, t *msgTool) {
	d.Members(toolFields, func(n int) {
		switch n {
		case 0:
			t.Type = d.NullString()
		case 1:
			t.Name = d.NullString()
		case 2:
			t.Description = d.NullString()
		case 3:
			t.InputSchema = d.Raw()
		case 4:
			t.Cache = d.Raw()
		}
	})
}

// The JSON names of the chat answer's fields.
var (
	completionFields = []string{"id", "model", "choices", "usage", "error"}
	errorFields      = []string{"message", "type", "code"}
	choiceFields     = []string{"index", "message", "delta", "finish_reason", "stop_reason", "matched_stop"}
	answerFields     = []string{"content", "refusal", "reasoning_content", "reasoning", "tool_calls"}
	usageFields      = []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details"}
	detailsFields    = []string{"cached_tokens", "cache_write_tokens"}
)

// decodeCompletion reads a chat answer or stream chunk, or null.
func decodeCompletion(d *wire.Decoder, c *chatCompletion) {
	if d.Null() {
		return
	}
	d.Members(completionFields, func(n int) {
		switch n {
		case 0:
			c.ID = d.NullString()
		case 1:
			c.Model = d.NullString()
		case 2:
			if d.Null() {
				return
			}
			c.Choices = []chatChoice{}
			for d.Array(); d.Elem(); {
				c.Choices = append(c.Choices, chatChoice{})
				decodeChoice(d, &c.Choices[len(c.Choices)-1])
			}
		case 3:
			if d.Null() {
				return
			}
			c.Usage = &chatUsage{}
			decodeUsage(d, c.Usage)
		case 4:
			if d.Null() {
				return
			}
			e := &chatError{}
			c.Error = e
			d.Members(errorFields, func(n int) {
				switch n {
				case 0:
					e.Message = only(d)
				case 1:
					e.Type = only(d)
				case 2:
					e.Code = only(d)
				}
			})
		}
	})
}

func decodeChoice(d *wire.Decoder, ch *chatChoice) {
	if d.Null() {
		return
	}
	d.Members(choiceFields, func(n int) {
		switch n {
		case 0:
			if !d.Null() {
				ch.Index = d.Int()
			}
		case 1:
			decodeAnswer(d, &ch.Message)
		case 2:
			decodeAnswer(d, &ch.Delta)
		case 3:
			ch.FinishReason = d.NullString()
		case 4:
			ch.StopReason = only(d)
		case 5:
			ch.MatchedStop = only(d)
		}
	})
}

func decodeAnswer(d *wire.Decoder, m *chatAnswerMessage) {
	if d.Null() {
		return
	}
	d.Members(answerFields, func(n int) {
		switch n {
		case 0:
			m.Content = only(d)
		case 1:
			m.Refusal = only(d)
		case 2:
			m.ReasoningContent = only(d)
		case 3:
			m.Reasoning = only(d)
		case 4:
			if d.Null() {
				return
			}
			m.ToolCalls = []chat.ToolCall{}
			for d.Array(); d.Elem(); {
				m.ToolCalls = append(m.ToolCalls, chat.ToolCall{})
				d.ToolCall(&m.ToolCalls[len(m.ToolCalls)-1])
			}
		}
	})
}

func decodeUsage(d *wire.Decoder, u *chatUsage) {
	d.Members(usageFields, func(n int) {
		if d.Null() {
			return
		}
		switch n {
		case 0:
			u.PromptTokens = d.Int()
		case 1:
			u.CompletionTokens = d.Int()
		case 2:
			u.PromptTokensDetails = &chatDetails{}
			dt := u.PromptTokensDetails
			d.Members(detailsFields, func(n int) {
				if d.Null() {
					return
				}
				if n == 0 {
					dt.CachedTokens = d.Int()
				} else {
					dt.CacheWriteTokens = d.Int()
				}
			})
		}
	})
}

// only reads a value as stringOnly's UnmarshalJSON does.
func only(d *wire.Decoder) stringOnly {
	raw := d.Raw()
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	if s := raw[1 : len(raw)-1]; bytes.IndexByte(s, '\\') < 0 {
		return stringOnly(s)
	}
	return stringOnly(wire.Unquote(raw))
}
