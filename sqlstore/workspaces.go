package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
)

var _ admin.WorkspaceStore = (*Store)(nil)

// workspaceColumns are the columns scanWorkspace reads, in its order.
const workspaceColumns = `id, name, description, metadata, rate_limits, usage_limits, created_at, updated_at`

// Workspace implements admin.WorkspaceStore from the database: a copy
// the caller may change.
func (s *Store) Workspace(ctx context.Context, id string) (*gateway.Workspace, error) {
	return s.workspace(ctx, s.db, id)
}

func (s *Store) workspace(ctx context.Context, q querier, id string) (*gateway.Workspace, error) {
	w, err := scanWorkspace(q.QueryRowContext(ctx, s.dialect.rebind(`SELECT `+workspaceColumns+` FROM workspaces WHERE id = $1`), id))
	if notFound(err) {
		return nil, gateway.ErrNotFound
	}
	return w, err
}

// Workspaces implements admin.WorkspaceStore from the database: every
// workspace, ordered by creation time then id.
func (s *Store) Workspaces(ctx context.Context) ([]gateway.Workspace, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+workspaceColumns+` FROM workspaces ORDER BY created_at NULLS FIRST, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading workspaces: %w", err)
	}
	defer rows.Close()
	var out []gateway.Workspace
	for rows.Next() {
		w, err := scanWorkspace(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: reading workspaces: %w", err)
	}
	return out, nil
}

// CreateWorkspace implements admin.WorkspaceStore: it stores w, or
// returns gateway.ErrConflict if w.ID is taken.
func (s *Store) CreateWorkspace(ctx context.Context, w *gateway.Workspace) error {
	return s.update(ctx, func(tx *sql.Tx) error {
		if _, err := s.workspace(ctx, tx, w.ID); err == nil {
			return fmt.Errorf("sqlstore: workspace %q: %w", w.ID, gateway.ErrConflict)
		} else if err != gateway.ErrNotFound {
			return err
		}
		return s.writeWorkspace(ctx, tx, w)
	})
}

// UpdateWorkspace implements admin.WorkspaceStore: it replaces the
// stored workspace old.ID with w if it still has old's UpdatedAt,
// atomically with respect to every write of every replica.
func (s *Store) UpdateWorkspace(ctx context.Context, old, w *gateway.Workspace) error {
	return s.update(ctx, func(tx *sql.Tx) error {
		cur, err := s.workspace(ctx, tx, old.ID)
		if err != nil {
			return err
		}
		if w.ID != old.ID || !cur.UpdatedAt.Equal(dbTime(old.UpdatedAt)) {
			return fmt.Errorf("sqlstore: workspace %q changed since it was read: %w", old.ID, gateway.ErrConflict)
		}
		return s.writeWorkspace(ctx, tx, w)
	})
}

// DeleteWorkspace implements admin.WorkspaceStore.
func (s *Store) DeleteWorkspace(ctx context.Context, id string) error {
	return s.deleteRow(ctx, "", "", "workspaces", "id = $1", id)
}

// writeWorkspace creates or replaces the row of w.ID.
func (s *Store) writeWorkspace(ctx context.Context, tx *sql.Tx, w *gateway.Workspace) error {
	if w.ID == "" {
		return fmt.Errorf("sqlstore: a workspace needs an id")
	}
	metadata, err := json.Marshal(w.Metadata)
	if err != nil {
		return fmt.Errorf("sqlstore: workspace %q: metadata: %w", w.ID, err)
	}
	_, err = s.exec(ctx, tx, `INSERT INTO workspaces (`+workspaceColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description, metadata = excluded.metadata,
	rate_limits = excluded.rate_limits, usage_limits = excluded.usage_limits, created_at = excluded.created_at,
	updated_at = excluded.updated_at`,
		w.ID, w.Name, w.Description, string(metadata), nullJSON(w.RateLimits), nullJSON(w.UsageLimits),
		nullTime(w.CreatedAt), nullTime(w.UpdatedAt))
	if err != nil {
		return fmt.Errorf("sqlstore: workspace %q: %w", w.ID, err)
	}
	return nil
}

// scanWorkspace reads one row of workspaceColumns; a missing row is
// sql.ErrNoRows, unwrapped.
func scanWorkspace(row scanner) (*gateway.Workspace, error) {
	var (
		w                       gateway.Workspace
		metadata                string
		rateLimits, usageLimits sql.NullString
		created, updated        sql.NullTime
	)
	if err := row.Scan(&w.ID, &w.Name, &w.Description, &metadata, &rateLimits, &usageLimits, &created, &updated); err != nil {
		if notFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("sqlstore: reading workspaces: %w", err)
	}
	if err := json.Unmarshal([]byte(metadata), &w.Metadata); err != nil {
		return nil, fmt.Errorf("sqlstore: workspace %q: metadata: %w", w.ID, err)
	}
	if rateLimits.Valid {
		w.RateLimits = json.RawMessage(rateLimits.String)
	}
	if usageLimits.Valid {
		w.UsageLimits = json.RawMessage(usageLimits.String)
	}
	w.CreatedAt, w.UpdatedAt = fromNullTime(created), fromNullTime(updated)
	return &w, nil
}
