package memstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
)

// UsageLimitsPolicies implements budget.Store: the policies of
// workspaceID, oldest first, in a new slice. Their Conditions, GroupBy and
// AlertThreshold are shared with the store, which never changes them
// (every write stores a copy).
func (s *Store) UsageLimitsPolicies(_ context.Context, workspaceID string) ([]budget.Policy, error) {
	s.budgetMu.RLock()
	var out []budget.Policy
	for _, p := range s.budgets {
		if p.WorkspaceID == workspaceID {
			out = append(out, *p)
		}
	}
	s.budgetMu.RUnlock()
	slices.SortFunc(out, policyOrder)
	return out, nil
}

// AllUsageLimitsPolicies returns every workspace's policies, ordered
// by CreatedAt then ID, for an organisation key's list.
func (s *Store) AllUsageLimitsPolicies(_ context.Context) ([]budget.Policy, error) {
	s.budgetMu.RLock()
	out := make([]budget.Policy, 0, len(s.budgets))
	for _, p := range s.budgets {
		out = append(out, *p)
	}
	s.budgetMu.RUnlock()
	slices.SortFunc(out, policyOrder)
	return out, nil
}

// UsageLimitsPolicy implements budget.Store: a copy.
func (s *Store) UsageLimitsPolicy(_ context.Context, id string) (*budget.Policy, error) {
	s.budgetMu.RLock()
	defer s.budgetMu.RUnlock()
	if p, ok := s.budgets[strings.ToLower(id)]; ok {
		return p.Clone(), nil
	}
	return nil, gateway.ErrNotFound
}

// PutUsageLimitsPolicy implements budget.Store: it creates or
// replaces a copy of p, its id in lower case.
func (s *Store) PutUsageLimitsPolicy(_ context.Context, p *budget.Policy) error {
	c := p.Clone()
	s.budgetMu.Lock()
	defer s.budgetMu.Unlock()
	if s.budgets == nil {
		s.budgets = make(map[string]*budget.Policy)
	}
	s.budgets[c.ID] = c
	return nil
}

// CompareAndSwapUsageLimitsPolicy implements budget.Store.
func (s *Store) CompareAndSwapUsageLimitsPolicy(_ context.Context, old, p *budget.Policy) (bool, error) {
	id := strings.ToLower(old.ID)
	if strings.ToLower(p.ID) != id {
		return false, errors.New("memstore: CompareAndSwapUsageLimitsPolicy of a policy with another id")
	}
	c := p.Clone()
	s.budgetMu.Lock()
	defer s.budgetMu.Unlock()
	cur, ok := s.budgets[id]
	if !ok {
		return false, gateway.ErrNotFound
	}
	if !budget.Equal(cur, old) {
		return false, nil
	}
	s.budgets[id] = c
	return true, nil
}

// policyOrder orders policies as the stores list them: by creation time
// (RFC 3339 in UTC, which sorts as text), then id.
func policyOrder(a, b budget.Policy) int {
	return cmp.Or(strings.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(a.ID, b.ID))
}
