package sqlstore_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestMasterKey: a database whose secrets were sealed under one key is
// refused under another, and without a key, with errors that say so;
// under the right key it opens with its secrets intact.
func TestMasterKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		if err := s.PutVirtualKey(ctx, fullVirtualKey("vk", "one")); err != nil {
			t.Fatal(err)
		}
		s.Close()

		other := bytes.Repeat([]byte{7}, sqlstore.MasterKeySize)
		_, err := sqlstore.Open(ctx, dsn, sqlstore.Options{MasterKey: other})
		if !errors.Is(err, sqlstore.ErrWrongMasterKey) || err.Error() != "sqlstore: the master key does not open this database" {
			t.Errorf("Open under another key: %v, want ErrWrongMasterKey", err)
		}
		_, err = sqlstore.Open(ctx, dsn, sqlstore.Options{})
		if !errors.Is(err, sqlstore.ErrMasterKeyRequired) {
			t.Errorf("Open without a key: %v, want ErrMasterKeyRequired", err)
		}
		s = openStore(t, dsn, sqlstore.Options{})
		if vk, err := s.VirtualKey(ctx, "vk"); err != nil || vk.APIKey != "sk-one" || vk.SessionToken != "aws-session-one" {
			t.Errorf("virtual key under the right key = %+v, %v", vk, err)
		}
	})
}

// TestNoMasterKey: a store without a master key keeps what needs no
// sealing, refuses what does, and the first key that opens the database
// becomes its key.
func TestNoMasterKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.PutAPIKey(ctx, &gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-k")}); err != nil {
			t.Errorf("PutAPIKey without a master key: %v", err)
		}
		if err := s.PutVirtualKey(ctx, &gateway.VirtualKey{Slug: "open", Provider: "openai"}); err != nil {
			t.Errorf("PutVirtualKey without a credential nor a master key: %v", err)
		}
		if err := s.PutVirtualKey(ctx, fullVirtualKey("sealed", "x")); !errors.Is(err, sqlstore.ErrMasterKeyRequired) {
			t.Errorf("PutVirtualKey with a credential, without a master key: %v, want ErrMasterKeyRequired", err)
		}
		if err := s.PutConfig(ctx, &gateway.SavedConfig{ID: "c", Config: json.RawMessage(`{}`)}); !errors.Is(err, sqlstore.ErrMasterKeyRequired) {
			t.Errorf("PutConfig without a master key: %v, want ErrMasterKeyRequired", err)
		}
		if _, err := s.VirtualKey(ctx, "sealed"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("a refused virtual key was stored: %v", err)
		}
		s.Close()

		// The first key seals the check value; then no other opens it.
		openStore(t, dsn, sqlstore.Options{}).Close()
		if _, err := sqlstore.Open(ctx, dsn, sqlstore.Options{}); !errors.Is(err, sqlstore.ErrMasterKeyRequired) {
			t.Errorf("Open without a key after one was used: %v, want ErrMasterKeyRequired", err)
		}
		if _, err := sqlstore.Open(ctx, dsn, sqlstore.Options{MasterKey: bytes.Repeat([]byte{9}, 32)}); !errors.Is(err, sqlstore.ErrWrongMasterKey) {
			t.Errorf("Open under a second key: %v, want ErrWrongMasterKey", err)
		}
	})
}

// TestSchemaTooNew: a database migrated by a newer binary is refused,
// naming both versions.
func TestSchemaTooNew(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		openStore(t, dsn, sqlstore.Options{}).Close()
		db := rawDB(t, dsn)
		if _, err := db.Exec(rebind(dsn, `INSERT INTO schema_version (version, applied_at) VALUES ($1, 'later')`), sqlstore.SchemaVersion+6); err != nil {
			t.Fatal(err)
		}
		_, err := sqlstore.Open(ctx, dsn, sqlstore.Options{MasterKey: testKey})
		var sv *sqlstore.SchemaVersionError
		if !errors.As(err, &sv) || sv.Database != sqlstore.SchemaVersion+6 || sv.Known != sqlstore.SchemaVersion {
			t.Fatalf("Open of a newer schema: %v, want a SchemaVersionError", err)
		}
		if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("version %d", sqlstore.SchemaVersion+6)) || !strings.Contains(msg, fmt.Sprintf("version %d", sqlstore.SchemaVersion)) {
			t.Errorf("error %q does not name both versions", msg)
		}
	})
}

// TestSealedValuesStayInTheirRow: a sealed credential copied into another
// row does not open there; the store refuses to use it rather than send
// another key's secret, keeps serving its last snapshot, and Open fails
// naming the row.
func TestSealedValuesStayInTheirRow(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		for _, vk := range []*gateway.VirtualKey{fullVirtualKey("team-a", "aaa"), fullVirtualKey("team-b", "bbb")} {
			if err := s.PutVirtualKey(ctx, vk); err != nil {
				t.Fatal(err)
			}
		}
		db := rawDB(t, dsn)
		if _, err := db.Exec(`UPDATE virtual_keys SET api_key = (SELECT api_key FROM virtual_keys WHERE slug = 'team-a') WHERE slug = 'team-b'`); err != nil {
			t.Fatal(err)
		}
		// The move as another replica's write would look: a new
		// generation, and the change it made.
		if _, err := db.Exec(`UPDATE generation SET value = value + 1`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO changes (gen, kind, ref) SELECT value, 'virtual_key', 'team-b' FROM generation`); err != nil {
			t.Fatal(err)
		}
		err := s.Refresh(ctx)
		if err == nil || !strings.Contains(err.Error(), `virtual key "team-b"`) || strings.Contains(err.Error(), "aaa") {
			t.Errorf("Refresh after the move: %v, want an error naming team-b and no secret", err)
		}
		if vk, err := s.VirtualKey(ctx, "team-b"); err != nil || vk.APIKey != "sk-bbb" {
			t.Errorf("team-b after a failed refresh = %+v, %v; want the last snapshot's", vk, err)
		}
		s.Close()
		if _, err := sqlstore.Open(ctx, dsn, sqlstore.Options{MasterKey: testKey}); err == nil || !strings.Contains(err.Error(), `virtual key "team-b"`) {
			t.Errorf("Open after the move: %v, want an error naming team-b", err)
		}
	})
}

// TestNoSecretAtRest writes credentials and gateway keys holding canary
// strings, then reads every byte of the SQLite files, while the store is
// open (the -wal file holds the latest writes) and after Close: no canary
// may appear, in clear, in hex or in base64.
func TestNoSecretAtRest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dsn := filepath.Join(dir, "gateway.db")
	s := openStore(t, dsn, sqlstore.Options{})
	canaries := []string{
		"canary-gateway-key-7f3a9c",     // a gateway API key
		"canary-provider-key-51d0e2",    // a virtual key's api_key
		"canary-aws-secret-9b44aa",      // its secret_access_key
		"canary-aws-session-c0ffee",     // its session_token
		"canary-config-api-key-d15ea5",  // an api_key inside a saved config
		"canary-config-aws-secret-8e7d", // a secret_access_key inside one
	}
	f, err := admin.Decode(strings.NewReader(`{
	  "api_keys": [{"id": "key-canary", "key": "` + canaries[0] + `", "workspace_id": "ws-1"}],
	  "virtual_keys": [{"slug": "vk-canary", "provider": "bedrock", "api_key": "` + canaries[1] + `",
	                    "access_key_id": "AKIAEXAMPLE", "secret_access_key": "` + canaries[2] + `", "session_token": "` + canaries[3] + `"}],
	  "configs": [{"id": "pc-canary", "config": {"strategy": {"mode": "fallback"}, "targets": [
	    {"provider": "openai", "api_key": "` + canaries[4] + `"},
	    {"provider": "bedrock", "access_key_id": "AKIAEXAMPLE", "secret_access_key": "` + canaries[5] + `", "region": "us-east-1"}]}}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	// Written several times over, so that old versions of the pages sit
	// in the WAL and in free pages too.
	for range 3 {
		if err := s.Load(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		if err := s.PutVirtualKey(ctx, &gateway.VirtualKey{Slug: "vk-" + string(rune('a'+i%26)), Provider: "openai", APIKey: canaries[1]}); err != nil {
			t.Fatal(err)
		}
	}
	// A new version moves the canary config to config_versions, sealed
	// again there.
	cur, err := s.ConfigIn(ctx, "", "pc-canary")
	if err != nil {
		t.Fatal(err)
	}
	next := *cur
	next.Version, next.UpdatedAt, next.Config = cur.Version+1, time.Now(), json.RawMessage(`{"provider":"openai","api_key":"sk-other"}`)
	if err := s.UpdateConfig(ctx, cur, &next); err != nil {
		t.Fatal(err)
	}
	if vs, err := s.ConfigVersions(ctx, "", "pc-canary"); err != nil || len(vs) != 2 || !strings.Contains(string(vs[1].Config), canaries[4]) {
		t.Fatalf("the canary config's first version does not read back: %v", err)
	}
	if vk, err := s.VirtualKey(ctx, "vk-canary"); err != nil || vk.SecretAccessKey != canaries[2] {
		t.Fatalf("the canary credential does not read back: %+v, %v", vk, err)
	}

	scan := func(when string) {
		t.Helper()
		files, err := filepath.Glob(filepath.Join(dir, "gateway.db*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no database files: %v", when, err)
		}
		var names []string
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, filepath.Base(name))
			for _, c := range canaries {
				for _, form := range []string{c, hex.EncodeToString([]byte(c)), base64.StdEncoding.EncodeToString([]byte(c)), base64.RawStdEncoding.EncodeToString([]byte(c))[:len(c)]} {
					if bytes.Contains(data, []byte(form)) {
						t.Errorf("%s: %s holds a canary secret (%q)", when, filepath.Base(name), form)
					}
				}
			}
		}
		t.Logf("%s: scanned %v", when, names)
	}
	scan("while open")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	scan("after Close")
}

// TestDatabaseFileMode: a new SQLite file is readable by its owner only.
func TestDatabaseFileMode(t *testing.T) {
	dsn := sqliteDSN(t)
	s := openStore(t, dsn, sqlstore.Options{})
	if err := s.PutAPIKey(context.Background(), &gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-k")}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(dsn + "*")
	for _, name := range files {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group and others", filepath.Base(name), fi.Mode().Perm())
		}
	}
}
