package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	gateway "github.com/modelgateway/gateway"
)

// The console's sessions (console.SessionStore) live in console_sessions,
// outside the snapshot: their writes do not move the generation, and
// every lookup reads the database, so that a sign-in on one replica is
// seen at once by the others.

// CreateConsoleSession implements console.SessionStore: it stores the
// session whose id has the SHA-256 digest d, with key sealed under the
// master key for this row (ErrMasterKeyRequired without one), and first
// deletes the sessions that have ended.
func (s *Store) CreateConsoleSession(ctx context.Context, d [sha256.Size]byte, key, csrf string, expires time.Time) error {
	sealed, err := s.seal.seal([]byte(key), "console_sessions", "api_key", hex.EncodeToString(d[:]))
	if err != nil {
		return fmt.Errorf("sqlstore: console session: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, s.dialect.rebind(`DELETE FROM console_sessions WHERE expires_us <= $1`),
		time.Now().UnixMicro()); err != nil {
		return fmt.Errorf("sqlstore: console sessions: %w", err)
	}
	_, err = s.db.ExecContext(ctx, s.dialect.rebind(`INSERT INTO console_sessions (id_digest, api_key, csrf, expires_us)
VALUES ($1, $2, $3, $4)`), d[:], sealed, csrf, expires.UnixMicro())
	if err != nil {
		return fmt.Errorf("sqlstore: console session: %w", err)
	}
	return nil
}

// ConsoleSession implements console.SessionStore: the key, form token and
// end of the session whose id has the digest d, or gateway.ErrNotFound.
func (s *Store) ConsoleSession(ctx context.Context, d [sha256.Size]byte) (key, csrf string, expires time.Time, err error) {
	var sealed []byte
	var us int64
	err = s.db.QueryRowContext(ctx, s.dialect.rebind(`SELECT api_key, csrf, expires_us FROM console_sessions WHERE id_digest = $1`),
		d[:]).Scan(&sealed, &csrf, &us)
	switch {
	case notFound(err):
		return "", "", time.Time{}, gateway.ErrNotFound
	case err != nil:
		return "", "", time.Time{}, fmt.Errorf("sqlstore: console session: %w", err)
	}
	p, err := s.seal.open(sealed, "console_sessions", "api_key", hex.EncodeToString(d[:]))
	if err != nil {
		return "", "", time.Time{}, fmt.Errorf("sqlstore: console session: %w", err)
	}
	return string(p), csrf, time.UnixMicro(us), nil
}

// DeleteConsoleSession implements console.SessionStore: it ends the
// session whose id has the digest d, if there is one.
func (s *Store) DeleteConsoleSession(ctx context.Context, d [sha256.Size]byte) error {
	if _, err := s.db.ExecContext(ctx, s.dialect.rebind(`DELETE FROM console_sessions WHERE id_digest = $1`), d[:]); err != nil {
		return fmt.Errorf("sqlstore: console session: %w", err)
	}
	return nil
}
