// Package storetest checks an implementation of users.Store: the tests
// every store of the users product passes (memstore.Store, sqlstore.Store
// on SQLite and Postgres).
package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/users"
)

// Run runs the tests of a users.Store on stores newStore makes, each
// empty.
func Run(t *testing.T, newStore func(t *testing.T) users.Store) {
	t.Run("Users", func(t *testing.T) { testUsers(t, newStore(t)) })
	t.Run("Members", func(t *testing.T) { testMembers(t, newStore(t)) })
	t.Run("Invites", func(t *testing.T) { testInvites(t, newStore(t)) })
	t.Run("AcceptOnce", func(t *testing.T) { testAcceptOnce(t, newStore(t)) })
	t.Run("SessionKeys", func(t *testing.T) { testSessionKeys(t, newStore(t)) })
}

// at returns a time n seconds after a fixed instant.
func at(n int) time.Time {
	return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(n) * time.Second)
}

func user(id, email string, role users.Role, n int) *users.User {
	return &users.User{ID: id, Email: email, FirstName: "First " + id, LastName: "Last", Role: role,
		PasswordHash: "$argon2id$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA", CreatedAt: at(n), UpdatedAt: at(n)}
}

func testUsers(t *testing.T, s users.Store) {
	ctx := context.Background()
	a, b := user("u-a", "a@example.com", users.RoleOwner, 1), user("u-b", "b@example.com", users.RoleMember, 2)
	for _, u := range []*users.User{a, b} {
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateUser(ctx, user("u-c", "a@example.com", users.RoleMember, 3)); !errors.Is(err, gateway.ErrConflict) {
		t.Errorf("a second user with a taken email: %v, want ErrConflict", err)
	}
	got, err := s.User(ctx, "u-a")
	if err != nil || !cmp.Equal(got, a) {
		t.Errorf("User: %+v %v, want %+v", got, err, a)
	}
	got.FirstName = "changed by the caller"
	if again, _ := s.User(ctx, "u-a"); again.FirstName != a.FirstName {
		t.Error("a caller's change to what User answered reached the store")
	}
	if got, err := s.UserByEmail(ctx, "b@example.com"); err != nil || got.ID != "u-b" {
		t.Errorf("UserByEmail: %+v %v", got, err)
	}
	if _, err := s.UserByEmail(ctx, "none@example.com"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("UserByEmail of no user: %v, want ErrNotFound", err)
	}
	all, err := s.Users(ctx)
	if err != nil || len(all) != 2 || all[0].ID != "u-a" || all[1].ID != "u-b" {
		t.Errorf("Users: %+v %v, want u-a, u-b", all, err)
	}
	b.Role, b.UpdatedAt = users.RoleAdmin, at(10)
	if err := s.UpdateUser(ctx, b); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.User(ctx, "u-b"); !cmp.Equal(got, b) {
		t.Errorf("after UpdateUser: %+v, want %+v", got, b)
	}
	if err := s.UpdateUser(ctx, user("u-x", "x@example.com", users.RoleMember, 1)); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("UpdateUser of no user: %v, want ErrNotFound", err)
	}
	if err := s.DeleteUser(ctx, "u-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.User(ctx, "u-b"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("a deleted user: %v, want ErrNotFound", err)
	}
	if err := s.DeleteUser(ctx, "u-b"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("deleting a deleted user: %v, want ErrNotFound", err)
	}
}

func testMembers(t *testing.T, s users.Store) {
	ctx := context.Background()
	for _, u := range []*users.User{user("u-a", "a@example.com", users.RoleMember, 1), user("u-b", "b@example.com", users.RoleMember, 2)} {
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	put := func(ws, u string, role users.WorkspaceRole, n int) {
		t.Helper()
		if err := s.PutMember(ctx, &users.Member{WorkspaceID: ws, UserID: u, Role: role, CreatedAt: at(n), UpdatedAt: at(n)}); err != nil {
			t.Fatal(err)
		}
	}
	put("ws-1", "u-a", users.WorkspaceAdmin, 1)
	put("ws-1", "u-b", users.WorkspaceMember, 2)
	put("ws-2", "u-a", users.WorkspaceMember, 3)
	put("ws-1", "u-b", users.WorkspaceManager, 4) // a new role, the same membership
	if err := s.PutMember(ctx, &users.Member{WorkspaceID: "ws-1", UserID: "u-none", Role: users.WorkspaceMember}); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("a membership of no user: %v, want ErrNotFound", err)
	}
	ms, err := s.Members(ctx, "ws-1")
	want := []users.Member{
		{WorkspaceID: "ws-1", UserID: "u-a", Role: users.WorkspaceAdmin, CreatedAt: at(1), UpdatedAt: at(1)},
		{WorkspaceID: "ws-1", UserID: "u-b", Role: users.WorkspaceManager, CreatedAt: at(2), UpdatedAt: at(4)},
	}
	if err != nil || !cmp.Equal(ms, want) {
		t.Errorf("Members(ws-1): %+v %v, want %+v", ms, err, want)
	}
	if ms, _ := s.Members(ctx, ""); len(ms) != 3 {
		t.Errorf("Members of every workspace: %d, want 3", len(ms))
	}
	if err := s.DeleteMember(ctx, "ws-2", "u-b"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("removing a user from a workspace they are not in: %v, want ErrNotFound", err)
	}
	if err := s.DeleteMember(ctx, "ws-1", "u-b"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteUser(ctx, "u-a"); err != nil {
		t.Fatal(err)
	}
	if ms, _ := s.Members(ctx, ""); len(ms) != 0 {
		t.Errorf("memberships left after the deletes: %+v", ms)
	}
}

func invite(id, email string, n int) *users.Invite {
	return &users.Invite{ID: id, Digest: sha256.Sum256([]byte("token-" + id)), Email: email, Role: users.RoleMember,
		Workspaces: []users.Grant{{WorkspaceID: "ws-1", Role: users.WorkspaceManager}, {WorkspaceID: "ws-2", Role: users.WorkspaceMember}},
		InvitedBy:  "key-org", CreatedAt: at(n), ExpiresAt: at(n).Add(users.InviteTTL)}
}

func testInvites(t *testing.T, s users.Store) {
	ctx := context.Background()
	a, b := invite("i-a", "a@example.com", 1), invite("i-b", "b@example.com", 2)
	b.Workspaces = nil
	for _, iv := range []*users.Invite{a, b} {
		if err := s.CreateInvite(ctx, iv); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Invite(ctx, "i-a"); err != nil || !cmp.Equal(got, a) {
		t.Errorf("Invite: %+v %v, want %+v", got, err, a)
	}
	if got, err := s.InviteByDigest(ctx, sha256.Sum256([]byte("token-i-b"))); err != nil || got.ID != "i-b" || len(got.Workspaces) != 0 {
		t.Errorf("InviteByDigest: %+v %v", got, err)
	}
	if _, err := s.InviteByDigest(ctx, sha256.Sum256([]byte("token-none"))); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("InviteByDigest of no invite: %v, want ErrNotFound", err)
	}
	if all, err := s.Invites(ctx); err != nil || len(all) != 2 || all[0].ID != "i-a" {
		t.Errorf("Invites: %+v %v", all, err)
	}
	d := sha256.Sum256([]byte("token-renewed"))
	if err := s.RenewInvite(ctx, "i-a", d, at(100)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InviteByDigest(ctx, a.Digest); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("the old token after a renewal: %v, want ErrNotFound", err)
	}
	if got, err := s.InviteByDigest(ctx, d); err != nil || got.ID != "i-a" || !got.ExpiresAt.Equal(at(100)) {
		t.Errorf("the renewed invite: %+v %v", got, err)
	}
	if err := s.DeleteInvite(ctx, "i-b"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteInvite(ctx, "i-b"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("deleting a deleted invite: %v, want ErrNotFound", err)
	}
	if err := s.RenewInvite(ctx, "i-b", d, at(100)); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("renewing a deleted invite: %v, want ErrNotFound", err)
	}
}

// testAcceptOnce: an invite becomes one user, with its memberships,
// however many accept it at once; then it is accepted and may not be
// renewed.
func testAcceptOnce(t *testing.T, s users.Store) {
	ctx := context.Background()
	iv := invite("i-a", "a@example.com", 1)
	if err := s.CreateInvite(ctx, iv); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var won atomic.Int32
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := user("u-"+string(rune('a'+i)), "a@example.com", users.RoleMember, 10)
			err := s.AcceptInvite(ctx, "i-a", u)
			switch {
			case err == nil:
				won.Add(1)
			case !errors.Is(err, gateway.ErrConflict):
				t.Errorf("a losing accept: %v, want ErrConflict", err)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d accepts won, want 1", won.Load())
	}
	all, _ := s.Users(ctx)
	if len(all) != 1 || all[0].Email != "a@example.com" {
		t.Fatalf("users after the accepts: %+v", all)
	}
	ms, _ := s.Members(ctx, "")
	want := []users.Member{
		{WorkspaceID: "ws-1", UserID: all[0].ID, Role: users.WorkspaceManager, CreatedAt: at(10), UpdatedAt: at(10)},
		{WorkspaceID: "ws-2", UserID: all[0].ID, Role: users.WorkspaceMember, CreatedAt: at(10), UpdatedAt: at(10)},
	}
	if !cmp.Equal(ms, want) {
		t.Errorf("memberships: %+v, want %+v", ms, want)
	}
	got, _ := s.Invite(ctx, "i-a")
	if !got.AcceptedAt.Equal(at(10)) {
		t.Errorf("accepted_at: %v, want %v", got.AcceptedAt, at(10))
	}
	if err := s.RenewInvite(ctx, "i-a", sha256.Sum256([]byte("x")), at(100)); !errors.Is(err, gateway.ErrConflict) {
		t.Errorf("renewing an accepted invite: %v, want ErrConflict", err)
	}
	if err := s.AcceptInvite(ctx, "i-none", user("u-z", "z@example.com", users.RoleMember, 1)); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("accepting no invite: %v, want ErrNotFound", err)
	}
}

func testSessionKeys(t *testing.T, s users.Store) {
	ctx := context.Background()
	if err := s.CreateUser(ctx, user("u-a", "a@example.com", users.RoleMember, 1)); err != nil {
		t.Fatal(err)
	}
	live := &users.SessionKey{Digest: sha256.Sum256([]byte("live")), UserID: "u-a", WorkspaceID: "ws-1",
		ExpiresAt: time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)}
	old := &users.SessionKey{Digest: sha256.Sum256([]byte("old")), UserID: "u-a", ExpiresAt: time.Now().Add(-time.Hour)}
	if err := s.CreateSessionKey(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSessionKey(ctx, live); err != nil {
		t.Fatal(err)
	}
	if got, err := s.SessionKey(ctx, live.Digest); err != nil || !cmp.Equal(got, live) {
		t.Errorf("SessionKey: %+v %v, want %+v", got, err, live)
	}
	if _, err := s.SessionKey(ctx, old.Digest); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("an expired key after a new one: %v, want ErrNotFound (swept)", err)
	}
	if err := s.DeleteSessionKey(ctx, live.Digest); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionKey(ctx, live.Digest); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("a deleted key: %v, want ErrNotFound", err)
	}
	if err := s.CreateSessionKey(ctx, live); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteUser(ctx, "u-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionKey(ctx, live.Digest); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("a deleted user's key: %v, want ErrNotFound", err)
	}
}
