package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	gateway "github.com/modelgateway/gateway"
)

// VirtualKey implements gateway.VirtualKeyStore from the snapshot, with
// its credentials opened: the virtual key of no workspace with that slug
// or, when there is none, the one of the workspace whose id sorts first
// (the gateway then refuses it to callers of other workspaces), as
// memstore.Store answers. The record is shared by every caller and
// must not be modified.
func (s *Store) VirtualKey(_ context.Context, slug string) (*gateway.VirtualKey, error) {
	if vk, ok := s.snap.Load().vkeys[slug]; ok {
		return vk, nil
	}
	return nil, gateway.ErrNotFound
}

// PutVirtualKey creates or replaces the virtual key vk.Slug of workspace
// vk.WorkspaceID with a copy of vk. Its APIKey, SecretAccessKey and
// SessionToken are sealed under the master key (ErrMasterKeyRequired
// without one); its other fields are stored in clear, times to the
// microsecond, Tenant included: a key put from Go code with Tenant false
// is the operator's, its base_url trusted. The caller validates vk (Load
// does, as admin.Apply).
func (s *Store) PutVirtualKey(ctx context.Context, vk *gateway.VirtualKey) error {
	return s.update(ctx, func(tx *sql.Tx) error { return s.putVirtualKey(ctx, tx, vk) })
}

func (s *Store) putVirtualKey(ctx context.Context, tx *sql.Tx, vk *gateway.VirtualKey) error {
	if vk.Slug == "" || vk.Provider == "" {
		return errors.New("sqlstore: a virtual key needs a slug and a provider")
	}
	rowID, err := s.rowID(ctx, tx, "virtual_keys", vk.WorkspaceID, vk.Slug)
	if err != nil {
		return fmt.Errorf("sqlstore: virtual key %q: %w", vk.Slug, err)
	}
	if vk.Integration != "" {
		// Its credentials are its integration's, joined when it is read.
		c := *vk
		c.APIKey, c.BaseURL, c.HostSettings, c.Models, c.Prices = "", "", gateway.HostSettings{}, nil, nil
		vk = &c
	}
	h := &vk.HostSettings
	var sealed [3]any // nil: NULL
	for i, f := range []struct{ column, value string }{
		{"api_key", vk.APIKey}, {"secret_access_key", h.SecretAccessKey}, {"session_token", h.SessionToken},
	} {
		if f.value == "" {
			continue
		}
		if sealed[i], err = s.seal.seal([]byte(f.value), "virtual_keys", f.column, rowID); err != nil {
			return fmt.Errorf("sqlstore: virtual key %q: %w", vk.Slug, err)
		}
	}
	routes := []byte("null")
	if len(vk.AllowedRoutes) > 0 {
		if routes, err = json.Marshal(vk.AllowedRoutes); err != nil {
			return fmt.Errorf("sqlstore: virtual key %q: %w", vk.Slug, err)
		}
	}
	_, err = s.exec(ctx, tx, `INSERT INTO virtual_keys (id, workspace_id, slug, provider, base_url, resource_name, deployment_id,
	api_version, model_name, project_id, region, access_key_id, api_key, secret_access_key, session_token, name, note,
	created_at, updated_at, tenant, allowed_routes, integration)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
ON CONFLICT (id) DO UPDATE SET provider = excluded.provider, base_url = excluded.base_url,
	resource_name = excluded.resource_name, deployment_id = excluded.deployment_id, api_version = excluded.api_version,
	model_name = excluded.model_name, project_id = excluded.project_id, region = excluded.region,
	access_key_id = excluded.access_key_id, api_key = excluded.api_key, secret_access_key = excluded.secret_access_key,
	session_token = excluded.session_token, name = excluded.name, note = excluded.note,
	created_at = excluded.created_at, updated_at = excluded.updated_at, tenant = excluded.tenant,
	allowed_routes = excluded.allowed_routes, integration = excluded.integration`,
		rowID, vk.WorkspaceID, vk.Slug, vk.Provider, vk.BaseURL, h.ResourceName, h.DeploymentID,
		h.APIVersion, h.ModelName, h.ProjectID, h.Region, h.AccessKeyID, sealed[0], sealed[1], sealed[2], vk.Name, vk.Note,
		nullTime(vk.CreatedAt), nullTime(vk.UpdatedAt), vk.Tenant, string(routes), vk.Integration)
	if err != nil {
		return fmt.Errorf("sqlstore: virtual key %q: %w", vk.Slug, err)
	}
	return s.changed(ctx, tx, kindVirtualKey, vk.Slug)
}

// VirtualKeyIn implements admin.VirtualKeyStore from the snapshot, with
// no query and no allocation: the data plane asks it for the caller's
// workspace on every request naming a virtual key. The record is shared
// and must not be modified.
func (s *Store) VirtualKeyIn(_ context.Context, workspaceID, slug string) (*gateway.VirtualKey, error) {
	if vk, ok := s.snap.Load().vkeysIn[slug][workspaceID]; ok {
		return vk, nil
	}
	return nil, gateway.ErrNotFound
}

// VirtualKeys implements admin.VirtualKeyStore from the database: the
// virtual keys of workspaceID (of every workspace and of none when it is
// empty), oldest first.
func (s *Store) VirtualKeys(ctx context.Context, workspaceID string) ([]gateway.VirtualKey, error) {
	where, args := "", []any(nil)
	if workspaceID != "" {
		where, args = "workspace_id = $1", []any{workspaceID}
	}
	var out []gateway.VirtualKey
	err := s.queryVirtualKeys(ctx, s.db, where, func(vk *gateway.VirtualKey) { out = append(out, *vk) }, args...)
	return out, err
}

// CreateVirtualKey implements admin.VirtualKeyStore: it stores vk as
// PutVirtualKey does, or returns gateway.ErrConflict if its workspace
// already holds its slug.
func (s *Store) CreateVirtualKey(ctx context.Context, vk *gateway.VirtualKey) error {
	return s.update(ctx, func(tx *sql.Tx) error {
		if _, err := s.rowUpdatedAt(ctx, tx, "virtual_keys", vk.WorkspaceID, vk.Slug); err == nil {
			return fmt.Errorf("sqlstore: virtual key %q: %w", vk.Slug, gateway.ErrConflict)
		} else if !errors.Is(err, gateway.ErrNotFound) {
			return err
		}
		return s.putVirtualKey(ctx, tx, vk)
	})
}

// UpdateVirtualKey implements admin.VirtualKeyStore: it replaces the
// stored virtual key with vk if the stored one still has old's UpdatedAt,
// atomically with respect to every write of every replica. A refused
// update refreshes the snapshot, so that the caller's next read sees
// what it lost to.
func (s *Store) UpdateVirtualKey(ctx context.Context, old, vk *gateway.VirtualKey) error {
	return s.refreshOnConflict(ctx, s.update(ctx, func(tx *sql.Tx) error {
		updated, err := s.rowUpdatedAt(ctx, tx, "virtual_keys", old.WorkspaceID, old.Slug)
		if err != nil {
			return err
		}
		if vk.Slug != old.Slug || vk.WorkspaceID != old.WorkspaceID || !updated.Equal(dbTime(old.UpdatedAt)) {
			return fmt.Errorf("sqlstore: virtual key %q changed since it was read: %w", old.Slug, gateway.ErrConflict)
		}
		return s.putVirtualKey(ctx, tx, vk)
	}))
}

// DeleteVirtualKey implements admin.VirtualKeyStore: it deletes the
// virtual key slug of workspace workspaceID (empty: of no workspace), or
// returns gateway.ErrNotFound when there is none.
func (s *Store) DeleteVirtualKey(ctx context.Context, workspaceID, slug string) error {
	return s.deleteRow(ctx, kindVirtualKey, slug, "virtual_keys", "workspace_id = $1 AND slug = $2", workspaceID, slug)
}

// virtualKeyColumns are the columns scanVirtualKey reads, in its order.
const virtualKeyColumns = `id, workspace_id, slug, provider, base_url, resource_name, deployment_id,
	api_version, model_name, project_id, region, access_key_id, api_key, secret_access_key, session_token, name, note,
	created_at, updated_at, tenant, allowed_routes, integration`

// queryVirtualKeys calls fn with each virtual key the condition where
// (with args; "" for every row) selects, its credentials opened, ordered
// by creation time, workspace and slug.
func (s *Store) queryVirtualKeys(ctx context.Context, q querier, where string, fn func(*gateway.VirtualKey), args ...any) error {
	query := `SELECT ` + virtualKeyColumns + ` FROM virtual_keys`
	if where != "" {
		query += ` WHERE ` + where
	}
	rows, err := q.QueryContext(ctx, s.dialect.rebind(query+` ORDER BY created_at NULLS FIRST, workspace_id, slug`), args...)
	if err != nil {
		return fmt.Errorf("sqlstore: reading virtual keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		vk, err := s.scanVirtualKey(rows)
		if err != nil {
			return err
		}
		fn(vk)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: reading virtual keys: %w", err)
	}
	return nil
}

// scanVirtualKey reads one row of virtualKeyColumns, opening its
// credentials.
func (s *Store) scanVirtualKey(row scanner) (*gateway.VirtualKey, error) {
	var (
		vk                      gateway.VirtualKey
		h                       = &vk.HostSettings
		rowID                   string
		apiKey, secret, session []byte
		created, updated        sql.NullTime
		routes                  string
	)
	if err := row.Scan(&rowID, &vk.WorkspaceID, &vk.Slug, &vk.Provider, &vk.BaseURL, &h.ResourceName, &h.DeploymentID,
		&h.APIVersion, &h.ModelName, &h.ProjectID, &h.Region, &h.AccessKeyID, &apiKey, &secret, &session, &vk.Name, &vk.Note,
		&created, &updated, &vk.Tenant, &routes, &vk.Integration); err != nil {
		return nil, fmt.Errorf("sqlstore: reading virtual keys: %w", err)
	}
	if err := json.Unmarshal([]byte(routes), &vk.AllowedRoutes); err != nil {
		return nil, fmt.Errorf("sqlstore: virtual key %q: allowed_routes: %w", vk.Slug, err)
	}
	vk.CreatedAt, vk.UpdatedAt = fromNullTime(created), fromNullTime(updated)
	for _, f := range []struct {
		dst    *string
		sealed []byte
		column string
	}{{&vk.APIKey, apiKey, "api_key"}, {&h.SecretAccessKey, secret, "secret_access_key"}, {&h.SessionToken, session, "session_token"}} {
		if f.sealed == nil {
			continue
		}
		p, err := s.seal.open(f.sealed, "virtual_keys", f.column, rowID)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: virtual key %q: %s: %w", vk.Slug, f.column, err)
		}
		*f.dst = string(p)
	}
	return &vk, nil
}

// loadVirtualKeys reads the virtual keys of slug (every slug when it is
// empty) into snap.vkeys, replacing what it held for them: per slug, the
// one of no workspace or else the one of the workspace whose id sorts
// first.
func (s *Store) loadVirtualKeys(ctx context.Context, tx *sql.Tx, snap *snapshot, slug string) error {
	where, args := "", []any(nil)
	if slug != "" {
		where, args = "slug = $1", []any{slug}
		delete(snap.vkeys, slug)
		delete(snap.vkeysIn, slug) // the inner map may be shared with the last snapshot: a new one is made
	}
	return s.queryVirtualKeys(ctx, tx, where, func(vk *gateway.VirtualKey) {
		if vk.Integration != "" {
			in, ok := snap.integrations[vk.Integration]
			if !ok {
				return
			}
			if vk, ok = in.Join(vk); !ok {
				return
			}
		}
		if cur, ok := snap.vkeys[vk.Slug]; !ok || vk.WorkspaceID < cur.WorkspaceID {
			snap.vkeys[vk.Slug] = vk // "" sorts first
		}
		in := snap.vkeysIn[vk.Slug]
		if in == nil {
			in = make(map[string]*gateway.VirtualKey, 1)
			snap.vkeysIn[vk.Slug] = in
		}
		in[vk.WorkspaceID] = vk
	}, args...)
}
