package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/users"
)

var _ users.Store = (*Store)(nil)

// People (users.Store) live in users, workspace_members, user_invites and
// user_session_keys, outside the snapshot: every read goes to the
// database, and writes do not move the generation, so replicas see them
// at once.

// usersTx runs fn in a transaction (see storeTx).
func (s *Store) usersTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.storeTx(ctx, "users", fn)
}

// execer is a *sql.DB or a *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// affected runs query and returns err when it changed no row.
func (s *Store) affected(ctx context.Context, db execer, none error, query string, args ...any) error {
	res, err := db.ExecContext(ctx, s.dialect.rebind(query), args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return none
	}
	return nil
}

func (s *Store) insertUser(ctx context.Context, db execer, u *users.User) error {
	return s.affected(ctx, db, gateway.ErrConflict, `INSERT INTO users
(id, email, first_name, last_name, role, password_hash, created_us, updated_us) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT DO NOTHING`, u.ID, u.Email, u.FirstName, u.LastName, string(u.Role), u.PasswordHash,
		u.CreatedAt.UnixMicro(), u.UpdatedAt.UnixMicro())
}

// CreateUser implements users.Store.
func (s *Store) CreateUser(ctx context.Context, u *users.User) error {
	return s.usersTx(ctx, func(tx *sql.Tx) error { return s.insertUser(ctx, tx, u) })
}

const userColumns = `id, email, first_name, last_name, role, password_hash, created_us, updated_us`

// scanUser reads a row of userColumns.
func scanUser(row interface{ Scan(...any) error }) (*users.User, error) {
	var u users.User
	var role string
	var created, updated int64
	if err := row.Scan(&u.ID, &u.Email, &u.FirstName, &u.LastName, &role, &u.PasswordHash, &created, &updated); err != nil {
		return nil, err
	}
	u.Role, u.CreatedAt, u.UpdatedAt = users.Role(role), time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return &u, nil
}

func (s *Store) userWhere(ctx context.Context, column, value string) (*users.User, error) {
	u, err := scanUser(s.db.QueryRowContext(ctx, s.dialect.rebind(`SELECT `+userColumns+` FROM users WHERE `+column+` = $1`), value))
	switch {
	case notFound(err):
		return nil, gateway.ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("sqlstore: reading a user: %w", err)
	}
	return u, nil
}

// User implements users.Store.
func (s *Store) User(ctx context.Context, id string) (*users.User, error) {
	return s.userWhere(ctx, "id", id)
}

// UserByEmail implements users.Store.
func (s *Store) UserByEmail(ctx context.Context, email string) (*users.User, error) {
	return s.userWhere(ctx, "email", email)
}

// Users implements users.Store.
func (s *Store) Users(ctx context.Context) ([]users.User, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+userColumns+` FROM users ORDER BY created_us, id`)
	return scanAll(rows, err, "users", scanUser)
}

// scanAll reads every row of a query (whose error is err) with scan.
func scanAll[T any](rows *sql.Rows, err error, what string, scan func(row interface{ Scan(...any) error }) (*T, error)) ([]T, error) {
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading %s: %w", what, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: reading %s: %w", what, err)
		}
		out = append(out, *v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: reading %s: %w", what, err)
	}
	return out, nil
}

// UpdateUser implements users.Store.
func (s *Store) UpdateUser(ctx context.Context, u *users.User) error {
	return s.usersTx(ctx, func(tx *sql.Tx) error {
		var taken int
		if err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT COUNT(*) FROM users WHERE email = $1 AND id <> $2`),
			u.Email, u.ID).Scan(&taken); err != nil {
			return err
		}
		if taken > 0 {
			return gateway.ErrConflict
		}
		return s.affected(ctx, tx, gateway.ErrNotFound, `UPDATE users SET email = $1, first_name = $2, last_name = $3,
role = $4, password_hash = $5, created_us = $6, updated_us = $7 WHERE id = $8`, u.Email, u.FirstName, u.LastName,
			string(u.Role), u.PasswordHash, u.CreatedAt.UnixMicro(), u.UpdatedAt.UnixMicro(), u.ID)
	})
}

// DeleteUser implements users.Store.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	return s.usersTx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{`DELETE FROM workspace_members WHERE user_id = $1`, `DELETE FROM user_session_keys WHERE user_id = $1`} {
			if _, err := tx.ExecContext(ctx, s.dialect.rebind(q), id); err != nil {
				return err
			}
		}
		return s.affected(ctx, tx, gateway.ErrNotFound, `DELETE FROM users WHERE id = $1`, id)
	})
}

// Members implements users.Store.
func (s *Store) Members(ctx context.Context, ws string) ([]users.Member, error) {
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(`SELECT workspace_id, user_id, role, created_us, updated_us
FROM workspace_members WHERE $1 = '' OR workspace_id = $1 ORDER BY created_us, workspace_id, user_id`), ws)
	return scanAll(rows, err, "members", func(row interface{ Scan(...any) error }) (*users.Member, error) {
		var m users.Member
		var role string
		var created, updated int64
		if err := row.Scan(&m.WorkspaceID, &m.UserID, &role, &created, &updated); err != nil {
			return nil, err
		}
		m.Role, m.CreatedAt, m.UpdatedAt = users.WorkspaceRole(role), time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
		return &m, nil
	})
}

// PutMember implements users.Store.
func (s *Store) PutMember(ctx context.Context, m *users.Member) error {
	return s.usersTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT COUNT(*) FROM users WHERE id = $1`), m.UserID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return gateway.ErrNotFound
		}
		return s.putMember(ctx, tx, m)
	})
}

func (s *Store) putMember(ctx context.Context, tx *sql.Tx, m *users.Member) error {
	_, err := tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO workspace_members (workspace_id, user_id, role, created_us, updated_us)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role, updated_us = excluded.updated_us`),
		m.WorkspaceID, m.UserID, string(m.Role), m.CreatedAt.UnixMicro(), m.UpdatedAt.UnixMicro())
	return err
}

// DeleteMember implements users.Store.
func (s *Store) DeleteMember(ctx context.Context, ws, user string) error {
	err := s.affected(ctx, s.db, gateway.ErrNotFound, `DELETE FROM workspace_members WHERE workspace_id = $1 AND user_id = $2`, ws, user)
	if err != nil && !errors.Is(err, gateway.ErrNotFound) {
		return fmt.Errorf("sqlstore: deleting a member: %w", err)
	}
	return err
}

// CreateInvite implements users.Store.
func (s *Store) CreateInvite(ctx context.Context, iv *users.Invite) error {
	ws, err := json.Marshal(iv.Workspaces)
	if err != nil {
		return err
	}
	err = s.affected(ctx, s.db, gateway.ErrConflict, `INSERT INTO user_invites
(id, token_digest, email, role, workspaces, invited_by, created_us, expires_us, accepted_us)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`, iv.ID, iv.Digest[:], iv.Email, string(iv.Role), string(ws),
		iv.InvitedBy, iv.CreatedAt.UnixMicro(), iv.ExpiresAt.UnixMicro(), micros(iv.AcceptedAt))
	if err != nil && !errors.Is(err, gateway.ErrConflict) {
		return fmt.Errorf("sqlstore: storing an invite: %w", err)
	}
	return err
}

// micros is t in Unix microseconds, 0 for the zero time.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

const inviteColumns = `id, token_digest, email, role, workspaces, invited_by, created_us, expires_us, accepted_us`

func scanInvite(row interface{ Scan(...any) error }) (*users.Invite, error) {
	var iv users.Invite
	var digest []byte
	var role, ws string
	var created, expires, accepted int64
	if err := row.Scan(&iv.ID, &digest, &iv.Email, &role, &ws, &iv.InvitedBy, &created, &expires, &accepted); err != nil {
		return nil, err
	}
	copy(iv.Digest[:], digest)
	iv.Role, iv.CreatedAt, iv.ExpiresAt = users.Role(role), time.UnixMicro(created).UTC(), time.UnixMicro(expires).UTC()
	if accepted != 0 {
		iv.AcceptedAt = time.UnixMicro(accepted).UTC()
	}
	if err := json.Unmarshal([]byte(ws), &iv.Workspaces); err != nil {
		return nil, err
	}
	return &iv, nil
}

func (s *Store) inviteWhere(ctx context.Context, column string, value any) (*users.Invite, error) {
	iv, err := scanInvite(s.db.QueryRowContext(ctx, s.dialect.rebind(`SELECT `+inviteColumns+` FROM user_invites WHERE `+column+` = $1`), value))
	switch {
	case notFound(err):
		return nil, gateway.ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("sqlstore: reading an invite: %w", err)
	}
	return iv, nil
}

// Invite implements users.Store.
func (s *Store) Invite(ctx context.Context, id string) (*users.Invite, error) {
	return s.inviteWhere(ctx, "id", id)
}

// InviteByDigest implements users.Store.
func (s *Store) InviteByDigest(ctx context.Context, d [sha256.Size]byte) (*users.Invite, error) {
	return s.inviteWhere(ctx, "token_digest", d[:])
}

// Invites implements users.Store.
func (s *Store) Invites(ctx context.Context) ([]users.Invite, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+inviteColumns+` FROM user_invites ORDER BY created_us, id`)
	return scanAll(rows, err, "invites", scanInvite)
}

// pendingOr is the error of a write to the invite of id that changed
// nothing: ErrConflict when it is accepted, else ErrNotFound.
func (s *Store) pendingOr(ctx context.Context, tx *sql.Tx, id string) error {
	var n int
	if err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT COUNT(*) FROM user_invites WHERE id = $1`), id).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return gateway.ErrConflict
	}
	return gateway.ErrNotFound
}

// RenewInvite implements users.Store.
func (s *Store) RenewInvite(ctx context.Context, id string, d [sha256.Size]byte, expires time.Time) error {
	return s.usersTx(ctx, func(tx *sql.Tx) error {
		err := s.affected(ctx, tx, errNoRow, `UPDATE user_invites SET token_digest = $1, expires_us = $2 WHERE id = $3 AND accepted_us = 0`,
			d[:], expires.UnixMicro(), id)
		if errors.Is(err, errNoRow) {
			return s.pendingOr(ctx, tx, id)
		}
		return err
	})
}

// errNoRow is what affected returns for a write that changed no row
// when the caller finds out why.
var errNoRow = errors.New("sqlstore: no row changed")

// DeleteInvite implements users.Store.
func (s *Store) DeleteInvite(ctx context.Context, id string) error {
	err := s.affected(ctx, s.db, gateway.ErrNotFound, `DELETE FROM user_invites WHERE id = $1`, id)
	if err != nil && !errors.Is(err, gateway.ErrNotFound) {
		return fmt.Errorf("sqlstore: deleting an invite: %w", err)
	}
	return err
}

// AcceptInvite implements users.Store, atomically with respect to every
// write of every replica: the invite is marked accepted only while it
// is pending, in the transaction that creates the user.
func (s *Store) AcceptInvite(ctx context.Context, id string, u *users.User) error {
	return s.usersTx(ctx, func(tx *sql.Tx) error {
		err := s.affected(ctx, tx, errNoRow, `UPDATE user_invites SET accepted_us = $1 WHERE id = $2 AND accepted_us = 0`,
			u.CreatedAt.UnixMicro(), id)
		if errors.Is(err, errNoRow) {
			return s.pendingOr(ctx, tx, id)
		}
		if err != nil {
			return err
		}
		iv, err := scanInvite(tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT `+inviteColumns+` FROM user_invites WHERE id = $1`), id))
		if err != nil {
			return err
		}
		if err := s.insertUser(ctx, tx, u); err != nil {
			return err
		}
		for _, g := range iv.Workspaces {
			if err := s.putMember(ctx, tx, &users.Member{WorkspaceID: g.WorkspaceID, UserID: u.ID, Role: g.Role,
				CreatedAt: u.CreatedAt, UpdatedAt: u.CreatedAt}); err != nil {
				return err
			}
		}
		return nil
	})
}

// CreateSessionKey implements users.Store.
func (s *Store) CreateSessionKey(ctx context.Context, k *users.SessionKey) error {
	return s.usersTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.dialect.rebind(`DELETE FROM user_session_keys WHERE expires_us <= $1`), time.Now().UnixMicro()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO user_session_keys (key_digest, user_id, workspace_id, expires_us)
VALUES ($1, $2, $3, $4)`), k.Digest[:], k.UserID, k.WorkspaceID, k.ExpiresAt.UnixMicro())
		return err
	})
}

// SessionKey implements users.Store.
func (s *Store) SessionKey(ctx context.Context, d [sha256.Size]byte) (*users.SessionKey, error) {
	k := users.SessionKey{Digest: d}
	var expires int64
	err := s.db.QueryRowContext(ctx, s.dialect.rebind(`SELECT user_id, workspace_id, expires_us FROM user_session_keys WHERE key_digest = $1`),
		d[:]).Scan(&k.UserID, &k.WorkspaceID, &expires)
	switch {
	case notFound(err):
		return nil, gateway.ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("sqlstore: reading a session key: %w", err)
	}
	k.ExpiresAt = time.UnixMicro(expires).UTC()
	return &k, nil
}

// DeleteSessionKey implements users.Store.
func (s *Store) DeleteSessionKey(ctx context.Context, d [sha256.Size]byte) error {
	if _, err := s.db.ExecContext(ctx, s.dialect.rebind(`DELETE FROM user_session_keys WHERE key_digest = $1`), d[:]); err != nil {
		return fmt.Errorf("sqlstore: deleting a session key: %w", err)
	}
	return nil
}
