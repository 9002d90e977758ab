package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// passThrough forwards any provider path: the provider's base URL plus the
// path and query, the body streamed as sent, the response streamed back
// unchanged.
func (g *Gateway) passThrough(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete:
	default:
		methodNotAllowed(w, r, "GET, POST, PUT, DELETE")
		return
	}
	g.forward(w, r, nil)
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	WriteError(w, r, &Error{Status: http.StatusMethodNotAllowed, Type: TypeInvalidRequest, Code: CodeMethodNotAllowed,
		Message: r.Method + " is not allowed on " + r.URL.Path + "; allowed: " + allow})
}

// forward selects the provider and runs the request's plan. body, when not
// nil, is the request body the route already read; otherwise the body
// streams from the caller.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	st := stateFrom(r.Context())
	if st.badAuth && (st.opts.VirtualKey == "" || st.opts.Config != "") {
		WriteError(w, r, badAuthorization())
		return
	}
	plan, err := g.selectPlan(r.Context(), st.identity, &st.opts)
	if err != nil {
		if ge := (*Error)(nil); !errors.As(err, &ge) {
			// A store failed: the caller gets a bare 500, the operator the cause.
			g.errLog.ErrorContext(r.Context(), "gateway: provider selection", "err", err)
		}
		WriteError(w, r, err)
		return
	}
	w, done, err := g.admitPolicies(w, r, st)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	defer done()
	g.execute(w, r, st, plan, body)
}

// attemptKey is the context key of *attempt.
type attemptKey struct{}

// attempt is one call to one target, shared by the ReverseProxy hooks.
type attempt struct {
	target   *Target
	provider Provider
	index    int // retries made before this attempt
	path     string
	rawPath  string
	cache    string // value of x-gateway-cache-status
	err      error  // why the attempt gave no response to send
	status   int    // the provider's status, once headers arrived
	timer    *time.Timer
	timeout  time.Duration
	held     *heldResponse // the answer retryable dropped, read in full
	pr       ProxyRequest  // kept here so that rewrite allocates none

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

// providerPath returns the request path with the gateway prefix removed, as
// decoded and as escaped by the caller.
func (g *Gateway) providerPath(r *http.Request) (path, raw string) {
	path = strings.TrimPrefix(r.URL.Path, g.prefix)
	raw = strings.TrimPrefix(r.URL.EscapedPath(), (&url.URL{Path: g.prefix}).EscapedPath())
	return path, raw
}

// try makes one attempt: the request goes through the ReverseProxy with the
// attempt in its context. When the provider answered and the answer was
// sent, a.err is nil; otherwise a.err says why nothing was sent.
func (g *Gateway) try(w http.ResponseWriter, r *http.Request, a *attempt, body []byte) {
	ctx := context.WithValue(r.Context(), attemptKey{}, a)
	if a.timeout > 0 {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		d := a.timeout
		a.timer = time.AfterFunc(d, func() { cancel(errTimeout{d}) })
		defer a.timer.Stop()
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
// lists it as its own (DESIGN §3).
var requestHeaders = []string{"Content-Type", "Accept", "Accept-Encoding", "Content-Encoding", "Idempotency-Key"}

// upstreamHeader returns the caller's headers that reach the provider
// before its Provider adds its own: requestHeaders and the forwarded ones.
// A nil User-Agent keeps the caller's and Go's default out.
func upstreamHeader(in http.Header, forward []string) http.Header {
	h := make(http.Header, len(requestHeaders)+len(forward)+2)
	for _, n := range requestHeaders {
		if v := in[n]; v != nil {
			h[n] = v
		}
	}
	for _, n := range forward {
		if v := in[n]; v != nil {
			h[n] = v
		}
	}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = nil
	}
	return h
}

// rewrite builds the upstream request: only the allowed headers, then the
// provider's own URL and auth. A provider error is kept in the attempt and
// returned by the transport without touching the network.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	a := attemptFrom(pr.In.Context())
	in, out := pr.In, pr.Out
	out.Header = upstreamHeader(in.Header, a.target.ForwardHeaders)
	a.pr = ProxyRequest{In: in, Out: out, Path: a.path, RawPath: a.rawPath, Target: a.target}
	if err := a.provider.Rewrite(&a.pr); err != nil {
		a.err = err
		out.URL = &url.URL{Scheme: "http", Host: "provider.invalid"}
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
	if a.retryable != nil && a.retryable(res) {
		return errRetryable{res}
	}
	if a.watchBody && res.StatusCode != http.StatusSwitchingProtocols {
		res.Body = &watchedBody{ReadCloser: res.Body, a: a}
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
	setHeader(h, HeaderCacheStatus, a.cache)
	setHeader(h, HeaderRetryAttemptCount, strconv.Itoa(a.index))
	if a.target.Index != "" {
		setHeader(h, HeaderLastUsedOptionIndex, a.target.Index)
	}
	if st := stateFrom(res.Request.Context()); st != nil {
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
