package budget_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/memstore"
)

// settleCounter is a MemoryCounter that records what each Settle
// charged.
type settleCounter struct {
	budget.MemoryCounter
	mu   sync.Mutex
	used []float64
}

func (c *settleCounter) Settle(ctx context.Context, r budget.Reservation, period string, used float64, th budget.Thresholds) (budget.Settlement, error) {
	c.mu.Lock()
	c.used = append(c.used, used)
	c.mu.Unlock()
	return c.MemoryCounter.Settle(ctx, r, period, used, th)
}

// TestBudgetSharedFillChargedOnce: callers of one forced refresh share
// its single provider call; a key's tokens budget is charged that call's
// usage once, on the leader: the followers, answered REFRESH with the
// leader's answer, are charged nothing (AnswerFrom's own), though their
// records show the tokens.
func TestBudgetSharedFillChargedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int32
		up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			io.Copy(io.Discard, r.Body)
			<-release
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`)
		})
		counter := &settleCounter{}
		var logged []int64
		var mu sync.Mutex
		st := memstore.New()
		st.AddAPIKey(gateway.APIKey{ID: "key-1", Digest: gateway.HashAPIKey(sharedKey), WorkspaceID: "ws-1",
			UsageLimits: json.RawMessage(`{"type":"tokens","credit_limit":1000}`)})
		st.AddVirtualKey(gateway.VirtualKey{Slug: "up", Provider: "openai", APIKey: "sk-up", BaseURL: "http://up/v1"})
		g := gateway.New(gateway.Options{Keys: st, VirtualKeys: st, Configs: st, Transport: handlerTransport{up},
			Admissions: []gateway.Admission{budget.New(budget.Options{Counter: counter})}})
		t.Cleanup(func() { g.Close() })
		const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
		ctx := gateway.WithLogHook(t.Context(), func(rec *gateway.RequestLog) {
			mu.Lock()
			logged = append(logged, rec.TotalTokens)
			mu.Unlock()
		})
		var wg sync.WaitGroup
		codes := make([]int, 3)
		for i := range codes {
			wg.Go(func() {
				req := httptest.NewRequestWithContext(ctx, "POST", "/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
				req.Header.Set(gateway.HeaderAPIKey, sharedKey)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(gateway.HeaderConfig, cfg)
				req.Header.Set("x-gateway-cache-force-refresh", "true")
				rec := httptest.NewRecorder()
				g.ServeHTTP(rec, req)
				codes[i] = rec.Code
			})
			synctest.Wait()
		}
		close(release)
		wg.Wait()
		if !slices.Equal(codes, []int{200, 200, 200}) || calls.Load() != 1 {
			t.Fatalf("statuses %v after %d provider calls, want three 200s after one", codes, calls.Load())
		}
		counter.mu.Lock()
		defer counter.mu.Unlock()
		slices.Sort(counter.used)
		if !slices.Equal(counter.used, []float64{0, 0, 12}) {
			t.Errorf("settled %v, want the 12 tokens once and nothing for the two followers", counter.used)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(logged, []int64{12, 12, 12}) {
			t.Errorf("records show %v tokens, want 12 on each", logged)
		}
	})
}

// sharedKey is the API key of TestBudgetSharedFillChargedOnce.
const sharedKey = "gw-shared-key"

// handlerTransport serves every upstream call with its handler, in
// memory (in a synctest bubble), answering once the handler returns.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	res := rec.Result()
	res.Request = r
	return res, nil
}
