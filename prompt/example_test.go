package prompt_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/prompt"
)

// ExampleMount mounts the prompt routes on a gateway, stores a prompt
// and renders it.
func ExampleMount() {
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "k1", Digest: gateway.HashAPIKey("gw-example"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store})
	defer g.Close()
	prompt.Mount(g, prompt.Options{Store: store})

	send := func(method, path, body string) string {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set(gateway.HeaderAPIKey, "gw-example")
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		b, _ := io.ReadAll(w.Result().Body)
		if w.Code != http.StatusOK {
			return fmt.Sprint(w.Code, " ", string(b))
		}
		return strings.TrimSpace(string(b))
	}
	send("POST", "/v1/collections", `{"name":"Support"}`)
	send("POST", "/v1/prompts", `{"name":"Greeter","collection_id":"support","model":"gpt-4o-mini",
		"parameters":{"temperature":0.2},"string":"[{\"role\":\"user\",\"content\":\"Hello {{name}}\"}]"}`)
	fmt.Println(send("POST", "/v1/prompts/greeter/render", `{"variables":{"name":"Ada \"the\" first"}}`))
	fmt.Println(send("POST", "/v1/prompts/greeter/render", `{"variables":{}}`))
	// Output:
	// {"success":true,"data":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello Ada \"the\" first"}],"temperature":0.2}}
	// 400 {"error":{"message":"the template needs variable \"name\", which variables does not hold","type":"invalid_request_error","param":"variables.name","code":"invalid_parameter"}}
}
