package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modelgateway/gateway/internal/chat"
)

// anthropicEnv is a gateway with a virtual key "vk-anth" of kind anthropic
// pointing at a fake Anthropic host that answers with h.
func anthropicEnv(t *testing.T, h http.HandlerFunc) *coreEnv {
	t.Helper()
	up := newCoreUpstream(t, h)
	e := newCoreEnv(t, up, nil)
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-anth", Provider: ProviderAnthropic, APIKey: "sk-ant-stored", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	return e
}

func postChat(e *coreEnv, body string, headers ...string) *http.Response {
	return e.do("POST", "/v1/chat/completions", strings.NewReader(body),
		append([]string{"x-gateway-api-key: " + coreKey, "x-gateway-virtual-key: vk-anth", "Content-Type: application/json"}, headers...)...)
}

// TestAnthropicTranslation sends one OpenAI chat request with a system
// prompt, an image, a tool call and its result, and tools, and checks the
// Messages request Anthropic gets and the OpenAI answer the caller gets.
func TestAnthropicTranslation(t *testing.T) {
	e := anthropicEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
			"content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_2","name":"weather","input":{"city":"Oslo"}}],
			"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":7,"cache_read_input_tokens":4}}`)
	})
	res := postChat(e, `{"model":"claude-x","max_completion_tokens":300,"temperature":0.5,"stop":"END","user":"u-1",
		"messages":[
			{"role":"system","content":"Be brief."},
			{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Bergen\"}"}}]},
			{"role":"tool","tool_call_id":"toolu_1","content":"rain"},
			{"role":"user","content":"And Oslo?"}],
		"tools":[{"type":"function","function":{"name":"weather","description":"Weather now","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
		"tool_choice":"required","parallel_tool_calls":false}`)
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	got := e.up.received()[0]
	if got.Path != "/v1/messages" || got.Header.Get("X-Api-Key") != "sk-ant-stored" || got.Header.Get("Authorization") != "" ||
		got.Header.Get("Anthropic-Version") == "" {
		t.Errorf("Anthropic got %s with %v", got.Path, got.Header)
	}
	var native, want any
	json.Unmarshal([]byte(got.Body), &native)
	json.Unmarshal([]byte(`{"model":"claude-x","max_tokens":300,"temperature":0.5,"stop_sequences":["END"],
		"metadata":{"user_id":"u-1"},
		"system":[{"type":"text","text":"Be brief."}],
		"messages":[
			{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Bergen"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"rain"},{"type":"text","text":"And Oslo?"}]}],
		"tools":[{"name":"weather","description":"Weather now","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],
		"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`), &want)
	if d := cmp.Diff(want, native); d != "" {
		t.Errorf("Anthropic request (-want +got):\n%s", d)
	}

	var answer, wantAnswer map[string]any
	b, _ := io.ReadAll(res.Body)
	json.Unmarshal(b, &answer)
	delete(answer, "created")
	json.Unmarshal([]byte(`{"id":"msg_1","object":"chat.completion","model":"claude-x",
		"choices":[{"index":0,"logprobs":null,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Let me look.","refusal":null,
			"tool_calls":[{"id":"toolu_2","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]}}],
		"usage":{"prompt_tokens":14,"completion_tokens":7,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":4}}}`), &wantAnswer)
	if d := cmp.Diff(wantAnswer, answer); d != "" {
		t.Errorf("OpenAI answer (-want +got):\n%s", d)
	}
	if res.Header.Get("Content-Type") != "application/json" || res.Header.Get(HeaderProvider) != ProviderAnthropic {
		t.Errorf("headers %v", res.Header)
	}
}

// anthropicEvents is a streamed Anthropic answer: text, then a tool call
// whose arguments arrive in two pieces.
const anthropicEvents = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"weather\",\"input\":{}}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\":\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"Oslo\\\"}\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// TestAnthropicStreamTranslation: Anthropic's events become OpenAI chunks,
// role first, content and tool-call deltas with a stable index and id, the
// finish reason, the usage chunk asked for, then [DONE].
func TestAnthropicStreamTranslation(t *testing.T) {
	e := anthropicEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range strings.SplitAfter(anthropicEvents, "\n\n") {
			io.WriteString(w, ev)
			http.NewResponseController(w).Flush()
		}
	})
	res := postChat(e, `{"model":"claude-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if !strings.Contains(e.up.received()[0].Body, `"stream":true`) {
		t.Errorf("Anthropic was not asked to stream: %s", e.up.received()[0].Body)
	}
	b, _ := io.ReadAll(res.Body)
	var deltas []string
	for _, ev := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("not an SSE data event: %q", ev)
		}
		if data == "[DONE]" {
			deltas = append(deltas, "[DONE]")
			continue
		}
		var c struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil || c.ID != "msg_s" || c.Object != "chat.completion.chunk" || c.Model != "claude-x" {
			t.Fatalf("chunk %s: %v", data, err)
		}
		if len(c.Choices) == 0 {
			deltas = append(deltas, "usage "+string(c.Usage))
			continue
		}
		d := string(c.Choices[0].Delta)
		if f := c.Choices[0].FinishReason; f != nil {
			d += " finish=" + *f
		}
		deltas = append(deltas, d)
	}
	want := []string{
		`{"role":"assistant","content":""}`,
		`{"content":"Hel"}`,
		`{"content":"lo"}`,
		`{"tool_calls":[{"index":0,"id":"toolu_9","type":"function","function":{"name":"weather","arguments":""}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}`,
		`{} finish=tool_calls`,
		`usage {"prompt_tokens":12,"completion_tokens":9,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0}}`,
		"[DONE]",
	}
	if d := cmp.Diff(want, deltas); d != "" {
		t.Errorf("chunks (-want +got):\n%s", d)
	}
}

// TestAnthropicTranslationRefusals: what Anthropic cannot do is a 400
// naming the parameter, before Anthropic is called; Anthropic's own errors
// come back OpenAI-shaped with its status.
func TestAnthropicTranslationRefusals(t *testing.T) {
	e := anthropicEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	})
	for _, tc := range []struct{ body, param string }{
		{`{"model":"c","n":2,"messages":[{"role":"user","content":"Hi"}]}`, "n"},
		{`{"model":"c","seed":7,"messages":[{"role":"user","content":"Hi"}]}`, "seed"},
		{`{"model":"c","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"Hi"}]}`, "response_format"},
		{`{"model":"c","temperature":1.5,"messages":[{"role":"user","content":"Hi"}]}`, "temperature"},
		{`{"messages":[{"role":"user","content":"Hi"}]}`, "model"},
	} {
		res := postChat(e, tc.body)
		if res.StatusCode != 400 {
			t.Errorf("%s: status %d, want 400", tc.body, res.StatusCode)
			continue
		}
		if got := decodeError(t, res); deref(got.Error.Param) != tc.param {
			t.Errorf("%s: param %q, want %q", tc.body, deref(got.Error.Param), tc.param)
		}
	}
	res := e.do("POST", "/v1/embeddings", strings.NewReader(`{"model":"c","input":"x"}`),
		"x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-anth")
	if res.StatusCode != 400 {
		t.Errorf("embeddings: status %d, want 400", res.StatusCode)
	}
	if n := len(e.up.received()); n != 0 {
		t.Errorf("Anthropic was called %d times for refused requests", n)
	}

	res = postChat(e, `{"model":"c","messages":[{"role":"user","content":"Hi"}]}`)
	if res.StatusCode != 529 {
		t.Fatalf("status %d, want Anthropic's 529", res.StatusCode)
	}
	if got := decodeError(t, res); got.Error.Message != "Overloaded" || got.Error.Type != "overloaded_error" {
		t.Errorf("error %+v", got.Error)
	}
	// Other paths of the kind are passed through untranslated.
	res = e.do("POST", "/v1/messages", strings.NewReader(`{"native":true}`),
		"x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-anth")
	if b, _ := io.ReadAll(res.Body); res.StatusCode != 529 || !strings.Contains(string(b), `"type":"error"`) {
		t.Errorf("pass-through answer %d %s, want Anthropic's own", res.StatusCode, b)
	}
	if got := e.up.received(); got[len(got)-1].Body != `{"native":true}` {
		t.Errorf("pass-through body %q, want the caller's bytes", got[len(got)-1].Body)
	}
}

// TestTranslationAcrossKinds: one OpenAI body falls back from Anthropic
// (overloaded, retried once) to an OpenAI-compatible host, which gets the
// caller's bytes unchanged; and a cached translated answer is served as a
// HIT without calling Anthropic again.
func TestTranslationAcrossKinds(t *testing.T) {
	var anthCalls atomic.Int32
	e := anthropicEnv(t, nil)
	anth := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		anthCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.Header.Get("X-Api-Key"), "busy") {
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		io.WriteString(w, `{"id":"msg_c","model":"claude-x","content":[{"type":"text","text":"cached?"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`)
	})
	e.store.AddVirtualKey(VirtualKey{Slug: "anth-busy", Provider: ProviderAnthropic, APIKey: "sk-busy", BaseURL: anth.URL + "/v1", WorkspaceID: "ws-1"})
	e.store.AddVirtualKey(VirtualKey{Slug: "anth-ok", Provider: ProviderAnthropic, APIKey: "sk-ok", BaseURL: anth.URL + "/v1", WorkspaceID: "ws-1"})
	const body = `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`
	send := func(cfg string) *http.Response {
		return e.do("POST", "/v1/chat/completions", strings.NewReader(body),
			"x-gateway-api-key: "+coreKey, "x-gateway-config: "+cfg, "Content-Type: application/json")
	}

	res := send(`{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"anth-busy","retry":{"attempts":1}},{"virtual_key":"vk-up"}]}`)
	if res.StatusCode != 200 || res.Header.Get(HeaderLastUsedOptionIndex) != "config.targets[1]" {
		t.Fatalf("status %d from %s, want 200 from config.targets[1]", res.StatusCode, res.Header.Get(HeaderLastUsedOptionIndex))
	}
	if n := anthCalls.Load(); n != 2 {
		t.Errorf("Anthropic was called %d times, want 2 (529 retried once)", n)
	}
	if got := e.up.received(); len(got) != 1 || got[0].Body != body {
		t.Errorf("the OpenAI host got %+v, want the caller's bytes", got)
	}

	const cached = `{"virtual_key":"anth-ok","cache":{"mode":"simple"}}`
	for i, want := range []CacheStatus{CacheMiss, CacheHit} {
		res := send(cached)
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || CacheStatus(res.Header.Get(HeaderCacheStatus)) != want || !strings.Contains(string(b), `"object":"chat.completion"`) {
			t.Errorf("request %d: %d %s %s, want 200 %s with an OpenAI answer", i, res.StatusCode, res.Header.Get(HeaderCacheStatus), b, want)
		}
	}
	if n := anthCalls.Load(); n != 3 {
		t.Errorf("Anthropic was called %d times in all, want 3 (the HIT calls nobody)", n)
	}
}

// FuzzAnthropicStream feeds arbitrary provider streams to the translator:
// it never panics, and whatever it writes is a sequence of data: events.
func FuzzAnthropicStream(f *testing.F) {
	f.Add([]byte(anthropicEvents), true)
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n"), false)
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\"}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\n"), true)
	f.Fuzz(func(t *testing.T, stream []byte, usage bool) {
		req := &chat.Request{Model: "m", Stream: true, StreamOptions: &chat.StreamOptions{IncludeUsage: usage}}
		out, _ := io.ReadAll(anthropicStream(req, io.NopCloser(bytes.NewReader(stream))))
		for _, ev := range strings.SplitAfter(string(out), "\n\n") {
			if ev != "" && (!strings.HasPrefix(ev, "data: ") || !strings.HasSuffix(ev, "\n\n")) {
				t.Fatalf("not a data event: %q", ev)
			}
		}
	})
}
