package redis_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	gwredis "github.com/modelgateway/gateway/redis"
)

const (
	testKey    = "gw-test-key"
	cacheCfg   = `{"virtual_key":"openai","cache":{"mode":"simple"}}`
	chatPath   = "/v1/chat/completions"
	chatBody   = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	policyUUID = "7d1e4b0a-5c1e-4f7a-9a55-0f3c2b1a9e11"
)

// upstream is a fake provider that counts the requests it answers and
// numbers its answers.
type upstream struct {
	*httptest.Server
	calls atomic.Int64
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Openai-Processing-Ms", "7")
		io.WriteString(w, `{"id":"chatcmpl-`+strconv.FormatInt(n, 10)+`","object":"chat.completion","choices":[]}`)
	}))
	t.Cleanup(u.Close)
	return u
}

// replica is one gateway process: its own Gateway, and its own Redis
// client, sharing the store (as replicas share a database) and Redis.
type replica struct {
	*httptest.Server
	gw *gateway.Gateway
}

// newReplica starts a gateway with a requests policy of 3 per hour per
// API key, a virtual key "openai" on up, and opts for the rest.
func newReplica(t *testing.T, up *upstream, opts gateway.Options) *replica {
	t.Helper()
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-1", Digest: gateway.HashAPIKey(testKey), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "openai", Provider: "openai", APIKey: "sk-test", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	if err := store.PutPolicy(context.Background(), &gateway.RateLimitsPolicy{
		ID: policyUUID, Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
		GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}}, Type: gateway.PolicyRequests,
		Unit: gateway.PolicyPerHour, Value: 3, Status: gateway.PolicyActive, WorkspaceID: "ws-1",
	}); err != nil {
		t.Fatal(err)
	}
	opts.Keys, opts.VirtualKeys, opts.Policies = store, store, store
	if opts.ErrorLog == nil {
		opts.ErrorLog = (&logBuffer{}).logger()
	}
	gw := gateway.New(opts)
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return &replica{Server: srv, gw: gw}
}

// answer is what a caller notices of a response.
type answer struct {
	Status      int
	Body        string
	Remaining   string // x-ratelimit-remaining-requests
	RetryAfter  string
	CacheStatus string
	ContentType string
}

func (r *replica) do(t *testing.T, method, path, body string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, r.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-gateway-api-key", testKey)
	req.Header.Set("content-type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{
		Status: res.StatusCode, Body: string(b),
		Remaining:   res.Header.Get("x-ratelimit-remaining-requests"),
		RetryAfter:  res.Header.Get("Retry-After"),
		CacheStatus: res.Header.Get("x-gateway-cache-status"),
		ContentType: res.Header.Get("Content-Type"),
	}
}

// TestReplicasShareLimits: two gateways on one Redis enforce one policy of
// 3 requests per hour: whichever replica the 4th request reaches refuses
// it, and the provider sees exactly 3.
func TestReplicasShareLimits(t *testing.T) {
	srv := startRedis(t)
	up := newUpstream(t)
	a := newReplica(t, up, gateway.Options{Limiter: gwredis.NewLimiter(srv.client(t), gwredis.LimiterOptions{Prefix: srv.prefix})})
	b := newReplica(t, up, gateway.Options{Limiter: gwredis.NewLimiter(srv.client(t), gwredis.LimiterOptions{Prefix: srv.prefix})})
	steps := []struct {
		name      string
		r         *replica
		remaining string
		retry     string
		status    int
	}{
		{"1st on a", a, "2", "", 200},
		{"2nd on b", b, "1", "", 200},
		{"3rd on a", a, "0", "", 200},
		{"4th on b", b, "0", "1200", 429},
		{"4th on a", a, "0", "1200", 429},
	}
	for _, s := range steps {
		got := s.r.do(t, "GET", "/v1/models", "", "x-gateway-virtual-key", "openai")
		if got.Status != s.status || got.Remaining != s.remaining || got.RetryAfter != s.retry {
			t.Errorf("%s: status %d, remaining %q, Retry-After %q; want %d, %q, %q (body %s)",
				s.name, got.Status, got.Remaining, got.RetryAfter, s.status, s.remaining, s.retry, got.Body)
		}
	}
	if n := up.calls.Load(); n != 3 {
		t.Fatalf("provider saw %d requests, want 3", n)
	}
}

// TestReplicasShareCache: an answer one replica fetched is served by the
// other from Redis, headers and all.
func TestReplicasShareCache(t *testing.T) {
	srv := startRedis(t)
	up := newUpstream(t)
	a := newReplica(t, up, gateway.Options{Cache: gwredis.NewCache(srv.client(t), gwredis.CacheOptions{Prefix: srv.prefix})})
	b := newReplica(t, up, gateway.Options{Cache: gwredis.NewCache(srv.client(t), gwredis.CacheOptions{Prefix: srv.prefix})})
	first := `{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`
	steps := []struct {
		name string
		r    *replica
		want answer
	}{
		{"miss on a", a, answer{Status: 200, Body: first, CacheStatus: "MISS", ContentType: "application/json", Remaining: "2"}},
		{"hit on b", b, answer{Status: 200, Body: first, CacheStatus: "HIT", ContentType: "application/json", Remaining: "2"}},
		{"hit on a", a, answer{Status: 200, Body: first, CacheStatus: "HIT", ContentType: "application/json", Remaining: "1"}},
	}
	for _, s := range steps {
		got := s.r.do(t, "POST", chatPath, chatBody, "x-gateway-config", cacheCfg)
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("provider saw %d requests, want 1", n)
	}
}

// TestRedisDown: with Redis unreachable, a request a rate-limits policy
// applies to is refused with a 500 (limits fail closed), while the cache
// is skipped and requests are served by the provider (the cache fails
// open); both are logged.
func TestRedisDown(t *testing.T) {
	up := newUpstream(t)
	down := downClient(t)
	limitLog, cacheLog := &logBuffer{}, &logBuffer{}
	limited := newReplica(t, up, gateway.Options{
		Limiter: gwredis.NewLimiter(down, gwredis.LimiterOptions{}), ErrorLog: limitLog.logger(),
	})
	cached := newReplica(t, up, gateway.Options{
		Limiter:  &gateway.MemoryLimiter{},
		Cache:    gwredis.NewCache(down, gwredis.CacheOptions{}),
		ErrorLog: cacheLog.logger(),
	})

	got := limited.do(t, "GET", "/v1/models", "", "x-gateway-virtual-key", "openai")
	if got.Status != http.StatusInternalServerError || !strings.Contains(got.Body, `"error"`) {
		t.Errorf("limited request with Redis down: %d %s; want a 500 error body", got.Status, got.Body)
	}
	if n := up.calls.Load(); n != 0 {
		t.Errorf("provider saw %d requests while the limiter was down, want 0", n)
	}
	if !strings.Contains(limitLog.String(), "rate limiter") {
		t.Errorf("limiter failure not logged; log:\n%s", limitLog)
	}

	for i := range 2 {
		got := cached.do(t, "POST", chatPath, chatBody, "x-gateway-config", cacheCfg)
		if got.Status != 200 || got.CacheStatus != "MISS" {
			t.Errorf("cached request %d with Redis down: %d, cache status %q; want 200 MISS (body %s)", i+1, got.Status, got.CacheStatus, got.Body)
		}
	}
	if n := up.calls.Load(); n != 2 {
		t.Errorf("provider saw %d requests, want 2: nothing could be cached", n)
	}
	for _, want := range []string{"cache lookup failed", "cache store failed"} {
		if !strings.Contains(cacheLog.String(), want) {
			t.Errorf("log lacks %q; log:\n%s", want, cacheLog)
		}
	}
}
