package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/prompt"
)

var _ prompt.Store = (*Store)(nil)

// The prompt product's records live in prompt_records and
// prompt_versions, outside the snapshot: every read goes to the
// database, and writes do not move the generation, so replicas see them
// at once.

// The reads every prompt completion makes (a record by ID or slug, then
// one version), prepared once by Open: parsing them again per request
// cost SQLite more than running them.
const (
	promptRecordSQL = `SELECT id, data FROM prompt_records
WHERE kind = $1 AND workspace_id = $2 AND (id = $3 OR slug = $3)`
	promptVersionSQL = `SELECT data FROM prompt_versions WHERE record_id = $1 AND number = $2`
)

// Record implements prompt.Store: the record of kind and workspace whose
// ID, else whose slug, is idOrSlug.
func (s *Store) Record(ctx context.Context, kind prompt.Kind, workspaceID, idOrSlug string) (*prompt.Record, error) {
	rows, err := s.stmts[promptRecordSQL].QueryContext(ctx, string(kind), workspaceID, idOrSlug)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading a %s: %w", kind, err)
	}
	defer rows.Close()
	var found *prompt.Record
	for rows.Next() {
		var id, data string
		if err := rows.Scan(&id, &data); err != nil {
			return nil, fmt.Errorf("sqlstore: reading a %s: %w", kind, err)
		}
		if found != nil && id != idOrSlug {
			continue // the record whose ID it is wins over one whose slug it is
		}
		var r prompt.Record
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			return nil, fmt.Errorf("sqlstore: %s %q: %w", kind, id, err)
		}
		found = &r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: reading a %s: %w", kind, err)
	}
	if found == nil {
		return nil, gateway.ErrNotFound
	}
	return found, nil
}

// Records implements prompt.Store.
func (s *Store) Records(ctx context.Context, kind prompt.Kind, workspaceID string) ([]prompt.Record, error) {
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(`SELECT data FROM prompt_records
WHERE kind = $1 AND workspace_id = $2 ORDER BY created_us, id`), string(kind), workspaceID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading %ss: %w", kind, err)
	}
	return scanJSON[prompt.Record](rows, string(kind))
}

// scanJSON reads rows of one JSON column into values of T.
func scanJSON[T any](rows *sql.Rows, what string) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		var data string
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("sqlstore: reading %s: %w", what, err)
		}
		var v T
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return nil, fmt.Errorf("sqlstore: reading %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: reading %s: %w", what, err)
	}
	return out, nil
}

// CreateRecord implements prompt.Store.
func (s *Store) CreateRecord(ctx context.Context, rec *prompt.Record, v *prompt.Version) error {
	return s.promptTx(ctx, func(tx *sql.Tx) error {
		data, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO prompt_records
(id, kind, workspace_id, slug, data, created_us, updated_us) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`),
			rec.ID, string(rec.Kind), rec.WorkspaceID, rec.Slug, string(data), rec.CreatedAt.UnixMicro(), rec.UpdatedAt.UnixMicro())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("sqlstore: %s %q: %w", rec.Kind, rec.Slug, gateway.ErrConflict)
		}
		return s.addVersion(ctx, tx, v)
	})
}

// addVersion stores v, if not nil.
func (s *Store) addVersion(ctx context.Context, tx *sql.Tx, v *prompt.Version) error {
	if v == nil {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO prompt_versions (record_id, number, data) VALUES ($1, $2, $3)`),
		v.RecordID, v.Number, string(data))
	return err
}

// UpdateRecord implements prompt.Store, atomically with respect to every
// write of every replica.
func (s *Store) UpdateRecord(ctx context.Context, old, rec *prompt.Record, v *prompt.Version) error {
	return s.promptTx(ctx, func(tx *sql.Tx) error {
		var taken int
		err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT COUNT(*) FROM prompt_records
WHERE kind = $1 AND workspace_id = $2 AND slug = $3 AND id <> $4`), string(rec.Kind), rec.WorkspaceID, rec.Slug, old.ID).Scan(&taken)
		if err != nil {
			return err
		}
		if taken > 0 {
			return fmt.Errorf("sqlstore: %s %q: %w", rec.Kind, rec.Slug, gateway.ErrConflict)
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.dialect.rebind(`UPDATE prompt_records SET slug = $1, data = $2, updated_us = $3
WHERE id = $4 AND updated_us = $5`), rec.Slug, string(data), rec.UpdatedAt.UnixMicro(), old.ID, old.UpdatedAt.UnixMicro())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var one int
			err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT 1 FROM prompt_records WHERE id = $1`), old.ID).Scan(&one)
			if notFound(err) {
				return gateway.ErrNotFound
			}
			return fmt.Errorf("sqlstore: %s %q changed since it was read: %w", old.Kind, old.Slug, gateway.ErrConflict)
		}
		return s.addVersion(ctx, tx, v)
	})
}

// DeleteRecord implements prompt.Store.
func (s *Store) DeleteRecord(ctx context.Context, kind prompt.Kind, workspaceID, id string) error {
	return s.promptTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.dialect.rebind(`DELETE FROM prompt_records WHERE id = $1 AND kind = $2 AND workspace_id = $3`),
			id, string(kind), workspaceID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return gateway.ErrNotFound
		}
		_, err = tx.ExecContext(ctx, s.dialect.rebind(`DELETE FROM prompt_versions WHERE record_id = $1`), id)
		return err
	})
}

// Versions implements prompt.Store.
func (s *Store) Versions(ctx context.Context, recordID string) ([]prompt.Version, error) {
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(`SELECT data FROM prompt_versions
WHERE record_id = $1 ORDER BY number DESC`), recordID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading versions: %w", err)
	}
	return scanJSON[prompt.Version](rows, "versions")
}

// Version implements prompt.Store.
func (s *Store) Version(ctx context.Context, recordID string, number int) (*prompt.Version, error) {
	var data string
	err := s.stmts[promptVersionSQL].QueryRowContext(ctx, recordID, number).Scan(&data)
	if notFound(err) {
		return nil, gateway.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading a version: %w", err)
	}
	var v prompt.Version
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		return nil, fmt.Errorf("sqlstore: reading a version: %w", err)
	}
	return &v, nil
}

// promptTx runs fn in a transaction (see storeTx).
func (s *Store) promptTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.storeTx(ctx, "prompts", fn)
}

// storeTx runs fn in a transaction, committed when it returns nil. An
// error that is not gateway.ErrNotFound or gateway.ErrConflict is the
// database's, wrapped, naming what.
func (s *Store) storeTx(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		if errors.Is(err, gateway.ErrNotFound) || errors.Is(err, gateway.ErrConflict) {
			return err
		}
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return nil
}
