package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/sqlstore"
)

// lookupFixture fills a Store (SQLite) and a memstore.Store with the same n
// keys, virtual keys, configs and policies, in one Load each.
func lookupFixture(tb testing.TB, n int) (*sqlstore.Store, *memstore.Store) {
	tb.Helper()
	var f admin.File
	for i := range n {
		f.APIKeys = append(f.APIKeys, admin.KeyEntry{ID: fmt.Sprintf("key-%d", i), Key: fmt.Sprintf("gw-%d", i), WorkspaceID: fmt.Sprintf("ws-%d", i%10)})
		f.VirtualKeys = append(f.VirtualKeys, gateway.VirtualKey{Slug: fmt.Sprintf("vk-%d", i), Provider: "openai", APIKey: fmt.Sprintf("sk-%d", i)})
		f.Configs = append(f.Configs, gateway.SavedConfig{ID: fmt.Sprintf("pc-%d", i), Config: json.RawMessage(`{"virtual_key":"vk-0"}`)})
	}
	for i := range 10 {
		ws := fmt.Sprintf("ws-%d", i)
		if i == 9 {
			ws = "" // an operator policy, in every workspace's list
		}
		f.RateLimitsPolicies = append(f.RateLimitsPolicies, gateway.RateLimitsPolicy{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			Type: gateway.PolicyRequests, Unit: gateway.PolicyPerMinute, Value: 100, WorkspaceID: ws})
	}
	s := openStore(tb, sqliteDSN(tb), sqlstore.Options{})
	if err := s.Load(context.Background(), &f); err != nil {
		tb.Fatal(err)
	}
	m := memstore.New()
	if err := admin.Apply(context.Background(), &f, m); err != nil {
		tb.Fatal(err)
	}
	return s, m
}

// TestLookupsDoNotAllocate: every lookup of the request path is a map
// read on the snapshot, with no allocation on a hit.
func TestLookupsDoNotAllocate(t *testing.T) {
	s, _ := lookupFixture(t, 100)
	ctx := context.Background()
	digest := gateway.HashAPIKey("gw-42")
	allocs := testing.AllocsPerRun(100, func() {
		k, err := s.APIKey(ctx, digest)
		if err != nil || k.ID != "key-42" {
			t.Fatalf("APIKey = %v, %v", k, err)
		}
		if _, err := s.VirtualKey(ctx, "vk-42"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Config(ctx, "pc-42"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.VirtualKeyIn(ctx, "", "vk-42"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ConfigIn(ctx, "", "pc-42"); err != nil {
			t.Fatal(err)
		}
		if ps, err := s.Policies(ctx, "ws-2"); err != nil || len(ps) != 2 {
			t.Fatalf("Policies = %v, %v", ps, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per lookup round, want 0", allocs)
	}
}

// BenchmarkLookup compares the per-request lookups of a Store holding
// 10,000 of each record with a memstore.Store holding the same.
func BenchmarkLookup(b *testing.B) {
	s, m := lookupFixture(b, 10000)
	ctx := context.Background()
	digest := gateway.HashAPIKey("gw-4242")
	for _, st := range []struct {
		name  string
		store interface {
			gateway.KeyStore
			gateway.VirtualKeyStore
			gateway.ConfigStore
			gateway.PolicyStore
		}
	}{{"sqlstore", s}, {"memorystore", m}} {
		b.Run(st.name+"/APIKey", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := st.store.APIKey(ctx, digest); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(st.name+"/VirtualKey", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := st.store.VirtualKey(ctx, "vk-4242"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(st.name+"/Config", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := st.store.Config(ctx, "pc-4242"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(st.name+"/Policies", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := st.store.Policies(ctx, "ws-2"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
