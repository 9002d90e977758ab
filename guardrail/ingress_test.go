package guardrail_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// messagesBody is an Anthropic Messages request whose last user message
// says content in a text block.
func messagesBody(content string, stream bool) string {
	return mustJSON(map[string]any{"model": "gpt-4o", "max_tokens": 64, "stream": stream,
		"messages": []any{
			map[string]any{"role": "user", "content": "an earlier password"},
			map[string]any{"role": "assistant", "content": "ok"},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": content}}},
		}})
}

// responsesBody is an OpenAI Responses request whose last user message
// says content in an input_text part.
func responsesBody(content string, stream bool) string {
	return mustJSON(map[string]any{"model": "gpt-4o", "stream": stream, "store": false,
		"input": []any{
			map[string]any{"role": "user", "content": "an earlier password"},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": content}}},
		}})
}

const denyForbidden = `{"checks":[{"id":"default.contains","parameters":{"words":["forbidden"],"operator":"none"}}],"actions":{"deny":true}}`

// TestMessagesDenied446: on /v1/messages a guardrail's refusal is
// Anthropic-shaped like the route's other errors, with hook_results
// beside error; the input checks read the last user message's text.
func TestMessagesDenied446(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.post(keyWS1, "/messages", e.config(`,"input_guardrails":[`+denyPassword+`]`), messagesBody("my password is hunter2", false))
	if resp.StatusCode != 446 {
		t.Fatalf("status %d, want 446", resp.StatusCode)
	}
	m := decodeBody(t, resp)
	errObj, _ := m["error"].(map[string]any)
	if m["type"] != "error" || errObj["type"] != "invalid_request_error" || errObj["message"] == "" {
		t.Errorf("body %v: want an Anthropic-shaped error", m)
	}
	if l := hookResults(t, m, "before_request_hooks"); len(l) != 1 || l[0].(map[string]any)["verdict"] != false {
		t.Errorf("before_request_hooks = %v", l)
	}
	// Only the last user message is read.
	resp = e.post(keyWS1, "/messages", e.config(`,"input_guardrails":[`+denyPassword+`]`), messagesBody("hello", false))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	// A hook error is Anthropic-shaped too.
	resp = e.post(keyWS1, "/messages", e.config(`,"input_guardrails":["no-such-guardrail"]`), messagesBody("hello", false))
	if m := decodeBody(t, resp); resp.StatusCode != 400 || m["type"] != "error" {
		t.Errorf("unknown guardrail: %d %v, want an Anthropic-shaped 400", resp.StatusCode, m)
	}
}

// TestMessagesOutput: output checks read a Messages answer's text; a
// failed check that does not deny makes it 246 with hook_results, in a
// JSON answer and in streams, observed or held.
func TestMessagesOutput(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.post(keyWS1, "/messages", e.config(`,"output_guardrails":[`+denyForbidden+`]`), messagesBody("say forbidden", false))
	if resp.StatusCode != 446 {
		t.Fatalf("status %d, want 446", resp.StatusCode)
	}
	if m := decodeBody(t, resp); m["type"] != "error" || len(hookResults(t, m, "after_request_hooks")) != 1 {
		t.Errorf("refusal %v", m)
	}
	logOnly := strings.Replace(denyForbidden, `"deny":true`, `"deny":false`, 1)
	resp = e.post(keyWS1, "/messages", e.config(`,"output_guardrails":[`+logOnly+`]`), messagesBody("say forbidden", false))
	if resp.StatusCode != 246 {
		t.Fatalf("status %d, want 246", resp.StatusCode)
	}
	m := decodeBody(t, resp)
	if m["type"] != "message" || !strings.Contains(mustJSON(m["content"]), "forbidden") {
		t.Errorf("answer %v: want the Messages answer", m)
	}
	if l := hookResults(t, m, "after_request_hooks"); len(l) != 1 || l[0].(map[string]any)["verdict"] != false {
		t.Errorf("after_request_hooks = %v", l)
	}

	for _, mode := range []string{"observe", "buffer"} {
		g := strings.Replace(logOnly, `"actions"`, `"stream_mode":"`+mode+`","actions"`, 1)
		resp = e.post(keyWS1, "/messages", e.config(`,"output_guardrails":[`+g+`]`), messagesBody("say forbidden", true))
		if mode == "buffer" && resp.StatusCode != 246 || mode == "observe" && resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", mode, resp.StatusCode)
		}
		ev := events(t, resp)
		stop, hook := indexOf(ev, "event: message_stop"), indexOf(ev, "event: hook_results")
		if stop < 0 || hook < 0 || hook+1 >= len(ev) {
			t.Fatalf("%s: events %q", mode, ev)
		}
		if mode == "buffer" && hook > stop || mode == "observe" && hook < stop {
			t.Errorf("%s: hook_results at %d, message_stop at %d", mode, hook, stop)
		}
		var data struct {
			Type        string                      `json:"type"`
			HookResults map[string][]map[string]any `json:"hook_results"`
		}
		if err := json.Unmarshal([]byte(ev[hook+1]), &data); err != nil {
			t.Fatal(err)
		}
		if l := data.HookResults["after_request_hooks"]; data.Type != "hook_results" || len(l) != 1 || l[0]["verdict"] != false {
			t.Errorf("%s: hook_results event %s", mode, ev[hook+1])
		}
	}
}

// TestResponsesChecks: on /v1/responses the input checks read the last
// user message's input_text parts, the output checks the output_text,
// and hook_results is a member of the response.
func TestResponsesChecks(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.post(keyWS1, "/responses", e.config(`,"input_guardrails":[`+denyPassword+`]`), responsesBody("my password", false))
	if resp.StatusCode != 446 {
		t.Fatalf("input: status %d, want 446", resp.StatusCode)
	}
	if m := decodeBody(t, resp); m["error"].(map[string]any)["code"] != "guardrail_denied" {
		t.Errorf("refusal %v", m)
	}
	if e.provider.Count("/v1/chat/completions") != 0 {
		t.Error("the provider was called")
	}
	resp = e.post(keyWS1, "/responses", e.config(`,"input_guardrails":[`+denyPassword+`],"output_guardrails":[`+denyForbidden+`]`), responsesBody("say forbidden", false))
	if resp.StatusCode != 446 {
		t.Fatalf("output: status %d, want 446", resp.StatusCode)
	}
	if l := hookResults(t, decodeBody(t, resp), "after_request_hooks"); len(l) != 1 || l[0].(map[string]any)["verdict"] != false {
		t.Errorf("after_request_hooks = %v", l)
	}
	pii := `{"checks":[{"id":"default.pii","parameters":{"redact":true,"categories":["EMAIL_ADDRESS"]}}]}`
	resp = e.post(keyWS1, "/responses", e.config(`,"input_guardrails":[`+pii+`],"output_guardrails":[`+denyForbidden+`]`), responsesBody("write to jane@example.com", false))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	m := decodeBody(t, resp)
	if m["object"] != "response" || len(hookResults(t, m, "before_request_hooks")) != 1 || len(hookResults(t, m, "after_request_hooks")) != 1 {
		t.Errorf("response %v", m)
	}
	if s := mustJSON(m["output"]); strings.Contains(s, "jane@example.com") || !strings.Contains(s, "[EMAIL_ADDRESS]") {
		t.Errorf("output %s: want the redacted input echoed", s)
	}
	// A held stream ends with hook_results before response.completed.
	g := strings.Replace(denyForbidden, `"actions"`, `"stream_mode":"buffer","actions"`, 1)
	resp = e.post(keyWS1, "/responses", e.config(`,"output_guardrails":[`+g+`]`), responsesBody("say forbidden", true))
	if resp.StatusCode != 446 {
		t.Fatalf("held stream: status %d, want 446", resp.StatusCode)
	}
	resp = e.post(keyWS1, "/responses", e.config(`,"output_guardrails":[`+g+`]`), responsesBody("say hello", true))
	ev := events(t, resp)
	done, hook := indexOf(ev, "event: response.completed"), indexOf(ev, "event: hook_results")
	if resp.StatusCode != 200 || done < 0 || hook < 0 || hook > done {
		t.Errorf("status %d, events %q: want hook_results before response.completed", resp.StatusCode, ev)
	}
}

// TestResponsesStoredAsAnswered: a Responses answer the gateway keeps for
// a translated target (store, the default) is kept as the caller got it:
// with the output guardrails' redactions, and not at all when a guardrail
// refused it; GET /v1/responses/{id} and previous_response_id then never
// give back what was redacted. A streamed answer, which goes out as it
// came, is kept redacted too.
func TestResponsesStoredAsAnswered(t *testing.T) {
	rs := &countedResponses{Store: memstore.New()}
	e := newEnvWith(t, nil, func(o *gateway.Options) { o.Responses = rs })
	translated := `{"provider":"groq","custom_host":"` + e.provider.URL + `"`
	pii := `{"checks":[{"id":"default.pii","parameters":{"redact":true,"categories":["EMAIL_ADDRESS"]}}]}`
	body := func(stream bool, prev string) string {
		m := map[string]any{"model": "gpt-4o", "stream": stream, "input": "write to jane@example.com"}
		if prev != "" {
			m["previous_response_id"] = prev
		}
		return mustJSON(m)
	}
	read := func(id string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", e.srv.URL+"/v1/responses/"+id, nil)
		req.Header.Set("x-gateway-api-key", keyWS1)
		req.Header.Set("x-gateway-config", translated+`}`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// A whole answer.
	resp := e.post(keyWS1, "/responses", translated+`,"output_guardrails":[`+pii+`]}`, body(false, ""))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	m := decodeBody(t, resp)
	id, _ := m["id"].(string)
	if s := mustJSON(m["output"]); strings.Contains(s, "jane@example.com") || !strings.Contains(s, "[EMAIL_ADDRESS]") {
		t.Fatalf("answer %s: want the output redacted", s)
	}
	status, stored := read(id)
	if status != 200 || strings.Contains(stored, "jane@example.com") || !strings.Contains(stored, "[EMAIL_ADDRESS]") {
		t.Errorf("GET /responses/%s: %d %s: want the redacted answer", id, status, stored)
	}
	// The next turn is given the redacted output, not the original.
	e.post(keyWS1, "/responses", translated+`}`, mustJSON(map[string]any{"model": "gpt-4o", "previous_response_id": id, "input": "and again"})).Body.Close()
	reqs := e.provider.Requests()
	if last := reqs[len(reqs)-1]; strings.Contains(string(last.Body), "Echo: write to jane@example.com") {
		t.Errorf("the next turn sent %s: want no unredacted output", last.Body)
	}

	// A streamed answer, observed and held.
	for _, mode := range []string{"observe", "buffer"} {
		g := strings.Replace(pii, `"checks"`, `"stream_mode":"`+mode+`","checks"`, 1)
		resp = e.post(keyWS1, "/responses", translated+`,"output_guardrails":[`+g+`]}`, body(true, ""))
		ev := events(t, resp)
		id := ""
		for _, data := range ev {
			var v struct {
				Type     string `json:"type"`
				Response struct {
					ID string `json:"id"`
				} `json:"response"`
			}
			if json.Unmarshal([]byte(data), &v) == nil && v.Type == "response.completed" {
				id = v.Response.ID
			}
		}
		if id == "" {
			t.Fatalf("%s: no response.completed in %q", mode, ev)
		}
		status, stored := read(id)
		if status != 200 || strings.Contains(stored, "jane@example.com") || !strings.Contains(stored, "[EMAIL_ADDRESS]") {
			t.Errorf("%s: GET /responses/%s: %d %s: want the redacted answer", mode, id, status, stored)
		}
	}

	// A refused answer is not kept.
	before := rs.puts.Load()
	resp = e.post(keyWS1, "/responses", translated+`,"output_guardrails":[`+denyForbidden+`]}`, mustJSON(map[string]any{"model": "gpt-4o", "input": "say forbidden"}))
	if resp.StatusCode != 446 {
		t.Fatalf("status %d, want 446", resp.StatusCode)
	}
	g := strings.Replace(denyForbidden, `"actions"`, `"stream_mode":"buffer","actions"`, 1)
	resp = e.post(keyWS1, "/responses", translated+`,"output_guardrails":[`+g+`]}`, mustJSON(map[string]any{"model": "gpt-4o", "input": "say forbidden", "stream": true}))
	if resp.StatusCode != 446 {
		t.Fatalf("held stream: status %d, want 446", resp.StatusCode)
	}
	g = strings.Replace(denyForbidden, `"actions"`, `"stream_mode":"observe","actions"`, 1)
	events(t, e.post(keyWS1, "/responses", translated+`,"output_guardrails":[`+g+`]}`, mustJSON(map[string]any{"model": "gpt-4o", "input": "say forbidden", "stream": true})))
	if after := rs.puts.Load(); after != before {
		t.Errorf("%d responses stored, want %d: a refused answer is not kept", after, before)
	}
}

// countedResponses is a memstore's ResponseStore that counts the
// responses put in it.
type countedResponses struct {
	*memstore.Store
	puts atomic.Int32
}

func (s *countedResponses) PutResponse(ctx context.Context, r *gateway.StoredResponse) error {
	s.puts.Add(1)
	return s.Store.PutResponse(ctx, r)
}

// TestResponsesOpenAIReadChecked: to an openai target the provider keeps
// the response itself, as its model wrote it; a read of it through the
// gateway with output guardrails attached (a key's or workspace's
// defaults attach them to every request) is checked and redacted like
// any answer.
func TestResponsesOpenAIReadChecked(t *testing.T) {
	e := newEnv(t, nil)
	pii := `{"checks":[{"id":"default.pii","parameters":{"redact":true,"categories":["EMAIL_ADDRESS"]}}]}`
	cfg := e.config(`,"output_guardrails":[` + pii + `]`)
	m := decodeBody(t, e.post(keyWS1, "/responses", cfg, mustJSON(map[string]any{"model": "gpt-4o", "input": "write to jane@example.com"})))
	id, _ := m["id"].(string)
	if s := mustJSON(m["output"]); id == "" || strings.Contains(s, "jane@example.com") {
		t.Fatalf("answer %v: want the output redacted", m)
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/responses/"+id, nil)
	req.Header.Set("x-gateway-api-key", keyWS1)
	req.Header.Set("Authorization", "Bearer sk-test")
	req.Header.Set("x-gateway-config", cfg)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || strings.Contains(string(b), "jane@example.com") || !strings.Contains(string(b), "[EMAIL_ADDRESS]") {
		t.Errorf("GET /responses/%s: %d %s: want the redacted answer", id, resp.StatusCode, b)
	}
}
