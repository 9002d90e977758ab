package sqlstore_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/sqlstore"
)

// The methods the rate-limits and usage-limits routes look for by type
// assertion, to list every workspace's policies.
var _ interface {
	AllPolicies(context.Context) ([]gateway.RateLimitsPolicy, error)
	AllUsageLimitsPolicies(context.Context) ([]budget.Policy, error)
} = (*sqlstore.Store)(nil)

// TestAllPolicies: the policies of every workspace, for an organisation
// key's list, in creation order, and a copy the caller may change.
func TestAllPolicies(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		for _, p := range []*gateway.RateLimitsPolicy{policy(policyC, "ws-2", "2026-11-03T00:00:00.000Z"),
			policy(policyA, "ws-1", "2026-11-01T00:00:00.000Z"), policy(policyB, "", "2026-11-02T00:00:00.000Z")} {
			if err := s.PutPolicy(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		ps, err := s.AllPolicies(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.ID+" "+p.WorkspaceID)
		}
		if diff := cmp.Diff([]string{policyA + " ws-1", policyB + " ", policyC + " ws-2"}, got); diff != "" {
			t.Errorf("AllPolicies (-want +got):\n%s", diff)
		}
		ps[0].Conditions[0].Value = "changed"
		if p, _ := s.Policy(ctx, policyA); p.Conditions[0].Value != "ws-1" {
			t.Errorf("AllPolicies shares memory with the store: %+v", p.Conditions)
		}

		b1, b2 := budgetPolicy(), budgetPolicy()
		b2.ID, b2.WorkspaceID, b2.CreatedAt = "7d1e0000-0000-4000-8000-0000000000c2", "ws-2", "2026-10-01T00:00:00.000Z"
		for _, b := range []*budget.Policy{&b1, &b2} {
			if err := s.PutUsageLimitsPolicy(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		bs, err := s.AllUsageLimitsPolicies(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = nil
		for _, b := range bs {
			got = append(got, b.ID+" "+b.WorkspaceID)
		}
		if diff := cmp.Diff([]string{b2.ID + " ws-2", b1.ID + " ws-1"}, got); diff != "" {
			t.Errorf("AllUsageLimitsPolicies (-want +got):\n%s", diff)
		}
	})
}
