package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testResponses is a ResponseStore in a map, for the root's tests (the
// memstore package cannot be imported here).
type testResponses struct {
	mu sync.Mutex
	m  map[[2]string]*StoredResponse
}

func (s *testResponses) PutResponse(_ context.Context, r *StoredResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[[2]string]*StoredResponse{}
	}
	s.m[[2]string{r.Workspace, r.ID}] = r
	return nil
}

func (s *testResponses) Response(_ context.Context, ws, id string) (*StoredResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.m[[2]string{ws, id}]; ok {
		return r, nil
	}
	return nil, ErrNotFound
}

func (s *testResponses) DeleteResponse(_ context.Context, ws, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[[2]string{ws, id}]; !ok {
		return ErrNotFound
	}
	delete(s.m, [2]string{ws, id})
	return nil
}

// protoEnv is a gateway whose virtual keys point every kind at one fake
// provider: vk-oai (openai), vk-deep (deepseek), vk-anth (anthropic),
// vk-gem (google), vk-vtx (vertex-ai).
func protoEnv(t *testing.T, h http.HandlerFunc) (*coreEnv, *testResponses) {
	t.Helper()
	up := newCoreUpstream(t, h)
	rs := &testResponses{}
	e := newCoreEnv(t, up, func(o *Options) { o.Responses = rs })
	for _, vk := range []VirtualKey{
		{Slug: "vk-oai", Provider: "openai", APIKey: "sk-oai", BaseURL: up.URL + "/v1"},
		{Slug: "vk-deep", Provider: "deepseek", APIKey: "sk-deep", BaseURL: up.URL + "/v1"},
		{Slug: "vk-anth", Provider: "anthropic", APIKey: "sk-ant", BaseURL: up.URL + "/v1"},
		{Slug: "vk-gem", Provider: "google", APIKey: "g-key", BaseURL: up.URL + "/v1beta"},
		{Slug: "vk-vtx", Provider: "vertex-ai", APIKey: "ya29", BaseURL: up.URL, HostSettings: HostSettings{ProjectID: "proj", Region: "us-east5"}},
	} {
		vk.WorkspaceID = "ws-1"
		e.store.AddVirtualKey(vk)
	}
	return e, rs
}

const claudeCodeBody = `{"model":"claude-sonnet-4-5","max_tokens":1024,"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],` +
	`"messages":[{"role":"user","content":[{"type":"text","text":"List files","cache_control":{"type":"ephemeral"}}]}],` +
	`"tools":[{"name":"ls","description":"list","input_schema":{"type":"object","properties":{"dir":{"type":"string"}}}}]}`

const chatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Here.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"dir\":\".\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":8}}}`

func bodyOf(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMessagesToAnthropicUnchanged: an anthropic target gets the caller's
// bytes and path, the x-api-key the caller sent as its token, and the
// anthropic-version and anthropic-beta headers; the answer comes back as
// Anthropic sent it.
func TestMessagesToAnthropicUnchanged(t *testing.T) {
	const answer = `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"model":"claude","stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1,"cache_read_input_tokens":7}}`
	e, _ := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	})
	res := e.do("POST", "/v1/messages?beta=true", strings.NewReader(claudeCodeBody), "x-gateway-api-key: "+coreKey,
		"x-gateway-provider: anthropic", "x-gateway-custom-host: "+e.up.URL+"/v1", "x-api-key: sk-caller",
		"anthropic-version: 2023-06-01", "anthropic-beta: prompt-caching-2024-07-31")
	if got := bodyOf(t, res); res.StatusCode != 200 || got != answer {
		t.Fatalf("got %d %s", res.StatusCode, got)
	}
	rec := e.up.received()
	if len(rec) != 1 {
		t.Fatalf("%d calls", len(rec))
	}
	r := rec[0]
	if r.Path != "/v1/messages" || r.Query != "beta=true" || r.Body != claudeCodeBody {
		t.Errorf("sent %s?%s %s", r.Path, r.Query, r.Body)
	}
	if r.Header.Get("X-Api-Key") != "sk-caller" || r.Header.Get("Authorization") != "" ||
		r.Header.Get("Anthropic-Version") != "2023-06-01" || r.Header.Get("Anthropic-Beta") != "prompt-caching-2024-07-31" {
		t.Errorf("headers %v", r.Header)
	}
	e.gw.Close()
	logs := e.logs.Query(LogFilter{})
	if len(logs) != 1 || logs[0].Ingress != "messages" || logs[0].PromptTokens != 10 || logs[0].CachedPromptTokens != 7 {
		t.Errorf("log %+v", logs)
	}
}

// TestMessagesToChat: an OpenAI-compatible target gets the Messages
// request as a chat completion on /chat/completions, and its answer comes
// back as a Messages answer.
func TestMessagesToChat(t *testing.T) {
	e, _ := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	})
	res := e.do("POST", "/v1/messages", strings.NewReader(claudeCodeBody), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-oai")
	got := bodyOf(t, res)
	if res.StatusCode != 200 {
		t.Fatalf("got %d %s", res.StatusCode, got)
	}
	want := `{"id":"msg_1","type":"message","role":"assistant","model":"gpt-4o","content":[{"type":"text","text":"Here."},{"type":"tool_use","id":"call_1","name":"ls","input":{"dir":"."}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":5,"cache_read_input_tokens":8,"cache_creation_input_tokens":0}}`
	if d := jsonDiff(t, want, got); d != "" {
		t.Errorf("answer (-want +got):\n%s", d)
	}
	r := e.up.received()[0]
	if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-oai" {
		t.Errorf("sent %s %v", r.Path, r.Header)
	}
	wantBody := `{"model":"claude-sonnet-4-5","messages":[{"role":"system","content":"You are Claude Code."},{"role":"user","content":"List files"}],` +
		`"max_tokens":1024,"tools":[{"type":"function","function":{"name":"ls","description":"list","parameters":{"type":"object","properties":{"dir":{"type":"string"}}}}}]}`
	if d := jsonDiff(t, wantBody, r.Body); d != "" {
		t.Errorf("chat body (-want +got):\n%s", d)
	}
}

// jsonDiff compares two JSON documents by value.
func jsonDiff(t *testing.T, want, got string) string {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want: %v", err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return "not JSON: " + got
	}
	return cmp.Diff(w, g)
}

// sseEvents returns the event types of a Messages or Responses stream.
func sseEvents(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			out = append(out, ev)
		}
	}
	return out
}

const chatStream = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"}}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"dir\""}}]}}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":\".\"}"}}]}}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}

data: [DONE]

`

// TestMessagesStreamToChat: a streamed Messages request to a chat target
// is streamed upstream, and its chunks come back as the Messages event
// sequence, in order.
func TestMessagesStreamToChat(t *testing.T) {
	e, _ := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chatStream)
	})
	body := strings.Replace(claudeCodeBody, `"max_tokens":1024`, `"max_tokens":1024,"stream":true`, 1)
	res := e.do("POST", "/v1/messages", strings.NewReader(body), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-deep")
	got := bodyOf(t, res)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %s", res.StatusCode, got)
	}
	want := []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if d := cmp.Diff(want, sseEvents(got)); d != "" {
		t.Errorf("events (-want +got):\n%s\n%s", d, got)
	}
	if r := e.up.received()[0]; !strings.Contains(r.Body, `"stream":true`) || !strings.Contains(r.Body, `"include_usage":true`) {
		t.Errorf("chat body %s", r.Body)
	}
	e.gw.Close()
	if l := e.logs.Query(LogFilter{}); len(l) != 1 || l[0].CompletionTokens != 4 {
		t.Errorf("log %+v", l)
	}
}

// TestMessagesToGemini: a Google target gets generateContent, and the
// answer comes back as a Messages answer.
func TestMessagesToGemini(t *testing.T) {
	e, _ := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":1,"totalTokenCount":5},"modelVersion":"gemini-2.5-pro","responseId":"r1"}`)
	})
	body := `{"model":"gemini-2.5-pro","max_tokens":100,"messages":[{"role":"user","content":"Hi"}]}`
	res := e.do("POST", "/v1/messages", strings.NewReader(body), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-gem")
	got := bodyOf(t, res)
	if res.StatusCode != 200 || !strings.Contains(got, `"type":"message"`) || !strings.Contains(got, `"text":"Hello"`) || !strings.Contains(got, `"stop_reason":"end_turn"`) {
		t.Fatalf("got %d %s", res.StatusCode, got)
	}
	r := e.up.received()[0]
	if r.Path != "/v1beta/models/gemini-2.5-pro:generateContent" || r.Header.Get("X-Goog-Api-Key") != "g-key" || !strings.Contains(r.Body, `"contents"`) {
		t.Errorf("sent %s %v %s", r.Path, r.Header, r.Body)
	}
}

// TestMessagesToVertexClaude: a Claude model on Vertex AI gets the
// Messages body itself through rawPredict, less its model and with
// Vertex's anthropic_version; anthropic-beta rides in the body.
func TestMessagesToVertexClaude(t *testing.T) {
	e, _ := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_v","type":"message","content":[]}`)
	})
	body := strings.Replace(claudeCodeBody, "claude-sonnet-4-5", "claude-sonnet-4-5@20250929", 1)
	res := e.do("POST", "/v1/messages", strings.NewReader(body), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-vtx",
		"anthropic-beta: interleaved-thinking-2025-05-14")
	if got := bodyOf(t, res); res.StatusCode != 200 || got != `{"id":"msg_v","type":"message","content":[]}` {
		t.Fatalf("got %d %s", res.StatusCode, got)
	}
	r := e.up.received()[0]
	if r.Path != "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict" {
		t.Errorf("path %s", r.Path)
	}
	var sent, orig map[string]json.RawMessage
	json.Unmarshal([]byte(r.Body), &sent)
	json.Unmarshal([]byte(body), &orig)
	if _, ok := sent["model"]; ok || string(sent["anthropic_version"]) != `"vertex-2023-10-16"` ||
		string(sent["anthropic_beta"]) != `["interleaved-thinking-2025-05-14"]` || string(sent["system"]) != string(orig["system"]) {
		t.Errorf("body %s", r.Body)
	}
}

// TestMessagesErrorsAnthropicShaped: on /messages the gateway's own
// errors are Anthropic-shaped with their status, and a chat target's
// error too.
func TestMessagesErrorsAnthropicShaped(t *testing.T) {
	e, _ := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":null}}`)
	})
	body := strings.NewReader
	for _, tc := range []struct {
		name    string
		res     *http.Response
		status  int
		typ     string
		contain string
	}{
		{"no gateway key", e.do("POST", "/v1/messages", body(claudeCodeBody)), 401, "authentication_error", ""},
		{"no provider", e.do("POST", "/v1/messages", body(claudeCodeBody), "x-gateway-api-key: "+coreKey), 400, "invalid_request_error", ""},
		{"no token for anthropic", e.do("POST", "/v1/messages", body(claudeCodeBody), "x-gateway-api-key: "+coreKey, "x-gateway-provider: anthropic"), 400, "invalid_request_error", "provider token"},
		{"method", e.do("GET", "/v1/messages", nil, "x-gateway-api-key: "+coreKey), 405, "invalid_request_error", ""},
		{"unsupported", e.do("POST", "/v1/messages", body(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","data":"x"}}]}]}`),
			"x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-oai"), 400, "invalid_request_error", "messages[0].content[0]"},
		{"provider's 429", e.do("POST", "/v1/messages", body(claudeCodeBody), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-oai"), 429, "rate_limit_error", "slow down"},
	} {
		b := bodyOf(t, tc.res)
		typ, msg, ok := anthropicErrorBody(b)
		if !ok || tc.res.StatusCode != tc.status || typ != tc.typ || !strings.Contains(msg, tc.contain) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, tc.res.StatusCode, b, tc.status, tc.typ)
		}
	}
	if n := len(e.up.received()); n != 1 {
		t.Errorf("%d provider calls, want 1 (the 429)", n)
	}
}

// anthropicErrorBody reads an Anthropic-shaped error body,
// {"type":"error","error":{"type","message"}}; ok is false for any other.
func anthropicErrorBody(body string) (typ, message string, ok bool) {
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) != nil || e.Type != "error" {
		return "", "", false
	}
	return e.Error.Type, e.Error.Message, true
}

// TestCountTokens: count_tokens goes to Anthropic as sent, and is
// estimated by the gateway for a target that cannot count, which is not
// called.
func TestCountTokens(t *testing.T) {
	e, _ := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":42}`)
	})
	res := e.do("POST", "/v1/messages/count_tokens", strings.NewReader(claudeCodeBody), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-anth")
	if got := bodyOf(t, res); got != `{"input_tokens":42}` {
		t.Errorf("anthropic: %s", got)
	}
	res = e.do("POST", "/v1/messages/count_tokens", strings.NewReader(claudeCodeBody), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-oai")
	var n struct {
		InputTokens int `json:"input_tokens"`
	}
	if got := bodyOf(t, res); json.Unmarshal([]byte(got), &n) != nil || res.StatusCode != 200 || n.InputTokens <= 0 {
		t.Errorf("estimate: %d %s", res.StatusCode, got)
	}
	if got := e.up.received(); len(got) != 1 || got[0].Path != "/v1/messages/count_tokens" {
		t.Errorf("calls %v", got)
	}
}

const codexBody = `{"model":"gpt-5-codex","instructions":"You are Codex.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}],` +
	`"tools":[{"type":"function","name":"shell","description":"run","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]}`

// TestResponsesToOpenAIUnchanged: an openai target gets the caller's
// bytes on /responses, and the gateway keeps nothing: GETs pass through.
func TestResponsesToOpenAIUnchanged(t *testing.T) {
	e, rs := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_up","object":"response"}`)
	})
	res := e.do("POST", "/v1/responses", strings.NewReader(codexBody), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-oai")
	if got := bodyOf(t, res); got != `{"id":"resp_up","object":"response"}` {
		t.Errorf("got %s", got)
	}
	res = e.do("GET", "/v1/responses/resp_up", nil, "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-oai")
	bodyOf(t, res)
	got := e.up.received()
	if len(got) != 2 || got[0].Path != "/v1/responses" || got[0].Body != codexBody || got[1].Method != "GET" || got[1].Path != "/v1/responses/resp_up" {
		t.Errorf("calls %+v", got)
	}
	if len(rs.m) != 0 {
		t.Errorf("stored %v", rs.m)
	}
}

// TestResponsesStored: a Responses request to a chat target is answered
// as a Response, kept, continued with previous_response_id (the stored
// items sent before the new input), served by GET and input_items
// without calling the provider, hidden from another workspace, and
// deleted.
func TestResponsesStored(t *testing.T) {
	e, rs := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	})
	e.store.AddAPIKey(APIKey{ID: "key-other", Digest: HashAPIKey("gw-other"), WorkspaceID: "ws-2", Role: RoleMember})
	res := e.do("POST", "/v1/responses", strings.NewReader(codexBody), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-deep")
	got := bodyOf(t, res)
	var resp struct {
		ID     string            `json:"id"`
		Object string            `json:"object"`
		Status string            `json:"status"`
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(got), &resp); err != nil || res.StatusCode != 200 || resp.Object != "response" || !strings.HasPrefix(resp.ID, "resp_") || len(resp.Output) != 2 {
		t.Fatalf("got %d %s", res.StatusCode, got)
	}
	if r := e.up.received()[0]; r.Path != "/v1/chat/completions" || !strings.Contains(r.Body, `"role":"system","content":"You are Codex."`) {
		t.Errorf("sent %s %s", r.Path, r.Body)
	}
	if len(rs.m) != 1 {
		t.Fatalf("stored %d", len(rs.m))
	}

	next := `{"model":"gpt-5-codex","previous_response_id":"` + resp.ID + `","input":[{"type":"function_call_output","call_id":"call_1","output":"a.go"}]}`
	res = e.do("POST", "/v1/responses", strings.NewReader(next), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-deep")
	if b := bodyOf(t, res); res.StatusCode != 200 {
		t.Fatalf("continued: %d %s", res.StatusCode, b)
	}
	sent := e.up.received()[1].Body
	for _, s := range []string{`"content":"list files"`, `"tool_calls":[{"id":"call_1"`, `"role":"tool","content":"a.go","tool_call_id":"call_1"`} {
		if !strings.Contains(sent, s) {
			t.Errorf("continued chat body lacks %s: %s", s, sent)
		}
	}

	calls := len(e.up.received())
	res = e.do("GET", "/v1/responses/"+resp.ID, nil, "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-deep")
	if b := bodyOf(t, res); res.StatusCode != 200 || b != got {
		t.Errorf("GET: %d %s, want %s", res.StatusCode, b, got)
	}
	res = e.do("GET", "/v1/responses/"+resp.ID+"/input_items", nil, "x-gateway-api-key: "+coreKey)
	if b := bodyOf(t, res); res.StatusCode != 200 || !strings.Contains(b, `"object":"list"`) || !strings.Contains(b, "list files") {
		t.Errorf("input_items: %d %s", res.StatusCode, b)
	}
	res = e.do("GET", "/v1/responses/"+resp.ID, nil, "x-gateway-api-key: gw-other", "x-gateway-provider: anthropic", "x-gateway-custom-host: "+e.up.URL, "x-api-key: k")
	if b := bodyOf(t, res); res.StatusCode != 404 {
		t.Errorf("other workspace: %d %s", res.StatusCode, b)
	}
	if n := len(e.up.received()); n != calls {
		t.Errorf("the reads called the provider %d times", n-calls)
	}
	res = e.do("DELETE", "/v1/responses/"+resp.ID, nil, "x-gateway-api-key: "+coreKey)
	if b := bodyOf(t, res); res.StatusCode != 200 || !strings.Contains(b, `"deleted":true`) {
		t.Errorf("DELETE: %d %s", res.StatusCode, b)
	}
	res = e.do("POST", "/v1/responses", strings.NewReader(next), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-deep")
	if b := bodyOf(t, res); res.StatusCode != 400 || !strings.Contains(b, `"param":"previous_response_id"`) {
		t.Errorf("after delete: %d %s", res.StatusCode, b)
	}
}

// TestResponsesStreamToAnthropic: a streamed Responses request to an
// anthropic target is translated to Anthropic's Messages API, and its
// events come back as the Responses events in order; the streamed
// response is kept.
func TestResponsesStreamToAnthropic(t *testing.T) {
	const anthStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude\",\"usage\":{\"input_tokens\":5,\"output_tokens\":0}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	e, rs := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, anthStream)
	})
	body := `{"model":"claude-sonnet-4-5","stream":true,"input":"hello"}`
	res := e.do("POST", "/v1/responses", strings.NewReader(body), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-anth")
	got := bodyOf(t, res)
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if d := cmp.Diff(want, sseEvents(got)); d != "" {
		t.Errorf("events (-want +got):\n%s\n%s", d, got)
	}
	if r := e.up.received()[0]; r.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != "sk-ant" {
		t.Errorf("sent %s %v", r.Path, r.Header)
	}
	if len(rs.m) != 1 {
		t.Errorf("stored %d, want the streamed response", len(rs.m))
	}
}

// TestResponseReadNotStored: GET of a response the gateway does not keep,
// for a target without a Responses API, is the gateway's 404, and the
// provider is not called.
func TestResponseReadNotStored(t *testing.T) {
	e, _ := protoEnv(t, nil)
	res := e.do("GET", "/v1/responses/resp_x", nil, "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-anth")
	if got := decodeError(t, res); res.StatusCode != 404 || deref(got.Error.Code) != CodeNotFound {
		t.Errorf("got %d %+v", res.StatusCode, got)
	}
	if n := len(e.up.received()); n != 0 {
		t.Errorf("%d calls", n)
	}
}

// TestFallbackAcrossKinds: one Messages body falls back from a failing
// chat target to anthropic, which gets the caller's bytes.
func TestFallbackAcrossKinds(t *testing.T) {
	e, _ := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			w.WriteHeader(503)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_a","type":"message"}`)
	})
	cfg := `{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"vk-oai"},{"virtual_key":"vk-anth"}]}`
	res := e.do("POST", "/v1/messages", strings.NewReader(claudeCodeBody), "x-gateway-api-key: "+coreKey, "x-gateway-config: "+cfg)
	if got := bodyOf(t, res); res.StatusCode != 200 || got != `{"id":"msg_a","type":"message"}` {
		t.Fatalf("got %d %s", res.StatusCode, got)
	}
	got := e.up.received()
	if len(got) != 2 || got[1].Path != "/v1/messages" || got[1].Body != claudeCodeBody {
		t.Errorf("calls %+v", got)
	}
}
