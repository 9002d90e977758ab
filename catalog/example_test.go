package catalog_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/catalog"
	"github.com/modelgateway/gateway/gatewaytest"
	"github.com/modelgateway/gateway/memstore"
)

// ExampleMount mounts the catalogue on a gateway: the organisation key
// stores an integration and grants it to a workspace, whose key then
// names it in the model of a chat completion.
func ExampleMount() {
	provider := gatewaytest.NewServer()
	defer provider.Close()
	u, _ := url.Parse(provider.URL)

	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "org", Digest: gateway.HashAPIKey("gw-org"), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
	store.AddAPIKey(gateway.APIKey{ID: "team", Digest: gateway.HashAPIKey("gw-team"), WorkspaceID: "ws-1"})
	// The operator allows the loopback provider; a tenant's host is otherwise public only.
	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, CustomHostAllow: []string{u.Host}})
	defer g.Close()
	catalog.Mount(g, catalog.Options{Store: store, VirtualKeys: store})

	send := func(key, method, path, body string) string {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set(gateway.HeaderAPIKey, key)
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		b, _ := io.ReadAll(w.Result().Body)
		return fmt.Sprint(w.Code, " ", strings.TrimSpace(string(b)))
	}
	send("gw-org", "POST", "/v1/integrations", `{"name":"OpenAI Prod","ai_provider_id":"openai","key":"sk-secret",
		"configurations":{"custom_host":"`+provider.URL+`"}}`)
	fmt.Println(send("gw-org", "PUT", "/v1/integrations/openai-prod/workspaces", `{"workspaces":[{"id":"ws-1","enabled":true}]}`))
	fmt.Println(send("gw-team", "POST", "/v1/chat/completions", `{"model":"@openai-prod/gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`)[:60])
	fmt.Println(string(provider.Requests()[0].Body)[:31])
	// Output:
	// 200 {}
	// 200 {"id":"chatcmpl-000001","object":"chat.completion","crea
	// {"model":"gpt-4o-mini","message
}
