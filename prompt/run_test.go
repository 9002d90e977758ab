package prompt_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/gatewaytest"
	"github.com/modelgateway/gateway/observe"
)

// rendered is the answer of POST /prompts/{id}/render.
type rendered struct {
	Success bool `json:"success"`
	Data    struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Temperature *float64 `json:"temperature"`
		MaxTokens   *int     `json:"max_tokens"`
		Stream      *bool    `json:"stream"`
	} `json:"data"`
}

func TestRenderEscapesValues(t *testing.T) {
	e := newEnv(t)
	e.seed(greeterV1)
	for _, v := range []string{
		`plain`,
		`say "hi"`,
		"two\nlines\tand a tab\r",
		`back\slash \" and \n literally`,
		"unicode: héllo, 日本語, emoji 🎉, \u2028 and \u2029",
		"control \x01\x1f and NUL \x00",
		`</script><b>html</b> & 'quotes'`,
		`{"json":"inside"}`,
	} {
		var got rendered
		e.ok(keyAdmin, "POST", "/prompts/greeter/render", map[string]any{"variables": map[string]any{"company": "ACME", "question": v}}, &got)
		if !got.Success || len(got.Data.Messages) != 2 || got.Data.Messages[1].Content != v || got.Data.Messages[0].Content != "You help ACME." {
			t.Errorf("%q rendered as %+v", v, got)
		}
		if got.Data.Model != "gpt-4o-mini" || got.Data.Temperature == nil || *got.Data.Temperature != 0.2 || *got.Data.MaxTokens != 50 {
			t.Errorf("defaults not in the body: %+v", got.Data)
		}
	}
	// Numbers, booleans, objects and lists are placed as JSON prints them.
	var got rendered
	e.ok(keyAdmin, "POST", "/prompts/greeter/render", `{"variables":{"company":12345678901234567890,"question":{"a":[1,true,null]}}}`, &got)
	if got.Data.Messages[0].Content != "You help 12345678901234567890." || got.Data.Messages[1].Content != `{"a":[1,true,null]}` {
		t.Errorf("non-strings: %+v", got.Data.Messages)
	}
	// The caller's parameters override the prompt's.
	e.ok(keyAdmin, "POST", "/prompts/greeter/render", map[string]any{"variables": map[string]any{"company": "a", "question": "b"},
		"temperature": 0.9, "stream": true, "model": "other"}, &got)
	if *got.Data.Temperature != 0.9 || got.Data.Stream == nil || !*got.Data.Stream || got.Data.Model != "other" || *got.Data.MaxTokens != 50 {
		t.Errorf("overrides: %+v", got.Data)
	}
}

func TestRenderErrors(t *testing.T) {
	e := newEnv(t)
	e.seed(greeterV1)
	msg := e.fails(keyAdmin, "POST", "/prompts/greeter/render", map[string]any{"variables": map[string]any{"company": "a"}},
		http.StatusBadRequest, "variables.question")
	if !strings.Contains(msg, `"question"`) {
		t.Errorf("missing variable: %q", msg)
	}
	e.fails(keyAdmin, "POST", "/prompts/greeter/render", map[string]any{"variables": []int{1}}, http.StatusBadRequest, "variables")
	e.fails(keyAdmin, "POST", "/prompts/greeter/render", `[1]`, http.StatusBadRequest, "")
	e.fails(keyAdmin, "POST", "/prompts/nope/render", map[string]any{}, http.StatusNotFound, "promptId")
	e.fails(keyAdmin, "GET", "/prompts/greeter/render", nil, http.StatusMethodNotAllowed, "")

	// A triple mustache places a value unescaped: a value that breaks the
	// JSON is refused, one that keeps it valid is not.
	e.ok(keyAdmin, "PUT", "/prompts/greeter", map[string]any{"string": `[{"role":"user","content":"{{{raw}}}"}]`,
		"parameters": map[string]any{}}, nil)
	e.ok(keyAdmin, "PUT", "/prompts/greeter/makeDefault", map[string]any{"version": 2}, nil)
	e.fails(keyAdmin, "POST", "/prompts/greeter/render", map[string]any{"variables": map[string]any{"raw": `a"b`}}, http.StatusBadRequest, "variables")
	var got rendered
	e.ok(keyAdmin, "POST", "/prompts/greeter/render", map[string]any{"variables": map[string]any{"raw": `a\"b`}}, &got)
	if got.Data.Messages[0].Content != `a"b` {
		t.Errorf("triple: %+v", got.Data.Messages)
	}
}

func TestRenderPartials(t *testing.T) {
	e := newEnv(t)
	e.seed(`[{"role":"system","content":"{{>tone}} Company: {{company}}."},{"role":"user","content":"{{question}}"}]`)
	vars := map[string]any{"variables": map[string]any{"company": "ACME", "question": "q", "days": 30}}
	msg := e.fails(keyAdmin, "POST", "/prompts/greeter/render", vars, http.StatusBadRequest, "string")
	if !strings.Contains(msg, `"tone"`) {
		t.Errorf("missing partial: %q", msg)
	}
	// A partial's text is escaped as string content: quotes and newlines
	// keep the document valid.
	var part created
	e.ok(keyAdmin, "POST", "/prompts/partials", map[string]any{"name": "Tone", "string": "Be \"kind\".\nRefunds in {{days}} days."}, &part)
	var got rendered
	e.ok(keyAdmin, "POST", "/prompts/greeter/render", vars, &got)
	if want := "Be \"kind\".\nRefunds in 30 days. Company: ACME."; got.Data.Messages[0].Content != want {
		t.Fatalf("with partial v1: %q, want %q", got.Data.Messages[0].Content, want)
	}
	// A new version of the partial is used once it is the default, by
	// a template already rendered (and parsed) before.
	var upd struct {
		VersionID string `json:"prompt_partial_version_id"`
	}
	e.ok(keyAdmin, "PUT", "/prompts/partials/tone", map[string]any{"string": "Be brief.", "description": "v2"}, &upd)
	e.ok(keyAdmin, "POST", "/prompts/greeter/render", vars, &got)
	if !strings.HasPrefix(got.Data.Messages[0].Content, "Be \"kind\"") {
		t.Fatalf("the partial's default moved on update: %q", got.Data.Messages[0].Content)
	}
	e.ok(keyAdmin, "PUT", "/prompts/partials/tone/makeDefault", map[string]any{"version": 2}, nil)
	e.ok(keyAdmin, "POST", "/prompts/greeter/render", vars, &got)
	if got.Data.Messages[0].Content != "Be brief. Company: ACME." {
		t.Fatalf("with partial v2: %q", got.Data.Messages[0].Content)
	}
	// {{>slug@N}} names a version.
	e.ok(keyAdmin, "PUT", "/prompts/greeter", map[string]any{"patch": true, "string": `[{"role":"user","content":"{{>tone@1}}"}]`}, nil)
	e.ok(keyAdmin, "POST", "/prompts/greeter@latest/render", vars, &got)
	if !strings.HasPrefix(got.Data.Messages[0].Content, "Be \"kind\"") {
		t.Fatalf("tone@1: %q", got.Data.Messages[0].Content)
	}
	e.ok(keyAdmin, "DELETE", "/prompts/partials/"+part.ID, nil, nil)
	e.fails(keyAdmin, "POST", "/prompts/greeter/render", vars, http.StatusBadRequest, "string")
}

// chatAnswer is the part of a chat completion the tests read.
type chatAnswer struct {
	Object  string `json:"object"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

func TestCompletions(t *testing.T) {
	e := newEnv(t)
	p := e.seed(greeterV1)
	vars := map[string]any{"company": "ACME", "question": "where is my \"order\"?"}
	var got chatAnswer
	e.ok(keyAdmin, "POST", "/prompts/greeter/completions", map[string]any{"variables": vars, "temperature": 0.7}, &got)
	if want := gatewaytest.CompletionText(`where is my "order"?`); got.Object != "chat.completion" || got.Choices[0].Message.Content != want {
		t.Fatalf("answer %+v, want %q", got, want)
	}
	reqs := e.up.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" || reqs[0].Header.Get("Authorization") != "Bearer sk-upstream" {
		t.Fatalf("the provider got %+v", reqs)
	}
	var sent map[string]any
	if err := json.Unmarshal(reqs[0].Body, &sent); err != nil {
		t.Fatal(err)
	}
	if sent["model"] != "gpt-4o-mini" || sent["temperature"] != 0.7 || sent["max_tokens"] != 50.0 || sent["variables"] != nil {
		t.Fatalf("the provider got the body %s", reqs[0].Body)
	}
	rec := e.log("/v1/chat/completions")
	if rec.KeyID != "key-admin" || rec.WorkspaceID != "ws-1" || rec.VirtualKey != "vk" || rec.Status != 200 ||
		rec.Metadata[gateway.MetadataPrompt] != "greeter" || rec.Metadata["_prompt_id"] != p.ID || rec.Metadata["_prompt_version"] != "1" ||
		rec.TotalTokens == 0 {
		t.Fatalf("request log %+v", rec)
	}
	// The analytics' and logs' prompt_slug filter finds it by slug or id.
	for _, ref := range []string{"greeter", p.ID} {
		if q := (observe.Query{Prompts: []string{ref}}); !q.Match(&rec) {
			t.Errorf("prompt_slug=%s does not select the completion's log", ref)
		}
	}

	// Streamed, at a label's version, with the caller's metadata kept.
	e.ok(keyAdmin, "PUT", "/prompts/greeter", map[string]any{"patch": true, "string": `[{"role":"user","content":"v2: {{question}}"}]`}, nil)
	e.ok(keyAdmin, "PUT", "/prompts/greeter/versions/2", map[string]any{"label_id": "staging"}, nil)
	resp := e.send(keyAdmin, "POST", "/prompts/greeter@staging/completions",
		map[string]any{"variables": vars, "stream": true}, http.Header{"X-Gateway-Metadata": {`{"team":"support"}`}})
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var text strings.Builder
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var ev struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		if len(ev.Choices) > 0 {
			text.WriteString(ev.Choices[0].Delta.Content)
		}
	}
	if want := gatewaytest.CompletionText(`v2: where is my "order"?`); !done || text.String() != want {
		t.Fatalf("streamed %q (done %v), want %q", text.String(), done, want)
	}
	rec = e.log("/v1/chat/completions")
	if rec.Metadata["_prompt_version"] != "2" || rec.Metadata["team"] != "support" {
		t.Fatalf("streamed request log metadata %v", rec.Metadata)
	}

	// The data plane's own checks apply: completions.write is needed, and
	// the caller's provider headers win over the prompt's virtual key.
	e.fails(keyMember, "POST", "/prompts/greeter/completions", map[string]any{"variables": vars}, http.StatusForbidden, "")
	resp = e.send(keyAdmin, "POST", "/prompts/greeter/completions", map[string]any{"variables": vars},
		http.Header{"X-Gateway-Virtual-Key": {"missing"}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown virtual key of the caller: %d", resp.StatusCode)
	}
	e.fails(keyAdmin, "POST", "/prompts/greeter/completions", map[string]any{"variables": map[string]any{}}, http.StatusBadRequest, "variables.company")
}
