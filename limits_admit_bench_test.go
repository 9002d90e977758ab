package gateway

import (
	"context"
	"net/http/httptest"
	"testing"
)

// BenchmarkAdmissionCheck measures the limits stage alone, on a request
// state as the pipeline leaves it, with one requests policy per key
// (take, then settle), in memory: the cost of a rate-limits check
// without the rest of the gateway. The budget package's
// BenchmarkAdmissionCheck measures a usage-limits check the same way.
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
	b.Run("rate-limits", func(b *testing.B) {
		store := &testStore{}
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
}
