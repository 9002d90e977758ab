package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// fakeChat is an OpenAI-compatible provider that answers every chat
// completion with a tool call, streamed when asked.
func fakeChat(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		if strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, c := range []string{
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Run"}}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"ning."}}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":"}}]}}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}}]}}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":6,"total_tokens":16}}`,
				`[DONE]`,
			} {
				io.WriteString(w, "data: "+c+"\n\n")
				http.NewResponseController(w).Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Running.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":6,"total_tokens":16}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// protocolGateway is a gateway in front of fakeChat, with a virtual key
// "chat" for it and stored responses in memory.
func protocolGateway(t *testing.T) string {
	t.Helper()
	up := fakeChat(t)
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-sdk"), WorkspaceID: "ws"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "chat", Provider: "groq", APIKey: "sk-up", BaseURL: up.URL + "/v1"})
	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Responses: store})
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAnthropicSDKThroughChat drives the official Anthropic Go SDK through
// the gateway to an OpenAI-compatible provider: a message with a tool
// call, the same streamed and accumulated by the SDK, and the gateway's
// own error as the SDK's *anthropic.Error.
func TestAnthropicSDKThroughChat(t *testing.T) {
	base := protocolGateway(t)
	client := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("sk-unused"),
		aoption.WithHeader("x-gateway-api-key", "gw-sdk"), aoption.WithHeader("x-gateway-virtual-key", "chat"), aoption.WithMaxRetries(0))
	ctx := context.Background()
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 256,
		System:    []anthropic.TextBlockParam{{Text: "You are a coding agent."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("list files"))},
		Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"cmd": map[string]any{"type": "string"}}}, "shell")},
	}
	check := func(what string, m *anthropic.Message) {
		t.Helper()
		if len(m.Content) != 2 || m.Content[0].Text != "Running." || m.Content[1].Type != "tool_use" || m.Content[1].Name != "shell" ||
			string(m.Content[1].Input) != `{"cmd":"ls"}` || m.StopReason != anthropic.StopReasonToolUse || m.Usage.OutputTokens != 6 {
			t.Errorf("%s: %+v", what, m)
		}
	}
	m, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	check("message", m)

	s := client.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	for s.Next() {
		if err := acc.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	check("stream", &acc)

	bad := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("sk-unused"), aoption.WithMaxRetries(0))
	_, err = bad.Messages.New(ctx, params)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized {
		t.Errorf("error %v, want the SDK's 401", err)
	}
}

// TestOpenAIResponsesThroughChat drives openai-go's Responses client
// through the gateway to an OpenAI-compatible provider: a response with a
// function call, kept and read back, continued by previous_response_id,
// and the same streamed.
func TestOpenAIResponsesThroughChat(t *testing.T) {
	base := protocolGateway(t)
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-unused"),
		option.WithHeader("x-gateway-api-key", "gw-sdk"), option.WithHeader("x-gateway-virtual-key", "chat"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := responses.ResponseNewParams{
		Model:        "gpt-5-codex",
		Instructions: openai.String("You are Codex."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("list files")},
		Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("shell",
			map[string]any{"type": "object", "properties": map[string]any{"cmd": map[string]any{"type": "string"}}}, false)},
	}
	check := func(what string, r *responses.Response) {
		t.Helper()
		if r.OutputText() != "Running." || len(r.Output) != 2 || r.Output[1].Type != "function_call" || r.Output[1].Name != "shell" ||
			r.Output[1].Arguments.OfString != `{"cmd":"ls"}` || r.Usage.OutputTokens != 6 {
			t.Errorf("%s: %+v", what, r)
		}
	}
	r, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	check("response", r)
	got, err := client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != r.ID {
		t.Fatalf("Get: %v %+v", err, got)
	}
	next := params
	next.PreviousResponseID = openai.String(r.ID)
	out := responses.ResponseInputItemParamOfFunctionCallOutput("a.go")
	out.OfFunctionCallOutput.CallID = openai.String("call_1")
	next.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}}
	if _, err := client.Responses.New(ctx, next); err != nil {
		t.Fatal(err)
	}

	s := client.Responses.NewStreaming(ctx, params)
	var done *responses.Response
	var types []string
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		if ev.Type == "response.completed" {
			c := ev.AsResponseCompleted()
			done = &c.Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if done == nil || types[0] != "response.created" {
		t.Fatalf("events %v", types)
	}
	check("stream", done)
}
