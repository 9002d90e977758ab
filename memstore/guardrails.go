package memstore

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/guardrail"
)

var _ guardrail.AdminStore = (*Store)(nil)

// guardrails are the stored guardrails, by ID.
type guardrails struct {
	mu sync.RWMutex // guards m
	m  map[string]*guardrail.Record
}

// Guardrail returns the guardrail of workspace ws, or of the
// organisation, whose ID or slug is ref.
func (s *Store) Guardrail(ctx context.Context, ws, ref string) (*guardrail.Record, error) {
	s.guardrails.mu.RLock()
	defer s.guardrails.mu.RUnlock()
	if rec, ok := s.guardrails.m[ref]; ok && (rec.WorkspaceID == ws || rec.WorkspaceID == "") {
		return rec, nil
	}
	for _, rec := range s.guardrails.m {
		if rec.Slug == ref && (rec.WorkspaceID == ws || rec.WorkspaceID == "") {
			return rec, nil
		}
	}
	return nil, gateway.ErrNotFound
}

// ListGuardrails returns the guardrails of workspace ws and of the
// organisation, or every one when all is true, newest first.
func (s *Store) ListGuardrails(ctx context.Context, ws string, all bool) ([]*guardrail.Record, error) {
	s.guardrails.mu.RLock()
	var out []*guardrail.Record
	for _, rec := range s.guardrails.m {
		if all || rec.WorkspaceID == ws || rec.WorkspaceID == "" {
			out = append(out, rec)
		}
	}
	s.guardrails.mu.RUnlock()
	slices.SortFunc(out, func(a, b *guardrail.Record) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// PutGuardrail stores a copy of rec, replacing the record of its ID.
func (s *Store) PutGuardrail(ctx context.Context, rec *guardrail.Record) error {
	c := *rec
	c.Checks = slices.Clone(rec.Checks)
	s.guardrails.mu.Lock()
	defer s.guardrails.mu.Unlock()
	for id, o := range s.guardrails.m {
		if id != rec.ID && o.Slug == rec.Slug {
			return gateway.ErrConflict
		}
	}
	if s.guardrails.m == nil {
		s.guardrails.m = make(map[string]*guardrail.Record)
	}
	s.guardrails.m[rec.ID] = &c
	return nil
}

// DeleteGuardrail removes the guardrail of ID id.
func (s *Store) DeleteGuardrail(ctx context.Context, id string) error {
	s.guardrails.mu.Lock()
	defer s.guardrails.mu.Unlock()
	if _, ok := s.guardrails.m[id]; !ok {
		return gateway.ErrNotFound
	}
	delete(s.guardrails.m, id)
	return nil
}
