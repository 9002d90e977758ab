package memstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/modelgateway/gateway"
)

// Policies implements gateway.PolicyStore: the policies of workspaceID and those
// of no workspace.
func (s *Store) Policies(_ context.Context, workspaceID string) ([]gateway.RateLimitsPolicy, error) {
	s.mu.RLock()
	var out []gateway.RateLimitsPolicy
	for _, p := range s.policies {
		if p.WorkspaceID == workspaceID || p.WorkspaceID == "" {
			out = append(out, *p)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, rateLimitsOrder)
	return out, nil
}

// AllPolicies returns every policy, ordered by creation time: what an
// organisation key's list of rate-limits policies reads.
func (s *Store) AllPolicies(_ context.Context) ([]gateway.RateLimitsPolicy, error) {
	s.mu.RLock()
	out := make([]gateway.RateLimitsPolicy, 0, len(s.policies))
	for _, p := range s.policies {
		out = append(out, *p)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, rateLimitsOrder)
	return out, nil
}

// Policy implements admin.PolicyStore.
func (s *Store) Policy(_ context.Context, id string) (*gateway.RateLimitsPolicy, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if p, ok := s.policies[strings.ToLower(id)]; ok {
		c := *p
		return &c, nil
	}
	return nil, gateway.ErrNotFound
}

// PutPolicy implements admin.PolicyStore: it creates or replaces a copy of p,
// its id in lower case.
func (s *Store) PutPolicy(_ context.Context, p *gateway.RateLimitsPolicy) error {
	c := clonePolicy(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.policies == nil {
		s.policies = make(map[string]*gateway.RateLimitsPolicy)
	}
	s.policies[c.ID] = c
	return nil
}

// CompareAndSwapPolicy implements admin.PolicyCompareAndSwapper.
func (s *Store) CompareAndSwapPolicy(_ context.Context, old, p *gateway.RateLimitsPolicy) (bool, error) {
	id := strings.ToLower(old.ID)
	if strings.ToLower(p.ID) != id {
		return false, errors.New("gateway: CompareAndSwapPolicy of a policy with another id")
	}
	c := clonePolicy(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.policies[id]
	if !ok {
		return false, gateway.ErrNotFound
	}
	if !policyEqual(cur, old) {
		return false, nil
	}
	s.policies[id] = c
	return true, nil
}

// DeletePolicy implements admin.PolicyStore.
func (s *Store) DeletePolicy(_ context.Context, id string) error {
	id = strings.ToLower(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.policies[id]; !ok {
		return gateway.ErrNotFound
	}
	delete(s.policies, id)
	return nil
}

// clonePolicy returns a copy of p sharing no memory with it, its id in
// lower case.
func clonePolicy(p *gateway.RateLimitsPolicy) *gateway.RateLimitsPolicy {
	c := *p
	c.ID = strings.ToLower(c.ID)
	c.Conditions = slices.Clone(c.Conditions)
	c.GroupBy = slices.Clone(c.GroupBy)
	return &c
}

// policyEqual reports whether a and b are the same in every field but the
// case of their ids.
func policyEqual(a, b *gateway.RateLimitsPolicy) bool {
	return strings.EqualFold(a.ID, b.ID) && a.Name == b.Name &&
		slices.Equal(a.Conditions, b.Conditions) && slices.Equal(a.GroupBy, b.GroupBy) &&
		a.Type == b.Type && a.Unit == b.Unit && a.Value == b.Value && a.Status == b.Status &&
		a.WorkspaceID == b.WorkspaceID && a.OrganisationID == b.OrganisationID &&
		a.CreatedAt == b.CreatedAt && a.LastUpdatedAt == b.LastUpdatedAt
}

// rateLimitsOrder orders policies as the stores list them: by creation time
// (RFC 3339 in UTC, which sorts as text), then id.
func rateLimitsOrder(a, b gateway.RateLimitsPolicy) int {
	return cmp.Or(strings.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(a.ID, b.ID))
}
