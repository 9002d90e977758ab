package guardrail_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/guardrail"
	"github.com/modelgateway/gateway/memstore"
)

// A host mounts the guardrails product, registers a check of its own,
// and a config that attaches it refuses a request naming a ticket with a
// 446 and the hook results.
func ExampleHooks() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer provider.Close()
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "team-a", Digest: gateway.HashAPIKey("gw-secret"), WorkspaceID: "ws-1"})

	hooks := &guardrail.Hooks{Store: store}
	g := gateway.New(gateway.Options{Keys: store, Hooks: hooks, CustomHostAllow: []string{strings.TrimPrefix(provider.URL, "http://")}})
	defer g.Close()
	hooks.Mount(g)
	hooks.Registry.Register("acme.noTickets", func(json.RawMessage) (guardrail.Check, error) {
		return guardrail.CheckFunc(func(ctx context.Context, in *guardrail.Input) (guardrail.Verdict, error) {
			return guardrail.Verdict{Pass: !strings.Contains(in.Text, "TICKET-"), Explanation: "tickets stay inside"}, nil
		}), nil
	})

	config := `{"provider":"openai","custom_host":"` + provider.URL + `",
		"input_guardrails":[{"id":"no-tickets","checks":[{"id":"acme.noTickets"}],"actions":{"deny":true}}]}`
	for _, content := range []string{"hello", "see TICKET-42"} {
		req := httptest.NewRequest("POST", "/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"`+content+`"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", "gw-secret")
		req.Header.Set("Authorization", "Bearer sk-test")
		req.Header.Set("x-gateway-config", config)
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		var answer struct {
			Error       struct{ Code string }
			HookResults struct {
				Before []struct {
					ID      string
					Verdict bool
				} `json:"before_request_hooks"`
			} `json:"hook_results"`
		}
		json.Unmarshal(rec.Body.Bytes(), &answer)
		fmt.Println(rec.Code, answer.Error.Code, answer.HookResults.Before)
	}
	// Output:
	// 200  [{no-tickets true}]
	// 446 guardrail_denied [{no-tickets false}]
}
