package responses

import (
	"encoding/json"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/wire"
)

// The JSON names of the wire types' fields, in the order the decoders
// below number them, for wire.Decoder.Members.
var (
	requestFields = []string{"model", "input", "instructions", "tools", "tool_choice", "text",
		"max_output_tokens", "temperature", "top_p", "parallel_tool_calls", "user", "metadata", "store",
		"previous_response_id", "reasoning", "stream", "truncation", "include", "prompt_cache_key",
		"service_tier", "safety_identifier", "stream_options", "background", "prompt", "conversation",
		"top_logprobs", "max_tool_calls"}
	textFields     = []string{"format", "verbosity"}
	reasoningNames = []string{"effort", "summary"}
	itemFields     = []string{"type", "role", "content", "call_id", "name", "arguments", "output", "summary"}
	partFields     = []string{"type", "text", "refusal", "image_url", "file_id", "detail"}
	toolFields     = []string{"type", "name", "description", "parameters", "strict"}
)

// decodeRequest decodes a body into w as json.Unmarshal would, and
// reports whether it could; when it could not, the caller decodes the
// body with encoding/json, which gives the result or the error. It
// refuses bodies nested deeper than maxDepth. When in is not nil and
// the input is an array, its items and their content parts are decoded
// into in as well, and so are the tools.
func decodeRequest(body []byte, w *wireRequest, in *decodedInput) bool {
	d := wire.Decoder{MaxDepth: maxDepth}
	d.Reset(body)
	d.Members(requestFields, func(n int) {
		switch n {
		case 0:
			w.Model = d.NullString()
		case 1:
			if in == nil || d.Peek() != '[' {
				w.Input = d.Raw()
				if in != nil {
					in.ok, in.items, in.parts = false, nil, nil
				}
				return
			}
			mark := d.Mark()
			// Room for a conversation of a few turns from the start, or
			// of about an item for each 512 bytes of the body.
			n := min(max(len(body)>>9, 8), 256)
			in.items, in.parts = make([]inputItem, 0, n), make([]decodedParts, 0, n)
			for d.Array(); d.Elem(); {
				in.items = append(in.items, inputItem{})
				in.parts = append(in.parts, decodedParts{})
				decodeItem(&d, &in.items[len(in.items)-1], &in.parts[len(in.parts)-1])
			}
			w.Input, in.ok = d.From(mark), !d.Failed()
		case 2:
			w.Instructions = d.StringPtr()
		case 3:
			if in != nil {
				in.tools = nil
			}
			if d.Null() {
				return
			}
			// About a tool for each KB of the body: agents send long
			// schemas.
			n := min(max(len(body)>>10, 2), 256)
			w.Tools = make([]json.RawMessage, 0, n)
			if in != nil {
				in.tools = make([]decodedTool, 0, n)
			}
			for d.Array(); d.Elem(); {
				if in == nil {
					w.Tools = append(w.Tools, d.Raw())
					continue
				}
				// A tool that does not decode is kept as it is, for the
				// translation to refuse.
				var dt decodedTool
				saved, mark := d, d.Mark()
				if decodeTool(&d, &dt.tool); d.Failed() {
					d, dt = saved, decodedTool{}
					w.Tools = append(w.Tools, d.Raw())
				} else {
					dt.ok = true
					w.Tools = append(w.Tools, d.From(mark))
				}
				in.tools = append(in.tools, dt)
			}
		case 4:
			w.ToolChoice = d.Raw()
		case 5:
			if d.Null() {
				return
			}
			t := &wireText{}
			w.Text = t
			d.Members(textFields, func(n int) {
				if n == 0 {
					t.Format = d.Raw()
				} else {
					t.Verbosity = d.NullString()
				}
			})
		case 6:
			w.MaxOutputTokens = d.IntPtr()
		case 7:
			w.Temperature = d.FloatPtr()
		case 8:
			w.TopP = d.FloatPtr()
		case 9:
			w.ParallelToolCalls = d.BoolPtr()
		case 10:
			w.User = d.NullString()
		case 11:
			w.Metadata = decodeMetadata(&d)
		case 12:
			w.Store = d.BoolPtr()
		case 13:
			w.PreviousResponseID = d.StringPtr()
		case 14:
			if d.Null() {
				return
			}
			r := &wireReasoning{}
			w.Reasoning = r
			d.Members(reasoningNames, func(n int) {
				if n == 0 {
					r.Effort = d.StringPtr()
				} else {
					r.Summary = d.StringPtr()
				}
			})
		case 15:
			w.Stream = d.NullBool()
		case 16:
			w.Truncation = d.NullString()
		case 17:
			if d.Null() {
				return
			}
			w.Include = []string{}
			for d.Array(); d.Elem(); {
				w.Include = append(w.Include, d.NullString())
			}
		case 18:
			w.PromptCacheKey = d.NullString()
		case 19:
			w.ServiceTier = d.NullString()
		case 20:
			w.SafetyIdentifier = d.NullString()
		case 21:
			w.StreamOptions = d.Raw()
		case 22:
			w.Background = d.BoolPtr()
		case 23:
			w.Prompt = d.Raw()
		case 24:
			w.Conversation = d.Raw()
		case 25:
			w.TopLogprobs = d.IntPtr()
		case 26:
			w.MaxToolCalls = d.IntPtr()
		}
	})
	return d.End()
}

// decodeMetadata reads an object of strings into a map, as encoding/json
// does: null is nil, and a null value is "".
func decodeMetadata(d *wire.Decoder) map[string]string {
	if d.Null() || !d.Object() {
		return nil
	}
	m := map[string]string{}
	for {
		k, ok := d.Key()
		if !ok {
			return m
		}
		m[string(k)] = d.NullString()
	}
}

// decodeItems decodes an array of input items, or null, as
// json.Unmarshal would.
func decodeItems(raw []byte) ([]inputItem, error) {
	var items []inputItem
	err := wire.Decode(raw, &items, func(d *wire.Decoder, items *[]inputItem) {
		if d.Null() {
			return
		}
		*items = []inputItem{}
		for d.Array(); d.Elem(); {
			*items = append(*items, inputItem{})
			decodeItem(d, &(*items)[len(*items)-1], nil)
		}
	})
	return items, err
}

// readItem reads an input item, or null, for wire.Decode.
func readItem(d *wire.Decoder, it *inputItem) { decodeItem(d, it, nil) }

// decodeItem reads an input item, or null. When p is not nil and the
// content is an array of parts, the parts are decoded into p too.
func decodeItem(d *wire.Decoder, it *inputItem, p *decodedParts) {
	if d.Null() {
		return
	}
	d.Members(itemFields, func(n int) {
		switch n {
		case 0:
			it.Type = d.NullString()
		case 1:
			it.Role = d.NullString()
		case 2:
			if p == nil {
				it.Content = d.Raw()
				return
			}
			*p = decodedParts{}
			if d.Peek() != '[' {
				it.Content = d.Raw()
				return
			}
			// Parts that do not decode are kept as they are, for the
			// translation to refuse.
			saved, mark := *d, d.Mark()
			if parts := decodeParts(d); !d.Failed() {
				it.Content, *p = d.From(mark), decodedParts{ok: true, parts: parts}
				return
			}
			*d = saved
			it.Content = d.Raw()
		case 3:
			it.CallID = d.NullString()
		case 4:
			it.Name = d.NullString()
		case 5:
			it.Arguments = d.NullString()
		case 6:
			it.Output = d.Raw()
		case 7:
			it.Summary = decodeParts(d)
		}
	})
}

// decodeParts reads an array of content parts, or null.
func decodeParts(d *wire.Decoder) []textPart {
	if d.Null() {
		return nil
	}
	parts := []textPart{}
	for d.Array(); d.Elem(); {
		parts = append(parts, textPart{})
		p := &parts[len(parts)-1]
		if d.Null() {
			continue
		}
		d.Members(partFields, func(n int) {
			switch n {
			case 0:
				p.Type = d.NullString()
			case 1:
				p.Text = d.NullString()
			case 2:
				p.Refusal = d.NullString()
			case 3:
				p.ImageURL = d.StringPtr()
			case 4:
				p.FileID = d.StringPtr()
			case 5:
				p.Detail = d.NullString()
			}
		})
	}
	return parts
}

// decodeTool reads a tool, or null.
func decodeTool(d *wire.Decoder, t *wireTool) {
	if !d.Null() {
		d.Members(toolFields, func(n int) {
			switch n {
			case 0:
				t.Type = d.NullString()
			case 1:
				t.Name = d.NullString()
			case 2:
				t.Description = d.NullString()
			case 3:
				t.Parameters = d.Raw()
			case 4:
				t.Strict = d.BoolPtr()
			}
		})
	}
}

// stringOf decodes a JSON string as json.Unmarshal would.
func stringOf(raw []byte) (string, error) {
	// wire.Decode, without the Decoder escaping to the heap through its
	// function argument.
	var d wire.Decoder
	d.Reset(raw)
	if s := d.String(); d.End() {
		return s, nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// The JSON names of the chat stream chunk's fields.
var (
	chunkFields  = []string{"model", "choices", "usage", "error"}
	choiceFields = []string{"delta", "finish_reason"}
	replyFields  = []string{"content", "refusal", "tool_calls", "reasoning_content", "reasoning"}
	usageFields  = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"}
	errorFields  = []string{"message", "type", "code"}
)

// decodeChunk reads a chat stream chunk, or null.
func decodeChunk(d *wire.Decoder, c *chunk) {
	if d.Null() {
		return
	}
	d.Members(chunkFields, func(n int) {
		if n != 0 && d.Null() {
			return
		}
		switch n {
		case 0:
			c.Model = d.NullString()
		case 1:
			c.Choices = []chunkChoice{}
			for d.Array(); d.Elem(); {
				c.Choices = append(c.Choices, chunkChoice{})
				decodeChunkChoice(d, &c.Choices[len(c.Choices)-1])
			}
		case 2:
			c.Usage = &chatUsage{}
			decodeUsage(d, c.Usage)
		case 3:
			e := &chunkError{}
			c.Error = e
			d.Members(errorFields, func(n int) {
				switch n {
				case 0:
					e.Message = d.NullString()
				case 1:
					e.Type = d.NullString()
				case 2:
					e.Code = d.Raw()
				}
			})
		}
	})
}

func decodeChunkChoice(d *wire.Decoder, ch *chunkChoice) {
	if d.Null() {
		return
	}
	d.Members(choiceFields, func(n int) {
		if n == 1 {
			ch.FinishReason = d.StringPtr()
			return
		}
		if d.Null() {
			return
		}
		decodeReply(d, &ch.Delta)
	})
}

// decodeReply reads an answer's message or a chunk's delta, not null.
func decodeReply(d *wire.Decoder, r *reply) {
	d.Members(replyFields, func(n int) {
		switch n {
		case 0:
			r.Content = d.StringPtr()
		case 1:
			r.Refusal = d.StringPtr()
		case 2:
			if d.Null() {
				return
			}
			r.ToolCalls = []chat.ToolCall{}
			for d.Array(); d.Elem(); {
				r.ToolCalls = append(r.ToolCalls, chat.ToolCall{})
				d.ToolCall(&r.ToolCalls[len(r.ToolCalls)-1])
			}
		case 3:
			r.ReasoningContent = d.StringPtr()
		case 4:
			r.Reasoning = d.Raw()
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
			u.TotalTokens = d.Int()
		case 3:
			p := &chat.PromptDetails{}
			u.PromptTokensDetails = p
			d.Members([]string{"cached_tokens"}, func(int) {
				if !d.Null() {
					p.CachedTokens = d.Int()
				}
			})
		case 4:
			u.CompletionDetails = &completionDetails{}
			c := u.CompletionDetails
			d.Members([]string{"reasoning_tokens"}, func(int) {
				if !d.Null() {
					c.ReasoningTokens = d.Int()
				}
			})
		}
	})
}

// readParts reads an array of content parts, or null, for wire.Decode.
func readParts(d *wire.Decoder, parts *[]textPart) { *parts = decodeParts(d) }
