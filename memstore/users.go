package memstore

import (
	"context"
	"crypto/sha256"
	"slices"
	"sync"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/users"
)

var _ users.Store = (*Store)(nil)

// people holds the users product's records.
type people struct {
	mu       sync.RWMutex                           // guards the fields below
	users    []*users.User                          // oldest first
	members  []users.Member                         // oldest first
	invites  []*users.Invite                        // oldest first
	sessions map[[sha256.Size]byte]users.SessionKey // by digest
}

// userAt returns the index of the user of id, or -1. mu must be held.
func (p *people) userAt(id string) int {
	return slices.IndexFunc(p.users, func(u *users.User) bool { return u.ID == id })
}

// inviteAt returns the index of the invite of id, or -1. mu must be held.
func (p *people) inviteAt(id string) int {
	return slices.IndexFunc(p.invites, func(iv *users.Invite) bool { return iv.ID == id })
}

// emailTaken reports whether a user other than id has email. mu must be held.
func (p *people) emailTaken(email, id string) bool {
	return slices.ContainsFunc(p.users, func(u *users.User) bool { return u.Email == email && u.ID != id })
}

func cloneInvite(iv *users.Invite) *users.Invite {
	c := *iv
	c.Workspaces = slices.Clone(iv.Workspaces)
	return &c
}

// CreateUser implements users.Store.
func (s *Store) CreateUser(_ context.Context, u *users.User) error {
	p := &s.people
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.emailTaken(u.Email, "") || p.userAt(u.ID) >= 0 {
		return gateway.ErrConflict
	}
	c := *u
	p.users = append(p.users, &c)
	return nil
}

// User implements users.Store.
func (s *Store) User(_ context.Context, id string) (*users.User, error) {
	p := &s.people
	p.mu.RLock()
	defer p.mu.RUnlock()
	if i := p.userAt(id); i >= 0 {
		c := *p.users[i]
		return &c, nil
	}
	return nil, gateway.ErrNotFound
}

// UserByEmail implements users.Store.
func (s *Store) UserByEmail(_ context.Context, email string) (*users.User, error) {
	p := &s.people
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, u := range p.users {
		if u.Email == email {
			c := *u
			return &c, nil
		}
	}
	return nil, gateway.ErrNotFound
}

// Users implements users.Store.
func (s *Store) Users(_ context.Context) ([]users.User, error) {
	p := &s.people
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]users.User, len(p.users))
	for i, u := range p.users {
		out[i] = *u
	}
	return out, nil
}

// UpdateUser implements users.Store.
func (s *Store) UpdateUser(_ context.Context, u *users.User) error {
	p := &s.people
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.userAt(u.ID)
	if i < 0 {
		return gateway.ErrNotFound
	}
	if p.emailTaken(u.Email, u.ID) {
		return gateway.ErrConflict
	}
	c := *u
	p.users[i] = &c
	return nil
}

// DeleteUser implements users.Store.
func (s *Store) DeleteUser(_ context.Context, id string) error {
	p := &s.people
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.userAt(id)
	if i < 0 {
		return gateway.ErrNotFound
	}
	p.users = slices.Delete(p.users, i, i+1)
	p.members = slices.DeleteFunc(p.members, func(m users.Member) bool { return m.UserID == id })
	for d, k := range p.sessions {
		if k.UserID == id {
			delete(p.sessions, d)
		}
	}
	return nil
}

// Members implements users.Store.
func (s *Store) Members(_ context.Context, ws string) ([]users.Member, error) {
	p := &s.people
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := []users.Member{}
	for _, m := range p.members {
		if ws == "" || m.WorkspaceID == ws {
			out = append(out, m)
		}
	}
	return out, nil
}

// PutMember implements users.Store.
func (s *Store) PutMember(_ context.Context, m *users.Member) error {
	p := &s.people
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.userAt(m.UserID) < 0 {
		return gateway.ErrNotFound
	}
	if i := slices.IndexFunc(p.members, func(o users.Member) bool { return o.WorkspaceID == m.WorkspaceID && o.UserID == m.UserID }); i >= 0 {
		p.members[i].Role, p.members[i].UpdatedAt = m.Role, m.UpdatedAt
		return nil
	}
	p.members = append(p.members, *m)
	return nil
}

// DeleteMember implements users.Store.
func (s *Store) DeleteMember(_ context.Context, ws, user string) error {
	p := &s.people
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.members)
	p.members = slices.DeleteFunc(p.members, func(m users.Member) bool { return m.WorkspaceID == ws && m.UserID == user })
	if len(p.members) == n {
		return gateway.ErrNotFound
	}
	return nil
}

// CreateInvite implements users.Store.
func (s *Store) CreateInvite(_ context.Context, iv *users.Invite) error {
	p := &s.people
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inviteAt(iv.ID) >= 0 {
		return gateway.ErrConflict
	}
	p.invites = append(p.invites, cloneInvite(iv))
	return nil
}

// Invite implements users.Store.
func (s *Store) Invite(_ context.Context, id string) (*users.Invite, error) {
	p := &s.people
	p.mu.RLock()
	defer p.mu.RUnlock()
	if i := p.inviteAt(id); i >= 0 {
		return cloneInvite(p.invites[i]), nil
	}
	return nil, gateway.ErrNotFound
}

// InviteByDigest implements users.Store.
func (s *Store) InviteByDigest(_ context.Context, d [sha256.Size]byte) (*users.Invite, error) {
	p := &s.people
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, iv := range p.invites {
		if iv.Digest == d {
			return cloneInvite(iv), nil
		}
	}
	return nil, gateway.ErrNotFound
}

// Invites implements users.Store.
func (s *Store) Invites(_ context.Context) ([]users.Invite, error) {
	p := &s.people
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]users.Invite, len(p.invites))
	for i, iv := range p.invites {
		out[i] = *cloneInvite(iv)
	}
	return out, nil
}

// RenewInvite implements users.Store.
func (s *Store) RenewInvite(_ context.Context, id string, d [sha256.Size]byte, expires time.Time) error {
	p := &s.people
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.inviteAt(id)
	if i < 0 {
		return gateway.ErrNotFound
	}
	if !p.invites[i].AcceptedAt.IsZero() {
		return gateway.ErrConflict
	}
	c := cloneInvite(p.invites[i])
	c.Digest, c.ExpiresAt = d, expires
	p.invites[i] = c
	return nil
}

// DeleteInvite implements users.Store.
func (s *Store) DeleteInvite(_ context.Context, id string) error {
	p := &s.people
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.inviteAt(id)
	if i < 0 {
		return gateway.ErrNotFound
	}
	p.invites = slices.Delete(p.invites, i, i+1)
	return nil
}

// AcceptInvite implements users.Store.
func (s *Store) AcceptInvite(_ context.Context, id string, u *users.User) error {
	p := &s.people
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.inviteAt(id)
	if i < 0 {
		return gateway.ErrNotFound
	}
	if !p.invites[i].AcceptedAt.IsZero() || p.emailTaken(u.Email, "") {
		return gateway.ErrConflict
	}
	c := cloneInvite(p.invites[i])
	c.AcceptedAt = u.CreatedAt
	p.invites[i] = c
	nu := *u
	p.users = append(p.users, &nu)
	for _, g := range c.Workspaces {
		p.members = append(p.members, users.Member{WorkspaceID: g.WorkspaceID, UserID: u.ID, Role: g.Role,
			CreatedAt: u.CreatedAt, UpdatedAt: u.CreatedAt})
	}
	return nil
}

// CreateSessionKey implements users.Store.
func (s *Store) CreateSessionKey(_ context.Context, k *users.SessionKey) error {
	p := &s.people
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions == nil {
		p.sessions = make(map[[sha256.Size]byte]users.SessionKey)
	}
	for d, o := range p.sessions {
		if !now.Before(o.ExpiresAt) {
			delete(p.sessions, d)
		}
	}
	p.sessions[k.Digest] = *k
	return nil
}

// SessionKey implements users.Store.
func (s *Store) SessionKey(_ context.Context, d [sha256.Size]byte) (*users.SessionKey, error) {
	p := &s.people
	p.mu.RLock()
	defer p.mu.RUnlock()
	if k, ok := p.sessions[d]; ok {
		return &k, nil
	}
	return nil, gateway.ErrNotFound
}

// DeleteSessionKey implements users.Store.
func (s *Store) DeleteSessionKey(_ context.Context, d [sha256.Size]byte) error {
	p := &s.people
	p.mu.Lock()
	delete(p.sessions, d)
	p.mu.Unlock()
	return nil
}
