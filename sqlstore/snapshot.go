package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"maps"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/catalog"
)

// snapshot is everything the gateway looks up per request, as of one
// generation of the database. A snapshot is immutable once installed: a
// change builds a new one, sharing the maps the change did not touch, and
// replaces it whole, so that a lookup is a map read with no lock and no
// allocation.
type snapshot struct {
	gen int64

	// keys finds API keys by digest, prevKeys by the previous digest of a
	// rotated key, keysByID by id.
	keys     map[[sha256.Size]byte]*gateway.APIKey
	prevKeys map[[sha256.Size]byte]*gateway.APIKey
	keysByID map[string]*gateway.APIKey

	// vkeys and configs hold, per slug, the entry of no workspace or else
	// the one of the workspace whose id sorts first.
	vkeys    map[string]*gateway.VirtualKey
	configs  map[string]*gateway.SavedConfig
	policies map[string]*gateway.RateLimitsPolicy // by lower-case id

	// vkeysIn and configsIn hold every entry, by slug then workspace
	// ("" for none): the data plane looks the caller's workspace up first.
	// A change replaces a slug's inner map whole.
	vkeysIn   map[string]map[string]*gateway.VirtualKey
	configsIn map[string]map[string]*gateway.SavedConfig

	// policiesOf holds, for each workspace that has policies, its own and
	// the operator's (of no workspace) in PolicyStore order;
	// operatorPolicies the operator's alone, which is the answer for
	// every other workspace. Each slice's capacity is its length, so that
	// a caller's append copies it.
	policiesOf       map[string][]gateway.RateLimitsPolicy
	operatorPolicies []gateway.RateLimitsPolicy

	// integrations holds the integrations by slug, for the virtual keys
	// made from them, which vkeys and vkeysIn hold joined with them
	// (catalog.Integration.Join), and not at all while not granted.
	integrations map[string]*catalog.Integration
}

// reload reads the whole database in one read-only transaction, so that
// the snapshot is of one generation, and installs it. Open uses it, and
// catchUp when the changes it needs were pruned.
func (s *Store) reload(ctx context.Context) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	tx, err := s.readTx(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	snap, err := s.load(ctx, tx)
	if err != nil {
		return err
	}
	s.snap.Store(snap)
	return nil
}

// readTx begins a read-only transaction that sees one committed state of
// the database throughout.
func (s *Store) readTx(ctx context.Context) (*sql.Tx, error) {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.dialect == dialectPostgres {
		opts.Isolation = sql.LevelRepeatableRead
	} // A SQLite read transaction sees one state of the WAL throughout.
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading the database: %w", err)
	}
	return tx, nil
}

func (s *Store) load(ctx context.Context, tx *sql.Tx) (*snapshot, error) {
	snap := &snapshot{
		keys:      make(map[[sha256.Size]byte]*gateway.APIKey),
		prevKeys:  make(map[[sha256.Size]byte]*gateway.APIKey),
		keysByID:  make(map[string]*gateway.APIKey),
		vkeys:     make(map[string]*gateway.VirtualKey),
		configs:   make(map[string]*gateway.SavedConfig),
		vkeysIn:   make(map[string]map[string]*gateway.VirtualKey),
		configsIn: make(map[string]map[string]*gateway.SavedConfig),
	}
	if err := tx.QueryRowContext(ctx, `SELECT value FROM generation WHERE id = 1`).Scan(&snap.gen); err != nil {
		return nil, fmt.Errorf("sqlstore: reading the generation: %w", err)
	}
	if err := s.loadAPIKeys(ctx, tx, snap, ""); err != nil {
		return nil, err
	}
	if err := s.loadIntegrations(ctx, tx, snap); err != nil {
		return nil, err
	}
	if err := s.loadVirtualKeys(ctx, tx, snap, ""); err != nil {
		return nil, err
	}
	if err := s.loadConfigs(ctx, tx, snap, ""); err != nil {
		return nil, err
	}
	if err := s.loadPolicies(ctx, tx, snap); err != nil {
		return nil, err
	}
	return snap, nil
}

// catchUp brings the snapshot to the database's current generation: it
// reads again only the records the changes table names after the
// snapshot's generation, in one read-only transaction, and installs a new
// snapshot that shares every map no change touched. When the changes it
// needs were pruned (more than changesKept generations behind), it reads
// everything instead.
func (s *Store) catchUp(ctx context.Context) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	cur := s.snap.Load()
	tx, err := s.readTx(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var gen int64
	if err := tx.QueryRowContext(ctx, `SELECT value FROM generation WHERE id = 1`).Scan(&gen); err != nil {
		return fmt.Errorf("sqlstore: reading the generation: %w", err)
	}
	if gen == cur.gen {
		return nil
	}
	full := gen-cur.gen >= changesKept
	var changes []change
	if !full {
		if changes, err = s.changesSince(ctx, tx, cur.gen, gen); err != nil {
			return err
		}
		// Past a few thousand records (a big Load), one read of every
		// table is cheaper than a query per record.
		full = len(changes) > catchUpMax
	}
	if full {
		next, err := s.load(ctx, tx)
		if err != nil {
			return err
		}
		s.snap.Store(next)
		return nil
	}
	next := *cur
	next.gen = gen
	var ownKeys, ownVKeys, ownConfigs, policies, integrations bool
	for _, c := range changes {
		if c.kind == kindIntegration {
			integrations = true
		}
	}
	if integrations {
		// Every provider of the integrations may change: all are read again.
		next.vkeys, next.vkeysIn = make(map[string]*gateway.VirtualKey), make(map[string]map[string]*gateway.VirtualKey)
		if err := s.loadIntegrations(ctx, tx, &next); err != nil {
			return err
		}
		if err := s.loadVirtualKeys(ctx, tx, &next, ""); err != nil {
			return err
		}
		ownVKeys = true
	}
	for _, c := range changes {
		switch c.kind {
		case kindAPIKey:
			if !ownKeys {
				ownKeys = true
				next.keys, next.prevKeys, next.keysByID = maps.Clone(next.keys), maps.Clone(next.prevKeys), maps.Clone(next.keysByID)
			}
			err = s.loadAPIKeys(ctx, tx, &next, c.ref)
		case kindVirtualKey:
			if integrations {
				continue // read above
			}
			if !ownVKeys {
				ownVKeys = true
				next.vkeys, next.vkeysIn = maps.Clone(next.vkeys), maps.Clone(next.vkeysIn)
			}
			err = s.loadVirtualKeys(ctx, tx, &next, c.ref)
		case kindConfig:
			if !ownConfigs {
				ownConfigs = true
				next.configs, next.configsIn = maps.Clone(next.configs), maps.Clone(next.configsIn)
			}
			err = s.loadConfigs(ctx, tx, &next, c.ref)
		case kindPolicy:
			policies = true
		}
		if err != nil {
			return err
		}
	}
	if policies {
		if err := s.loadPolicies(ctx, tx, &next); err != nil {
			return err
		}
	}
	s.snap.Store(&next)
	return nil
}

// catchUpMax is the most records catchUp reads one by one.
const catchUpMax = 2000

// change names one record a write changed (see kindAPIKey and the rest).
type change struct{ kind, ref string }

// changesSince returns the records the writes of generations after from,
// up to to, changed, each once.
func (s *Store) changesSince(ctx context.Context, tx *sql.Tx, from, to int64) ([]change, error) {
	rows, err := tx.QueryContext(ctx, s.dialect.rebind(`SELECT DISTINCT kind, ref FROM changes WHERE gen > $1 AND gen <= $2`), from, to)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading changes: %w", err)
	}
	defer rows.Close()
	var changes []change
	for rows.Next() {
		var c change
		if err := rows.Scan(&c.kind, &c.ref); err != nil {
			return nil, fmt.Errorf("sqlstore: reading changes: %w", err)
		}
		changes = append(changes, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: reading changes: %w", err)
	}
	return changes, nil
}

// dbTime is t as the store writes it: UTC, to the microsecond (Postgres's
// precision, kept on SQLite too so both dialects read back the same).
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
