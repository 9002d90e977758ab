package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
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
	// memstore.Store implements all of them and Keys.
	VirtualKeys VirtualKeyStore
	Configs     ConfigStore
	Policies    PolicyStore

	// Workspaces finds the caller's workspace, whose default guardrails
	// (Workspace.InputGuardrails, OutputGuardrails) are checked on its
	// keys' requests (see Hooks): the gateway reads a workspace at most
	// once a second, so a change of them is in force within a second. Nil
	// means no workspace defaults. memstore.Store and sqlstore.Store
	// implement it.
	Workspaces WorkspaceStore

	// Responses keeps the responses of POST /responses that the gateway
	// translated for a provider kind without a Responses API, for
	// previous_response_id and GET /responses/{id}. Nil keeps none: those
	// requests are answered but not stored. memstore.Store implements it,
	// and so does sqlstore.Store.
	Responses ResponseStore

	// Limiter keeps the buckets of rate-limits policies and of API keys'
	// rate_limits (APIKey.RateLimits). Nil means a MemoryLimiter of this
	// gateway's own; replicas that must share limits need a shared
	// Limiter.
	Limiter Limiter

	// Breakers keeps the circuit breakers of targets under a config's
	// cb_config (see BreakerConfig). Nil means breakers of this gateway's
	// own, in memory; replicas that must see one breaker per target need
	// shared ones (redis.Breakers).
	Breakers Breakers

	// Providers adds provider kinds, or replaces built-in ones, by slug.
	// The built-in kinds are openai, azure-openai, vertex-ai, anthropic and
	// a few OpenAI-compatible hosts (groq, together-ai, mistral-ai,
	// deepseek, fireworks-ai); bedrock lives in the bedrock sub-module and
	// is registered here.
	Providers map[string]Provider

	// Transport sends requests to operator-configured hosts (provider
	// defaults, the operator's virtual keys and saved configs). Nil means a transport of the
	// gateway's own from NewTransport: hundreds of idle connections per
	// host, HTTP/2 where the provider offers it, bounded dial and TLS
	// handshake times. http.DefaultTransport is not used, since it keeps
	// only 2 idle connections per host, and a gateway under load would dial
	// most requests anew. A Transport given here is used as it is.
	// Caller-supplied custom hosts, and the hosts of virtual keys and
	// configs a tenant wrote through the control plane (VirtualKey.Tenant,
	// SavedConfig.Tenant), use a clone of it (of NewTransport's when it is
	// not an *http.Transport) that dials through the custom-host guard and
	// never through a proxy.
	Transport http.RoundTripper

	// CustomHostAllow lists custom hosts, as "host" or "host:port" matched
	// against the URL's host as written (case-insensitive), that may
	// resolve to non-public addresses. Every other caller-supplied host,
	// and every host a tenant stored through the control plane, must
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

	// StreamIdleTimeout bounds each wait for the next piece of a provider's
	// answer once its headers have arrived (a config's stream_idle_timeout
	// overrides it): a provider silent for longer has its answer cut, the
	// caller's connection is aborted rather than ended cleanly, and the
	// request log's error code is stream_idle_timeout. Only time spent
	// waiting on the provider counts, not a slow caller. Zero means 10
	// minutes, room for reasoning models that think between two pieces;
	// negative means no limit. The time to response headers is bounded by
	// request timeouts instead.
	StreamIdleTimeout time.Duration

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
	// means no request logs. A request that failed authentication is no
	// request log: AuthFailures counts it.
	LogSink LogSink

	// LogSinks receive the records of authenticated data-plane requests
	// (control-plane requests are audited, not logged; a request that
	// failed authentication is counted by AuthFailures), each from a
	// queue of LogQueueSize records and a goroutine of its own, so that
	// one slow sink never holds up another, nor a response. A record a
	// full queue cannot take is dropped and counted (DroppedLogs). A
	// product that keeps request logs (a store, an exporter) is one of
	// these; LogSink above is the line per request of every request.
	//
	// A BatchLogSink gets its records a batch at a time: a record waits at
	// most 5 ms for its batch, 50 ms under load (800 requests a second and
	// more), so that a store pays for a write once per window; that is
	// what a crash of the process may lose of them besides the batch
	// being written. A batch it fails to keep is counted by DroppedLogs,
	// and the first failure of a run, and the recovery, are logged.
	LogSinks []LogSink

	// Admissions decide, in order, whether an authenticated data-plane
	// request may go on, after its endpoint accepted it and before it is
	// rate-limited and routed; each is settled with the request's final
	// record (see Admission).
	Admissions []Admission

	// Hooks checks the requests whose config attaches guardrails, and
	// their answers (see Hooks). Nil refuses such a config: without a
	// product to check them, its guardrails would be ignored.
	Hooks Hooks

	// LogQueueSize is how many records may wait for a slow LogSink before
	// new ones are dropped (and counted by DroppedLogs). Zero means 4096.
	LogQueueSize int

	// LogBodies keeps each data-plane request's body and its answer's in
	// its request log (RequestLog.RequestBody, ResponseBody), for GET
	// /logs/{id}. Off by default: bodies carry what callers send models.
	// Kept are the first LogBodyMax bytes of each (the record says when
	// more was sent), decoded from gzip or deflate; credentials are
	// redacted: headers are never kept, the values of credential-like
	// names in JSON and form bodies (api_key, apiKey, x-api-key, password,
	// secret, token, authorization, …) are replaced by "[REDACTED]", as is
	// any copy in a body of a credential the request's headers carried;
	// base64 data: URLs are elided; bodies of other types (audio, images,
	// multipart uploads) are a note of their size. Streamed answers are
	// kept as the event stream's bytes. With it off, the request path does
	// no work and no allocation for it.
	LogBodies bool

	// LogBodyMax caps each body LogBodies keeps, in bytes. Zero means
	// 16 KiB.
	LogBodyMax int

	// Prices prices each request's tokens for its log record (Cost) in
	// USD, by provider kind and model (see PriceTable.Lookup). Nil means
	// DefaultPrices(); an empty, non-nil table prices nothing, so that
	// every request that used tokens is logged with CostUnknown. A model
	// the table does not price costs 0 and is logged with CostUnknown;
	// cache hits cost 0. New keeps a copy: changing the map afterwards
	// does not reach the gateway.
	Prices PriceTable

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
// typed endpoints (translated for providers that do not speak OpenAI's
// API), the control routes products add with Handle (package admin's API
// keys, virtual keys, configs, workspaces and rate-limits policies,
// package observe's logs, package budget's usage limits, …), and pass-through of every other path to the selected
// provider. It is safe for concurrent use. Close stops its log goroutine.
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
	sinks     []*logQueue                                                   // Options.LogSinks'
	signed    []func(w http.ResponseWriter, r *http.Request) (string, bool) // HandleSigned's
	errLog    *slog.Logger

	cache         *responseCache // nil: caching disabled
	inlineConfigs *lru.Cache[[sha256.Size]byte, *Config]
	savedConfigs  savedConfigCache
	baseURLs      *lru.Cache[string, *url.URL] // virtual keys' base URLs, parsed
	wsGuardrails  *lru.Cache[string, wsHooks]  // workspaces' default guardrails, read from Options.Workspaces

	now func() time.Time // nil: time.Now; tests move the clock of keys' expiry and rotation

	prices PriceTable // Options.Prices resolved; read-only
	ids    uuidGen    // request log ids

	authFailures authFailureCounts // requests refused by the authentication stage (AuthFailures)

	breakers   Breakers      // Options.Breakers, else in memory
	limits     *limits       // the limits stage
	admissions []Admission   // Options.Admissions
	streamIdle time.Duration // Options.StreamIdleTimeout resolved; 0: no limit
	handler    http.Handler  // the pipeline: see Gateway.pipeline
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
	if g.breakers = opts.Breakers; g.breakers == nil {
		g.breakers = &memoryBreakers{}
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
	g.baseURLs, _ = lru.New[string, *url.URL](maxBaseURLs)
	g.wsGuardrails, _ = lru.New[string, wsHooks](maxBaseURLs)
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
	for i, sink := range opts.LogSinks {
		if sink == nil {
			panic("gateway: Options.LogSinks[" + strconv.Itoa(i) + "] is nil")
		}
		g.sinks = append(g.sinks, newSinkQueue(sink, opts.LogQueueSize, g.errLog))
	}
	for i, a := range opts.Admissions {
		if a == nil {
			panic("gateway: Options.Admissions[" + strconv.Itoa(i) + "] is nil")
		}
	}
	g.limits = newLimits(opts.Policies, g.opts.Limiter, g.errLog)
	if g.prices = maps.Clone(opts.Prices); g.prices == nil {
		g.prices = DefaultPrices()
	}
	g.admissions = slices.Clone(opts.Admissions)
	switch {
	case opts.StreamIdleTimeout == 0:
		g.streamIdle = defaultStreamIdleTimeout
	case opts.StreamIdleTimeout > 0:
		g.streamIdle = opts.StreamIdleTimeout
	}
	g.mux = http.NewServeMux()
	g.routes()
	g.handler = g.pipeline()
	return g
}

// Close stops the gateway's log goroutine after handing every queued
// record to the LogSink, and closes the idle upstream connections of the
// transports the gateway made itself. Requests still being served after
// Close are not logged. Close is safe to call more than once.
func (g *Gateway) Close() error {
	for _, q := range g.sinks {
		q.close()
	}
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
	// The control plane is the products': each registers its routes
	// with Handle (package admin, observe, budget, …).
	g.protocolRoutes(p)
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
