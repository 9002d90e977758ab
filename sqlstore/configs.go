package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	gateway "github.com/modelgateway/gateway"
)

// Config implements gateway.ConfigStore from the snapshot: the config of
// no workspace with that id or, when there is none, the one of the
// workspace whose id sorts first (the gateway then refuses it to callers
// of other workspaces), as gateway.MemoryStore answers. The record is
// shared by every caller and must not be modified.
func (s *Store) Config(_ context.Context, id string) (*gateway.SavedConfig, error) {
	if c, ok := s.snap.Load().configs[id]; ok {
		return c, nil
	}
	return nil, gateway.ErrNotFound
}

// PutConfig creates or replaces the saved config c.ID of workspace
// c.WorkspaceID with a copy of c; a Version of 0 is stored as 1, as
// gateway.MemoryStore.AddConfig does. The whole config JSON, which may
// hold provider credentials, is sealed under the master key
// (ErrMasterKeyRequired without one); times are kept to the microsecond.
// c.Config must be valid JSON; the caller validates it as a config (Load
// does, as gateway.MemoryStore.Load).
func (s *Store) PutConfig(ctx context.Context, c *gateway.SavedConfig) error {
	return s.update(ctx, func(tx *sql.Tx) error { return s.putConfig(ctx, tx, c) })
}

func (s *Store) putConfig(ctx context.Context, tx *sql.Tx, c *gateway.SavedConfig) error {
	if c.ID == "" {
		return errors.New("sqlstore: a config needs an id")
	}
	if !json.Valid(c.Config) {
		return fmt.Errorf("sqlstore: config %q is not valid JSON", c.ID)
	}
	rowID, err := s.rowID(ctx, tx, "configs", c.WorkspaceID, c.ID)
	if err != nil {
		return fmt.Errorf("sqlstore: config %q: %w", c.ID, err)
	}
	sealed, err := s.seal.seal(c.Config, "configs", "config", rowID)
	if err != nil {
		return fmt.Errorf("sqlstore: config %q: %w", c.ID, err)
	}
	version := max(c.Version, 1)
	_, err = s.exec(ctx, tx, `INSERT INTO configs (id, workspace_id, slug, config, name, version, version_id, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET config = excluded.config, name = excluded.name, version = excluded.version,
	version_id = excluded.version_id, created_at = excluded.created_at, updated_at = excluded.updated_at`,
		rowID, c.WorkspaceID, c.ID, sealed, c.Name, version, c.VersionID, nullTime(c.CreatedAt), nullTime(c.UpdatedAt))
	if err != nil {
		return fmt.Errorf("sqlstore: config %q: %w", c.ID, err)
	}
	return nil
}

// DeleteConfig deletes the saved config id of workspace workspaceID
// (empty: of no workspace). It returns gateway.ErrNotFound when there is
// none.
func (s *Store) DeleteConfig(ctx context.Context, workspaceID, id string) error {
	return s.deleteRow(ctx, "configs", "workspace_id = $1 AND slug = $2", workspaceID, id)
}

// loadConfigs reads every config into snap, opening its JSON.
func (s *Store) loadConfigs(ctx context.Context, tx *sql.Tx, snap *snapshot) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, workspace_id, slug, config, name, version, version_id, created_at, updated_at FROM configs`)
	if err != nil {
		return fmt.Errorf("sqlstore: reading configs: %w", err)
	}
	defer rows.Close()
	snap.configs = make(map[string]*gateway.SavedConfig)
	for rows.Next() {
		var (
			c                gateway.SavedConfig
			rowID            string
			sealed           []byte
			created, updated sql.NullTime
		)
		if err := rows.Scan(&rowID, &c.WorkspaceID, &c.ID, &sealed, &c.Name, &c.Version, &c.VersionID, &created, &updated); err != nil {
			return fmt.Errorf("sqlstore: reading configs: %w", err)
		}
		c.CreatedAt, c.UpdatedAt = fromNullTime(created), fromNullTime(updated)
		p, err := s.seal.open(sealed, "configs", "config", rowID)
		if err != nil {
			return fmt.Errorf("sqlstore: config %q: %w", c.ID, err)
		}
		c.Config = p
		if cur, ok := snap.configs[c.ID]; !ok || c.WorkspaceID < cur.WorkspaceID {
			snap.configs[c.ID] = &c // "" sorts first
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: reading configs: %w", err)
	}
	return nil
}
