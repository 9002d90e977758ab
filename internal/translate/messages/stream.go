package messages

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/modelgateway/gateway/internal/wire"
)

// StreamOptions are what a Stream needs to know of the request.
type StreamOptions struct {
	// ID is the message id to report; "" makes one from the first
	// chunk's id, as Answer does.
	ID string

	// Model is the model to report; "" reports the first chunk's.
	Model string

	// StopSequences are the request's stop_sequences (see Answer).
	StopSequences []string

	// InputTokens is reported in message_start, before the target has
	// said: an estimate (CountTokens) or 0. message_delta reports the
	// target's count at the end, or this one again if it sent none.
	InputTokens int
}

// ErrTruncated is the error of Close for a chat stream that ended before
// its answer finished.
var ErrTruncated = errors.New("messages: the chat stream ended before the answer finished")

// ErrBadChunk is the error of Chunk for data that is not a chat chunk.
var ErrBadChunk = errors.New("messages: the chat stream sent an event that is not a JSON chunk")

// Stream translates a chat completion stream into the Messages event
// stream, one chat chunk at a time, writing each chunk's events to its
// writer in one Write as soon as the chunk is given, so that a writer
// flushing on each write sends them at once.
//
// The events come in Messages' order: message_start and a ping before
// anything else; for each content block content_block_start, its
// content_block_delta events (thinking_delta for the model's reasoning,
// text_delta for its text, input_json_delta for a tool call's arguments)
// and content_block_stop; then message_delta with stop_reason,
// stop_sequence and usage, and message_stop. A new block starts when the
// kind of delta changes or another tool call starts, closing the one
// before; arguments that a target sends late for a tool call whose block
// is closed still go to that block's index. Each event is written as
// "event: X\ndata: {…}\n\n".
//
// A Stream is not safe for concurrent use. Its zero value is not usable:
// use NewStream.
type Stream struct {
	w     io.Writer
	opts  StreamOptions
	buf   []byte
	tools []int // a chat tool call's index → its block's index, -1 before it starts

	started, ended bool
	open           int  // the open block's index, -1 when none
	openKind       byte // 't' text, 'r' thinking, 'f' tool use
	blocks         int  // blocks started
	finish         string
	matched        string
	calledTools    bool
	usage          Usage
	hasUsage       bool
}

// NewStream returns a Stream writing to w.
func NewStream(w io.Writer, o StreamOptions) *Stream {
	return &Stream{w: w, opts: o, open: -1, buf: make([]byte, 0, 512)}
}

// maxToolCalls bounds the tool calls of one streamed answer.
const maxToolCalls = 1024

// Chunk translates one event of the chat stream: the data of an SSE
// event, a chunk's JSON, an OpenAI-shaped error ({"error":{…}}), or
// [DONE]. After the stream has ended (message_stop or error written),
// further chunks are ignored. Data that is not a chunk writes an error
// event and returns ErrBadChunk; otherwise the error is the writer's.
func (s *Stream) Chunk(data []byte) error {
	if s.ended {
		return nil
	}
	s.buf = s.buf[:0]
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		s.end()
		return s.flush()
	}
	var c chatCompletion
	if wire.Decode(data, &c, decodeCompletion) != nil {
		s.fail("api_error", "the provider's stream sent an event that is not JSON")
		if err := s.flush(); err != nil {
			return err
		}
		return ErrBadChunk
	}
	if c.Error != nil {
		msg := string(c.Error.Message)
		if msg == "" {
			msg = "the provider's stream failed"
		}
		s.fail(ErrorType(0, string(c.Error.Type), string(c.Error.Code)), msg)
		return s.flush()
	}
	s.start(c.ID, c.Model)
	if c.Usage != nil {
		s.usage, s.hasUsage = c.Usage.usage(), true
	}
	for i := range c.Choices {
		if ch := &c.Choices[i]; ch.Index == 0 {
			s.choice(ch)
			break
		}
	}
	return s.flush()
}

// Fail ends the stream with an error event, for a chat stream that
// failed: status, type and code of an OpenAI-shaped error (see
// ErrorType), and its message. It does nothing once the stream has ended.
func (s *Stream) Fail(status int, typ, code, message string) error {
	if s.ended {
		return nil
	}
	s.buf = s.buf[:0]
	s.fail(ErrorType(status, typ, code), message)
	return s.flush()
}

// Close ends the stream when the chat stream's body has ended. A chat
// stream that gave its finish reason but no [DONE] ends as if it had;
// one cut off before its finish reason writes an error event and returns
// ErrTruncated. Close does nothing once the stream has ended.
func (s *Stream) Close() error {
	if s.ended {
		return nil
	}
	s.buf = s.buf[:0]
	if s.finish == "" {
		s.fail("api_error", "the provider's stream ended before the answer finished")
		if err := s.flush(); err != nil {
			return err
		}
		return ErrTruncated
	}
	s.end()
	return s.flush()
}

func (s *Stream) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.w.Write(s.buf)
	return err
}

// event opens an event of type typ: its event line and the start of its
// data, up to the type member.
func (s *Stream) event(typ string) {
	s.buf = append(s.buf, "event: "...)
	s.buf = append(s.buf, typ...)
	s.buf = append(s.buf, "\ndata: {\"type\":\""...)
	s.buf = append(s.buf, typ...)
	s.buf = append(s.buf, '"')
}

func (s *Stream) endEvent() { s.buf = append(s.buf, "}\n\n"...) }

// start writes message_start and a ping, once.
func (s *Stream) start(chatID, model string) {
	if s.started {
		return
	}
	s.started = true
	if s.opts.ID == "" {
		s.opts.ID = messageID(chatID)
	}
	if s.opts.Model == "" {
		s.opts.Model = model
	}
	s.event("message_start")
	s.buf = append(s.buf, `,"message":{"id":`...)
	s.buf = appendString(s.buf, s.opts.ID)
	s.buf = append(s.buf, `,"type":"message","role":"assistant","model":`...)
	s.buf = appendString(s.buf, s.opts.Model)
	s.buf = append(s.buf, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	s.buf = Usage{InputTokens: s.opts.InputTokens}.append(s.buf)
	s.buf = append(s.buf, '}')
	s.endEvent()
	s.event("ping")
	s.endEvent()
}

// choice translates the first choice's delta.
func (s *Stream) choice(ch *chatChoice) {
	d := &ch.Delta
	if r := reasoningOf(d.ReasoningContent, d.Reasoning); r != "" {
		s.delta('r', "thinking_delta", "thinking", r)
	}
	if d.Content != "" {
		s.delta('t', "text_delta", "text", string(d.Content))
	}
	if d.Refusal != "" {
		s.delta('t', "text_delta", "text", string(d.Refusal))
	}
	for i := range d.ToolCalls {
		tc := &d.ToolCalls[i]
		idx := i
		if tc.Index != nil {
			idx = *tc.Index
		}
		if idx < 0 || idx >= maxToolCalls {
			s.fail("api_error", "the provider's stream sent a tool call index out of range")
			return
		}
		for len(s.tools) <= idx {
			s.tools = append(s.tools, -1)
		}
		block := s.tools[idx]
		if block < 0 {
			block = s.startTool(tc.ID, tc.Function.Name, idx)
			s.tools[idx] = block
		}
		if a := tc.Function.Arguments; a != "" {
			s.event("content_block_delta")
			s.buf = append(s.buf, `,"index":`...)
			s.buf = strconv.AppendInt(s.buf, int64(block), 10)
			s.buf = append(s.buf, `,"delta":{"type":"input_json_delta","partial_json":`...)
			s.buf = appendString(s.buf, a)
			s.buf = append(s.buf, '}')
			s.endEvent()
		}
	}
	if ch.FinishReason != "" {
		s.finish = ch.FinishReason
		s.matched = matchedStop(ch.StopReason, ch.MatchedStop)
		s.closeBlock()
	}
}

// delta writes a text or thinking delta, opening a block of kind first
// unless one is open.
func (s *Stream) delta(kind byte, deltaType, member, text string) {
	if s.open < 0 || s.openKind != kind {
		s.closeBlock()
		s.openBlock(kind)
		if kind == 'r' {
			s.buf = append(s.buf, `{"type":"thinking","thinking":"","signature":""}`...)
		} else {
			s.buf = append(s.buf, `{"type":"text","text":""}`...)
		}
		s.endEvent()
	}
	s.event("content_block_delta")
	s.buf = append(s.buf, `,"index":`...)
	s.buf = strconv.AppendInt(s.buf, int64(s.open), 10)
	s.buf = append(s.buf, `,"delta":{"type":"`...)
	s.buf = append(s.buf, deltaType...)
	s.buf = append(s.buf, `","`...)
	s.buf = append(s.buf, member...)
	s.buf = append(s.buf, `":`...)
	s.buf = appendString(s.buf, text)
	s.buf = append(s.buf, '}')
	s.endEvent()
}

// openBlock writes a content_block_start up to its content_block's value.
func (s *Stream) openBlock(kind byte) {
	s.open, s.openKind = s.blocks, kind
	s.blocks++
	s.event("content_block_start")
	s.buf = append(s.buf, `,"index":`...)
	s.buf = strconv.AppendInt(s.buf, int64(s.open), 10)
	s.buf = append(s.buf, `,"content_block":`...)
}

// startTool starts the tool_use block of the chat tool call idx.
func (s *Stream) startTool(id, name string, idx int) int {
	s.closeBlock()
	s.calledTools = true
	s.openBlock('f')
	s.buf = append(s.buf, `{"type":"tool_use","id":`...)
	s.buf = appendString(s.buf, toolID(id, s.opts.ID, idx))
	s.buf = append(s.buf, `,"name":`...)
	s.buf = appendString(s.buf, name)
	s.buf = append(s.buf, `,"input":{}}`...)
	s.endEvent()
	return s.open
}

func (s *Stream) closeBlock() {
	if s.open < 0 {
		return
	}
	s.event("content_block_stop")
	s.buf = append(s.buf, `,"index":`...)
	s.buf = strconv.AppendInt(s.buf, int64(s.open), 10)
	s.endEvent()
	s.open = -1
}

// end writes the end of the message: the open block's stop,
// message_delta and message_stop.
func (s *Stream) end() {
	s.start("", "")
	s.closeBlock()
	s.ended = true
	reason, seq := stopReason(s.finish, s.matched, s.opts.StopSequences, s.calledTools)
	u := s.usage
	if !s.hasUsage {
		u = Usage{InputTokens: s.opts.InputTokens}
	}
	s.event("message_delta")
	s.buf = append(s.buf, `,"delta":{"stop_reason":`...)
	s.buf = appendString(s.buf, reason)
	s.buf = append(s.buf, `,"stop_sequence":`...)
	s.buf = appendNullable(s.buf, seq)
	s.buf = append(s.buf, `},"usage":`...)
	s.buf = u.append(s.buf)
	s.endEvent()
	s.event("message_stop")
	s.endEvent()
}

// fail writes an error event and ends the stream.
func (s *Stream) fail(typ, message string) {
	s.ended = true
	s.event("error")
	s.buf = append(s.buf, `,"error":{"type":`...)
	s.buf = appendString(s.buf, typ)
	s.buf = append(s.buf, `,"message":`...)
	s.buf = appendString(s.buf, message)
	s.buf = append(s.buf, '}')
	s.endEvent()
}
