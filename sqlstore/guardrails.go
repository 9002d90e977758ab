package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/guardrail"
)

var _ guardrail.AdminStore = (*Store)(nil)

// guardrailColumns are the columns of a guardrail row, in the order
// scanGuardrail reads them.
const guardrailColumns = `id, slug, workspace_id, name, checks, actions, stream_mode, on_error, version_id, owner_id, updated_by, created_us, updated_us`

// Guardrail implements guardrail.Store: the guardrail of workspace ws, or
// of the organisation, whose id or slug is ref. It reads the database:
// guardrails are not part of the snapshot yet.
func (s *Store) Guardrail(ctx context.Context, ws, ref string) (*guardrail.Record, error) {
	rec, err := scanGuardrail(s.db.QueryRowContext(ctx, s.dialect.rebind(`SELECT `+guardrailColumns+
		` FROM guardrails WHERE (id = $1 OR slug = $1) AND (workspace_id = $2 OR workspace_id = '')`), ref, ws))
	if notFound(err) {
		return nil, gateway.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading guardrail: %w", err)
	}
	return rec, nil
}

// ListGuardrails implements guardrail.AdminStore.
func (s *Store) ListGuardrails(ctx context.Context, ws string, all bool) ([]*guardrail.Record, error) {
	q, args := `SELECT `+guardrailColumns+` FROM guardrails`, []any{}
	if !all {
		q, args = q+` WHERE workspace_id = $1 OR workspace_id = ''`, append(args, ws)
	}
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(q+` ORDER BY created_us DESC, id`), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading guardrails: %w", err)
	}
	defer rows.Close()
	var out []*guardrail.Record
	for rows.Next() {
		rec, err := scanGuardrail(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: reading guardrails: %w", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: reading guardrails: %w", err)
	}
	return out, nil
}

// PutGuardrail implements guardrail.AdminStore: an insert, or the update
// of the row of rec.ID. A slug another row holds is gateway.ErrConflict.
func (s *Store) PutGuardrail(ctx context.Context, rec *guardrail.Record) error {
	checks, err := json.Marshal(rec.Checks)
	if err != nil {
		return fmt.Errorf("sqlstore: storing guardrail: %w", err)
	}
	actions, err := json.Marshal(rec.Actions)
	if err != nil {
		return fmt.Errorf("sqlstore: storing guardrail: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: storing guardrail: %w", err)
	}
	defer tx.Rollback()
	var other string
	err = tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT id FROM guardrails WHERE slug = $1 AND id <> $2`), rec.Slug, rec.ID).Scan(&other)
	if err == nil {
		return fmt.Errorf("sqlstore: guardrail slug %q is taken: %w", rec.Slug, gateway.ErrConflict)
	} else if !notFound(err) {
		return fmt.Errorf("sqlstore: storing guardrail: %w", err)
	}
	args := []any{rec.ID, rec.Slug, rec.WorkspaceID, rec.Name, string(checks), string(actions), rec.StreamMode, rec.OnError,
		rec.VersionID, rec.OwnerID, rec.UpdatedBy, rec.CreatedAt.UnixMicro(), rec.UpdatedAt.UnixMicro()}
	if _, err := tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO guardrails (`+guardrailColumns+`) VALUES
		($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (id) DO UPDATE SET slug = excluded.slug, workspace_id = excluded.workspace_id, name = excluded.name,
		checks = excluded.checks, actions = excluded.actions, stream_mode = excluded.stream_mode, on_error = excluded.on_error,
		version_id = excluded.version_id, owner_id = excluded.owner_id, updated_by = excluded.updated_by,
		created_us = excluded.created_us, updated_us = excluded.updated_us`), args...); err != nil {
		return fmt.Errorf("sqlstore: storing guardrail: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: storing guardrail: %w", err)
	}
	return nil
}

// DeleteGuardrail implements guardrail.AdminStore.
func (s *Store) DeleteGuardrail(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, s.dialect.rebind(`DELETE FROM guardrails WHERE id = $1`), id)
	if err != nil {
		return fmt.Errorf("sqlstore: deleting guardrail: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return gateway.ErrNotFound
	}
	return nil
}

// scanGuardrail reads one row of guardrailColumns; a missing row is
// sql.ErrNoRows, unwrapped.
func scanGuardrail(row scanner) (*guardrail.Record, error) {
	var (
		rec                guardrail.Record
		checks, actions    string
		created, updatedUS int64
	)
	if err := row.Scan(&rec.ID, &rec.Slug, &rec.WorkspaceID, &rec.Name, &checks, &actions, &rec.StreamMode, &rec.OnError,
		&rec.VersionID, &rec.OwnerID, &rec.UpdatedBy, &created, &updatedUS); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(checks), &rec.Checks); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(actions), &rec.Actions); err != nil {
		return nil, err
	}
	rec.CreatedAt, rec.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updatedUS).UTC()
	return &rec, nil
}
