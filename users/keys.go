package users

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"slices"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
)

// SessionKeyPrefix begins every session key NewSessionKey makes.
const SessionKeyPrefix = "gwu-"

// Keys returns the gateway.KeyStore of the gateway's Options.Keys that
// finds the API keys of next and, after them, the keys of people's
// console sessions kept in store. A session key resolves, on every
// request, to the person's role as it is then: an owner or admin acts
// with an organisation key of every scope; a member acts in the
// workspace of the session with the scopes of their role there
// (WorkspaceScopes). A session key stops working when it expires, when
// its user is deleted, and, for a member, when they leave the workspace.
// Such keys are not API keys: no route lists, rotates or revokes them.
//
// A key next does not hold costs a lookup in store (a database query,
// with sqlstore): what a wrong key costs the gateway grows by one
// indexed read. The KeyStore is safe for concurrent use as next and
// store are.
func Keys(next gateway.KeyStore, store Store) gateway.KeyStore {
	return &keys{next: next, store: store}
}

type keys struct {
	next  gateway.KeyStore
	store Store
}

func (k *keys) APIKey(ctx context.Context, d [sha256.Size]byte) (*gateway.APIKey, error) {
	if k.next != nil {
		key, err := k.next.APIKey(ctx, d)
		if err == nil || !errors.Is(err, gateway.ErrNotFound) || k.store == nil {
			return key, err
		}
	}
	if k.store == nil {
		return nil, gateway.ErrNotFound
	}
	sk, err := k.store.SessionKey(ctx, d)
	if err != nil {
		return nil, err
	}
	u, err := k.store.User(ctx, sk.UserID)
	if err != nil {
		return nil, err
	}
	key := &gateway.APIKey{ID: "user-" + u.ID, Digest: d, SubType: gateway.KeyUser, UserID: u.ID,
		ExpiresAt: sk.ExpiresAt, Name: "console session of " + u.Email}
	if u.Role.ManagesOrganisation() {
		key.Type, key.Role, key.Scopes = gateway.KeyOrganisation, gateway.RoleAdmin, gateway.RoleScopes(gateway.RoleAdmin)
		return key, nil
	}
	if sk.WorkspaceID == "" {
		return nil, gateway.ErrNotFound
	}
	ms, err := k.store.Members(ctx, sk.WorkspaceID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(ms, func(m Member) bool { return m.UserID == u.ID })
	if i < 0 {
		return nil, gateway.ErrNotFound
	}
	role := gateway.RoleMember
	if ms[i].Role == WorkspaceAdmin {
		role = gateway.RoleAdmin
	}
	key.Type, key.WorkspaceID, key.Role, key.Scopes = gateway.KeyWorkspace, sk.WorkspaceID, role, WorkspaceScopes(ms[i].Role)
	return key, nil
}

// ErrNoWorkspace is the error of NewSessionKey for a member who belongs
// to no workspace: their session could do nothing.
var ErrNoWorkspace = errors.New("gateway: the user is a member of no workspace")

// NewSessionKey makes and stores the key of a console session of user u
// that lasts ttl from now, and returns it (SessionKeyPrefix and 256
// random bits). A member's session acts in the first of their
// workspaces by id; one of no workspace is ErrNoWorkspace.
func NewSessionKey(ctx context.Context, store Store, u *User, now time.Time, ttl time.Duration) (string, error) {
	sk := &SessionKey{UserID: u.ID, ExpiresAt: now.Add(ttl)}
	if !u.Role.ManagesOrganisation() {
		ms, err := store.Members(ctx, "")
		if err != nil {
			return "", err
		}
		for _, m := range ms {
			if m.UserID == u.ID && (sk.WorkspaceID == "" || m.WorkspaceID < sk.WorkspaceID) {
				sk.WorkspaceID = m.WorkspaceID
			}
		}
		if sk.WorkspaceID == "" {
			return "", ErrNoWorkspace
		}
	}
	key := SessionKeyPrefix + randomToken()
	sk.Digest = sha256.Sum256([]byte(key))
	if err := store.CreateSessionKey(ctx, sk); err != nil {
		return "", err
	}
	return key, nil
}

// EndSession deletes the session key key, if it is one.
func EndSession(ctx context.Context, store Store, key string) error {
	return store.DeleteSessionKey(ctx, sha256.Sum256([]byte(key)))
}

// randomToken returns 256 random bits, base64url-encoded (43 characters).
func randomToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Errors of Accept.
var (
	// ErrInviteUnknown is an invite token no invite has: a link that
	// never worked, or whose invite was deleted or resent.
	ErrInviteUnknown = errors.New("gateway: no such invite")
	// ErrInviteGone is the token of an invite already accepted or
	// expired.
	ErrInviteGone = errors.New("gateway: the invite was already used or has expired")
	// ErrEmailTaken is an invite whose email is already a user's.
	ErrEmailTaken = errors.New("gateway: a user already has the invite's email")
)

// Pending returns the pending invite of token at now: ErrInviteUnknown
// or ErrInviteGone when it is not.
func Pending(ctx context.Context, store Store, token string, now time.Time) (*Invite, error) {
	if len(token) != 43 {
		return nil, ErrInviteUnknown
	}
	iv, err := store.InviteByDigest(ctx, sha256.Sum256([]byte(token)))
	if errors.Is(err, gateway.ErrNotFound) {
		return nil, ErrInviteUnknown
	}
	if err != nil {
		return nil, err
	}
	if iv.Status(now) != "pending" {
		return nil, ErrInviteGone
	}
	return iv, nil
}

// Accept turns the pending invite of token into a user named first and
// last with passwordHash (PHC; empty for a person who signs in through
// OIDC only), at now, and returns the user. An invite is accepted once:
// a second Accept, even concurrent, is ErrInviteGone.
func Accept(ctx context.Context, store Store, token, first, last, passwordHash string, now time.Time) (*User, error) {
	iv, err := Pending(ctx, store, token, now)
	if err != nil {
		return nil, err
	}
	return AcceptFor(ctx, store, iv, first, last, passwordHash, now)
}

// PendingFor returns the pending invite of email at now, if any: how a
// person who signs in through OIDC with a verified email that is no
// user's yet takes up their invitation.
func PendingFor(ctx context.Context, store Store, email string, now time.Time) (*Invite, error) {
	ivs, err := store.Invites(ctx)
	if err != nil {
		return nil, err
	}
	for i := len(ivs) - 1; i >= 0; i-- {
		if ivs[i].Email == email && ivs[i].Status(now) == "pending" {
			return &ivs[i], nil
		}
	}
	return nil, gateway.ErrNotFound
}

// AcceptFor is Accept for the pending invite iv (from Pending or
// PendingFor).
func AcceptFor(ctx context.Context, store Store, iv *Invite, first, last, passwordHash string, now time.Time) (*User, error) {
	now = now.UTC().Truncate(time.Microsecond)
	u := &User{ID: control.NewUUID(), Email: iv.Email, FirstName: first, LastName: last, Role: iv.Role,
		PasswordHash: passwordHash, CreatedAt: now, UpdatedAt: now}
	switch err := store.AcceptInvite(ctx, iv.ID, u); {
	case errors.Is(err, gateway.ErrConflict):
		if again, e := store.Invite(ctx, iv.ID); e == nil && again.AcceptedAt.IsZero() {
			return nil, ErrEmailTaken
		}
		return nil, ErrInviteGone
	case errors.Is(err, gateway.ErrNotFound):
		return nil, ErrInviteGone
	case err != nil:
		return nil, err
	}
	return u, nil
}
