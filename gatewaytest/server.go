package gatewaytest

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Epoch is the Unix time, in seconds, of the default clock of a [Server]:
// every timestamp it writes (created, created_at, finished_at, ...) is
// derived from it until [Server.SetClock] installs another clock, so outputs
// are deterministic.
const Epoch = 1700000000

// maxBody bounds the request bodies the server buffers (every body except a
// multipart upload to POST /v1/files, which is streamed).
const maxBody = 64 << 20

// Server is a fake OpenAI-compatible model provider listening on a loopback
// address, in the spirit of [httptest.Server]. Create one with [NewServer]
// and point a virtual key's base URL, a custom host or an OpenAI client at
// [Server.URL]; stop it with [Server.Close].
//
// It serves:
//
//	POST /v1/completions                     text completions, streamed or not
//	POST /v1/chat/completions                chat completions, streamed or not
//	POST /v1/embeddings                      deterministic embeddings
//	GET  /v1/models, /v1/models/{model}      a fixed model list
//	POST /v1/fine_tuning/jobs                create a job (status validating_files)
//	GET  /v1/fine_tuning/jobs?after=&limit=  list jobs, newest first
//	GET  /v1/fine_tuning/jobs/{id}           retrieve a job
//	POST /v1/fine_tuning/jobs/{id}/cancel    cancel a job
//	POST /v1/files                           multipart upload (file, purpose)
//	GET  /v1/files?purpose=                  list files, newest first
//	GET  /v1/files/{id}                      retrieve a file
//	POST /v1/messages                        Anthropic messages, streamed or not
//	POST /v1/messages/count_tokens           Anthropic token count
//	POST /v1/responses                       OpenAI responses, streamed or not
//	GET  /v1/responses/{id}                  retrieve a stored response
//	DELETE /v1/responses/{id}                delete a stored response
//	GET  /v1/responses/{id}/input_items      list a response's input items
//
// Every other method and path answers 404 with an OpenAI error body, as
// OpenAI does, so pass-through tests can see a provider's own 404. Errors are
// OpenAI-shaped: {"error":{"message","type","param","code"}}, all four keys
// present, except on /v1/messages and the paths below it, where every error
// (404, 401 and scripted statuses included) is Anthropic-shaped:
// {"type":"error","error":{"type","message"}}.
//
// Anthropic messages follow api.anthropic.com: a request without an
// anthropic-version header gets 400; max_tokens is required; the answer is a
// text block with [CompletionText] of the last user message (its text blocks
// and tool_result contents), preceded by a thinking block with
// [ThinkingText] and a signature when "thinking" is enabled or adaptive.
// A thinking block sent back in a later request must carry the signature the
// server gave it, and a tool_result must answer a tool_use of the previous
// assistant message, or the request gets 400, as Anthropic does. When the
// request has tools, the answer also calls the first tool whose name the
// last user message's text contains as a whole word (tool_choice "any"
// calls the first tool, "tool" the named one, "none" none), with stop_reason
// "tool_use"; its input gives each required property of the tool's schema a
// value of its type (see the tool rule below). stop_sequences cut the text
// before the first match and max_tokens keeps that many pieces of it (no tool
// is called then). Streams send message_start, then for each block
// content_block_start, content_block_delta events and content_block_stop
// (a ping follows the first block start), then message_delta and
// message_stop. Usage counts the pieces of every text in the tools, system
// and messages; output tokens are the text, thinking and input deltas. When
// a block carries cache_control, the prefix up to the last such block (in
// the order tools, system, messages) is a cached prefix: the first request
// with a given prefix reports it as cache_creation_input_tokens, later ones
// as cache_read_input_tokens, and input_tokens counts the rest.
//
// OpenAI responses keep the request's input items (with ids) and output in
// the server's memory unless "store" is false, so previous_response_id,
// GET, DELETE and input_items work on them; an unknown previous_response_id
// gets 400 (code "previous_response_not_found"), and a function_call_output
// whose call_id is not among the conversation's function calls gets 400.
// The output is a message with [CompletionText] of the last user message or
// function_call_output of the input and, when the request's function tools
// and tool_choice call for one by the same rule as Anthropic messages, a
// function_call item. max_output_tokens keeps that many pieces and makes the
// response "incomplete". Streams send response.created,
// response.in_progress, then response.output_item.added,
// response.content_part.added, response.output_text.delta events,
// response.output_text.done, response.content_part.done and
// response.output_item.done for the message, then response.output_item.added,
// response.function_call_arguments.delta events,
// response.function_call_arguments.done and response.output_item.done for a
// call, and response.completed (or response.incomplete); every event has a
// sequence_number counting from 0. Usage counts the pieces of every text in
// the instructions, tool names and conversation; the history carried over by
// previous_response_id is reported as cached tokens.
//
// The tool rule: a tool is called with a JSON object giving each property
// the tool's JSON schema lists as required, in order, the first value of its
// enum, or else the property's name for a string, 1 for a number or
// integer, true for a boolean, [] for an array, {} for an object and null
// for anything else. The arguments stream in pieces cut after each comma.
// Ids are deterministic: "msg_000001", "toolu_000001", "resp_000001",
// "fc_000001", "call_000001", ...
//
// Every request is recorded (see [Server.Requests] and [Server.Count]) before
// anything else happens, then checked against [Server.RequireToken], then
// answered by the next scripted [Response] for its path (see [Server.Script]),
// or else by the behaviour above.
//
// All methods are safe for concurrent use, including while requests are in
// flight. The zero value is not usable; use [NewServer].
type Server struct {
	// URL is the base URL of the fake provider, ending in "/v1", for example
	// "http://127.0.0.1:41234/v1". It is set by NewServer or Start and then
	// never changes; it is empty while the server is unstarted.
	URL string

	ts        *httptest.Server
	mux       *http.ServeMux
	closed    chan struct{} // closed by Close to release held handlers
	closeOnce sync.Once

	mu       sync.Mutex // guards every field below
	now      func() time.Time
	token    string
	requests []Request
	counts   map[string]int
	scripts  map[string][]Response
	gates    map[string][]*StreamGate
	seq      map[string]int
	jobs     []*FineTuningJob // in creation order, oldest first
	files    []*File          // in creation order, oldest first

	promptCache map[string]bool            // cached Messages prefixes, by key
	responses   map[string]*storedResponse // stored Responses, by id
}

// Request is the record of one request the [Server] received.
type Request struct {
	// Method is the HTTP method, e.g. "POST".
	Method string
	// Path is the URL path as received, e.g. "/v1/chat/completions".
	Path string
	// RawQuery is the encoded query without the '?', e.g. "limit=2&after=ftjob-000003".
	RawQuery string
	// Header is a copy of the request headers, Authorization included.
	Header http.Header
	// Body is the request body as received. It is nil for multipart uploads
	// to POST /v1/files, which the server streams instead of buffering.
	Body []byte
}

// NewServer starts and returns a new fake provider on a loopback address.
// The caller should call Close when finished, typically with t.Cleanup.
// It panics, like [httptest.NewServer], if it cannot listen.
func NewServer() *Server {
	s := NewUnstartedServer()
	s.Start()
	return s
}

// NewUnstartedServer returns a fake provider that does not listen yet: call
// Start to listen, or use it directly as an [http.Handler] with no network at
// all, for example with httptest.NewRecorder inside a testing/synctest
// bubble, where a listening server would keep fake time from advancing.
// The caller should call Close when finished.
func NewUnstartedServer() *Server {
	s := &Server{
		closed:  make(chan struct{}),
		now:     func() time.Time { return time.Unix(Epoch, 0) },
		counts:  map[string]int{},
		scripts: map[string][]Response{},
		gates:   map[string][]*StreamGate{},
		seq:     map[string]int{},

		promptCache: map[string]bool{},
		responses:   map[string]*storedResponse{},
	}
	s.mux = s.routes()
	return s
}

// Start starts a server returned by NewUnstartedServer on a loopback address
// and sets URL. It must not run concurrently with other methods. It panics
// if the server was already started or closed, or if it cannot listen.
func (s *Server) Start() {
	if s.ts != nil {
		panic("gatewaytest: Server already started")
	}
	select {
	case <-s.closed:
		panic("gatewaytest: Server already closed")
	default:
	}
	s.ts = httptest.NewServer(s)
	s.URL = s.ts.URL + "/v1"
}

// Close releases every held stream and scripted delay, then, if the server
// was started, shuts it down and blocks until all outstanding requests have
// completed. Held streams and delayed responses end by aborting their
// connection. Close may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	if s.ts != nil {
		s.ts.Close()
	}
}

// SetClock replaces the clock the server reads for every timestamp it
// writes. The default clock always returns time.Unix(Epoch, 0). now must be
// safe for concurrent use; it is called without the server's lock held.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// RequireToken makes every later request need the header
// "Authorization: Bearer <token>"; a missing or different token gets 401 with
// an OpenAI error body (code "invalid_api_key" for a wrong token, null for a
// missing one), the request still being recorded. On /v1/messages and the
// paths below it the token must come as "x-api-key: <token>", as Anthropic
// requires, and a refusal is an Anthropic authentication_error. The comparison is in
// constant time. An empty token turns the check off, which is the default.
func (s *Server) RequireToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// Requests returns a copy of the record of every request received so far, in
// arrival order. A request is recorded when it arrives, before it is
// answered, so a stream still in flight is already listed.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		out[i] = r
	}
	return out
}

// Count returns how many requests have arrived for path (any method), e.g.
// Count("/v1/completions"). Requests refused by RequireToken are counted.
func (s *Server) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[path]
}

func (s *Server) clock() time.Time {
	s.mu.Lock()
	now := s.now
	s.mu.Unlock()
	return now()
}

// nextID returns prefix followed by a per-prefix sequence number, so ids are
// deterministic: "ftjob-000001", "ftjob-000002", ...
func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextIDLocked(prefix)
}

func (s *Server) nextIDLocked(prefix string) string {
	s.seq[prefix]++
	return fmt.Sprintf("%s%06d", prefix, s.seq[prefix])
}

// ServeHTTP records r and answers it as described on [Server]. It lets an
// unstarted server be used as a handler without a network.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{
		Method:   r.Method,
		Path:     r.URL.Path,
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Clone(),
	}
	streamed := r.Method == http.MethodPost && r.URL.Path == "/v1/files"
	var tooLarge bool
	if !streamed {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			// The client went away mid-body; nothing useful can be answered.
			panic(http.ErrAbortHandler)
		}
		tooLarge = len(body) > maxBody
		rec.Body = body
		r.Body = io.NopCloser(bytes.NewReader(body))
	}

	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.counts[rec.Path]++
	token := s.token
	s.mu.Unlock()

	if anthropicPath(rec.Path) {
		if !checkAnthropic(w, r, token, tooLarge) {
			return
		}
	} else {
		if token != "" {
			if code, msg, ok := checkToken(r.Header.Get("Authorization"), token); !ok {
				writeError(w, http.StatusUnauthorized, "invalid_request_error", msg, "", code)
				return
			}
		}
		if tooLarge {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error",
				"Request body too large.", "", "payload_too_large")
			return
		}
	}

	s.mu.Lock()
	var resp *Response
	if q := s.scripts[rec.Path]; len(q) > 0 {
		resp = &q[0]
		s.scripts[rec.Path] = q[1:]
	}
	s.mu.Unlock()
	if resp != nil {
		s.serveScripted(w, r, resp)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func checkToken(auth, token string) (code, message string, ok bool) {
	got, found := strings.CutPrefix(auth, "Bearer ")
	if !found || got == "" {
		return "", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", false
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
		return "invalid_api_key", "Incorrect API key provided.", false
	}
	return "", "", true
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", s.handleCompletions)
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /v1/models/{model}", s.handleModel)
	s.fineTuningRoutes(mux)
	s.fileRoutes(mux)
	s.messagesRoutes(mux)
	s.responsesRoutes(mux)
	// A catch-all without a method also catches wrong methods on the paths
	// above, so they get OpenAI's 404 rather than the mux's plain-text 405.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if anthropicPath(r.URL.Path) {
			writeAnthropicError(w, http.StatusNotFound, "not_found_error", "Not Found")
			return
		}
		writeError(w, http.StatusNotFound, "invalid_request_error",
			fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "", "")
	})
	return mux
}

// writeJSON writes v as a JSON response with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only the package's own wire types are written; they always marshal.
		panic("gatewaytest: marshal response: " + err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// errorJSON returns an OpenAI error body; empty param and code are written as null.
func errorJSON(typ, message, param, code string) []byte {
	e := errorBody{Error: apiError{Message: message, Type: typ}}
	if param != "" {
		e.Error.Param = &param
	}
	if code != "" {
		e.Error.Code = &code
	}
	b, _ := json.Marshal(e) // strings and pointers to strings always marshal
	return append(b, '\n')
}

func writeError(w http.ResponseWriter, status int, typ, message, param, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(errorJSON(typ, message, param, code))
}

// decodeBody decodes the JSON request body into v, answering 400 when it is
// not valid JSON. It reports whether decoding succeeded.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		msg := "We could not parse the JSON body of your request."
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			writeError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("Invalid type for '%s'.", te.Field), te.Field, "invalid_type")
			return false
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", msg, "", "")
		return false
	}
	return true
}

// wait blocks for d and then until release is closed (either may be zero),
// reporting false when the request's context ends or the server closes first.
func (s *Server) wait(ctx context.Context, d time.Duration, release <-chan struct{}) bool {
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		case <-s.closed:
			return false
		}
	}
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return false
		case <-s.closed:
			return false
		}
	}
	return true
}
