package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelgateway/gateway"
	gwotel "github.com/modelgateway/gateway/otel"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// tracing is the server's OpenTelemetry tracing, on with -otel-endpoint:
// a span per request through the gateway, a client span per attempt at a
// provider with traceparent sent upstream, exported over OTLP/HTTP. The
// zero value (no endpoint) traces nothing.
type tracing struct {
	tp *sdktrace.TracerProvider
}

// startTracing returns the tracing of -otel-endpoint endpoint (empty:
// none). Failed exports are reported to errLog; they never hold up a
// request.
func startTracing(ctx context.Context, endpoint string, errLog *slog.Logger) (tracing, error) {
	if endpoint == "" {
		return tracing{}, nil
	}
	tp, err := gwotel.NewOTLPTracerProvider(ctx, endpoint, gwotel.TracerProviderOptions{})
	if err != nil {
		return tracing{}, fmt.Errorf("gateway: -otel-endpoint: %w", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		errLog.Warn("opentelemetry export failed", "err", err)
	}))
	return tracing{tp}, nil
}

// instrument makes opts's upstream requests carry client spans and
// traceparent.
func (t tracing) instrument(opts *gateway.Options) {
	if t.tp != nil {
		opts.Transport = gwotel.Transport(opts.Transport, t.tp, gwotel.Options{})
	}
}

// handler wraps h in a server span per request.
func (t tracing) handler(h http.Handler) http.Handler {
	if t.tp == nil {
		return h
	}
	return gwotel.Middleware(t.tp, gwotel.Options{})(h)
}

// shutdown sends the spans still buffered, waiting at most 5 s for the
// collector.
func (t tracing) shutdown(stderr io.Writer) {
	if t.tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		fmt.Fprintf(stderr, "gateway: -otel-endpoint: sending the last spans: %v\n", err)
	}
}
