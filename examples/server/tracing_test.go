package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestRunTracing: with -otel-endpoint, each request through the gateway
// becomes a server span with its GenAI attributes and a client span for
// its attempt at the provider, in one trace whose id is the request's
// x-gateway-trace-id, exported to the collector by the time the server
// has stopped; the spans carry no credential.
func TestRunTracing(t *testing.T) {
	spans := make(chan *tracepb.Span, 100)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := &coltrace.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, req) != nil {
			t.Errorf("collector got %s %s (%d bytes), want an OTLP/HTTP protobuf export to /v1/traces", r.Method, r.URL.Path, len(b))
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans <- s
				}
			}
		}
		b, _ = proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	defer collector.Close()

	t.Setenv("GATEWAY_API_KEY", "gw-tracing-key")
	r := startRun(t, "-demo", "-otel-endpoint", collector.URL)
	line := r.stderr.wait(t, "curl command", r.done, func(s string) bool { return strings.HasPrefix(s, "curl ") })
	req := curlRequest(t, shellWords(t, line, map[string]string{"GATEWAY_API_KEY": "gw-tracing-key"}))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, res)
	trace := res.Header.Get("x-gateway-trace-id")
	if res.StatusCode != 200 || len(trace) != 32 {
		t.Fatalf("demo request: %d, trace id %q; want 200 and the span's 32-hex trace id", res.StatusCode, trace)
	}
	r.shutdown()
	if err := r.wait(); err != nil {
		t.Fatal(err)
	}

	var server, client *tracepb.Span
	deadline := time.After(10 * time.Second)
	for server == nil || client == nil {
		select {
		case s := <-spans:
			switch s.Kind {
			case tracepb.Span_SPAN_KIND_SERVER:
				server = s
			case tracepb.Span_SPAN_KIND_CLIENT:
				client = s
			}
		case <-deadline:
			t.Fatalf("after shutdown the collector has server span %v, client span %v; want both", server, client)
		}
	}
	for _, s := range []*tracepb.Span{server, client} {
		if got := hexID(s.TraceId); got != trace {
			t.Errorf("%s span in trace %s, want the request's %s", s.Kind, got, trace)
		}
		for _, kv := range s.Attributes {
			if v := kv.Value.String(); strings.Contains(v, "gw-tracing-key") || strings.Contains(v, "sk-demo-") {
				t.Errorf("%s span attribute %s carries a credential: %s", s.Kind, kv.Key, v)
			}
		}
	}
	attrs := map[string]string{}
	for _, kv := range server.Attributes {
		attrs[kv.Key] = strings.Trim(kv.Value.String(), `"`)
	}
	if !strings.Contains(attrs["gen_ai.request.model"], "gpt-4o-mini") || attrs["gen_ai.usage.input_tokens"] == "" {
		t.Errorf("server span attributes %v; want the GenAI model and usage", attrs)
	}
}

func hexID(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestRunTracingBadEndpoint: an -otel-endpoint that is not an http(s)
// URL stops the server, naming the flag.
func TestRunTracingBadEndpoint(t *testing.T) {
	for _, endpoint := range []string{"localhost:4318", "ftp://collector", "http://"} {
		err := run(t.Context(), t.Context(), []string{"-addr", "127.0.0.1:0", "-db", ":memory:", "-otel-endpoint", endpoint}, newLines(), newLines())
		if err == nil || !strings.Contains(err.Error(), "-otel-endpoint") {
			t.Errorf("-otel-endpoint %s: %v, want an error naming -otel-endpoint", endpoint, err)
		}
	}
}
