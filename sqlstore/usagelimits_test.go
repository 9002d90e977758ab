package sqlstore_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/sqlstore"
)

func budgetPolicy() budget.Policy {
	alert := 80.0
	return budget.Policy{ID: "7d1e0000-0000-4000-8000-0000000000c1", Name: "monthly", Type: budget.Tokens,
		Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}}, GroupBy: []gateway.PolicyGroupBy{{Key: "workspace_id"}},
		CreditLimit: 100, AlertThreshold: &alert, PeriodicReset: budget.ResetMonthly, Status: gateway.PolicyActive,
		WorkspaceID: "ws-1", CreatedAt: "2026-11-01T00:00:00.000Z", LastUpdatedAt: "2026-11-01T00:00:00.000Z"}
}

// TestUsageLimitsPolicyStore: policies are written, read back alike,
// listed per workspace, swapped only when unchanged, and survive a
// reopen; another store on the database sees a change once it refreshes.
func TestUsageLimitsPolicyStore(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		p := budgetPolicy()
		p.ID = strings.ToUpper(p.ID)
		if err := s.PutUsageLimitsPolicy(ctx, &p); err != nil {
			t.Fatal(err)
		}
		p.ID = strings.ToLower(p.ID)
		got, err := s.UsageLimitsPolicy(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&p, got); diff != "" {
			t.Fatalf("read back (-want +got):\n%s", diff)
		}
		if _, err := s.UsageLimitsPolicy(ctx, "7d1e0000-0000-4000-8000-0000000000ff"); err != gateway.ErrNotFound {
			t.Fatalf("unknown policy: %v", err)
		}
		other := s.UsageLimitsPolicies
		if ps, _ := other(ctx, "ws-2"); len(ps) != 0 {
			t.Fatalf("ws-2 has %v", ps)
		}
		replica := openStore(t, dsn, sqlstore.Options{})
		if ps, _ := replica.UsageLimitsPolicies(ctx, "ws-1"); len(ps) != 1 || !budget.Equal(&ps[0], &p) {
			t.Fatalf("replica lists %+v", ps)
		}

		changed := p
		changed.CreditLimit, changed.AlertThreshold = 500, nil
		stale := p
		stale.Name = "stale"
		if ok, err := s.CompareAndSwapUsageLimitsPolicy(ctx, &stale, &changed); ok || err != nil {
			t.Fatalf("swap from a stale read: %v %v", ok, err)
		}
		if ok, err := s.CompareAndSwapUsageLimitsPolicy(ctx, &p, &changed); !ok || err != nil {
			t.Fatalf("swap: %v %v", ok, err)
		}
		if ps, _ := s.UsageLimitsPolicies(ctx, "ws-1"); len(ps) != 1 || ps[0].CreditLimit != 500 || ps[0].AlertThreshold != nil {
			t.Fatalf("after the swap: %+v", ps)
		}
		if err := replica.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if ps, _ := replica.UsageLimitsPolicies(ctx, "ws-1"); len(ps) != 1 || ps[0].CreditLimit != 500 {
			t.Fatalf("replica after refresh: %+v", ps)
		}
		gone := budgetPolicy()
		gone.ID = "7d1e0000-0000-4000-8000-0000000000fe"
		if _, err := s.CompareAndSwapUsageLimitsPolicy(ctx, &gone, &gone); err != gateway.ErrNotFound {
			t.Fatalf("swap of a missing policy: %v", err)
		}
	})
}

// TestUsageCounterStore: the counter's reserve, settle, alerts, period
// roll-over and reset, shared by two stores on one database and kept
// across a reopen.
func TestUsageCounterStore(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		a := openStore(t, dsn, sqlstore.Options{})
		b := openStore(t, dsn, sqlstore.Options{})
		key := budget.EntityKey{PolicyID: "p1", ValueKey: "k1", Period: "monthly@2026-11-01T00:00:00Z"}
		th := budget.Thresholds{Alert: 50, Limit: 100}

		r1, err := a.Reserve(ctx, key, 100, 60)
		if err != nil || !r1.Allowed {
			t.Fatalf("first reserve: %+v %v", r1, err)
		}
		r2, _ := b.Reserve(ctx, key, 100, 60) // 0 + 60 < 100: admitted
		r3, _ := a.Reserve(ctx, key, 100, 60) // 0 + 120: refused
		if !r2.Allowed || r3.Allowed {
			t.Fatalf("reservations: %v %v, want admitted, refused", r2.Allowed, r3.Allowed)
		}
		s1, err := b.Settle(ctx, r1, key.Period, 55, th)
		if err != nil || s1 != (budget.Settlement{Usage: 55, AlertCrossed: true}) {
			t.Fatalf("settle 1: %+v %v", s1, err)
		}
		s2, _ := a.Settle(ctx, r2, key.Period, 50, th)
		if s2 != (budget.Settlement{Usage: 105, LimitCrossed: true}) {
			t.Fatalf("settle 2: %+v", s2)
		}
		if r, _ := a.Reserve(ctx, key, 100, 1); r.Allowed || r.Usage != 105 {
			t.Fatalf("spent budget admits: %+v", r)
		}
		// Kept across a reopen.
		a.Close()
		c := openStore(t, dsn, sqlstore.Options{})
		es, err := c.UsageEntities(ctx, "p1")
		want := []budget.Entity{{EntityKey: key, Usage: 105, ThresholdAlerted: true, ExhaustedAlerted: true}}
		if err != nil || !cmp.Equal(es, want) {
			t.Fatalf("entities after reopen: %+v %v", es, err)
		}
		// A new period starts from zero.
		next := key
		next.Period = "monthly@2026-12-01T00:00:00Z"
		r4, _ := c.Reserve(ctx, next, 100, 10)
		if !r4.Allowed || r4.Usage != 0 || r4.Epoch != 1 {
			t.Fatalf("new period: %+v", r4)
		}
		// A reset drops usage and reservations; the settlement of a
		// reservation from before it takes nothing back.
		if ok, err := b.ResetUsage(ctx, "p1", "k1"); !ok || err != nil {
			t.Fatalf("reset: %v %v", ok, err)
		}
		if ok, _ := b.ResetUsage(ctx, "p1", "nobody"); ok {
			t.Fatal("reset of no entity reports true")
		}
		r5, _ := b.Reserve(ctx, next, 100, 30)
		c.Settle(ctx, r4, next.Period, 5, th)
		es, _ = c.UsageEntities(ctx, "p1")
		if len(es) != 1 || es[0].Usage != 5 || es[0].Reserved != 30 || es[0].Epoch != 2 || es[0].ThresholdAlerted {
			t.Fatalf("after reset: %+v", es)
		}
		c.Settle(ctx, r5, next.Period, 20, th)
		if es, _ = c.UsageEntities(ctx, "p1"); es[0].Reserved != 0 || es[0].Usage != 25 {
			t.Fatalf("after the last settle: %+v", es)
		}
	})
}

// TestUsageLimitsConcurrentReplicas: 64 requests at once, spread over two
// gateways whose stores share one database, overshoot a tokens budget of
// 1000 by at most one request's usage.
func TestUsageLimitsConcurrentReplicas(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		var arrived atomic.Int64
		hold := make(chan struct{})
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			arrived.Add(1)
			<-hold
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"model":"gpt-4o","usage":{"prompt_tokens":20,"completion_tokens":30,"total_tokens":50}}`)
		}))
		defer up.Close()
		keys := memstore.New()
		keys.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-budget"), WorkspaceID: "ws-1", Role: gateway.RoleMember})
		keys.AddVirtualKey(gateway.VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
		var urls []string
		var stores []*sqlstore.Store
		for range 2 {
			s := openStore(t, dsn, sqlstore.Options{})
			stores = append(stores, s)
			gw := gateway.New(gateway.Options{Keys: keys, VirtualKeys: keys,
				Admissions: []gateway.Admission{budget.New(budget.Options{Store: s, Counter: s})}})
			srv := httptest.NewServer(gw)
			t.Cleanup(func() { srv.Close(); gw.Close() })
			urls = append(urls, srv.URL)
		}
		p := budgetPolicy()
		p.CreditLimit, p.AlertThreshold = 1000, nil
		if err := stores[0].PutUsageLimitsPolicy(ctx, &p); err != nil {
			t.Fatal(err)
		}
		if err := stores[1].Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		send := func(url string) int {
			req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o","max_tokens":40,"messages":[]}`))
			req.Header.Set("x-gateway-api-key", "gw-budget")
			req.Header.Set("x-gateway-virtual-key", "vk")
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return 0
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			return res.StatusCode
		}
		const n = 64
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		var refused atomic.Int64
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code := send(urls[i%2])
				if code != 200 {
					refused.Add(1)
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}()
		}
		for arrived.Load()+refused.Load() < n {
			time.Sleep(time.Millisecond)
		}
		close(hold)
		wg.Wait()
		if codes[200]+codes[412] != n || codes[200] == 0 {
			t.Fatalf("answers %v", codes)
		}
		es, err := stores[1].UsageEntities(ctx, p.ID)
		if err != nil || len(es) != 1 {
			t.Fatalf("entities %+v %v", es, err)
		}
		if es[0].Usage != float64(50*codes[200]) || es[0].Usage > 1050 || es[0].Reserved != 0 {
			t.Fatalf("usage %v (reserved %v) after %d admitted: want 50 each, at most 1050", es[0].Usage, es[0].Reserved, codes[200])
		}
		if code := send(urls[1]); code != 412 && es[0].Usage >= 1000 {
			t.Fatalf("after the budget: %d, want 412", code)
		}
	})
}

// BenchmarkUsageCounter measures one reserve and its settlement on one
// entity in the database: the two transactions a usage-limits check adds
// per request when the store keeps the counters.
func BenchmarkUsageCounter(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := openStore(b, be.dsn(b), sqlstore.Options{})
			ctx := context.Background()
			key := budget.EntityKey{PolicyID: "p", ValueKey: "k", Period: "monthly@2026-11-01T00:00:00Z"}
			b.ReportAllocs()
			for b.Loop() {
				r, err := s.Reserve(ctx, key, 1e15, 300)
				if err != nil || !r.Allowed {
					b.Fatal(err)
				}
				if _, err := s.Settle(ctx, r, key.Period, 250, budget.Thresholds{Alert: -1, Limit: 1e15}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
