package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	gateway "github.com/modelgateway/gateway"
)

// VirtualKey implements gateway.VirtualKeyStore from the snapshot, with
// its credentials opened: the virtual key of no workspace with that slug
// or, when there is none, the one of the workspace whose id sorts first
// (the gateway then refuses it to callers of other workspaces), as
// gateway.MemoryStore answers. The record is shared by every caller and
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
// microsecond. The caller validates vk (Load does, as
// gateway.MemoryStore.Load).
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
	_, err = s.exec(ctx, tx, `INSERT INTO virtual_keys (id, workspace_id, slug, provider, base_url, resource_name, deployment_id,
	api_version, model_name, project_id, region, access_key_id, api_key, secret_access_key, session_token, name, note,
	created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
ON CONFLICT (id) DO UPDATE SET provider = excluded.provider, base_url = excluded.base_url,
	resource_name = excluded.resource_name, deployment_id = excluded.deployment_id, api_version = excluded.api_version,
	model_name = excluded.model_name, project_id = excluded.project_id, region = excluded.region,
	access_key_id = excluded.access_key_id, api_key = excluded.api_key, secret_access_key = excluded.secret_access_key,
	session_token = excluded.session_token, name = excluded.name, note = excluded.note,
	created_at = excluded.created_at, updated_at = excluded.updated_at`,
		rowID, vk.WorkspaceID, vk.Slug, vk.Provider, vk.BaseURL, h.ResourceName, h.DeploymentID,
		h.APIVersion, h.ModelName, h.ProjectID, h.Region, h.AccessKeyID, sealed[0], sealed[1], sealed[2], vk.Name, vk.Note,
		nullTime(vk.CreatedAt), nullTime(vk.UpdatedAt))
	if err != nil {
		return fmt.Errorf("sqlstore: virtual key %q: %w", vk.Slug, err)
	}
	return nil
}

// DeleteVirtualKey deletes the virtual key slug of workspace workspaceID
// (empty: of no workspace). It returns gateway.ErrNotFound when there is
// none.
func (s *Store) DeleteVirtualKey(ctx context.Context, workspaceID, slug string) error {
	return s.deleteRow(ctx, "virtual_keys", "workspace_id = $1 AND slug = $2", workspaceID, slug)
}

// loadVirtualKeys reads every virtual key into snap, opening its
// credentials.
func (s *Store) loadVirtualKeys(ctx context.Context, tx *sql.Tx, snap *snapshot) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, workspace_id, slug, provider, base_url, resource_name, deployment_id,
	api_version, model_name, project_id, region, access_key_id, api_key, secret_access_key, session_token, name, note,
	created_at, updated_at FROM virtual_keys`)
	if err != nil {
		return fmt.Errorf("sqlstore: reading virtual keys: %w", err)
	}
	defer rows.Close()
	snap.vkeys = make(map[string]*gateway.VirtualKey)
	for rows.Next() {
		var (
			vk                      gateway.VirtualKey
			h                       = &vk.HostSettings
			rowID                   string
			apiKey, secret, session []byte
			created, updated        sql.NullTime
		)
		if err := rows.Scan(&rowID, &vk.WorkspaceID, &vk.Slug, &vk.Provider, &vk.BaseURL, &h.ResourceName, &h.DeploymentID,
			&h.APIVersion, &h.ModelName, &h.ProjectID, &h.Region, &h.AccessKeyID, &apiKey, &secret, &session, &vk.Name, &vk.Note,
			&created, &updated); err != nil {
			return fmt.Errorf("sqlstore: reading virtual keys: %w", err)
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
				return fmt.Errorf("sqlstore: virtual key %q: %s: %w", vk.Slug, f.column, err)
			}
			*f.dst = string(p)
		}
		if cur, ok := snap.vkeys[vk.Slug]; !ok || vk.WorkspaceID < cur.WorkspaceID {
			snap.vkeys[vk.Slug] = &vk // "" sorts first
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: reading virtual keys: %w", err)
	}
	return nil
}
