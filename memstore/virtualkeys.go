package memstore

import (
	"context"
	"slices"
	"sort"

	"github.com/modelgateway/gateway"
)

// AddVirtualKey stores vk under its workspace and slug, replacing the
// virtual key stored there.
func (s *Store) AddVirtualKey(vk gateway.VirtualKey) {
	vk.AllowedRoutes = slices.Clone(vk.AllowedRoutes)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putVirtualKeyLocked(&vk)
}

// VirtualKey implements gateway.VirtualKeyStore: the virtual key of no workspace
// with that slug or, when there is none, the one of the workspace whose
// id sorts first (the gateway then refuses it to callers of other
// workspaces). The key returned is shared and must not be modified.
func (s *Store) VirtualKey(_ context.Context, slug string) (*gateway.VirtualKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	byWS := s.vkeys[slug]
	if vk, ok := byWS[""]; ok {
		return vk, nil
	}
	var found *gateway.VirtualKey
	for ws, vk := range byWS {
		if vk = s.usableLocked(vk); vk != nil && (found == nil || ws < found.WorkspaceID) {
			found = vk
		}
	}
	if found == nil {
		return nil, gateway.ErrNotFound
	}
	return found, nil
}

// VirtualKeyIn implements admin.VirtualKeyStore. The key returned is shared and
// must not be modified. A key made from an integration comes joined with
// it, and is not found while the integration is not granted to its
// workspace.
func (s *Store) VirtualKeyIn(_ context.Context, workspaceID, slug string) (*gateway.VirtualKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if vk, ok := s.vkeys[slug][workspaceID]; ok {
		if vk = s.usableLocked(vk); vk != nil {
			return vk, nil
		}
	}
	return nil, gateway.ErrNotFound
}

// VirtualKeys implements admin.VirtualKeyStore: copies of the virtual keys of
// workspaceID (of every workspace and of none when workspaceID is empty),
// oldest first.
func (s *Store) VirtualKeys(_ context.Context, workspaceID string) ([]gateway.VirtualKey, error) {
	s.mu.RLock()
	var out []gateway.VirtualKey
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
// returns gateway.ErrConflict if its workspace already holds its slug.
func (s *Store) CreateVirtualKey(_ context.Context, vk *gateway.VirtualKey) error {
	c := *vk
	c.AllowedRoutes = slices.Clone(vk.AllowedRoutes)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.vkeys[c.Slug][c.WorkspaceID]; ok {
		return gateway.ErrConflict
	}
	s.putVirtualKeyLocked(&c)
	return nil
}

// UpdateVirtualKey implements admin.VirtualKeyStore: it replaces the stored
// virtual key with a copy of vk if the stored one still has old's
// UpdatedAt.
func (s *Store) UpdateVirtualKey(_ context.Context, old, vk *gateway.VirtualKey) error {
	c := *vk
	c.AllowedRoutes = slices.Clone(vk.AllowedRoutes)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.vkeys[old.Slug][old.WorkspaceID]
	if !ok {
		return gateway.ErrNotFound
	}
	if c.Slug != old.Slug || c.WorkspaceID != old.WorkspaceID || !cur.UpdatedAt.Equal(old.UpdatedAt) {
		return gateway.ErrConflict
	}
	s.putVirtualKeyLocked(&c)
	return nil
}

// DeleteVirtualKey implements admin.VirtualKeyStore: the key stops working at
// once.
func (s *Store) DeleteVirtualKey(_ context.Context, workspaceID, slug string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	byWS := s.vkeys[slug]
	if _, ok := byWS[workspaceID]; !ok {
		return gateway.ErrNotFound
	}
	if byWS[workspaceID].Integration != "" {
		defer s.rejoinLocked()
	}
	delete(byWS, workspaceID)
	if len(byWS) == 0 {
		delete(s.vkeys, slug)
	}
	return nil
}

// putVirtualKeyLocked stores vk (not copied) under its slug and
// workspace; one made from an integration without the credentials it
// was read with.
func (s *Store) putVirtualKeyLocked(vk *gateway.VirtualKey) {
	if vk.Integration != "" {
		vk.APIKey, vk.BaseURL, vk.HostSettings, vk.Models, vk.Prices = "", "", gateway.HostSettings{}, nil, nil
		vk.NamedOnly = true
		defer s.rejoinLocked()
	}
	if s.vkeys == nil {
		s.vkeys = make(map[string]map[string]*gateway.VirtualKey)
	}
	byWS := s.vkeys[vk.Slug]
	if byWS == nil {
		byWS = make(map[string]*gateway.VirtualKey, 1)
		s.vkeys[vk.Slug] = byWS
	}
	byWS[vk.WorkspaceID] = vk
}
