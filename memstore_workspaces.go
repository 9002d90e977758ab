package gateway

import (
	"context"
	"sort"
)

// Workspace implements admin.WorkspaceStore: a copy the caller may change.
func (s *MemoryStore) Workspace(_ context.Context, id string) (*Workspace, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if w, ok := s.workspaces[id]; ok {
		return cloneWorkspace(w), nil
	}
	return nil, ErrNotFound
}

// Workspaces implements admin.WorkspaceStore: copies of every workspace, oldest
// first.
func (s *MemoryStore) Workspaces(_ context.Context) ([]Workspace, error) {
	s.mu.RLock()
	out := make([]Workspace, 0, len(s.workspaces))
	for _, w := range s.workspaces {
		out = append(out, *cloneWorkspace(w))
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

// CreateWorkspace implements admin.WorkspaceStore: it stores a copy of w, or
// returns ErrConflict if w.ID is taken.
func (s *MemoryStore) CreateWorkspace(_ context.Context, w *Workspace) error {
	c := cloneWorkspace(w)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.workspaces[c.ID]; ok {
		return ErrConflict
	}
	if s.workspaces == nil {
		s.workspaces = make(map[string]*Workspace)
	}
	s.workspaces[c.ID] = c
	return nil
}

// UpdateWorkspace implements admin.WorkspaceStore: it replaces the stored
// workspace old.ID with a copy of w if it still has old's UpdatedAt.
func (s *MemoryStore) UpdateWorkspace(_ context.Context, old, w *Workspace) error {
	c := cloneWorkspace(w)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.workspaces[old.ID]
	if !ok {
		return ErrNotFound
	}
	if c.ID != old.ID || !cur.UpdatedAt.Equal(old.UpdatedAt) {
		return ErrConflict
	}
	s.workspaces[c.ID] = c
	return nil
}

// DeleteWorkspace implements admin.WorkspaceStore.
func (s *MemoryStore) DeleteWorkspace(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.workspaces[id]; !ok {
		return ErrNotFound
	}
	delete(s.workspaces, id)
	return nil
}
