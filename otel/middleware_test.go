package otel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	gwotel "github.com/modelgateway/gateway/otel"
)

const (
	testKey        = "gw-otel-test-key"
	callerTraceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerParentID = "00f067aa0ba902b7"
	callerParent   = "00-" + callerTraceID + "-" + callerParentID + "-01"
	model          = "gpt-3.5-turbo-instruct"
)

// upstream is a fake OpenAI answering completions, or 500 for the model
// "fail", that keeps the traceparent of every request it got.
type upstream struct {
	*httptest.Server
	mu           sync.Mutex
	traceparents []string
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.traceparents = append(u.traceparents, r.Header.Get("Traceparent"))
		u.mu.Unlock()
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(b), `"fail"`) {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`)
			return
		}
		io.WriteString(w, `{"id":"cmpl-1","object":"text_completion","created":1,"model":"`+model+`",`+
			`"choices":[{"text":"hello","index":0,"logprobs":null,"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.traceparents...)
}

// env is a gateway traced by Middleware and Transport into a span
// recorder, served over HTTP.
type env struct {
	up     *upstream
	spans  *tracetest.SpanRecorder
	logs   *gateway.LogBuffer
	gw     *gateway.Gateway
	srv    *httptest.Server
	served chan struct{} // a value once the traced handler returned, its span ended
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{up: newUpstream(t), spans: tracetest.NewSpanRecorder(), logs: &gateway.LogBuffer{}, served: make(chan struct{}, 1)}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(e.spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-1", Digest: gateway.HashAPIKey(testKey), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "openai", Provider: "openai", APIKey: "sk-test", BaseURL: e.up.URL + "/v1", WorkspaceID: "ws-1"})
	e.gw = gateway.New(gateway.Options{Keys: store, VirtualKeys: store, LogSink: e.logs,
		Transport: gwotel.Transport(nil, tp, gwotel.Options{})})
	t.Cleanup(func() { e.gw.Close() })
	h := gwotel.Middleware(tp, gwotel.Options{})(e.gw)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		e.served <- struct{}{}
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// complete sends a completion for model m with the given headers (name,
// value pairs) and returns the response, its body read, once the traced
// handler has returned.
func (e *env) complete(t *testing.T, m string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+"/v1/completions", strings.NewReader(`{"model":"`+m+`","prompt":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(gateway.HeaderVirtualKey, "openai")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	<-e.served
	return res
}

// spansByKind returns the ended spans, the server span first and the
// client spans after, failing unless there is one server span and
// clients client spans.
func (e *env) spansByKind(t *testing.T, clients int) (sdktrace.ReadOnlySpan, []sdktrace.ReadOnlySpan) {
	t.Helper()
	var server sdktrace.ReadOnlySpan
	var client []sdktrace.ReadOnlySpan
	for _, s := range e.spans.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindServer:
			if server != nil {
				t.Fatal("two server spans")
			}
			server = s
		case trace.SpanKindClient:
			client = append(client, s)
		}
	}
	if server == nil || len(client) != clients {
		t.Fatalf("got %d spans, %d of them client spans; want a server span and %d client spans", len(e.spans.Ended()), len(client), clients)
	}
	return server, client
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]any {
	m := make(map[attribute.Key]any)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.AsInterface()
	}
	return m
}

// checkAttrs reports the attributes of s that differ from want; a nil
// value in want means the attribute must be absent.
func checkAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[attribute.Key]any) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		g, ok := got[k]
		switch {
		case v == nil && ok:
			t.Errorf("%s span: %s = %v, want none", s.Name(), k, g)
		case v != nil && g != v:
			t.Errorf("%s span: %s = %v (%T), want %v (%T)", s.Name(), k, g, g, v, v)
		}
	}
}

// TestMiddlewareJoinsCallerTrace: a request with a traceparent gets a
// server span in the caller's trace, a child of the caller's span, named
// after its operation and model and carrying the record's attributes; the
// attempt at the provider is a client span, its child, whose traceparent
// the provider got.
func TestMiddlewareJoinsCallerTrace(t *testing.T) {
	e := newEnv(t)
	res := e.complete(t, model, gateway.HeaderAPIKey, testKey, "Traceparent", callerParent, "User-Agent", "test-agent/1")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", res.StatusCode)
	}
	if got := res.Header.Get(gateway.HeaderTraceID); got != callerTraceID {
		t.Errorf("x-gateway-trace-id = %q, want the caller's trace id %s", got, callerTraceID)
	}
	server, clients := e.spansByKind(t, 1)
	client := clients[0]

	if got, want := server.Name(), "text_completion "+model; got != want {
		t.Errorf("server span named %q, want %q", got, want)
	}
	if got := server.SpanContext().TraceID().String(); got != callerTraceID {
		t.Errorf("server span in trace %s, want the caller's %s", got, callerTraceID)
	}
	if p := server.Parent(); p.SpanID().String() != callerParentID || !p.IsRemote() {
		t.Errorf("server span's parent is %s (remote %v), want the caller's span %s", p.SpanID(), p.IsRemote(), callerParentID)
	}
	if server.Status().Code != codes.Unset {
		t.Errorf("server span status %v, want unset", server.Status())
	}
	e.gw.Close() // hands the record to the LogBuffer
	recs := e.logs.Query(gateway.LogFilter{})
	if len(recs) != 1 {
		t.Fatalf("%d request logs, want 1", len(recs))
	}
	rec := recs[0]
	want := map[attribute.Key]any{
		"http.request.method":            "POST",
		"url.path":                       "/v1/completions",
		"url.scheme":                     "http",
		"user_agent.original":            "test-agent/1",
		"http.response.status_code":      int64(200),
		gwotel.AttrGenAIOperationName:    "text_completion",
		gwotel.AttrGenAISystem:           "openai",
		gwotel.AttrGenAIProviderName:     "openai",
		gwotel.AttrGenAIRequestModel:     model,
		gwotel.AttrGatewayProvider:       "openai",
		gwotel.AttrGatewayTraceID:        callerTraceID,
		gwotel.AttrGatewayRetries:        int64(0),
		gwotel.AttrGatewayAPIKeyID:       "key-1",
		gwotel.AttrGatewayWorkspaceID:    "ws-1",
		"error.type":                     nil,
		gwotel.AttrGenAIUsageInputTokens: nil,
	}
	// The usage is on the span when the gateway's record has it.
	if rec.PromptTokens > 0 || rec.CompletionTokens > 0 {
		want[gwotel.AttrGenAIUsageInputTokens] = rec.PromptTokens
		want[gwotel.AttrGenAIUsageOutputTokens] = rec.CompletionTokens
	}
	if rec.CacheStatus != "" {
		want[gwotel.AttrGatewayCacheStatus] = string(rec.CacheStatus)
	}
	checkAttrs(t, server, want)

	if client.Name() != "POST" {
		t.Errorf("client span named %q, want POST", client.Name())
	}
	if client.Parent().SpanID() != server.SpanContext().SpanID() || client.SpanContext().TraceID() != server.SpanContext().TraceID() {
		t.Errorf("client span's parent is %s, want the server span %s", client.Parent().SpanID(), server.SpanContext().SpanID())
	}
	checkAttrs(t, client, map[attribute.Key]any{
		"http.request.method":       "POST",
		"server.address":            "127.0.0.1",
		"url.path":                  "/v1/completions",
		"http.response.status_code": int64(200),
	})
	wantParent := "00-" + callerTraceID + "-" + client.SpanContext().SpanID().String() + "-01"
	if got := e.up.received(); len(got) != 1 || got[0] != wantParent {
		t.Errorf("the provider got traceparent %q, want %q (the client span's)", got, wantParent)
	}
}

// TestMiddlewareStartsTrace: a request without traceparent starts a
// trace, and the gateway's trace id, in its response and record, is that
// trace's id, unless the caller named one with x-gateway-trace-id.
func TestMiddlewareStartsTrace(t *testing.T) {
	t.Run("no trace id", func(t *testing.T) {
		e := newEnv(t)
		res := e.complete(t, model, gateway.HeaderAPIKey, testKey)
		server, clients := e.spansByKind(t, 1)
		if server.Parent().IsValid() {
			t.Errorf("server span has parent %s, want none", server.Parent().SpanID())
		}
		id := server.SpanContext().TraceID().String()
		if got := res.Header.Get(gateway.HeaderTraceID); got != id {
			t.Errorf("x-gateway-trace-id = %q, want the span's trace id %s", got, id)
		}
		checkAttrs(t, server, map[attribute.Key]any{gwotel.AttrGatewayTraceID: id})
		if got := e.up.received(); len(got) != 1 || got[0] != "00-"+id+"-"+clients[0].SpanContext().SpanID().String()+"-01" {
			t.Errorf("the provider got traceparent %q, want one of trace %s", got, id)
		}
	})
	t.Run("x-gateway-trace-id", func(t *testing.T) {
		e := newEnv(t)
		res := e.complete(t, model, gateway.HeaderAPIKey, testKey, gateway.HeaderTraceID, "my-trace-1")
		if got := res.Header.Get(gateway.HeaderTraceID); got != "my-trace-1" {
			t.Errorf("x-gateway-trace-id = %q, want my-trace-1", got)
		}
		server, _ := e.spansByKind(t, 1)
		checkAttrs(t, server, map[attribute.Key]any{gwotel.AttrGatewayTraceID: "my-trace-1"})
	})
}

// TestMiddlewareStatus: a provider's 5xx is an error on both spans; a
// request the gateway refuses with 401 is not, and reaches no provider.
func TestMiddlewareStatus(t *testing.T) {
	t.Run("5xx", func(t *testing.T) {
		e := newEnv(t)
		if res := e.complete(t, "fail", gateway.HeaderAPIKey, testKey); res.StatusCode != 500 {
			t.Fatalf("status %d, want 500", res.StatusCode)
		}
		server, clients := e.spansByKind(t, 1)
		if server.Status().Code != codes.Error || clients[0].Status().Code != codes.Error {
			t.Errorf("span statuses %v (server), %v (client); want errors", server.Status(), clients[0].Status())
		}
		checkAttrs(t, server, map[attribute.Key]any{"http.response.status_code": int64(500), "error.type": "500"})
		checkAttrs(t, clients[0], map[attribute.Key]any{"http.response.status_code": int64(500), "error.type": "500"})
	})
	t.Run("401", func(t *testing.T) {
		e := newEnv(t)
		if res := e.complete(t, model, gateway.HeaderAPIKey, "gw-wrong-key"); res.StatusCode != 401 {
			t.Fatalf("status %d, want 401", res.StatusCode)
		}
		server, _ := e.spansByKind(t, 0)
		if server.Status().Code != codes.Unset {
			t.Errorf("server span status %v, want unset", server.Status())
		}
		checkAttrs(t, server, map[attribute.Key]any{
			"http.response.status_code": int64(401), gwotel.AttrGatewayErrorCode: gateway.CodeInvalidAPIKey,
			gwotel.AttrGatewayProvider: nil, "error.type": nil,
		})
		if got := e.up.received(); len(got) != 0 {
			t.Errorf("the provider got %d requests, want none", len(got))
		}
	})
}

// TestTransportWithoutTracer: with a nil TracerProvider, Transport sends
// the span of the request's context as it is and opens none, and leaves
// the caller's request unchanged.
func TestTransportWithoutTracer(t *testing.T) {
	up := newUpstream(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	ctx, span := tp.Tracer("test").Start(context.Background(), "caller")
	defer span.End()

	client := &http.Client{Transport: gwotel.Transport(http.DefaultTransport, nil, gwotel.Options{})}
	req, _ := http.NewRequestWithContext(ctx, "POST", up.URL+"/v1/completions", strings.NewReader(`{}`))
	req.Header.Set("Traceparent", callerParent) // stale: replaced
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()

	sc := span.SpanContext()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if got := up.received(); len(got) != 1 || got[0] != want {
		t.Errorf("the provider got traceparent %q, want %q", got, want)
	}
	if got := req.Header.Get("Traceparent"); got != callerParent {
		t.Errorf("the caller's request was changed: traceparent %q", got)
	}
	if n := len(spans.Ended()); n != 0 {
		t.Errorf("%d spans ended, want none", n)
	}
}

// TestMiddlewareNilTracerProvider: a nil TracerProvider is a programming
// error, refused when the middleware is built.
func TestMiddlewareNilTracerProvider(t *testing.T) {
	defer func() {
		if p := recover(); p == nil || !strings.HasPrefix(p.(string), "otel: ") {
			t.Errorf("recovered %v, want a panic prefixed otel:", p)
		}
	}()
	gwotel.Middleware(nil, gwotel.Options{})
}
