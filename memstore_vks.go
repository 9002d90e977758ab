package gateway

import (
	"context"
	"slices"
	"sort"
)

// VirtualKey implements VirtualKeyStore: the virtual key of no workspace
// with that slug or, when there is none, the one of the workspace whose
// id sorts first (the gateway then refuses it to callers of other
// workspaces). The key returned is shared and must not be modified.
func (s *MemoryStore) VirtualKey(_ context.Context, slug string) (*VirtualKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	byWS := s.vkeys[slug]
	if vk, ok := byWS[""]; ok {
		return vk, nil
	}
	var found *VirtualKey
	for ws, vk := range byWS {
		if found == nil || ws < found.WorkspaceID {
			found = vk
		}
	}
	if found == nil {
		return nil, ErrNotFound
	}
	return found, nil
}

// VirtualKeyIn implements admin.VirtualKeyStore. The key returned is shared and
// must not be modified.
func (s *MemoryStore) VirtualKeyIn(_ context.Context, workspaceID, slug string) (*VirtualKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if vk, ok := s.vkeys[slug][workspaceID]; ok {
		return vk, nil
	}
	return nil, ErrNotFound
}

// VirtualKeys implements admin.VirtualKeyStore: copies of the virtual keys of
// workspaceID (of every workspace and of none when workspaceID is empty),
// oldest first.
func (s *MemoryStore) VirtualKeys(_ context.Context, workspaceID string) ([]VirtualKey, error) {
	s.mu.RLock()
	var out []VirtualKey
	for _, byWS := range s.vkeys {
		for ws, vk := range byWS {
			if workspaceID == "" || ws == workspaceID {
				c := *vk
				c.AllowedRoutes = slices.Clone(vk.AllowedRoutes)
				out = append(out, c)
			}
		}
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		if out[i].WorkspaceID != out[j].WorkspaceID {
			return out[i].WorkspaceID < out[j].WorkspaceID
		}
		return out[i].Slug < out[j].Slug
	})
	return out, nil
}

// CreateVirtualKey implements admin.VirtualKeyStore: it stores a copy of vk, or
// returns ErrConflict if its workspace already holds its slug.
func (s *MemoryStore) CreateVirtualKey(_ context.Context, vk *VirtualKey) error {
	c := *vk
	c.AllowedRoutes = slices.Clone(vk.AllowedRoutes)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.vkeys[c.Slug][c.WorkspaceID]; ok {
		return ErrConflict
	}
	s.putVirtualKeyLocked(&c)
	return nil
}

// UpdateVirtualKey implements admin.VirtualKeyStore: it replaces the stored
// virtual key with a copy of vk if the stored one still has old's
// UpdatedAt.
func (s *MemoryStore) UpdateVirtualKey(_ context.Context, old, vk *VirtualKey) error {
	c := *vk
	c.AllowedRoutes = slices.Clone(vk.AllowedRoutes)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.vkeys[old.Slug][old.WorkspaceID]
	if !ok {
		return ErrNotFound
	}
	if c.Slug != old.Slug || c.WorkspaceID != old.WorkspaceID || !cur.UpdatedAt.Equal(old.UpdatedAt) {
		return ErrConflict
	}
	s.putVirtualKeyLocked(&c)
	return nil
}

// DeleteVirtualKey implements admin.VirtualKeyStore: the key stops working at
// once.
func (s *MemoryStore) DeleteVirtualKey(_ context.Context, workspaceID, slug string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	byWS := s.vkeys[slug]
	if _, ok := byWS[workspaceID]; !ok {
		return ErrNotFound
	}
	delete(byWS, workspaceID)
	if len(byWS) == 0 {
		delete(s.vkeys, slug)
	}
	return nil
}

// putVirtualKeyLocked stores vk (not copied) under its slug and workspace.
func (s *MemoryStore) putVirtualKeyLocked(vk *VirtualKey) {
	if s.vkeys == nil {
		s.vkeys = make(map[string]map[string]*VirtualKey)
	}
	byWS := s.vkeys[vk.Slug]
	if byWS == nil {
		byWS = make(map[string]*VirtualKey, 1)
		s.vkeys[vk.Slug] = byWS
	}
	byWS[vk.WorkspaceID] = vk
}
