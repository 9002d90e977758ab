package otel_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	gwotel "github.com/modelgateway/gateway/otel"
)

// A gateway traced end to end: Middleware around it opens a span per
// request, and Transport a span per attempt at the provider, whose
// traceparent the provider gets. In production the TracerProvider
// exports to a collector:
//
//	tp, err := gwotel.NewOTLPTracerProvider(ctx, "http://localhost:4318", gwotel.TracerProviderOptions{})
//	...
//	defer tp.Shutdown(ctx)
func Example() {
	spans := tracetest.NewSpanRecorder() // here, spans are kept in memory
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("the provider got a traceparent:", r.Header.Get("Traceparent") != "")
		io.WriteString(w, `{"object":"text_completion","choices":[]}`)
	}))
	defer provider.Close()

	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-1", Digest: gateway.HashAPIKey("gw-key"), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "openai", Provider: "openai", APIKey: "sk-...", BaseURL: provider.URL + "/v1", WorkspaceID: "ws-1"})
	gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store,
		Transport: gwotel.Transport(nil, tp, gwotel.Options{})})
	defer gw.Close()
	handler := gwotel.Middleware(tp, gwotel.Options{})(gw)

	req := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(`{"model":"gpt-3.5-turbo-instruct","prompt":"hi"}`))
	req.Header.Set("x-gateway-api-key", "gw-key")
	req.Header.Set("x-gateway-virtual-key", "openai")
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	handler.ServeHTTP(httptest.NewRecorder(), req)

	for _, s := range spans.Ended() {
		fmt.Println(s.SpanKind(), s.Name(), s.SpanContext().TraceID())
	}
	// Output:
	// the provider got a traceparent: true
	// client POST 4bf92f3577b34da6a3ce929d0e0e4736
	// server text_completion gpt-3.5-turbo-instruct 4bf92f3577b34da6a3ce929d0e0e4736
}
