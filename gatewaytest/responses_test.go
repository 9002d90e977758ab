package gatewaytest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway/gatewaytest"
)

const shellTool = `{"type":"function","name":"shell","description":"Run a command","parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}},"workdir":{"type":"string"}},"required":["command","workdir"]}}`

func TestResponses(t *testing.T) {
	s := newServer(t)
	got := readJSON(t, do(t, s, "POST", "/responses", `{"model":"gpt-5","instructions":"Be brief.","input":"hello world","metadata":{"k":"v"}}`), 200)
	want := map[string]any{
		"id": "resp_000001", "object": "response", "created_at": float64(gatewaytest.Epoch), "status": "completed",
		"error": nil, "incomplete_details": nil, "instructions": "Be brief.", "max_output_tokens": nil, "model": "gpt-5",
		"output": []any{map[string]any{"id": "msg_000002", "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": "Echo: hello world", "annotations": []any{}}}}},
		"parallel_tool_calls": true, "previous_response_id": nil, "reasoning": map[string]any{"effort": nil, "summary": nil},
		"store": true, "temperature": float64(1), "text": map[string]any{"format": map[string]any{"type": "text"}},
		"tool_choice": "auto", "tools": []any{}, "top_p": float64(1), "truncation": "disabled", "user": nil,
		"metadata": map[string]any{"k": "v"},
		"usage": map[string]any{"input_tokens": float64(4), "input_tokens_details": map[string]any{"cached_tokens": float64(0)},
			"output_tokens": float64(3), "output_tokens_details": map[string]any{"reasoning_tokens": float64(0)}, "total_tokens": float64(7)},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("response (-want +got):\n%s", d)
	}
	// The stored response reads back unchanged.
	if d := cmp.Diff(want, readJSON(t, do(t, s, "GET", "/responses/resp_000001", ""), 200)); d != "" {
		t.Errorf("GET (-want +got):\n%s", d)
	}
}

func TestResponsesStream(t *testing.T) {
	s := newServer(t)
	events := namedEvents(t, do(t, s, "POST", "/responses",
		`{"model":"gpt-5","stream":true,"tools":[`+shellTool+`],"input":[{"role":"user","content":[{"type":"input_text","text":"run shell"}]}]}`))
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	if d := cmp.Diff(want, names(events)); d != "" {
		t.Fatalf("event sequence (-want +got):\n%s", d)
	}
	var text, args string
	for i, e := range events {
		if e.data["sequence_number"] != float64(i) {
			t.Errorf("event %d: sequence_number %v", i, e.data["sequence_number"])
		}
		switch e.name {
		case "response.output_text.delta":
			text += e.data["delta"].(string)
		case "response.function_call_arguments.delta":
			args += e.data["delta"].(string)
		}
	}
	if text != "Echo: run shell" || args != `{"command":[],"workdir":"workdir"}` {
		t.Errorf("text %q, arguments %q", text, args)
	}
	created := events[0].data["response"].(map[string]any)
	if created["status"] != "in_progress" || len(created["output"].([]any)) != 0 || created["usage"] != nil {
		t.Errorf("response.created = %v", created)
	}
	done := events[len(events)-1].data["response"].(map[string]any)
	call := done["output"].([]any)[1].(map[string]any)
	if done["status"] != "completed" || call["type"] != "function_call" || call["name"] != "shell" || call["arguments"] != args ||
		done["usage"].(map[string]any)["output_tokens"] != float64(5) {
		t.Errorf("response.completed = %v", done)
	}
	// The final response of the stream is the stored one.
	if d := cmp.Diff(done, readJSON(t, do(t, s, "GET", "/responses/"+done["id"].(string), ""), 200)); d != "" {
		t.Errorf("GET after stream (-want +got):\n%s", d)
	}
}

// A Codex-style turn: the answer calls a function, the follow-up sends only
// the function's output with previous_response_id, and the server finds the
// call in its own memory.
func TestResponsesPreviousResponseID(t *testing.T) {
	s := newServer(t)
	first := readJSON(t, do(t, s, "POST", "/responses", `{"model":"m","tools":[`+shellTool+`],"input":"please use shell"}`), 200)
	call := first["output"].([]any)[1].(map[string]any)
	callID := call["call_id"].(string)
	follow := func(prev, callID string) *http.Response {
		return do(t, s, "POST", "/responses", `{"model":"m","tools":[`+shellTool+`],"previous_response_id":"`+prev+
			`","input":[{"type":"function_call_output","call_id":"`+callID+`","output":"exit 0"}]}`)
	}
	second := readJSON(t, follow(first["id"].(string), callID), 200)
	out := second["output"].([]any)
	if len(out) != 1 || out[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "Echo: exit 0" {
		t.Errorf("answer to the function output: %v", out)
	}
	// The history carried over (the first input, the answer's message and
	// function call) counts as cached input.
	u := second["usage"].(map[string]any)
	if cached := u["input_tokens_details"].(map[string]any)["cached_tokens"]; cached != float64(3+4+2) || u["input_tokens"] != float64(1+3+4+2+2) {
		t.Errorf("usage %v", u)
	}

	e := errorOf(t, follow(first["id"].(string), "call_nope"), 400)
	if e["param"] != "input" || !strings.Contains(e["message"].(string), "call_nope") {
		t.Errorf("unknown call_id: %v", e)
	}
	e = errorOf(t, follow("resp_nope", callID), 400)
	if e["param"] != "previous_response_id" || e["code"] != "previous_response_not_found" {
		t.Errorf("unknown previous response: %v", e)
	}
	// Without previous_response_id the call is unknown too.
	e = errorOf(t, do(t, s, "POST", "/responses", `{"model":"m","input":[{"type":"function_call_output","call_id":"`+callID+`","output":"x"}]}`), 400)
	if e["param"] != "input" {
		t.Errorf("function output without its call: %v", e)
	}
}

func TestResponsesStoreAndDelete(t *testing.T) {
	s := newServer(t)
	readJSON(t, do(t, s, "POST", "/responses", `{"model":"m","input":"x","store":false}`), 200)
	errorOf(t, do(t, s, "GET", "/responses/resp_000001", ""), 404)
	e := errorOf(t, do(t, s, "POST", "/responses", `{"model":"m","input":"y","previous_response_id":"resp_000001"}`), 400)
	if e["code"] != "previous_response_not_found" {
		t.Errorf("previous_response_id of an unstored response: %v", e)
	}

	readJSON(t, do(t, s, "POST", "/responses", `{"model":"m","input":"x"}`), 200) // resp_000002
	got := readJSON(t, do(t, s, "DELETE", "/responses/resp_000002", ""), 200)
	if d := cmp.Diff(map[string]any{"id": "resp_000002", "object": "response", "deleted": true}, got); d != "" {
		t.Errorf("DELETE (-want +got):\n%s", d)
	}
	for _, method := range []string{"GET", "DELETE"} {
		e := errorOf(t, do(t, s, method, "/responses/resp_000002", ""), 404)
		if e["message"] != "Response with id 'resp_000002' not found." {
			t.Errorf("%s after DELETE: %v", method, e)
		}
	}
}

func TestResponsesInputItems(t *testing.T) {
	s := newServer(t)
	readJSON(t, do(t, s, "POST", "/responses", `{"model":"m","input":[`+
		`{"role":"developer","content":"rules"},`+
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]},`+
		`{"id":"msg_mine","role":"assistant","content":"b"},`+
		`{"role":"user","content":"c"}]}`), 200)
	list := func(query string) map[string]any {
		return readJSON(t, do(t, s, "GET", "/responses/resp_000001/input_items"+query, ""), 200)
	}
	got := list("")
	want := map[string]any{"object": "list", "first_id": "msg_000001", "last_id": "msg_000003", "has_more": false, "data": []any{
		map[string]any{"id": "msg_000001", "type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "rules"}}},
		map[string]any{"id": "msg_000002", "type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "a"}}},
		map[string]any{"id": "msg_mine", "type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "b"}}},
		map[string]any{"id": "msg_000003", "type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "c"}}},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("input_items (-want +got):\n%s", d)
	}
	page := list("?order=desc&limit=2&after=msg_000003")
	if page["first_id"] != "msg_mine" || page["last_id"] != "msg_000002" || page["has_more"] != true {
		t.Errorf("desc page after msg_000003: %v", page)
	}
	for _, q := range []string{"?limit=0", "?limit=101", "?order=sideways"} {
		e := errorOf(t, do(t, s, "GET", "/responses/resp_000001/input_items"+q, ""), 400)
		if e["param"] != strings.Split(q[1:], "=")[0] {
			t.Errorf("%s: %v", q, e)
		}
	}
	errorOf(t, do(t, s, "GET", "/responses/resp_nope/input_items", ""), 404)
}

func TestResponsesIncomplete(t *testing.T) {
	s := newServer(t)
	events := namedEvents(t, do(t, s, "POST", "/responses", `{"model":"m","stream":true,"max_output_tokens":2,"tools":[`+shellTool+`],"input":"shell a b c"}`))
	last := events[len(events)-1]
	resp := last.data["response"].(map[string]any)
	if last.name != "response.incomplete" || resp["status"] != "incomplete" ||
		resp["incomplete_details"].(map[string]any)["reason"] != "max_output_tokens" || len(resp["output"].([]any)) != 1 {
		t.Errorf("last event %s: %v", last.name, resp)
	}
}

func TestResponsesErrors(t *testing.T) {
	tests := []struct{ name, body, param string }{
		{"no model", `{"input":"x"}`, "model"},
		{"no input", `{"model":"m"}`, "input"},
		{"input of wrong type", `{"model":"m","input":3}`, "input"},
		{"item without type or role", `{"model":"m","input":[{"content":"x"}]}`, "input[0].type"},
		{"bad role", `{"model":"m","input":[{"role":"robot","content":"x"}]}`, "input[0].role"},
		{"unknown forced tool", `{"model":"m","input":"x","tool_choice":{"type":"function","name":"nope"}}`, "tool_choice"},
		{"max_output_tokens", `{"model":"m","input":"x","max_output_tokens":0}`, "max_output_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			e := errorOf(t, do(t, s, "POST", "/responses", tt.body), 400)
			if e["param"] != tt.param || e["type"] != "invalid_request_error" {
				t.Errorf("error = %v, want param %q", e, tt.param)
			}
		})
	}
}

func TestResponsesScriptAndHold(t *testing.T) {
	s := newServer(t)
	s.RequireToken("sk-test")
	s.Script("/v1/responses", gatewaytest.Response{Status: 429, Header: http.Header{"Retry-After": {"2"}}})
	e := errorOf(t, do(t, s, "POST", "/responses", `{"model":"m","input":"x"}`, "Authorization", "Bearer sk-test"), 429)
	if e["code"] != "rate_limit_exceeded" {
		t.Errorf("scripted 429: %v", e)
	}
	errorOf(t, do(t, s, "POST", "/responses", `{"model":"m","input":"x"}`, "x-api-key", "sk-test"), 401)

	gate := s.HoldStream("/v1/responses", 2)
	res := do(t, s, "POST", "/responses", `{"model":"m","input":"x","stream":true}`, "Authorization", "Bearer sk-test")
	r := newSSE(res.Body)
	for range 2 {
		if _, err := r.next(); err != nil {
			t.Fatal(err)
		}
	}
	<-gate.Held()
	gate.Release()
	rest, err := r.all()
	if err != nil || len(rest) == 0 || !strings.Contains(rest[len(rest)-1], `"response.completed"`) {
		t.Errorf("rest of the stream: %q, %v", rest, err)
	}
}
