package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"time"

	gateway "github.com/modelgateway/gateway"
)

// snapshot is everything the gateway looks up per request, as of one
// generation of the database. A snapshot is immutable once built: a change
// builds a new one, which replaces it whole, so that a lookup is a map
// read with no lock and no allocation.
type snapshot struct {
	gen int64

	// keys finds API keys by digest, prevKeys by the previous digest of a
	// rotated key, keysByID by id.
	keys     map[[sha256.Size]byte]*gateway.APIKey
	prevKeys map[[sha256.Size]byte]*gateway.APIKey
	keysByID map[string]*gateway.APIKey

	vkeys    map[string]*gateway.VirtualKey
	configs  map[string]*gateway.SavedConfig
	policies map[string]*gateway.RateLimitsPolicy // by lower-case id

	// policiesOf holds, for each workspace that has policies, its own and
	// the operator's (of no workspace) in PolicyStore order;
	// operatorPolicies the operator's alone, which is the answer for
	// every other workspace. Each slice's capacity is its length, so that
	// a caller's append copies it.
	policiesOf       map[string][]gateway.RateLimitsPolicy
	operatorPolicies []gateway.RateLimitsPolicy
}

// reload reads the whole database in one read-only transaction, so that
// the snapshot is of one generation, and installs it.
func (s *Store) reload(ctx context.Context) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	opts := &sql.TxOptions{ReadOnly: true}
	if s.dialect == dialectPostgres {
		// Every query of the transaction sees the same committed state.
		opts.Isolation = sql.LevelRepeatableRead
	} // A SQLite read transaction sees one state of the WAL throughout.
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("sqlstore: reloading: %w", err)
	}
	defer tx.Rollback()
	snap, err := s.load(ctx, tx)
	if err != nil {
		return err
	}
	s.snap.Store(snap)
	return nil
}

func (s *Store) load(ctx context.Context, tx *sql.Tx) (*snapshot, error) {
	snap := &snapshot{}
	if err := tx.QueryRowContext(ctx, `SELECT value FROM generation WHERE id = 1`).Scan(&snap.gen); err != nil {
		return nil, fmt.Errorf("sqlstore: reading the generation: %w", err)
	}
	if err := s.loadAPIKeys(ctx, tx, snap); err != nil {
		return nil, err
	}
	if err := s.loadVirtualKeys(ctx, tx, snap); err != nil {
		return nil, err
	}
	if err := s.loadConfigs(ctx, tx, snap); err != nil {
		return nil, err
	}
	if err := s.loadPolicies(ctx, tx, snap); err != nil {
		return nil, err
	}
	return snap, nil
}

// dbTime is t as the store writes it: UTC, to the microsecond (Postgres's
// precision, kept on SQLite too so both dialects read back the same).
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
