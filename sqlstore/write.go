package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	gateway "github.com/modelgateway/gateway"
)

// update runs fn in a read-write transaction that first bumps the
// generation, then refreshes the snapshot once the transaction commits.
//
// Bumping first takes the generation row's lock, so that every write
// transaction runs after the previous one committed and sees what it
// wrote: a compare-and-swap reads the row it replaces with no other
// write in between, on Postgres (read committed) as on SQLite (one
// writer at a time). Other processes see the new generation at their
// next poll and catch up.
//
// An error of the refresh, after the commit, is returned wrapped: the
// write is durable, and the background refresh installs it later.
func (s *Store) update(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE generation SET value = value + 1 WHERE id = 1`); err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	if err := fn(tx); err != nil {
		return err
	}
	// Changes far behind are pruned as the log grows; a replica that far
	// behind reads everything instead (catchUp).
	if _, err := tx.ExecContext(ctx, s.dialect.rebind(`DELETE FROM changes WHERE gen <= (SELECT value FROM generation WHERE id = 1) - $1`),
		changesKept); err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	if err := s.catchUp(ctx); err != nil {
		return fmt.Errorf("sqlstore: written, but not yet in force here: %w", err)
	}
	return nil
}

// The kinds of record the changes table names (see catchUp).
const (
	kindAPIKey     = "api_key"     // ref: the key's id
	kindVirtualKey = "virtual_key" // ref: the slug
	kindConfig     = "config"      // ref: the config's id (its slug)
	kindPolicy     = "policy"      // ref: the policy's id; every policy is read again
)

// changesKept is how many generations of changes the changes table keeps.
const changesKept = 100_000

// changed records, in the write transaction tx, that the record of kind
// named ref changed under the generation the transaction set.
func (s *Store) changed(ctx context.Context, tx *sql.Tx, kind, ref string) error {
	_, err := s.exec(ctx, tx, `INSERT INTO changes (gen, kind, ref) SELECT value, $1, $2 FROM generation WHERE id = 1`, kind, ref)
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	return nil
}

// refreshOnConflict returns err, after refreshing the snapshot when err
// says the record changed or went since the caller read it (from the
// snapshot, which another replica's write may not have reached yet).
func (s *Store) refreshOnConflict(ctx context.Context, err error) error {
	if errors.Is(err, gateway.ErrConflict) || errors.Is(err, gateway.ErrNotFound) {
		if rerr := s.Refresh(ctx); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return err
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// rowUpdatedAt returns the updated_at of the row of table (virtual_keys
// or configs) holding slug in workspaceID, or gateway.ErrNotFound.
func (s *Store) rowUpdatedAt(ctx context.Context, tx *sql.Tx, table, workspaceID, slug string) (time.Time, error) {
	var updated sql.NullTime
	err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT updated_at FROM `+table+` WHERE workspace_id = $1 AND slug = $2`),
		workspaceID, slug).Scan(&updated)
	switch {
	case notFound(err):
		return time.Time{}, gateway.ErrNotFound
	case err != nil:
		return time.Time{}, fmt.Errorf("sqlstore: %s %q: %w", table, slug, err)
	}
	return fromNullTime(updated), nil
}

// exec runs one statement of the dialect in tx.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	return tx.ExecContext(ctx, s.dialect.rebind(query), args...)
}

// rowID returns the id of the row of table (virtual_keys or configs)
// holding slug in workspaceID, or a new random UUID when there is none.
// The id is the additional data of the row's sealed values, and is kept
// when the row is replaced.
func (s *Store) rowID(ctx context.Context, tx *sql.Tx, table, workspaceID, slug string) (string, error) {
	var id string
	err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT id FROM `+table+` WHERE workspace_id = $1 AND slug = $2`), workspaceID, slug).Scan(&id)
	switch {
	case err == nil:
		return id, nil
	case !notFound(err):
		return "", err
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// deleteRow deletes the row of table that where (a condition on its
// unique columns, with args) selects, recording the change of the record
// of kind named ref (none for an empty kind: a record the snapshot does
// not hold), or returns gateway.ErrNotFound.
func (s *Store) deleteRow(ctx context.Context, kind, ref, table, where string, args ...any) error {
	return s.update(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `DELETE FROM `+table+` WHERE `+where, args...)
		if err != nil {
			return fmt.Errorf("sqlstore: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("sqlstore: %w", err)
		} else if n == 0 {
			return gateway.ErrNotFound
		}
		if kind == "" {
			return nil
		}
		return s.changed(ctx, tx, kind, ref)
	})
}
