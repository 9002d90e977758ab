package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkAdmissionCheck measures the admission stages alone, each on a
// request state as the pipeline leaves it: the limits stage with one
// requests policy per key (take, then settle), and the budgets stage with
// one tokens usage-limits policy per key and with an API key's
// usage_limits (reserve, then settle), in memory. It is the cost of a
// usage-limits check beside that of a rate-limits one, without the rest
// of the gateway.
func BenchmarkAdmissionCheck(b *testing.B) {
	ctx := context.Background()
	cond := []PolicyCondition{{Key: "workspace_id", Value: "ws-1"}}
	group := []PolicyGroupBy{{Key: "api_key"}}
	req := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	w := httptest.NewRecorder()
	// One state, reset for every request, so that its allocation is not
	// part of the measure.
	st := &requestState{}
	state := func(gw *Gateway, k *APIKey) *requestState {
		*st = requestState{gw: gw, identity: Identity{KeyID: k.ID, WorkspaceID: k.WorkspaceID}, key: k}
		return st
	}
	sreq := req.WithContext(context.WithValue(ctx, stateKey{}, st)) // the budgets find st in its context

	b.Run("rate-limits", func(b *testing.B) {
		store := &MemoryStore{}
		store.PutPolicy(ctx, &RateLimitsPolicy{ID: "7d1e0000-0000-4000-8000-0000000000d1", Conditions: cond, GroupBy: group,
			Type: PolicyRequests, Unit: PolicyPerHour, Value: 1e15, Status: PolicyActive, WorkspaceID: "ws-1"})
		gw := New(Options{Keys: store, Policies: store})
		defer gw.Close()
		k := &APIKey{ID: "k", WorkspaceID: "ws-1"}
		b.ReportAllocs()
		for b.Loop() {
			st := state(gw, k)
			lw, err := gw.limits.admit(w, req, st)
			if err != nil || lw == nil {
				b.Fatal(err)
			}
			lw.settle(result{upstream: true})
		}
	})
	for _, bc := range []struct {
		name   string
		policy bool
		limits string
	}{
		{"usage-limits/policy", true, ""},
		{"usage-limits/key", false, `{"type":"tokens","credit_limit":1e15,"periodic_reset":"monthly"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store := &MemoryStore{}
			if bc.policy {
				store.PutUsageLimitsPolicy(ctx, &UsageLimitsPolicy{ID: "7d1e0000-0000-4000-8000-0000000000d2", Conditions: cond,
					GroupBy: group, Type: UsageTokens, CreditLimit: 1e15, PeriodicReset: ResetMonthly, Status: PolicyActive,
					WorkspaceID: "ws-1", CreatedAt: "2026-01-01T00:00:00.000Z"})
			}
			gw := New(Options{Keys: store, UsageLimits: store})
			defer gw.Close()
			k := &APIKey{ID: "k", WorkspaceID: "ws-1", UsageLimits: []byte(bc.limits)}
			b.ReportAllocs()
			for b.Loop() {
				st := state(gw, k)
				br, err := gw.budgets.admit(sreq)
				if err != nil || br == nil {
					b.Fatal(err)
				}
				st.result = result{upstream: true}
				br.settle(&RequestLog{Status: http.StatusOK})
			}
		})
	}
}
