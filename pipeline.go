package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path"
	"sync/atomic"
	"time"
)

// Chain composes middlewares, outermost first: Chain(a, b)(h) is a(b(h)).
func Chain(mws ...func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			h = mws[i](h)
		}
		return h
	}
}

// pipeline composes the Gateway's stages once, in the order of docs/architecture.md, The path of a request:
//
//	begin → trace → key → headers → path check → mux → endpoint
//	      → admissions (budgets, say) → limits → route → execute  (forward, on the data plane)
//
// Each stage is a middleware a host can also run by hand (Trace,
// Authenticate, ParseHeaders, Limits); one that ran in front of the
// Gateway finds its work done in the request's state and passes the
// request on, so its trace id, identity, options and admission stand.
// Control-plane routes stop at their endpoint: they are neither limited
// nor routed to a provider.
func (g *Gateway) pipeline() http.Handler {
	return Chain(g.begin, Trace, g.authenticate, ParseHeaders, g.checkPath)(g.mux)
}

// ServeHTTP runs the pipeline New composed (see Chain and the stages).
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.handler.ServeHTTP(w, r)
}

// begin opens the request's state, which every later stage shares, counts
// the bytes in and out, and hands the request log over once the response
// is done.
func (g *Gateway) begin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := stateFrom(r.Context())
		if st == nil || st.control {
			// A control route serving a data-plane request in process
			// (see Handle) starts a request of its own, as its caller.
			caller := st
			st = &requestState{start: time.Now()}
			if caller != nil {
				st.traceID, st.identity, st.key = caller.traceID, caller.identity, caller.key
				st.log.TraceID, st.log.KeyID, st.log.WorkspaceID = caller.log.TraceID, caller.log.KeyID, caller.log.WorkspaceID
			}
			r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
		}
		st.gw = g
		st.log.Method = r.Method
		st.log.Path = r.URL.Path
		st.log.Query = redactQuery(r.URL.RawQuery)
		st.rw = responseRecorder{ResponseWriter: w, st: st}
		if st.logged = g.logging() || logHookFrom(r.Context()) != nil; st.logged {
			st.log.ID = g.ids.next(st.start)
		}
		if r.Body != nil && r.Body != http.NoBody {
			st.body = countingBody{rc: r.Body}
			r.Body = &st.body
		}
		if st.logged && g.opts.LogBodies {
			g.captureBodies(r, st)
		}
		defer g.finish(r.Context(), st)
		next.ServeHTTP(&st.rw, r)
	})
}

// authenticate is the Authenticate stage with the gateway's key store,
// whose failures reach the error log. A key checked in front of the
// Gateway stands. A request it refuses is counted (AuthFailures) and
// marked unauthenticated: it is no request log (see finish).
func (g *Gateway) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := stateFrom(r.Context())
		if st.identity.KeyID == "" {
			if g.serveSigned(w, r, st) {
				return // a credential of a product's own stands for the key (HandleSigned)
			}
			if err := authenticate(r, g.opts.Keys, st); err != nil {
				st.unauthenticated = true
				g.authFailures.count(err)
				g.fail(w, r, "key store", err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkPath refuses paths with empty, . or .. segments, and the bare
// prefix, with a 404: http.ServeMux would answer with a redirect, which
// clients follow with a GET, dropping a POST's body.
func (g *Gateway) checkPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p != cleanPath(p) || p == g.prefix {
			g.fail(w, r, "", &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
				Message: "no route for " + r.Method + " " + p + ": paths have no empty, . or .. segments and go below " + g.prefix + "/"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fail is the one place the pipeline answers with an error of its own. An
// error that is not an *Error is a failure of the gateway's machinery (a
// store, the limiter): the caller gets a bare 500, the error log the cause,
// under what (e.g. "key store").
func (g *Gateway) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	if ge := (*Error)(nil); !errors.As(err, &ge) {
		g.errLog.ErrorContext(r.Context(), "gateway: "+what, "err", err)
	}
	WriteError(w, r, err)
}

// result is what the route and execute stages came to, returned to the
// limits stage, which charges or refunds by it.
type result struct {
	// upstream: some of the request was handed to a provider's transport
	// (by any attempt, or by a cache fill serving it).
	upstream bool
	// own: the gateway answered with an error of its own, not a provider.
	own bool
	// cacheHit: the answer came from the cache; no provider was asked.
	cacheHit bool
}

// cleanPath returns p without empty, . and .. segments, keeping a trailing
// slash, as http.ServeMux cleans paths.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// finish completes the request's log record and hands it to the log hook
// of ctx (WithLogHook), then to the log queues. A handler aborted with
// http.ErrAbortHandler is logged, then the panic goes on to net/http, which
// drops the connection.
//
// A request that failed authentication reaches the log hook only: it is
// counted (AuthFailures), never queued for the LogSink nor stored, so
// that anonymous callers can neither fill a store nor crowd the
// records of real requests out of the log queues (docs/architecture.md, Trust).
func (g *Gateway) finish(ctx context.Context, st *requestState) {
	p := recover()
	if p != nil && p != http.ErrAbortHandler {
		panic(p)
	}
	hook := logHookFrom(ctx)
	if hook != nil || len(st.settles) > 0 || g.logging() && !st.unauthenticated {
		rec := st.log
		rec.Time = st.start
		rec.Latency = time.Since(st.start)
		rec.Status = st.rw.status
		if st.idleCut.Load() {
			rec.ErrorCode = CodeStreamIdleTimeout
		}
		if p != nil {
			rec.Aborted = true
			if rec.ErrorCode == "" {
				rec.ErrorCode = "upstream_aborted"
			}
		} else if rec.Status == 0 {
			rec.Status = statusClientClosed
		}
		rec.BytesIn = st.body.n
		rec.BytesOut = st.rw.n
		rec.CacheStatus = st.rw.cache // as the caller saw it: none when no answer went out
		g.logUsage(st, &rec)
		if u := st.upgraded; u != nil {
			// A switched protocol (WebSocket): the session lasted until
			// either side closed; its bytes, and its 101's header, went
			// past the recorder.
			rec.Status = http.StatusSwitchingProtocols
			rec.BytesIn += u.in.Load()
			rec.BytesOut += u.out.Load()
			rec.CacheStatus = cacheStatusSent(st.rw.ResponseWriter.Header())
		}
		if st.bodies != nil && !st.control {
			st.bodies.fill(&rec, st.rw.ResponseWriter.Header())
		}
		if hook != nil {
			hook(&rec)
		}
		for _, settle := range st.settles {
			settle(&rec)
		}
		if !st.unauthenticated && g.logging() {
			g.sendLog(&rec, !st.control)
		}
	}
	if p != nil {
		panic(p)
	}
}

// stateKey is the context key of *requestState.
type stateKey struct{}

// requestState is everything the stages learn about one request, kept in a
// single context value so the pipeline costs one context allocation.
type requestState struct {
	gw       *Gateway
	start    time.Time
	traceID  string
	identity Identity
	key      *APIKey // the record identity was made from; shared, not to be modified
	opts     RequestOptions
	parsed   bool
	badAuth  bool // Authorization is not a bearer token (see RequestOptions.parse)
	log      RequestLog
	rw       responseRecorder
	body     countingBody
	bodies   *bodyCapture // the bodies kept for the log (Options.LogBodies); nil when not kept

	// upstream is set once a request of this one was handed to a
	// provider's transport (by any attempt, or by a cache fill serving it).
	upstream atomic.Bool

	upgraded *upgradedConn // the provider's side of a switched protocol, once answered 101
	idleCut  atomic.Bool   // the answer was cut: the provider went silent past the stream idle timeout

	control         bool   // a control-plane request: audited, not a request log of the LogSinks
	dataPlane       bool   // made by ServeDataPlane: never served by a control route
	unauthenticated bool   // it failed authentication: counted (AuthFailures), not a request log
	admitted        bool   // a Limits stage in front of the Gateway applied the policies
	result          result // what route and execute came to, for that Limits stage

	limited *limitWriter // the policies that admitted the request: they count its extra upstream attempts
	ingress *ingress     // an agents' protocol (Messages, Responses): how it goes to each target

	// The answer's usage, read as it goes to the caller through rw (see
	// usageStart), for the request log and for tokens policies.
	logged    bool                // the Gateway makes a log record of the request
	wantUsage bool                // a tokens policy charges the answer's usage
	settles   []func(*RequestLog) // of the Admissions that admitted the request
	tap       usageTap
	usage     usageScanner
	zbody     []byte // a compressed answer, kept to be read once complete
	zcoding   answerCoding

	hooks *hookWriter // the answer's way to the caller when a config attaches guardrails

	selected *routedTarget // the provider the model named, "@{slug}/{model}" (see modelslug.go)
	prices   PriceTable    // the answering target's own prices

	firstByte time.Time // when the first byte of the latest provider answer body read arrived
	rescue    bool      // a retry or another target followed a failed attempt
	shared    bool      // the answer was another caller's cache fill, shared
}

func stateFrom(ctx context.Context) *requestState {
	st, _ := ctx.Value(stateKey{}).(*requestState)
	return st
}

// withState returns r with a requestState, reusing the one already there.
// It lets the exported middlewares run alone or composed by hand.
func withState(w http.ResponseWriter, r *http.Request) (*http.Request, *requestState) {
	if st := stateFrom(r.Context()); st != nil {
		return r, st
	}
	st := &requestState{start: time.Now()}
	return r.WithContext(context.WithValue(r.Context(), stateKey{}, st)), st
}

// responseRecorder remembers the status and counts the bytes of a
// response, and has its request's state read the usage in it.
type responseRecorder struct {
	http.ResponseWriter
	st     *requestState
	status int
	n      int64
	cache  CacheStatus // the x-gateway-cache-status sent, once the answer started
}

func (w *responseRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
		w.answered()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
		w.answered()
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	if w.st.tap != tapOff {
		w.st.usageWrite(p[:n])
	}
	if w.st.bodies != nil {
		w.st.captureResponse(p[:n])
	}
	return n, err
}

// answered notes what the caller is told as the answer's header goes out:
// the cache status the request log carries, and how to read the usage.
func (w *responseRecorder) answered() {
	h := w.ResponseWriter.Header()
	w.cache = cacheStatusSent(h)
	w.st.usageStart(h)
}

// cacheStatusHeader is the canonical form of HeaderCacheStatus.
var cacheStatusHeader = http.CanonicalHeaderKey(HeaderCacheStatus)

// cacheStatusSent returns the x-gateway-cache-status of the answer header
// h: what the request log records, whatever the stages noted on the way
// (docs/architecture.md, Trust: the record carries the cache status the caller saw).
func cacheStatusSent(h http.Header) CacheStatus {
	if v := h[cacheStatusHeader]; len(v) > 0 {
		return CacheStatus(v[0])
	}
	return ""
}

// Flush sends buffered data to the client.
func (w *responseRecorder) Flush() {
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the underlying ResponseWriter, for http.ResponseController.
func (w *responseRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countingBody counts the bytes read from a request body. Once the body
// has returned io.EOF it keeps returning io.EOF without reading the
// underlying body again: http.Transport reads once more past the declared
// Content-Length to check for extra bytes, and when the provider answered
// quickly the server may already have closed the body by then (see
// https://go.dev/issue/40747); that read must not fail the upstream
// connection and cut the answer being streamed.
type countingBody struct {
	rc interface {
		Read([]byte) (int, error)
		Close() error
	}
	n   int64
	eof bool
	st  *requestState // its request's, when its bytes are kept for the log (Options.LogBodies)

	// read is the whole body of a data-plane request once its endpoint or
	// an Admission (RequestBody) read it; nil while it streams.
	read []byte
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if b.st != nil {
		b.st.captureRequest(p[:n])
	}
	b.eof = err == io.EOF
	return n, err
}

func (b *countingBody) Close() error { return b.rc.Close() }

// forward runs the last stages of the pipeline for a data-plane request
// its endpoint accepted: limits, route, execute. body, when not nil, is the
// request body the endpoint already read; otherwise the body streams from
// the caller.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	st := stateFrom(r.Context())
	body, ok := g.resolveModelSlug(w, r, st, body)
	if !ok {
		return
	}
	st.body.read = body
	if !g.admit(w, r, st) {
		return
	}
	body = st.body.read                 // when an Admission read it (RequestBody)
	lw, err := g.limits.admit(w, r, st) // logs its own failures
	if err != nil {
		WriteError(w, r, err)
		return
	}
	// Deferred: a response aborted mid-stream (http.ErrAbortHandler) is
	// still charged for the tokens that went out.
	defer func() { lw.settle(st.result) }()
	st.result = g.route(lw.writer(w), r, st, body)
}

// route selects the provider (the plan), then executes it.
func (g *Gateway) route(w http.ResponseWriter, r *http.Request, st *requestState, body []byte) result {
	if !st.identity.Can(ScopeCompletionsWrite) {
		g.fail(w, r, "", missingScope(ScopeCompletionsWrite))
		return result{own: true}
	}
	if st.badAuth && (st.opts.VirtualKey == "" || st.opts.Config != "") {
		g.fail(w, r, "", badAuthorization())
		return result{own: true}
	}
	var plan *planNode
	var err error
	if st.selected != nil {
		plan = &planNode{mode: ModeSingle, target: st.selected}
	} else {
		plan, err = g.selectPlan(r.Context(), st.identity, &st.opts)
	}
	if err != nil {
		g.fail(w, r, "provider selection", err)
		return result{own: true}
	}
	in, out, err := g.hookDefaults(r.Context(), st)
	if err != nil {
		g.fail(w, r, "workspace store", err)
		return result{own: true}
	}
	if plan.hooked || len(in) > 0 || len(out) > 0 {
		return g.executeHooked(w, r, st, plan, body, in, out)
	}
	return g.execute(w, r, st, plan, body)
}
