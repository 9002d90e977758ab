package memstore

import (
	"bytes"
	"context"
	"slices"
	"sort"

	"github.com/modelgateway/gateway"
)

// configHistory is a stored config: its versions, oldest first; the last
// is the current config.
type configHistory struct {
	versions []*gateway.SavedConfig
}

func (h *configHistory) current() *gateway.SavedConfig { return h.versions[len(h.versions)-1] }

// AddConfig stores c under its workspace and id, replacing the config
// stored there and its versions: c becomes the only version (Version 1
// when c.Version is 0).
func (s *Store) AddConfig(c gateway.SavedConfig) {
	if c.Version == 0 {
		c.Version = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putConfigLocked(&configHistory{versions: []*gateway.SavedConfig{&c}})
}

// Config implements gateway.ConfigStore: the config of no workspace with that id
// or, when there is none, the one of the workspace whose id sorts first
// (the gateway then refuses it to callers of other workspaces). The config
// returned is shared and must not be modified.
func (s *Store) Config(_ context.Context, id string) (*gateway.SavedConfig, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	byWS := s.configs[id]
	if h, ok := byWS[""]; ok {
		return h.current(), nil
	}
	var found *gateway.SavedConfig
	for ws, h := range byWS {
		if found == nil || ws < found.WorkspaceID {
			found = h.current()
		}
	}
	if found == nil {
		return nil, gateway.ErrNotFound
	}
	return found, nil
}

// ConfigIn implements admin.ConfigStore. The config returned is shared and must
// not be modified.
func (s *Store) ConfigIn(_ context.Context, workspaceID, id string) (*gateway.SavedConfig, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if h, ok := s.configs[id][workspaceID]; ok {
		return h.current(), nil
	}
	return nil, gateway.ErrNotFound
}

// Configs implements admin.ConfigStore: copies of the current configs of
// workspaceID (of every workspace and of none when workspaceID is empty),
// oldest first.
func (s *Store) Configs(_ context.Context, workspaceID string) ([]gateway.SavedConfig, error) {
	s.mu.RLock()
	var out []gateway.SavedConfig
	for _, byWS := range s.configs {
		for ws, h := range byWS {
			if workspaceID == "" || ws == workspaceID {
				out = append(out, *cloneSavedConfig(h.current()))
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
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// ConfigVersions implements admin.ConfigStore: copies of every version, newest
// first.
func (s *Store) ConfigVersions(_ context.Context, workspaceID, id string) ([]gateway.SavedConfig, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.configs[id][workspaceID]
	if !ok {
		return nil, gateway.ErrNotFound
	}
	out := make([]gateway.SavedConfig, len(h.versions))
	for i, v := range h.versions {
		out[len(out)-1-i] = *cloneSavedConfig(v)
	}
	return out, nil
}

// CreateConfig implements admin.ConfigStore: it stores a copy of c as its first
// version, or returns gateway.ErrConflict if its workspace already holds its id.
func (s *Store) CreateConfig(_ context.Context, c *gateway.SavedConfig) error {
	v := cloneSavedConfig(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.configs[v.ID][v.WorkspaceID]; ok {
		return gateway.ErrConflict
	}
	s.putConfigLocked(&configHistory{versions: []*gateway.SavedConfig{v}})
	return nil
}

// UpdateConfig implements admin.ConfigStore: it adds a copy of c as the newest
// version if the current one still has old's Version and UpdatedAt.
func (s *Store) UpdateConfig(_ context.Context, old, c *gateway.SavedConfig) error {
	v := cloneSavedConfig(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.configs[old.ID][old.WorkspaceID]
	if !ok {
		return gateway.ErrNotFound
	}
	cur := h.current()
	if v.ID != old.ID || v.WorkspaceID != old.WorkspaceID || cur.Version != old.Version ||
		!cur.UpdatedAt.Equal(old.UpdatedAt) || v.Version != cur.Version+1 {
		return gateway.ErrConflict
	}
	// A new slice, so that a reader holding the old one is not disturbed.
	h2 := &configHistory{versions: append(slices.Clip(h.versions), v)}
	s.putConfigLocked(h2)
	return nil
}

// DeleteConfig implements admin.ConfigStore: the config and its versions are
// gone at once.
func (s *Store) DeleteConfig(_ context.Context, workspaceID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	byWS := s.configs[id]
	if _, ok := byWS[workspaceID]; !ok {
		return gateway.ErrNotFound
	}
	delete(byWS, workspaceID)
	if len(byWS) == 0 {
		delete(s.configs, id)
	}
	return nil
}

// putConfigLocked stores h (not copied) under the id and workspace of its
// current version.
func (s *Store) putConfigLocked(h *configHistory) {
	c := h.current()
	if s.configs == nil {
		s.configs = make(map[string]map[string]*configHistory)
	}
	byWS := s.configs[c.ID]
	if byWS == nil {
		byWS = make(map[string]*configHistory, 1)
		s.configs[c.ID] = byWS
	}
	byWS[c.WorkspaceID] = h
}

// cloneSavedConfig returns a copy of c sharing no memory with it.
func cloneSavedConfig(c *gateway.SavedConfig) *gateway.SavedConfig {
	v := *c
	v.Config = bytes.Clone(c.Config)
	return &v
}
