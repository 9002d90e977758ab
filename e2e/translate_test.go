package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// fakeAnthropic answers Messages requests: a streamed answer of text and a
// tool call when asked to stream, else one message.
func fakeAnthropic(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != "sk-ant" {
			http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"bad key or path"}}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			Stream bool `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet",
				"content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Oslo"}}],
				"stop_reason":"tool_use","usage":{"input_tokens":20,"output_tokens":9}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"msg_2","model":"claude-sonnet","usage":{"input_tokens":20,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, "}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"world."}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_2","name":"weather","input":{}}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Bergen\"}"}}`,
			`{"type":"content_block_stop","index":1}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":15}}`,
			`{"type":"message_stop"}`,
		} {
			var typ struct{ Type string }
			json.Unmarshal([]byte(ev), &typ)
			io.WriteString(w, "event: "+typ.Type+"\ndata: "+ev+"\n\n")
			http.NewResponseController(w).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestOpenAISDKThroughAnthropic drives the official OpenAI Go SDK through
// the gateway to Anthropic: the SDK's chat completion, tool calls and
// streamed chunks (accumulated by the SDK itself) come out of Anthropic's
// Messages API as if OpenAI had answered.
func TestOpenAISDKThroughAnthropic(t *testing.T) {
	anth := fakeAnthropic(t)
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-sdk"), WorkspaceID: "ws"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "claude", Provider: gateway.ProviderAnthropic, APIKey: "sk-ant", BaseURL: anth.URL + "/v1"})
	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, CustomHostAllow: []string{"127.0.0.1"}})
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-unused"),
		option.WithHeader("x-gateway-api-key", "gw-sdk"), option.WithHeader("x-gateway-virtual-key", "claude"),
		option.WithMaxRetries(0))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model: "claude-sonnet",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."),
			openai.UserMessage("Weather?"),
		},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "weather", Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})},
	}

	c, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Choices) != 1 || c.Choices[0].Message.Content != "Checking." || c.Choices[0].FinishReason != "tool_calls" ||
		len(c.Choices[0].Message.ToolCalls) != 1 || c.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"city":"Oslo"}` ||
		c.Usage.PromptTokens != 20 || c.Usage.CompletionTokens != 9 {
		t.Errorf("completion %+v", c)
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("accumulated %+v", acc.ChatCompletion)
	}
	msg := acc.Choices[0].Message
	if msg.Content != "Hello, world." || acc.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 1 ||
		msg.ToolCalls[0].ID != "toolu_2" || msg.ToolCalls[0].Function.Arguments != `{"city":"Bergen"}` ||
		acc.Usage.PromptTokens != 20 || acc.Usage.CompletionTokens != 15 {
		t.Errorf("accumulated stream %+v", acc.ChatCompletion)
	}

	// Anthropic's own errors reach the SDK as *openai.Error with its status.
	bad := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-unused"),
		option.WithHeader("x-gateway-api-key", "gw-sdk"), option.WithHeader("x-gateway-config", `{"provider":"anthropic","api_key":"sk-wrong","custom_host":"`+anth.URL+`/v1"}`),
		option.WithMaxRetries(0))
	_, err = bad.Chat.Completions.New(ctx, params)
	if ae := apiError(t, err); ae.StatusCode != http.StatusUnauthorized || !strings.Contains(ae.Message, "bad key") {
		t.Errorf("error %d %q, want Anthropic's 401", ae.StatusCode, ae.Message)
	}
}
