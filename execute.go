package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults of the retry settings in Options.
const (
	defaultRetryBaseDelay = 200 * time.Millisecond
	defaultRetryBudget    = 30 * time.Second

	// maxHeldBody caps the body of a provider answer that is held back
	// while another attempt is tried. A longer answer is not held: it goes
	// to the caller as it is, and nothing more is tried.
	maxHeldBody = 1 << 20
)

// defaultRetryStatuses are retried when a retry config names none; 529 is
// Anthropic's "overloaded", which it asks clients to treat like 503.
var defaultRetryStatuses = []int{429, 500, 502, 503, 504, 529}

// CacheStatus says how the response cache took part in a request, as
// written in x-gateway-cache-status and RequestLog.CacheStatus.
type CacheStatus string

// Cache statuses. DISABLED is answered on every route the cache does not
// cover and wherever no config enables it.
const (
	CacheHit      CacheStatus = "HIT"
	CacheMiss     CacheStatus = "MISS"
	CacheRefresh  CacheStatus = "REFRESH"
	CacheDisabled CacheStatus = "DISABLED"
)

// maxSmallBody is the longest request body of declared length that is
// read whole before the provider is called, whatever the plan.
const maxSmallBody = 64 << 10

// execute runs a plan for the request: it reads the body when the plan may
// send it more than once (retries, fallback, cache) or must look into it
// (override_params, params.* conditions), or when it is small, walks the
// plan's strategies, and answers the caller once.
func (g *Gateway) execute(w http.ResponseWriter, r *http.Request, st *requestState, plan *planNode, body []byte) result {
	x := &run{g: g, w: w, r: r, st: st, body: body, baseModel: st.log.Model,
		budget: &attemptBudget{limited: st.limited}}
	st.log.ConfigID = plan.config
	x.path, x.rawPath = g.providerPath(r)
	x.cacheRoute = g.cache != nil && r.Method == http.MethodPost && cacheablePath(x.path)
	x.deadline = st.start.Add(g.retryBudget())
	var n planNeeds
	var translates func(string) bool
	if x.translateRoute = translatedRoute(r.Method, x.path); x.translateRoute {
		translates = g.isTranslator
	}
	plan.needs(&n, x.cacheRoute, translates)
	switch {
	case body != nil:
		x.replay = true
	case n.replay || n.read:
		if !x.readBody(n.read) {
			return x.result()
		}
	case r.ContentLength > 0 && r.ContentLength <= maxSmallBody && r.Header.Get("Upgrade") == "":
		// A small body of declared length is read before the provider is
		// called: http.Transport then sends the request line, headers and
		// body in one write, where a body it must stream from the caller
		// costs a second write, and a second packet to the provider.
		if !x.readBody(false) {
			return x.result()
		}
	}
	if x.body != nil && r.Method == http.MethodPost && cacheablePath(x.path) {
		// The model of a body the gateway reads on the OpenAI routes (for
		// the cache key, a translation, the log) is bounded; one that
		// streams unread is the provider's to refuse.
		if x.st.selected != nil {
			x.bodyModel = x.st.log.Model // already read, its provider prefix stripped
		} else {
			x.bodyModel = requestModel(x.body)
		}
		x.bodyModelRead = true
		if err := checkModel(x.bodyModel); err != nil {
			x.fail(err)
			return x.result()
		}
	}
	x.finish(x.node(plan))
	return x.result()
}

// result returns what the run came to, for the stages before it.
func (x *run) result() result {
	return result{upstream: x.st.upstream.Load(), own: x.own, cacheHit: x.cacheHit}
}

// fail answers the caller with an error of the gateway's own.
func (x *run) fail(err error) {
	x.own = true
	WriteError(x.w, x.r, err)
}

// cacheablePath reports whether responses of POST path may be cached
// (the HTTP contract).
func cacheablePath(path string) bool {
	switch path {
	case "/completions", "/chat/completions", "/embeddings", RouteMessages:
		return true
	}
	return false
}

// run is the execution of one plan for one request. It belongs to the
// request's goroutine; a shared cache fill gets copies of what it needs.
type run struct {
	g       *Gateway
	w       http.ResponseWriter
	r       *http.Request
	st      *requestState
	body    []byte // nil: the body streams from the caller, once
	path    string
	rawPath string

	replay         bool // body is buffered: attempts may be repeated
	cacheRoute     bool
	translateRoute bool      // POST /chat/completions or /embeddings: Translators translate it
	deadline       time.Time // no retry wait may end after it

	match *matchInput // what conditions look at, made by the first conditional node

	own      bool // the caller was answered with an error of the gateway's own
	cacheHit bool // the caller was answered from the cache

	frames   []*planNode   // fallback ancestors that still have targets to try
	reopen   time.Time     // the soonest end of a cool-down among the targets skipped
	retries  int           // retries made so far
	lastHeld *heldResponse // the latest provider answer not sent
	lastErr  error         // the latest target's failure, when it is later than lastHeld
	budget   *attemptBudget

	// For the request log: the targets tried so far, what the log said
	// of the target whose answer lastHeld is, and the model the request
	// names.
	tried         int
	lastHeldLog   targetLog
	baseModel     string // the model an endpoint logged before execute, if any
	bodyModel     string
	bodyModelRead bool
}

// targetLog is what the request log says of the target that answered.
type targetLog struct {
	provider, virtualKey, model string
	index                       int
}

// logTarget records in the request log that t, the index-th target
// tried, is answering, with body (nil: unread) as its request body. The
// model is the one Azure's host settings name for the deployment, else
// the one the body names, else the one an endpoint logged.
func (x *run) logTarget(t *routedTarget, index int, body []byte, overridden bool) {
	m := t.Host.ModelName
	if m == "" && body != nil {
		if overridden {
			m = requestModel(body)
		} else {
			if !x.bodyModelRead {
				x.bodyModel, x.bodyModelRead = requestModel(body), true
			}
			m = x.bodyModel
		}
	}
	if m == "" {
		m = x.baseModel
	}
	l := &x.st.log
	l.Provider, l.VirtualKey, l.Model, l.FallbackIndex = t.Provider, t.VirtualKey, clipModel(m), index
	x.st.prices = t.prices
	x.st.noteTarget(&t.Target)
}

// clipModel cuts a model that is only observed (peeked in a pass-through
// body for the request log and the metrics) to maxModelBytes, at a rune
// boundary, so that a long one never becomes a log field or a label.
// Where the gateway uses the model it refuses a longer one (checkModel).
func clipModel(m string) string {
	if len(m) <= maxModelBytes {
		return m
	}
	i := maxModelBytes
	for i > 0 && !utf8.RuneStart(m[i]) {
		i--
	}
	return m[:i]
}

// readBody buffers the request body up to MaxBodyBytes. A longer body goes
// through once, unbuffered, unless the plan must look into it (mustRead),
// which is a 413. It reports whether execution goes on.
func (x *run) readBody(mustRead bool) bool {
	limit := x.g.opts.MaxBodyBytes
	if x.r.Body == nil || x.r.Body == http.NoBody {
		x.body, x.replay = []byte{}, true
		return true
	}
	if x.r.ContentLength > limit && mustRead {
		x.fail(&http.MaxBytesError{Limit: limit})
		return false
	}
	if x.r.ContentLength <= limit {
		b, err := readAll(x.r.Body, x.r.ContentLength, limit+1)
		if err != nil {
			var mbe *http.MaxBytesError
			switch {
			case errors.As(err, &mbe):
				x.fail(err)
			case x.r.Context().Err() == nil:
				x.fail(&Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest,
					Message: "the request body could not be read", Err: err})
			}
			return false
		}
		if int64(len(b)) <= limit {
			x.body, x.replay = b, true
			return true
		}
		if mustRead {
			x.fail(&http.MaxBytesError{Limit: limit})
			return false
		}
		rest := x.r.Body
		x.r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), rest), rest}
	}
	return true // too long to replay: one attempt, streamed
}

// outcome is what a plan node came to.
type outcome struct {
	done bool          // the caller has its answer, or went away
	held *heldResponse // a provider answer, not yet sent
	err  error         // why there is no answer

	// stop says the request may make no more upstream attempts (see
	// attemptBudget): no other target is tried. Set by run.leaf.
	stop bool

	// skipped says no attempt was made: the circuit breakers of the
	// targets were open. A fallback then tries its next target even when
	// the body streams. err is the latest failure, if any.
	skipped bool
}

// heldResponse is a complete provider answer kept in memory: one held back
// while other attempts are tried, or one shared by a cache fill.
type heldResponse struct {
	status int
	header http.Header
	body   []byte
	target *routedTarget
	cache  CacheStatus
}

// node runs one plan node.
func (x *run) node(n *planNode) outcome {
	if n.target != nil {
		return x.leaf(n.target)
	}
	switch n.mode {
	case ModeFallback:
		var out outcome
		for i, c := range n.children {
			more := x.replay && i < len(n.children)-1
			if more {
				x.frames = append(x.frames, n)
			}
			out = x.node(c)
			if more {
				x.frames = x.frames[:len(x.frames)-1]
			}
			if out.skipped {
				continue // nothing was sent: the next target may go, even with a body that streams
			}
			if !more || out.done || out.stop || !n.movesOn(out) {
				return out
			}
		}
		return out // every target left was skipped
	case ModeLoadbalance:
		var skip []bool
		for {
			i := x.pick(n, skip)
			if i < 0 {
				return x.skippedOutcome() // every target with a weight was skipped
			}
			out := x.node(n.children[i])
			if !out.skipped {
				return out
			}
			if skip == nil {
				skip = make([]bool, len(n.children))
			}
			skip[i] = true
		}
	case ModeConditional:
		c, err := x.choose(n)
		if err != nil {
			if x.r.Context().Err() != nil {
				return outcome{done: true} // the caller went away
			}
			return outcome{err: err}
		}
		return x.node(c)
	}
	return x.node(n.children[0])
}

// leaf runs one target: the cache, then the attempts with their retries.
// Once the request spent its attempts (see attemptBudget), it tries
// nothing and reports the latest failure, with stop set.
func (x *run) leaf(t *routedTarget) outcome {
	if x.budget.spent() {
		return outcome{err: x.lastErr, stop: true}
	}
	var brk *breakerNote
	if t.breaker != nil {
		if brk = x.allow(t); brk == nil {
			return x.skippedOutcome()
		}
	}
	l := &x.st.log
	before := targetLog{l.Provider, l.VirtualKey, l.Model, l.FallbackIndex}
	made := x.budget.made.Load()
	index := x.tried
	x.tried++
	prov, err := x.g.provider(t.Provider, HeaderProvider)
	if err != nil {
		return outcome{err: err}
	}
	body := x.body
	overridden := len(t.overrideParams) > 0 && body != nil
	if overridden {
		body = applyOverrides(body, t.overrideParams)
	}
	x.logTarget(t, index, body, overridden)
	if hw := x.st.hooks; hw != nil {
		var ok bool
		if body, ok = hw.target(t, body); !ok {
			x.own = true
			return outcome{done: true}
		}
	}
	var tl *Translation
	if in := x.st.ingress; in != nil {
		var own *heldResponse
		if tl, own, err = in.translate(prov, &t.Target, body); err != nil {
			return outcome{err: err}
		}
		if own != nil {
			own.target = t
			x.lastHeld, x.lastErr, x.lastHeldLog = own, nil, targetLog{l.Provider, l.VirtualKey, l.Model, l.FallbackIndex}
			return outcome{held: own}
		}
		if tl != nil {
			body = tl.Body
		}
	} else if tr, ok := prov.(Translator); ok && x.translateRoute && body != nil {
		if tl, err = tr.Translate(x.path, &t.Target, body); err != nil {
			return outcome{err: err}
		}
		if tl != nil {
			body = tl.Body
		}
	}
	lp := x.loop(t, prov, body)
	lp.breaker = brk
	if tl != nil {
		lp.translation = tl
		lp.path, lp.rawPath = tl.Path, tl.RawPath
		if lp.rawPath == "" {
			lp.rawPath = escapedPath(tl.Path)
		}
	}
	var out outcome
	if x.cacheRoute && x.replay && t.cache != nil {
		out = x.cached(lp)
	} else {
		if t.cache != nil {
			l.CacheStatus = CacheDisabled // logged only where a config asked for the cache
		}
		out = lp.run()
		x.retries += lp.retries
	}
	if !out.done && x.budget.spent() && x.budget.made.Load() == made {
		// A policy refused the target's first attempt: it was not tried,
		// and the answer is the latest failure of those that were.
		x.tried--
		l.Provider, l.VirtualKey, l.Model, l.FallbackIndex = before.provider, before.virtualKey, before.model, before.index
		return outcome{err: x.lastErr, stop: true}
	}
	if brk != nil && brk.tripped.Load() {
		l.TrippedTargets = append(l.TrippedTargets, t.breakerKey)
	}
	switch {
	case out.held != nil:
		x.lastHeld, x.lastErr = out.held, nil
		x.lastHeldLog = targetLog{l.Provider, l.VirtualKey, l.Model, l.FallbackIndex}
	case out.err != nil:
		x.lastErr = out.err
	}
	out.stop = x.budget.spent()
	return out
}

// loop prepares the attempts at t from the request's goroutine.
func (x *run) loop(t *routedTarget, prov Provider, body []byte) *attemptLoop {
	l := &attemptLoop{
		g: x.g, w: x.w, r: x.r, t: t, prov: prov, path: x.path, rawPath: x.rawPath,
		replay: x.replay, cache: CacheDisabled, before: x.retries, deadline: x.deadline, budget: x.budget,
		timeout: t.requestTimeout,
	}
	if x.replay {
		l.body = body
	}
	if x.st.opts.RequestTimeout > 0 {
		l.timeout = x.st.opts.RequestTimeout
	}
	if len(x.frames) > 0 {
		frames := slices.Clone(x.frames)
		l.moveOn = func(code int) bool {
			for _, f := range frames {
				if f.movesOnStatus(code) {
					return true
				}
			}
			return false
		}
	}
	return l
}

// applyOverrides sets top-level fields of a JSON object body. A body that
// is not a JSON object is sent as it is.
func applyOverrides(body []byte, params map[string]any) []byte {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return body
	}
	for k, v := range params {
		b, err := json.Marshal(v)
		if err != nil {
			return body
		}
		obj[k] = b
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return out
}

// finish answers the caller when the plan left an answer unsent: the last
// provider answer as the provider sent it, or the error of the last
// attempt (408 when it timed out, 502 when nothing answered).
func (x *run) finish(out outcome) {
	x.st.log.Attempts = x.retries
	x.st.rescue = x.retries > 0 || x.tried > 1
	if out.done {
		return
	}
	var te errTimeout
	switch {
	case out.err != nil && errors.As(out.err, &te):
	case out.skipped && out.err == nil && x.lastHeld == nil:
		// Every target was skipped: no provider was called.
		x.fail(errAllOpen(time.Until(x.reopen)))
		return
	case x.lastHeld != nil:
		h, l := &x.lastHeldLog, &x.st.log
		l.Provider, l.VirtualKey, l.Model, l.FallbackIndex = h.provider, h.virtualKey, h.model, h.index
		x.writeHeld(x.lastHeld, x.lastHeld.cache)
		return
	}
	if out.err == nil {
		out.err = ErrUpstreamUnreachable
	}
	setHeader(x.w.Header(), HeaderRetryAttemptCount, strconv.Itoa(x.retries))
	x.fail(out.err)
}

// writeHeld sends a complete provider answer with the gateway's headers.
func (x *run) writeHeld(h *heldResponse, cacheStatus CacheStatus) {
	dst := x.w.Header()
	for k, v := range h.header {
		if !strings.HasPrefix(k, "X-Gateway-") {
			// Clipped: the values are shared with the other callers of a
			// fill or cache entry, and an append by one (a host
			// middleware adding Vary) must not reach another.
			dst[k] = slices.Clip(v)
		}
	}
	dst.Set("Content-Length", strconv.Itoa(len(h.body)))
	x.gatewayHeaders(dst, h.target, cacheStatus)
	x.st.log.Status = h.status
	x.w.WriteHeader(h.status)
	x.w.Write(h.body)
}

func (x *run) gatewayHeaders(h http.Header, t *routedTarget, cacheStatus CacheStatus) {
	setHeader(h, HeaderProvider, t.Provider)
	setHeader(h, HeaderCacheStatus, string(cacheStatus))
	setHeader(h, HeaderRetryAttemptCount, strconv.Itoa(x.retries))
	if t.Index != "" {
		setHeader(h, HeaderLastUsedOptionIndex, t.Index)
	}
}

func (g *Gateway) retryBaseDelay() time.Duration {
	if g.opts.RetryBaseDelay > 0 {
		return g.opts.RetryBaseDelay
	}
	return defaultRetryBaseDelay
}

func (g *Gateway) retryBudget() time.Duration {
	if g.opts.RetryBudget > 0 {
		return g.opts.RetryBudget
	}
	return defaultRetryBudget
}

func (g *Gateway) random() float64 {
	if g.opts.Rand != nil {
		return g.opts.Rand()
	}
	return rand.Float64()
}
