package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
)

// StreamCompletion creates a streamed completion through the gateway: req
// is sent with stream true, and the sequence yields each event's
// Completion as the provider sends it, ending at its data: [DONE]. An error
// is yielded once, as the last value: an *Error for an error answer (the
// request then produced no event), or a transport or decoding error
// mid-stream. Stopping the iteration early cancels the call and waits for
// it to end. The sequence is single-use; ranging over it again makes a new
// call.
func (g *Gateway) StreamCompletion(ctx context.Context, req *CompletionRequest, opts ...CallOption) iter.Seq2[*Completion, error] {
	return func(yield func(*Completion, error) bool) {
		r := *req
		stream := true
		r.Stream = &stream
		body, err := json.Marshal(r)
		if err != nil {
			yield(nil, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cl := g.newCall(ctx, http.MethodPost, "/completions", nil, body, "text/event-stream", opts)
		pr, pw := io.Pipe()
		w := &pipeResponse{header: make(http.Header), pw: pw, started: make(chan struct{})}
		done := make(chan struct{})
		var callErr error // set before done is closed
		go func() {
			defer close(done)
			callErr = g.serveCall(w, cl.req)
			w.start(0) // no-op if the response started
			pw.CloseWithError(callErr)
		}()
		defer func() {
			pr.CloseWithError(errStreamStopped)
			cancel()
			<-done
		}()
		<-w.started
		if w.status == 0 {
			<-done
			yield(nil, noResponse(ctx, callErr))
			return
		}
		if cl.header != nil {
			*cl.header = w.sent
		}
		if w.status < 200 || w.status > 299 {
			b, _ := io.ReadAll(io.LimitReader(pr, maxErrorBody))
			yield(nil, responseError(w.status, w.sent, b))
			return
		}
		if !strings.HasPrefix(w.sent.Get("Content-Type"), "text/event-stream") {
			// The provider answered with one object instead of a stream.
			yield(decodeCompletion(pr, g.opts.MaxBodyBytes))
			return
		}
		for c, err := range readCompletionEvents(pr, g.opts.MaxBodyBytes) {
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

var errStreamStopped = errors.New("gateway: the caller stopped reading the stream")

// readCompletionEvents reads server-sent events from r, yielding the
// Completion in each data field until data: [DONE]. An event whose data is
// an OpenAI error body is yielded as an *Error; a stream ending without
// [DONE] yields an error wrapping io.ErrUnexpectedEOF, since it was cut.
// An event whose data, all its lines together, is longer than maxEvent
// bytes is an error wrapping ErrInvalidResponse.
func readCompletionEvents(r io.Reader, maxEvent int64) iter.Seq2[*Completion, error] {
	return func(yield func(*Completion, error) bool) {
		sc := bufio.NewScanner(r)
		max := int(min(maxEvent, 1<<30))
		sc.Buffer(make([]byte, 0, min(max, 64<<10)), max)
		var data []byte
		dispatch := func() bool {
			defer func() { data = data[:0] }()
			d := bytes.TrimSpace(data)
			if len(d) == 0 {
				return true
			}
			if bytes.Contains(d, []byte(`"error"`)) {
				// An error object in place of a completion, however the
				// provider spaced it.
				var eb struct {
					Error *errorFields `json:"error"`
				}
				if json.Unmarshal(d, &eb) == nil && eb.Error != nil {
					yield(nil, errorFromBody(http.StatusOK, nil, *eb.Error))
					return false
				}
			}
			var c Completion
			if err := json.Unmarshal(d, &c); err != nil {
				yield(nil, &invalidResponse{err})
				return false
			}
			if err := c.Validate(); err != nil {
				yield(nil, &invalidResponse{err})
				return false
			}
			return yield(&c, nil)
		}
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) == 0 {
				if !dispatch() {
					return
				}
				continue
			}
			field, value, _ := bytes.Cut(line, []byte(":"))
			if string(field) != "data" {
				continue // comments, event names, ids and retry hints
			}
			value = bytes.TrimPrefix(value, []byte(" "))
			if len(data) == 0 && string(value) == "[DONE]" {
				return
			}
			if len(data) > 0 {
				data = append(data, '\n')
			}
			if len(data)+len(value) > max {
				yield(nil, &invalidResponse{fmt.Errorf("gateway: an event is longer than %d bytes", max)})
				return
			}
			data = append(data, value...)
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				// One data line alone is longer than an event may be.
				err = &invalidResponse{fmt.Errorf("gateway: an event is longer than %d bytes", max)}
			}
			yield(nil, err)
			return
		}
		if dispatch() {
			yield(nil, fmt.Errorf("gateway: the stream ended without data: [DONE]: %w", io.ErrUnexpectedEOF))
		}
	}
}
