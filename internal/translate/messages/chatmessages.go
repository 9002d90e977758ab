package messages

import (
	"strconv"

	"github.com/modelgateway/gateway/internal/chat"
)

// path is the JSON path of a content block, written only when an error or
// a dropped member names it: messages[msg].content[block], and
// .content[inner] after it when inner is not negative (a block of a tool
// result).
type path struct{ msg, block, inner int }

// messagePath returns the path of message i.
func messagePath(i int) string { return "messages[" + strconv.Itoa(i) + "]" }

// at returns the path of member name of the block ("" for the block
// itself).
func (p path) at(name string) string {
	s := messagePath(p.msg) + ".content[" + strconv.Itoa(p.block) + "]"
	if p.inner >= 0 {
		s += ".content[" + strconv.Itoa(p.inner) + "]"
	}
	return s + name
}

// appendMessage appends the chat messages of message i.
func appendMessage(out []chatMessage, m *msgMessage, i int, d Dialect, t *Translation) ([]chatMessage, error) {
	if m.Role != "user" && m.Role != "assistant" {
		return nil, invalid(messagePath(i)+".role", "must be user or assistant")
	}
	if m.Content.Text != nil {
		return append(out, chatMessage{Message: chat.Message{Role: m.Role, Content: chat.Content{Text: m.Content.Text}}}), nil
	}
	if m.Content.Blocks == nil {
		return nil, invalid(messagePath(i)+".content", "is required")
	}
	if len(m.Content.Blocks) == 0 {
		return nil, invalid(messagePath(i)+".content", "must hold at least one block")
	}
	if m.Role == "assistant" {
		return appendAssistant(out, m.Content.Blocks, i, d, t)
	}
	var parts, images []chat.Part
	for j := range m.Content.Blocks {
		b := &m.Content.Blocks[j]
		bp := path{i, j, -1}
		if b.Cache != nil {
			t.drop(bp.at(".cache_control"))
		}
		switch b.Type {
		case "text":
			if parts == nil {
				parts = make([]chat.Part, 0, len(m.Content.Blocks)-j)
			}
			parts = append(parts, chat.Part{Type: "text", Text: b.Text})
		case "image":
			part, err := image(b, bp)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part)
		case "tool_result":
			if b.ToolUseID == "" {
				return nil, invalid(bp.at(".tool_use_id"), "is required")
			}
			if b.IsError {
				t.drop(bp.at(".is_error"))
			}
			text, imgs, err := toolResult(b.Content, bp, t)
			if err != nil {
				return nil, err
			}
			images = append(images, imgs...)
			out = append(out, chatMessage{Message: chat.Message{Role: "tool", ToolCallID: b.ToolUseID, Content: chat.Content{Text: text}}})
		default:
			return nil, blockType(b.Type, bp.at(""), "user")
		}
	}
	if len(images) > 0 {
		parts = append(images, parts...)
	}
	if len(parts) == 1 && parts[0].Type == "text" {
		return append(out, chatMessage{Message: chat.Message{Role: "user", Content: chat.Content{Text: &parts[0].Text}}}), nil
	}
	if len(parts) > 0 {
		out = append(out, chatMessage{Message: chat.Message{Role: "user", Content: chat.Content{Parts: parts}}})
	}
	return out, nil
}

// appendAssistant appends assistant message i, of blocks: its text, tool
// calls and reasoning.
func appendAssistant(out []chatMessage, blocks []msgBlock, i int, d Dialect, t *Translation) ([]chatMessage, error) {
	var text, reasoning joined
	var calls []chat.ToolCall
	for j := range blocks {
		b := &blocks[j]
		bp := path{i, j, -1}
		if b.Cache != nil {
			t.drop(bp.at(".cache_control"))
		}
		switch b.Type {
		case "text":
			text.add("", &b.Text)
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return nil, invalid(bp.at(""), "a tool_use block needs an id and a name")
			}
			args, err := compact(b.Input)
			if err != nil {
				return nil, invalid(bp.at(".input"), "must be a JSON object")
			}
			if calls == nil {
				calls = make([]chat.ToolCall, 0, len(blocks)-j)
			}
			calls = append(calls, chat.ToolCall{ID: b.ID, Type: "function", Function: chat.FunctionCall{Name: b.Name, Arguments: args}})
		case "thinking":
			if d.Reasoning == "" {
				t.drop(bp.at(""))
				continue
			}
			if b.Signature != "" {
				t.drop(bp.at(".signature"))
			}
			reasoning.add("", &b.Thinking)
		case "redacted_thinking":
			t.drop(bp.at(""))
		default:
			return nil, blockType(b.Type, bp.at(""), "assistant")
		}
	}
	m := chatMessage{Message: chat.Message{Role: "assistant", ToolCalls: calls}}
	if text.n > 0 || len(calls) == 0 {
		m.Content.Text = text.ptr()
	}
	switch d.Reasoning {
	case "reasoning":
		m.Reasoning = reasoning.string()
	default:
		m.ReasoningContent = reasoning.string()
	}
	return append(out, m), nil
}

// joined is texts written one after the other, copied only once there
// are two.
type joined struct {
	first *string // the first text
	more  []byte  // the texts joined, once there are two
	n     int     // how many were added
}

// add adds *s, after sep unless it is the first text.
func (j *joined) add(sep string, s *string) {
	j.n++
	switch j.n {
	case 1:
		j.first = s
		return
	case 2:
		j.more = append(make([]byte, 0, 2*(len(*j.first)+len(sep)+len(*s))), *j.first...)
	}
	j.more = append(append(j.more, sep...), *s...)
}

// len returns the length of the texts joined.
func (j *joined) len() int {
	if j.n == 1 {
		return len(*j.first)
	}
	return len(j.more)
}

// string returns the texts joined.
func (j *joined) string() string {
	switch j.n {
	case 0:
		return ""
	case 1:
		return *j.first
	}
	return string(j.more)
}

// ptr returns the texts joined, as a pointer to them.
func (j *joined) ptr() *string {
	if j.n == 1 {
		return j.first
	}
	s := j.string()
	return &s
}
