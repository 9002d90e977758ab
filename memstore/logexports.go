package memstore

import (
	"context"
	"slices"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
)

// memoryExport is a log export a Store keeps, with what it
// produced.
type memoryExport struct {
	export  *observe.Export
	content []byte // never modified once stored: replaced whole
}

// memoryExportsMax is how many log exports a Store keeps: past it,
// the oldest created that is not in progress goes.
const memoryExportsMax = 1000

// CreateLogExport implements observe.ExportStore: it keeps a copy of e, or
// returns gateway.ErrConflict if e.ID is taken. Once the store holds 1,000
// exports, each new one drops the oldest created that is not in
// progress, with its records.
func (s *Store) CreateLogExport(_ context.Context, e *observe.Export) error {
	c := e.Clone()
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if _, ok := s.exports[c.ID]; ok {
		return gateway.ErrConflict
	}
	if s.exports == nil {
		s.exports = make(map[string]*memoryExport)
	}
	if len(s.exports) >= memoryExportsMax {
		var oldest *observe.Export
		for _, m := range s.exports {
			if m.export.Status != observe.ExportInProgress && (oldest == nil || compareExports(*m.export, *oldest) > 0) {
				oldest = m.export
			}
		}
		if oldest != nil {
			delete(s.exports, oldest.ID)
		}
	}
	s.exports[c.ID] = &memoryExport{export: c}
	return nil
}

// LogExport implements observe.ExportStore: a copy the caller may change.
func (s *Store) LogExport(_ context.Context, workspaceID, id string) (*observe.Export, error) {
	s.logMu.RLock()
	defer s.logMu.RUnlock()
	if m, ok := s.exports[id]; ok && (workspaceID == "" || m.export.WorkspaceID == workspaceID) {
		return m.export.Clone(), nil
	}
	return nil, gateway.ErrNotFound
}

// LogExports implements observe.ExportStore: copies, newest first (then by
// id, descending).
func (s *Store) LogExports(_ context.Context, workspaceID string) ([]observe.Export, error) {
	s.logMu.RLock()
	var out []observe.Export
	for _, m := range s.exports {
		if workspaceID == "" || m.export.WorkspaceID == workspaceID {
			out = append(out, *m.export.Clone())
		}
	}
	s.logMu.RUnlock()
	slices.SortFunc(out, compareExports)
	return out, nil
}

// compareExports orders exports as LogExports returns them.
func compareExports(a, b observe.Export) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	switch {
	case a.ID > b.ID:
		return -1
	case a.ID < b.ID:
		return 1
	}
	return 0
}

// UpdateLogExport implements observe.ExportStore: a compare-and-swap on
// Status and UpdatedAt; a non-nil content is kept as a copy.
func (s *Store) UpdateLogExport(_ context.Context, old, e *observe.Export, content []byte) error {
	c := e.Clone()
	if content != nil {
		content = slices.Clone(content)
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	m, ok := s.exports[old.ID]
	switch {
	case !ok:
		return gateway.ErrNotFound
	case c.ID != old.ID || m.export.Status != old.Status || !m.export.UpdatedAt.Equal(old.UpdatedAt):
		return gateway.ErrConflict
	}
	m.export = c
	if content != nil {
		m.content = content
	}
	return nil
}

// LogExportContent implements observe.ExportStore. The content is shared:
// the caller must not modify it.
func (s *Store) LogExportContent(_ context.Context, workspaceID, id string) ([]byte, error) {
	s.logMu.RLock()
	defer s.logMu.RUnlock()
	if m, ok := s.exports[id]; ok && m.content != nil && (workspaceID == "" || m.export.WorkspaceID == workspaceID) {
		return m.content, nil
	}
	return nil, gateway.ErrNotFound
}
