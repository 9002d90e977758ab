package otel_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	gwotel "github.com/modelgateway/gateway/otel"
)

// export is what a fake collector got in one export request.
type export struct {
	path, contentType, auth string
	req                     *coltrace.ExportTraceServiceRequest
}

// newCollector is a fake OTLP/HTTP collector that hands each export it
// gets to the returned channel.
func newCollector(t *testing.T) (*httptest.Server, <-chan export) {
	t.Helper()
	got := make(chan export, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := &coltrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			t.Errorf("collector: %v", err)
		}
		got <- export{r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), req}
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ = proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// TestNewOTLPTracerProvider: spans reach the collector at /v1/traces of
// a base URL, or at the path of a full one, as protobuf, with the
// service name and headers given.
func TestNewOTLPTracerProvider(t *testing.T) {
	for _, c := range []struct {
		name, path, wantPath string
		opts                 gwotel.TracerProviderOptions
		wantService          string
	}{
		{"base URL", "", "/v1/traces", gwotel.TracerProviderOptions{}, "gateway"},
		{"full URL", "/otlp/v1/traces", "/otlp/v1/traces",
			gwotel.TracerProviderOptions{ServiceName: "edge-gateway", Headers: map[string]string{"Authorization": "Bearer c-1"}}, "edge-gateway"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("OTEL_SERVICE_NAME", "")
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
			col, got := newCollector(t)
			ctx := context.Background()
			tp, err := gwotel.NewOTLPTracerProvider(ctx, col.URL+c.path, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, span := tp.Tracer("test").Start(ctx, "request")
			span.End()
			if err := tp.Shutdown(ctx); err != nil { // sends what is buffered
				t.Fatal(err)
			}
			e := <-got
			if e.path != c.wantPath || e.contentType != "application/x-protobuf" {
				t.Errorf("export to %s as %s, want %s as application/x-protobuf", e.path, e.contentType, c.wantPath)
			}
			if want := c.opts.Headers["Authorization"]; e.auth != want {
				t.Errorf("Authorization %q, want %q", e.auth, want)
			}
			rs := e.req.GetResourceSpans()
			if len(rs) != 1 || len(rs[0].GetScopeSpans()) != 1 || len(rs[0].GetScopeSpans()[0].GetSpans()) != 1 {
				t.Fatalf("export holds %v, want one span", e.req)
			}
			if name := rs[0].GetScopeSpans()[0].GetSpans()[0].GetName(); name != "request" {
				t.Errorf("span %q, want request", name)
			}
			var service string
			for _, kv := range rs[0].GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			if service != c.wantService {
				t.Errorf("service.name %q, want %q", service, c.wantService)
			}
		})
	}
}

// TestNewOTLPTracerProviderEndpoint: an endpoint that is no http or https
// URL with a host is refused at once, rather than exporting to the
// exporter's default.
func TestNewOTLPTracerProviderEndpoint(t *testing.T) {
	for _, ep := range []string{"", "localhost:4318", "collector:4318/v1/traces", "grpc://collector:4317", "http://", "http://a b/"} {
		if tp, err := gwotel.NewOTLPTracerProvider(context.Background(), ep, gwotel.TracerProviderOptions{}); err == nil {
			tp.Shutdown(context.Background())
			t.Errorf("endpoint %q accepted", ep)
		}
	}
}

// TestOTLPExportFields: what the hand-written encoding sends decodes as
// the OTLP types say: ids, parent, kind, times, attributes of every
// type, events, status, and the headers of OTEL_EXPORTER_OTLP_HEADERS.
func TestOTLPExportFields(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=t%201,authorization=Bearer%20env")
	col, got := newCollector(t)
	ctx := context.Background()
	tp, err := gwotel.NewOTLPTracerProvider(ctx, col.URL, gwotel.TracerProviderOptions{Headers: map[string]string{"authorization": "Bearer opt"}})
	if err != nil {
		t.Fatal(err)
	}
	pctx, parent := tp.Tracer("test").Start(ctx, "parent")
	_, span := tp.Tracer("test").Start(pctx, "child", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("s", "v"), attribute.Int64("i", -7), attribute.Float64("f", 1.5), attribute.Bool("b", true),
		attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, 2})))
	span.AddEvent("retry", trace.WithAttributes(attribute.Int("attempt", 2)))
	span.SetStatus(codes.Error, "upstream 502")
	span.End()
	parent.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	e := <-got
	if e.auth != "Bearer opt" {
		t.Errorf("Authorization %q, want the option's over the environment's", e.auth)
	}
	spans := e.req.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	c, p := spans[0], spans[1]
	sc := span.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	psid := parent.SpanContext().SpanID()
	if !bytes.Equal(c.GetTraceId(), tid[:]) || !bytes.Equal(c.GetSpanId(), sid[:]) || !bytes.Equal(c.GetParentSpanId(), psid[:]) || len(p.GetParentSpanId()) != 0 {
		t.Errorf("ids: %x %x parent %x; want %x %x parent %x", c.GetTraceId(), c.GetSpanId(), c.GetParentSpanId(), tid, sid, psid)
	}
	if c.GetName() != "child" || c.GetKind().String() != "SPAN_KIND_CLIENT" || c.GetStartTimeUnixNano() == 0 || c.GetEndTimeUnixNano() < c.GetStartTimeUnixNano() {
		t.Errorf("span %v", c)
	}
	attrs := map[string]string{}
	for _, kv := range c.GetAttributes() {
		attrs[kv.GetKey()] = kv.GetValue().String()
	}
	for k, want := range map[string]string{"s": `string_value:"v"`, "i": `int_value:-7`, "f": `double_value:1.5`, "b": `bool_value:true`,
		"ss": `array_value:{values:{string_value:"a"} values:{string_value:"b"}}`, "is": `array_value:{values:{int_value:1} values:{int_value:2}}`} {
		if got := strings.Join(strings.Fields(attrs[k]), " "); got != want {
			t.Errorf("attribute %s = %s, want %s", k, got, want)
		}
	}
	if ev := c.GetEvents(); len(ev) != 1 || ev[0].GetName() != "retry" || ev[0].GetAttributes()[0].GetValue().GetIntValue() != 2 {
		t.Errorf("events %v", ev)
	}
	if st := c.GetStatus(); st.GetCode().String() != "STATUS_CODE_ERROR" || st.GetMessage() != "upstream 502" {
		t.Errorf("status %v", st)
	}
}
