package bedrock

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/translate/messages"
)

var _ gateway.NativeTranslator = (*provider)(nil)

// anthropicVersion is the anthropic_version Bedrock takes in the body of a
// Claude model's InvokeModel.
const anthropicVersion = "bedrock-2023-05-31"

// claudeModel reports whether a Bedrock model id (or inference profile)
// names an Anthropic Claude model, which takes the Messages body itself.
func claudeModel(model string) bool {
	return strings.Contains(model, "anthropic.claude") || strings.Contains(model, "claude-")
}

// TranslateNative sends an Anthropic Messages request for a Claude model
// to InvokeModel (POST /model/{modelId}/invoke), or
// InvokeModelWithResponseStream (/invoke-with-response-stream) when
// streamed, with the caller's body less model and stream and with
// Bedrock's anthropic_version: cache_control, thinking and tool blocks
// reach the model as sent. The answer is a Messages answer already; a
// stream's event-stream messages are decoded back into the Messages
// event stream, and errors come back Anthropic-shaped. A model that is
// not Claude, or another route, is not taken natively: the gateway then
// translates the request to Converse. A count_tokens request
// (gateway.RouteCountTokens) for a Claude model goes to CountTokens (see
// countTokens); for any other model the gateway answers with its own
// estimate. It is safe for concurrent use.
func (p *provider) TranslateNative(route string, _ *gateway.Target, body []byte) (*gateway.Translation, error) {
	var m struct {
		Model string `json:"model"`
	}
	json.Unmarshal(body, &m)
	if route != gateway.RouteMessages && route != gateway.RouteCountTokens || !claudeModel(m.Model) {
		return nil, nil
	}
	c, err := messages.CloudRequest(body, anthropicVersion, false)
	if err != nil {
		var me *messages.Error
		if errors.As(err, &me) {
			return nil, badRequest(me.Code, me.Param, me.Message)
		}
		return nil, err
	}
	if route == gateway.RouteCountTokens {
		return countTokens(c)
	}
	action := "invoke"
	if c.Stream {
		action = "invoke-with-response-stream"
	}
	path, raw, err := modelPath(c.Model, action)
	if err != nil {
		return nil, err
	}
	return &gateway.Translation{Path: path, RawPath: raw, Body: c.Body, Response: func(res *http.Response) error {
		return claudeAnswer(c.Stream, res)
	}}, nil
}

// claudeAnswer leaves a Claude model's whole answer as Bedrock sent it,
// decodes a stream into the Messages event stream, and makes an error
// Anthropic-shaped.
func claudeAnswer(stream bool, res *http.Response) error {
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return claudeError(res)
	}
	if stream {
		res.Body = claudeStream(res.Body)
		setBody(res, "text/event-stream", nil)
	}
	return nil
}

// claudeError makes Bedrock's error answer to a Messages request
// Anthropic-shaped, with Bedrock's status.
func claudeError(res *http.Response) error {
	if err := bedrockError(res); err != nil {
		return err
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	setBody(res, "application/json", messages.ErrorFromChat(res.StatusCode, b))
	return nil
}

// claudeStream decodes InvokeModelWithResponseStream's event stream: each
// chunk event carries one Messages event, base64 in its bytes member,
// written as "event: <type>\ndata: <json>\n\n" as Anthropic streams it. An
// exception becomes an Anthropic error event, and ends the stream. A
// stream cut before message_stop, a bad message or a chunk that is not a
// Messages event is a read error, which aborts the caller's connection.
func claudeStream(body io.ReadCloser) io.ReadCloser {
	events := newEventReader(body, maxEventMessage)
	done, stopped := false, false
	var out []byte
	return chat.NewStream(body, func() ([]byte, error) {
		out = out[:0]
		if done {
			return nil, io.EOF
		}
		m, err := events.Next()
		if err == io.EOF {
			if !stopped {
				return nil, errStreamCut
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
		switch m.header(":message-type") {
		case "event":
		case "exception", "error":
			done = true
			kind := m.header(":exception-type")
			var e struct {
				Message string `json:"message"`
			}
			json.Unmarshal(m.payload, &e)
			if e.Message == "" {
				e.Message = "bedrock's stream failed: " + errorKind(kind)
			}
			status := exceptionStatus(kind)
			b := messages.ErrorBody(status, errorType(status), errorKind(kind), "", e.Message)
			out = append(append(append(out, "event: error\ndata: "...), b...), "\n\n"...)
			return out, io.EOF
		default:
			return nil, nil
		}
		if m.header(":event-type") != "chunk" {
			return nil, nil
		}
		var c struct {
			Bytes []byte `json:"bytes"` // base64 in JSON
		}
		var ev struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.payload, &c) != nil || json.Unmarshal(c.Bytes, &ev) != nil || ev.Type == "" {
			return nil, errors.New("gateway: bedrock sent a chunk that is not a Messages event")
		}
		stopped = stopped || ev.Type == "message_stop"
		out = append(append(append(append(out, "event: "...), ev.Type...), "\ndata: "...), c.Bytes...)
		return append(out, "\n\n"...), nil
	})
}
