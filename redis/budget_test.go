package redis_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/memstore"
	gwredis "github.com/modelgateway/gateway/redis"
)

// TestBudgetMatchesMemory: a random sequence of reserves, settlements,
// period changes and resets gets the same answers from a Budget as from a
// budget.MemoryCounter, and leaves the same entities.
func TestBudgetMatchesMemory(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	rb := gwredis.NewBudget(srv.client(t), gwredis.BudgetOptions{Prefix: srv.prefix})
	mem := &budget.MemoryCounter{}
	rng := rand.New(rand.NewPCG(1, 2))
	policies := []string{"p1", strings.Repeat("long-policy-", 20), "{braced}"}
	values := []string{"k1", "k2", "", "metadata.user:a%2Cb"}
	periods := []string{"", "monthly@2026-11-01T00:00:00Z", "monthly@2026-12-01T00:00:00Z"}
	type pending struct{ r, m budget.Reservation }
	var open []pending
	for i := range 2000 {
		switch op := rng.IntN(10); {
		case op < 5:
			key := budget.EntityKey{PolicyID: policies[rng.IntN(3)], ValueKey: values[rng.IntN(4)], Period: periods[rng.IntN(3)]}
			limit, est := float64(rng.IntN(500)), float64(rng.IntN(100))+0.25
			r, err := rb.Reserve(ctx, key, limit, est)
			if err != nil {
				t.Fatal(err)
			}
			m, _ := mem.Reserve(ctx, key, limit, est)
			if r != m {
				t.Fatalf("op %d: Reserve %+v: redis %+v, memory %+v", i, key, r, m)
			}
			if r.Allowed {
				open = append(open, pending{r, m})
			}
		case op < 9 && len(open) > 0:
			j := rng.IntN(len(open))
			p := open[j]
			open = append(open[:j], open[j+1:]...)
			period := periods[rng.IntN(3)]
			used := float64(rng.IntN(120)) / 3
			th := budget.Thresholds{Alert: float64(rng.IntN(300)) - 50, Limit: float64(rng.IntN(500))}
			rs, err := rb.Settle(ctx, p.r, period, used, th)
			if err != nil {
				t.Fatal(err)
			}
			ms, _ := mem.Settle(ctx, p.m, period, used, th)
			if rs != ms {
				t.Fatalf("op %d: Settle: redis %+v, memory %+v", i, rs, ms)
			}
		case op == 9:
			pol, v := policies[rng.IntN(3)], values[rng.IntN(4)]
			ro, err := rb.ResetUsage(ctx, pol, v)
			if err != nil {
				t.Fatal(err)
			}
			if mo, _ := mem.ResetUsage(ctx, pol, v); ro != mo {
				t.Fatalf("op %d: ResetUsage: redis %v, memory %v", i, ro, mo)
			}
		}
	}
	for _, p := range policies {
		re, err := rb.UsageEntities(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		me, _ := mem.UsageEntities(ctx, p)
		if diff := cmp.Diff(me, re); diff != "" {
			t.Fatalf("entities of %.20s (-memory +redis):\n%s", p, diff)
		}
	}
}

// TestBudgetConcurrentGateways: 64 requests at once through two gateways
// sharing a Budget overshoot a tokens budget of 1000 by at most one
// request's usage.
func TestBudgetConcurrentGateways(t *testing.T) {
	srv := startRedis(t)
	var arrived, refused atomic.Int64
	hold := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrived.Add(1)
		<-hold
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"gpt-4o","usage":{"prompt_tokens":20,"completion_tokens":30,"total_tokens":50}}`)
	}))
	defer up.Close()
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-budget"), WorkspaceID: "ws-1", Role: gateway.RoleMember,
		UsageLimits: []byte(`{"type":"tokens","credit_limit":1000,"periodic_reset":"monthly"}`)})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	var urls []string
	for range 2 {
		counter := gwredis.NewBudget(srv.client(t), gwredis.BudgetOptions{Prefix: srv.prefix})
		gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store,
			Admissions: []gateway.Admission{budget.New(budget.Options{Counter: counter})}})
		s := httptest.NewServer(gw)
		t.Cleanup(func() { s.Close(); gw.Close() })
		urls = append(urls, s.URL)
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
	for i := range n {
		wg.Go(func() {
			code := send(urls[i%2])
			if code != 200 {
				refused.Add(1)
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	for arrived.Load()+refused.Load() < n {
		time.Sleep(time.Millisecond)
	}
	close(hold)
	wg.Wait()
	if codes[200]+codes[412] != n || codes[200] == 0 {
		t.Fatalf("answers %v", codes)
	}
	if used := 50 * codes[200]; used > 1050 || used < 1000 {
		t.Fatalf("%d admitted, %d tokens used: want from 1000 to 1050", codes[200], used)
	}
	if code := send(urls[0]); code != 412 {
		t.Fatalf("after the budget: %d, want 412", code)
	}
}

// TestBudgetRedisDown: every call fails with the client's error.
func TestBudgetRedisDown(t *testing.T) {
	b := gwredis.NewBudget(downClient(t), gwredis.BudgetOptions{})
	ctx := context.Background()
	key := budget.EntityKey{PolicyID: "p", ValueKey: "k"}
	if _, err := b.Reserve(ctx, key, 1, 1); err == nil {
		t.Error("Reserve without Redis: no error")
	}
	if _, err := b.Settle(ctx, budget.Reservation{EntityKey: key}, "", 1, budget.Thresholds{}); err == nil {
		t.Error("Settle without Redis: no error")
	}
	if _, err := b.UsageEntities(ctx, "p"); err == nil {
		t.Error("UsageEntities without Redis: no error")
	}
	if _, err := b.ResetUsage(ctx, "p", "k"); err == nil {
		t.Error("ResetUsage without Redis: no error")
	}
}

// BenchmarkBudgetReserveSettle measures one reserve and its settlement on
// one entity: the two round trips a usage-limits check adds per request.
func BenchmarkBudgetReserveSettle(b *testing.B) {
	srv := startRedis(b)
	bud := gwredis.NewBudget(srv.client(b), gwredis.BudgetOptions{Prefix: srv.prefix})
	ctx := context.Background()
	key := budget.EntityKey{PolicyID: "p", ValueKey: "k", Period: "monthly@2026-11-01T00:00:00Z"}
	b.ReportAllocs()
	for b.Loop() {
		r, err := bud.Reserve(ctx, key, 1e15, 300)
		if err != nil || !r.Allowed {
			b.Fatal(err)
		}
		if _, err := bud.Settle(ctx, r, key.Period, 250, budget.Thresholds{Alert: -1, Limit: 1e15}); err != nil {
			b.Fatal(err)
		}
	}
}
