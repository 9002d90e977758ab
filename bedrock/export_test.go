package bedrock

import (
	"io"

	"github.com/modelgateway/gateway/internal/chat"
)

// Exported for the tests of package bedrock_test.
var (
	ErrEventCRC     = errEventCRC
	ErrEventFraming = errEventFraming
)

// Event is a decoded event stream message: its string headers and payload.
type Event struct {
	Headers map[string]string
	Payload []byte
}

// ReadEvents decodes the messages of an event stream whose messages may be
// at most max bytes long, until the first error (io.EOF at a clean end).
func ReadEvents(r io.Reader, max int) ([]Event, error) {
	d := newEventReader(r, max)
	var out []Event
	for {
		m, err := d.Next()
		if err != nil {
			return out, err
		}
		e := Event{Headers: map[string]string{}, Payload: append([]byte{}, m.payload...)}
		for _, h := range m.headers {
			e.Headers[h.name] = h.value
		}
		out = append(out, e)
	}
}

// ConverseStream translates a ConverseStream body as the answer to a
// streamed request for model "m" asking for usage.
func ConverseStream(body io.ReadCloser) io.ReadCloser {
	req := &chat.Request{Model: "m", Stream: true, StreamOptions: &chat.StreamOptions{IncludeUsage: true}}
	return converseStream(req, "chatcmpl-test", body)
}

// ClaudeStream decodes an InvokeModelWithResponseStream body of a Claude
// model into the Messages event stream.
func ClaudeStream(body io.ReadCloser) io.ReadCloser { return claudeStream(body) }
