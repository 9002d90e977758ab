package memstore

import (
	"context"
	"sort"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/catalog"
)

// The integrations of the catalog package, and the virtual keys made
// from them (providers): such a key is stored without credentials, and
// found by VirtualKey and VirtualKeyIn joined with its integration
// (catalog.Integration.Join), a copy kept in joined that every write of
// either rebuilds, so that a lookup costs what a virtual key's does; a
// key whose integration is gone or not granted to its workspace is not
// found.

// Integration implements catalog.Store: a copy.
func (s *Store) Integration(_ context.Context, slug string) (*catalog.Integration, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	in, ok := s.integrations[slug]
	if !ok {
		return nil, gateway.ErrNotFound
	}
	return in.Clone(), nil
}

// Integrations implements catalog.Store: copies, oldest first.
func (s *Store) Integrations(_ context.Context) ([]catalog.Integration, error) {
	s.mu.RLock()
	out := make([]catalog.Integration, 0, len(s.integrations))
	for _, in := range s.integrations {
		out = append(out, *in.Clone())
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].Slug < out[j].Slug
	})
	return out, nil
}

// CreateIntegration implements catalog.Store.
func (s *Store) CreateIntegration(_ context.Context, in *catalog.Integration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.integrations[in.Slug]; ok {
		return gateway.ErrConflict
	}
	if s.integrations == nil {
		s.integrations = map[string]*catalog.Integration{}
	}
	s.integrations[in.Slug] = in.Clone()
	s.rejoinLocked()
	return nil
}

// UpdateIntegration implements catalog.Store.
func (s *Store) UpdateIntegration(_ context.Context, old, in *catalog.Integration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.integrations[old.Slug]
	if !ok {
		return gateway.ErrNotFound
	}
	if in.Slug != old.Slug || !cur.UpdatedAt.Equal(old.UpdatedAt) {
		return gateway.ErrConflict
	}
	s.integrations[in.Slug] = in.Clone()
	s.rejoinLocked()
	return nil
}

// DeleteIntegration implements catalog.Store.
func (s *Store) DeleteIntegration(_ context.Context, slug string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.integrations[slug]; !ok {
		return gateway.ErrNotFound
	}
	delete(s.integrations, slug)
	s.rejoinLocked()
	return nil
}

// rejoinLocked rebuilds joined, the virtual keys made from integrations
// as the data plane finds them.
func (s *Store) rejoinLocked() {
	s.joined = nil
	for _, byWS := range s.vkeys {
		for _, vk := range byWS {
			if vk.Integration == "" {
				continue
			}
			in, ok := s.integrations[vk.Integration]
			if !ok {
				continue
			}
			if j, ok := in.Join(vk); ok {
				if s.joined == nil {
					s.joined = map[*gateway.VirtualKey]*gateway.VirtualKey{}
				}
				s.joined[vk] = j
			}
		}
	}
}

// usableLocked returns vk as the data plane uses it: itself, or joined
// with its integration (nil when that finds nothing).
func (s *Store) usableLocked(vk *gateway.VirtualKey) *gateway.VirtualKey {
	if vk.Integration == "" {
		return vk
	}
	return s.joined[vk]
}
