package gatewaytest_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway/gatewaytest"
)

func TestURLEndsInV1(t *testing.T) {
	s := newServer(t)
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || !strings.HasSuffix(s.URL, "/v1") {
		t.Fatalf("URL = %q, want http://127.0.0.1:<port>/v1", s.URL)
	}
}

func TestCompletion(t *testing.T) {
	tests := []struct {
		name string
		body string
		want map[string]any
	}{
		{
			name: "string prompt",
			body: `{"model":"gpt-3.5-turbo-instruct","prompt":"hello world"}`,
			want: map[string]any{
				"id": "cmpl-000001", "object": "text_completion", "created": float64(gatewaytest.Epoch),
				"model": "gpt-3.5-turbo-instruct", "system_fingerprint": "fp_gatewaytest",
				"choices": []any{
					map[string]any{"text": "Echo: hello world", "index": float64(0), "logprobs": nil, "finish_reason": "stop"},
				},
				"usage": map[string]any{"prompt_tokens": float64(2), "completion_tokens": float64(3), "total_tokens": float64(5)},
			},
		},
		{
			name: "two prompts n 2 max_tokens 2",
			body: `{"model":"m","prompt":["a","b c"],"n":2,"max_tokens":2}`,
			want: map[string]any{
				"id": "cmpl-000001", "object": "text_completion", "created": float64(gatewaytest.Epoch),
				"model": "m", "system_fingerprint": "fp_gatewaytest",
				"choices": []any{
					map[string]any{"text": "Echo: a", "index": float64(0), "logprobs": nil, "finish_reason": "stop"},
					map[string]any{"text": "Echo: a", "index": float64(1), "logprobs": nil, "finish_reason": "stop"},
					map[string]any{"text": "Echo: b", "index": float64(2), "logprobs": nil, "finish_reason": "length"},
					map[string]any{"text": "Echo: b", "index": float64(3), "logprobs": nil, "finish_reason": "length"},
				},
				"usage": map[string]any{"prompt_tokens": float64(3), "completion_tokens": float64(8), "total_tokens": float64(11)},
			},
		},
		{
			name: "token prompt",
			body: `{"model":"m","prompt":[1212,318]}`,
			want: map[string]any{
				"id": "cmpl-000001", "object": "text_completion", "created": float64(gatewaytest.Epoch),
				"model": "m", "system_fingerprint": "fp_gatewaytest",
				"choices": []any{
					map[string]any{"text": "Echo: 1212 318", "index": float64(0), "logprobs": nil, "finish_reason": "stop"},
				},
				"usage": map[string]any{"prompt_tokens": float64(2), "completion_tokens": float64(3), "total_tokens": float64(5)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			got := readJSON(t, do(t, s, "POST", "/completions", tt.body), 200)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("completion mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestCompletionBadRequest(t *testing.T) {
	tests := []struct {
		name, body, param string
	}{
		{"missing model", `{"prompt":"x"}`, "model"},
		{"n out of range", `{"model":"m","prompt":"x","n":0}`, "n"},
		{"prompt of wrong type", `{"model":"m","prompt":{"a":1}}`, "prompt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			e := errorOf(t, do(t, s, "POST", "/completions", tt.body), 400)
			if e["param"] != tt.param || e["type"] != "invalid_request_error" {
				t.Errorf("error = %v, want param %q, type invalid_request_error", e, tt.param)
			}
		})
	}
	t.Run("invalid JSON", func(t *testing.T) {
		s := newServer(t)
		e := errorOf(t, do(t, s, "POST", "/completions", `{`), 400)
		if e["param"] != nil {
			t.Errorf("param = %v, want null", e["param"])
		}
	})
}

func TestCompletionStream(t *testing.T) {
	tests := []struct {
		name         string
		body         string
		includeUsage bool
	}{
		{"without usage", `{"model":"m","prompt":"hello big world","stream":true}`, false},
		{"with usage", `{"model":"m","prompt":"hello big world","stream":true,"stream_options":{"include_usage":true}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			res := do(t, s, "POST", "/completions", tt.body)
			if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type = %q", ct)
			}
			events, err := newSSE(res.Body).all()
			if err != nil {
				t.Fatal(err)
			}
			if len(events) == 0 || events[len(events)-1] != "[DONE]" {
				t.Fatalf("stream does not end with [DONE]: %q", events)
			}
			var text strings.Builder
			var finishes []any
			var usage any
			for i, e := range events[:len(events)-1] {
				c := decode(t, e)
				if c["object"] != "text_completion" || c["id"] != "cmpl-000001" {
					t.Errorf("event %d: object %v id %v", i, c["object"], c["id"])
				}
				u, has := c["usage"]
				if has != tt.includeUsage {
					t.Errorf("event %d: usage key present = %v, want %v", i, has, tt.includeUsage)
				}
				choices := c["choices"].([]any)
				if len(choices) == 0 {
					usage = u
					continue
				}
				if u != nil {
					t.Errorf("event %d: usage = %v on a choice chunk, want null", i, u)
				}
				ch := choices[0].(map[string]any)
				text.WriteString(ch["text"].(string))
				if ch["finish_reason"] != nil {
					finishes = append(finishes, ch["finish_reason"])
				}
			}
			if got := text.String(); got != gatewaytest.CompletionText("hello big world") {
				t.Errorf("streamed text = %q", got)
			}
			// "Echo:", " hello", " big", " world", then the finish chunk.
			if n := len(events) - 1; n != 5+boolInt(tt.includeUsage) {
				t.Errorf("got %d events before [DONE], want %d", n, 5+boolInt(tt.includeUsage))
			}
			if d := cmp.Diff([]any{"stop"}, finishes); d != "" {
				t.Errorf("finish reasons (-want +got):\n%s", d)
			}
			var wantUsage any
			if tt.includeUsage {
				wantUsage = map[string]any{"prompt_tokens": float64(3), "completion_tokens": float64(4), "total_tokens": float64(7)}
			}
			if d := cmp.Diff(wantUsage, usage); d != "" {
				t.Errorf("usage chunk (-want +got):\n%s", d)
			}
			if tt.includeUsage && !strings.Contains(events[len(events)-2], `"choices":[]`) {
				t.Errorf("usage chunk is not last or lacks empty choices: %s", events[len(events)-2])
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestChatCompletion(t *testing.T) {
	s := newServer(t)
	body := `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi there"}]}]}`
	got := readJSON(t, do(t, s, "POST", "/chat/completions", body), 200)
	want := map[string]any{
		"id": "chatcmpl-000001", "object": "chat.completion", "created": float64(gatewaytest.Epoch),
		"model": "gpt-4o-mini", "system_fingerprint": "fp_gatewaytest",
		"choices": []any{map[string]any{
			"index":         float64(0),
			"message":       map[string]any{"role": "assistant", "content": "Echo: hi there", "refusal": nil},
			"logprobs":      nil,
			"finish_reason": "stop",
		}},
		"usage": map[string]any{"prompt_tokens": float64(4), "completion_tokens": float64(3), "total_tokens": float64(7)},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("chat completion (-want +got):\n%s", d)
	}
}

func TestChatCompletionStream(t *testing.T) {
	s := newServer(t)
	res := do(t, s, "POST", "/chat/completions",
		`{"model":"m","messages":[{"role":"user","content":"one two"}],"stream":true,"stream_options":{"include_usage":true}}`)
	events, err := newSSE(res.Body).all()
	if err != nil {
		t.Fatal(err)
	}
	var deltas []any
	for _, e := range events[:len(events)-1] {
		c := decode(t, e)
		if c["object"] != "chat.completion.chunk" {
			t.Errorf("object = %v", c["object"])
		}
		for _, ch := range c["choices"].([]any) {
			ch := ch.(map[string]any)
			deltas = append(deltas, []any{ch["delta"], ch["finish_reason"]})
		}
	}
	want := []any{
		[]any{map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil},
		[]any{map[string]any{"content": "Echo:"}, nil},
		[]any{map[string]any{"content": " one"}, nil},
		[]any{map[string]any{"content": " two"}, nil},
		[]any{map[string]any{}, "stop"},
	}
	if d := cmp.Diff(want, deltas); d != "" {
		t.Errorf("deltas (-want +got):\n%s", d)
	}
	last := decode(t, events[len(events)-2])
	wantUsage := map[string]any{"prompt_tokens": float64(2), "completion_tokens": float64(3), "total_tokens": float64(5)}
	if d := cmp.Diff(wantUsage, last["usage"]); d != "" {
		t.Errorf("usage (-want +got):\n%s", d)
	}
	if events[len(events)-1] != "[DONE]" {
		t.Errorf("last event = %q, want [DONE]", events[len(events)-1])
	}
}

func TestEmbeddings(t *testing.T) {
	s := newServer(t)
	body := `{"model":"text-embedding-3-small","input":["a b","c"],"dimensions":3}`
	first := readJSON(t, do(t, s, "POST", "/embeddings", body), 200)
	again := readJSON(t, do(t, s, "POST", "/embeddings", body), 200)
	if d := cmp.Diff(first, again); d != "" {
		t.Errorf("embeddings not deterministic (-first +again):\n%s", d)
	}
	data := first["data"].([]any)
	if len(data) != 2 {
		t.Fatalf("got %d embeddings, want 2", len(data))
	}
	for i, d := range data {
		d := d.(map[string]any)
		if d["index"] != float64(i) || d["object"] != "embedding" || len(d["embedding"].([]any)) != 3 {
			t.Errorf("embedding %d = %v", i, d)
		}
	}
	if d := cmp.Diff(map[string]any{"prompt_tokens": float64(3), "total_tokens": float64(3)}, first["usage"]); d != "" {
		t.Errorf("usage (-want +got):\n%s", d)
	}
}

func TestModels(t *testing.T) {
	s := newServer(t)
	list := readJSON(t, do(t, s, "GET", "/models", ""), 200)
	var ids []any
	for _, m := range list["data"].([]any) {
		ids = append(ids, m.(map[string]any)["id"])
	}
	if d := cmp.Diff([]any{"gpt-4o-mini", "gpt-3.5-turbo-instruct", "text-embedding-3-small"}, ids); d != "" {
		t.Errorf("models (-want +got):\n%s", d)
	}
	if list["object"] != "list" {
		t.Errorf("object = %v", list["object"])
	}
	one := readJSON(t, do(t, s, "GET", "/models/gpt-4o-mini", ""), 200)
	if one["id"] != "gpt-4o-mini" || one["object"] != "model" {
		t.Errorf("model = %v", one)
	}
	e := errorOf(t, do(t, s, "GET", "/models/nope", ""), 404)
	if e["code"] != "model_not_found" {
		t.Errorf("code = %v", e["code"])
	}
}
