package observe

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// ExportStatus is where a log export is in its lifecycle: draft until
// it is started, in_progress while a gateway runs it, then success,
// failed or stopped (cancelled). The last three are final: an export
// that reached one of them is never run again.
type ExportStatus string

// The statuses of a log export, as the reference names them.
const (
	ExportDraft      ExportStatus = "draft"
	ExportInProgress ExportStatus = "in_progress"
	ExportSuccess    ExportStatus = "success"
	ExportFailed     ExportStatus = "failed"
	ExportStopped    ExportStatus = "stopped"
)

// Final reports whether s is a status an export never leaves.
func (s ExportStatus) Final() bool {
	return s == ExportSuccess || s == ExportFailed || s == ExportStopped
}

// Export is a request-log export of /logs/exports: which records
// (Filters, the reference's GenerationsFilterSchema as the caller gave
// it, once checked), which of their fields (Fields, names of the records
// GET /logs answers), and the state of the job that writes them out.
//
// The records an export produced are kept by the ExportStore beside
// it (see ExportStore.UpdateLogExport), not in this struct.
type Export struct {
	ID          string
	WorkspaceID string // the workspace whose records it exports; "" for every workspace (an organisation key's)
	CreatedBy   string // the id of the API key that created it
	Filters     json.RawMessage
	Fields      []string
	Status      ExportStatus
	Description string // what became of the job, for people
	Total       int64  // records selected (draft) or written (success)
	CreatedAt   time.Time
	UpdatedAt   time.Time // moved by every change, and by a running job now and then
}

// Clone returns a copy of e sharing no memory with it.
func (e *Export) Clone() *Export {
	c := *e
	c.Filters = slices.Clone(e.Filters)
	c.Fields = slices.Clone(e.Fields)
	return &c
}

// ExportStore keeps the log exports of /logs/exports (Options.Exports)
// and the records each produced. memstore.Store implements it; the sqlstore
// sub-module keeps them in SQLite or Postgres, so that every replica sees
// a job another started, and can serve its download.
//
// Export returns the export id of workspace workspaceID (of any
// workspace when it is empty), or ErrNotFound. LogExports returns the
// exports of workspaceID (every export when it is empty), newest first.
// CreateLogExport stores e, or returns ErrConflict if e.ID is taken.
//
// UpdateLogExport replaces the stored export old.ID with e if the stored
// one still has old's Status and UpdatedAt (ErrConflict otherwise,
// ErrNotFound if it is gone): a compare-and-swap, atomic across every
// replica, so that a cancel and the job's own progress never overwrite
// each other. A non-nil content becomes the export's produced records
// (gzip-compressed JSON Lines; opaque to the store). LogExportContent
// returns them, or ErrNotFound when the export is unknown or has none.
//
// Implementations must be safe for concurrent use, and must not keep or
// modify the values passed in or returned.
type ExportStore interface {
	CreateLogExport(ctx context.Context, e *Export) error
	LogExport(ctx context.Context, workspaceID, id string) (*Export, error)
	LogExports(ctx context.Context, workspaceID string) ([]Export, error)
	UpdateLogExport(ctx context.Context, old, e *Export, content []byte) error
	LogExportContent(ctx context.Context, workspaceID, id string) ([]byte, error)
}
