package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// vertexCountPath is where Vertex AI counts the tokens of a Claude
// request, for protoEnv's vk-vtx.
const vertexCountPath = "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict"

// TestCountTokensVertexClaude: count_tokens for a Claude model on Vertex
// AI is Vertex's count-tokens:rawPredict of the caller's body, model
// included, with Vertex's anthropic_version and anthropic-beta in the
// body; Vertex's {"input_tokens":n} comes back as sent. A model that is
// not Claude gets the gateway's estimate, without a call.
func TestCountTokensVertexClaude(t *testing.T) {
	const answer = `{"input_tokens":321}`
	e, _ := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	})
	body := strings.Replace(claudeCodeBody, `"claude-sonnet-4-5","max_tokens":1024,`, `"claude-sonnet-4-5@20250929",`, 1)
	res := e.do("POST", "/v1/messages/count_tokens", strings.NewReader(body), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-vtx",
		"anthropic-beta: token-efficient-tools-2025-02-19")
	if got := bodyOf(t, res); res.StatusCode != 200 || got != answer || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %s", res.StatusCode, got)
	}
	rec := e.up.received()
	if len(rec) != 1 {
		t.Fatalf("%d calls", len(rec))
	}
	r := rec[0]
	if r.Method != "POST" || r.Path != vertexCountPath || r.Query != "" || r.Header.Get("Authorization") != "Bearer ya29" {
		t.Errorf("sent %s %s?%s with %v", r.Method, r.Path, r.Query, r.Header)
	}
	var sent, orig map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Body), &sent); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	json.Unmarshal([]byte(body), &orig)
	want := map[string]string{"model": `"claude-sonnet-4-5@20250929"`, "anthropic_version": `"vertex-2023-10-16"`,
		"anthropic_beta": `["token-efficient-tools-2025-02-19"]`, "system": string(orig["system"]),
		"messages": string(orig["messages"]), "tools": string(orig["tools"])}
	if len(sent) != len(want) {
		t.Errorf("body %s", r.Body)
	}
	for k, v := range want {
		if string(sent[k]) != v {
			t.Errorf("%s = %s, want %s", k, sent[k], v)
		}
	}

	gemini := `{"model":"gemini-2.5-pro","messages":[{"role":"user","content":"Hello there"}]}`
	res = e.do("POST", "/v1/messages/count_tokens", strings.NewReader(gemini), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-vtx")
	var n struct {
		InputTokens int `json:"input_tokens"`
	}
	if got := bodyOf(t, res); json.Unmarshal([]byte(got), &n) != nil || res.StatusCode != 200 || n.InputTokens <= 0 {
		t.Errorf("estimate: %d %s", res.StatusCode, got)
	}
	if len(e.up.received()) != 1 {
		t.Errorf("a model that is not Claude was sent to Vertex AI")
	}
}

// TestCountTokensVertexErrors: Vertex AI's errors, Google's or
// Anthropic's, come back Anthropic-shaped with Vertex's status, and an
// answer without a count is a 502, never a count of 0.
func TestCountTokensVertexErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		answer  string
		want    int
		typ     string
		message string
	}{
		{"400 google", 400, `{"error":{"code":400,"message":"Invalid model","status":"INVALID_ARGUMENT"}}`, 400, "invalid_request_error", "Invalid model"},
		{"400 anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: required"}}`, 400, "invalid_request_error", "messages: required"},
		{"429", 429, `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}`, 429, "rate_limit_error", "Quota exceeded"},
		{"500", 500, `{"error":{"code":500,"message":"Internal error","status":"INTERNAL"}}`, 500, "api_error", ""},
		{"503", 503, `{"error":{"code":503,"message":"Unavailable","status":"UNAVAILABLE"}}`, 503, "overloaded_error", ""},
		{"no count", 200, `{}`, 502, "api_error", ""},
		{"null", 200, `{"input_tokens":null}`, 502, "api_error", ""},
		{"string", 200, `{"input_tokens":"7"}`, 502, "api_error", ""},
		{"fraction", 200, `{"input_tokens":7.5}`, 502, "api_error", ""},
		{"not JSON", 200, `input_tokens: 7`, 502, "api_error", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.answer)
			})
			body := strings.Replace(claudeCodeBody, "claude-sonnet-4-5", "claude-sonnet-4-5@20250929", 1)
			res := e.do("POST", "/v1/messages/count_tokens", strings.NewReader(body), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-vtx")
			b := bodyOf(t, res)
			typ, msg, ok := anthropicErrorBody(b)
			if !ok || res.StatusCode != tc.want || typ != tc.typ || !strings.Contains(msg, tc.message) {
				t.Errorf("got %d %s, want %d %s", res.StatusCode, b, tc.want, tc.typ)
			}
			if r := e.up.received(); len(r) != 1 || r[0].Path != vertexCountPath {
				t.Errorf("calls %v", r)
			}
		})
	}
}
