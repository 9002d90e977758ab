package sqlstore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/catalog"
	"github.com/modelgateway/gateway/catalog/storetest"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestCatalogStore runs the catalogue store's tests on SQLite and
// Postgres, and checks that a second store on the same database finds a
// provider joined with the first's integration once it catches up.
func TestCatalogStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) storetest.Store { return openStore(t, b.dsn(t), sqlstore.Options{}) })
		})
	}
	eachBackend(t, func(t *testing.T, dsn string) {
		a, b := openStore(t, dsn, sqlstore.Options{}), openStore(t, dsn, sqlstore.Options{})
		in := &catalog.Integration{ID: "0b0f7a3e-9c1d-4c5e-8f00-000000000002", Slug: "anthropic-prod", Provider: "anthropic",
			APIKey: "sk-ant-secret", AllowAllModels: true, Workspaces: []catalog.Grant{{WorkspaceID: "ws", Provider: "anthropic-prod"}}}
		if err := a.CreateIntegration(t.Context(), in); err != nil {
			t.Fatal(err)
		}
		if err := a.CreateVirtualKey(t.Context(), providerOf(in, "ws")); err != nil {
			t.Fatal(err)
		}
		if err := b.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		if vk, err := b.VirtualKeyIn(t.Context(), "ws", "anthropic-prod"); err != nil || vk.APIKey != "sk-ant-secret" || vk.Models != nil {
			t.Fatalf("the other store found %+v, %v", vk, err)
		}
	})
}

// TestIntegrationSecretsSealed checks that a copy of the SQLite file
// holds no integration secret in clear.
func TestIntegrationSecretsSealed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.db")
	st := openStore(t, path, sqlstore.Options{})
	in := &catalog.Integration{ID: "0b0f7a3e-9c1d-4c5e-8f00-000000000003", Slug: "bedrock", Provider: "bedrock",
		APIKey: "integration-plain-key-1"}
	in.SecretAccessKey, in.SessionToken = "integration-plain-secret-2", "integration-plain-token-3"
	if err := st.CreateIntegration(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var all []byte
	for _, f := range []string{path, path + "-wal"} {
		b, _ := os.ReadFile(f)
		all = append(all, b...)
	}
	for _, s := range []string{"integration-plain-key-1", "integration-plain-secret-2", "integration-plain-token-3"} {
		if bytes.Contains(all, []byte(s)) {
			t.Errorf("the database holds %q in clear", s)
		}
	}
}

func providerOf(in *catalog.Integration, ws string) *gateway.VirtualKey {
	return &gateway.VirtualKey{Slug: in.Slug, WorkspaceID: ws, Integration: in.Slug, Provider: in.Provider, Tenant: true}
}

// TestProviderLookupDoesNotAllocate: a provider made from an integration
// is found, joined, with no allocation, as any virtual key is, on the
// store and on memstore.
func TestProviderLookupDoesNotAllocate(t *testing.T) {
	in := &catalog.Integration{ID: "0b0f7a3e-9c1d-4c5e-8f00-000000000004", Slug: "openai-prod", Provider: "openai",
		APIKey: "sk-x", Workspaces: []catalog.Grant{{WorkspaceID: "ws", Provider: "openai-prod"}}}
	for _, st := range []struct {
		name  string
		store storetest.Store
	}{{"sqlstore", openStore(t, sqliteDSN(t), sqlstore.Options{})}, {"memstore", memstore.New()}} {
		t.Run(st.name, func(t *testing.T) {
			if err := st.store.CreateIntegration(t.Context(), in); err != nil {
				t.Fatal(err)
			}
			if err := st.store.CreateVirtualKey(t.Context(), providerOf(in, "ws")); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			allocs := testing.AllocsPerRun(100, func() {
				if vk, err := st.store.VirtualKeyIn(ctx, "ws", "openai-prod"); err != nil || vk.APIKey != "sk-x" {
					t.Fatalf("VirtualKeyIn = %v, %v", vk, err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per lookup, want 0", allocs)
			}
		})
	}
}
