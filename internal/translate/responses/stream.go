package responses

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/wire"
)

// Stream turns a chat completion stream into the Responses stream events,
// written to an io.Writer as each chat chunk arrives: response.created and
// response.in_progress first; per output item output_item.added, its
// parts and deltas, output_item.done; then response.completed (or
// response.incomplete) with the whole Response, usage included. A failure
// is an error event followed by response.failed. Every event is
// "event: <type>\ndata: <json>\n\n" with a sequence_number counting from 0.
//
// A Stream is not safe for concurrent use: one goroutine feeds it.
type Stream struct {
	w    io.Writer
	ids  func(prefix string) string
	resp *Response
	seq  int64
	buf  []byte

	started, ended bool
	finishReason   string

	// The open item: none, or one reasoning, message or function call.
	open      int // itemNone, itemReasoning, itemMessage, itemCall
	openID    string
	openIndex int
	acc       []byte // text of the open reasoning, part or arguments
	item      []byte // scratch for doneItem's item

	// The open message's parts: the finished ones, and the open one's kind.
	parts    []any
	partKind int // partNone, partText, partRefusal

	calls    []*call // by chat tool call index
	openCall *call
}

const (
	itemNone = iota
	itemReasoning
	itemMessage
	itemCall
)

const (
	partNone = iota
	partText
	partRefusal
)

// call is one tool call of the chat stream: its output item, once begun.
type call struct {
	id, callID, name string
	done             bool
}

// chunk is a chat stream chunk, with the members chat.Chunk lacks.
type chunk struct {
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *chatUsage    `json:"usage"`
	Error   *chunkError   `json:"error"`
}

type chunkChoice struct {
	Delta        reply   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// reply is a chat answer's message, or a stream chunk's delta: the same
// members.
type reply struct {
	Content   *string         `json:"content"`
	Refusal   *string         `json:"refusal"`
	ToolCalls []chat.ToolCall `json:"tool_calls"`
	reasoningFields
}

type chunkError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// NewStream returns a Stream writing to w the events of the response id
// to the request, created at createdAt (Unix seconds).
func (r *Request) NewStream(w io.Writer, id string, createdAt int64) *Stream {
	return &Stream{w: w, ids: r.newID, resp: r.Response(id, createdAt)}
}

// Response returns the response as streamed so far: once the stream has
// ended, the Response of its last event, to store.
func (s *Stream) Response() *Response { return s.resp }

// Chunk translates the data of one chat stream event: a chunk's JSON, or
// [DONE], which completes the response. A chunk that carries an error
// fails it. Chunks after the end are ignored. The error is the writer's.
func (s *Stream) Chunk(data []byte) error {
	if s.ended {
		return nil
	}
	s.header()
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("[DONE]")) {
		if s.finishReason == "" {
			s.finishReason = "stop" // ended cleanly without saying why
		}
		s.complete()
		return s.flush()
	}
	var c chunk
	if err := wire.Decode(data, &c, decodeChunk); err != nil {
		s.fail("server_error", "the provider sent a stream event that is not JSON")
		return s.flush()
	}
	if c.Error != nil {
		code := "server_error"
		if c.Error.Type == "rate_limit_error" || bytes.Equal(c.Error.Code, []byte(`"rate_limit_exceeded"`)) {
			code = "rate_limit_exceeded"
		}
		msg := c.Error.Message
		if msg == "" {
			msg = "the provider's stream failed"
		}
		s.fail(code, msg)
		return s.flush()
	}
	if c.Model != "" {
		s.resp.Model = c.Model
	}
	// One choice: a Responses request asks for one.
	if len(c.Choices) > 0 {
		ch := &c.Choices[0]
		d := &ch.Delta
		if t := d.text(); t != "" {
			s.reasoning(t)
		}
		if d.Content != nil && *d.Content != "" {
			s.text(partText, *d.Content)
		}
		if d.Refusal != nil && *d.Refusal != "" {
			s.text(partRefusal, *d.Refusal)
		}
		for j := range d.ToolCalls {
			if !s.toolCall(j, &d.ToolCalls[j]) {
				return s.flush()
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finishReason = *ch.FinishReason
			s.closeItem()
		}
	}
	if c.Usage != nil {
		s.resp.Usage = c.Usage.usage()
	}
	return s.flush()
}

// Finish ends the stream when the chat stream has ended without [DONE]:
// a stream that gave its finish reason completes, one cut before it fails.
// It does nothing after the end.
func (s *Stream) Finish() error {
	if s.ended {
		return nil
	}
	s.header()
	if s.finishReason == "" {
		s.fail("server_error", "the provider's stream ended before the response was complete")
	} else {
		s.complete()
	}
	return s.flush()
}

// Fail ends the stream with an error event carrying code and message,
// then response.failed. Code is one of the Responses API's error codes;
// FailureCode maps an HTTP status to one. It does nothing after the end.
func (s *Stream) Fail(code, message string) error {
	if s.ended {
		return nil
	}
	s.header()
	s.fail(code, message)
	return s.flush()
}

func (s *Stream) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.w.Write(s.buf)
	s.buf = s.buf[:0]
	return err
}

// event opens an event of type typ, its data object left open for more
// members.
func (s *Stream) event(typ string) {
	s.buf = append(s.buf, "event: "...)
	s.buf = append(s.buf, typ...)
	s.buf = append(s.buf, "\ndata: {\"type\":\""...)
	s.buf = append(s.buf, typ...)
	s.buf = append(s.buf, `","sequence_number":`...)
	s.buf = strconv.AppendInt(s.buf, s.seq, 10)
	s.seq++
}

func (s *Stream) end() { s.buf = append(s.buf, "}\n\n"...) }

// member appends ,"name":<json of v>.
func (s *Stream) member(name string, v any) {
	s.buf = append(s.buf, ',', '"')
	s.buf = append(s.buf, name...)
	s.buf = append(s.buf, '"', ':')
	s.buf = appendValue(s.buf, v)
}

// response appends ,"response":<the response so far>; null in its place
// if it cannot be written (AppendJSON's errors, which json.Marshal has
// too, and which the decoders never leave).
func (s *Stream) response() {
	s.buf = append(s.buf, `,"response":`...)
	if b, err := s.resp.AppendJSON(s.buf); err == nil {
		s.buf = b
	} else {
		s.buf = append(s.buf, "null"...)
	}
}

func (s *Stream) str(name, v string) {
	s.buf = append(s.buf, ',', '"')
	s.buf = append(s.buf, name...)
	s.buf = append(s.buf, '"', ':')
	s.buf = appendString(s.buf, v)
}

func (s *Stream) num(name string, v int) {
	s.buf = append(s.buf, ',', '"')
	s.buf = append(s.buf, name...)
	s.buf = append(s.buf, '"', ':')
	s.buf = strconv.AppendInt(s.buf, int64(v), 10)
}

// at appends the item_id and output_index of the open item.
func (s *Stream) at() {
	s.str("item_id", s.openID)
	s.num("output_index", s.openIndex)
}

func (s *Stream) header() {
	if s.started {
		return
	}
	s.started = true
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		s.event(typ)
		s.response()
		s.end()
	}
}

// openItem begins an output item.
func (s *Stream) openItem(kind int, id string, item any) {
	s.open, s.openID, s.openIndex = kind, id, len(s.resp.Output)
	s.acc = s.acc[:0]
	s.event("response.output_item.added")
	s.num("output_index", s.openIndex)
	s.member("item", item)
	s.end()
}

// doneItem ends the open item, adding it to the response's output.
func (s *Stream) doneItem(item any) {
	s.item = appendValue(s.item[:0], item)
	b := bytes.Clone(s.item)
	s.resp.Output = append(s.resp.Output, b)
	s.event("response.output_item.done")
	s.num("output_index", s.openIndex)
	s.buf = append(s.buf, `,"item":`...)
	s.buf = append(s.buf, b...)
	s.end()
	s.open = itemNone
}

// closeItem ends the open item, whatever it is.
func (s *Stream) closeItem() {
	switch s.open {
	case itemReasoning:
		t := string(s.acc)
		for _, typ := range [...]string{"response.reasoning_summary_text.done", "response.reasoning_summary_part.done"} {
			s.event(typ)
			s.at()
			s.num("summary_index", 0)
			if typ == "response.reasoning_summary_text.done" {
				s.str("text", t)
			} else {
				s.member("part", summaryPart{Type: "summary_text", Text: t})
			}
			s.end()
		}
		s.doneItem(reasoningItem{ID: s.openID, Type: "reasoning", Summary: []summaryPart{{Type: "summary_text", Text: t}}})
	case itemMessage:
		s.closePart()
		s.doneItem(messageItem{ID: s.openID, Type: "message", Status: "completed", Role: "assistant", Content: s.parts})
		s.parts = nil
	case itemCall:
		c := s.openCall
		c.done = true
		args := string(s.acc)
		s.event("response.function_call_arguments.done")
		s.at()
		s.str("name", c.name)
		s.str("arguments", args)
		s.end()
		s.doneItem(functionCallItem{ID: c.id, Type: "function_call", Status: "completed", Arguments: args, CallID: c.callID, Name: c.name})
	}
}

func (s *Stream) reasoning(t string) {
	if s.open != itemReasoning {
		s.closeItem()
		id := s.ids("rs")
		s.openItem(itemReasoning, id, reasoningItem{ID: id, Type: "reasoning", Summary: []summaryPart{}})
		s.event("response.reasoning_summary_part.added")
		s.at()
		s.num("summary_index", 0)
		s.buf = append(s.buf, `,"part":{"type":"summary_text","text":""}`...)
		s.end()
	}
	s.acc = append(s.acc, t...)
	s.event("response.reasoning_summary_text.delta")
	s.at()
	s.num("summary_index", 0)
	s.str("delta", t)
	s.end()
}

// text adds t to the open message's part of kind, opening the message or
// the part first when needed.
func (s *Stream) text(kind int, t string) {
	if s.open != itemMessage {
		s.closeItem()
		id := s.ids("msg")
		s.openItem(itemMessage, id, messageItem{ID: id, Type: "message", Status: "in_progress", Role: "assistant", Content: []any{}})
	}
	if s.partKind != kind {
		s.closePart()
		s.partKind = kind
		s.event("response.content_part.added")
		s.at()
		s.num("content_index", len(s.parts))
		if kind == partText {
			s.buf = append(s.buf, `,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`...)
		} else {
			s.buf = append(s.buf, `,"part":{"type":"refusal","refusal":""}`...)
		}
		s.end()
	}
	s.acc = append(s.acc, t...)
	if kind == partText {
		s.event("response.output_text.delta")
	} else {
		s.event("response.refusal.delta")
	}
	s.at()
	s.num("content_index", len(s.parts))
	s.str("delta", t)
	if kind == partText {
		s.buf = append(s.buf, `,"logprobs":[]`...)
	}
	s.end()
}

// closePart ends the open message's open part.
func (s *Stream) closePart() {
	if s.partKind == partNone {
		return
	}
	t := string(s.acc)
	s.acc = s.acc[:0]
	part := textPartOf(t)
	if s.partKind == partText {
		s.event("response.output_text.done")
		s.at()
		s.num("content_index", len(s.parts))
		s.str("text", t)
		s.buf = append(s.buf, `,"logprobs":[]`...)
	} else {
		part = refusalPartOf(t)
		s.event("response.refusal.done")
		s.at()
		s.num("content_index", len(s.parts))
		s.str("refusal", t)
	}
	s.end()
	s.event("response.content_part.done")
	s.at()
	s.num("content_index", len(s.parts))
	s.member("part", part)
	s.end()
	s.parts = append(s.parts, part)
	s.partKind = partNone
}

// toolCall adds the delta of the j-th tool call of a chunk. It reports
// false when the stream failed: a delta for a call already done, which
// would mean the provider interleaved its calls.
func (s *Stream) toolCall(j int, tc *chat.ToolCall) bool {
	i := j
	if tc.Index != nil {
		i = *tc.Index
	}
	if i < 0 || i > maxTools {
		s.fail("server_error", "the provider sent a tool call index out of range")
		return false
	}
	for len(s.calls) <= i {
		s.calls = append(s.calls, nil)
	}
	c := s.calls[i]
	if c == nil {
		s.closeItem()
		c = &call{id: s.ids("fc"), callID: tc.ID, name: tc.Function.Name}
		if c.callID == "" {
			c.callID = s.ids("call")
		}
		s.calls[i] = c
		s.openCall = c
		s.openItem(itemCall, c.id, functionCallItem{ID: c.id, Type: "function_call", Status: "in_progress",
			CallID: c.callID, Name: c.name})
	} else if c.done || s.open != itemCall || s.openCall != c {
		s.fail("server_error", "the provider interleaved the arguments of its tool calls")
		return false
	}
	if a := tc.Function.Arguments; a != "" {
		s.acc = append(s.acc, a...)
		s.event("response.function_call_arguments.delta")
		s.at()
		s.str("delta", a)
		s.end()
	}
	return true
}

// complete ends the stream: open items done, then response.completed, or
// response.incomplete when the output was cut short.
func (s *Stream) complete() {
	if s.finishReason == "" {
		s.fail("server_error", "the provider's stream ended before the response was complete")
		return
	}
	s.closeItem()
	s.resp.Status, s.resp.IncompleteDetails = finish(s.finishReason)
	typ := "response.completed"
	if s.resp.Status == "incomplete" {
		typ = "response.incomplete"
	}
	s.event(typ)
	s.response()
	s.end()
	s.ended = true
}

// fail ends the stream with an error event and response.failed. Items
// left open are not in the failed response's output.
func (s *Stream) fail(code, message string) {
	s.event("error")
	s.str("code", code)
	s.str("message", message)
	s.buf = append(s.buf, `,"param":null`...)
	s.end()
	s.resp.Status = "failed"
	s.resp.Error = &ResponseError{Code: code, Message: message}
	s.event("response.failed")
	s.response()
	s.end()
	s.ended = true
	s.open = itemNone
}
