package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
)

var _ observe.ExportStore = (*Store)(nil)

// exportColumns are the columns of a log export scanLogExport reads, in
// its order (content aside).
const exportColumns = `id, workspace_id, created_by, filters, fields, status, description, total, created_us, updated_us`

// CreateLogExport implements observe.ExportStore: it stores e, or
// returns gateway.ErrConflict if e.ID is taken. Exports are not part of
// the snapshot: the write does not move the generation.
func (s *Store) CreateLogExport(ctx context.Context, e *observe.Export) error {
	fields, err := exportFieldsJSON(e)
	if err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, s.dialect.rebind(`INSERT INTO log_exports (`+exportColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`),
		e.ID, e.WorkspaceID, e.CreatedBy, exportFilters(e), fields, string(e.Status), e.Description, e.Total,
		e.CreatedAt.UnixMicro(), e.UpdatedAt.UnixMicro())
	if err != nil {
		return fmt.Errorf("sqlstore: log export %q: %w", e.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlstore: log export %q: %w", e.ID, err)
	} else if n == 0 {
		return fmt.Errorf("sqlstore: log export %q: %w", e.ID, gateway.ErrConflict)
	}
	return nil
}

// LogExport implements observe.ExportStore from the database: a copy
// the caller may change.
func (s *Store) LogExport(ctx context.Context, workspaceID, id string) (*observe.Export, error) {
	e, err := scanLogExport(s.db.QueryRowContext(ctx, s.dialect.rebind(`SELECT `+exportColumns+` FROM log_exports
WHERE id = $1 AND ($2 = '' OR workspace_id = $2)`), id, workspaceID))
	if notFound(err) {
		return nil, gateway.ErrNotFound
	}
	return e, err
}

// LogExports implements observe.ExportStore from the database: the
// exports of workspaceID (every one when it is empty), newest first,
// then by id, descending.
func (s *Store) LogExports(ctx context.Context, workspaceID string) ([]observe.Export, error) {
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(`SELECT `+exportColumns+` FROM log_exports
WHERE $1 = '' OR workspace_id = $1 ORDER BY created_us DESC, id DESC`), workspaceID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading log exports: %w", err)
	}
	defer rows.Close()
	var out []observe.Export
	for rows.Next() {
		e, err := scanLogExport(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: reading log exports: %w", err)
	}
	return out, nil
}

// UpdateLogExport implements observe.ExportStore: one UPDATE that
// replaces the row of old.ID with e only while it still holds old's
// status and updated_us, so that the compare-and-swap is atomic across
// every replica without a transaction of its own. A non-nil content is
// stored with it.
func (s *Store) UpdateLogExport(ctx context.Context, old, e *observe.Export, content []byte) error {
	if e.ID != old.ID {
		return fmt.Errorf("sqlstore: log export %q: %w", old.ID, gateway.ErrConflict)
	}
	fields, err := exportFieldsJSON(e)
	if err != nil {
		return err
	}
	set, args := ``, []any{old.ID, string(old.Status), old.UpdatedAt.UnixMicro(), e.WorkspaceID, e.CreatedBy,
		exportFilters(e), fields, string(e.Status), e.Description, e.Total, e.CreatedAt.UnixMicro(), e.UpdatedAt.UnixMicro()}
	if content != nil {
		set, args = `, content = $13`, append(args, content)
	}
	res, err := s.db.ExecContext(ctx, s.dialect.rebind(`UPDATE log_exports SET workspace_id = $4, created_by = $5, filters = $6,
	fields = $7, status = $8, description = $9, total = $10, created_us = $11, updated_us = $12`+set+`
WHERE id = $1 AND status = $2 AND updated_us = $3`), args...)
	if err != nil {
		return fmt.Errorf("sqlstore: log export %q: %w", old.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlstore: log export %q: %w", old.ID, err)
	}
	if n == 0 {
		if _, err := s.LogExport(ctx, "", old.ID); err != nil {
			return err
		}
		return fmt.Errorf("sqlstore: log export %q changed since it was read: %w", old.ID, gateway.ErrConflict)
	}
	return nil
}

// LogExportContent implements observe.ExportStore from the database.
func (s *Store) LogExportContent(ctx context.Context, workspaceID, id string) ([]byte, error) {
	var content []byte
	err := s.db.QueryRowContext(ctx, s.dialect.rebind(`SELECT content FROM log_exports
WHERE id = $1 AND ($2 = '' OR workspace_id = $2) AND content IS NOT NULL`), id, workspaceID).Scan(&content)
	switch {
	case notFound(err):
		return nil, gateway.ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("sqlstore: log export %q: %w", id, err)
	}
	return content, nil
}

// exportFilters is e's filters as the column holds them.
func exportFilters(e *observe.Export) string {
	if len(e.Filters) == 0 {
		return "{}"
	}
	return string(e.Filters)
}

// exportFieldsJSON is e's fields as the column holds them.
func exportFieldsJSON(e *observe.Export) (string, error) {
	fields := e.Fields
	if fields == nil {
		fields = []string{}
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return "", fmt.Errorf("sqlstore: log export %q: fields: %w", e.ID, err)
	}
	return string(b), nil
}

// scanLogExport reads one row of exportColumns; a missing row is
// sql.ErrNoRows, unwrapped.
func scanLogExport(row scanner) (*observe.Export, error) {
	var (
		e                  observe.Export
		filters, fields    string
		status             string
		created, updated   int64
		workspace, creator sql.NullString
	)
	if err := row.Scan(&e.ID, &workspace, &creator, &filters, &fields, &status, &e.Description, &e.Total, &created, &updated); err != nil {
		if notFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("sqlstore: reading log exports: %w", err)
	}
	e.WorkspaceID, e.CreatedBy, e.Status = workspace.String, creator.String, observe.ExportStatus(status)
	e.Filters = json.RawMessage(filters)
	if err := json.Unmarshal([]byte(fields), &e.Fields); err != nil {
		return nil, fmt.Errorf("sqlstore: log export %q: fields: %w", e.ID, err)
	}
	e.CreatedAt, e.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return &e, nil
}
