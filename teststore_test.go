package gateway

import (
	"cmp"
	"context"
	"crypto/sha256"
	"slices"
	"strings"
	"sync"
)

// testStore is the in-package tests' store of the data plane's read side
// (KeyStore, VirtualKeyStore, ConfigStore, PolicyStore, and the lookups
// of a workspace's own records), filled by its Add and Put methods. The
// tests of the stores themselves are memstore's.
type testStore struct {
	mu       sync.RWMutex
	keys     map[[sha256.Size]byte]APIKey
	vkeys    map[recordKey]*VirtualKey
	configs  map[recordKey]*SavedConfig
	policies map[string]RateLimitsPolicy // by lower-case id
}

// recordKey is a virtual key's slug, or a config's id, in a workspace.
type recordKey struct{ id, workspace string }

var (
	_ KeyStore        = (*testStore)(nil)
	_ VirtualKeyStore = (*testStore)(nil)
	_ ConfigStore     = (*testStore)(nil)
	_ PolicyStore     = (*testStore)(nil)
	_ virtualKeyIn    = (*testStore)(nil)
	_ configIn        = (*testStore)(nil)
)

func (s *testStore) AddAPIKey(k APIKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[[sha256.Size]byte]APIKey)
	}
	s.keys[k.Digest] = k
}

func (s *testStore) AddVirtualKey(vk VirtualKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vkeys == nil {
		s.vkeys = make(map[recordKey]*VirtualKey)
	}
	s.vkeys[recordKey{vk.Slug, vk.WorkspaceID}] = &vk
}

func (s *testStore) AddConfig(c SavedConfig) {
	if c.Version == 0 {
		c.Version = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.configs == nil {
		s.configs = make(map[recordKey]*SavedConfig)
	}
	s.configs[recordKey{c.ID, c.WorkspaceID}] = &c
}

func (s *testStore) PutPolicy(_ context.Context, p *RateLimitsPolicy) error {
	c := *p
	c.ID = strings.ToLower(c.ID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.policies == nil {
		s.policies = make(map[string]RateLimitsPolicy)
	}
	s.policies[c.ID] = c
	return nil
}

func (s *testStore) APIKey(_ context.Context, digest [sha256.Size]byte) (*APIKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if k, ok := s.keys[digest]; ok {
		return &k, nil
	}
	return nil, ErrNotFound
}

// find returns the record of no workspace under id or, when there is
// none, the one of the workspace whose id sorts first, as memstore does.
func find[T any](m map[recordKey]*T, id string) (*T, error) {
	var found *T
	ws := ""
	for k, v := range m {
		if k.id == id && (found == nil || k.workspace < ws) {
			found, ws = v, k.workspace
		}
	}
	if found == nil {
		return nil, ErrNotFound
	}
	return found, nil
}

func (s *testStore) VirtualKey(_ context.Context, slug string) (*VirtualKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return find(s.vkeys, slug)
}

func (s *testStore) VirtualKeyIn(_ context.Context, workspaceID, slug string) (*VirtualKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if vk, ok := s.vkeys[recordKey{slug, workspaceID}]; ok {
		return vk, nil
	}
	return nil, ErrNotFound
}

func (s *testStore) Config(_ context.Context, id string) (*SavedConfig, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return find(s.configs, id)
}

func (s *testStore) ConfigIn(_ context.Context, workspaceID, id string) (*SavedConfig, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if c, ok := s.configs[recordKey{id, workspaceID}]; ok {
		return c, nil
	}
	return nil, ErrNotFound
}

func (s *testStore) Policies(_ context.Context, workspaceID string) ([]RateLimitsPolicy, error) {
	s.mu.RLock()
	var out []RateLimitsPolicy
	for _, p := range s.policies {
		if p.WorkspaceID == workspaceID || p.WorkspaceID == "" {
			out = append(out, p)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b RateLimitsPolicy) int {
		return cmp.Or(strings.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}
