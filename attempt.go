package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// attemptKey is the context key of *attempt.
type attemptKey struct{}

// attempt is one call to one target, shared by the ReverseProxy hooks.
type attempt struct {
	target      *routedTarget
	provider    Provider
	index       int // retries made before this attempt
	path        string
	rawPath     string
	cache       CacheStatus // value of x-gateway-cache-status
	err         error       // why the attempt gave no response to send
	status      int         // the provider's status, once headers arrived
	timer       *time.Timer
	timeout     time.Duration
	idle        time.Duration           // the longest wait for a read of the answer; 0: none
	translation *Translation            // the request is translated: so is the answer
	cancel      context.CancelCauseFunc // ends the attempt's context
	held        *heldResponse           // the answer retryable dropped, read in full
	pr          ProxyRequest            // kept here so that rewrite allocates none

	// watchBody asks modifyResponse to record in bodyErr why reading the
	// answer sent failed, for the cache: without an http.Server,
	// ReverseProxy reports a broken answer to nobody.
	watchBody bool
	bodyErr   error

	// retryable, when set, is asked whether a response with this status
	// should be dropped in favour of another attempt.
	retryable func(res *http.Response) bool
}

func attemptFrom(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

// errRetryable is returned by modifyResponse for a response the plan
// replaces with another attempt.
type errRetryable struct{ res *http.Response }

func (errRetryable) Error() string { return "gateway: retryable response" }

// try makes one attempt: the request goes through the ReverseProxy with the
// attempt in its context. When the provider answered and the answer was
// sent, a.err is nil; otherwise a.err says why nothing was sent.
func (g *Gateway) try(w http.ResponseWriter, r *http.Request, a *attempt, body []byte) {
	ctx, cancel := context.WithCancelCause(context.WithValue(r.Context(), attemptKey{}, a))
	defer cancel(nil)
	a.cancel = cancel
	if a.timeout > 0 {
		d := a.timeout
		a.timer = time.AfterFunc(d, func() { cancel(errTimeout{d}) })
		defer a.timer.Stop()
	}
	a.idle = a.target.idleTimeout
	if a.idle == 0 {
		a.idle = g.streamIdle
	}
	out := r.WithContext(ctx)
	if body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		if len(body) == 0 {
			out.Body = http.NoBody
		}
	}
	g.proxy.ServeHTTP(w, out)
}

// requestHeaders are the caller's headers that always reach the provider:
// content negotiation and encoding, which the answer passed back unchanged
// depends on, and OpenAI's Idempotency-Key, which makes the provider's side
// of a retried POST safe. Everything else, User-Agent included, goes only
// when the caller names it in x-gateway-forward-headers or the provider
// lists it as its own (the HTTP contract).
var requestHeaders = []string{"Content-Type", "Accept", "Accept-Encoding", "Content-Encoding", "Idempotency-Key"}

// upstreamHeader returns the caller's headers that reach the provider
// before its Provider adds its own: requestHeaders and the forwarded ones,
// less those the caller's Connection header lists (see connectionListed).
// A nil User-Agent keeps the caller's and Go's default out.
func upstreamHeader(in http.Header, forward []string) http.Header {
	conn := in["Connection"]
	h := make(http.Header, len(requestHeaders)+len(forward)+2)
	for _, n := range requestHeaders {
		if v := in[n]; v != nil && (conn == nil || !connectionListed(conn, n)) {
			h[n] = v
		}
	}
	for _, n := range forward {
		if v := in[n]; v != nil && (conn == nil || !connectionListed(conn, n)) {
			h[n] = v
		}
	}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = nil
	}
	return h
}

// rewrite builds the upstream request: only the allowed headers, the
// caller's query without the gateway's own parameters, then the provider's
// own URL and auth. A provider error is kept in the attempt and returned
// by the transport without touching the network.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	a := attemptFrom(pr.In.Context())
	in, out := pr.In, pr.Out
	out.URL.RawQuery = stripGatewayParams(out.URL.RawQuery)
	up := out.Header["Upgrade"] // set by the ReverseProxy for an upgrade request
	out.Header = upstreamHeader(in.Header, a.target.forwardHeaders)
	if len(up) == 1 {
		keepUpgrade(out.Header, in.Header, up[0])
	}
	if tl := a.translation; tl != nil {
		// The gateway reads the answer to translate it: the transport
		// must decode it, and the body sent is the gateway's own JSON.
		out.Header["Content-Type"] = []string{"application/json"}
		delete(out.Header, "Accept-Encoding")
		delete(out.Header, "Content-Encoding")
		if tl.Query != "" {
			out.URL.RawQuery = tl.Query
		} else if st := stateFrom(in.Context()); st != nil && st.ingress != nil {
			// The caller's query is of the protocol it spoke (Claude
			// Code's /messages?beta=true), not of the API the target is
			// called with.
			out.URL.RawQuery = ""
		}
	}
	a.pr = ProxyRequest{In: in, Out: out, Path: a.path, RawPath: a.rawPath, Target: &a.target.Target}
	if err := a.provider.Rewrite(&a.pr); err != nil {
		a.err = err
		out.URL = &url.URL{Scheme: "http", Host: "provider.invalid"}
	} else if g.opts.LogBodies {
		if st := stateFrom(in.Context()); st != nil {
			st.noteUpstream(a.pr.Out.Header) // a provider's own credentials, scrubbed from the kept bodies
		}
	}
}

// roundTripper sends an attempt through the transport its target may use.
type roundTripper struct{ g *Gateway }

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	a := attemptFrom(req.Context())
	if a == nil {
		return nil, errors.New("gateway: request outside an attempt")
	}
	if a.err != nil {
		return nil, a.err
	}
	if st := stateFrom(req.Context()); st != nil {
		st.upstream.Store(true)
	}
	if a.target.CustomHost {
		return rt.g.custom.RoundTrip(req)
	}
	return rt.g.base.RoundTrip(req)
}

// modifyResponse runs when the provider's headers arrive: it stops the
// attempt's timeout (a started stream is never cut), lets the plan drop a
// retryable answer, and adds the gateway's response headers.
func (g *Gateway) modifyResponse(res *http.Response) error {
	a := attemptFrom(res.Request.Context())
	if a.timer != nil && !a.timer.Stop() {
		return errTimeout{a.timeout}
	}
	a.status = res.StatusCode
	st := stateFrom(res.Request.Context())
	if res.StatusCode == http.StatusSwitchingProtocols {
		// A switched protocol is never held, retried or cached: the
		// ReverseProxy connects the two sides once this returns.
		if rwc, ok := res.Body.(io.ReadWriteCloser); ok && st != nil {
			st.upgraded = &upgradedConn{ReadWriteCloser: rwc}
			res.Body = st.upgraded
		}
	} else {
		if a.idle > 0 || st != nil {
			res.Body = newIdleBody(res.Body, a, st)
		}
		if a.translation != nil {
			if err := a.translation.Response(res); err != nil {
				return err
			}
		}
		if a.retryable != nil && a.retryable(res) {
			return errRetryable{res}
		}
		if a.watchBody {
			res.Body = &watchedBody{ReadCloser: res.Body, a: a}
		}
	}
	h := res.Header
	for k := range h {
		// The provider's own x-gateway-* headers (another gateway behind
		// this one) would sit beside ours, the trace id included, as they
		// never do in a held or cached answer.
		if strings.HasPrefix(k, "X-Gateway-") {
			delete(h, k)
		}
	}
	setHeader(h, HeaderProvider, a.target.Provider)
	setHeader(h, HeaderCacheStatus, string(a.cache))
	setHeader(h, HeaderRetryAttemptCount, strconv.Itoa(a.index))
	if a.target.Index != "" {
		setHeader(h, HeaderLastUsedOptionIndex, a.target.Index)
	}
	if st != nil {
		st.log.Status = res.StatusCode
	}
	return nil
}

// watchedBody records in its attempt a failed read of the provider's
// answer.
type watchedBody struct {
	io.ReadCloser
	a *attempt
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.a.bodyErr = err
	}
	return n, err
}

// proxyError records why an attempt produced no response; the plan decides
// what the caller is told.
func (g *Gateway) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	a := attemptFrom(r.Context())
	if a.err != nil {
		return // the provider refused the request before it was sent
	}
	var ge *Error
	var re errRetryable
	var be *blockedAddrError
	switch {
	case errors.As(err, &be) && a.target != nil && a.target.VirtualKey != "":
		// A tenant's stored host, not the caller's: name the virtual key.
		a.err = &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidCustomHost,
			Param: HeaderVirtualKey, Message: "virtual key " + quoteShort(a.target.VirtualKey) +
				" base_url resolves to an address that is not allowed", Err: err}
	case errors.As(err, &re), errors.As(err, &ge), errors.As(err, &be):
		a.err = err
	case r.Context().Err() != nil:
		cause := context.Cause(r.Context())
		var te errTimeout
		switch {
		case errors.As(cause, &te):
			a.err = te
		case errors.Is(cause, context.Canceled):
			a.err = context.Canceled
		default: // e.g. a cache fill's own deadline
			a.err = errors.Join(ErrUpstreamUnreachable, cause)
		}
	default:
		var te errTimeout
		if errors.As(err, &te) {
			a.err = te
			return
		}
		a.err = errors.Join(ErrUpstreamUnreachable, err)
	}
}

// attemptBudget counts the upstream attempts of one request, across its
// targets and retries (a cache fill's included), against maxAttempts, and
// has the rate-limits policies that admitted the request count each one
// after the first (docs/architecture.md, Trust). It is shared by the loops of one run, one
// of which may be a cache fill's on another goroutine.
type attemptBudget struct {
	made    atomic.Int32
	refused atomic.Bool  // a policy refused an attempt: none follows
	limited *limitWriter // nil: no requests policy counts the attempts
}

// spent reports whether the request may make no more attempts.
func (b *attemptBudget) spent() bool {
	return b != nil && (b.made.Load() >= maxAttempts || b.refused.Load())
}

// take counts one attempt, reporting false when none is left or a policy
// refuses it. A nil budget (a loop outside a run) always allows.
func (b *attemptBudget) take(ctx context.Context) bool {
	if b == nil {
		return true
	}
	if b.spent() {
		return false
	}
	if b.made.Load() > 0 && !b.limited.takeAttempt(ctx) {
		b.refused.Store(true)
		return false
	}
	b.made.Add(1)
	return true
}

// attemptLoop makes the attempts at one target: the first try and its
// retries. It touches no per-request state but its own fields, so a cache
// fill may run it on another goroutine.
type attemptLoop struct {
	g             *Gateway
	w             http.ResponseWriter
	r             *http.Request
	t             *routedTarget
	prov          Provider
	path, rawPath string
	body          []byte // nil: stream r.Body, once
	replay        bool
	timeout       time.Duration
	cache         CacheStatus
	before        int // retries made before this loop, for the header
	budget        *attemptBudget
	deadline      time.Time
	detached      bool // a cache fill: cancellation is not the caller leaving
	watch         bool // the cache may store the answer: note if it broke off
	translation   *Translation
	breaker       *breakerNote // nil: the target has no circuit breaker

	// moveOn reports whether a fallback ancestor would try another
	// target after this status, so the answer must be held back.
	moveOn func(code int) bool

	retries int  // retries made by this loop
	broken  bool // the answer sent broke off (only when watch is set)
}

func (l *attemptLoop) run() outcome {
	maxRetries := 0
	if l.replay && l.t.retry != nil {
		maxRetries = l.t.retry.Attempts
	}
	ctx := l.r.Context()
	// An earlier provider answer beats a later failure to reach the
	// provider at all; a timeout on the last attempt is still a 408.
	var prev *heldResponse
	settle := func(out outcome) outcome {
		var te errTimeout
		if out.held == nil && prev != nil && out.err != nil && !errors.As(out.err, &te) {
			return outcome{held: prev}
		}
		return out
	}
	var last outcome // the previous attempt's
	for i := 0; ; i++ {
		if !l.budget.take(ctx) {
			// No attempt left for the request: the previous one's
			// failure is the answer (see run.leaf).
			if i == 0 {
				return outcome{}
			}
			return settle(last)
		}
		canRetry := i < maxRetries
		a := &attempt{target: l.t, provider: l.prov, index: l.before + l.retries, path: l.path, rawPath: l.rawPath,
			cache: l.cache, timeout: l.timeout, watchBody: l.watch, translation: l.translation}
		a.retryable = func(res *http.Response) bool {
			code := res.StatusCode
			if !(canRetry && retryStatus(l.t.retry, code)) && !(l.moveOn != nil && l.moveOn(code)) {
				return false
			}
			return a.hold(res)
		}
		l.g.try(l.w, l.r, a, l.body)
		opened := l.noteBreaker(a)
		var out outcome
		var re errRetryable
		var te errTimeout
		switch {
		case a.err == nil:
			l.broken = a.bodyErr != nil
			return outcome{done: true}
		case errors.As(a.err, &re) && a.held != nil:
			a.held.target, a.held.cache = l.t, l.cache
			out.held = a.held
		case errors.As(a.err, &re):
			out.err = ErrUpstreamUnreachable // the held answer broke off
		case errors.Is(a.err, context.Canceled):
			if !l.detached {
				return outcome{done: true} // the caller went away
			}
			out.err = errors.Join(ErrUpstreamUnreachable, a.err)
		case errors.As(a.err, &te), errors.Is(a.err, ErrUpstreamUnreachable):
			out.err = a.err
		default:
			return outcome{err: a.err} // the gateway's own refusal: not retried
		}
		if !canRetry || opened || (out.held != nil && !retryStatus(l.t.retry, out.held.status)) {
			return settle(out) // an open breaker skips its target: no retry
		}
		if l.budget.spent() {
			return settle(out) // no wait for a retry that will not be made
		}
		d := l.backoff(i, out.held)
		if time.Now().Add(d).After(l.deadline) {
			return settle(out)
		}
		if !sleep(ctx, d) {
			if l.detached {
				return settle(out)
			}
			return outcome{done: true}
		}
		if out.held != nil {
			prev = out.held
		}
		last = out
		l.retries++
	}
}

// hold reads a provider answer that the plan may replace with another
// attempt. It reports false, leaving res as it was, when the answer is too
// long to hold, so that it goes to the caller.
func (a *attempt) hold(res *http.Response) bool {
	b, err := io.ReadAll(io.LimitReader(res.Body, maxHeldBody+1))
	if err != nil {
		return true // broke off: a.held stays nil
	}
	if len(b) > maxHeldBody {
		res.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), res.Body), res.Body}
		return false
	}
	a.held = &heldResponse{status: res.StatusCode, header: res.Header, body: b}
	return true
}

// retryStatus reports whether a provider status is retried under rc.
func retryStatus(rc *RetryConfig, code int) bool {
	if rc != nil && len(rc.OnStatusCodes) > 0 {
		return slices.Contains(rc.OnStatusCodes, code)
	}
	return slices.Contains(defaultRetryStatuses, code)
}

// backoff is the wait before retry i+1: the provider's own retry-after
// when the config honours it, else exponential backoff with equal jitter.
func (l *attemptLoop) backoff(i int, held *heldResponse) time.Duration {
	if held != nil && l.t.retry.UseRetryAfterHeader {
		if d, ok := retryAfterDelay(held.header, time.Now()); ok {
			return d
		}
	}
	d := l.g.retryBaseDelay() << i
	return d/2 + time.Duration(l.g.random()*float64(d/2))
}

// retryAfterDelay reads retry-after-ms (milliseconds) or Retry-After (seconds
// or an HTTP date).
func retryAfterDelay(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 && s < 1e9 {
			return time.Duration(s) * time.Second, true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	return 0, false
}

// sleep waits d, or until ctx is done; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
