package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// exampleProvider is a stand-in for an OpenAI-compatible provider.
func exampleProvider() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req gateway.CompletionRequest
		json.NewDecoder(r.Body).Decode(&req)
		if req.Streaming() {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, word := range []string{"Hello", ", world"} {
				fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":%q,\"choices\":[{\"text\":%q,\"index\":0,\"logprobs\":null,\"finish_reason\":null}]}\n\n", req.Model, word)
				w.(http.Flusher).Flush()
			}
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"cmpl-1","object":"text_completion","created":1,"model":%q,"choices":[{"text":"This is a test.","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":5,"total_tokens":9}}`, req.Model)
	}))
}

// exampleGateway returns a gateway with one API key and a virtual key
// "openai-dev" pointing at the provider.
func exampleGateway(provider string) *gateway.Gateway {
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-1", Digest: gateway.HashAPIKey("gw-example-key"), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "openai-dev", Provider: gateway.ProviderOpenAI,
		APIKey: "sk-example", BaseURL: provider + "/v1", WorkspaceID: "ws-1"})
	return gateway.New(gateway.Options{Keys: store, VirtualKeys: store})
}

// A host calls its providers in-process: the call is authenticated,
// validated, routed and logged exactly as an HTTP request would be.
func ExampleGateway_CreateCompletion() {
	provider := exampleProvider()
	defer provider.Close()
	gw := exampleGateway(provider.URL)
	defer gw.Close()

	caller := gateway.Caller{APIKey: "gw-example-key", VirtualKey: "openai-dev"}
	max := 16
	c, err := gw.CreateCompletion(context.Background(), &gateway.CompletionRequest{
		Model:     "gpt-3.5-turbo-instruct",
		Prompt:    gateway.TextPrompt("Say this is a test"),
		MaxTokens: &max,
	}, caller)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Choices[0].Text, c.Usage.TotalTokens)

	// A request out of bounds is refused by the gateway with the field named.
	n := 200
	_, err = gw.CreateCompletion(context.Background(), &gateway.CompletionRequest{Model: "gpt-3.5-turbo-instruct", N: &n}, caller)
	fmt.Println(err)
	// Output:
	// This is a test. 9
	// gateway: n must be between 1 and 128, got 200
}

// StreamCompletion yields each event as the provider sends it.
func ExampleGateway_StreamCompletion() {
	provider := exampleProvider()
	defer provider.Close()
	gw := exampleGateway(provider.URL)
	defer gw.Close()

	req := &gateway.CompletionRequest{Model: "gpt-3.5-turbo-instruct", Prompt: gateway.TextPrompt("Greet")}
	for c, err := range gw.StreamCompletion(context.Background(), req, gateway.Caller{APIKey: "gw-example-key", VirtualKey: "openai-dev"}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Print(c.Choices[0].Text)
	}
	fmt.Println()
	// Output:
	// Hello, world
}

// Validate reports the first field out of bounds as a 400 naming it.
func ExampleCompletionRequest_Validate() {
	var req gateway.CompletionRequest
	json.Unmarshal([]byte(`{"model":"davinci-002","prompt":"p","best_of":2,"stream":true}`), &req)
	err := req.Validate()
	if e, ok := err.(*gateway.Error); ok {
		fmt.Println(e.Status, e.Param)
	}
	// Output:
	// 400 best_of
}
