package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"path"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Options configure a Gateway. The zero value is a gateway under /v1 that
// refuses every request, since it knows no API keys.
type Options struct {
	// Prefix is the path under which the gateway serves, e.g. "/v1"; every
	// path below it is a provider path. Empty means "/v1"; "/" serves at
	// the root.
	Prefix string

	// Keys authenticates gateway API keys. Nil refuses every request.
	Keys KeyStore

	// VirtualKeys, Configs and Policies are the stores behind virtual keys,
	// saved configs and rate-limits policies. Nil means none exist.
	// MemoryStore implements all of them and Keys.
	VirtualKeys VirtualKeyStore
	Configs     ConfigStore
	Policies    PolicyStore

	// Limiter keeps the buckets of rate-limits policies. Nil means a
	// MemoryLimiter of this gateway's own; replicas that must share
	// limits need a shared Limiter.
	Limiter Limiter

	// Providers adds provider kinds, or replaces built-in ones, by slug.
	// The built-in kinds are openai, azure-openai, vertex-ai, anthropic and
	// a few OpenAI-compatible hosts (groq, together-ai, mistral-ai,
	// deepseek, fireworks-ai); bedrock lives in the bedrock sub-module and
	// is registered here.
	Providers map[string]Provider

	// Transport sends requests to operator-configured hosts (provider
	// defaults, virtual keys, saved configs). Nil means a transport of the
	// gateway's own from NewTransport: hundreds of idle connections per
	// host, HTTP/2 where the provider offers it, bounded dial and TLS
	// handshake times. http.DefaultTransport is not used, since it keeps
	// only 2 idle connections per host, and a gateway under load would dial
	// most requests anew. A Transport given here is used as it is.
	// Caller-supplied custom hosts use a clone of it (of NewTransport's
	// when it is not an *http.Transport) that dials through the
	// custom-host guard and never through a proxy.
	Transport http.RoundTripper

	// CustomHostAllow lists custom hosts, as "host" or "host:port" matched
	// against the URL's host as written (case-insensitive), that may
	// resolve to non-public addresses. Every other caller-supplied host must
	// resolve only to public addresses.
	CustomHostAllow []string

	// Resolver resolves the names of caller-supplied custom hosts before
	// their addresses are checked. Nil means net.DefaultResolver.
	Resolver Resolver

	// DialContext dials the checked address of a caller-supplied custom
	// host. Nil means a net.Dialer with a 30 second timeout.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	// MaxBodyBytes caps request bodies the gateway must read (typed routes,
	// bodies replayed for retries, fallback or cache). Zero means 32 MiB.
	MaxBodyBytes int64

	// Cache stores provider responses for configs that enable caching.
	// Nil means a MemoryCache with its default bounds, of this gateway's
	// own; replicas that must share a cache need a shared Cache.
	Cache Cache

	// DisableCache turns the response cache off, whatever configs say:
	// every response then carries x-gateway-cache-status: DISABLED.
	DisableCache bool

	// RetryBaseDelay is the backoff before the first retry; each later
	// retry waits twice as long, with equal jitter (half fixed, half
	// random). Zero means 200ms.
	RetryBaseDelay time.Duration

	// RetryBudget bounds the time from a request's arrival within which a
	// retry may still start: a retry whose wait would end later is not
	// made, and the last answer stands. Zero means 30 seconds.
	RetryBudget time.Duration

	// Rand returns pseudo-random numbers in [0, 1), for load balancing and
	// backoff jitter. It is called concurrently, so it must be safe for
	// concurrent use. Nil means math/rand/v2.Float64; tests set a seeded
	// source for reproducible draws.
	Rand func() float64

	// LogSink receives one RequestLog per request, from a goroutine of the
	// gateway's own so that a slow sink never delays a response; records
	// are handed over in order, in batches gathered for at most 5ms. Nil
	// means no request logs.
	LogSink LogSink

	// LogQueueSize is how many records may wait for a slow LogSink before
	// new ones are dropped (and counted by DroppedLogs). Zero means 4096.
	LogQueueSize int

	// ErrorLog receives errors the gateway cannot answer with, e.g. a store
	// failing. Nil means slog.Default().
	ErrorLog *slog.Logger
}

// Resolver looks up the addresses of a host name; *net.Resolver implements
// it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Gateway is an http.Handler serving the gateway's routes under its prefix:
// typed endpoints, the rate-limits control plane, and pass-through of every
// other path to the selected provider. It is safe for concurrent use.
// Close stops its log goroutine.
type Gateway struct {
	opts      Options
	prefix    string
	providers map[string]Provider
	mux       *http.ServeMux
	proxy     *httputil.ReverseProxy
	guard     *guard
	base      http.RoundTripper // trusted hosts
	custom    http.RoundTripper // caller-supplied hosts, through guard
	logs      *logQueue
	errLog    *slog.Logger

	cache         *responseCache // nil: caching disabled
	inlineConfigs *lru.Cache[[sha256.Size]byte, *Config]
	savedConfigs  savedConfigCache
}

// New returns a Gateway configured by opts. It panics if opts.Prefix is
// not a clean absolute path or a provider in opts.Providers is nil.
func New(opts Options) *Gateway {
	g := &Gateway{opts: opts}
	g.prefix = strings.TrimSuffix(opts.Prefix, "/")
	if opts.Prefix == "" {
		g.prefix = "/v1"
	}
	if g.prefix != "" && (!strings.HasPrefix(g.prefix, "/") || strings.ContainsAny(g.prefix, "{}?# ")) {
		panic("gateway: Options.Prefix must be an absolute path")
	}
	if g.opts.MaxBodyBytes <= 0 {
		g.opts.MaxBodyBytes = 32 << 20
	}
	if g.opts.Limiter == nil {
		g.opts.Limiter = &MemoryLimiter{}
	}
	g.providers = builtinProviders()
	for slug, p := range opts.Providers {
		if p == nil {
			panic("gateway: Options.Providers[" + slug + "] is nil")
		}
		g.providers[strings.ToLower(slug)] = p
	}
	g.errLog = opts.ErrorLog
	if g.errLog == nil {
		g.errLog = slog.Default()
	}
	g.base = opts.Transport
	if g.base == nil {
		g.base = NewTransport()
	}
	g.guard = newGuard(opts.CustomHostAllow, opts.Resolver, opts.DialContext)
	g.custom = g.guard.transport(g.base)
	g.cache = newResponseCache(opts)
	g.inlineConfigs, _ = lru.New[[sha256.Size]byte, *Config](1024)
	g.savedConfigs.lru, _ = lru.New[string, *savedConfigEntry](maxSavedConfigs)
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        g.rewrite,
		Transport:      roundTripper{g},
		ModifyResponse: g.modifyResponse,
		ErrorHandler:   g.proxyError,
		BufferPool:     new(copyBuffers),
		ErrorLog:       slog.NewLogLogger(g.errLog.Handler(), slog.LevelDebug),
	}
	if opts.LogSink != nil {
		g.logs = newLogQueue(opts.LogSink, opts.LogQueueSize)
	}
	g.mux = http.NewServeMux()
	g.routes()
	return g
}

// Close stops the gateway's log goroutine after handing every queued
// record to the LogSink, and closes the idle upstream connections of the
// transports the gateway made itself. Requests still being served after
// Close are not logged. Close is safe to call more than once.
func (g *Gateway) Close() error {
	if g.logs != nil {
		g.logs.close()
	}
	if g.opts.Transport == nil {
		g.base.(*http.Transport).CloseIdleConnections()
	}
	if t, ok := g.custom.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	return nil
}

// routes registers the gateway's endpoints. Provider paths not listed here
// are passed through.
func (g *Gateway) routes() {
	p := g.prefix
	g.mux.HandleFunc(p+"/completions", g.serveCompletions)
	g.mux.HandleFunc("GET "+p+"/fine_tuning/jobs/{fine_tuning_job_id}", g.getOnly(g.serveFineTuningJob))
	g.mux.HandleFunc("GET "+p+"/fine_tuning/jobs", g.getOnly(g.serveFineTuningJobs))
	g.mux.HandleFunc("GET "+p+"/files", g.getOnly(g.serveFiles))
	g.mux.HandleFunc(p+"/policies/rate-limits", g.servePolicies)
	g.mux.HandleFunc(p+"/policies/rate-limits/{id}", g.servePolicies)
	g.mux.HandleFunc(p+"/policies/rate-limits/", g.notFound) // the control plane's namespace is never passed through
	g.mux.HandleFunc(p+"/", g.passThrough)
	if p != "" {
		g.mux.HandleFunc("/", g.notFound)
	}
}

// getOnly keeps a typed GET route from serving HEAD, which http.ServeMux
// matches to GET patterns: HEAD goes the way of any other path, where
// pass-through refuses it.
func (g *Gateway) getOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			g.passThrough(w, r)
			return
		}
		h(w, r)
	}
}

func (g *Gateway) notFound(w http.ResponseWriter, r *http.Request) {
	WriteError(w, r, &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
		Message: "no route for " + r.Method + " " + r.URL.Path})
}

// ServeHTTP runs the whole pipeline: trace id, gateway key, headers, then
// the route. Stages a host already ran in front of it (Trace, Authenticate,
// ParseHeaders) are not run again: their trace id, identity and options
// stand.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := &requestState{gw: g, start: time.Now()}
	if prev := stateFrom(r.Context()); prev != nil {
		// Trace, Authenticate or ParseHeaders ran in front of the Gateway:
		// keep what they found, since they removed the headers they read.
		st.start, st.traceID, st.identity, st.opts, st.parsed, st.badAuth, st.log =
			prev.start, prev.traceID, prev.identity, prev.opts, prev.parsed, prev.badAuth, prev.log
	}
	st.log.Method = r.Method
	st.log.Path = r.URL.Path
	st.log.Query = redactQuery(r.URL.RawQuery)
	r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
	st.rw = responseRecorder{ResponseWriter: w}
	w = &st.rw
	if r.Body != nil && r.Body != http.NoBody {
		st.body = countingBody{rc: r.Body}
		r.Body = &st.body
	}
	defer g.finish(st)

	if err := st.trace(w, r); err != nil {
		WriteError(w, r, err)
		return
	}
	if st.identity.KeyID == "" {
		if err := authenticate(r, g.opts.Keys, st); err != nil {
			if ge := (*Error)(nil); !errors.As(err, &ge) {
				g.errLog.ErrorContext(r.Context(), "gateway: key store", "err", err)
			}
			WriteError(w, r, err)
			return
		}
	}
	if err := st.parseHeaders(r); err != nil {
		WriteError(w, r, err)
		return
	}
	if p := r.URL.Path; p != cleanPath(p) || p == g.prefix {
		// http.ServeMux would answer with a redirect, which clients follow
		// with a GET, dropping a POST's body.
		WriteError(w, r, &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
			Message: "no route for " + r.Method + " " + p + ": paths have no empty, . or .. segments and go below " + g.prefix + "/"})
		return
	}
	g.mux.ServeHTTP(w, r)
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

// finish completes the request's log record. A handler aborted with
// http.ErrAbortHandler is logged, then the panic goes on to net/http, which
// drops the connection.
func (g *Gateway) finish(st *requestState) {
	p := recover()
	if p != nil && p != http.ErrAbortHandler {
		panic(p)
	}
	if g.logs != nil {
		rec := st.log
		rec.Time = st.start
		rec.Latency = time.Since(st.start)
		rec.Status = st.rw.status
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
		g.logs.send(&rec)
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
	opts     RequestOptions
	parsed   bool
	badAuth  bool // Authorization is not a bearer token (see RequestOptions.parse)
	log      RequestLog
	rw       responseRecorder
	body     countingBody

	// upstream is set once a request of this one was handed to a
	// provider's transport (by any attempt, or by a cache fill serving it).
	upstream atomic.Bool
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

// responseRecorder remembers the status and counts the bytes of a response.
type responseRecorder struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *responseRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
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
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	b.eof = err == io.EOF
	return n, err
}

func (b *countingBody) Close() error { return b.rc.Close() }

// savedConfigCache keeps parsed saved configs by id, so a hot request pays
// no parse; an entry is reused only while the stored JSON is unchanged. It
// holds the maxSavedConfigs most recently used, so that configs deleted or
// replaced under new ids do not pile up.
type savedConfigCache struct {
	lru *lru.Cache[string, *savedConfigEntry]
}

const maxSavedConfigs = 4096

type savedConfigEntry struct {
	raw []byte
	cfg *Config
}

func (c *savedConfigCache) parse(sc *SavedConfig) (*Config, error) {
	if e, ok := c.lru.Get(sc.ID); ok && bytes.Equal(e.raw, sc.Config) {
		return e.cfg, nil
	}
	cfg, err := ParseConfig(sc.Config)
	if err != nil {
		return nil, err
	}
	c.lru.Add(sc.ID, &savedConfigEntry{raw: bytes.Clone(sc.Config), cfg: cfg})
	return cfg, nil
}
