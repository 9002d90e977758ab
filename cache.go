package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"
)

// Cache stores complete provider responses for the response cache. Keys
// are opaque strings of at most 64 bytes, already partitioned by
// workspace, provider, upstream URL, credential, request and cache
// namespace; a Cache need not look into them. Implementations must be safe
// for concurrent use. Get returns ErrCacheMiss (possibly wrapped) for a
// key it does not hold or holds no longer; any other error is logged and
// treated as a miss. The gateway never modifies a *CachedResponse it
// passed to Put or received from Get.
type Cache interface {
	Get(ctx context.Context, key string) (*CachedResponse, error)
	Put(ctx context.Context, key string, res *CachedResponse, ttl time.Duration) error
}

// ErrCacheMiss is returned by Cache.Get for a key it does not hold.
var ErrCacheMiss = errors.New("gateway: cache miss")

// CachedResponse is a complete provider response: status 200, the
// provider's headers (hop-by-hop, Set-Cookie and x-gateway-* headers
// removed) and the whole body. A streamed response's body is its complete
// SSE stream, ended by data: [DONE].
type CachedResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

// size is what an entry costs a MemoryCache, roughly.
func (r *CachedResponse) size() int64 {
	n := int64(len(r.Body)) + 64
	for k, vs := range r.Header {
		n += int64(len(k))
		for _, v := range vs {
			n += int64(len(v)) + 16
		}
	}
	return n
}

// Defaults of MemoryCache.
const (
	defaultCacheEntries = 10000
	defaultCacheBytes   = 256 << 20
	defaultCacheMaxAge  = 7 * 24 * time.Hour

	// cacheFillTimeout bounds a shared cache fill, which no caller's
	// cancellation stops.
	cacheFillTimeout = 5 * time.Minute
)

// MemoryCache is the default Cache: an in-memory LRU, bounded by entries
// and by bytes, whose entries each expire after the ttl they were put with.
// The zero value is ready to use with the defaults. It is safe for
// concurrent use. Its fields must not change after first use.
//
// Entries are kept in a golang-lru/v2 expirable.LRU without a cache-wide
// TTL (entries carry their own expiry, checked on Get), so no cleanup
// goroutine runs: an expired entry is dropped when it is next looked up or
// when it becomes the least recently used.
type MemoryCache struct {
	// MaxEntries bounds the number of entries. Zero means 10,000.
	MaxEntries int

	// MaxBytes bounds the total size of bodies and headers kept; a single
	// response larger than a quarter of it is not stored. Zero means
	// 256 MiB.
	MaxBytes int64

	once sync.Once
	mu   sync.Mutex // guards lru and size: every call into lru holds it
	lru  *expirable.LRU[string, *memoryEntry]
	size int64
}

type memoryEntry struct {
	res     *CachedResponse
	expires time.Time
	size    int64
}

var _ Cache = (*MemoryCache)(nil)

func (c *MemoryCache) init() {
	c.once.Do(func() {
		n := c.MaxEntries
		if n <= 0 {
			n = defaultCacheEntries
		}
		if c.MaxBytes <= 0 {
			c.MaxBytes = defaultCacheBytes
		}
		// onEvict runs inside lru calls, which all hold c.mu.
		c.lru = expirable.NewLRU[string, *memoryEntry](n, func(_ string, e *memoryEntry) { c.size -= e.size }, 0)
	})
}

// Get implements Cache.
func (c *MemoryCache) Get(_ context.Context, key string) (*CachedResponse, error) {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(key)
	if !ok {
		return nil, ErrCacheMiss
	}
	if !time.Now().Before(e.expires) {
		c.lru.Remove(key)
		return nil, ErrCacheMiss
	}
	return e.res, nil
}

// Put implements Cache. A ttl ≤ 0 stores nothing.
func (c *MemoryCache) Put(_ context.Context, key string, res *CachedResponse, ttl time.Duration) error {
	c.init()
	size := res.size() + int64(len(key))
	if ttl <= 0 || size > c.MaxBytes/4 {
		return nil
	}
	e := &memoryEntry{res: res, expires: time.Now().Add(ttl), size: size}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(key) // Add does not report the value it replaces
	c.lru.Add(key, e)
	c.size += size
	for c.size > c.MaxBytes {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
	return nil
}

// responseCache is the gateway's cache with its in-flight fills.
type responseCache struct {
	store Cache
	fills singleflight.Group
}

func newResponseCache(o Options) *responseCache {
	if o.DisableCache {
		return nil
	}
	c := o.Cache
	if c == nil {
		c = &MemoryCache{}
	}
	return &responseCache{store: c}
}

// fillResult is what a shared cache fill hands every caller waiting on it.
type fillResult struct {
	held    *heldResponse // the provider's answer, complete
	retries int
	err     error
}

// cached runs a leaf whose config enables the cache: a lookup (unless the
// caller forces a refresh), then the attempts. Concurrent identical misses
// share one fill, detached from any one caller; a streamed request is not
// shared but goes to its caller as it arrives, and is stored once complete.
func (x *run) cached(l *attemptLoop) outcome {
	key, ok := x.cacheKey(l)
	if !ok {
		x.st.log.CacheStatus = CacheDisabled
		out := l.run()
		x.retries += l.retries
		return out
	}
	ctx := x.r.Context()
	store := x.g.cache.store
	status := CacheMiss
	if x.st.opts.CacheForceRefresh {
		status = CacheRefresh
	} else {
		res, err := store.Get(ctx, key)
		if err == nil {
			x.st.log.CacheStatus = CacheHit
			x.writeHeld(&heldResponse{status: res.Status, header: res.Header, body: res.Body, target: l.t}, CacheHit)
			return outcome{done: true}
		}
		if !errors.Is(err, ErrCacheMiss) {
			x.g.errLog.WarnContext(ctx, "gateway: cache lookup failed", "err", err)
		}
	}
	x.st.log.CacheStatus = status
	l.cache, l.watch = status, true
	ttl := defaultCacheMaxAge
	if l.t.Cache.MaxAge > 0 {
		ttl = time.Duration(l.t.Cache.MaxAge) * time.Second
	}

	if streamRequested(x.r, l.body) {
		tw := &teeWriter{ResponseWriter: x.w, limit: x.g.opts.MaxBodyBytes}
		l.w = tw
		out := l.run()
		x.retries += l.retries
		if out.done && tw.status != 0 && !l.broken {
			if res := cacheable(tw.status, tw.header, tw.buf.Bytes(), tw.over); res != nil {
				put(x.g, context.WithoutCancel(ctx), key, res, ttl)
			}
		}
		return out
	}

	// The fill's request carries no requestState, so that it never
	// touches the state of the caller who happened to start it.
	fctx := context.WithValue(context.WithoutCancel(ctx), stateKey{}, (*requestState)(nil))
	fl := *l
	fl.detached, fl.moveOn, fl.r = true, nil, x.r.Clone(fctx)
	ch := x.g.cache.fills.DoChan(flightKey(status, key, &fl), func() (any, error) {
		return x.g.fill(fctx, &fl, key, ttl), nil
	})
	select {
	case <-ctx.Done():
		return outcome{done: true}
	case res := <-ch:
		fr := res.Val.(*fillResult)
		x.retries += fr.retries
		switch {
		case fr.err != nil:
			return outcome{err: fr.err}
		case fr.held.status >= 200 && fr.held.status <= 299:
			x.writeHeld(fr.held, status)
			return outcome{done: true}
		}
		h := *fr.held
		h.cache = status
		return outcome{held: &h}
	}
}

// flightKey names a shared cache fill. Callers share one only when it
// makes the same attempts for each of them, so that none gets an answer
// shaped by another's request timeout or retry settings.
func flightKey(status, key string, l *attemptLoop) string {
	k := status + key + "/" + strconv.FormatInt(int64(l.timeout), 10)
	if rc := l.t.Retry; rc != nil && rc.Attempts > 0 {
		k += fmt.Sprintf("/%d/%v/%t", rc.Attempts, rc.OnStatusCodes, rc.UseRetryAfterHeader)
	}
	return k
}

// fill makes a shared cache fill's attempts into memory and stores a
// complete 200 answer; l.r is a clone of the request of the caller who
// started it. It runs on a goroutine of singleflight's, bounded by
// cacheFillTimeout rather than by any caller.
func (g *Gateway) fill(ctx context.Context, l *attemptLoop, key string, ttl time.Duration) (fr *fillResult) {
	ctx, cancel := context.WithTimeoutCause(ctx, cacheFillTimeout, errors.New("gateway: cache fill timed out"))
	defer cancel()
	rec := &fillRecorder{header: make(http.Header), limit: g.opts.MaxBodyBytes}
	l.w, l.r = rec, l.r.WithContext(ctx)
	defer func() {
		if p := recover(); p != nil {
			// The provider's answer broke off (http.ErrAbortHandler from
			// the ReverseProxy) or worse: the waiting callers get a 502.
			if p != http.ErrAbortHandler {
				g.errLog.Error("gateway: cache fill panicked", "panic", fmt.Sprint(p))
			}
			fr = &fillResult{retries: l.retries, err: ErrUpstreamUnreachable}
		}
	}()
	out := l.run()
	fr = &fillResult{retries: l.retries, held: out.held, err: out.err}
	if out.done && (rec.over || l.broken) {
		// Without an http.Server the ReverseProxy does not abort an
		// answer it could not copy whole: it returns as if it had.
		return &fillResult{retries: l.retries, err: ErrUpstreamUnreachable}
	}
	if out.done {
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		fr.held = &heldResponse{status: rec.status, header: rec.header, body: rec.buf.Bytes(), target: l.t, cache: l.cache}
		if res := cacheable(rec.status, rec.header, fr.held.body, false); res != nil {
			put(g, ctx, key, res, ttl)
		}
	}
	if fr.held == nil && fr.err == nil {
		fr.err = ErrUpstreamUnreachable
	}
	if fr.held != nil {
		// Every caller waiting on the fill gets this answer: a cookie the
		// provider set for one client is given to none, as on a HIT.
		fr.held.header.Del("Set-Cookie")
	}
	return fr
}

func put(g *Gateway, ctx context.Context, key string, res *CachedResponse, ttl time.Duration) {
	if err := g.cache.store.Put(ctx, key, res, ttl); err != nil {
		g.errLog.WarnContext(ctx, "gateway: cache store failed", "err", err)
	}
}

// cacheable returns the stored form of a response, or nil when it must not
// be stored: only complete 200 answers are, and a server-sent event stream
// only when it ended with data: [DONE].
func cacheable(status int, header http.Header, body []byte, truncated bool) *CachedResponse {
	if status != http.StatusOK || truncated {
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(header.Get("Content-Type")); mt == "text/event-stream" {
		if !bytes.HasSuffix(bytes.TrimRight(body, " \r\n"), []byte("data: [DONE]")) {
			return nil
		}
	}
	h := make(http.Header, len(header))
	for k, v := range header {
		switch {
		case strings.HasPrefix(k, "X-Gateway-"), k == "Set-Cookie", k == "Content-Length":
		default:
			h[k] = slices.Clone(v)
		}
	}
	return &CachedResponse{Status: status, Header: h, Body: bytes.Clone(body)}
}

// streamRequested reports whether the caller asked for a server-sent event
// stream: "stream": true in the JSON body, or Accept: text/event-stream.
func streamRequested(r *http.Request, body []byte) bool {
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		return true
	}
	if !bytes.Contains(body, []byte(`"stream"`)) {
		return false
	}
	var v struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(body, &v) == nil && v.Stream
}

// cacheKey derives the cache key of a leaf's request: the workspace, the
// provider and the upstream URL its Provider resolves, the credential's
// identity (a virtual key's slug, else a digest of the token: never the
// token), method, path, query, the body after overrides, the content
// negotiation headers, and the namespace or else the metadata and
// forwarded headers. It reports false when the upstream URL cannot be
// resolved, and the request then bypasses the cache.
func (x *run) cacheKey(l *attemptLoop) (string, bool) {
	t := l.t
	out := x.r.Clone(x.r.Context())
	out.Header = make(http.Header)
	out.Body = io.NopCloser(bytes.NewReader(l.body))
	out.ContentLength = int64(len(l.body))
	pr := ProxyRequest{In: x.r, Out: out, Path: x.path, RawPath: x.rawPath, Target: t}
	if err := l.prov.Rewrite(&pr); err != nil || out.URL == nil {
		return "", false
	}
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		io.WriteString(h, s)
	}
	field("gateway-cache-v1")
	field(x.st.identity.WorkspaceID)
	field(t.Provider)
	field(out.URL.String())
	if t.VirtualKey != "" {
		field("virtual-key")
		field(t.VirtualKey)
	} else {
		field("token")
		field(secretDigest(t.APIKey, t.Host.AccessKeyID, t.Host.SecretAccessKey, t.Host.SessionToken))
	}
	field(x.r.Method)
	field(x.path)
	field(x.r.URL.RawQuery)
	field(string(l.body))
	field(x.r.Header.Get("Accept"))
	field(x.r.Header.Get("Accept-Encoding"))
	if ns := x.st.opts.CacheNamespace; ns != "" {
		field("namespace")
		field(ns)
	} else {
		field("metadata")
		md := x.st.opts.Metadata
		keys := make([]string, 0, len(md))
		for k := range md {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			field(k)
			field(md[k])
		}
		field("headers")
		for _, n := range t.ForwardHeaders {
			field(n)
			for _, v := range x.r.Header[n] {
				field(v)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// secretDigest identifies credentials without keeping them.
func secretDigest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		io.WriteString(h, p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// teeWriter passes a streamed response to the caller as it arrives and
// keeps a copy, up to limit bytes, for the cache.
type teeWriter struct {
	http.ResponseWriter
	limit  int64
	status int
	header http.Header
	buf    bytes.Buffer
	over   bool
}

func (w *teeWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
		w.header = w.ResponseWriter.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	if !w.over {
		if int64(w.buf.Len()+n) > w.limit {
			w.over = true
			w.buf = bytes.Buffer{}
		} else {
			w.buf.Write(p[:n])
		}
	}
	return n, err
}

// Flush sends buffered data to the client.
func (w *teeWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap returns the underlying ResponseWriter, for http.ResponseController.
func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// fillRecorder is the ResponseWriter of a shared cache fill.
type fillRecorder struct {
	header http.Header
	status int
	buf    bytes.Buffer
	limit  int64
	over   bool // a write went past limit: the answer is not whole
}

func (w *fillRecorder) Header() http.Header { return w.header }

func (w *fillRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
}

// errFillTooLarge breaks off a cache fill whose answer exceeds the body
// limit: the ReverseProxy then aborts the fill and its callers get a 502.
var errFillTooLarge = errors.New("gateway: cached response exceeds the body limit")

func (w *fillRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if int64(w.buf.Len()+len(p)) > w.limit {
		w.over = true
		return 0, errFillTooLarge
	}
	return w.buf.Write(p)
}

func (w *fillRecorder) Flush() {}
