package memstore

import (
	"context"
	"sort"

	"github.com/modelgateway/gateway"
)

// Workspace implements admin.WorkspaceStore: a copy the caller may change.
func (s *Store) Workspace(_ context.Context, id string) (*gateway.Workspace, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if w, ok := s.workspaces[id]; ok {
		return w.Clone(), nil
	}
	return nil, gateway.ErrNotFound
}

// Workspaces implements admin.WorkspaceStore: copies of every workspace, oldest
// first.
func (s *Store) Workspaces(_ context.Context) ([]gateway.Workspace, error) {
	s.mu.RLock()
	out := make([]gateway.Workspace, 0, len(s.workspaces))
	for _, w := range s.workspaces {
		out = append(out, *w.Clone())
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
// returns gateway.ErrConflict if w.ID is taken.
func (s *Store) CreateWorkspace(_ context.Context, w *gateway.Workspace) error {
	c := w.Clone()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.workspaces[c.ID]; ok {
		return gateway.ErrConflict
	}
	if s.workspaces == nil {
		s.workspaces = make(map[string]*gateway.Workspace)
	}
	s.workspaces[c.ID] = c
	return nil
}

// UpdateWorkspace implements admin.WorkspaceStore: it replaces the stored
// workspace old.ID with a copy of w if it still has old's UpdatedAt.
func (s *Store) UpdateWorkspace(_ context.Context, old, w *gateway.Workspace) error {
	c := w.Clone()
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.workspaces[old.ID]
	if !ok {
		return gateway.ErrNotFound
	}
	if c.ID != old.ID || !cur.UpdatedAt.Equal(old.UpdatedAt) {
		return gateway.ErrConflict
	}
	s.workspaces[c.ID] = c
	return nil
}

// DeleteWorkspace implements admin.WorkspaceStore.
func (s *Store) DeleteWorkspace(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.workspaces[id]; !ok {
		return gateway.ErrNotFound
	}
	delete(s.workspaces, id)
	return nil
}
