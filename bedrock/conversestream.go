package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelgateway/gateway/internal/chat"
)

// cvEvent is the payload of one ConverseStream event; which members are
// set depends on its :event-type (messageStart, contentBlockStart,
// contentBlockDelta, contentBlockStop, messageStop, metadata). An
// exception's payload is {"message": …}.
type cvEvent struct {
	Role              string `json:"role"`
	ContentBlockIndex int    `json:"contentBlockIndex"`
	Start             struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
	Delta struct {
		Text    *string `json:"text"`
		ToolUse *struct {
			Input string `json:"input"`
		} `json:"toolUse"`
	} `json:"delta"`
	StopReason string   `json:"stopReason"`
	Usage      *cvUsage `json:"usage"`
	Message    string   `json:"message"`
}

// errStreamCut is the error of a stream that ended before messageStop.
var errStreamCut = fmt.Errorf("gateway: bedrock's stream ended before messageStop: %w", io.ErrUnexpectedEOF)

// converseStream translates ConverseStream's event stream into OpenAI
// chunks: the role first, text and tool-call deltas (each tool call keeps
// the index and id it got when it started), the finish reason at
// messageStop, then, since Converse counts tokens in a metadata event
// after messageStop, a usage chunk when the request asked for one, then
// data: [DONE] once metadata arrived or the stream ended. An exception
// or error message from Bedrock is passed on as an OpenAI error event, and
// the stream ends without [DONE]. A stream cut before messageStop, a
// message cut in the middle, a bad CRC or an event that is not JSON is a
// read error, which aborts the caller's connection.
func converseStream(req *chat.Request, id string, body io.ReadCloser) io.ReadCloser {
	events := newEventReader(body, maxEventMessage)
	var (
		created                  = time.Now().Unix()
		model                    = req.Model
		started, stopped, gotMet bool
		done                     bool
		usage                    *cvUsage
		tools                    = map[int]int{} // Converse block index → OpenAI tool call index
		out                      []byte
	)
	chunk := func(d chat.Delta, finish *string) {
		out = append(out, chat.Event(&chat.Chunk{ID: id, Object: chat.ObjectChunk, Created: created, Model: model,
			Choices: []chat.ChunkChoice{{Delta: d, FinishReason: finish}}})...)
	}
	start := func() {
		if !started {
			started = true
			empty := ""
			chunk(chat.Delta{Role: "assistant", Content: &empty}, nil)
		}
	}
	end := func() ([]byte, error) {
		done = true
		if req.IncludeUsage() && usage != nil {
			out = append(out, chat.Event(&chat.Chunk{ID: id, Object: chat.ObjectChunk, Created: created, Model: model,
				Choices: []chat.ChunkChoice{}, Usage: usage.openAI()})...)
		}
		return append(out, chat.Done...), io.EOF
	}
	next := func() ([]byte, error) {
		out = nil // each call's bytes are a new slice: the Stream still holds the last ones
		if done {
			return nil, io.EOF
		}
		m, err := events.Next()
		if err == io.EOF {
			if !stopped {
				return nil, errStreamCut
			}
			return end()
		}
		if err != nil {
			return nil, err
		}
		switch m.header(":message-type") {
		case "event":
		case "exception", "error":
			done = true
			return streamError(m), io.EOF
		default:
			return nil, nil
		}
		typ := m.header(":event-type")
		var ev cvEvent
		if json.Unmarshal(eventBody(m.payload, typ), &ev) != nil {
			return nil, errors.New("gateway: bedrock sent an event that is not JSON")
		}
		switch typ {
		case "messageStart":
			start()
		case "contentBlockStart":
			if tu := ev.Start.ToolUse; tu != nil {
				if _, ok := tools[ev.ContentBlockIndex]; ok {
					break
				}
				i := len(tools)
				tools[ev.ContentBlockIndex] = i
				start()
				chunk(chat.Delta{ToolCalls: []chat.ToolCall{{Index: &i, ID: tu.ToolUseID, Type: "function",
					Function: chat.FunctionCall{Name: tu.Name}}}}, nil)
			}
		case "contentBlockDelta":
			switch d := ev.Delta; {
			case d.Text != nil && *d.Text != "":
				start()
				chunk(chat.Delta{Content: d.Text}, nil)
			case d.ToolUse != nil && d.ToolUse.Input != "":
				if i, ok := tools[ev.ContentBlockIndex]; ok {
					start()
					chunk(chat.Delta{ToolCalls: []chat.ToolCall{{Index: &i, Function: chat.FunctionCall{Arguments: d.ToolUse.Input}}}}, nil)
				}
			}
		case "messageStop":
			if stopped {
				break
			}
			stopped = true
			start()
			f := converseFinish(ev.StopReason)
			chunk(chat.Delta{}, &f)
			if gotMet {
				return end()
			}
		case "metadata":
			gotMet = true
			if ev.Usage != nil {
				u := *ev.Usage
				usage = &u
			}
			if stopped {
				return end()
			}
		}
		return out, nil // contentBlockStop, reasoning deltas and the like add nothing
	}
	return chat.NewStream(body, next)
}

// eventBody returns an event's own members. Bedrock sends them as the
// payload itself; a payload wrapped in a member named after the event
// type, as the SDKs show events, is unwrapped too.
func eventBody(payload []byte, typ string) []byte {
	p := bytes.TrimSpace(payload)
	if typ == "" || !bytes.HasPrefix(p, []byte(`{"`+typ+`":`)) {
		return payload
	}
	var w map[string]json.RawMessage
	if json.Unmarshal(p, &w) != nil || len(w) != 1 {
		return payload
	}
	return w[typ]
}

// streamError returns the OpenAI error event for an exception or error
// message of the stream.
func streamError(m *eventMessage) []byte {
	kind, msg := m.header(":exception-type"), ""
	if m.header(":message-type") == "error" {
		kind, msg = m.header(":error-code"), m.header(":error-message")
	} else {
		var e cvEvent
		json.Unmarshal(m.payload, &e)
		msg = e.Message
	}
	if msg == "" {
		msg = "bedrock's stream failed"
		if kind != "" {
			msg += ": " + kind
		}
	}
	body := chat.ErrorBody(msg, errorType(exceptionStatus(kind)), errorKind(kind), "")
	out := append([]byte("data: "), body...)
	return append(out, '\n', '\n')
}

// exceptionStatus is the HTTP status Bedrock gives an exception of kind
// outside a stream.
func exceptionStatus(kind string) int {
	switch strings.ToLower(errorKind(kind)) {
	case "validationexception":
		return http.StatusBadRequest
	case "accessdeniedexception":
		return http.StatusForbidden
	case "resourcenotfoundexception":
		return http.StatusNotFound
	case "modeltimeoutexception":
		return http.StatusRequestTimeout
	case "throttlingexception", "servicequotaexceededexception":
		return http.StatusTooManyRequests
	case "modelstreamerrorexception":
		return http.StatusFailedDependency
	case "serviceunavailableexception":
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
