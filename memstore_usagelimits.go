package gateway

import (
	"context"
	"errors"
	"slices"
	"strings"
)

var _ UsageLimitsStore = (*MemoryStore)(nil)

// UsageLimitsPolicies implements UsageLimitsStore: the policies of
// workspaceID, oldest first, in a new slice. Their Conditions, GroupBy and
// AlertThreshold are shared with the store, which never changes them
// (every write stores a copy).
func (s *MemoryStore) UsageLimitsPolicies(_ context.Context, workspaceID string) ([]UsageLimitsPolicy, error) {
	s.mu.RLock()
	var out []UsageLimitsPolicy
	for _, p := range s.budgets {
		if p.WorkspaceID == workspaceID {
			out = append(out, *p)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, usagePolicyOrder)
	return out, nil
}

// AllUsageLimitsPolicies implements allUsageLimitsLister: every policy,
// ordered by CreatedAt then ID.
func (s *MemoryStore) AllUsageLimitsPolicies(_ context.Context) ([]UsageLimitsPolicy, error) {
	s.mu.RLock()
	out := make([]UsageLimitsPolicy, 0, len(s.budgets))
	for _, p := range s.budgets {
		out = append(out, *p)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, usagePolicyOrder)
	return out, nil
}

// UsageLimitsPolicy implements UsageLimitsStore: a copy.
func (s *MemoryStore) UsageLimitsPolicy(_ context.Context, id string) (*UsageLimitsPolicy, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if p, ok := s.budgets[strings.ToLower(id)]; ok {
		return cloneUsageLimits(p), nil
	}
	return nil, ErrNotFound
}

// PutUsageLimitsPolicy implements UsageLimitsStore: it creates or
// replaces a copy of p, its id in lower case.
func (s *MemoryStore) PutUsageLimitsPolicy(_ context.Context, p *UsageLimitsPolicy) error {
	c := cloneUsageLimits(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.budgets == nil {
		s.budgets = make(map[string]*UsageLimitsPolicy)
	}
	s.budgets[c.ID] = c
	return nil
}

// CompareAndSwapUsageLimitsPolicy implements UsageLimitsStore.
func (s *MemoryStore) CompareAndSwapUsageLimitsPolicy(_ context.Context, old, p *UsageLimitsPolicy) (bool, error) {
	id := strings.ToLower(old.ID)
	if strings.ToLower(p.ID) != id {
		return false, errors.New("gateway: CompareAndSwapUsageLimitsPolicy of a policy with another id")
	}
	c := cloneUsageLimits(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.budgets[id]
	if !ok {
		return false, ErrNotFound
	}
	if !UsageLimitsEqual(cur, old) {
		return false, nil
	}
	s.budgets[id] = c
	return true, nil
}
