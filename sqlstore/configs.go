package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
)

var _ admin.ConfigStore = (*Store)(nil)

// Config implements gateway.ConfigStore from the snapshot: the config of
// no workspace with that id or, when there is none, the one of the
// workspace whose id sorts first (the gateway then refuses it to callers
// of other workspaces), as memstore.Store answers. The record is
// shared by every caller and must not be modified.
func (s *Store) Config(_ context.Context, id string) (*gateway.SavedConfig, error) {
	if c, ok := s.snap.Load().configs[id]; ok {
		return c, nil
	}
	return nil, gateway.ErrNotFound
}

// PutConfig creates or replaces the saved config c.ID of workspace
// c.WorkspaceID with a copy of c, which becomes its only version; a
// Version of 0 is stored as 1, as memstore.Store.AddConfig does. The
// whole config JSON, which may hold provider credentials, is sealed under
// the master key (ErrMasterKeyRequired without one); times are kept to
// the microsecond. c.Config must be valid JSON; the caller validates it
// as a config (Load does, as admin.Apply).
func (s *Store) PutConfig(ctx context.Context, c *gateway.SavedConfig) error {
	return s.update(ctx, func(tx *sql.Tx) error { return s.putConfig(ctx, tx, c, false) })
}

// putConfig writes c as the current version of its config. keep keeps
// the earlier versions (an update); otherwise c replaces the whole
// history.
func (s *Store) putConfig(ctx context.Context, tx *sql.Tx, c *gateway.SavedConfig, keep bool) error {
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
	if !keep {
		if _, err := s.exec(ctx, tx, `DELETE FROM config_versions WHERE config_id = $1`, rowID); err != nil {
			return fmt.Errorf("sqlstore: config %q: %w", c.ID, err)
		}
	}
	_, err = s.exec(ctx, tx, `INSERT INTO configs (id, workspace_id, slug, config, name, version, version_id, created_at, updated_at, tenant)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (id) DO UPDATE SET config = excluded.config, name = excluded.name, version = excluded.version,
	version_id = excluded.version_id, created_at = excluded.created_at, updated_at = excluded.updated_at, tenant = excluded.tenant`,
		rowID, c.WorkspaceID, c.ID, sealed, c.Name, max(c.Version, 1), c.VersionID, nullTime(c.CreatedAt), nullTime(c.UpdatedAt), c.Tenant)
	if err != nil {
		return fmt.Errorf("sqlstore: config %q: %w", c.ID, err)
	}
	return s.changed(ctx, tx, kindConfig, c.ID)
}

// ConfigIn implements admin.ConfigStore from the snapshot, with no
// query and no allocation: the data plane asks it for the caller's
// workspace on every request naming a saved config. The config is shared
// and must not be modified.
func (s *Store) ConfigIn(_ context.Context, workspaceID, id string) (*gateway.SavedConfig, error) {
	if c, ok := s.snap.Load().configsIn[id][workspaceID]; ok {
		return c, nil
	}
	return nil, gateway.ErrNotFound
}

// Configs implements admin.ConfigStore from the database: the current
// versions of the configs of workspaceID (of every workspace and of none
// when it is empty), oldest first.
func (s *Store) Configs(ctx context.Context, workspaceID string) ([]gateway.SavedConfig, error) {
	where, args := "", []any(nil)
	if workspaceID != "" {
		where, args = "workspace_id = $1", []any{workspaceID}
	}
	var out []gateway.SavedConfig
	err := s.queryConfigs(ctx, s.db, where, func(c *gateway.SavedConfig, _ string) { out = append(out, *c) }, args...)
	return out, err
}

// ConfigVersions implements admin.ConfigStore from the database: every
// version of the config, newest first, in one read.
func (s *Store) ConfigVersions(ctx context.Context, workspaceID, id string) ([]gateway.SavedConfig, error) {
	tx, err := s.readTx(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var (
		cur   *gateway.SavedConfig
		rowID string
	)
	err = s.queryConfigs(ctx, tx, "workspace_id = $1 AND slug = $2", func(c *gateway.SavedConfig, id string) { cur, rowID = c, id }, workspaceID, id)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, gateway.ErrNotFound
	}
	out := []gateway.SavedConfig{*cur}
	rows, err := tx.QueryContext(ctx, s.dialect.rebind(`SELECT version, version_id, config, name, created_at, updated_at
FROM config_versions WHERE config_id = $1 ORDER BY version DESC`), rowID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: config %q: reading versions: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		v := gateway.SavedConfig{ID: cur.ID, WorkspaceID: cur.WorkspaceID}
		var (
			sealed           []byte
			created, updated sql.NullTime
		)
		if err := rows.Scan(&v.Version, &v.VersionID, &sealed, &v.Name, &created, &updated); err != nil {
			return nil, fmt.Errorf("sqlstore: config %q: reading versions: %w", id, err)
		}
		v.CreatedAt, v.UpdatedAt = fromNullTime(created), fromNullTime(updated)
		if v.Config, err = s.seal.open(sealed, "config_versions", "config", versionRef(rowID, v.Version)); err != nil {
			return nil, fmt.Errorf("sqlstore: config %q version %d: %w", id, v.Version, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: config %q: reading versions: %w", id, err)
	}
	return out, nil
}

// versionRef is the additional data of a sealed earlier version: the
// config's row id and the version.
func versionRef(rowID string, version int) string { return rowID + "/" + strconv.Itoa(version) }

// CreateConfig implements admin.ConfigStore: it stores c as its first
// version, as PutConfig does, or returns gateway.ErrConflict if its
// workspace already holds its id.
func (s *Store) CreateConfig(ctx context.Context, c *gateway.SavedConfig) error {
	return s.update(ctx, func(tx *sql.Tx) error {
		if _, err := s.rowUpdatedAt(ctx, tx, "configs", c.WorkspaceID, c.ID); err == nil {
			return fmt.Errorf("sqlstore: config %q: %w", c.ID, gateway.ErrConflict)
		} else if !errors.Is(err, gateway.ErrNotFound) {
			return err
		}
		return s.putConfig(ctx, tx, c, false)
	})
}

// UpdateConfig implements admin.ConfigStore: if the current version
// still has old's Version and UpdatedAt and c is the next version, the
// current version moves to the earlier versions (sealed again, bound to
// its new place) and c becomes the current one, atomically with respect
// to every write of every replica. A refused update refreshes the
// snapshot, so that the caller's next read sees what it lost to.
func (s *Store) UpdateConfig(ctx context.Context, old, c *gateway.SavedConfig) error {
	return s.refreshOnConflict(ctx, s.update(ctx, func(tx *sql.Tx) error {
		var (
			cur   *gateway.SavedConfig
			rowID string
		)
		err := s.queryConfigs(ctx, tx, "workspace_id = $1 AND slug = $2", func(c *gateway.SavedConfig, id string) { cur, rowID = c, id }, old.WorkspaceID, old.ID)
		switch {
		case err != nil:
			return err
		case cur == nil:
			return gateway.ErrNotFound
		case c.ID != old.ID || c.WorkspaceID != old.WorkspaceID || cur.Version != old.Version ||
			!cur.UpdatedAt.Equal(dbTime(old.UpdatedAt)) || c.Version != cur.Version+1:
			return fmt.Errorf("sqlstore: config %q changed since it was read: %w", old.ID, gateway.ErrConflict)
		}
		sealed, err := s.seal.seal(cur.Config, "config_versions", "config", versionRef(rowID, cur.Version))
		if err != nil {
			return fmt.Errorf("sqlstore: config %q: %w", c.ID, err)
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO config_versions (config_id, version, version_id, config, name, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, rowID, cur.Version, cur.VersionID, sealed, cur.Name, nullTime(cur.CreatedAt), nullTime(cur.UpdatedAt)); err != nil {
			return fmt.Errorf("sqlstore: config %q: %w", c.ID, err)
		}
		return s.putConfig(ctx, tx, c, true)
	}))
}

// DeleteConfig implements admin.ConfigStore: it deletes the saved
// config id of workspace workspaceID (empty: of no workspace) with every
// version, or returns gateway.ErrNotFound when there is none.
func (s *Store) DeleteConfig(ctx context.Context, workspaceID, id string) error {
	return s.deleteRow(ctx, kindConfig, id, "configs", "workspace_id = $1 AND slug = $2", workspaceID, id)
}

// queryConfigs calls fn with each current config the condition where
// (with args; "" for every row) selects, its JSON opened, and its row id,
// ordered by creation time, workspace and id.
func (s *Store) queryConfigs(ctx context.Context, q querier, where string, fn func(c *gateway.SavedConfig, rowID string), args ...any) error {
	query := `SELECT id, workspace_id, slug, config, name, version, version_id, created_at, updated_at, tenant FROM configs`
	if where != "" {
		query += ` WHERE ` + where
	}
	rows, err := q.QueryContext(ctx, s.dialect.rebind(query+` ORDER BY created_at NULLS FIRST, workspace_id, slug`), args...)
	if err != nil {
		return fmt.Errorf("sqlstore: reading configs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			c                gateway.SavedConfig
			rowID            string
			sealed           []byte
			created, updated sql.NullTime
		)
		if err := rows.Scan(&rowID, &c.WorkspaceID, &c.ID, &sealed, &c.Name, &c.Version, &c.VersionID, &created, &updated, &c.Tenant); err != nil {
			return fmt.Errorf("sqlstore: reading configs: %w", err)
		}
		c.CreatedAt, c.UpdatedAt = fromNullTime(created), fromNullTime(updated)
		if c.Config, err = s.seal.open(sealed, "configs", "config", rowID); err != nil {
			return fmt.Errorf("sqlstore: config %q: %w", c.ID, err)
		}
		fn(&c, rowID)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: reading configs: %w", err)
	}
	return nil
}

// loadConfigs reads the configs of id (every config when it is empty)
// into snap.configs, replacing what it held for it: per id, the one of no
// workspace or else the one of the workspace whose id sorts first.
func (s *Store) loadConfigs(ctx context.Context, tx *sql.Tx, snap *snapshot, id string) error {
	where, args := "", []any(nil)
	if id != "" {
		where, args = "slug = $1", []any{id}
		delete(snap.configs, id)
		delete(snap.configsIn, id) // the inner map may be shared with the last snapshot: a new one is made
	}
	return s.queryConfigs(ctx, tx, where, func(c *gateway.SavedConfig, _ string) {
		if cur, ok := snap.configs[c.ID]; !ok || c.WorkspaceID < cur.WorkspaceID {
			snap.configs[c.ID] = c // "" sorts first
		}
		in := snap.configsIn[c.ID]
		if in == nil {
			in = make(map[string]*gateway.SavedConfig, 1)
			snap.configsIn[c.ID] = in
		}
		in[c.WorkspaceID] = c
	}, args...)
}
