package memstore

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway"
)

// TestPolicies: ids are kept in lower case and found in any
// case; a workspace's list includes the policies of no workspace; a
// compare-and-swap replaces only the policy as read, and never one
// deleted meanwhile.
func TestPolicies(t *testing.T) {
	ctx := context.Background()
	s := New()
	mk := func(id, ws, created string) *gateway.RateLimitsPolicy {
		return &gateway.RateLimitsPolicy{ID: id, Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
			GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}}, Type: gateway.PolicyRequests, Unit: gateway.PolicyPerHour, Value: 3,
			Status: gateway.PolicyActive, WorkspaceID: ws, CreatedAt: created}
	}
	const (
		upper = "AAAAAAAA-0000-4000-8000-000000000001"
		lower = "aaaaaaaa-0000-4000-8000-000000000001"
		op    = "bbbbbbbb-0000-4000-8000-000000000002"
		other = "cccccccc-0000-4000-8000-000000000003"
	)
	for _, p := range []*gateway.RateLimitsPolicy{mk(upper, "ws-1", "1"), mk(op, "", "2"), mk(other, "ws-2", "3")} {
		if err := s.PutPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(ws string) []string {
		ps, err := s.Policies(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	if diff := cmp.Diff([]string{lower, op}, ids("ws-1")); diff != "" {
		t.Errorf("policies of ws-1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{op, other}, ids("ws-2")); diff != "" {
		t.Errorf("policies of ws-2 (-want +got):\n%s", diff)
	}

	read, err := s.Policy(ctx, upper)
	if err != nil || read.ID != lower {
		t.Fatalf("Policy(%q) = %+v, %v; want the policy, id in lower case", upper, read, err)
	}
	changed := *read
	changed.Value = 5
	if ok, err := s.CompareAndSwapPolicy(ctx, read, &changed); !ok || err != nil {
		t.Fatalf("swap of the policy as read: %t, %v; want true", ok, err)
	}
	stale := changed
	stale.Value = 9
	if ok, err := s.CompareAndSwapPolicy(ctx, read, &stale); ok || err != nil {
		t.Fatalf("swap of a stale read: %t, %v; want false", ok, err)
	}
	if p, _ := s.Policy(ctx, lower); p.Value != 5 {
		t.Fatalf("value %v after a refused swap, want 5", p.Value)
	}
	if err := s.DeletePolicy(ctx, upper); err != nil {
		t.Fatalf("DeletePolicy(%q): %v", upper, err)
	}
	if ok, err := s.CompareAndSwapPolicy(ctx, &changed, &stale); ok || !errors.Is(err, gateway.ErrNotFound) {
		t.Fatalf("swap of a deleted policy: %t, %v; want gateway.ErrNotFound", ok, err)
	}
	if _, err := s.Policy(ctx, lower); !errors.Is(err, gateway.ErrNotFound) {
		t.Fatalf("deleted policy found: %v", err)
	}
}
