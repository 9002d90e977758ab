package otel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// otlpExporter is an OTLP/HTTP span exporter: each batch is one
// ExportTraceServiceRequest, encoded as protobuf by hand (protowire, no
// generated code) and POSTed to the collector's traces endpoint. It
// stands for the OpenTelemetry project's otlptracehttp, whose generated
// OTLP types bring gRPC and genproto into every binary that exports
// spans, a twentieth of the server's size, for a protocol it never
// speaks.
type otlpExporter struct {
	url     string
	headers map[string]string
	client  *http.Client
	stopped atomic.Bool
}

// otlpRetries is how many times an export the collector asked to be sent
// again (429, 502, 503, 504) is retried, a second apart at most, within
// the export's context.
const otlpRetries = 3

// newOTLPExporter returns an exporter to url with headers: those of
// OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TRACES_HEADERS
// (k=v pairs, comma-separated, URL-encoded), then h, each winning over
// the former.
func newOTLPExporter(u string, h map[string]string) *otlpExporter {
	headers := map[string]string{}
	for _, env := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		for _, pair := range strings.Split(os.Getenv(env), ",") {
			k, v, ok := strings.Cut(pair, "=")
			if !ok {
				continue
			}
			k, err1 := url.PathUnescape(strings.TrimSpace(k))
			v, err2 := url.PathUnescape(strings.TrimSpace(v))
			if err1 == nil && err2 == nil && k != "" {
				headers[k] = v
			}
		}
	}
	for k, v := range h {
		headers[k] = v
	}
	return &otlpExporter{url: u, headers: headers, client: &http.Client{Timeout: 10 * time.Second}}
}

// ExportSpans implements sdktrace.SpanExporter.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() || len(spans) == 0 {
		return nil
	}
	body := encodeSpans(spans)
	for try := 0; ; try++ {
		retry, err := e.post(ctx, body)
		if err == nil || !retry || try == otlpRetries {
			return err
		}
		t := time.NewTimer(time.Duration(1<<try) * 250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// post sends one export and says whether a failure may be retried.
func (e *otlpExporter) post(ctx context.Context, body []byte) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	res, err := e.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("otel: OTLP export: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	switch {
	case res.StatusCode >= 200 && res.StatusCode <= 299:
		return false, nil
	case res.StatusCode == 429, res.StatusCode == 502, res.StatusCode == 503, res.StatusCode == 504:
		return true, fmt.Errorf("otel: OTLP export: collector answered %s", res.Status)
	default:
		return false, fmt.Errorf("otel: OTLP export: collector answered %s", res.Status)
	}
}

// Shutdown implements sdktrace.SpanExporter: later exports send nothing.
func (e *otlpExporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return nil
}

// encodeSpans returns the ExportTraceServiceRequest of spans: one
// ResourceSpans per resource, one ScopeSpans per instrumentation scope
// in it, in the order they first come.
func encodeSpans(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	var resources []*resource.Resource
	scopes := map[*resource.Resource][]instrumentation.Scope{}
	bySpan := map[scopeKey][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		r, sc := s.Resource(), s.InstrumentationScope()
		if _, ok := scopes[r]; !ok {
			resources = append(resources, r)
			scopes[r] = nil
		}
		k := scopeKey{r, sc}
		if _, ok := bySpan[k]; !ok {
			scopes[r] = append(scopes[r], sc)
		}
		bySpan[k] = append(bySpan[k], s)
	}
	var out []byte
	for _, r := range resources {
		out = message(out, 1, func(b []byte) []byte { // ResourceSpans
			b = message(b, 1, func(b []byte) []byte { // Resource
				for _, kv := range r.Attributes() {
					b = keyValue(b, 1, kv)
				}
				return b
			})
			for _, sc := range scopes[r] {
				b = message(b, 2, func(b []byte) []byte { // ScopeSpans
					b = message(b, 1, func(b []byte) []byte { // InstrumentationScope
						b = str(b, 1, sc.Name)
						b = str(b, 2, sc.Version)
						for _, kv := range sc.Attributes.ToSlice() {
							b = keyValue(b, 3, kv)
						}
						return b
					})
					for _, s := range bySpan[scopeKey{r, sc}] {
						b = message(b, 2, func(b []byte) []byte { return span(b, s) })
					}
					return str(b, 3, sc.SchemaURL)
				})
			}
			return str(b, 3, r.SchemaURL())
		})
	}
	return out
}

// span appends the fields of a Span.
func span(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, tid[:])
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, sid[:])
	b = str(b, 3, sc.TraceState().String())
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, psid[:])
	}
	b = str(b, 5, s.Name())
	b = varint(b, 6, uint64(s.SpanKind()))
	b = fixed64(b, 7, unixNano(s.StartTime()))
	b = fixed64(b, 8, unixNano(s.EndTime()))
	for _, kv := range s.Attributes() {
		b = keyValue(b, 9, kv)
	}
	b = varint(b, 10, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		b = message(b, 11, func(b []byte) []byte {
			b = fixed64(b, 1, unixNano(ev.Time))
			b = str(b, 2, ev.Name)
			for _, kv := range ev.Attributes {
				b = keyValue(b, 3, kv)
			}
			return varint(b, 4, uint64(ev.DroppedAttributeCount))
		})
	}
	b = varint(b, 12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		b = message(b, 13, func(b []byte) []byte {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			b = protowire.AppendBytes(b, ltid[:])
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendBytes(b, lsid[:])
			b = str(b, 3, l.SpanContext.TraceState().String())
			for _, kv := range l.Attributes {
				b = keyValue(b, 4, kv)
			}
			return varint(b, 5, uint64(l.DroppedAttributeCount))
		})
	}
	b = varint(b, 14, uint64(s.DroppedLinks()))
	st := s.Status()
	if st.Code != codes.Unset || st.Description != "" {
		b = message(b, 15, func(b []byte) []byte {
			b = str(b, 2, st.Description)
			code := uint64(0) // STATUS_CODE_UNSET
			switch st.Code {
			case codes.Ok:
				code = 1
			case codes.Error:
				code = 2
			}
			return varint(b, 3, code)
		})
	}
	// flags: the W3C trace flags, and that the parent's remoteness is known.
	flags := uint32(sc.TraceFlags()) | 0x100
	if s.Parent().IsRemote() {
		flags |= 0x200
	}
	b = protowire.AppendTag(b, 16, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, flags)
}

// keyValue appends a KeyValue as field num.
func keyValue(b []byte, num protowire.Number, kv attribute.KeyValue) []byte {
	return message(b, num, func(b []byte) []byte {
		b = str(b, 1, string(kv.Key))
		return message(b, 2, func(b []byte) []byte { return anyValue(b, kv.Value) })
	})
}

// anyValue appends the fields of an AnyValue.
func anyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		return varint0(b, 2, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		return varint0(b, 3, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = protowire.AppendTag(b, 4, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		return protowire.AppendString(b, v.AsString())
	case attribute.BOOLSLICE:
		return array(b, len(v.AsBoolSlice()), func(b []byte, i int) []byte { return varint0(b, 2, protowire.EncodeBool(v.AsBoolSlice()[i])) })
	case attribute.INT64SLICE:
		return array(b, len(v.AsInt64Slice()), func(b []byte, i int) []byte { return varint0(b, 3, uint64(v.AsInt64Slice()[i])) })
	case attribute.FLOAT64SLICE:
		return array(b, len(v.AsFloat64Slice()), func(b []byte, i int) []byte {
			b = protowire.AppendTag(b, 4, protowire.Fixed64Type)
			return protowire.AppendFixed64(b, math.Float64bits(v.AsFloat64Slice()[i]))
		})
	case attribute.STRINGSLICE:
		return array(b, len(v.AsStringSlice()), func(b []byte, i int) []byte {
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			return protowire.AppendString(b, v.AsStringSlice()[i])
		})
	}
	return b
}

// array appends an ArrayValue (AnyValue field 5) of n values.
func array(b []byte, n int, value func(b []byte, i int) []byte) []byte {
	return message(b, 5, func(b []byte) []byte {
		for i := range n {
			b = message(b, 1, func(b []byte) []byte { return value(b, i) })
		}
		return b
	})
}

// message appends field num holding the message fields appends.
func message(b []byte, num protowire.Number, fields func([]byte) []byte) []byte {
	inner := fields(nil)
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, inner)
}

// str appends a string field, unless it is empty (proto3's default).
func str(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// varint appends a varint field, unless it is 0 (proto3's default).
func varint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return varint0(b, num, v)
}

// varint0 appends a varint field even when it is 0: a oneof's member.
func varint0(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// fixed64 appends a fixed64 field.
func fixed64(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

// unixNano returns t in Unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}
