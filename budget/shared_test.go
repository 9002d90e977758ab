package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// settleCounter is a MemoryUsageCounter that records what each Settle
// charged.
type settleCounter struct {
	MemoryUsageCounter
	mu   sync.Mutex
	used []float64
}

func (c *settleCounter) Settle(ctx context.Context, r UsageReservation, period string, used float64, th UsageThresholds) (UsageSettlement, error) {
	c.mu.Lock()
	c.used = append(c.used, used)
	c.mu.Unlock()
	return c.MemoryUsageCounter.Settle(ctx, r, period, used, th)
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
		g := bubbleGateway(t, func(o *Options) {
			keys := &MemoryStore{}
			keys.AddAPIKey(APIKey{ID: "key-1", Digest: HashAPIKey(coreKey), WorkspaceID: "ws-1",
				UsageLimits: json.RawMessage(`{"type":"tokens","credit_limit":1000}`)})
			o.Keys = keys
			o.UsageCounter = counter
		}, pipeTransport{"up": up})
		const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
		ctx := WithLogHook(t.Context(), func(rec *RequestLog) {
			mu.Lock()
			logged = append(logged, rec.TotalTokens)
			mu.Unlock()
		})
		var wg sync.WaitGroup
		codes := make([]int, 3)
		for i := range codes {
			wg.Go(func() {
				codes[i] = serve(ctx, g, cfg, `{"model":"m"}`, "x-gateway-cache-force-refresh: true").Code
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
