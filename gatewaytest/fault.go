package gatewaytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Response scripts one answer of the [Server]; see [Server.Script]. The zero
// value answers 200 with an empty body.
//
// A scripted response replaces the server's normal behaviour unless Serve is
// set, in which case only Header, Delay, Release and Abort apply and the
// normal handler writes the rest.
type Response struct {
	// Status is the status code; 0 means 200. Ignored when Serve is set.
	Status int

	// Header is added to the response headers, e.g. "Retry-After": {"1"} or
	// "Retry-After-Ms": {"20"}. Content-Type defaults to application/json,
	// or text/event-stream when Events is set.
	Header http.Header

	// Body is written as is. When Body is empty, Events is nil and Status is
	// 400 or more, an OpenAI error body matching the status is written
	// (e.g. 429: type "requests", code "rate_limit_exceeded"; 5xx: type
	// "server_error"), or on /v1/messages and the paths below it an
	// Anthropic error body (e.g. 429: "rate_limit_error"; 529:
	// "overloaded_error"). Ignored when Serve or Events is set.
	Body string

	// Events, when non-nil, makes the response a server-sent event stream:
	// each element is a data payload (usually JSON, without the "data: "
	// prefix) written as "data: <payload>\n\n" and flushed on its own,
	// followed by "data: [DONE]\n\n" unless Abort is set. On the Anthropic
	// and Responses paths (/v1/messages, /v1/responses and the paths below
	// them) each event is preceded by an "event: <type>" line naming the
	// payload's JSON "type" member, and no "data: [DONE]" follows, as those
	// APIs do. Stream gates set with [Server.HoldStream] apply. Ignored when
	// Serve is set.
	Events []string

	// Delay, when positive, is waited before anything is written. It uses a
	// timer, so it runs on fake time in a testing/synctest bubble that also
	// created the server.
	Delay time.Duration

	// Release, when non-nil, is waited for (after Delay) before anything is
	// written: close it to let the response go. A test controls exactly when
	// the response headers leave without sleeping. If the request is
	// cancelled or the server closes first, the connection is aborted.
	Release <-chan struct{}

	// Serve makes the server answer with its normal behaviour, after Header,
	// Delay and Release have applied. Useful with Abort and AbortAfter to
	// break a real stream, or with Release to slow down a real answer.
	Serve bool

	// Abort ends the response by aborting the connection
	// (panic(http.ErrAbortHandler)) instead of finishing it, so the client
	// sees an unexpected EOF or a reset. Without Serve, the connection is
	// aborted after Body or Events has been written and flushed (and before
	// "data: [DONE]"). With Serve, a stream is aborted after AbortAfter
	// events have been flushed, and a non-streamed answer is aborted after
	// its headers, before its body.
	Abort bool

	// AbortAfter is the number of events a served stream writes before it
	// is aborted; used only with Serve and Abort. 0 aborts right after the
	// headers have been flushed.
	AbortAfter int
}

// Script queues responses for the next requests to path, in order: the
// first later request to path gets responses[0], the next responses[1], and
// so on; once they are used up, path gets its normal behaviour again. path
// is the URL path as received, e.g. "/v1/chat/completions"; the method is
// not considered. Requests refused by RequireToken, or sent to an Anthropic
// path without an anthropic-version header, do not use up a script.
// Script may be called while requests are in flight; calls add to the queue.
func (s *Server) Script(path string, responses ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range responses {
		r.Header = r.Header.Clone()
		r.Events = slices.Clone(r.Events) // keeps nil nil and empty empty
		s.scripts[path] = append(s.scripts[path], r)
	}
}

// StreamGate holds one server-sent event stream after a given number of
// events, until the test releases it. It proves that a proxy in front of the
// server delivers events incrementally: the client can read the events
// written before the gate while the server is still holding the rest.
// Create one with [Server.HoldStream]. Its methods are safe for concurrent use.
type StreamGate struct {
	after       int
	held        chan struct{}
	release     chan struct{}
	heldOnce    sync.Once
	releaseOnce sync.Once
}

// HoldStream installs a gate on the next event stream served for path (a
// streamed completion, chat completion, message or response, or a scripted
// Response with Events): after afterEvents events have been written and flushed (0: right
// after the headers), the handler waits until [StreamGate.Release] is called,
// the request is cancelled, or the server is closed (the last two abort the
// connection). Several calls for the same path gate successive streams.
// A gate whose stream has fewer than afterEvents events is never reached.
// HoldStream panics if afterEvents is negative.
func (s *Server) HoldStream(path string, afterEvents int) *StreamGate {
	if afterEvents < 0 {
		panic("gatewaytest: HoldStream: negative afterEvents")
	}
	g := &StreamGate{after: afterEvents, held: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gates[path] = append(s.gates[path], g)
	return g
}

// Held returns a channel that is closed once the stream has reached the gate
// and is waiting: the events before the gate have been flushed to the
// connection.
func (g *StreamGate) Held() <-chan struct{} { return g.held }

// Release lets the held stream continue, or lets it pass without stopping if
// it has not reached the gate yet. Release may be called more than once.
func (g *StreamGate) Release() { g.releaseOnce.Do(func() { close(g.release) }) }

func (s *Server) popGate(path string) *StreamGate {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.gates[path]
	if len(q) == 0 {
		return nil
	}
	s.gates[path] = q[1:]
	return q[0]
}

// faultKey is the context key of the *Response that a served request must
// honour (Serve with Abort).
type faultKey struct{}

func faultFrom(ctx context.Context) *Response {
	r, _ := ctx.Value(faultKey{}).(*Response)
	return r
}

func (s *Server) serveScripted(w http.ResponseWriter, r *http.Request, resp *Response) {
	if !s.wait(r.Context(), resp.Delay, resp.Release) {
		panic(http.ErrAbortHandler)
	}
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = append([]string(nil), v...)
	}
	if resp.Serve {
		s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), faultKey{}, resp)))
		return
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	if resp.Events != nil {
		events := make([][]byte, len(resp.Events))
		for i, e := range resp.Events {
			events[i] = []byte(e)
		}
		abortAfter := -1
		if resp.Abort {
			abortAfter = len(events)
		}
		s.writeStream(w, r, status, events, abortAfter)
		return
	}
	body := resp.Body
	if body == "" && status >= 400 {
		if anthropicPath(r.URL.Path) {
			body = string(defaultAnthropicErrorBody(status))
		} else {
			body = string(defaultErrorBody(status))
		}
	}
	if h.Get("Content-Type") == "" && body != "" {
		h.Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
	if resp.Abort {
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
}

func defaultErrorBody(status int) []byte {
	msg := http.StatusText(status)
	if msg == "" {
		msg = fmt.Sprintf("status %d", status)
	}
	switch {
	case status == http.StatusTooManyRequests:
		return errorJSON("requests", "Rate limit reached. Please try again later.", "", "rate_limit_exceeded")
	case status == http.StatusUnauthorized:
		return errorJSON("invalid_request_error", "Incorrect API key provided.", "", "invalid_api_key")
	case status == http.StatusNotFound:
		return errorJSON("invalid_request_error", msg, "", "")
	case status >= 500:
		return errorJSON("server_error", "The server had an error while processing your request. ("+msg+")", "", "")
	default:
		return errorJSON("invalid_request_error", msg, "", "")
	}
}

// writeStream writes events as a server-sent event stream, flushing the
// headers and then every event on its own, honouring the next stream gate of
// the path and, when abortAfter >= 0, aborting the connection after that many
// events instead of writing "data: [DONE]".
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, status int, events [][]byte, abortAfter int) {
	gate := s.popGate(r.URL.Path)
	named := namedEventPath(r.URL.Path)
	if f := faultFrom(r.Context()); f != nil && f.Abort {
		abortAfter = max(f.AbortAfter, 0)
	}
	h := w.Header()
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/event-stream")
	}
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	flush := func() {
		if err := rc.Flush(); err != nil {
			panic(http.ErrAbortHandler)
		}
	}
	flush()
	for i := 0; ; i++ {
		if gate != nil && gate.after == i {
			gate.heldOnce.Do(func() { close(gate.held) })
			if !s.wait(r.Context(), 0, gate.release) {
				panic(http.ErrAbortHandler)
			}
		}
		if abortAfter == i {
			panic(http.ErrAbortHandler)
		}
		if i == len(events) {
			break
		}
		if named {
			if name := eventType(events[i]); name != "" {
				fmt.Fprintf(w, "event: %s\n", name)
			}
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", events[i]); err != nil {
			panic(http.ErrAbortHandler)
		}
		flush()
	}
	if !named {
		io.WriteString(w, "data: [DONE]\n\n")
		flush()
	}
}

// namedEventPath reports whether streams on path follow Anthropic's and the
// Responses API's framing: every event carries an "event:" line naming its
// type, and no "data: [DONE]" ends the stream.
func namedEventPath(path string) bool {
	return anthropicPath(path) || path == "/v1/responses" || strings.HasPrefix(path, "/v1/responses/")
}

// eventType returns the "type" member of a JSON event payload, or "" when the
// payload is not a JSON object with a string type that fits on one line.
func eventType(payload []byte) string {
	var v struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(payload, &v) != nil || strings.ContainsAny(v.Type, "\r\n") {
		return ""
	}
	return v.Type
}

// writeOK writes v as a 200 JSON answer of the normal behaviour, or, when
// the request's scripted Response says Serve and Abort, writes and flushes
// the headers and then aborts the connection before the body.
func writeOK(w http.ResponseWriter, r *http.Request, v any) {
	if f := faultFrom(r.Context()); f != nil && f.Abort {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	writeJSON(w, http.StatusOK, v)
}
