package budget_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/memstore"
)

// benchTransport answers every upstream call with an empty JSON object,
// in memory.
type benchTransport struct{}

func (benchTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
}

// benchKey is the API key of the benchmarks, a member of ws-1.
const benchKey = "gw-bench-member"

// benchPolicy is a usage-limits policy of ws-1 per API key that never
// runs out, counting typ.
func benchPolicy(typ string) budget.Policy {
	return budget.Policy{ID: "7d1e0000-0000-4000-8000-0000000000b1", Type: typ, CreditLimit: 1e15,
		Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
		GroupBy:    []gateway.PolicyGroupBy{{Key: "api_key"}}, PeriodicReset: budget.ResetMonthly,
		Status: gateway.PolicyActive, WorkspaceID: "ws-1", CreatedAt: "2026-01-01T00:00:00.000Z"}
}

// BenchmarkUsageLimitsAdmission measures a request through the whole
// gateway (in memory, no network) without budgets, with a rate-limits
// policy per key for comparison, and with one usage-limits policy of each
// type (and an API key's usage_limits), counted by a MemoryCounter: the
// cost of a usage-limits check (reserve, then settle) reads as the
// difference from "none".
func BenchmarkUsageLimitsAdmission(b *testing.B) {
	rate := gateway.RateLimitsPolicy{ID: "7d1e0000-0000-4000-8000-000000000001",
		Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
		GroupBy:    []gateway.PolicyGroupBy{{Key: "api_key"}}, Type: "requests", Unit: "rph", Value: 1e15,
		Status: gateway.PolicyActive, WorkspaceID: "ws-1"}
	for _, bc := range []struct {
		name      string
		rate      bool
		usage     []budget.Policy
		keyLimits string
	}{
		{name: "none"},
		{name: "rate-limits/requests", rate: true},
		{name: "usage-limits/tokens", usage: []budget.Policy{benchPolicy(budget.Tokens)}},
		{name: "usage-limits/cost", usage: []budget.Policy{benchPolicy(budget.Cost)}},
		{name: "usage-limits/key", keyLimits: `{"type":"tokens","credit_limit":1e15,"periodic_reset":"weekly"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store := memstore.New()
			store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey(benchKey), WorkspaceID: "ws-1", Role: gateway.RoleMember,
				UsageLimits: json.RawMessage(bc.keyLimits)})
			store.AddVirtualKey(gateway.VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk", BaseURL: "http://provider.test/v1", WorkspaceID: "ws-1"})
			if bc.rate {
				store.PutPolicy(context.Background(), &rate)
			}
			for _, p := range bc.usage {
				store.PutUsageLimitsPolicy(context.Background(), &p)
			}
			gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Policies: store, Transport: benchTransport{},
				Admissions: []gateway.Admission{budget.New(budget.Options{Store: store})}})
			defer gw.Close()
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{}`))
				req.Header.Set("x-gateway-api-key", benchKey)
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

// capture is an Admission that keeps the request it admits, so that a
// benchmark can run another Admission on the request as the pipeline
// hands it over (its identity, key record and options in its context).
type capture struct{ r *http.Request }

func (c *capture) Admit(r *http.Request) (func(*gateway.RequestLog), error) {
	c.r = r
	return nil, nil
}

// BenchmarkAdmissionCheck measures the budgets alone, on a request as
// the pipeline hands it to its admissions: one tokens usage-limits policy
// per key, and an API key's usage_limits (reserve, then settle), in
// memory. It is the cost of a usage-limits check without the rest of the
// gateway, beside the root package's BenchmarkAdmissionCheck of a
// rate-limits one.
func BenchmarkAdmissionCheck(b *testing.B) {
	for _, bc := range []struct {
		name   string
		policy bool
		limits string
	}{
		{"usage-limits/policy", true, ""},
		{"usage-limits/key", false, `{"type":"tokens","credit_limit":1e15,"periodic_reset":"monthly"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store := memstore.New()
			if bc.policy {
				p := benchPolicy(budget.Tokens)
				store.PutUsageLimitsPolicy(context.Background(), &p)
			}
			store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey(benchKey), WorkspaceID: "ws-1", Role: gateway.RoleMember,
				UsageLimits: json.RawMessage(bc.limits)})
			c := &capture{}
			gw := gateway.New(gateway.Options{Keys: store, Transport: benchTransport{}, Admissions: []gateway.Admission{c}})
			defer gw.Close()
			req := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			req.Header.Set("x-gateway-api-key", benchKey)
			req.Header.Set("x-gateway-provider", "openai")
			req.Header.Set("Authorization", "Bearer sk")
			gw.ServeHTTP(httptest.NewRecorder(), req)
			if c.r == nil {
				b.Fatal("no request was admitted")
			}
			bs := budget.New(budget.Options{Store: store})
			rec := &gateway.RequestLog{Status: http.StatusOK}
			b.ReportAllocs()
			for b.Loop() {
				settle, err := bs.Admit(c.r)
				if err != nil || settle == nil {
					b.Fatal(err)
				}
				settle(rec)
			}
		})
	}
}

// BenchmarkMemoryCounter measures one reserve and its settlement on one
// entity, the counter's part of a usage-limits check.
func BenchmarkMemoryCounter(b *testing.B) {
	c := &budget.MemoryCounter{}
	ctx := context.Background()
	key := budget.EntityKey{PolicyID: "p", ValueKey: "k", Period: "monthly@2026-11-01T00:00:00Z"}
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.Reserve(ctx, key, 1e15, 300)
		if err != nil || !r.Allowed {
			b.Fatal(err)
		}
		if _, err := c.Settle(ctx, r, key.Period, 250, budget.Thresholds{Alert: -1, Limit: 1e15}); err != nil {
			b.Fatal(err)
		}
	}
}
