package admin_test

import (
	"context"
	"fmt"
	"strings"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
)

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
	store := &gateway.MemoryStore{}
	if err := admin.Apply(context.Background(), f, store); err != nil {
		panic(err)
	}
	_, err = admin.Decode(strings.NewReader(`{"api_kyes": []}`))
	fmt.Println(err)
	// Output:
	// gateway: store file: json: unknown field "api_kyes"
}
