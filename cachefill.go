package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// responseCache is the gateway's cache with its in-flight fills.
type responseCache struct {
	store Cache
	fills singleflight.Group

	mu      sync.Mutex         // guards flights, each flight's callers, settled and abandoned, and the keys of the calls in fills
	flights map[string]*flight // the callers of each fill under way, by the key of its call in fills
}

// flight counts the callers of one shared cache fill: the caller who led
// it, whose answer may stream as it arrives, and those waiting on it. A
// fill goes on when one of them leaves, but one that all of them left
// before its answer was complete is cancelled and stores nothing: a
// provider is not kept answering (and billing) for nobody.
type flight struct {
	key       string                  // the key of the fill's call in responseCache.fills
	run       func() (any, error)     // the fill, as singleflight calls it
	callers   int                     // the callers still waiting on the fill
	settled   bool                    // the fill's answer is complete: leaving no longer ends it
	abandoned bool                    // every caller left first: the fill was cancelled
	cancel    context.CancelCauseFunc // ends the fill's context
}

// errFillAbandoned ends a shared cache fill that every caller left before
// its answer was complete.
var errFillAbandoned = errors.New("gateway: every caller of the cache fill left")

// join makes the caller whose writer is fw one of the callers of the fill
// named key, and returns the channel on which its result comes. When no
// such fill is under way it starts one, run, with a context of parent's
// that is cancelled (errFillAbandoned) once every caller left before the
// fill settled. fw.release is the caller's leave: it must be called when
// the caller stops waiting on the fill, and may be called more than once.
//
// join, leave and done keep flights and fills in step under c.mu: a key
// names a flight exactly while singleflight has a call under way for it
// that the flight counts the callers of, so that no caller joins a call
// without being counted, nor a call that was given up.
func (c *responseCache) join(key string, fw *fillWriter, parent context.Context, run func(context.Context, *flight) *fillResult) <-chan singleflight.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flights[key]
	if f == nil {
		ctx, cancel := context.WithCancelCause(parent)
		f = &flight{key: key, cancel: cancel}
		f.run = func() (any, error) {
			defer c.done(f)
			return run(ctx, f), nil
		}
		if c.flights == nil {
			c.flights = make(map[string]*flight)
		}
		c.flights[key] = f
	}
	f.callers++
	fw.release = sync.OnceFunc(func() { c.leave(f) })
	return c.fills.DoChan(key, f.run)
}

// leave is called once by each caller of f who stops waiting on it before
// its result came. The last one to leave an unsettled fill cancels it, and
// the next identical request starts a fill of its own.
func (c *responseCache) leave(f *flight) {
	c.mu.Lock()
	f.callers--
	abandon := f.callers == 0 && !f.settled
	if abandon {
		f.settled, f.abandoned = true, true
		c.forget(f)
	}
	c.mu.Unlock()
	if abandon {
		f.cancel(errFillAbandoned)
	}
}

// settle is called by the fill once its attempts ended: from then on the
// fill is not cancelled when its callers leave, so that a complete answer
// is stored. It reports false when every caller left first, and the fill
// must store nothing.
func (c *responseCache) settle(f *flight) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.abandoned {
		return false
	}
	f.settled = true
	return true
}

// done is called when the fill f returns: identical requests that come
// after it start a fill of their own (or find its stored answer).
func (c *responseCache) done(f *flight) {
	c.mu.Lock()
	f.settled = true
	c.forget(f)
	c.mu.Unlock()
	f.cancel(nil)
}

// forget removes f from the fills under way. c.mu must be held.
func (c *responseCache) forget(f *flight) {
	if c.flights[f.key] == f {
		delete(c.flights, f.key)
		c.fills.Forget(f.key)
	}
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

	// firstByte is when the first byte of the provider's answer body
	// reached the fill, for the request logs of its callers.
	firstByte time.Time
	err       error
}

// cached runs a leaf whose config enables the cache: a lookup (unless the
// caller forces a refresh), then the attempts. Concurrent identical misses
// share one fill, detached from any one caller's cancellation: it goes on
// while one of its callers waits on it, and is cancelled, storing nothing,
// once all of them left before its answer was complete.
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
	if l.t.cache.MaxAge > 0 {
		ttl = time.Duration(l.t.cache.MaxAge) * time.Second
	}
	stream := streamRequested(x.r, l.body)

	// The fill's request carries a requestState of its own, so that it
	// never touches the state of the caller who happened to start it; what
	// the callers need of it (whether a provider was reached) comes back in
	// the fillResult. Its context is not the caller's: the fill ends only
	// when every caller left (see join), or after cacheFillTimeout.
	fst := &requestState{}
	fctx := context.WithValue(context.WithoutCancel(ctx), stateKey{}, fst)
	fl := *l
	fl.detached, fl.moveOn, fl.r = true, nil, x.r.Clone(fctx)
	fw := &fillWriter{header: make(http.Header), limit: x.g.opts.MaxBodyBytes, shared: true, w: x.w}
	if stream {
		fw.pass = pass2xx
	}
	again := status == CacheMiss // a refresh must reach the provider
	ch := x.g.cache.join(flightKey(status, key, &fl), fw, fctx, func(ctx context.Context, f *flight) (fr *fillResult) {
		defer func() {
			// singleflight re-panics on a goroutine of its own, where
			// nothing could recover: a panicking Cache would end the
			// process. The callers get a 502 instead.
			if p := recover(); p != nil {
				x.g.errLog.Error("gateway: cache fill panicked", "panic", fmt.Sprint(p))
				fr = &fillResult{w: fw, err: ErrUpstreamUnreachable, upstream: fst.upstream.Load(), firstByte: fst.firstByte}
			}
		}()
		fr = x.g.fill(ctx, &fl, fw, f, key, ttl, again) // ctx: the fill's, never the caller's
		fr.upstream, fr.firstByte = fst.upstream.Load(), fst.firstByte
		return fr
	})
	var fr *fillResult
	select {
	case <-ctx.Done():
		// Only this caller stops waiting: the fill goes on for the
		// others, and no longer writes to this caller. The last caller
		// to leave ends it.
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
		x.st.firstByte = fr.firstByte
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
	// called again at once by each follower. A follower's log says the
	// answer cost nothing: the leader's says what the provider charged.
	x.retries += fr.retries
	x.st.firstByte, x.st.shared = fr.firstByte, !leader
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
func (x *run) hit(res *CachedResponse, t *routedTarget) {
	x.st.log.CacheStatus = CacheHit
	x.cacheHit = true
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
func flightKey(status CacheStatus, key string, l *attemptLoop) string {
	k := string(status) + key + "/" + strconv.FormatInt(int64(l.timeout), 10)
	if rc := l.t.retry; rc != nil && rc.Attempts > 0 {
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
// bounded by cacheFillTimeout rather than by any one caller, except that
// an answer still streaming to the caller who led the fill is not cut; ctx
// is cancelled when every caller of f left, and the fill then stores
// nothing. When again is set it first looks up key once more, for a caller
// who missed just as an earlier fill stored the answer.
func (g *Gateway) fill(ctx context.Context, l *attemptLoop, fw *fillWriter, f *flight, key string, ttl time.Duration, again bool) *fillResult {
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
	if !g.cache.settle(f) {
		// Every caller left before the answer was complete: the call
		// was cancelled, and what came of it is no one's.
		fr.err = errFillAbandoned
		return fr
	}
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
