package memstore

import (
	"context"
	"crypto/sha256"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/modelgateway/gateway"
)

// AddAPIKey stores k under k.Digest.
func (s *Store) AddAPIKey(k gateway.APIKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[[sha256.Size]byte]*gateway.APIKey)
	}
	s.keys[k.Digest] = &k
}

// APIKey implements gateway.KeyStore. A rotated key is also found by its
// previous digest until its PreviousValidUntil. The key returned is
// shared and must not be modified.
func (s *Store) APIKey(_ context.Context, digest [sha256.Size]byte) (*gateway.APIKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if k, ok := s.keys[digest]; ok {
		return k, nil
	}
	if k, ok := s.prevKeys[digest]; ok && time.Now().Before(k.PreviousValidUntil) {
		return k, nil
	}
	return nil, gateway.ErrNotFound
}

// APIKeyByID implements admin.KeyStore. It returns a copy the caller may
// change. The lookup walks every key: the control plane is not a hot
// path.
func (s *Store) APIKeyByID(_ context.Context, id string) (*gateway.APIKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if k := s.keyByIDLocked(id); k != nil {
		return cloneAPIKey(k), nil
	}
	return nil, gateway.ErrNotFound
}

// APIKeys implements admin.KeyStore: copies of the keys of workspaceID (of
// every workspace and of none when workspaceID is empty), oldest first.
func (s *Store) APIKeys(_ context.Context, workspaceID string) ([]gateway.APIKey, error) {
	s.mu.RLock()
	out := make([]gateway.APIKey, 0, len(s.keys))
	for _, k := range s.keys {
		if workspaceID == "" || k.WorkspaceID == workspaceID {
			out = append(out, *cloneAPIKey(k))
		}
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// CreateAPIKey implements admin.KeyStore: it stores a copy of k, or returns
// gateway.ErrConflict if k.ID or k.Digest is taken.
func (s *Store) CreateAPIKey(_ context.Context, k *gateway.APIKey) error {
	c := cloneAPIKey(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keyByIDLocked(c.ID) != nil || s.digestTakenLocked(c.Digest, "") {
		return gateway.ErrConflict
	}
	if s.keys == nil {
		s.keys = make(map[[sha256.Size]byte]*gateway.APIKey)
	}
	s.keys[c.Digest] = c
	s.indexPreviousLocked(c)
	return nil
}

// UpdateAPIKey implements admin.KeyStore: it replaces the stored key old.ID
// with a copy of k if the stored key still has old's Digest and UpdatedAt.
func (s *Store) UpdateAPIKey(_ context.Context, old, k *gateway.APIKey) error {
	c := cloneAPIKey(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.keyByIDLocked(old.ID)
	if cur == nil {
		return gateway.ErrNotFound
	}
	if c.ID != old.ID || cur.Digest != old.Digest || !cur.UpdatedAt.Equal(old.UpdatedAt) ||
		s.digestTakenLocked(c.Digest, c.ID) {
		return gateway.ErrConflict
	}
	s.removeLocked(cur)
	s.keys[c.Digest] = c
	s.indexPreviousLocked(c)
	return nil
}

// DeleteAPIKey implements admin.KeyStore: the key stops working at once,
// its previous digest too.
func (s *Store) DeleteAPIKey(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.keyByIDLocked(id)
	if cur == nil {
		return gateway.ErrNotFound
	}
	s.removeLocked(cur)
	return nil
}

func (s *Store) keyByIDLocked(id string) *gateway.APIKey {
	for _, k := range s.keys {
		if k.ID == id {
			return k
		}
	}
	return nil
}

// digestTakenLocked reports whether d is the current or previous digest of
// a key other than the one with id except.
func (s *Store) digestTakenLocked(d [sha256.Size]byte, except string) bool {
	if k, ok := s.keys[d]; ok && k.ID != except {
		return true
	}
	k, ok := s.prevKeys[d]
	return ok && k.ID != except
}

func (s *Store) removeLocked(k *gateway.APIKey) {
	delete(s.keys, k.Digest)
	if p, ok := s.prevKeys[k.PreviousDigest]; ok && p.ID == k.ID {
		delete(s.prevKeys, k.PreviousDigest)
	}
}

// indexPreviousLocked makes k findable by its previous digest while it
// has one. An entry past its deadline stays until the key next changes;
// APIKey ignores it.
func (s *Store) indexPreviousLocked(k *gateway.APIKey) {
	if k.PreviousValidUntil.IsZero() {
		return
	}
	if s.prevKeys == nil {
		s.prevKeys = make(map[[sha256.Size]byte]*gateway.APIKey)
	}
	s.prevKeys[k.PreviousDigest] = k
}

// cloneAPIKey returns a copy of k sharing no memory with it.
func cloneAPIKey(k *gateway.APIKey) *gateway.APIKey {
	c := *k
	c.Scopes = slices.Clone(k.Scopes)
	c.Metadata = maps.Clone(k.Metadata)
	c.RateLimits = slices.Clone(k.RateLimits)
	c.UsageLimits = slices.Clone(k.UsageLimits)
	c.InputGuardrails = slices.Clone(k.InputGuardrails)
	c.OutputGuardrails = slices.Clone(k.OutputGuardrails)
	return &c
}
