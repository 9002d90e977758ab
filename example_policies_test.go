package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
)

// A MemoryLimiter bucket remembers what was consumed: it drains at the
// limit's value per period, and a raised limit re-opens exactly the
// difference.
func ExampleMemoryLimiter() {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	l := &gateway.MemoryLimiter{Now: func() time.Time { return now }}
	ctx := context.Background()
	twoPerMinute := gateway.Limit{Value: 2, Per: time.Minute}

	for range 3 {
		d, _ := l.Take(ctx, "policy-1/key-1", twoPerMinute, 1)
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	}
	now = now.Add(30 * time.Second) // one request has drained
	d, _ := l.Take(ctx, "policy-1/key-1", twoPerMinute, 1)
	fmt.Println(d.Allowed, d.Remaining)

	d, _ = l.Take(ctx, "policy-1/key-1", gateway.Limit{Value: 3, Per: time.Minute}, 1)
	fmt.Println("raised to 3:", d.Allowed, d.Remaining)
	// Output:
	// true 1 0s
	// true 0 0s
	// false 0 30s
	// true 0
	// raised to 3: true 0
}

// An admin key creates a policy through the control plane; it applies from
// the next request on.
func Example_rateLimitsPolicy() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer provider.Close()

	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-admin", Digest: gateway.HashAPIKey("gw-admin"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "openai", Provider: "openai", APIKey: "sk-…", BaseURL: provider.URL + "/v1", WorkspaceID: "ws-1"})
	gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Policies: store})
	admin.Mount(gw, admin.Options{Keys: store, VirtualKeys: store, Policies: store})
	defer gw.Close()
	srv := httptest.NewServer(gw)
	defer srv.Close()

	send := func(method, path, body string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("x-gateway-api-key", "gw-admin")
		req.Header.Set("x-gateway-virtual-key", "openai")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}

	res := send("POST", "/v1/policies/rate-limits", `{
		"name": "2 requests per hour per key",
		"conditions": [{"key": "workspace_id", "value": "ws-1"}],
		"group_by": [{"key": "api_key"}],
		"type": "requests", "unit": "rph", "value": 2}`)
	fmt.Println("create:", res.Status)
	for range 3 {
		res := send("GET", "/v1/models", "")
		if res.StatusCode == http.StatusTooManyRequests {
			fmt.Println(res.StatusCode, "retry after", res.Header.Get("Retry-After"), "seconds")
			continue
		}
		fmt.Println(res.StatusCode, "remaining", res.Header.Get("x-ratelimit-remaining-requests"))
	}
	// Output:
	// create: 200 OK
	// 200 remaining 1
	// 200 remaining 0
	// 429 retry after 1800 seconds
}

// The stages compose in front of a host's own handler: Limits enforces the
// rate-limits policies of the caller's workspace there too.
func ExampleLimits() {
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "team-a", Digest: gateway.HashAPIKey("gw-secret"), WorkspaceID: "ws-1"})
	store.PutPolicy(context.Background(), &gateway.RateLimitsPolicy{ID: "7d1e0000-0000-4000-8000-00000000000a",
		WorkspaceID: "ws-1", GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}},
		Type: gateway.PolicyRequests, Unit: gateway.PolicyPerHour, Value: 1, Status: gateway.PolicyActive})
	h := gateway.Chain(gateway.Trace, gateway.Authenticate(store), gateway.ParseHeaders,
		gateway.Limits(store, nil, nil))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "served by the host")
	}))

	for range 2 {
		req := httptest.NewRequest("POST", "/search", nil)
		req.Header.Set("x-gateway-api-key", "gw-secret")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%d remaining=%s retry-after=%s\n", rec.Code,
			rec.Header().Get("X-Ratelimit-Remaining-Requests"), rec.Header().Get("Retry-After"))
	}
	// Output:
	// 200 remaining=0 retry-after=
	// 429 remaining=0 retry-after=3600
}
