package bedrock_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTranslationRefusals: what Bedrock cannot do is a 400 naming the
// parameter, before Bedrock is called.
func TestTranslationRefusals(t *testing.T) {
	const hi = `"messages":[{"role":"user","content":"Hi"}]`
	const weather = `"tools":[{"type":"function","function":{"name":"weather"}}]`
	const m = `"model":"` + haiku + `",`
	const toolTurns = `"messages":[{"role":"user","content":"Hi"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"weather","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"t1","content":"rain"}]`
	unsupported, invalid := "unsupported_parameter", "invalid_json"
	cases := []struct {
		name, route, body string
		code, param       string
	}{
		{"n", "/chat/completions", `{` + m + `"n":2,` + hi + `}`, unsupported, "n"},
		{"seed", "/chat/completions", `{` + m + `"seed":7,` + hi + `}`, unsupported, "seed"},
		{"logprobs", "/chat/completions", `{` + m + `"logprobs":true,` + hi + `}`, unsupported, "logprobs"},
		{"presence_penalty", "/chat/completions", `{` + m + `"presence_penalty":0.5,` + hi + `}`, unsupported, "presence_penalty"},
		{"json_object", "/chat/completions", `{` + m + `"response_format":{"type":"json_object"},` + hi + `}`, unsupported, "response_format"},
		{"json_schema", "/chat/completions", `{` + m + `"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}},` + hi + `}`, unsupported, "response_format"},
		{"temperature above 1", "/chat/completions", `{` + m + `"temperature":1.5,` + hi + `}`, unsupported, "temperature"},
		{"five stop sequences", "/chat/completions", `{` + m + `"stop":["a","b","c","d","e"],` + hi + `}`, invalid, "stop"},
		{"parallel_tool_calls false", "/chat/completions", `{` + m + `"parallel_tool_calls":false,` + weather + `,` + hi + `}`, unsupported, "parallel_tool_calls"},
		{"tool_choice none with tool calls", "/chat/completions", `{` + m + `"tool_choice":"none",` + weather + `,` + toolTurns + `}`, unsupported, "tool_choice"},
		{"tool_choice without tools", "/chat/completions", `{` + m + `"tool_choice":"required",` + hi + `}`, invalid, "tool_choice"},
		{"tool calls without tools", "/chat/completions", `{` + m + toolTurns + `}`, invalid, "tools"},
		{"a tool that is not a function", "/chat/completions", `{` + m + `"tools":[{"type":"code_interpreter","function":{"name":"x"}}],` + hi + `}`, unsupported, "tools[0].type"},
		{"https image", "/chat/completions", `{` + m + `"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`, unsupported, "messages[0].content"},
		{"bmp image", "/chat/completions", `{` + m + `"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/bmp;base64,Qk0="}}]}]}`, unsupported, "messages[0].content"},
		{"image not base64", "/chat/completions", `{` + m + `"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,%%%"}}]}]}`, invalid, "messages[0].content"},
		{"audio part", "/chat/completions", `{` + m + `"messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, unsupported, "messages[0].content"},
		{"image in a system message", "/chat/completions", `{` + m + `"messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},{"role":"user","content":"Hi"}]}`, unsupported, "messages[0].content"},
		{"tool message without an id", "/chat/completions", `{` + m + weather + `,"messages":[{"role":"tool","content":"x"}]}`, invalid, "messages[0].tool_call_id"},
		{"tool call arguments not JSON", "/chat/completions", `{` + m + weather + `,"messages":[{"role":"assistant","tool_calls":[{"id":"t","type":"function","function":{"name":"w","arguments":"{"}}]}]}`, invalid, "messages[0].tool_calls"},
		{"only a system message", "/chat/completions", `{` + m + `"messages":[{"role":"system","content":"x"}]}`, invalid, "messages"},
		{"no model", "/chat/completions", `{` + hi + `}`, invalid, "model"},
		{"model ..", "/chat/completions", `{"model":"..",` + hi + `}`, invalid, "model"},
		{"model with a space", "/chat/completions", `{"model":"a b",` + hi + `}`, invalid, "model"},
		{"not JSON", "/chat/completions", `{"model":`, invalid, ""},
		{"titan with two inputs", "/embeddings", `{"model":"amazon.titan-embed-text-v2:0","input":["a","b"]}`, unsupported, "input"},
		{"titan v1 dimensions", "/embeddings", `{"model":"amazon.titan-embed-text-v1","input":"a","dimensions":256}`, unsupported, "dimensions"},
		{"cohere v3 dimensions", "/embeddings", `{"model":"cohere.embed-multilingual-v3","input":"a","dimensions":256}`, unsupported, "dimensions"},
		{"cohere with 97 inputs", "/embeddings", `{"model":"cohere.embed-english-v3","input":[` + strings.Repeat(`"a",`, 96) + `"a"]}`, unsupported, "input"},
		{"cohere input_type", "/embeddings", `{"model":"cohere.embed-english-v3","input":"a","input_type":"query"}`, invalid, "input_type"},
		{"zero dimensions", "/embeddings", `{"model":"amazon.titan-embed-text-v2:0","input":"a","dimensions":0}`, invalid, "dimensions"},
		{"token ids", "/embeddings", `{"model":"amazon.titan-embed-text-v2:0","input":[1,2,3]}`, invalid, "input"},
		{"a chat model", "/embeddings", `{"model":"` + haiku + `","input":"a"}`, unsupported, "model"},
		{"a provisioned model ARN", "/embeddings", `{"model":"arn:aws:bedrock:eu-west-3:123456789012:provisioned-model/abc","input":"a"}`, unsupported, "model"},
	}
	e, fb := translationEnv(t, converseAnswer(`{}`))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, b := e.post(t, c.route, c.body)
			var eb errBody
			if err := json.Unmarshal(b, &eb); err != nil {
				t.Fatalf("status %d body %s: %v", res.StatusCode, b, err)
			}
			got := []string{http.StatusText(res.StatusCode), eb.Error.Type, deref(eb.Error.Code), deref(eb.Error.Param)}
			want := []string{http.StatusText(http.StatusBadRequest), "invalid_request_error", c.code, c.param}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("status, type, code, param (-want +got):\n%s\nmessage: %s", d, eb.Error.Message)
			}
		})
	}
	if n := len(fb.requests()); n != 0 {
		t.Errorf("Bedrock was called %d times for refused requests", n)
	}
}

// TestTranslationErrors: Bedrock's errors come back OpenAI-shaped, with
// Bedrock's status, its error kind as the code, and its message.
func TestTranslationErrors(t *testing.T) {
	cases := []struct {
		name, route, body string
		status            int
		kind, answer      string
		want              string
	}{
		{
			"validation", "/chat/completions", `{"model":"` + haiku + `","messages":[{"role":"user","content":"Hi"}]}`,
			400, "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/", `{"message":"Malformed input request: extraneous key [foo] is not permitted"}`,
			`{"error":{"message":"Malformed input request: extraneous key [foo] is not permitted","type":"invalid_request_error","code":"ValidationException","param":null}}`,
		},
		{
			"throttled stream", "/chat/completions", `{"model":"` + haiku + `","stream":true,"messages":[{"role":"user","content":"Hi"}]}`,
			429, "ThrottlingException", `{"message":"Too many requests, please wait before trying again."}`,
			`{"error":{"message":"Too many requests, please wait before trying again.","type":"rate_limit_error","code":"ThrottlingException","param":null}}`,
		},
		{
			"access denied on embeddings", "/embeddings", `{"model":"amazon.titan-embed-text-v2:0","input":"a"}`,
			403, "AccessDeniedException", `{"Message":"You don't have access to the model with the specified model ID."}`,
			`{"error":{"message":"You don't have access to the model with the specified model ID.","type":"permission_error","code":"AccessDeniedException","param":null}}`,
		},
		{
			"not JSON", "/chat/completions", `{"model":"` + haiku + `","messages":[{"role":"user","content":"Hi"}]}`,
			503, "", `<html>unavailable</html>`,
			`{"error":{"message":"bedrock answered 503 Service Unavailable","type":"gateway_error","code":null,"param":null}}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := translationEnv(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if c.kind != "" {
					w.Header().Set("X-Amzn-Errortype", c.kind)
				}
				w.WriteHeader(c.status)
				io.WriteString(w, c.answer)
			})
			res, b := e.post(t, c.route, c.body)
			if res.StatusCode != c.status || res.Header.Get("Content-Type") != "application/json" {
				t.Errorf("status %d, Content-Type %q; want %d, application/json", res.StatusCode, res.Header.Get("Content-Type"), c.status)
			}
			if d := jsonDiff(t, c.want, b); d != "" {
				t.Errorf("error body (-want +got):\n%s", d)
			}
		})
	}
}
