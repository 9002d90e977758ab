package budget_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// Example wires the budgets into a gateway: an API key whose usage_limits
// allow 100 tokens is refused with 412 once its answers reported them.
func Example() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":40,"total_tokens":60}}`)
	}))
	defer provider.Close()

	st := memstore.New()
	st.AddAPIKey(gateway.APIKey{ID: "key-1", Digest: gateway.HashAPIKey("gw-example"), WorkspaceID: "ws-1",
		UsageLimits: []byte(`{"type":"tokens","credit_limit":100}`)})
	st.AddVirtualKey(gateway.VirtualKey{Slug: "openai", Provider: "openai", APIKey: "sk-example", BaseURL: provider.URL + "/v1", WorkspaceID: "ws-1"})

	b := budget.New(budget.Options{Store: st, Workspaces: st, Audit: st})
	g := gateway.New(gateway.Options{Keys: st, VirtualKeys: st, Admissions: []gateway.Admission{b}})
	defer g.Close()
	b.Mount(g, &observe.Auditor{Store: st})

	for range 3 {
		req := httptest.NewRequestWithContext(context.Background(), "POST", "/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o","max_tokens":40,"messages":[]}`))
		req.Header.Set("x-gateway-api-key", "gw-example")
		req.Header.Set("x-gateway-virtual-key", "openai")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// 200
	// 200
	// 412
}
