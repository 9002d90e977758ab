package gatewaytest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway/gatewaytest"
)

var anthropicVersion = []string{"anthropic-version", "2023-06-01"}

const weatherTool = `{"name":"get_weather","description":"Weather of a city","input_schema":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"unit":{"enum":["c","f"]}},"required":["city","days","unit"]}}`

func TestMessages(t *testing.T) {
	s := newServer(t)
	got := readJSON(t, do(t, s, "POST", "/messages",
		`{"model":"claude-sonnet-4-5","max_tokens":64,"system":"Be brief.","messages":[{"role":"user","content":"hello world"}]}`,
		anthropicVersion...), 200)
	want := map[string]any{
		"id": "msg_000001", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content":     []any{map[string]any{"type": "text", "text": "Echo: hello world"}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": float64(4), "cache_creation_input_tokens": float64(0),
			"cache_read_input_tokens": float64(0), "output_tokens": float64(3), "service_tier": "standard"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("message (-want +got):\n%s", d)
	}
}

func TestMessagesStopReasons(t *testing.T) {
	tests := []struct {
		name, body, text, stop string
		seq                    any
	}{
		{"max_tokens", `{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"a b c"}]}`, "Echo: a", "max_tokens", nil},
		{"stop_sequence", `{"model":"m","max_tokens":9,"stop_sequences":["zz","b"],"messages":[{"role":"user","content":"a b c"}]}`, "Echo: a ", "stop_sequence", "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			got := readJSON(t, do(t, s, "POST", "/messages", tt.body, anthropicVersion...), 200)
			text := got["content"].([]any)[0].(map[string]any)["text"]
			if text != tt.text || got["stop_reason"] != tt.stop || got["stop_sequence"] != tt.seq {
				t.Errorf("text %q stop_reason %v stop_sequence %v, want %q %v %v", text, got["stop_reason"], got["stop_sequence"], tt.text, tt.stop, tt.seq)
			}
		})
	}
}

func TestMessagesStream(t *testing.T) {
	s := newServer(t)
	events := namedEvents(t, do(t, s, "POST", "/messages",
		`{"model":"m","max_tokens":2000,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"tools":[`+weatherTool+`],"messages":[{"role":"user","content":"use get_weather"}]}`,
		anthropicVersion...))
	want := []string{"message_start",
		"content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if d := cmp.Diff(want, names(events)); d != "" {
		t.Fatalf("event sequence (-want +got):\n%s", d)
	}
	// Reassemble the blocks from the deltas, as an SDK does.
	type block struct{ typ, text, sig, json string }
	var blocks []block
	for _, e := range events {
		switch e.name {
		case "content_block_start":
			if int(e.data["index"].(float64)) != len(blocks) {
				t.Errorf("block index %v, want %d", e.data["index"], len(blocks))
			}
			blocks = append(blocks, block{typ: e.data["content_block"].(map[string]any)["type"].(string)})
		case "content_block_delta":
			b := &blocks[int(e.data["index"].(float64))]
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "thinking_delta":
				b.text += d["thinking"].(string)
			case "signature_delta":
				b.sig = d["signature"].(string)
			case "text_delta":
				b.text += d["text"].(string)
			case "input_json_delta":
				b.json += d["partial_json"].(string)
			}
		}
	}
	if len(blocks) != 3 || blocks[0].typ != "thinking" || blocks[0].text != gatewaytest.ThinkingText("use get_weather") || blocks[0].sig == "" ||
		blocks[1].typ != "text" || blocks[1].text != gatewaytest.CompletionText("use get_weather") ||
		blocks[2].typ != "tool_use" || blocks[2].json != `{"city":"city","days":1,"unit":"c"}` {
		t.Errorf("blocks = %+v", blocks)
	}
	start := events[0].data["message"].(map[string]any)
	if start["stop_reason"] != nil || len(start["content"].([]any)) != 0 || start["usage"].(map[string]any)["output_tokens"] != float64(1) {
		t.Errorf("message_start = %v", start)
	}
	delta := events[len(events)-2].data
	if delta["delta"].(map[string]any)["stop_reason"] != "tool_use" || delta["usage"].(map[string]any)["output_tokens"] != float64(9) {
		t.Errorf("message_delta = %v", delta)
	}
}

// An agent's round trip: the answer calls the tool the user named, the
// follow-up carries the thinking block back with the tool result, and the
// answer echoes the result.
func TestMessagesToolRoundTrip(t *testing.T) {
	s := newServer(t)
	first := readJSON(t, do(t, s, "POST", "/messages",
		`{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},"tools":[`+weatherTool+`],"messages":[{"role":"user","content":"What is the weather? Call get_weather."}]}`,
		anthropicVersion...), 200)
	if first["stop_reason"] != "tool_use" {
		t.Fatalf("stop_reason = %v", first["stop_reason"])
	}
	content := first["content"].([]any)
	use := content[2].(map[string]any)
	if use["type"] != "tool_use" || use["id"] != "toolu_000001" || use["name"] != "get_weather" {
		t.Fatalf("tool_use block = %v", use)
	}
	assistant := string(mustJSON(t, content))
	follow := func(assistant, toolUseID string) *http.Response {
		return do(t, s, "POST", "/messages",
			`{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},"tools":[`+weatherTool+`],"messages":[`+
				`{"role":"user","content":"What is the weather? Call get_weather."},`+
				`{"role":"assistant","content":`+assistant+`},`+
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+toolUseID+`","content":"sunny, 21C"}]}]}`,
			anthropicVersion...)
	}
	second := readJSON(t, follow(assistant, "toolu_000001"), 200)
	if second["stop_reason"] != "end_turn" || second["content"].([]any)[1].(map[string]any)["text"] != "Echo: sunny, 21C" {
		t.Errorf("answer to the tool result = %v", second)
	}

	e := anthropicErrorOf(t, follow(assistant, "toolu_999"), 400)
	if e["type"] != "invalid_request_error" || !strings.Contains(e["message"].(string), "toolu_999") {
		t.Errorf("unknown tool_use_id: %v", e)
	}
	tampered := strings.Replace(assistant, "Thinking:", "Thinking again:", 1)
	e = anthropicErrorOf(t, follow(tampered, "toolu_000001"), 400)
	if !strings.Contains(e["message"].(string), "signature") {
		t.Errorf("altered thinking block: %v", e)
	}
}

func TestMessagesToolChoice(t *testing.T) {
	tests := []struct {
		name, choice, ask string
		call              bool
	}{
		{"auto names the tool", ``, "get_weather please", true},
		{"auto does not", ``, "weather please", false},
		{"part of a word is not a name", ``, "get_weathers", false},
		{"any", `,"tool_choice":{"type":"any"}`, "hi", true},
		{"tool", `,"tool_choice":{"type":"tool","name":"get_weather"}`, "hi", true},
		{"none", `,"tool_choice":{"type":"none"}`, "get_weather", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			got := readJSON(t, do(t, s, "POST", "/messages",
				`{"model":"m","max_tokens":50,"tools":[`+weatherTool+`]`+tt.choice+`,"messages":[{"role":"user","content":"`+tt.ask+`"}]}`,
				anthropicVersion...), 200)
			if called := got["stop_reason"] == "tool_use"; called != tt.call {
				t.Errorf("stop_reason %v, want a tool call: %v", got["stop_reason"], tt.call)
			}
		})
	}
}

func TestMessagesPromptCache(t *testing.T) {
	s := newServer(t)
	body := `{"model":"m","max_tokens":50,"system":[{"type":"text","text":"a long system prompt","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`
	usage := func(body string) map[string]any {
		return readJSON(t, do(t, s, "POST", "/messages", body, anthropicVersion...), 200)["usage"].(map[string]any)
	}
	want := func(in, write, read float64) map[string]any {
		return map[string]any{"input_tokens": in, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
			"output_tokens": float64(2), "service_tier": "standard"}
	}
	if d := cmp.Diff(want(1, 4, 0), usage(body)); d != "" {
		t.Errorf("first request (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want(1, 0, 4), usage(body)); d != "" {
		t.Errorf("second request (-want +got):\n%s", d)
	}
	// Without cache_control nothing is cached, though the text is the same.
	if d := cmp.Diff(want(5, 0, 0), usage(strings.Replace(body, `,"cache_control":{"type":"ephemeral"}`, "", 1))); d != "" {
		t.Errorf("unmarked request (-want +got):\n%s", d)
	}
	res := do(t, s, "POST", "/messages/count_tokens", body, anthropicVersion...)
	if d := cmp.Diff(map[string]any{"input_tokens": float64(5)}, readJSON(t, res, 200)); d != "" {
		t.Errorf("count_tokens (-want +got):\n%s", d)
	}
}

func TestMessagesErrors(t *testing.T) {
	tests := []struct {
		name, path, body string
		header           []string
		status           int
		typ, message     string
	}{
		{"no anthropic-version", "/messages", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`, nil,
			400, "invalid_request_error", "anthropic-version: header is required"},
		{"no max_tokens", "/messages", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, anthropicVersion,
			400, "invalid_request_error", "max_tokens: Field required"},
		{"no model", "/messages/count_tokens", `{"messages":[{"role":"user","content":"x"}]}`, anthropicVersion,
			400, "invalid_request_error", "model: Field required"},
		{"bad role", "/messages", `{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"x"}]}`, anthropicVersion,
			400, "invalid_request_error", "messages.0.role: Input should be 'user' or 'assistant'"},
		{"small thinking budget", "/messages", `{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":10},"messages":[{"role":"user","content":"x"}]}`, anthropicVersion,
			400, "invalid_request_error", "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"},
		{"invalid JSON", "/messages", `{`, anthropicVersion,
			400, "invalid_request_error", "There was an error parsing the body of your request as JSON."},
		{"wrong method", "/messages", ``, anthropicVersion, 404, "not_found_error", "Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			method := "POST"
			if tt.body == "" {
				method = "GET"
			}
			e := anthropicErrorOf(t, do(t, s, method, tt.path, tt.body, tt.header...), tt.status)
			if e["type"] != tt.typ || e["message"] != tt.message {
				t.Errorf("error = %v, want %s %q", e, tt.typ, tt.message)
			}
		})
	}
}

func TestMessagesRequireToken(t *testing.T) {
	s := newServer(t)
	s.RequireToken("sk-ant-test")
	body := `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x"}]}`
	for _, tt := range []struct {
		name    string
		header  []string
		message string
	}{
		{"missing", nil, "x-api-key header is required"},
		{"bearer is not x-api-key", []string{"Authorization", "Bearer sk-ant-test"}, "x-api-key header is required"},
		{"wrong", []string{"x-api-key", "sk-other"}, "invalid x-api-key"},
	} {
		e := anthropicErrorOf(t, do(t, s, "POST", "/messages", body, append(tt.header, anthropicVersion...)...), 401)
		if e["type"] != "authentication_error" || e["message"] != tt.message {
			t.Errorf("%s: error = %v", tt.name, e)
		}
	}
	readJSON(t, do(t, s, "POST", "/messages", body, "x-api-key", "sk-ant-test", anthropicVersion[0], anthropicVersion[1]), 200)
	if n := s.Count("/v1/messages"); n != 4 {
		t.Errorf("Count = %d, want 4", n)
	}
	if got := s.Requests()[3].Header.Get("X-Api-Key"); got != "sk-ant-test" {
		t.Errorf("recorded x-api-key %q", got)
	}
}

func TestMessagesScript(t *testing.T) {
	s := newServer(t)
	s.Script("/v1/messages",
		gatewaytest.Response{Status: 529},
		gatewaytest.Response{Events: []string{`{"type":"message_start"}`, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}},
		gatewaytest.Response{Serve: true, Abort: true, AbortAfter: 2},
	)
	body := `{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"x"}]}`
	e := anthropicErrorOf(t, do(t, s, "POST", "/messages", body, anthropicVersion...), 529)
	if e["type"] != "overloaded_error" {
		t.Errorf("scripted 529: %v", e)
	}
	events := namedEvents(t, do(t, s, "POST", "/messages", body, anthropicVersion...))
	if d := cmp.Diff([]string{"message_start", "error"}, names(events)); d != "" {
		t.Errorf("scripted events (-want +got):\n%s", d)
	}
	res := do(t, s, "POST", "/messages", body, anthropicVersion...)
	got, err := newSSE(res.Body).all()
	if err == nil || len(got) != 2 {
		t.Errorf("aborted stream: %d events, err %v; want 2 and an error", len(got), err)
	}
}

func TestMessagesHoldStream(t *testing.T) {
	s := newServer(t)
	gate := s.HoldStream("/v1/messages", 1)
	res := do(t, s, "POST", "/messages", `{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"x"}]}`, anthropicVersion...)
	r := newSSE(res.Body)
	first, err := r.next()
	if err != nil {
		t.Fatal(err)
	}
	<-gate.Held()
	if !strings.Contains(first, `"type":"message_start"`) {
		t.Errorf("first event %q", first)
	}
	gate.Release()
	rest, err := r.all()
	if err != nil || !strings.Contains(rest[len(rest)-1], "message_stop") {
		t.Errorf("rest of the stream: %q, %v", rest, err)
	}
}
