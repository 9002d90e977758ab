package sqlstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/console"
	"github.com/modelgateway/gateway/sqlstore"
)

var _ console.SessionStore = (*sqlstore.Store)(nil)

// TestConsoleSessions: the console's sessions are shared by the stores
// of one database (replicas), found by digest, deleted on sign-out and
// once ended; the key is sealed, and a sealed key moved to another row
// does not open (docs/architecture.md, Trust).
func TestConsoleSessions(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		a, b := openStore(t, dsn, sqlstore.Options{}), openStore(t, dsn, sqlstore.Options{})
		d1, d2 := sha256.Sum256([]byte("session-1")), sha256.Sum256([]byte("session-2"))
		const key = "gw-console-session-canary"
		end := time.Now().Add(time.Hour).Truncate(time.Microsecond)
		if err := a.CreateConsoleSession(ctx, d1, key, "csrf-1", end); err != nil {
			t.Fatal(err)
		}
		gotKey, csrf, expires, err := b.ConsoleSession(ctx, d1)
		if err != nil || gotKey != key || csrf != "csrf-1" || !expires.Equal(end) {
			t.Fatalf("the session on another store of the database: %q %q %v %v", gotKey, csrf, expires, err)
		}
		if _, _, _, err := b.ConsoleSession(ctx, d2); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("an unknown session: %v, want ErrNotFound", err)
		}

		// A sealed key copied to another session's row does not open.
		if err := a.CreateConsoleSession(ctx, d2, "gw-other", "csrf-2", end); err != nil {
			t.Fatal(err)
		}
		db := rawDB(t, dsn)
		if _, err := db.Exec(rebind(dsn, `UPDATE console_sessions SET api_key = (SELECT api_key FROM console_sessions WHERE id_digest = $1) WHERE id_digest = $2`),
			d1[:], d2[:]); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := b.ConsoleSession(ctx, d2); err == nil {
			t.Error("a sealed key moved to another row opened")
		}
		var sealed []byte
		if err := db.QueryRow(rebind(dsn, `SELECT api_key FROM console_sessions WHERE id_digest = $1`), d1[:]).Scan(&sealed); err != nil ||
			bytes.Contains(sealed, []byte(key)) {
			t.Errorf("the stored key: %v, or it is in plaintext", err)
		}

		if err := b.DeleteConsoleSession(ctx, d1); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := a.ConsoleSession(ctx, d1); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("a deleted session: %v, want ErrNotFound", err)
		}
		if err := b.DeleteConsoleSession(ctx, d1); err != nil {
			t.Errorf("deleting it again: %v, want nil", err)
		}

		// Ended sessions are deleted as others are created.
		d3 := sha256.Sum256([]byte("session-3"))
		if err := a.CreateConsoleSession(ctx, d3, "gw-ended", "csrf-3", time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := a.CreateConsoleSession(ctx, sha256.Sum256([]byte("session-4")), "gw-new", "csrf-4", end); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := a.ConsoleSession(ctx, d3); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("an ended session after the next sign-in: %v, want ErrNotFound", err)
		}
	})
}

// TestConsoleSessionKeyNotInFile: the key of a console session is in no
// file of a SQLite database, in any encoding the secrets test looks for.
func TestConsoleSessionKeyNotInFile(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "gateway.db"), sqlstore.Options{})
	const key = "gw-console-file-canary-3f9a"
	if err := s.CreateConsoleSession(context.Background(), sha256.Sum256([]byte("s")), key, "csrf", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "gateway.db*"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(key)) {
			t.Errorf("%s holds the session's key", filepath.Base(name))
		}
	}
}

// TestConsoleSessionsNeedMasterKey: without a master key nothing is
// stored: the key cannot be sealed.
func TestConsoleSessionsNeedMasterKey(t *testing.T) {
	s, err := sqlstore.Open(context.Background(), sqliteDSN(t), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateConsoleSession(context.Background(), sha256.Sum256([]byte("s")), "gw-x", "csrf", time.Now().Add(time.Hour)); !errors.Is(err, sqlstore.ErrMasterKeyRequired) {
		t.Errorf("CreateConsoleSession without a master key: %v, want ErrMasterKeyRequired", err)
	}
}
