package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// ExampleMount mounts the administration routes beside the data plane,
// over one in-memory store, and creates a service key of the admin's
// workspace through them.
func ExampleMount() {
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-admin", Digest: gateway.HashAPIKey("gw-admin"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})

	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Configs: store, Policies: store})
	defer g.Close()
	admin.Mount(g, admin.Options{Keys: store, VirtualKeys: store, Configs: store, Policies: store,
		Audit: &observe.Auditor{Store: store}})
	srv := httptest.NewServer(g)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/v1/api-keys/workspace/service",
		strings.NewReader(`{"name":"batch jobs","scopes":["completions.write"]}`))
	req.Header.Set("x-gateway-api-key", "gw-admin")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	keys, _ := store.APIKeys(context.Background(), "ws-1")
	fmt.Println(res.Status, len(keys), "keys in ws-1")
	// Output:
	// 200 OK 2 keys in ws-1
}

// ExampleApply reads the operator's config file and applies it to an
// in-memory store; a misspelt field is an error naming it.
func ExampleApply() {
	f, err := admin.Decode(strings.NewReader(`{
		"api_keys": [{"id": "key-admin", "key": "gw-example", "workspace_id": "ws-1", "role": "admin"}],
		"virtual_keys": [{"slug": "openai-prod", "provider": "openai", "api_key": "sk-example"}]
	}`))
	if err != nil {
		panic(err)
	}
	store := memstore.New()
	if err := admin.Apply(context.Background(), f, store); err != nil {
		panic(err)
	}
	_, err = admin.Decode(strings.NewReader(`{"api_kyes": []}`))
	fmt.Println(err)
	// Output:
	// gateway: store file: json: unknown field "api_kyes"
}
