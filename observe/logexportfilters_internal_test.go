package observe

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway"
)

func FuzzParseExportFilters(f *testing.F) {
	for _, s := range []string{`{}`, `{"status_code":"200,429","metadata":{"a":"b"}}`, `{"page_size":10,"current_page":3}`,
		`{"time_of_generation_min":"2026-01-02T03:04:05Z","cost_max":1.5,"ai_model":"a,b"}`, `{"prompt_token_min":"7"}`, `[]`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw, filt, err := parseExportFilters(json.RawMessage(s), "ws-1")
		if err != nil {
			if ge, ok := err.(*gateway.Error); !ok || ge.Status != 400 {
				t.Fatalf("%q: %v is not a 400", s, err)
			}
			return
		}
		if filt.Query.WorkspaceID != "ws-1" || filt.Limit < 1 || filt.Limit > exportPageSizeMax || filt.Skip < 0 {
			t.Fatalf("%q: %+v", s, filt)
		}
		// The stored form parses to the same selection.
		raw2, filt2, err := parseExportFilters(raw, "ws-1")
		if err != nil || string(raw2) != string(raw) || !cmp.Equal(filt, filt2) {
			t.Fatalf("%q: stored as %s, which parses differently: %v", s, raw, err)
		}
	})
}

func BenchmarkExportLine(b *testing.B) {
	rec := &gateway.RequestLog{ID: "0190-abc", Time: time.Now(), TraceID: "trace", WorkspaceID: "ws-1", Provider: "openai", Model: "gpt-4o",
		Method: "POST", Path: "/v1/chat/completions", Status: 200, PromptTokens: 12, CompletionTokens: 30, TotalTokens: 42,
		Cost: 0.0012, Metadata: map[string]string{"team": "search"}}
	fields, err := exportFields([]string{"id", "trace_id", "created_at", "ai_org", "ai_model", "response_status_code", "total_units", "cost", "metadata"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		if buf, err = appendExportLine(buf[:0], rec, fields); err != nil {
			b.Fatal(err)
		}
	}
}
