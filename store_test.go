package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		typ    string
		code   string
	}{
		{"gateway error", badRequest(CodeInvalidConfig, "x", "bad"), 400, TypeInvalidRequest, CodeInvalidConfig},
		{"wrapped gateway error", errors.Join(errors.New("ctx"), badRequest(CodeUnknownProvider, "x", "bad")), 400, TypeInvalidRequest, CodeUnknownProvider},
		{"timeout", errTimeout{1500e6}, 408, TypeTimeout, CodeTimeout},
		{"unreachable", errors.Join(ErrUpstreamUnreachable, errors.New("dial tcp 10.0.0.1:443: refused")), 502, TypeGateway, CodeUpstreamUnreachable},
		{"blocked address", &blockedAddrError{host: "x", addr: mustAddr("10.0.0.1")}, 400, TypeInvalidRequest, CodeInvalidCustomHost},
		{"anything else", errors.New("store down at 10.0.0.9"), 500, TypeGateway, CodeInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := errorFor(tc.err)
			if e.Status != tc.status || e.Type != tc.typ || e.Code != tc.code {
				t.Errorf("errorFor = %d %s %s; want %d %s %s", e.Status, e.Type, e.Code, tc.status, tc.typ, tc.code)
			}
			if strings.Contains(e.Message, "10.0.0") {
				t.Errorf("message leaks an internal address: %s", e.Message)
			}
		})
	}
	if got := errorFor(errTimeout{1500e6}).Message; got != "Request exceeded the timeout sent in the request: 1500ms" {
		t.Errorf("timeout message = %q", got)
	}
}

// TestMemoryStorePolicies: ids are kept in lower case and found in any
// case; a workspace's list includes the policies of no workspace; a
// compare-and-swap replaces only the policy as read, and never one
// deleted meanwhile.
func TestMemoryStorePolicies(t *testing.T) {
	ctx := context.Background()
	s := &MemoryStore{}
	mk := func(id, ws, created string) *RateLimitsPolicy {
		return &RateLimitsPolicy{ID: id, Conditions: []PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
			GroupBy: []PolicyGroupBy{{Key: "api_key"}}, Type: PolicyRequests, Unit: PolicyPerHour, Value: 3,
			Status: PolicyActive, WorkspaceID: ws, CreatedAt: created}
	}
	const (
		upper = "AAAAAAAA-0000-4000-8000-000000000001"
		lower = "aaaaaaaa-0000-4000-8000-000000000001"
		op    = "bbbbbbbb-0000-4000-8000-000000000002"
		other = "cccccccc-0000-4000-8000-000000000003"
	)
	for _, p := range []*RateLimitsPolicy{mk(upper, "ws-1", "1"), mk(op, "", "2"), mk(other, "ws-2", "3")} {
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
	if ok, err := s.CompareAndSwapPolicy(ctx, &changed, &stale); ok || !errors.Is(err, ErrNotFound) {
		t.Fatalf("swap of a deleted policy: %t, %v; want ErrNotFound", ok, err)
	}
	if _, err := s.Policy(ctx, lower); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted policy found: %v", err)
	}
}

func TestMemoryAuditBounded(t *testing.T) {
	var s MemoryStore
	for i := range memoryAuditMax + 5 {
		s.AddAuditRecord(t.Context(), &AuditRecord{Status: i})
	}
	recs, total, err := s.AuditRecords(t.Context(), AuditQuery{Limit: 1})
	if err != nil || total != memoryAuditMax || len(recs) != 1 || recs[0].Status != memoryAuditMax+4 {
		t.Fatalf("AuditRecords = %d records (first %+v), total %d, %v", len(recs), recs, total, err)
	}
	recs, _, _ = s.AuditRecords(t.Context(), AuditQuery{Offset: memoryAuditMax - 1})
	if len(recs) != 1 || recs[0].Status != 5 {
		t.Fatalf("oldest kept = %+v, want status 5", recs)
	}
}
