package gateway

import (
	"io"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkSlogSink measures what the standalone server's request log
// costs per request: one SlogSink.Log of a typical record to a JSON
// handler, writing to io.Discard so that only the encoding is counted.
func BenchmarkSlogSink(b *testing.B) {
	sink := SlogSink{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	rec := benchLogRecord()
	b.ReportAllocs()
	for b.Loop() {
		sink.Log(rec)
	}
}

// benchLogRecord is a typical record of a chat completion.
func benchLogRecord() *RequestLog {
	return &RequestLog{
		Time:        time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		TraceID:     "3f2b8c1e-9d4a-4e7b-a1c6-5b0d2e8f7a91",
		Metadata:    map[string]string{"_user": "u1"},
		KeyID:       "key-admin",
		WorkspaceID: "ws-1",
		Provider:    "openai",
		Model:       "gpt-4o-mini",
		Method:      "POST",
		Path:        "/v1/chat/completions",
		Status:      200,
		Latency:     1234567 * time.Nanosecond,
		BytesIn:     72,
		BytesOut:    262,
	}
}
