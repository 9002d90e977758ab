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

// The gateway mounted on a host's own mux, in front of an OpenAI-compatible
// provider reached through a virtual key.
func Example() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "provider saw %s %s with %s\n", r.Method, r.URL.Path, r.Header.Get("Authorization"))
	}))
	defer provider.Close()

	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "team-a", Digest: gateway.HashAPIKey("gw-secret"), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "openai-prod", Provider: "openai", APIKey: "sk-stored", BaseURL: provider.URL + "/v1"})
	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Configs: store, Policies: store})
	defer g.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.Handle("/v1/", g)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini"}`))
	req.Header.Set("x-gateway-api-key", "gw-secret")
	req.Header.Set("x-gateway-virtual-key", "openai-prod")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Print(res.Status, " ", string(body))
	fmt.Println("provider:", res.Header.Get("x-gateway-provider"))
	// Output:
	// 200 OK provider saw POST /v1/chat/completions with Bearer sk-stored
	// provider: openai
}

// Errors are OpenAI-shaped, with param naming the offending header.
func ExampleWriteError() {
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-secret")})
	g := gateway.New(gateway.Options{Keys: store})
	defer g.Close()

	req := httptest.NewRequest("GET", "/v1/models", nil)
	req.Header.Set("x-gateway-api-key", "gw-secret")
	req.Header.Set("x-gateway-request-timeout", "soon")
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output:
	// 400 {"error":{"message":"x-gateway-request-timeout: must be a positive integer number of milliseconds","type":"invalid_request_error","param":"x-gateway-request-timeout","code":"invalid_header"}}
}

// Trace, Authenticate and ParseHeaders run in front of a host's own handler.
func ExampleAuthenticate() {
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "team-a", Digest: gateway.HashAPIKey("gw-secret"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
	h := gateway.Trace(gateway.Authenticate(store)(gateway.ParseHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := gateway.IdentityFrom(r.Context())
		opts, _ := gateway.RequestOptionsFrom(r.Context())
		trace, _ := gateway.TraceIDFrom(r.Context())
		fmt.Println(id.KeyID, id.WorkspaceID, id.Role, opts.Metadata["_user"], trace)
	}))))

	req := httptest.NewRequest("GET", "/anything", nil)
	req.Header.Set("x-gateway-api-key", "gw-secret")
	req.Header.Set("x-gateway-metadata", `{"_user":"alice"}`)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), req)
	// Output:
	// team-a ws-1 admin alice 4bf92f3577b34da6a3ce929d0e0e4736
}

func ExampleParseForwardHeaders() {
	fmt.Println(gateway.ParseForwardHeaders(`["x-request-source", "X-Team"]`))
	_, err := gateway.ParseForwardHeaders("host, x-team")
	fmt.Println(err)
	// Output:
	// [X-Request-Source X-Team] <nil>
	// gateway: x-gateway-forward-headers: Host cannot be forwarded
}

// A LogBuffer keeps recent request logs for queries by trace id or metadata.
func ExampleLogBuffer() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer provider.Close()
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "team-a", Digest: gateway.HashAPIKey("gw-secret"), WorkspaceID: "ws-1"})
	logs := &gateway.LogBuffer{}
	g := gateway.New(gateway.Options{Keys: store, LogSink: logs, CustomHostAllow: []string{"127.0.0.1"}})

	req := httptest.NewRequest("GET", "/v1/models", nil)
	req.Header.Set("x-gateway-api-key", "gw-secret")
	req.Header.Set("x-gateway-provider", "openai")
	req.Header.Set("x-gateway-custom-host", provider.URL+"/v1")
	req.Header.Set("x-gateway-trace-id", "trace-42")
	req.Header.Set("x-gateway-metadata", `{"_user":"alice"}`)
	g.ServeHTTP(httptest.NewRecorder(), req)
	g.Close() // hands queued records to the sink

	for _, rec := range logs.Query(gateway.LogFilter{Metadata: map[string]string{"_user": "alice"}}) {
		fmt.Println(rec.TraceID, rec.KeyID, rec.Provider, rec.Method, rec.Path, rec.Status)
	}
	// Output:
	// trace-42 team-a openai GET /v1/models 200
}
