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
	w        *fillWriter     // the writer of the caller who led the fill
	hit      *CachedResponse // an entry stored by an earlier fill, found on a second look
	held     *heldResponse   // the provider's answer, complete and kept whole
	stored   *CachedResponse // the stored form of held, when it could be stored
	large    bool            // the answer was too long to keep: nothing is held
	broken   bool            // the answer broke off after it had started
	upstream bool            // the fill handed a request to a provider's transport
	retries  int
	err      error
}

// cached runs a leaf whose config enables the cache: a lookup (unless the
// caller forces a refresh), then the attempts. Concurrent identical misses
// share one fill, detached from any one caller's cancellation.
//
// The caller who leads a fill of a streamed request gets the provider's
// events as they arrive, while the fill keeps a copy; callers who join it
// are served the stored stream once it is complete, as a HIT, and make
// their own attempt when it could not be stored. A fill of an answer that
// is not streamed is kept whole and shared by every caller waiting on it;
// an answer too long to keep (over Options.MaxBodyBytes) goes on to the
// leader as it arrives instead, and every other caller makes its own
// attempt, since nothing of it was kept for them.
//
// The fill writes to the leader's connection as the provider's answer
// arrives, so followers of a streamed fill wait for the whole stream at the
// pace the leader's client reads it: a client that stalls holds them until
// the write to it fails (examples/server bounds each write with
// -write-timeout). A provider's error answer and the gateway's own (a 408,
// say) are shared by every caller, streamed or not.
func (x *run) cached(l *attemptLoop) outcome {
	key, ok := x.cacheKey(l)
	if !ok {
		x.st.log.CacheStatus = CacheDisabled
		out := l.run()
		x.retries += l.retries
		return out
	}
	ctx := x.r.Context()
	status := CacheMiss
	if x.st.opts.CacheForceRefresh {
		status = CacheRefresh
	} else if res, ok := x.g.lookup(ctx, key); ok {
		x.hit(res, l.t)
		return outcome{done: true}
	}
	x.st.log.CacheStatus = status
	l.cache, l.watch = status, true
	ttl := defaultCacheMaxAge
	if l.t.Cache.MaxAge > 0 {
		ttl = time.Duration(l.t.Cache.MaxAge) * time.Second
	}
	stream := streamRequested(x.r, l.body)

	// The fill's request carries a requestState of its own, so that it
	// never touches the state of the caller who happened to start it; what
	// the callers need of it (whether a provider was reached) comes back in
	// the fillResult.
	fst := &requestState{}
	fctx := context.WithValue(context.WithoutCancel(ctx), stateKey{}, fst)
	fl := *l
	fl.detached, fl.moveOn, fl.r = true, nil, x.r.Clone(fctx)
	fw := &fillWriter{header: make(http.Header), limit: x.g.opts.MaxBodyBytes, shared: true, w: x.w}
	if stream {
		fw.pass = pass2xx
	}
	again := status == CacheMiss // a refresh must reach the provider
	ch := x.g.cache.fills.DoChan(flightKey(status, key, &fl), func() (v any, err error) {
		defer func() {
			// singleflight re-panics on a goroutine of its own, where
			// nothing could recover: a panicking Cache would end the
			// process. The callers get a 502 instead.
			if p := recover(); p != nil {
				x.g.errLog.Error("gateway: cache fill panicked", "panic", fmt.Sprint(p))
				v = &fillResult{w: fw, err: ErrUpstreamUnreachable, upstream: fst.upstream.Load()}
			}
		}()
		fr := x.g.fill(fctx, &fl, fw, key, ttl, again)
		fr.upstream = fst.upstream.Load()
		return fr, nil
	})
	var fr *fillResult
	select {
	case <-ctx.Done():
		// Only this caller stops waiting: the fill goes on for the
		// others, and no longer writes to this caller.
		if fw.detach() {
			x.abort() // part of the answer went out
		}
		return outcome{done: true}
	case res := <-ch:
		fr = res.Val.(*fillResult)
	}
	if fr.upstream {
		x.st.upstream.Store(true)
	}
	leader := fr.w == fw
	switch {
	case fr.hit != nil:
		x.hit(fr.hit, l.t)
		return outcome{done: true}
	case leader && fw.sent:
		// The answer went to this caller as it arrived.
		x.retries += fr.retries
		x.st.log.Status = fw.status
		fw.trailers(x.w.Header())
		if fr.broken {
			x.abort()
		}
		return outcome{done: true}
	case fr.large, stream && fr.broken:
		// Nothing whole was kept for this caller: it makes its own
		// attempt, as if the cache were not there.
		return x.direct(l, key, ttl)
	case stream && fr.stored != nil && status == CacheMiss:
		// Replayed from the entry the leader's stream filled. (A forced
		// refresh's followers get it below, as REFRESH.)
		x.hit(fr.stored, l.t)
		return outcome{done: true}
	case stream && fr.stored == nil && fr.err == nil && fr.held.status >= 200 && fr.held.status <= 299:
		// The leader's stream went out live but could not be stored
		// (it did not end with data: [DONE]): it may have been cut, so
		// each follower makes its own attempt.
		return x.direct(l, key, ttl)
	}
	// A stored answer (for a forced refresh), a provider's error answer
	// and the gateway's own are shared by every caller of the fill,
	// streamed or not: a provider that refused one call (429, say) is not
	// called again at once by each follower.
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

// hit answers the caller from a cache entry.
func (x *run) hit(res *CachedResponse, t *Target) {
	x.st.log.CacheStatus = CacheHit
	x.writeHeld(&heldResponse{status: res.Status, header: res.Header, body: res.Body, target: t}, CacheHit)
}

// direct makes the caller's own attempts on its own goroutine, the answer
// going to the caller as it arrives, and stores it when it can be stored:
// the way of a caller a shared fill could not serve.
func (x *run) direct(l *attemptLoop, key string, ttl time.Duration) outcome {
	fw := &fillWriter{header: make(http.Header), limit: x.g.opts.MaxBodyBytes, pass: passAll, w: x.w}
	l.w = fw
	out := l.run()
	x.retries += l.retries
	if fw.sent {
		fw.trailers(x.w.Header())
	}
	if out.done && !l.broken {
		if res := cacheable(fw.status, fw.header, fw.buf.Bytes(), fw.over); res != nil {
			put(x.g, context.WithoutCancel(x.r.Context()), key, res, ttl)
		}
	}
	return out
}

// abort breaks off the caller's response, part of which went out, as the
// ReverseProxy does with an answer that broke off: the client must not
// take it for a whole one. Without an http.Server (a handler called
// directly), there is no connection to drop and it does nothing.
func (x *run) abort() {
	if x.r.Context().Value(http.ServerContextKey) != nil {
		panic(http.ErrAbortHandler)
	}
}

// lookup gets key from the cache; a failing cache is a miss.
func (g *Gateway) lookup(ctx context.Context, key string) (*CachedResponse, bool) {
	res, err := g.cache.store.Get(ctx, key)
	if err == nil {
		return res, true
	}
	if !errors.Is(err, ErrCacheMiss) {
		g.errLog.WarnContext(ctx, "gateway: cache lookup failed", "err", err)
	}
	return nil, false
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

// errFillTimeout ends a shared cache fill that ran for cacheFillTimeout
// with no caller taking its answer as it arrives.
var errFillTimeout = errors.New("gateway: cache fill timed out")

// fill makes a shared cache fill's attempts and stores a complete 200
// answer; l.r is a clone of the request of the caller who started it, and
// fw holds that caller's writer. It runs on a goroutine of singleflight's,
// bounded by cacheFillTimeout rather than by any caller, except that an
// answer still streaming to the caller who led the fill is not cut. When
// again is set it first looks up key once more, for a caller who missed
// just as an earlier fill stored the answer.
func (g *Gateway) fill(ctx context.Context, l *attemptLoop, fw *fillWriter, key string, ttl time.Duration, again bool) *fillResult {
	fr := &fillResult{w: fw}
	if again {
		if res, ok := g.lookup(ctx, key); ok {
			fr.hit = res
			return fr
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	fw.mu.Lock()
	fw.cancel = cancel
	fw.mu.Unlock()
	timer := time.AfterFunc(cacheFillTimeout, fw.expire)
	defer timer.Stop()
	l.w, l.r = fw, l.r.WithContext(ctx)

	out, aborted := g.runFill(l)
	fr.retries = l.retries
	switch {
	case fw.over:
		fr.large, fr.broken = true, aborted || (out.done && l.broken)
		return fr
	case aborted || (out.done && l.broken):
		// Without an http.Server the ReverseProxy does not abort an
		// answer it could not copy whole: it returns as if it had.
		fr.broken, fr.err = true, ErrUpstreamUnreachable
		return fr
	case out.done:
		if fw.status == 0 {
			fw.status = http.StatusOK
		}
		fr.held = &heldResponse{status: fw.status, header: fw.header, body: fw.buf.Bytes(), target: l.t, cache: l.cache}
		if res := cacheable(fw.status, fw.header, fr.held.body, false); res != nil {
			fr.stored = res
			put(g, ctx, key, res, ttl)
		}
	default:
		fr.held, fr.err = out.held, out.err
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

// runFill runs a fill's attempts, reporting whether they panicked: the
// provider's answer broke off (http.ErrAbortHandler from the
// ReverseProxy), the fill gave up an answer too long to keep, or worse.
func (g *Gateway) runFill(l *attemptLoop) (out outcome, aborted bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				g.errLog.Error("gateway: cache fill panicked", "panic", fmt.Sprint(p))
			}
			out, aborted = outcome{}, true
		}
	}()
	return l.run(), false
}

func put(g *Gateway, ctx context.Context, key string, res *CachedResponse, ttl time.Duration) {
	if err := g.cache.store.Put(ctx, key, res, ttl); err != nil {
		g.errLog.WarnContext(ctx, "gateway: cache store failed", "err", err)
	}
}

// cacheable returns the stored form of a response, or nil when it must not
// be stored: only complete 200 answers are, and a server-sent event stream
// only when it ended with data: [DONE]. header is the provider's (as the
// ReverseProxy passed it on, with the gateway's x-gateway-* headers, which
// are dropped), never a caller's response header map, which may hold
// headers the host set for that caller alone.
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
		switch k {
		case "Set-Cookie", "Content-Length", "Trailer",
			"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Transfer-Encoding", "Upgrade":
		default:
			if !strings.HasPrefix(k, "X-Gateway-") {
				h[k] = slices.Clone(v)
			}
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
// token), method, path, query, the body after overrides, the headers that
// reach the provider (see keyedHeader), and the namespace or else the
// metadata. It reports false when the upstream URL cannot be resolved, and
// the request then bypasses the cache.
//
// The headers are those of the upstream request as the Provider builds it
// for an attempt (the same allowed and forwarded headers go in as in
// Gateway.rewrite), so that a provider's own headers (OpenAI-Project,
// anthropic-version, …) and the forward-headers list are all in the key.
func (x *run) cacheKey(l *attemptLoop) (string, bool) {
	t := l.t
	// A shallow copy is enough: Rewrite may replace Out's URL, header,
	// body and host, which are Out's own here, and must not touch the rest.
	out := new(http.Request)
	*out = *x.r
	u := *x.r.URL
	out.URL = &u
	out.Form, out.PostForm, out.MultipartForm, out.Trailer = nil, nil, nil, nil
	out.Header = upstreamHeader(x.r.Header, t.ForwardHeaders)
	out.Body = io.NopCloser(bytes.NewReader(l.body))
	out.ContentLength = int64(len(l.body))
	pr := ProxyRequest{In: x.r, Out: out, Path: x.path, RawPath: x.rawPath, Target: t}
	if err := l.prov.Rewrite(&pr); err != nil || out.URL == nil {
		return "", false
	}
	var arr [1024]byte
	b := keyField(arr[:0], "gateway-cache-v2")
	b = keyField(b, x.st.identity.WorkspaceID)
	b = keyField(b, t.Provider)
	b = keyField(b, out.URL.String())
	if t.VirtualKey != "" {
		b = keyField(b, "virtual-key")
		b = keyField(b, t.VirtualKey)
	} else {
		// A digest of the credentials, so that the key's preimage never
		// holds them.
		var c [256]byte
		cred := keyField(c[:0], t.APIKey)
		cred = keyField(cred, t.Host.AccessKeyID)
		cred = keyField(cred, t.Host.SecretAccessKey)
		cred = keyField(cred, t.Host.SessionToken)
		sum := sha256.Sum256(cred)
		clear(cred)
		b = keyField(b, "token")
		b = binary.BigEndian.AppendUint64(b, sha256.Size)
		b = append(b, sum[:]...)
	}
	b = keyField(b, x.r.Method)
	b = keyField(b, x.path)
	b = keyField(b, x.r.URL.RawQuery)
	b = keyField(b, "body")
	b = binary.BigEndian.AppendUint64(b, uint64(len(l.body)))
	b = append(b, l.body...)
	b = keyField(b, "headers")
	var na [16]string
	names := na[:0]
	for k, v := range out.Header {
		if keyedHeader(k, v, x.r.Header) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		vs := out.Header[k]
		b = keyField(b, k)
		b = binary.BigEndian.AppendUint64(b, uint64(len(vs)))
		for _, v := range vs {
			b = keyField(b, v)
		}
	}
	if ns := x.st.opts.CacheNamespace; ns != "" {
		b = keyField(b, "namespace")
		b = keyField(b, ns)
	} else {
		b = keyField(b, "metadata")
		md := x.st.opts.Metadata
		var ka [16]string
		keys := ka[:0]
		for k := range md {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = keyField(b, k)
			b = keyField(b, md[k])
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), true
}

// keyField appends s to a cache key's preimage, after its length, so that
// no two sequences of fields make the same preimage.
func keyField(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// keyedHeader reports whether a header of the upstream request, with its
// values out, is part of the cache key; in is the caller's request header.
// Every header that reaches the provider is, but those that name the
// request or the client rather than change the answer, and the
// credentials and signatures a Provider sets from the target (their
// identity is in the key already, as a slug or a digest, and a signature
// changes with every request). A credential header the caller sent as it
// reaches the provider, through the forward-headers list, is keyed like
// any other header.
func keyedHeader(name string, out []string, in http.Header) bool {
	switch name {
	case "User-Agent", "Idempotency-Key", "X-Ms-Client-Request-Id":
		return false
	case "Authorization", "Proxy-Authorization", "Api-Key", "X-Api-Key", "X-Goog-Api-Key",
		"X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-Sha256":
		return slices.Equal(out, in[name])
	}
	return len(out) > 0
}

// passMode says when a fillWriter passes the answer on to its caller.
type passMode uint8

const (
	passWhole passMode = iota // keep the answer until it is whole; pass it on only when too long to keep
	pass2xx                   // pass a 2xx answer on as it arrives; keep any other until it is whole
	passAll                   // pass every answer on as it arrives
)

// fillWriter is the ResponseWriter of the attempts of a cache miss. It
// keeps the provider's answer for the cache: the status, the headers the
// ReverseProxy passed on (the provider's and the gateway's x-gateway-*,
// never the caller's response headers, which may hold what the host set
// for that caller alone) and the body up to limit bytes. It passes the
// answer on to the caller's writer w as pass says, and always once the
// body outgrows limit. Informational (1xx) responses are not passed on.
//
// A shared fill's writer runs on the fill's goroutine while its caller
// waits on another: the caller may leave (detach), after which nothing is
// written to w, and a failed write to w detaches it rather than stopping
// the fill, which goes on for the callers waiting on it. A shared fill's
// answer that is too long to keep and that no caller takes is given up
// (errFillTooLarge). Set-Cookie is passed on to no caller of a shared
// fill, as on a HIT.
//
// fillWriter does not implement Unwrap: the caller's writer may be gone.
type fillWriter struct {
	header  http.Header // the headers before the status
	trailer http.Header // set after the status: trailers, passed on by trailers
	status  int
	limit   int64
	buf     bytes.Buffer
	over    bool // the body outgrew limit (or, not shared, a write to w failed): buf is not whole
	pass    passMode
	shared  bool // the writer of a shared fill

	mu      sync.Mutex          // guards w, sent, expired and cancel
	w       http.ResponseWriter // the caller's writer; nil once it left
	sent    bool                // the status went to w: the answer goes on to it as it arrives
	expired bool                // the fill ran for cacheFillTimeout
	cancel  context.CancelCauseFunc
}

// Header returns the header map the ReverseProxy fills: the response
// headers before the status, then the trailers.
func (f *fillWriter) Header() http.Header {
	if f.status != 0 {
		if f.trailer == nil {
			f.trailer = make(http.Header)
		}
		return f.trailer
	}
	return f.header
}

// WriteHeader records the status, and passes it on when pass says so.
func (f *fillWriter) WriteHeader(code int) {
	if f.status != 0 || code < 200 {
		return
	}
	f.status = code
	if f.pass == passAll || (f.pass == pass2xx && code <= 299) {
		f.mu.Lock()
		f.start()
		f.mu.Unlock()
	}
}

// start passes the status and headers on to w. f.mu must be held.
func (f *fillWriter) start() {
	if f.sent || f.w == nil {
		return
	}
	dst := f.w.Header()
	for k, v := range f.header {
		if f.shared && k == "Set-Cookie" {
			continue
		}
		dst[k] = append(slices.Clip(dst[k]), v...) // as the ReverseProxy adds them
	}
	f.w.WriteHeader(f.status)
	f.sent = true
}

// errFillTooLarge gives up a shared cache fill whose answer exceeds the
// body limit and that no caller takes as it arrives.
var errFillTooLarge = errors.New("gateway: cached response exceeds the body limit")

// Write keeps p while the body fits in limit and passes it on to w once
// the answer goes to w.
func (f *fillWriter) Write(p []byte) (int, error) {
	if f.status == 0 {
		f.WriteHeader(http.StatusOK)
	}
	out := p
	if !f.over {
		if int64(f.buf.Len()+len(p)) <= f.limit {
			f.buf.Write(p)
		} else {
			f.over = true
			if !f.sent {
				// Too long to keep: the answer goes on to the caller
				// after all, what was kept first.
				out = append(f.buf.Bytes(), p...)
			}
			f.buf = bytes.Buffer{}
		}
	}
	if !f.sent && !f.over {
		return len(p), nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.start()
	if f.w == nil {
		if f.over {
			return 0, errFillTooLarge
		}
		return len(p), nil
	}
	if _, err := f.w.Write(out); err != nil {
		if !f.shared {
			f.over = true
			return 0, err
		}
		f.leave()
		if f.over {
			return 0, errFillTooLarge
		}
	}
	return len(p), nil
}

// Flush flushes w, when the answer goes to it.
func (f *fillWriter) Flush() { f.FlushError() }

// FlushError flushes w, when the answer goes to it. The error of a shared
// fill's caller detaches it.
func (f *fillWriter) FlushError() error {
	if !f.sent {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.w == nil {
		return nil
	}
	err := http.NewResponseController(f.w).Flush()
	if err != nil && f.shared {
		f.leave()
		return nil
	}
	return err
}

// leave forgets w, and ends a fill that ran out of time and was kept
// going only for w. f.mu must be held.
func (f *fillWriter) leave() {
	f.w = nil
	if f.expired && f.cancel != nil {
		f.cancel(errFillTimeout)
	}
}

// detach is called by the caller of a shared fill who stops waiting for
// it: nothing more is written to its writer. It reports whether part of
// the answer went to it.
func (f *fillWriter) detach() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leave()
	return f.sent
}

// expire ends the fill after cacheFillTimeout, unless its answer is still
// streaming to the caller who led it: that caller's answer is never cut,
// and the fill ends if the caller leaves.
func (f *fillWriter) expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expired = true
	if (!f.sent || f.w == nil) && f.cancel != nil {
		f.cancel(errFillTimeout)
	}
}

// trailers adds the trailers the ReverseProxy set to dst, the caller's
// header map, once the answer went to the caller.
func (f *fillWriter) trailers(dst http.Header) {
	for k, v := range f.trailer {
		dst[k] = append(slices.Clip(dst[k]), v...)
	}
}
