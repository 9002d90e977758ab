package gateway

import (
	"context"
	"slices"
)

// memoryExport is a log export a MemoryStore keeps, with what it
// produced.
type memoryExport struct {
	export  *LogExport
	content []byte // never modified once stored: replaced whole
}

var _ LogExportStore = (*MemoryStore)(nil)

// memoryExportsMax is how many log exports a MemoryStore keeps: past it,
// the oldest created that is not in progress goes.
const memoryExportsMax = 1000

// CreateLogExport implements LogExportStore: it keeps a copy of e, or
// returns ErrConflict if e.ID is taken. Once the store holds 1,000
// exports, each new one drops the oldest created that is not in
// progress, with its records.
func (s *MemoryStore) CreateLogExport(_ context.Context, e *LogExport) error {
	c := cloneLogExport(e)
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if _, ok := s.exports[c.ID]; ok {
		return ErrConflict
	}
	if s.exports == nil {
		s.exports = make(map[string]*memoryExport)
	}
	if len(s.exports) >= memoryExportsMax {
		var oldest *LogExport
		for _, m := range s.exports {
			if m.export.Status != ExportInProgress && (oldest == nil || compareExports(*m.export, *oldest) > 0) {
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

// LogExport implements LogExportStore: a copy the caller may change.
func (s *MemoryStore) LogExport(_ context.Context, workspaceID, id string) (*LogExport, error) {
	s.logMu.RLock()
	defer s.logMu.RUnlock()
	if m, ok := s.exports[id]; ok && (workspaceID == "" || m.export.WorkspaceID == workspaceID) {
		return cloneLogExport(m.export), nil
	}
	return nil, ErrNotFound
}

// LogExports implements LogExportStore: copies, newest first (then by
// id, descending).
func (s *MemoryStore) LogExports(_ context.Context, workspaceID string) ([]LogExport, error) {
	s.logMu.RLock()
	var out []LogExport
	for _, m := range s.exports {
		if workspaceID == "" || m.export.WorkspaceID == workspaceID {
			out = append(out, *cloneLogExport(m.export))
		}
	}
	s.logMu.RUnlock()
	slices.SortFunc(out, compareExports)
	return out, nil
}

// compareExports orders exports as LogExports returns them.
func compareExports(a, b LogExport) int {
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

// UpdateLogExport implements LogExportStore: a compare-and-swap on
// Status and UpdatedAt; a non-nil content is kept as a copy.
func (s *MemoryStore) UpdateLogExport(_ context.Context, old, e *LogExport, content []byte) error {
	c := cloneLogExport(e)
	if content != nil {
		content = slices.Clone(content)
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	m, ok := s.exports[old.ID]
	switch {
	case !ok:
		return ErrNotFound
	case c.ID != old.ID || m.export.Status != old.Status || !m.export.UpdatedAt.Equal(old.UpdatedAt):
		return ErrConflict
	}
	m.export = c
	if content != nil {
		m.content = content
	}
	return nil
}

// LogExportContent implements LogExportStore. The content is shared:
// the caller must not modify it.
func (s *MemoryStore) LogExportContent(_ context.Context, workspaceID, id string) ([]byte, error) {
	s.logMu.RLock()
	defer s.logMu.RUnlock()
	if m, ok := s.exports[id]; ok && m.content != nil && (workspaceID == "" || m.export.WorkspaceID == workspaceID) {
		return m.content, nil
	}
	return nil, ErrNotFound
}
