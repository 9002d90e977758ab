package sqlstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
)

var _ admin.KeyStore = (*Store)(nil)

// APIKey implements gateway.KeyStore from the snapshot: the key whose
// digest is digest, or whose previous digest it is until the key's
// PreviousValidUntil (a rotated key in its transition). The record is
// shared by every caller and must not be modified.
func (s *Store) APIKey(_ context.Context, digest [sha256.Size]byte) (*gateway.APIKey, error) {
	snap := s.snap.Load()
	if k, ok := snap.keys[digest]; ok {
		return k, nil
	}
	if k, ok := snap.prevKeys[digest]; ok && time.Now().Before(k.PreviousValidUntil) {
		return k, nil
	}
	return nil, gateway.ErrNotFound
}

// APIKeyByID implements admin.KeyStore from the snapshot. It returns
// a copy the caller may change.
func (s *Store) APIKeyByID(_ context.Context, id string) (*gateway.APIKey, error) {
	if k, ok := s.snap.Load().keysByID[id]; ok {
		return cloneAPIKey(k), nil
	}
	return nil, gateway.ErrNotFound
}

// APIKeys implements admin.KeyStore from the snapshot: copies of the
// keys of workspaceID (every key when it is empty), ordered by CreatedAt
// then ID.
func (s *Store) APIKeys(_ context.Context, workspaceID string) ([]gateway.APIKey, error) {
	snap := s.snap.Load()
	var out []gateway.APIKey
	for _, k := range snap.keysByID {
		if workspaceID == "" || k.WorkspaceID == workspaceID {
			out = append(out, *cloneAPIKey(k))
		}
	}
	slices.SortFunc(out, func(a, b gateway.APIKey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// CreateAPIKey implements admin.KeyStore: it stores a copy of k, or
// returns gateway.ErrConflict if k.ID or k.Digest (as the current or
// previous digest of another key) is taken. Times are kept to the
// microsecond.
func (s *Store) CreateAPIKey(ctx context.Context, k *gateway.APIKey) error {
	return s.update(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT COUNT(*) FROM api_keys WHERE id = $1 OR digest = $2 OR previous_digest = $2`),
			k.ID, k.Digest[:]).Scan(&n); err != nil {
			return fmt.Errorf("sqlstore: api key %q: %w", k.ID, err)
		}
		if n > 0 {
			return fmt.Errorf("sqlstore: api key %q: its id or key is taken: %w", k.ID, gateway.ErrConflict)
		}
		return s.writeAPIKey(ctx, tx, k)
	})
}

// UpdateAPIKey implements admin.KeyStore against the database: it
// replaces the stored key old.ID with a copy of k if the stored key still
// has old's Digest and UpdatedAt, atomically with respect to every write
// of every replica. It returns gateway.ErrNotFound for an unknown id and
// gateway.ErrConflict if the key changed meanwhile, if k has another id,
// or if k.Digest is another key's.
func (s *Store) UpdateAPIKey(ctx context.Context, old, k *gateway.APIKey) error {
	err := s.update(ctx, func(tx *sql.Tx) error {
		var (
			digest  []byte
			updated sql.NullTime
		)
		err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT digest, updated_at FROM api_keys WHERE id = $1`), old.ID).Scan(&digest, &updated)
		switch {
		case notFound(err):
			return gateway.ErrNotFound
		case err != nil:
			return fmt.Errorf("sqlstore: api key %q: %w", old.ID, err)
		case k.ID != old.ID || string(digest) != string(old.Digest[:]) || !fromNullTime(updated).Equal(dbTime(old.UpdatedAt)):
			return fmt.Errorf("sqlstore: api key %q changed since it was read: %w", old.ID, gateway.ErrConflict)
		}
		if err := s.checkDigestFree(ctx, tx, k); err != nil {
			return err
		}
		return s.writeAPIKey(ctx, tx, k)
	})
	if errors.Is(err, gateway.ErrConflict) || errors.Is(err, gateway.ErrNotFound) {
		// The caller reads again before a retry: let it see what it lost to.
		if rerr := s.Refresh(ctx); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return err
}

// PutAPIKey creates or replaces the gateway API key k.ID with a copy of
// k; only its digests are stored, never a key. A digest that is another
// key's (current or previous) is refused with gateway.ErrConflict. Times
// are kept to the microsecond. The caller validates k (Load does, as
// admin.Apply).
func (s *Store) PutAPIKey(ctx context.Context, k *gateway.APIKey) error {
	return s.update(ctx, func(tx *sql.Tx) error { return s.putAPIKey(ctx, tx, k) })
}

func (s *Store) putAPIKey(ctx context.Context, tx *sql.Tx, k *gateway.APIKey) error {
	if err := s.checkDigestFree(ctx, tx, k); err != nil {
		return err
	}
	return s.writeAPIKey(ctx, tx, k)
}

// checkDigestFree returns gateway.ErrConflict if k.Digest is the current
// or previous digest of a key other than k.ID.
func (s *Store) checkDigestFree(ctx context.Context, tx *sql.Tx, k *gateway.APIKey) error {
	var other string
	err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT id FROM api_keys WHERE (digest = $1 OR previous_digest = $1) AND id <> $2`),
		k.Digest[:], k.ID).Scan(&other)
	switch {
	case err == nil:
		return fmt.Errorf("sqlstore: api key %q has the same key as api key %q: %w", k.ID, other, gateway.ErrConflict)
	case !notFound(err):
		return fmt.Errorf("sqlstore: api key %q: %w", k.ID, err)
	}
	return nil
}

// writeAPIKey creates or replaces the row of k.ID.
func (s *Store) writeAPIKey(ctx context.Context, tx *sql.Tx, k *gateway.APIKey) error {
	if k.ID == "" {
		return errors.New("sqlstore: an api key needs an id")
	}
	metadata, err := json.Marshal(k.Metadata)
	if err != nil {
		return fmt.Errorf("sqlstore: api key %q: metadata: %w", k.ID, err)
	}
	scopes, err := json.Marshal(k.Scopes)
	if err != nil {
		return fmt.Errorf("sqlstore: api key %q: scopes: %w", k.ID, err)
	}
	var previous []byte
	if k.PreviousDigest != ([sha256.Size]byte{}) {
		previous = k.PreviousDigest[:]
	}
	_, err = s.exec(ctx, tx, `INSERT INTO api_keys (id, digest, workspace_id, role, disabled, metadata, default_config, scopes,
	expires_at, type, sub_type, user_id, name, description, created_at, updated_at, rate_limits, usage_limits,
	previous_digest, previous_valid_until)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
ON CONFLICT (id) DO UPDATE SET digest = excluded.digest, workspace_id = excluded.workspace_id, role = excluded.role,
	disabled = excluded.disabled, metadata = excluded.metadata, default_config = excluded.default_config,
	scopes = excluded.scopes, expires_at = excluded.expires_at, type = excluded.type, sub_type = excluded.sub_type,
	user_id = excluded.user_id, name = excluded.name, description = excluded.description,
	created_at = excluded.created_at, updated_at = excluded.updated_at, rate_limits = excluded.rate_limits,
	usage_limits = excluded.usage_limits, previous_digest = excluded.previous_digest,
	previous_valid_until = excluded.previous_valid_until`,
		k.ID, k.Digest[:], k.WorkspaceID, string(k.Role), k.Disabled, string(metadata), k.DefaultConfig, string(scopes),
		nullTime(k.ExpiresAt), string(k.Type), string(k.SubType), k.UserID, k.Name, k.Description,
		nullTime(k.CreatedAt), nullTime(k.UpdatedAt), nullJSON(k.RateLimits), nullJSON(k.UsageLimits),
		nullBytes(previous), nullTime(k.PreviousValidUntil))
	if err != nil {
		return fmt.Errorf("sqlstore: api key %q: %w", k.ID, err)
	}
	return s.changed(ctx, tx, kindAPIKey, k.ID)
}

// DeleteAPIKey deletes the gateway API key id (admin.KeyStore): it
// stops working here at once, its previous digest too, and on every
// replica at its next refresh. It returns gateway.ErrNotFound for an
// unknown id.
func (s *Store) DeleteAPIKey(ctx context.Context, id string) error {
	return s.deleteRow(ctx, kindAPIKey, id, "api_keys", "id = $1", id)
}

// apiKeyColumns are the columns scanAPIKey reads, in its order.
const apiKeyColumns = `id, digest, workspace_id, role, disabled, metadata, default_config, scopes,
	expires_at, type, sub_type, user_id, name, description, created_at, updated_at, rate_limits, usage_limits,
	previous_digest, previous_valid_until`

// loadAPIKeys reads the API key id (every key when id is empty) into
// snap, replacing what it held for it; the caller gives snap maps of its
// own (snapshot.ownKeys).
func (s *Store) loadAPIKeys(ctx context.Context, tx *sql.Tx, snap *snapshot, id string) error {
	query, args := `SELECT `+apiKeyColumns+` FROM api_keys`, []any(nil)
	if id != "" {
		query, args = query+` WHERE id = $1`, []any{id}
		if k, ok := snap.keysByID[id]; ok {
			delete(snap.keys, k.Digest)
			delete(snap.keysByID, id)
			if snap.prevKeys[k.PreviousDigest] == k {
				delete(snap.prevKeys, k.PreviousDigest)
			}
		}
	}
	rows, err := tx.QueryContext(ctx, s.dialect.rebind(query), args...)
	if err != nil {
		return fmt.Errorf("sqlstore: reading api keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return err
		}
		snap.keys[k.Digest] = k
		snap.keysByID[k.ID] = k
		if !k.PreviousValidUntil.IsZero() {
			snap.prevKeys[k.PreviousDigest] = k
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: reading api keys: %w", err)
	}
	return nil
}

// scanAPIKey reads one row of apiKeyColumns.
func scanAPIKey(row scanner) (*gateway.APIKey, error) {
	var (
		k                                  gateway.APIKey
		digest, previous                   []byte
		role, typ, subType                 string
		metadata, scopes                   string
		rateLimits, usageLimits            sql.NullString
		expires, created, updated, prevEnd sql.NullTime
	)
	if err := row.Scan(&k.ID, &digest, &k.WorkspaceID, &role, &k.Disabled, &metadata, &k.DefaultConfig, &scopes,
		&expires, &typ, &subType, &k.UserID, &k.Name, &k.Description, &created, &updated, &rateLimits, &usageLimits,
		&previous, &prevEnd); err != nil {
		return nil, fmt.Errorf("sqlstore: reading api keys: %w", err)
	}
	if len(digest) != sha256.Size || previous != nil && len(previous) != sha256.Size {
		return nil, fmt.Errorf("sqlstore: api key %q: a digest is not %d bytes", k.ID, sha256.Size)
	}
	copy(k.Digest[:], digest)
	copy(k.PreviousDigest[:], previous)
	k.Role, k.Type, k.SubType = gateway.Role(role), gateway.KeyType(typ), gateway.KeySubType(subType)
	if err := json.Unmarshal([]byte(metadata), &k.Metadata); err != nil {
		return nil, fmt.Errorf("sqlstore: api key %q: metadata: %w", k.ID, err)
	}
	if err := json.Unmarshal([]byte(scopes), &k.Scopes); err != nil {
		return nil, fmt.Errorf("sqlstore: api key %q: scopes: %w", k.ID, err)
	}
	if rateLimits.Valid {
		k.RateLimits = json.RawMessage(rateLimits.String)
	}
	if usageLimits.Valid {
		k.UsageLimits = json.RawMessage(usageLimits.String)
	}
	k.ExpiresAt, k.CreatedAt, k.UpdatedAt = fromNullTime(expires), fromNullTime(created), fromNullTime(updated)
	k.PreviousValidUntil = fromNullTime(prevEnd)
	return &k, nil
}

// cloneAPIKey returns a copy of k sharing no memory with it.
func cloneAPIKey(k *gateway.APIKey) *gateway.APIKey {
	c := *k
	c.Scopes = slices.Clone(k.Scopes)
	c.Metadata = maps.Clone(k.Metadata)
	c.RateLimits = slices.Clone(k.RateLimits)
	c.UsageLimits = slices.Clone(k.UsageLimits)
	return &c
}

// nullTime is t as the store writes it (see dbTime), NULL for the zero
// time.
func nullTime(t time.Time) sql.NullTime {
	if t.IsZero() {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: dbTime(t), Valid: true}
}

// fromNullTime is the time a column holds, in UTC; zero for NULL.
func fromNullTime(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// nullJSON is raw as text, NULL for nil.
func nullJSON(raw json.RawMessage) sql.NullString {
	return sql.NullString{String: string(raw), Valid: raw != nil}
}

// nullBytes is b, NULL for nil (a nil []byte is an empty blob to SQLite).
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
