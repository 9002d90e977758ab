package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// migrationFiles holds the schema, one file per version and dialect:
// migrations/<dialect>/<NNNN>_<name>.sql. Version N's file is applied to a
// database at version N-1, in the transaction that records version N.
//
//go:embed migrations
var migrationFiles embed.FS

// migration is one version of the schema.
type migration struct {
	version int
	name    string // file name, for errors
	sql     string
}

// migrations returns the dialect's migrations in version order. Versions
// must run from 1 without a gap.
func migrations(d dialect) ([]migration, error) {
	dir := path.Join("migrations", d.String())
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries { // ReadDir sorts by name
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("sqlstore: migration file %s is not named NNNN_name.sql", e.Name())
		}
		if v != len(ms)+1 {
			return nil, fmt.Errorf("sqlstore: migration file %s: want version %d", e.Name(), len(ms)+1)
		}
		b, err := fs.ReadFile(migrationFiles, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	return ms, nil
}

// SchemaVersion is the version of the schema this package writes: the
// number of its last migration.
const SchemaVersion = 16

// SchemaVersionError is the error of Open on a database whose schema is
// newer than this package knows: a newer gateway migrated it. Opening it
// anyway could lose what the newer schema holds.
type SchemaVersionError struct {
	Database int // the version the database is at
	Known    int // the newest version this package knows (SchemaVersion)
}

func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("sqlstore: the database's schema is version %d, newer than version %d, the newest this binary knows: run a newer gateway", e.Database, e.Known)
}

// postgresMigrationLock is the key of the transaction-scoped advisory lock
// that queues replicas migrating one Postgres database at once.
const postgresMigrationLock = 0x5371_6c53_746f_7265 // "SqlStore"

// migrate brings the database to the newest schema in one transaction,
// then checks (or, on a database that has none yet, sets) the master
// key's check value in the same transaction.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations(s.dialect)
	if err != nil {
		return err
	}
	if len(ms) != SchemaVersion {
		return fmt.Errorf("sqlstore: %d migrations embedded, want %d", len(ms), SchemaVersion)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: opening the database: %w", err)
	}
	defer tx.Rollback()
	if s.dialect == dialectPostgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(postgresMigrationLock)); err != nil {
			return fmt.Errorf("sqlstore: opening the database: %w", err)
		}
	}
	// The one table every version has, created outside the migrations so
	// that the version can be read before any is applied.
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
	version    INTEGER PRIMARY KEY,
	applied_at TEXT NOT NULL
)`); err != nil {
		return fmt.Errorf("sqlstore: opening the database: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current); err != nil {
		return fmt.Errorf("sqlstore: reading the schema version: %w", err)
	}
	if current > SchemaVersion {
		return &SchemaVersionError{Database: current, Known: SchemaVersion}
	}
	for _, m := range ms[current:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("sqlstore: migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)`),
			m.version, time.Now().UTC().Format(time.RFC3339)); err != nil {
			return fmt.Errorf("sqlstore: migration %s: %w", m.name, err)
		}
	}
	if err := s.checkMasterKey(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: opening the database: %w", err)
	}
	return nil
}

// checkMasterKey opens the database's check value with the store's master
// key. A database without one gets one when the store has a key; from
// then on, every store opening it needs that key.
func (s *Store) checkMasterKey(ctx context.Context, tx *sql.Tx) error {
	var sealed []byte
	err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT value FROM meta WHERE name = $1`), checkName).Scan(&sealed)
	switch {
	case err == sql.ErrNoRows && s.seal.aead == nil:
		return nil // nothing sealed yet, and nothing to seal with
	case err == sql.ErrNoRows:
		v, err := s.seal.seal([]byte(checkPlaintext), "meta", "value", checkName)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO meta (name, value) VALUES ($1, $2)`), checkName, v); err != nil {
			return fmt.Errorf("sqlstore: storing the master key's check value: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("sqlstore: reading the master key's check value: %w", err)
	case s.seal.aead == nil:
		return ErrMasterKeyRequired
	}
	if p, err := s.seal.open(sealed, "meta", "value", checkName); err != nil || string(p) != checkPlaintext {
		return ErrWrongMasterKey
	}
	return nil
}
