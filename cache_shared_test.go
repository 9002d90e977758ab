package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// cacheSharedCfg enables the cache on the virtual key "shared" of cacheEnv.
const cacheSharedCfg = `{"virtual_key":"shared","cache":{"mode":"simple"}}`

// TestCacheTooLargeAnswerPassesThrough: an answer longer than
// Options.MaxBodyBytes is not stored, and every caller still gets the
// provider's whole answer, status and headers as without the cache.
func TestCacheTooLargeAnswerPassesThrough(t *testing.T) {
	big := `{"pad":"` + strings.Repeat("x", 4096) + `"}`
	bigStream := "data: {\"pad\":\"" + strings.Repeat("y", 4096) + "\"}\n\ndata: [DONE]\n\n"
	tests := []struct {
		name    string
		body    string
		header  map[string]string
		answer  string
		headers []string
		cache   string
	}{
		{"an answer", `{"model":"m"}`, map[string]string{"X-Request-Id": "r1"}, big, nil, string(CacheMiss)},
		{"a stream", `{"model":"m","stream":true}`, map[string]string{"Content-Type": "text/event-stream", "X-Request-Id": "r1"}, bigStream, nil, string(CacheMiss)},
		{"a forced refresh", `{"model":"m"}`, map[string]string{"X-Request-Id": "r1"}, big, []string{"x-gateway-cache-force-refresh: true"}, string(CacheRefresh)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := step{header: tt.header, body: tt.answer}
			up := newFakeUp(t, "a", s, s)
			e := cacheEnv(t, func(o *Options) { o.MaxBodyBytes = 1024 }, up)
			for i := range 2 {
				res := e.post(cacheSharedCfg, tt.body, tt.headers...)
				got := readAnswer(t, res)
				want := answer{Status: 200, Body: tt.answer, Provider: "openai", Index: "config", Retries: "0", Cache: tt.cache}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("request %d (-want +got):\n%s", i+1, d)
				}
				if v := res.Header.Get("X-Request-Id"); v != "r1" {
					t.Errorf("request %d: X-Request-Id %q, want the provider's r1", i+1, v)
				}
			}
			if n := up.calls.Load(); n != 2 {
				t.Errorf("%d upstream calls, want 2 (nothing stored)", n)
			}
		})
	}
}

// bigUp answers with a long body once release is closed, counting calls.
type bigUp struct {
	calls   atomic.Int32
	release chan struct{}
	body    string
}

func (u *bigUp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	io.Copy(io.Discard, r.Body)
	<-u.release
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, u.body)
}

// TestCacheTooLargeAnswerShared: when the answer of a shared fill turns
// out too long to keep, the caller who led the fill gets it from the one
// upstream call, and each caller who waited on the fill makes its own.
func TestCacheTooLargeAnswerShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := &bigUp{release: make(chan struct{}), body: `{"pad":"` + strings.Repeat("x", 400) + `"}`}
		g := bubbleGateway(t, func(o *Options) { o.MaxBodyBytes = 128 }, pipeTransport{"up": up})
		const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
		var wg sync.WaitGroup
		got := make([]answer, 4)
		for i := range got {
			wg.Go(func() {
				rec := serve(t.Context(), g, cfg, `{"model":"m"}`)
				got[i] = answer{Status: rec.Code, Body: rec.Body.String(), Cache: rec.Header().Get(HeaderCacheStatus)}
			})
			synctest.Wait() // the first leads the fill, the others wait on it
		}
		if n := up.calls.Load(); n != 1 {
			t.Fatalf("%d upstream calls before the answer, want 1", n)
		}
		close(up.release)
		wg.Wait()
		for i, a := range got {
			if d := cmp.Diff(answer{Status: 200, Body: up.body, Cache: string(CacheMiss)}, a); d != "" {
				t.Errorf("caller %d (-want +got):\n%s", i, d)
			}
		}
		if n := up.calls.Load(); n != 4 {
			t.Errorf("%d upstream calls, want 4 (one for the leader, one for each caller it could not serve)", n)
		}
	})
}

// hostServer serves g behind a host middleware that sets headers of its
// own for each request, as a CORS middleware does.
func hostServer(t *testing.T, g http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
		w.Header().Set("X-Host-Request", r.Header.Get("X-Caller"))
		g.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCacheStoresOnlyProviderHeaders: a cached answer replays the
// provider's headers, never those the host's own middleware set for the
// caller whose request filled the cache.
func TestCacheStoresOnlyProviderHeaders(t *testing.T) {
	const events = "data: {\"n\":1}\n\ndata: [DONE]\n\n"
	tests := []struct {
		name string
		body string
		up   step
	}{
		{"an answer", `{"model":"m"}`, step{header: map[string]string{"X-Request-Id": "r1"}, body: `{"n":1}`}},
		{"a stream", `{"model":"m","stream":true}`, step{header: map[string]string{"Content-Type": "text/event-stream", "X-Request-Id": "r1"}, body: events}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newFakeUp(t, "a", tt.up)
			e := cacheEnv(t, nil, up)
			srv := hostServer(t, e.gw)
			for i, c := range []struct{ origin, caller, cache string }{
				{"https://one.example", "caller-1", string(CacheMiss)},
				{"https://two.example", "caller-2", string(CacheHit)},
			} {
				req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(tt.body))
				req.Header.Set("X-Gateway-Api-Key", coreKey)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(HeaderConfig, cacheSharedCfg)
				req.Header.Set("Origin", c.origin)
				req.Header.Set("X-Caller", c.caller)
				res, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got := readAnswer(t, res)
				res.Body.Close()
				if got.Status != 200 || got.Body != tt.up.body || got.Cache != c.cache {
					t.Errorf("request %d: %d %s %q, want 200 %s %q", i+1, got.Status, got.Cache, got.Body, c.cache, tt.up.body)
				}
				want := map[string][]string{
					"Access-Control-Allow-Origin": {c.origin},
					"X-Host-Request":              {c.caller},
					"X-Request-Id":                {"r1"},
				}
				gotH := map[string][]string{}
				for k := range want {
					gotH[k] = res.Header.Values(k)
				}
				if d := cmp.Diff(want, gotH); d != "" {
					t.Errorf("request %d: headers (-want +got):\n%s", i+1, d)
				}
			}
			if n := up.calls.Load(); n != 1 {
				t.Errorf("%d upstream calls, want 1", n)
			}
		})
	}
}

// TestCacheKeyHasProviderHeaders: every header that reaches the provider
// is part of the cache key, a namespace or not: a caller who sends another
// value gets its own answer, never the one fetched for another value.
func TestCacheKeyHasProviderHeaders(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		header   string // name of the header whose value changes
		extra    []string
	}{
		{"OpenAI-Project", "openai", "OpenAI-Project", nil},
		{"OpenAI-Organization", "openai", "OpenAI-Organization", nil},
		{"OpenAI-Beta", "openai", "OpenAI-Beta", nil},
		{"anthropic-version", "anthropic", "anthropic-version", nil},
		{"anthropic-beta", "anthropic", "anthropic-beta", nil},
		{"a forwarded header", "openai", "X-Tenant", []string{"x-gateway-forward-headers: x-tenant"}},
		{"a forwarded header in a namespace", "openai", "X-Tenant", []string{"x-gateway-forward-headers: x-tenant", "x-gateway-cache-namespace: ns"}},
		{"OpenAI-Project in a namespace", "openai", "OpenAI-Project", []string{"x-gateway-cache-namespace: ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Chat requests to Anthropic are translated: its answers are
			// Messages, and the caller gets them as OpenAI completions.
			reply := func(v string) step { return step{body: v} }
			body, got := `{"model":"m"}`, func(a answer) string { return a.Body }
			if tt.provider == ProviderAnthropic {
				reply = func(v string) step {
					return step{header: map[string]string{"Content-Type": "application/json"},
						body: `{"id":"msg","model":"m","content":[{"type":"text","text":"` + v + `"}],"stop_reason":"end_turn"}`}
				}
				body = `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`
				got = func(a answer) string {
					var c struct {
						Choices []struct{ Message struct{ Content string } }
					}
					if json.Unmarshal([]byte(a.Body), &c) != nil || len(c.Choices) != 1 {
						return a.Body
					}
					return c.Choices[0].Message.Content
				}
			}
			up := newFakeUp(t, "a", reply("v1"), reply("v2"))
			e := cacheEnv(t, nil, up)
			e.store.AddVirtualKey(VirtualKey{Slug: "vk-p", Provider: tt.provider, APIKey: "sk-p", BaseURL: up.URL + "/v1"})
			const cfg = `{"virtual_key":"vk-p","cache":{"mode":"simple"}}`
			for i, s := range []struct{ value, body, cache string }{
				{"one", "v1", string(CacheMiss)}, {"two", "v2", string(CacheMiss)}, {"one", "v1", string(CacheHit)}, {"two", "v2", string(CacheHit)},
			} {
				h := append([]string{tt.header + ": " + s.value}, tt.extra...)
				a := readAnswer(t, e.post(cfg, body, h...))
				if a.Status != 200 || got(a) != s.body || a.Cache != s.cache {
					t.Errorf("request %d with %s %s: %d %s %q, want 200 %s %q", i+1, tt.header, s.value, a.Status, a.Cache, a.Body, s.cache, s.body)
				}
			}
			if n := up.calls.Load(); n != 2 {
				t.Errorf("%d upstream calls, want 2", n)
			}
		})
	}
}

// TestCacheKeyIgnoresWhatTheProviderNeverSees: headers that do not reach
// the provider, or that name the request rather than change the answer,
// do not split the cache.
func TestCacheKeyIgnoresWhatTheProviderNeverSees(t *testing.T) {
	up := newFakeUp(t, "a", step{body: "v1"})
	e := cacheEnv(t, nil, up)
	for i, h := range [][]string{
		{"x-tenant: one", "user-agent: sdk/1", "idempotency-key: k1"},
		{"x-tenant: two", "user-agent: sdk/2", "idempotency-key: k2"},
	} {
		got := readAnswer(t, e.post(cacheSharedCfg, `{"model":"m"}`, h...))
		want := []string{string(CacheMiss), string(CacheHit)}[i]
		if got.Body != "v1" || got.Cache != want {
			t.Errorf("request %d: %s %q, want %s v1", i+1, got.Cache, got.Body, want)
		}
	}
}

// sseUp streams two events, the second (and data: [DONE]) once release
// is closed; started gets a value when the first event went out.
type sseUp struct {
	calls   atomic.Int32
	started chan struct{}
	release chan struct{}
}

const sseUpEvents = "data: {\"n\":1}\n\ndata: {\"n\":2}\n\ndata: [DONE]\n\n"

func (u *sseUp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "data: {\"n\":1}\n\n")
	w.(http.Flusher).Flush()
	select {
	case u.started <- struct{}{}:
	default:
	}
	<-u.release
	io.WriteString(w, "data: {\"n\":2}\n\ndata: [DONE]\n\n")
}

// countingCache is a MemoryCache that reports each lookup on gets.
type countingCache struct {
	MemoryCache
	gets chan struct{}
}

func (c *countingCache) Get(ctx context.Context, key string) (*CachedResponse, error) {
	res, err := c.MemoryCache.Get(ctx, key)
	c.gets <- struct{}{}
	return res, err
}

// TestCacheConcurrentStreamedMissesShareOneCall: concurrent identical
// streamed misses make one upstream call; the caller who led it gets the
// events as they arrive, the others the stored stream.
func TestCacheConcurrentStreamedMissesShareOneCall(t *testing.T) {
	up := &sseUp{started: make(chan struct{}, 1), release: make(chan struct{})}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	c := &countingCache{gets: make(chan struct{}, 64)}
	e := routeEnv(t, func(o *Options) { o.Cache = c })
	e.store.AddVirtualKey(VirtualKey{Slug: "shared", Provider: "openai", APIKey: "sk-shared", BaseURL: srv.URL + "/v1"})
	const n = 10
	var wg sync.WaitGroup
	got := make([]answer, n)
	ctype := make([]string, n)
	for i := range got {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true}`))
			req.Header.Set("X-Gateway-Api-Key", coreKey)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(HeaderConfig, cacheSharedCfg)
			res, err := e.srv.Client().Do(req)
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
				return
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			if err != nil {
				t.Errorf("caller %d: reading the stream: %v", i, err)
			}
			got[i] = answer{Status: res.StatusCode, Body: string(b), Cache: res.Header.Get(HeaderCacheStatus)}
			ctype[i] = res.Header.Get("Content-Type")
		})
	}
	<-up.started
	for range n { // every caller looked the request up and missed
		<-c.gets
	}
	close(up.release)
	wg.Wait()
	statuses := map[string]int{}
	for i, a := range got {
		if a.Status != 200 || a.Body != sseUpEvents || ctype[i] != "text/event-stream" {
			t.Errorf("caller %d: %d %s %q, want 200 text/event-stream %q", i, a.Status, ctype[i], a.Body, sseUpEvents)
		}
		statuses[a.Cache]++
	}
	if d := cmp.Diff(map[string]int{string(CacheMiss): 1, string(CacheHit): n - 1}, statuses); d != "" {
		t.Errorf("cache statuses (-want +got):\n%s", d)
	}
	if calls := up.calls.Load(); calls != 1 {
		t.Errorf("%d upstream calls, want 1", calls)
	}
}

// TestCacheStreamedMissFlushesEvents: the caller of a streamed miss gets
// each event as the provider sends it, not once the stream is complete.
func TestCacheStreamedMissFlushesEvents(t *testing.T) {
	up := &sseUp{started: make(chan struct{}, 1), release: make(chan struct{})}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	e := routeEnv(t, nil)
	e.store.AddVirtualKey(VirtualKey{Slug: "shared", Provider: "openai", APIKey: "sk-shared", BaseURL: srv.URL + "/v1"})
	res := e.post(cacheSharedCfg, `{"model":"m","stream":true}`)
	if res.StatusCode != 200 || res.Header.Get(HeaderCacheStatus) != string(CacheMiss) {
		t.Fatalf("status %d, cache %q: want 200 MISS", res.StatusCode, res.Header.Get(HeaderCacheStatus))
	}
	first := make(chan string, 1)
	br := bufio.NewReader(res.Body)
	go func() {
		line, _ := br.ReadString('\n')
		first <- line
	}()
	select {
	case line := <-first:
		if line != "data: {\"n\":1}\n" {
			t.Errorf("first line %q, want the first event", line)
		}
	case <-time.After(10 * time.Second): // a guard, not a synchronisation: the event never came
		t.Fatal("the first event did not arrive before the provider finished the stream")
	}
	close(up.release)
	rest, err := io.ReadAll(br)
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("rest of the stream %q (%v), want it to end with data: [DONE]", rest, err)
	}
	if got := readAnswer(t, e.post(cacheSharedCfg, `{"model":"m","stream":true}`)); got.Cache != string(CacheHit) || got.Body != sseUpEvents {
		t.Errorf("next request: %s %q, want HIT %q", got.Cache, got.Body, sseUpEvents)
	}
}

// TestCacheStreamedFill covers the callers of a shared streamed fill, in
// a bubble: who leaves stops only its own wait, and who waits is served.
func TestCacheStreamedFill(t *testing.T) {
	const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
	const body = `{"model":"m","stream":true}`
	t.Run("a follower leaving stops only its wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			up := &sseUp{started: make(chan struct{}, 1), release: make(chan struct{})}
			g := bubbleGateway(t, nil, pipeTransport{"up": up})
			var leader, follower *httptest.ResponseRecorder
			var wg sync.WaitGroup
			wg.Go(func() { leader = serve(t.Context(), g, cfg, body) })
			<-up.started
			ctx, cancel := context.WithCancel(t.Context())
			leftDone := make(chan struct{})
			go func() {
				defer close(leftDone)
				serve(ctx, g, cfg, body)
			}()
			wg.Go(func() { follower = serve(t.Context(), g, cfg, body) })
			synctest.Wait() // both followers wait on the fill
			cancel()
			<-leftDone // returns while the provider still streams
			close(up.release)
			wg.Wait()
			for _, c := range []struct {
				name  string
				rec   *httptest.ResponseRecorder
				cache string
			}{{"leader", leader, string(CacheMiss)}, {"follower", follower, string(CacheHit)}} {
				if c.rec.Code != 200 || c.rec.Body.String() != sseUpEvents || c.rec.Header().Get(HeaderCacheStatus) != c.cache {
					t.Errorf("%s: %d %s %q, want 200 %s %q", c.name, c.rec.Code, c.rec.Header().Get(HeaderCacheStatus), c.rec.Body, c.cache, sseUpEvents)
				}
			}
			if n := up.calls.Load(); n != 1 {
				t.Errorf("%d upstream calls, want 1", n)
			}
		})
	})
	t.Run("the leader leaving does not stop the fill", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			up := &sseUp{started: make(chan struct{}, 1), release: make(chan struct{})}
			g := bubbleGateway(t, nil, pipeTransport{"up": up})
			ctx, cancel := context.WithCancel(t.Context())
			leaderDone := make(chan struct{})
			go func() {
				defer close(leaderDone)
				serve(ctx, g, cfg, body)
			}()
			<-up.started
			var follower *httptest.ResponseRecorder
			followerDone := make(chan struct{})
			go func() {
				defer close(followerDone)
				follower = serve(t.Context(), g, cfg, body)
			}()
			synctest.Wait()
			cancel()
			<-leaderDone
			close(up.release)
			<-followerDone
			if follower.Code != 200 || follower.Body.String() != sseUpEvents || follower.Header().Get(HeaderCacheStatus) != string(CacheHit) {
				t.Errorf("follower: %d %s %q, want 200 HIT %q", follower.Code, follower.Header().Get(HeaderCacheStatus), follower.Body, sseUpEvents)
			}
			if n := up.calls.Load(); n != 1 {
				t.Errorf("%d upstream calls, want 1", n)
			}
		})
	})
	t.Run("followers of an unstored stream make their own attempts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			release := make(chan struct{})
			up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := calls.Add(1)
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				if n == 1 {
					<-release
					io.WriteString(w, "data: {\"n\":1}\n\n") // no [DONE]: not stored
					return
				}
				io.WriteString(w, "data: {\"call\":"+strconv.Itoa(int(n))+"}\n\ndata: [DONE]\n\n")
			})
			g := bubbleGateway(t, nil, pipeTransport{"up": up})
			var wg sync.WaitGroup
			got := make([]string, 3)
			for i := range got {
				wg.Go(func() {
					rec := serve(t.Context(), g, cfg, body)
					got[i] = rec.Header().Get(HeaderCacheStatus) + " " + strconv.Itoa(rec.Code)
					if i > 0 && !strings.HasSuffix(rec.Body.String(), "data: [DONE]\n\n") {
						t.Errorf("follower %d: body %q, want its own complete stream", i, rec.Body)
					}
				})
				synctest.Wait()
			}
			close(release)
			wg.Wait()
			if d := cmp.Diff([]string{"MISS 200", "MISS 200", "MISS 200"}, got); d != "" {
				t.Errorf("answers (-want +got):\n%s", d)
			}
			if n := calls.Load(); n != 3 {
				t.Errorf("%d upstream calls, want 3", n)
			}
		})
	})
	t.Run("a stream longer than the fill timeout is not cut", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: {\"n\":1}\n\n")
				w.(http.Flusher).Flush()
				select {
				case <-time.After(cacheFillTimeout + time.Minute): // fake time: a slow model
				case <-r.Context().Done():
					return
				}
				io.WriteString(w, "data: {\"n\":2}\n\ndata: [DONE]\n\n")
			})
			g := bubbleGateway(t, nil, pipeTransport{"up": up})
			rec := serve(t.Context(), g, cfg, body)
			if rec.Code != 200 || rec.Body.String() != sseUpEvents {
				t.Errorf("got %d %q, want 200 %q", rec.Code, rec.Body, sseUpEvents)
			}
			if got := serve(t.Context(), g, cfg, body).Header().Get(HeaderCacheStatus); got != string(CacheHit) {
				t.Errorf("next request: %s, want HIT", got)
			}
		})
	})
	t.Run("a fill nobody takes as it arrives ends at the fill timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			gone := make(chan error, 2)
			up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: {\"n\":1}\n\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				gone <- context.Cause(r.Context())
			})
			g := bubbleGateway(t, nil, pipeTransport{"up": up})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				serve(ctx, g, cfg, body)
			}()
			synctest.Wait()
			// A follower keeps the fill going once the leader left (a
			// fill that every caller left ends at once: see
			// TestCacheFillAbandoned), but takes nothing as it arrives.
			fctx, fcancel := context.WithCancel(t.Context())
			followerDone := make(chan struct{})
			go func() {
				defer close(followerDone)
				serve(fctx, g, cfg, body)
			}()
			synctest.Wait()
			cancel()
			<-done
			start := time.Now()
			err := <-gone
			if d := time.Since(start); d != cacheFillTimeout || !errors.Is(err, errFillTimeout) {
				t.Errorf("the provider call ended after %v (cause %v), want it ended by the fill timeout after %v", d, err, cacheFillTimeout)
			}
			fcancel() // the follower makes its own attempt, which never ends
			<-followerDone
		})
	})
}
