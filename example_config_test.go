package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// ParseConfig names the JSON path of the first invalid field.
func ExampleParseConfig() {
	_, err := gateway.ParseConfig([]byte(`{
		"strategy": {"mode": "loadbalance"},
		"targets": [{"virtual_key": "openai-a"}, {"virtual_key": "openai-b", "weight": -1}]
	}`))
	fmt.Println(err)

	cfg, err := gateway.ParseConfig([]byte(`{
		"strategy": {"mode": "fallback", "on_status_codes": [429, 503]},
		"retry": {"attempts": 2},
		"targets": [{"virtual_key": "openai-a"}, {"virtual_key": "openai-b", "retry": {"attempts": 0}}]
	}`))
	fmt.Println(cfg.Strategy.Mode, len(cfg.Targets), err)
	// Output:
	// gateway: invalid config: targets[1].weight: must be ≥ 0
	// fallback 2 <nil>
}

// A fallback config sent inline: the first provider is overloaded, so the
// second answers, and the response headers tell which target did.
func Example_fallback() {
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
	}))
	defer busy.Close()
	spare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"cmpl-1","object":"text_completion"}`)
	}))
	defer spare.Close()

	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "team-a", Digest: gateway.HashAPIKey("gw-secret"), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "busy", Provider: "openai", APIKey: "sk-1", BaseURL: busy.URL + "/v1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "spare", Provider: "openai", APIKey: "sk-2", BaseURL: spare.URL + "/v1"})
	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Configs: store})
	defer g.Close()

	req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini"}`))
	req.Header.Set("x-gateway-api-key", "gw-secret")
	req.Header.Set("x-gateway-config", `{"strategy":{"mode":"fallback","on_status_codes":[503]},`+
		`"targets":[{"virtual_key":"busy"},{"virtual_key":"spare"}]}`)
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Body)
	fmt.Println("answered by:", rec.Header().Get("x-gateway-last-used-option-index"))
	fmt.Println("retries:", rec.Header().Get("x-gateway-retry-attempt-count"))
	// Output:
	// 200 {"id":"cmpl-1","object":"text_completion"}
	// answered by: config.targets[1]
	// retries: 0
}

// A config that enables the cache: the second identical request is
// answered from a bounded in-memory cache without calling the provider.
func Example_cache() {
	calls := 0
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		io.WriteString(w, `{"object":"list","data":[{"embedding":[0.1,0.2]}]}`)
	}))
	defer provider.Close()

	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "team-a", Digest: gateway.HashAPIKey("gw-secret"), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "openai", Provider: "openai", APIKey: "sk-1", BaseURL: provider.URL + "/v1"})
	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store,
		Cache: &gateway.MemoryCache{MaxEntries: 1000, MaxBytes: 64 << 20}})
	defer g.Close()

	for range 2 {
		req := httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(`{"model":"text-embedding-3-small","input":"hi"}`))
		req.Header.Set("x-gateway-api-key", "gw-secret")
		req.Header.Set("x-gateway-config", `{"virtual_key":"openai","cache":{"mode":"simple","max_age":3600}}`)
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("x-gateway-cache-status"))
	}
	fmt.Println("provider calls:", calls)
	// Output:
	// 200 MISS
	// 200 HIT
	// provider calls: 1
}
