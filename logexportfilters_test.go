package gateway

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLogExportBadInput(t *testing.T) {
	e := newExportsEnv(t, nil)
	id, _ := e.createExport(coreAdminKey, map[string]any{"filters": map[string]any{}, "requested_data": []string{"id"}})
	for _, c := range []struct {
		name, body, param string
		status            int
	}{
		{"no filters", `{"requested_data":["id"]}`, "filters", 400},
		{"null filters", `{"filters":null,"requested_data":["id"]}`, "filters", 400},
		{"filters not an object", `{"filters":[],"requested_data":["id"]}`, "filters", 400},
		{"no requested_data", `{"filters":{}}`, "requested_data", 400},
		{"empty requested_data", `{"filters":{},"requested_data":[]}`, "requested_data", 400},
		{"requested_data not strings", `{"filters":{},"requested_data":[1]}`, "requested_data", 400},
		{"unknown field", `{"filters":{},"requested_data":["id","password"]}`, "requested_data[1]", 400},
		{"object is not a field", `{"filters":{},"requested_data":["object"]}`, "requested_data[0]", 400},
		{"field twice", `{"filters":{},"requested_data":["id","id"]}`, "requested_data[1]", 400},
		{"unknown filter", `{"filters":{"colour":"red"},"requested_data":["id"]}`, "filters.colour", 400},
		{"bad date", `{"filters":{"time_of_generation_min":"yesterday"},"requested_data":["id"]}`, "filters.time_of_generation_min", 400},
		{"bad status", `{"filters":{"status_code":"20x"},"requested_data":["id"]}`, "filters.status_code", 400},
		{"status out of range", `{"filters":{"status_code":700},"requested_data":["id"]}`, "filters.status_code", 400},
		{"metadata not an object", `{"filters":{"metadata":"team"},"requested_data":["id"]}`, "filters.metadata", 400},
		{"metadata not strings", `{"filters":{"metadata":{"n":1}},"requested_data":["id"]}`, "filters.metadata", 400},
		{"negative tokens", `{"filters":{"prompt_token_min":-1},"requested_data":["id"]}`, "filters.prompt_token_min", 400},
		{"fractional tokens", `{"filters":{"total_units_max":1.5},"requested_data":["id"]}`, "filters.total_units_max", 400},
		{"tokens as a bool", `{"filters":{"total_units_max":true},"requested_data":["id"]}`, "filters.total_units_max", 400},
		{"negative cost", `{"filters":{"cost_min":"-3"},"requested_data":["id"]}`, "filters.cost_min", 400},
		{"bad model pair", `{"filters":{"ai_org_model":"gpt-4o"},"requested_data":["id"]}`, "filters.ai_org_model", 400},
		{"empty ai_model", `{"filters":{"ai_model":","},"requested_data":["id"]}`, "filters.ai_model", 400},
		{"page_size zero", `{"filters":{"page_size":0},"requested_data":["id"]}`, "filters.page_size", 400},
		{"page_size too big", `{"filters":{"page_size":50001},"requested_data":["id"]}`, "filters.page_size", 400},
		{"negative page", `{"filters":{"current_page":-1},"requested_data":["id"]}`, "filters.current_page", 400},
		{"page too far", `{"filters":{"current_page":100},"requested_data":["id"]}`, "filters.current_page", 400},
		{"empty workspace", `{"workspace_id":"","filters":{},"requested_data":["id"]}`, "workspace_id", 400},
		{"unknown body field", `{"filters":{},"requested_data":["id"],"format":"csv"}`, "format", 400},
		{"not JSON", `{"filters":`, "", 400},
		{"other workspace", `{"workspace_id":"ws-2","filters":{},"requested_data":["id"]}`, "workspace_id", 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []struct{ method, path string }{{"POST", "/v1/logs/exports"}, {"PUT", "/v1/logs/exports/" + id}} {
				if r.method == "PUT" && c.param == "requested_data" && !strings.Contains(c.body, "requested_data") {
					continue // a PUT may leave requested_data as it is
				}
				res := e.do(r.method, r.path, strings.NewReader(c.body), HeaderAPIKey+": "+coreAdminKey)
				if res.StatusCode != c.status {
					b, _ := io.ReadAll(res.Body)
					t.Fatalf("%s: %d %s, want %d", r.method, res.StatusCode, b, c.status)
				}
				eb := decodeError(t, res)
				if got := eb.Error.Param; c.param != "" && (got == nil || *got != c.param) {
					t.Errorf("%s: param %v, want %q (%s)", r.method, got, c.param, eb.Error.Message)
				}
			}
		})
	}
}

func FuzzParseExportFilters(f *testing.F) {
	for _, s := range []string{`{}`, `{"status_code":"200,429","metadata":{"a":"b"}}`, `{"page_size":10,"current_page":3}`,
		`{"time_of_generation_min":"2026-01-02T03:04:05Z","cost_max":1.5,"ai_model":"a,b"}`, `{"prompt_token_min":"7"}`, `[]`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw, filt, err := parseExportFilters(json.RawMessage(s), "ws-1")
		if err != nil {
			if ge, ok := err.(*Error); !ok || ge.Status != 400 {
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
	rec := &RequestLog{ID: "0190-abc", Time: time.Now(), TraceID: "trace", WorkspaceID: "ws-1", Provider: "openai", Model: "gpt-4o",
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
