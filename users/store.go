package users

import (
	"context"
	"crypto/sha256"
	"time"
)

// Store keeps users, workspace members, invites and the keys of people's
// console sessions (memstore and sqlstore implement it). Implementations
// must be safe for concurrent use, return gateway.ErrNotFound for a
// record they do not hold and gateway.ErrConflict where a method says so,
// and return copies: a caller may change what it is given.
type Store interface {
	// CreateUser stores u; an email already taken is ErrConflict.
	CreateUser(ctx context.Context, u *User) error
	// User returns the user of id.
	User(ctx context.Context, id string) (*User, error)
	// UserByEmail returns the user of email (lower case).
	UserByEmail(ctx context.Context, email string) (*User, error)
	// Users returns every user, oldest first.
	Users(ctx context.Context) ([]User, error)
	// UpdateUser replaces the user of u.ID.
	UpdateUser(ctx context.Context, u *User) error
	// DeleteUser deletes the user of id, with their memberships and
	// session keys.
	DeleteUser(ctx context.Context, id string) error

	// Members returns the members of workspace ws, oldest first, or
	// those of every workspace when ws is empty.
	Members(ctx context.Context, ws string) ([]Member, error)
	// PutMember adds m, or replaces the role of the member it names; its
	// user must exist (else ErrNotFound).
	PutMember(ctx context.Context, m *Member) error
	// DeleteMember removes user from workspace ws.
	DeleteMember(ctx context.Context, ws, user string) error

	// CreateInvite stores iv.
	CreateInvite(ctx context.Context, iv *Invite) error
	// Invite returns the invite of id.
	Invite(ctx context.Context, id string) (*Invite, error)
	// InviteByDigest returns the invite whose token has digest d.
	InviteByDigest(ctx context.Context, d [sha256.Size]byte) (*Invite, error)
	// Invites returns every invite, oldest first.
	Invites(ctx context.Context) ([]Invite, error)
	// RenewInvite gives the invite of id the token digest d and the
	// expiry expires, if it is still pending (else ErrConflict).
	RenewInvite(ctx context.Context, id string, d [sha256.Size]byte, expires time.Time) error
	// DeleteInvite deletes the invite of id.
	DeleteInvite(ctx context.Context, id string) error
	// AcceptInvite, in one step, marks the invite of id accepted at
	// u.CreatedAt and creates u with a membership per workspace the
	// invite grants. An invite already accepted is ErrConflict, and so
	// is u's email taken.
	AcceptInvite(ctx context.Context, id string, u *User) error

	// CreateSessionKey stores k, first deleting the keys that have
	// expired.
	CreateSessionKey(ctx context.Context, k *SessionKey) error
	// SessionKey returns the session key of digest d.
	SessionKey(ctx context.Context, d [sha256.Size]byte) (*SessionKey, error)
	// DeleteSessionKey deletes the session key of digest d, if any.
	DeleteSessionKey(ctx context.Context, d [sha256.Size]byte) error
}
