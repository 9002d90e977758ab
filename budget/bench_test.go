package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
)

// BenchmarkUsageLimitsAdmission measures a request through the whole
// gateway (in memory, no network) as BenchmarkPolicyAdmission does,
// without budgets, with the rate-limits policies of that benchmark for
// comparison, and with one usage-limits policy of each type (and an API
// key's usage_limits), counted by a MemoryUsageCounter: the cost of a
// usage-limits check (reserve, then settle) reads as the difference from
// "none".
func BenchmarkUsageLimitsAdmission(b *testing.B) {
	budget := func(typ string) gateway.UsageLimitsPolicy {
		return gateway.UsageLimitsPolicy{ID: "7d1e0000-0000-4000-8000-0000000000b1", Type: typ, CreditLimit: 1e15,
			Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
			GroupBy:    []gateway.PolicyGroupBy{{Key: "api_key"}}, PeriodicReset: gateway.ResetMonthly,
			Status: gateway.PolicyActive, WorkspaceID: "ws-1", CreatedAt: "2026-01-01T00:00:00.000Z"}
	}
	for _, bc := range []struct {
		name      string
		rate      []gateway.RateLimitsPolicy
		usage     []gateway.UsageLimitsPolicy
		keyLimits string
	}{
		{name: "none"},
		{name: "rate-limits/requests", rate: []gateway.RateLimitsPolicy{perKey3}},
		{name: "rate-limits/requests+tokens", rate: []gateway.RateLimitsPolicy{perKey3, tokens100}},
		{name: "usage-limits/tokens", usage: []gateway.UsageLimitsPolicy{budget(gateway.UsageTokens)}},
		{name: "usage-limits/cost", usage: []gateway.UsageLimitsPolicy{budget(gateway.UsageCost)}},
		{name: "usage-limits/key", keyLimits: `{"type":"tokens","credit_limit":1e15,"periodic_reset":"weekly"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store := &gateway.MemoryStore{}
			store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey(polMember), WorkspaceID: "ws-1", Role: gateway.RoleMember,
				UsageLimits: json.RawMessage(bc.keyLimits)})
			store.AddVirtualKey(gateway.VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk", BaseURL: "http://provider.test/v1", WorkspaceID: "ws-1"})
			for _, p := range bc.rate {
				p.Value, p.Status, p.WorkspaceID = 1e15, gateway.PolicyActive, "ws-1"
				store.PutPolicy(context.Background(), &p)
			}
			for _, p := range bc.usage {
				store.PutUsageLimitsPolicy(context.Background(), &p)
			}
			var calls int
			gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Policies: store, UsageLimits: store,
				Transport: polTransport{&calls}})
			defer gw.Close()
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{}`))
				req.Header.Set("x-gateway-api-key", polMember)
				req.Header.Set("x-gateway-virtual-key", "vk")
				rec := httptest.NewRecorder()
				gw.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

// BenchmarkMemoryUsageCounter measures one reserve and its settlement on
// one entity, the counter's part of a usage-limits check.
func BenchmarkMemoryUsageCounter(b *testing.B) {
	c := &gateway.MemoryUsageCounter{}
	ctx := context.Background()
	key := gateway.UsageEntityKey{PolicyID: "p", ValueKey: "k", Period: "monthly@2026-11-01T00:00:00Z"}
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.Reserve(ctx, key, 1e15, 300)
		if err != nil || !r.Allowed {
			b.Fatal(err)
		}
		if _, err := c.Settle(ctx, r, key.Period, 250, gateway.UsageThresholds{Alert: -1, Limit: 1e15}); err != nil {
			b.Fatal(err)
		}
	}
}
