package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/catalog"
)

var _ catalog.Store = (*Store)(nil)

// kindIntegration is the change of an integration (ref: its slug): the
// snapshot reads the integrations and every virtual key again, since the
// providers made from an integration are held joined with it.
const kindIntegration = "integration"

// integrationData is an integration as the data column keeps it: all
// but its secrets.
type integrationData struct {
	Name           string          `json:"name"`
	Description    string          `json:"description,omitempty"`
	Provider       string          `json:"provider"`
	BaseURL        string          `json:"base_url,omitempty"`
	ResourceName   string          `json:"resource_name,omitempty"`
	DeploymentID   string          `json:"deployment_id,omitempty"`
	APIVersion     string          `json:"api_version,omitempty"`
	ModelName      string          `json:"model_name,omitempty"`
	ProjectID      string          `json:"project_id,omitempty"`
	Region         string          `json:"region,omitempty"`
	AccessKeyID    string          `json:"access_key_id,omitempty"`
	AllowAllModels bool            `json:"allow_all_models"`
	Models         []catalog.Model `json:"models,omitempty"`
	Workspaces     []catalog.Grant `json:"workspaces,omitempty"`
}

// integrationSecrets are the secrets of an integration, sealed together.
type integrationSecrets struct {
	Key             string `json:"key,omitempty"`
	SecretAccessKey string `json:"secret_access_key,omitempty"`
	SessionToken    string `json:"session_token,omitempty"`
}

// Integration implements catalog.Store from the database.
func (s *Store) Integration(ctx context.Context, slug string) (*catalog.Integration, error) {
	var out *catalog.Integration
	err := s.queryIntegrations(ctx, s.db, "slug = $1", func(in *catalog.Integration) { out = in }, slug)
	if err == nil && out == nil {
		return nil, gateway.ErrNotFound
	}
	return out, err
}

// Integrations implements catalog.Store from the database: every
// integration, oldest first.
func (s *Store) Integrations(ctx context.Context) ([]catalog.Integration, error) {
	var out []catalog.Integration
	err := s.queryIntegrations(ctx, s.db, "", func(in *catalog.Integration) { out = append(out, *in) })
	return out, err
}

// CreateIntegration implements catalog.Store: its secrets sealed under
// the master key (ErrMasterKeyRequired without one), or
// gateway.ErrConflict for a taken slug.
func (s *Store) CreateIntegration(ctx context.Context, in *catalog.Integration) error {
	return s.update(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT COUNT(*) FROM integrations WHERE slug = $1 OR id = $2`), in.Slug, in.ID).Scan(&n); err != nil {
			return fmt.Errorf("sqlstore: integration %q: %w", in.Slug, err)
		}
		if n > 0 {
			return fmt.Errorf("sqlstore: integration %q: %w", in.Slug, gateway.ErrConflict)
		}
		data, secrets, err := s.integrationRow(in)
		if err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO integrations (id, slug, data, secrets, created_us, updated_us) VALUES ($1, $2, $3, $4, $5, $6)`,
			in.ID, in.Slug, data, secrets, in.CreatedAt.UnixMicro(), in.UpdatedAt.UnixMicro()); err != nil {
			return fmt.Errorf("sqlstore: integration %q: %w", in.Slug, err)
		}
		return s.changed(ctx, tx, kindIntegration, in.Slug)
	})
}

// UpdateIntegration implements catalog.Store: it replaces the stored
// integration old.Slug with in if the stored one still has old's
// UpdatedAt (to the microsecond), atomically with respect to every write
// of every replica.
func (s *Store) UpdateIntegration(ctx context.Context, old, in *catalog.Integration) error {
	return s.update(ctx, func(tx *sql.Tx) error {
		if in.Slug != old.Slug || in.ID != old.ID {
			return fmt.Errorf("sqlstore: integration %q: %w", old.Slug, gateway.ErrConflict)
		}
		data, secrets, err := s.integrationRow(in)
		if err != nil {
			return err
		}
		res, err := s.exec(ctx, tx, `UPDATE integrations SET data = $1, secrets = $2, updated_us = $3 WHERE slug = $4 AND updated_us = $5`,
			data, secrets, in.UpdatedAt.UnixMicro(), old.Slug, old.UpdatedAt.UnixMicro())
		if err != nil {
			return fmt.Errorf("sqlstore: integration %q: %w", old.Slug, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("sqlstore: %w", err)
		} else if n == 0 {
			var c int
			if err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT COUNT(*) FROM integrations WHERE slug = $1`), old.Slug).Scan(&c); err != nil {
				return fmt.Errorf("sqlstore: %w", err)
			}
			if c == 0 {
				return gateway.ErrNotFound
			}
			return fmt.Errorf("sqlstore: integration %q changed since it was read: %w", old.Slug, gateway.ErrConflict)
		}
		return s.changed(ctx, tx, kindIntegration, in.Slug)
	})
}

// DeleteIntegration implements catalog.Store: its providers are found no
// more.
func (s *Store) DeleteIntegration(ctx context.Context, slug string) error {
	return s.deleteRow(ctx, kindIntegration, slug, "integrations", "slug = $1", slug)
}

// integrationRow returns the data and sealed secrets columns of in.
func (s *Store) integrationRow(in *catalog.Integration) (string, []byte, error) {
	h := &in.HostSettings
	data, err := json.Marshal(integrationData{Name: in.Name, Description: in.Description, Provider: in.Provider, BaseURL: in.BaseURL,
		ResourceName: h.ResourceName, DeploymentID: h.DeploymentID, APIVersion: h.APIVersion, ModelName: h.ModelName,
		ProjectID: h.ProjectID, Region: h.Region, AccessKeyID: h.AccessKeyID, AllowAllModels: in.AllowAllModels,
		Models: in.Models, Workspaces: in.Workspaces})
	if err != nil {
		return "", nil, fmt.Errorf("sqlstore: integration %q: %w", in.Slug, err)
	}
	sec := integrationSecrets{Key: in.APIKey, SecretAccessKey: h.SecretAccessKey, SessionToken: h.SessionToken}
	if sec == (integrationSecrets{}) {
		return string(data), nil, nil
	}
	plain, err := json.Marshal(sec)
	if err != nil {
		return "", nil, err
	}
	sealed, err := s.seal.seal(plain, "integrations", "secrets", in.ID)
	if err != nil {
		return "", nil, fmt.Errorf("sqlstore: integration %q: %w", in.Slug, err)
	}
	return string(data), sealed, nil
}

// queryIntegrations calls fn with each integration where (with args; ""
// for every row) selects, its secrets opened, oldest first.
func (s *Store) queryIntegrations(ctx context.Context, q querier, where string, fn func(*catalog.Integration), args ...any) error {
	query := `SELECT id, slug, data, secrets, created_us, updated_us FROM integrations`
	if where != "" {
		query += ` WHERE ` + where
	}
	rows, err := q.QueryContext(ctx, s.dialect.rebind(query+` ORDER BY created_us, slug`), args...)
	if err != nil {
		return fmt.Errorf("sqlstore: reading integrations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			in               catalog.Integration
			data             string
			sealed           []byte
			created, updated int64
			d                integrationData
		)
		if err := rows.Scan(&in.ID, &in.Slug, &data, &sealed, &created, &updated); err != nil {
			return fmt.Errorf("sqlstore: reading integrations: %w", err)
		}
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			return fmt.Errorf("sqlstore: integration %q: %w", in.Slug, err)
		}
		in.Name, in.Description, in.Provider, in.BaseURL = d.Name, d.Description, d.Provider, d.BaseURL
		in.HostSettings = gateway.HostSettings{ResourceName: d.ResourceName, DeploymentID: d.DeploymentID, APIVersion: d.APIVersion,
			ModelName: d.ModelName, ProjectID: d.ProjectID, Region: d.Region, AccessKeyID: d.AccessKeyID}
		in.AllowAllModels, in.Models, in.Workspaces = d.AllowAllModels, d.Models, d.Workspaces
		in.CreatedAt, in.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
		if sealed != nil {
			plain, err := s.seal.open(sealed, "integrations", "secrets", in.ID)
			if err != nil {
				return fmt.Errorf("sqlstore: integration %q: %w", in.Slug, err)
			}
			var sec integrationSecrets
			if err := json.Unmarshal(plain, &sec); err != nil {
				return fmt.Errorf("sqlstore: integration %q: %w", in.Slug, err)
			}
			in.APIKey, in.SecretAccessKey, in.SessionToken = sec.Key, sec.SecretAccessKey, sec.SessionToken
		}
		fn(&in)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: reading integrations: %w", err)
	}
	return nil
}

// loadIntegrations reads every integration into snap.integrations.
func (s *Store) loadIntegrations(ctx context.Context, tx *sql.Tx, snap *snapshot) error {
	snap.integrations = make(map[string]*catalog.Integration)
	return s.queryIntegrations(ctx, tx, "", func(in *catalog.Integration) { snap.integrations[in.Slug] = in })
}
