package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"

	"github.com/modelgateway/gateway/internal/translate/messages"
)

// Hooks checks data-plane requests and their answers for a product
// (Options.Hooks): guardrails that refuse, rewrite or mark what goes to a
// provider and what comes back. The gateway calls it only for a request
// that has guardrails attached (HookCall.Input, HookCall.Output), in this
// order: the defaults of the caller's workspace (Workspace, found through
// Options.Workspaces), then those of the caller's key (APIKey), then the
// config's top level, then the config nodes down to the target. A
// guardrail attached more than once to a phase is the product's to run
// once.
//
// Before is called once, after the request was routed and before its
// first attempt, with the request body; it may replace HookCall.Body
// (redacted personal data), and the rewritten body is what every attempt
// and the cache see. After is called once the answer is complete, with its
// body, unless no output guardrail is attached; it is not called for an
// answer that is not a 2xx, a request refused before, or an answer cut
// short. A phase that sets HookCall.Denied refuses the request: the caller
// gets a 446 hooks_failed error with the hook results (on the Messages
// route, Anthropic-shaped like its other errors, hook_results beside
// error). A check that failed without denying (HookCall.Failed) makes a
// 2xx answer's status 246. Both phases add their results to JSON answers
// (chat completions, Messages, Responses) as the top-level member
// hook_results, and to streams as an extra event named hook_results: on a
// stream held for the output checks, before its last event ([DONE],
// message_stop, response.completed); on a stream the checks only observe,
// after it. On Messages and Responses streams the event's data is
// {"type":"hook_results","hook_results":{…}}, as their SDKs skip event
// types they do not know.
//
// An error from either method is answered as it is when it is an *Error
// (a 400 naming the guardrail a config attached but the workspace lacks,
// say), and as a 500 otherwise. r's context carries the caller's Identity,
// RequestOptions and trace id; neither method may read r.Body. Hooks must
// be safe for concurrent use.
type Hooks interface {
	Before(r *http.Request, c *HookCall) error
	After(r *http.Request, c *HookCall) error
}

// HookRef is a guardrail a config attaches to a request: a guardrail id,
// as a JSON string, or an inline guardrail, as a JSON object. Param and
// Path say where it was attached, for an error that names it
// (x-gateway-config, "targets[1].input_guardrails[0]").
type HookRef struct {
	Guardrail   json.RawMessage
	Param, Path string
}

// HookCall is one request's exchange with Options.Hooks, shared by its two
// phases. The gateway sets Input, Output, Body and Stream; the hooks set
// the rest.
type HookCall struct {
	// Input and Output are the guardrails attached to the request, run
	// before the provider call and on its answer: the workspace's and the
	// key's defaults, then the config's top level, then the target's.
	Input, Output []HookRef

	// Body is the request body during Before, which Before may replace; during
	// After it is the answer's body, which After may replace unless the
	// answer is a stream. A stream's body is its server-sent events.
	Body   []byte
	Stream bool

	// Buffer, set by Before, holds a streamed answer until After has
	// checked it; by default a stream goes to the caller as it comes and
	// After only observes it.
	Buffer bool

	// Denied says a guardrail refuses the request; Failed that a check
	// failed without refusing it. A phase sets them and never clears them.
	Denied, Failed bool

	// BeforeResults and AfterResults are the hook results of each phase,
	// JSON arrays; nil when the phase ran no guardrail.
	BeforeResults, AfterResults json.RawMessage

	// Kept, during After on a stream, is the JSON the gateway keeps of the
	// answer past the request (the response of a Responses stream it
	// translated, stored for GET /responses/{id} and
	// previous_response_id); nil when it keeps none. After may replace it
	// as it replaces a JSON answer's Body, so that what is kept has the
	// redactions a whole answer would have had. The gateway keeps nothing
	// of an answer a guardrail denied.
	Kept []byte

	// State is the hooks' own, kept from Before to After.
	State any
}

// Hook outcomes, as RequestLog.Guardrails records them.
const (
	hooksPassed = "passed" // every check passed
	hooksFailed = "failed" // a check failed, and none denied: the answer's status is 246
	hooksDenied = "denied" // a guardrail refused the request with a 446
)

// Statuses of hooked requests.
const (
	statusHooksFailed = 246 // a 2xx answer to a request a check failed without refusing
	statusHooksDenied = 446 // a guardrail refused the request or its answer
)

// hookMaxAnswer bounds the answer held for output checks, beyond
// Options.MaxBodyBytes when that is lower.
const hookMaxAnswer = 16 << 20

// executeHooked executes plan for a request with guardrails attached: in
// and out, the defaults of the caller's workspace and key, and those of
// the config. The input phase runs first, then the plan, its answer going
// through a hookWriter.
func (g *Gateway) executeHooked(w http.ResponseWriter, r *http.Request, st *requestState, plan *planNode, body []byte, in, out []HookRef) result {
	param := HeaderConfig
	if !plan.hooked {
		param = HeaderAPIKey
	}
	if g.opts.Hooks == nil {
		if plan.hooked {
			g.fail(w, r, "", badRequest(CodeInvalidConfig, HeaderConfig, "the config attaches guardrails, which this gateway does not check"))
		} else {
			// The key's or workspace's defaults were written to a
			// store this gateway shares with one that checks them:
			// fail closed rather than let the requests past them.
			g.fail(w, r, "hooks", errors.New("gateway: the caller's key or workspace attaches guardrails, but Options.Hooks is nil"))
		}
		return result{own: true}
	}
	if r.Header.Get("Upgrade") != "" {
		// Guardrails read a request and its answer, which a switched
		// protocol has neither of.
		g.fail(w, r, "", badRequest(CodeInvalidConfig, param, "a request with guardrails attached cannot be a protocol upgrade"))
		return result{own: true}
	}
	c := &HookCall{Input: concatRefs(in, plan.input), Output: concatRefs(out, plan.output)}
	body, ok := g.runBefore(w, r, st, c, body)
	if !ok {
		return result{own: true}
	}
	hw := g.newHookWriter(w, r, st, c)
	st.hooks = hw
	if in := st.ingress; in != nil {
		in.hooks = hw
	}
	res := g.execute(hw, r, st, plan, body)
	hw.finish()
	return res
}

// runBefore runs the input phase of c on the request body, reading it if
// no stage did. It returns the body to send and whether the request goes
// on; when not, the caller has its answer.
func (g *Gateway) runBefore(w http.ResponseWriter, r *http.Request, st *requestState, c *HookCall, body []byte) ([]byte, bool) {
	if body == nil {
		// Read whatever its framing or type: a body the input checks
		// cannot read is theirs to refuse, never one that slips past them.
		b, err := readBody(&st.rw, r, g.opts.MaxBodyBytes)
		if err != nil {
			g.fail(w, r, "", errorFor(err))
			return nil, false
		}
		body = b
		st.body.read = b
	}
	// The answer is read, to check it or add the results to it: ask the
	// transport for the encoding it decodes itself.
	r.Header.Del("Accept-Encoding")
	if len(c.Input) == 0 && len(c.Output) == 0 {
		return body, true
	}
	c.Body = body
	if err := g.opts.Hooks.Before(r, c); err != nil {
		g.fail(w, r, "hooks", err)
		return nil, false
	}
	g.noteHooks(st, c)
	if c.Denied {
		writeDenied(w, r, c)
		return nil, false
	}
	if !bytes.Equal(c.Body, body) {
		st.body.read = c.Body
		st.keepRewritten(c.Body)
	}
	return c.Body, true
}

// keepRewritten makes body, the request as the hooks rewrote it (personal
// data redacted), the one kept for the request log (Options.LogBodies):
// what was redacted before the provider saw it is not logged either.
func (st *requestState) keepRewritten(body []byte) {
	if st.bodies != nil && !st.control {
		st.bodies.req = st.bodies.req[:0]
		st.bodies.add(&st.bodies.req, body)
	}
}

// target runs the input guardrails the config attaches to t on body, the
// request as t gets it, and makes its output guardrails those of the
// answer. It returns the body to send t and whether the request goes on;
// when not, the caller has its answer.
func (w *hookWriter) target(t *routedTarget, body []byte) ([]byte, bool) {
	c := w.c
	c.Output = append(w.top[:len(w.top):len(w.top)], t.hookOut...)
	if len(t.hookIn) == 0 && len(t.hookOut) == 0 {
		return body, true
	}
	tc := &HookCall{Input: t.hookIn, Output: c.Output, Body: body, State: c.State}
	err := w.g.opts.Hooks.Before(w.r, tc)
	if err != nil {
		w.g.fail(w, w.r, "hooks", err)
		return nil, false
	}
	c.BeforeResults = appendResults(c.BeforeResults, tc.BeforeResults)
	c.Denied, c.Failed, c.Buffer = c.Denied || tc.Denied, c.Failed || tc.Failed, c.Buffer || tc.Buffer
	w.g.noteHooks(w.st, c)
	if c.Denied {
		writeDenied(w, w.r, c)
		return nil, false
	}
	if !bytes.Equal(tc.Body, body) {
		w.st.keepRewritten(tc.Body)
	}
	return tc.Body, true
}

// appendResults returns the JSON arrays a and b as one.
func appendResults(a, b json.RawMessage) json.RawMessage {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	switch {
	case len(b) < 3:
		return a
	case len(a) < 3:
		return b
	}
	out := make([]byte, 0, len(a)+len(b))
	out = append(out, a[:len(a)-1]...)
	out = append(out, ',')
	return append(out, b[1:]...)
}

// noteHooks records c's outcome so far in the request log.
func (g *Gateway) noteHooks(st *requestState, c *HookCall) {
	switch {
	case c.Denied:
		st.log.Guardrails = hooksDenied
	case c.Failed:
		st.log.Guardrails = hooksFailed
	default:
		st.log.Guardrails = hooksPassed
	}
	st.log.HookResults = hookResults(c)
}

// hookResults returns the hook_results object of c.
func hookResults(c *HookCall) json.RawMessage {
	b := make([]byte, 0, 64+len(c.BeforeResults)+len(c.AfterResults))
	b = append(b, `{"before_request_hooks":`...)
	b = appendArray(b, c.BeforeResults)
	b = append(b, `,"after_request_hooks":`...)
	b = appendArray(b, c.AfterResults)
	return append(b, '}')
}

func appendArray(b, a []byte) []byte {
	if len(bytes.TrimSpace(a)) == 0 {
		return append(b, "[]"...)
	}
	return append(b, a...)
}

// writeDenied answers a request a guardrail refused: 446 with the
// OpenAI-shaped error (Anthropic-shaped on the Messages route) and the
// hook results.
func writeDenied(w http.ResponseWriter, r *http.Request, c *HookCall) {
	e := &Error{Status: statusHooksDenied, Type: "hooks_failed", Code: "guardrail_denied",
		Message: "the request was refused by a guardrail: see hook_results"}
	st := stateFrom(r.Context())
	if st != nil {
		st.log.ErrorCode = e.Code
	}
	var b []byte
	if anthropicShaped(r, st) {
		b = messages.ErrorBody(e.Status, e.Type, e.Code, e.Param, e.Message)
	} else {
		b, _ = e.MarshalJSON()
	}
	b = withMember(b, "hook_results", hookResults(c))
	h := w.Header()
	for _, k := range []string{"Content-Encoding", "Content-Length", "Etag", "Last-Modified"} {
		delete(h, k)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(e.Status)
	w.Write(append(b, '\n'))
}

// withMember returns the JSON object obj with the member name: v added at
// its end; obj itself when it is not an object.
func withMember(obj []byte, name string, v []byte) []byte {
	end := len(bytes.TrimRight(obj, " \t\r\n"))
	if end < 2 || obj[end-1] != '}' || bytes.TrimLeft(obj, " \t\r\n")[0] != '{' {
		return obj
	}
	out := make([]byte, 0, len(obj)+len(name)+len(v)+4)
	out = append(out, obj[:end-1]...)
	if len(bytes.TrimSpace(obj[:end-1])) > 1 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, name...)
	out = append(out, `":`...)
	out = append(out, v...)
	out = append(out, '}')
	return append(out, obj[end:]...)
}

// How a hookWriter handles the answer.
const (
	hookUndecided = iota
	hookPass      // not checked: written as it comes
	hookHold      // a JSON answer, held until checked
	hookObserve   // a stream, written as it comes and kept for After
	hookBuffer    // a stream, held until checked
)

// hookWriter stands between execute and the caller for a request with
// guardrails: it holds or observes the answer for After, and adds the
// hook results to it.
type hookWriter struct {
	http.ResponseWriter
	g      *Gateway
	r      *http.Request
	st     *requestState
	c      *HookCall
	mode   int
	status int
	buf    []byte
	limit  int
	over   bool      // the answer outgrew limit
	top    []HookRef // the output guardrails of the config's top level
}

func (g *Gateway) newHookWriter(w http.ResponseWriter, r *http.Request, st *requestState, c *HookCall) *hookWriter {
	limit := hookMaxAnswer
	if m := g.opts.MaxBodyBytes; m > 0 && m > int64(limit) {
		limit = int(min(m, 1<<30))
	}
	return &hookWriter{ResponseWriter: w, g: g, r: r, st: st, c: c, limit: limit, top: c.Output}
}

func (w *hookWriter) WriteHeader(code int) {
	if w.mode != hookUndecided || code < 200 {
		if w.mode == hookPass || w.mode == hookObserve || code < 200 {
			w.ResponseWriter.WriteHeader(code)
		}
		return
	}
	w.status = code
	mt, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type"))
	switch {
	case code < 200 || code > 299:
		w.mode = hookPass
	case mt == "text/event-stream" && w.c.Buffer && len(w.c.Output) > 0:
		w.mode = hookBuffer
	case mt == "text/event-stream":
		w.mode = hookObserve
	case mt == "application/json" && w.Header().Get("Content-Encoding") == "":
		w.mode = hookHold
	default:
		w.mode = hookPass
	}
	if w.mode == hookPass || w.mode == hookObserve {
		if code == http.StatusOK && w.c.Failed {
			code = statusHooksFailed
		}
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *hookWriter) Write(p []byte) (int, error) {
	if w.mode == hookUndecided {
		w.WriteHeader(http.StatusOK)
	}
	switch w.mode {
	case hookHold, hookBuffer, hookObserve:
		if len(w.buf)+len(p) > w.limit {
			w.over = true
		} else if !w.over {
			w.buf = append(w.buf, p...)
		}
		if w.mode != hookObserve {
			return len(p), nil
		}
	}
	return w.ResponseWriter.Write(p)
}

// Flush flushes what is written through; a held answer waits.
func (w *hookWriter) Flush() {
	if w.mode == hookPass || w.mode == hookObserve {
		http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap returns the underlying ResponseWriter, for http.ResponseController.
func (w *hookWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish runs the output phase on the answer execute wrote, and sends it
// with the hook results; for an answer written as it came, only the
// results follow it.
func (w *hookWriter) finish() {
	if w.mode == hookUndecided || w.mode == hookPass || w.r.Context().Err() != nil {
		return
	}
	c := w.c
	in := w.st.ingress
	if len(c.Output) > 0 {
		if w.over {
			// Too long to check: fail closed, as a check that could not
			// decide does.
			if w.mode == hookObserve {
				w.g.errLog.WarnContext(w.r.Context(), "gateway: a streamed answer outgrew what output guardrails read", "limit", w.limit)
				w.writeEvent(nil)
				return
			}
			w.g.fail(w.ResponseWriter, w.r, "", &Error{Status: http.StatusBadGateway, Type: TypeGateway, Code: "answer_too_large",
				Message: "the answer is too long for the output guardrails to check"})
			return
		}
		c.Body, c.Stream = w.buf, w.mode != hookHold
		if in != nil && c.Stream {
			c.Kept = in.held
		}
		if err := w.g.opts.Hooks.After(w.r, c); err != nil {
			if w.mode == hookObserve {
				w.g.errLog.ErrorContext(w.r.Context(), "gateway: hooks", "err", err)
				w.writeEvent(nil)
				return
			}
			w.g.fail(w.ResponseWriter, w.r, "hooks", err)
			return
		}
		w.g.noteHooks(w.st, c)
		if c.Denied && w.mode != hookObserve {
			writeDenied(w.ResponseWriter, w.r, c)
			return
		}
		if w.mode == hookHold {
			w.buf = c.Body
		}
		if in != nil && in.held != nil {
			// Kept as the caller got it: redacted, and only when no
			// guardrail denied it.
			kept := c.Kept
			if w.mode == hookHold {
				kept = c.Body
			}
			if !c.Denied {
				in.put(w.r.Context(), kept)
			}
			in.held = nil
		}
	}
	status := w.status
	if status == http.StatusOK && c.Failed {
		status = statusHooksFailed
	}
	switch w.mode {
	case hookObserve:
		w.writeEvent(nil)
	case hookHold:
		b := withMember(w.buf, "hook_results", hookResults(c))
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.ResponseWriter.WriteHeader(status)
		w.ResponseWriter.Write(b)
	case hookBuffer:
		w.Header().Del("Content-Length")
		w.ResponseWriter.WriteHeader(status)
		done := len(w.buf)
		if w.typedEvents() {
			done = lastEvent(w.buf)
		} else if i := bytes.LastIndex(w.buf, []byte("data: [DONE]")); i >= 0 {
			done = i
		}
		w.ResponseWriter.Write(w.buf[:done])
		w.writeEvent(w.buf[done:])
	}
}

// typedEvents reports whether the answer's stream is one of Anthropic
// Messages or OpenAI Responses, whose events each carry their type in
// their data and end without [DONE].
func (w *hookWriter) typedEvents() bool {
	in := w.st.ingress
	return in != nil && (in.kind == ingressMessage || in.kind == ingressResponse)
}

// lastEvent returns where the last event of the server-sent events b
// starts (message_stop, response.completed), len(b) when b has none.
func lastEvent(b []byte) int {
	end := len(bytes.TrimRight(b, "\r\n"))
	if end == 0 {
		return len(b)
	}
	i := max(bytes.LastIndex(b[:end], []byte("\n\n")), bytes.LastIndex(b[:end], []byte("\r\n\r\n")))
	if i < 0 {
		return 0
	}
	for i < end && (b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// writeEvent writes the hook results as a server-sent event, then rest,
// and flushes. On Messages and Responses streams the event's data has
// their shape: {"type":"hook_results","hook_results":{…}}.
func (w *hookWriter) writeEvent(rest []byte) {
	res := hookResults(w.c)
	b := make([]byte, 0, len(res)+len(rest)+64)
	b = append(b, "event: hook_results\ndata: "...)
	if w.typedEvents() {
		b = append(b, `{"type":"hook_results","hook_results":`...)
		b = append(b, res...)
		b = append(b, '}')
	} else {
		b = append(b, res...)
	}
	b = append(b, "\n\n"...)
	b = append(b, rest...)
	w.ResponseWriter.Write(b)
	http.NewResponseController(w.ResponseWriter).Flush()
}

// hookRefs appends to refs the guardrails raw of the config node at path
// (input_guardrails, targets[1].output_guardrails, …).
func hookRefs(refs []HookRef, raw []json.RawMessage, path string) []HookRef {
	for i, g := range raw {
		refs = append(refs, HookRef{Guardrail: g, Param: HeaderConfig, Path: path + "[" + strconv.Itoa(i) + "]"})
	}
	return refs
}
