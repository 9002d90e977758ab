package otel

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// TracerProviderOptions configures NewOTLPTracerProvider. The zero value
// is ready to use.
type TracerProviderOptions struct {
	// ServiceName is the service.name of the spans' resource. Empty means
	// "gateway". The OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// environment variables, when set, win.
	ServiceName string

	// Headers are sent with every export, e.g. a collector's API key.
	// Nil means none beyond those of OTEL_EXPORTER_OTLP_HEADERS.
	Headers map[string]string

	// Sampler decides which traces are recorded. Nil means
	// ParentBased(AlwaysSample()): a trace the caller sampled, or began
	// unsampled, stays so, and every trace begun at the gateway is kept.
	Sampler sdktrace.Sampler
}

// NewOTLPTracerProvider returns a TracerProvider that exports spans in
// batches over OTLP/HTTP (protobuf, encoded by exporter.go) to endpoint: a collector's base URL,
// such as http://localhost:4318, to which /v1/traces is appended, or the
// full URL of its traces endpoint (a URL with a path). An http URL is
// sent in clear text, an https one over TLS.
//
// The caller owns the provider: its Shutdown, at exit, sends the spans
// still buffered. Nothing is sent until a span ends, so an unreachable
// collector is not an error here; the exporter reports failed exports
// through OpenTelemetry's error handler (otel.SetErrorHandler), and drops
// spans rather than block requests.
func NewOTLPTracerProvider(ctx context.Context, endpoint string, opts TracerProviderOptions) (*sdktrace.TracerProvider, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("otel: the OTLP endpoint must be an http or https URL with a host, such as http://localhost:4318")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	exp := newOTLPExporter(u.String(), opts.Headers)
	name := opts.ServiceName
	if name == "" {
		name = "gateway"
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(name)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK())
	if err != nil {
		exp.Shutdown(ctx)
		return nil, fmt.Errorf("otel: resource: %w", err)
	}
	sampler := opts.Sampler
	if sampler == nil {
		sampler = sdktrace.ParentBased(sdktrace.AlwaysSample())
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler),
	), nil
}
