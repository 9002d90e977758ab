package responses

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/wire"
)

// itemParam names item i of the input for an error. Items prepended from
// an earlier response are named so in the message; messages names them
// through previous_response_id.
func (r *Request) itemParam(i int) string {
	if i < r.prior {
		return "the earlier item [" + strconv.Itoa(i) + "]"
	}
	return "input[" + strconv.Itoa(i-r.prior) + "]"
}

// itemAt is where an item is in the input, to name it, or a member of
// it, in an error; the name is written only when one is needed.
type itemAt struct {
	r *Request
	i int
}

// param names the member of the item (".call_id"), or the item ("").
func (at itemAt) param(member string) string { return at.r.itemParam(at.i) + member }

// messages translates the items. Consecutive function calls, and the
// assistant message they follow, become one assistant message with tool
// calls; a reasoning item goes with the assistant message that follows it.
func (r *Request) messages(out []chatMessage, opt Options, note func(string)) (_ []chatMessage, err error) {
	i := 0
	defer func() {
		var e *Error
		if errors.As(err, &e) && i < r.prior {
			e.Message, e.Param = e.Param+": "+e.Message, "previous_response_id"
		}
	}()
	var reasoning strings.Builder
	pending := false       // reasoning waits for its assistant message
	assistantOpen := false // the last message may take more tool calls
	dropped := false
	takeReasoning := func(m *chatMessage) {
		if !pending {
			return
		}
		switch opt.ReasoningField {
		case "reasoning_content":
			m.ReasoningContent = reasoning.String()
		case "reasoning":
			m.Reasoning = reasoning.String()
		default:
			dropped = true
		}
		reasoning.Reset()
		pending = false
	}
	for i = range r.items {
		it := &r.items[i]
		at := itemAt{r, i}
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			m, err := chatMessageOf(it, r.decoded(i), at)
			if err != nil {
				return nil, err
			}
			if m.Role == "assistant" {
				takeReasoning(&m)
				out = append(out, m)
				assistantOpen = true
				continue
			}
			if pending {
				dropped, pending = true, false
				reasoning.Reset()
			}
			out = append(out, m)
			assistantOpen = false
		case "function_call":
			if it.CallID == "" {
				return nil, invalid(at.param(".call_id"), "is required")
			}
			if it.Name == "" {
				return nil, invalid(at.param(".name"), "is required")
			}
			tc := chat.ToolCall{ID: it.CallID, Type: "function", Function: chat.FunctionCall{Name: it.Name, Arguments: it.Arguments}}
			if !assistantOpen {
				out = append(out, chatMessage{Message: chat.Message{Role: "assistant"}})
				assistantOpen = true
			}
			last := &out[len(out)-1]
			takeReasoning(last)
			last.ToolCalls = append(last.ToolCalls, tc)
		case "function_call_output":
			if it.CallID == "" {
				return nil, invalid(at.param(".call_id"), "is required")
			}
			s, err := toolOutput(it.Output, at, ".output")
			if err != nil {
				return nil, err
			}
			out = append(out, chatMessage{Message: chat.Message{Role: "tool", ToolCallID: it.CallID, Content: text(s)}})
			assistantOpen = false
		case "reasoning":
			for _, p := range it.Summary {
				reasoning.WriteString(p.Text)
			}
			if dp := r.decoded(i); dp.ok {
				for _, p := range dp.parts {
					reasoning.WriteString(p.Text)
				}
			} else if isSet(it.Content) {
				var content []textPart
				if wire.Decode(it.Content, &content, readParts) == nil {
					for _, p := range content {
						reasoning.WriteString(p.Text)
					}
				}
			}
			if reasoning.Len() > 0 {
				pending = true
			}
		case "item_reference":
			return nil, unsupported(at.param(".type"), "item references cannot be resolved; send the items themselves")
		default:
			return nil, unsupported(at.param(".type"), "input items of type "+strconv.Quote(typ)+" cannot be translated")
		}
	}
	if pending || dropped {
		note("reasoning items dropped: the target takes no reasoning back")
	}
	return out, nil
}

// decoded returns the content parts of item i decoded with the body; ok
// is false when they were not.
func (r *Request) decoded(i int) decodedParts {
	if j := i - r.prior; j >= 0 && j < len(r.parts) {
		return r.parts[j]
	}
	return decodedParts{}
}

// chatMessageOf translates a message item; dp is its content, if decoded.
func chatMessageOf(it *inputItem, dp decodedParts, at itemAt) (chatMessage, error) {
	var m chatMessage
	switch it.Role {
	case "user", "assistant", "system":
		m.Role = it.Role
	case "developer":
		m.Role = "system" // chat models other than OpenAI's know no developer role
	default:
		return m, invalid(at.param(".role"), "must be user, assistant, system or developer")
	}
	c := bytes.TrimSpace(it.Content)
	if len(c) > 0 && c[0] == '"' {
		s, err := stringOf(c)
		if err != nil {
			return m, invalid(at.param(".content"), "must be a string or an array of content parts")
		}
		m.Content = text(s)
		return m, nil
	}
	parts := dp.parts
	var err error
	switch {
	case dp.ok:
	case len(c) == 0 || c[0] != '[':
		err = errNotArray
	default:
		err = wire.Decode(c, &parts, readParts)
	}
	if err != nil {
		return m, invalid(at.param(".content"), "must be a string or an array of content parts")
	}
	if len(parts) > maxParts {
		return m, invalid(at.param(".content"), "at most "+strconv.Itoa(maxParts)+" content parts")
	}
	// Text alone is sent as a string: the widest-understood shape, and the
	// only one some chat dialects take for system and assistant messages.
	if (len(parts) == 1 || m.Role != "user") && textParts(parts) {
		m.Content = joinText(parts)
		return m, nil
	}
	var out []chat.Part
	textOnly := true
	for j, p := range parts {
		pp := func(member string) string { return at.param(".content[" + strconv.Itoa(j) + "]" + member) }
		switch p.Type {
		case "input_text", "output_text":
			out = append(out, chat.Part{Type: "text", Text: p.Text})
		case "refusal":
			out = append(out, chat.Part{Type: "text", Text: p.Refusal})
		case "input_image":
			if m.Role != "user" {
				return m, unsupported(pp(".type"), "images only in user messages")
			}
			if p.ImageURL == nil || *p.ImageURL == "" {
				if p.FileID != nil {
					return m, unsupported(pp(".file_id"), "images by file id cannot be translated; send image_url")
				}
				return m, invalid(pp(".image_url"), "is required")
			}
			detail := p.Detail
			if detail == "auto" {
				detail = ""
			}
			out = append(out, chat.Part{Type: "image_url", ImageURL: &chat.ImageURL{URL: *p.ImageURL, Detail: detail}})
			textOnly = false
		case "input_file":
			return m, unsupported(pp(".type"), "file inputs cannot be translated")
		default:
			return m, unsupported(pp(".type"), "content parts of type "+strconv.Quote(p.Type)+" cannot be translated")
		}
	}
	// Text alone is sent as a string: the widest-understood shape, and the
	// only one some chat dialects take for system and assistant messages.
	if textOnly && (len(out) == 1 || m.Role != "user") {
		var b strings.Builder
		for _, p := range out {
			b.WriteString(p.Text)
		}
		m.Content = text(b.String())
		return m, nil
	}
	m.Content = chat.Content{Parts: out}
	return m, nil
}

// textParts reports whether parts are all text (input_text, output_text
// or refusal parts), which a message sends as a string.
func textParts(parts []textPart) bool {
	for i := range parts {
		switch parts[i].Type {
		case "input_text", "output_text", "refusal":
		default:
			return false
		}
	}
	return true
}

// joinText returns the text of text parts as a message's content,
// without copying a single part's.
func joinText(parts []textPart) chat.Content {
	textOf := func(p *textPart) *string {
		if p.Type == "refusal" {
			return &p.Refusal
		}
		return &p.Text
	}
	if len(parts) == 1 {
		return chat.Content{Text: textOf(&parts[0])}
	}
	n := 0
	for i := range parts {
		n += len(*textOf(&parts[i]))
	}
	var b strings.Builder
	b.Grow(n)
	for i := range parts {
		b.WriteString(*textOf(&parts[i]))
	}
	return text(b.String())
}
