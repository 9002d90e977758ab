package memstore

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/prompt"
)

var _ prompt.Store = (*Store)(nil)

// prompts holds the prompt product's records and versions.
type prompts struct {
	mu       sync.RWMutex                // guards the fields below
	records  map[string]*prompt.Record   // by ID
	versions map[string][]prompt.Version // by record ID, oldest first
}

// find returns the record of kind and workspace ws whose ID or slug is
// key. s.mu must be held.
func (s *prompts) find(kind prompt.Kind, ws, key string) *prompt.Record {
	if r, ok := s.records[key]; ok && r.Kind == kind && r.WorkspaceID == ws {
		return r
	}
	for _, r := range s.records {
		if r.Kind == kind && r.WorkspaceID == ws && r.Slug == key {
			return r
		}
	}
	return nil
}

// Record implements prompt.Store.
func (s *Store) Record(_ context.Context, kind prompt.Kind, ws, idOrSlug string) (*prompt.Record, error) {
	s.prompts.mu.RLock()
	defer s.prompts.mu.RUnlock()
	if r := s.prompts.find(kind, ws, idOrSlug); r != nil {
		return r.Clone(), nil
	}
	return nil, gateway.ErrNotFound
}

// Records implements prompt.Store.
func (s *Store) Records(_ context.Context, kind prompt.Kind, ws string) ([]prompt.Record, error) {
	s.prompts.mu.RLock()
	var out []prompt.Record
	for _, r := range s.prompts.records {
		if r.Kind == kind && r.WorkspaceID == ws {
			out = append(out, *r.Clone())
		}
	}
	s.prompts.mu.RUnlock()
	slices.SortFunc(out, func(a, b prompt.Record) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// CreateRecord implements prompt.Store.
func (s *Store) CreateRecord(_ context.Context, rec *prompt.Record, v *prompt.Version) error {
	p := &s.prompts
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.records[rec.ID]; ok || p.find(rec.Kind, rec.WorkspaceID, rec.Slug) != nil {
		return gateway.ErrConflict
	}
	if p.records == nil {
		p.records = map[string]*prompt.Record{}
		p.versions = map[string][]prompt.Version{}
	}
	p.records[rec.ID] = rec.Clone()
	if v != nil {
		p.versions[rec.ID] = []prompt.Version{*v}
	}
	return nil
}

// UpdateRecord implements prompt.Store.
func (s *Store) UpdateRecord(_ context.Context, old, rec *prompt.Record, v *prompt.Version) error {
	p := &s.prompts
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, ok := p.records[old.ID]
	if !ok {
		return gateway.ErrNotFound
	}
	if !cur.UpdatedAt.Equal(old.UpdatedAt) {
		return gateway.ErrConflict
	}
	if o := p.find(rec.Kind, rec.WorkspaceID, rec.Slug); o != nil && o.ID != rec.ID {
		return gateway.ErrConflict
	}
	p.records[old.ID] = rec.Clone()
	if v != nil {
		p.versions[old.ID] = append(p.versions[old.ID], *v)
	}
	return nil
}

// DeleteRecord implements prompt.Store.
func (s *Store) DeleteRecord(_ context.Context, kind prompt.Kind, ws, id string) error {
	p := &s.prompts
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.records[id]; !ok || r.Kind != kind || r.WorkspaceID != ws {
		return gateway.ErrNotFound
	}
	delete(p.records, id)
	delete(p.versions, id)
	return nil
}

// Versions implements prompt.Store.
func (s *Store) Versions(_ context.Context, recordID string) ([]prompt.Version, error) {
	s.prompts.mu.RLock()
	vs := slices.Clone(s.prompts.versions[recordID])
	s.prompts.mu.RUnlock()
	slices.Reverse(vs)
	return vs, nil
}

// Version implements prompt.Store.
func (s *Store) Version(_ context.Context, recordID string, number int) (*prompt.Version, error) {
	s.prompts.mu.RLock()
	defer s.prompts.mu.RUnlock()
	vs := s.prompts.versions[recordID]
	if number < 1 || number > len(vs) {
		return nil, gateway.ErrNotFound
	}
	v := vs[number-1]
	return &v, nil
}
