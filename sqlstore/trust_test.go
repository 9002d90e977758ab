package sqlstore_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestTrustMigrationGuardsOldRows: the virtual keys and configs of a
// database at schema version 7 come out of the migration as a tenant's
// (their hosts guarded: the closed side), and the operator's store file,
// applied again as examples/server does at every start, makes its own
// entries trusted again; allowed_routes of old rows is empty.
func TestTrustMigrationGuardsOldRows(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db := rawDB(t, dsn)
		dir := filepath.Join("migrations", "sqlite")
		if isPostgres(dsn) {
			dir = filepath.Join("migrations", "postgres")
		}
		if _, err := db.Exec(`CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		for v, name := range []string{"0001_init.sql", "0002_control_plane.sql", "0003_request_logs.sql",
			"0004_request_logs_v4.sql", "0005_usage_limits.sql", "0006_log_exports.sql", "0007_analytics.sql"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(string(b)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if _, err := db.Exec(rebind(dsn, `INSERT INTO schema_version (version, applied_at) VALUES ($1, 'then')`), v+1); err != nil {
				t.Fatal(err)
			}
		}
		for _, slug := range []string{"vk-tenant", "vk-operator"} {
			if _, err := db.Exec(rebind(dsn, `INSERT INTO virtual_keys (id, workspace_id, slug, provider, base_url)
VALUES ($1, '', $2, 'openai', 'http://internal.example/v1')`), "row-"+slug, slug); err != nil {
				t.Fatal(err)
			}
		}
		s := openStore(t, dsn, sqlstore.Options{})
		for _, slug := range []string{"vk-tenant", "vk-operator"} {
			vk, err := s.VirtualKey(ctx, slug)
			if err != nil {
				t.Fatal(err)
			}
			if !vk.Tenant || vk.AllowedRoutes != nil {
				t.Errorf("migrated %s: Tenant %v, AllowedRoutes %q; want true, none", slug, vk.Tenant, vk.AllowedRoutes)
			}
		}
		f := &admin.File{
			VirtualKeys: []gateway.VirtualKey{{Slug: "vk-operator", Provider: "openai", BaseURL: "http://internal.example/v1",
				AllowedRoutes: []string{"GET /models"}}},
			Configs: []gateway.SavedConfig{{ID: "pc-operator", Config: json.RawMessage(`{"provider":"openai","custom_host":"http://internal.example/v1"}`)}},
		}
		if err := s.Load(ctx, f); err != nil {
			t.Fatal(err)
		}
		if vk, err := s.VirtualKey(ctx, "vk-operator"); err != nil || vk.Tenant || len(vk.AllowedRoutes) != 1 {
			t.Errorf("after Load: %+v, %v; want the operator's, with its allowed_routes", vk, err)
		}
		if vk, err := s.VirtualKey(ctx, "vk-tenant"); err != nil || !vk.Tenant {
			t.Errorf("an entry Load does not name: %+v, %v; want it still guarded", vk, err)
		}
		if c, err := s.Config(ctx, "pc-operator"); err != nil || c.Tenant {
			t.Errorf("config after Load: %+v, %v; want the operator's", c, err)
		}
		// A tenant's update, and the control plane's reads, keep the flag.
		old, err := s.VirtualKeyIn(ctx, "", "vk-operator")
		if err != nil {
			t.Fatal(err)
		}
		upd := *old
		upd.Tenant, upd.AllowedRoutes = true, nil
		if err := s.UpdateVirtualKey(ctx, old, &upd); err != nil {
			t.Fatal(err)
		}
		all, err := s.VirtualKeys(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, vk := range all {
			if !vk.Tenant || vk.AllowedRoutes != nil {
				t.Errorf("VirtualKeys: %s Tenant %v, AllowedRoutes %q; want true, none", vk.Slug, vk.Tenant, vk.AllowedRoutes)
			}
		}
	})
}
