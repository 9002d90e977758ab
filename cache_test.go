package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

const cacheOtherKey = "gw-other-workspace"

// cacheEnv is a routeEnv with a virtual key "shared" (usable by every
// workspace) on up, and a gateway key of a second workspace.
func cacheEnv(t *testing.T, mod func(*Options), up *fakeUp) *coreEnv {
	t.Helper()
	e := routeEnv(t, mod, up)
	e.store.AddVirtualKey(VirtualKey{Slug: "shared", Provider: "openai", APIKey: "sk-shared", BaseURL: up.URL + "/v1"})
	e.store.AddAPIKey(APIKey{ID: "key-ws2", Digest: HashAPIKey(cacheOtherKey), WorkspaceID: "ws-2"})
	return e
}

func TestCacheStatuses(t *testing.T) {
	up := newFakeUp(t, "a", step{body: "v1"}, step{body: "v2"}, step{body: "v3"}, step{body: "v4"}, step{body: "v5"}, step{body: "v6"})
	e := cacheEnv(t, nil, up)
	const cfg = `{"virtual_key":"shared","cache":{"mode":"simple"}}`
	steps := []struct {
		name    string
		body    string
		headers []string
		want    answer
		calls   int
	}{
		{"first request misses", `{"model":"m"}`, nil,
			answer{Status: 200, Body: "v1", Provider: "openai", Index: "config", Retries: "0", Cache: "MISS"}, 1},
		{"the same request hits", `{"model":"m"}`, nil,
			answer{Status: 200, Body: "v1", Provider: "openai", Index: "config", Retries: "0", Cache: "HIT"}, 1},
		{"force refresh skips the lookup and stores", `{"model":"m"}`, []string{"x-gateway-cache-force-refresh: true"},
			answer{Status: 200, Body: "v2", Provider: "openai", Index: "config", Retries: "0", Cache: "REFRESH"}, 2},
		{"the refreshed answer is served", `{"model":"m"}`, []string{"x-gateway-cache-force-refresh: false"},
			answer{Status: 200, Body: "v2", Provider: "openai", Index: "config", Retries: "0", Cache: "HIT"}, 2},
		{"other metadata misses", `{"model":"m"}`, []string{`x-gateway-metadata: {"_user":"u1"}`},
			answer{Status: 200, Body: "v3", Provider: "openai", Index: "config", Retries: "0", Cache: "MISS"}, 3},
		{"a namespace partitions", `{"model":"m"}`, []string{"x-gateway-cache-namespace: ns1", `x-gateway-metadata: {"_user":"u1"}`},
			answer{Status: 200, Body: "v4", Provider: "openai", Index: "config", Retries: "0", Cache: "MISS"}, 4},
		{"a namespace ignores metadata", `{"model":"m"}`, []string{"x-gateway-cache-namespace: ns1", `x-gateway-metadata: {"_user":"u2"}`},
			answer{Status: 200, Body: "v4", Provider: "openai", Index: "config", Retries: "0", Cache: "HIT"}, 4},
		{"another body misses", `{"model":"n"}`, nil,
			answer{Status: 200, Body: "v5", Provider: "openai", Index: "config", Retries: "0", Cache: "MISS"}, 5},
		{"another workspace never shares", `{"model":"m"}`, []string{"other-workspace"},
			answer{Status: 200, Body: "v6", Provider: "openai", Index: "config", Retries: "0", Cache: "MISS"}, 6},
	}
	for _, s := range steps {
		key, headers := coreKey, s.headers
		if len(headers) > 0 && headers[0] == "other-workspace" {
			key, headers = cacheOtherKey, headers[1:]
		}
		h := append([]string{"x-gateway-api-key: " + key, "content-type: application/json", "x-gateway-config: " + cfg}, headers...)
		res := e.do("POST", "/v1/chat/completions", strings.NewReader(s.body), h...)
		got := readAnswer(t, res)
		if d := cmp.Diff(s.want, got); d != "" {
			t.Errorf("%s: answer (-want +got):\n%s", s.name, d)
		}
		if n := int(up.calls.Load()); n != s.calls {
			t.Errorf("%s: %d upstream calls, want %d", s.name, n, s.calls)
		}
	}
	e.gw.Close()
	var logged []string
	for _, r := range e.logs.Query(LogFilter{}) {
		logged = append(logged, string(r.CacheStatus))
	}
	want := []string{"MISS", "HIT", "REFRESH", "HIT", "MISS", "MISS", "HIT", "MISS", "MISS"}
	if d := cmp.Diff(want, logged); d != "" {
		t.Errorf("logged cache statuses (-want +got):\n%s", d)
	}
}

// TestCacheCredentialIsolation: answers fetched with one provider token are
// not served to a caller with another.
func TestCacheCredentialIsolation(t *testing.T) {
	up := newFakeUp(t, "a", step{body: "t1"}, step{body: "t2"})
	e := cacheEnv(t, nil, up)
	cfg := `{"provider":"openai","custom_host":"` + up.URL + `/v1","cache":{"mode":"simple"}}`
	for i, s := range []struct{ token, body, cache string }{
		{"tok-1", "t1", "MISS"}, {"tok-1", "t1", "HIT"}, {"tok-2", "t2", "MISS"}, {"tok-2", "t2", "HIT"},
	} {
		got := readAnswer(t, e.post(cfg, `{}`, "authorization: Bearer "+s.token))
		if got.Body != s.body || got.Cache != s.cache {
			t.Errorf("request %d with %s: got %q %s, want %q %s", i, s.token, got.Body, got.Cache, s.body, s.cache)
		}
	}
}

func TestCacheDisabled(t *testing.T) {
	tests := []struct {
		name, method, path, cfg string
		mod                     func(*Options)
	}{
		{"a route the cache does not cover", "POST", "/v1/responses", `{"virtual_key":"shared","cache":{"mode":"simple"}}`, nil},
		{"a method the cache does not cover", "GET", "/v1/models", `{"virtual_key":"shared","cache":{"mode":"simple"}}`, nil},
		{"a config without cache", "POST", "/v1/chat/completions", `{"virtual_key":"shared"}`, nil},
		{"a request without config", "POST", "/v1/embeddings", ``, nil},
		{"Options.DisableCache", "POST", "/v1/chat/completions", `{"virtual_key":"shared","cache":{"mode":"simple"}}`,
			func(o *Options) { o.DisableCache = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newFakeUp(t, "a")
			e := cacheEnv(t, tt.mod, up)
			for range 2 {
				h := []string{"x-gateway-api-key: " + coreKey}
				if tt.cfg != "" {
					h = append(h, "x-gateway-config: "+tt.cfg)
				} else {
					h = append(h, "x-gateway-virtual-key: shared")
				}
				got := readAnswer(t, e.do(tt.method, tt.path, strings.NewReader(`{}`), h...))
				if got.Status != 200 || got.Cache != string(CacheDisabled) {
					t.Errorf("got %d %q, want 200 DISABLED", got.Status, got.Cache)
				}
			}
			if n := up.calls.Load(); n != 2 {
				t.Errorf("%d upstream calls, want 2", n)
			}
		})
	}
}

func TestCacheStoresOnlyComplete200(t *testing.T) {
	sse := map[string]string{"Content-Type": "text/event-stream"}
	tests := []struct {
		name   string
		body   string
		first  step
		second string // cache status of the second request
	}{
		{"an error is not stored", `{}`, step{status: 500, body: "e"}, "MISS"},
		{"a 201 is not stored", `{}`, step{status: 201, body: "c"}, "MISS"},
		{"a 200 is stored", `{}`, step{status: 200, body: "ok"}, "HIT"},
		{"a stream without [DONE] is not stored", `{"stream":true}`, step{header: sse, body: "data: 1\n\n"}, "MISS"},
		{"a broken stream is not stored", `{"stream":true}`, step{header: sse, body: "data: 1\n\n", cut: true}, "MISS"},
		{"a broken answer is not stored", `{}`, step{body: `{"partial":`, cut: true}, "MISS"},
		{"a complete stream is stored", `{"stream":true}`, step{header: sse, body: "data: 1\n\ndata: [DONE]\n\n"}, "HIT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newFakeUp(t, "a", tt.first)
			e := cacheEnv(t, nil, up)
			const cfg = `{"virtual_key":"shared","cache":{"mode":"simple"}}`
			res := e.post(cfg, tt.body)
			io.Copy(io.Discard, res.Body)
			got := readAnswer(t, e.post(cfg, tt.body))
			if got.Cache != tt.second {
				t.Errorf("second request: cache status %q, want %q", got.Cache, tt.second)
			}
			if tt.second == "HIT" {
				if got.Body != tt.first.body {
					t.Errorf("hit body %q, want %q", got.Body, tt.first.body)
				}
				if n := up.calls.Load(); n != 1 {
					t.Errorf("%d upstream calls, want 1", n)
				}
			}
		})
	}
}

// TestCacheHitReplaysStream: a stored stream comes back as a stream.
func TestCacheHitReplaysStream(t *testing.T) {
	const events = "data: {\"n\":1}\n\ndata: {\"n\":2}\n\ndata: [DONE]\n\n"
	up := newFakeUp(t, "a", step{header: map[string]string{"Content-Type": "text/event-stream", "X-Request-Id": "r1"}, body: events})
	e := cacheEnv(t, nil, up)
	const cfg = `{"virtual_key":"shared","cache":{"mode":"simple"}}`
	for _, want := range []string{"MISS", "HIT"} {
		res := e.post(cfg, `{"model":"m","stream":true}`)
		got := readAnswer(t, res)
		if got.Cache != want || got.Body != events || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("X-Request-Id") != "r1" {
			t.Errorf("%s: got %+v with headers %v", want, got, res.Header)
		}
	}
}

// blockingUp answers 200 once release is closed, counting calls.
type blockingUp struct {
	calls   atomic.Int32
	release chan struct{}
}

func (u *blockingUp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := u.calls.Add(1)
	io.Copy(io.Discard, r.Body)
	<-u.release
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Set-Cookie", "session=secret")
	io.WriteString(w, `{"call":`+string(rune('0'+n))+`}`)
}

func TestCacheConcurrentMissesShareOneCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := &blockingUp{release: make(chan struct{})}
		g := bubbleGateway(t, nil, pipeTransport{"up": up})
		const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
		var wg sync.WaitGroup
		got := make([]answer, 10)
		cookies := make([]string, 10)
		for i := range got {
			wg.Go(func() {
				rec := serve(t.Context(), g, cfg, `{"model":"m"}`)
				got[i] = answer{Status: rec.Code, Body: rec.Body.String(), Cache: rec.Header().Get(HeaderCacheStatus)}
				cookies[i] = rec.Header().Get("Set-Cookie")
			})
		}
		synctest.Wait() // one call at the provider, nine callers waiting for it
		close(up.release)
		wg.Wait()
		for i, a := range got {
			if d := cmp.Diff(answer{Status: 200, Body: `{"call":1}`, Cache: "MISS"}, a); d != "" {
				t.Errorf("caller %d (-want +got):\n%s", i, d)
			}
			if cookies[i] != "" {
				t.Errorf("caller %d got the provider's Set-Cookie %q, meant for one client", i, cookies[i])
			}
		}
		if n := up.calls.Load(); n != 1 {
			t.Errorf("%d upstream calls, want 1", n)
		}
		rec := serve(t.Context(), g, cfg, `{"model":"m"}`)
		if rec.Header().Get(HeaderCacheStatus) != "HIT" || rec.Header().Get("Set-Cookie") != "" {
			t.Errorf("next request: %s with Set-Cookie %q, want a HIT without the cookie", rec.Header().Get(HeaderCacheStatus), rec.Header().Get("Set-Cookie"))
		}
	})
}

// TestCacheFillOutlivesItsCaller: the caller who started a fill leaving
// does not cancel it for the others, and the answer is stored.
func TestCacheFillOutlivesItsCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := &blockingUp{release: make(chan struct{})}
		g := bubbleGateway(t, nil, pipeTransport{"up": up})
		const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
		ctx, cancel := context.WithCancel(t.Context())
		leaderDone := make(chan struct{})
		go func() {
			defer close(leaderDone)
			serve(ctx, g, cfg, `{}`)
		}()
		synctest.Wait()
		var follower answer
		followerDone := make(chan struct{})
		go func() {
			defer close(followerDone)
			rec := serve(t.Context(), g, cfg, `{}`)
			follower = answer{Status: rec.Code, Body: rec.Body.String(), Cache: rec.Header().Get(HeaderCacheStatus)}
		}()
		synctest.Wait()
		cancel()
		<-leaderDone
		close(up.release)
		<-followerDone
		if d := cmp.Diff(answer{Status: 200, Body: `{"call":1}`, Cache: "MISS"}, follower); d != "" {
			t.Errorf("follower (-want +got):\n%s", d)
		}
		if rec := serve(t.Context(), g, cfg, `{}`); rec.Header().Get(HeaderCacheStatus) != "HIT" {
			t.Errorf("next request: %s, want HIT", rec.Header().Get(HeaderCacheStatus))
		}
		if n := up.calls.Load(); n != 1 {
			t.Errorf("%d upstream calls, want 1", n)
		}
	})
}

func TestCacheMaxAge(t *testing.T) {
	tests := []struct {
		name  string
		cfg   string
		fresh time.Duration // still a hit after this long
		stale time.Duration // a miss after this long (from the start)
	}{
		{"max_age in seconds", `{"virtual_key":"up","cache":{"mode":"simple","max_age":60}}`, 59 * time.Second, 61 * time.Second},
		{"seven days by default", `{"virtual_key":"up","cache":{"mode":"simple"}}`, 7*24*time.Hour - time.Second, 7*24*time.Hour + time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				up := &timedUp{}
				g := bubbleGateway(t, nil, pipeTransport{"up": up})
				start := time.Now()
				status := func() string {
					return serve(t.Context(), g, tt.cfg, `{}`).Header().Get(HeaderCacheStatus)
				}
				var got []string
				got = append(got, status())
				time.Sleep(tt.fresh - time.Since(start))
				got = append(got, status())
				time.Sleep(tt.stale - time.Since(start))
				got = append(got, status())
				if d := cmp.Diff([]string{"MISS", "HIT", "MISS"}, got); d != "" {
					t.Errorf("cache statuses (-want +got):\n%s", d)
				}
			})
		})
	}
}

// recordingCache is a Cache that records what the gateway stores.
type recordingCache struct {
	MemoryCache
	mu   sync.Mutex
	keys []string
	ttls []time.Duration
}

func (c *recordingCache) Put(ctx context.Context, key string, res *CachedResponse, ttl time.Duration) error {
	c.mu.Lock()
	c.keys = append(c.keys, key)
	c.ttls = append(c.ttls, ttl)
	c.mu.Unlock()
	return c.MemoryCache.Put(ctx, key, res, ttl)
}

func TestCustomCache(t *testing.T) {
	up := newFakeUp(t, "a")
	c := &recordingCache{}
	e := cacheEnv(t, func(o *Options) { o.Cache = c }, up)
	cfg := `{"provider":"openai","custom_host":"` + up.URL + `/v1","cache":{"mode":"simple","max_age":120}}`
	for _, want := range []string{"MISS", "HIT"} {
		if got := readAnswer(t, e.post(cfg, `{}`, "authorization: Bearer sk-very-secret")); got.Cache != want {
			t.Errorf("cache status %q, want %q", got.Cache, want)
		}
	}
	if d := cmp.Diff([]time.Duration{2 * time.Minute}, c.ttls); d != "" {
		t.Errorf("stored ttls (-want +got):\n%s", d)
	}
	for _, k := range c.keys {
		if len(k) != 64 || strings.Contains(k, "sk-very-secret") {
			t.Errorf("key %q: want a 64-digit digest that holds no token", k)
		}
	}
}

func TestMemoryCacheBounds(t *testing.T) {
	resp := func(n int) *CachedResponse {
		return &CachedResponse{Status: 200, Header: http.Header{}, Body: make([]byte, n)}
	}
	ctx := context.Background()
	present := func(c *MemoryCache, keys ...string) []string {
		var out []string
		for _, k := range keys {
			if _, err := c.Get(ctx, k); err == nil {
				out = append(out, k)
			}
		}
		return out
	}
	t.Run("entries", func(t *testing.T) {
		c := &MemoryCache{MaxEntries: 2}
		c.Put(ctx, "a", resp(1), time.Hour)
		c.Put(ctx, "b", resp(1), time.Hour)
		c.Get(ctx, "a") // b is now the least recently used
		c.Put(ctx, "c", resp(1), time.Hour)
		if d := cmp.Diff([]string{"a", "c"}, present(c, "a", "b", "c")); d != "" {
			t.Errorf("kept (-want +got):\n%s", d)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		c := &MemoryCache{MaxBytes: 4000}
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			c.Put(ctx, k, resp(800), time.Hour)
		}
		c.Put(ctx, "huge", resp(1500), time.Hour) // over a quarter of MaxBytes: not stored
		if d := cmp.Diff([]string{"b", "c", "d", "e"}, present(c, "a", "b", "c", "d", "e", "huge")); d != "" {
			t.Errorf("kept (-want +got):\n%s", d)
		}
	})
	t.Run("replacing an entry", func(t *testing.T) {
		c := &MemoryCache{MaxBytes: 4000}
		for range 10 {
			c.Put(ctx, "a", resp(900), time.Hour)
		}
		c.Put(ctx, "b", resp(900), time.Hour)
		if d := cmp.Diff([]string{"a", "b"}, present(c, "a", "b")); d != "" {
			t.Errorf("kept (-want +got):\n%s", d)
		}
	})
	t.Run("expiry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := &MemoryCache{}
			c.Put(ctx, "a", resp(1), time.Minute)
			c.Put(ctx, "b", resp(1), time.Hour)
			time.Sleep(time.Minute)
			if d := cmp.Diff([]string{"b"}, present(c, "a", "b")); d != "" {
				t.Errorf("kept (-want +got):\n%s", d)
			}
		})
	})
}

// BenchmarkCacheHit compares a cache hit through the whole chain with a
// pass-through to an instant upstream (see BenchmarkPassThrough for the
// bare ReverseProxy): the hit answers without a network round trip.
func BenchmarkCacheHit(b *testing.B) {
	up := benchUpstream(b)
	st := &testStore{}
	st.AddAPIKey(APIKey{ID: "k", Digest: HashAPIKey("gw-bench"), WorkspaceID: "ws"})
	st.AddVirtualKey(VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk-up", BaseURL: up.URL + "/v1"})
	g := New(Options{Keys: st, VirtualKeys: st, Configs: st, LogSink: &LogBuffer{}})
	defer g.Close()
	base := http.Header{"Content-Type": {"application/json"}, "X-Gateway-Api-Key": {"gw-bench"}}
	b.Run("pass-through", func(b *testing.B) {
		h := base.Clone()
		h.Set(HeaderVirtualKey, "vk")
		benchServe(b, g, h)
	})
	b.Run("cache-hit", func(b *testing.B) {
		h := base.Clone()
		h.Set(HeaderConfig, `{"virtual_key":"vk","cache":{"mode":"simple"}}`)
		benchServe(b, g, h) // the first request fills the cache
	})
}
