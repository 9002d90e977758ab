package otel

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/modelgateway/gateway"
)

// Transport returns an http.RoundTripper, to set as
// gateway.Options.Transport, that sends each request through base with
// the trace context of its context injected into its headers (traceparent
// and tracestate, or what Options.Propagator writes), replacing any the
// request had. With a non-nil tp it first opens a client span for the
// request, a child of its context's span (the server span of Middleware),
// and sends that span's context, so that every attempt at a provider,
// retries and fallbacks included, is a span of its own; the span ends
// when the answer's body has been read or closed, and has an error status
// for a transport error or a status of 400 or more. With a nil tp it
// sends the context's span as it is.
//
// A nil base means gateway.NewTransport(), the gateway's own default.
// The request is not modified: a copy with cloned headers is sent.
//
// Requests to caller-supplied custom hosts (x-gateway-custom-host) do not
// go through Options.Transport but through a transport of the gateway's
// own that dials through its address guard, so they carry no traceparent.
//
// CloseIdleConnections is passed on to base. The RoundTripper is safe for
// concurrent use if base is.
func Transport(base http.RoundTripper, tp trace.TracerProvider, opts Options) http.RoundTripper {
	if base == nil {
		base = gateway.NewTransport()
	}
	t := &transport{base: base, prop: opts.propagator()}
	if tp != nil {
		t.tracer = tp.Tracer(ScopeName)
	}
	return t
}

type transport struct {
	base   http.RoundTripper
	prop   propagation.TextMapPropagator
	tracer trace.Tracer // nil: no client spans
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var span trace.Span
	if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, req.Method, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(clientAttributes(req)...))
	}
	out := req.WithContext(ctx)
	out.Header = req.Header.Clone()
	if out.Header == nil {
		out.Header = make(http.Header)
	}
	t.prop.Inject(ctx, propagation.HeaderCarrier(out.Header))
	res, err := t.base.RoundTrip(out)
	if span == nil {
		return res, err
	}
	if err != nil {
		err := safeError(err)
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.End()
		return res, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(res.StatusCode))
	if res.StatusCode >= 400 {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(res.StatusCode)))
		span.SetStatus(codes.Error, "")
	}
	if res.Body == nil || res.Body == http.NoBody || res.StatusCode == http.StatusSwitchingProtocols {
		// A switched protocol's body is the connection, which the gateway
		// needs to write to: it is not wrapped.
		span.End()
		return res, nil
	}
	res.Body = &spanBody{rc: res.Body, span: span}
	return res, nil
}

// CloseIdleConnections closes the idle connections of the base transport,
// if it has a CloseIdleConnections method.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// clientAttributes returns the attributes of an upstream request known
// when its span starts. The query is left out: it may carry a credential
// (Gemini's key=).
func clientAttributes(req *http.Request) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(req.Method),
		semconv.ServerAddress(req.URL.Hostname()),
		semconv.URLPath(req.URL.Path),
	}
	if p, err := strconv.Atoi(req.URL.Port()); err == nil {
		attrs = append(attrs, semconv.ServerPort(p))
	}
	return attrs
}

// spanBody ends the client span of an answer once its body has been read
// to the end, failed or been closed.
type spanBody struct {
	rc   io.ReadCloser
	span trace.Span
	once sync.Once
}

func (b *spanBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.end(err)
	}
	return n, err
}

func (b *spanBody) Close() error {
	err := b.rc.Close()
	b.end(nil)
	return err
}

func (b *spanBody) end(err error) {
	b.once.Do(func() {
		if err != nil && err != io.EOF {
			err = safeError(err)
			b.span.RecordError(err)
			b.span.SetStatus(codes.Error, "reading the answer: "+err.Error())
		}
		b.span.End()
	})
}

// safeError returns err without the URL a *url.Error names, which may
// carry a credential in its query.
func safeError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
