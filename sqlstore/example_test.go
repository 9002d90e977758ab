package sqlstore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/sqlstore"
)

// A gateway whose keys and virtual keys live in a SQLite file: a store
// file is loaded into it once, and from then on the database holds them,
// the provider credential sealed under the master key.
func Example() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "provider saw %s with %s\n", r.URL.Path, r.Header.Get("Authorization"))
	}))
	defer provider.Close()

	dir, err := os.MkdirTemp("", "sqlstore-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// In production: sqlstore.ParseMasterKey(os.Getenv("GATEWAY_MASTER_KEY")).
	key, err := sqlstore.ParseMasterKey("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "gateway.db"), sqlstore.Options{MasterKey: key})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	f, err := admin.Decode(strings.NewReader(`{
	  "api_keys": [{"id": "team-a", "key": "gw-secret", "workspace_id": "ws-1"}],
	  "virtual_keys": [{"slug": "openai-prod", "provider": "openai", "api_key": "sk-stored", "base_url": "` + provider.URL + `/v1"}]
	}`))
	if err != nil {
		panic(err)
	}
	if err := store.Load(ctx, f); err != nil {
		panic(err)
	}

	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Configs: store, Policies: store})
	defer g.Close()
	srv := httptest.NewServer(g)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini"}`))
	req.Header.Set("x-gateway-api-key", "gw-secret")
	req.Header.Set("x-gateway-virtual-key", "openai-prod")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Print(res.Status, " ", string(body))
	// Output:
	// 200 OK provider saw /v1/chat/completions with Bearer sk-stored
}
