package users_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/users"
)

// TestInviteRoutes: an invite answers its link once (no-store), reads
// back in the reference's Invite shape without it, is listed with the
// reference's filters, and a resend makes a new link, the old one dead.
func TestInviteRoutes(t *testing.T) {
	e := newEnv(t)
	resp, b := e.do(keyOrg, "POST", "/admin/users/invites", map[string]any{"email": "Ann@Example.com", "role": "member",
		"workspaces": []map[string]string{{"id": "ws-1", "role": "manager"}}})
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %d %q %s", resp.StatusCode, resp.Header.Get("Cache-Control"), b)
	}
	var made map[string]string
	if err := json.Unmarshal(b, &made); err != nil || len(made) != 2 || made["id"] == "" ||
		!strings.HasPrefix(made["invite_link"], "https://gw.example.com/console/invite/") {
		t.Fatalf("create's answer: %s", b)
	}
	token := strings.TrimPrefix(made["invite_link"], "https://gw.example.com/console/invite/")

	var got map[string]any
	e.ok(keyOrg, "GET", "/admin/users/invites/"+made["id"], nil, &got)
	created := e.clock.now().UTC().Truncate(time.Second)
	want := map[string]any{"object": "invite", "id": made["id"], "email": "ann@example.com", "role": "member",
		"created_at": created.Format(time.RFC3339), "expires_at": created.Add(7 * 24 * time.Hour).Format(time.RFC3339),
		"status": "pending", "invited_by": "key-org",
		"workspaces": []any{map[string]any{"workspace_id": "ws-1", "role": "manager"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("GET invite (-want +got):\n%s", d)
	}
	_, raw := e.do(keyOrg, "GET", "/admin/users/invites", nil)
	if strings.Contains(string(raw), token) {
		t.Error("the invite list shows the token")
	}

	e.invite("bob@example.com", users.RoleAdmin)
	var list struct {
		Object string           `json:"object"`
		Total  int              `json:"total"`
		Data   []map[string]any `json:"data"`
	}
	e.ok(keyOrg, "GET", "/admin/users/invites?role=admin", nil, &list)
	if list.Object != "list" || list.Total != 1 || list.Data[0]["email"] != "bob@example.com" {
		t.Errorf("invites of role admin: %+v", list)
	}
	e.ok(keyOrg, "GET", "/admin/users/invites?pageSize=1&currentPage=1", nil, &list)
	if list.Total != 2 || len(list.Data) != 1 || list.Data[0]["email"] != "bob@example.com" {
		t.Errorf("the second page of one: %+v", list)
	}
	e.ok(keyOrg, "GET", "/admin/users/invites?status=accepted", nil, &list)
	if list.Total != 0 {
		t.Errorf("accepted invites before any is: %+v", list)
	}
	e.fails(keyOrg, "GET", "/admin/users/invites?status=lost", nil, 400, "status")

	// Resend: a new link; the old token no longer finds the invite.
	var resent map[string]string
	e.ok(keyOrg, "POST", "/admin/users/invites/"+made["id"]+"/resend", nil, &resent)
	newToken := strings.TrimPrefix(resent["inviteLink"], "https://gw.example.com/console/invite/")
	if len(resent) != 1 || newToken == resent["inviteLink"] || newToken == token {
		t.Fatalf("resend's answer: %v", resent)
	}
	ctx := context.Background()
	if _, err := users.Pending(ctx, e.store, token, e.clock.now()); !errors.Is(err, users.ErrInviteUnknown) {
		t.Errorf("the old link after a resend: %v, want ErrInviteUnknown", err)
	}
	if _, err := users.Pending(ctx, e.store, newToken, e.clock.now()); err != nil {
		t.Errorf("the new link: %v", err)
	}

	e.ok(keyOrg, "DELETE", "/admin/users/invites/"+made["id"], nil, nil)
	e.fails(keyOrg, "GET", "/admin/users/invites/"+made["id"], nil, 404, "inviteId")
	e.fails(keyOrg, "POST", "/admin/users/invites/"+made["id"]+"/resend", nil, 404, "inviteId")
	if _, err := users.Pending(ctx, e.store, newToken, e.clock.now()); !errors.Is(err, users.ErrInviteUnknown) {
		t.Errorf("a deleted invite's link: %v, want ErrInviteUnknown", err)
	}
	e.fails(keyOrg, "GET", "/admin/users/invites/x/y", nil, 404, "")
}

// TestInviteBadInput: each bad field is a 400 naming it; a taken email
// is a 409.
func TestInviteBadInput(t *testing.T) {
	e := newEnv(t)
	e.person("ann@example.com", users.RoleMember)
	e.invite("pending@example.com", users.RoleMember)
	for _, c := range []struct {
		body   any
		status int
		param  string
	}{
		{map[string]any{"role": "member", "workspaces": []any{}}, 400, "email"},
		{map[string]any{"email": "not an email", "role": "member", "workspaces": []any{}}, 400, "email"},
		{map[string]any{"email": "x@example.com", "workspaces": []any{}}, 400, "role"},
		{map[string]any{"email": "x@example.com", "role": "owner", "workspaces": []any{}}, 400, "role"},
		{map[string]any{"email": "x@example.com", "role": "member", "workspaces": []any{map[string]string{"id": "ws-9", "role": "member"}}}, 400, "workspaces[0].id"},
		{map[string]any{"email": "x@example.com", "role": "member", "workspaces": []any{map[string]string{"id": "ws-1", "role": "boss"}}}, 400, "workspaces[0].role"},
		{map[string]any{"email": "x@example.com", "role": "member", "workspaces": []any{}, "colour": "red"}, 400, "colour"},
		{map[string]any{"email": "x@example.com", "role": "member", "workspaces": []any{}, "workspace_api_key_details": map[string]any{"scopes": []string{}}}, 400, "workspace_api_key_details"},
		{map[string]any{"email": "ANN@example.com", "role": "member", "workspaces": []any{}}, 409, "email"},
		{map[string]any{"email": "pending@example.com", "role": "member", "workspaces": []any{}}, 409, "email"},
	} {
		e.fails(keyOrg, "POST", "/admin/users/invites", c.body, c.status, c.param)
	}
}

// TestInviteExpiryAndOneTimeUse: a link works for seven days and once,
// even when it is used from many places at once.
func TestInviteExpiryAndOneTimeUse(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, token := e.invite("late@example.com", users.RoleMember)
	e.clock.add(7*24*time.Hour - time.Second)
	if _, err := users.Pending(ctx, e.store, token, e.clock.now()); err != nil {
		t.Fatalf("a second before seven days: %v", err)
	}
	e.clock.add(time.Second)
	if _, err := users.Accept(ctx, e.store, token, "A", "B", "", e.clock.now()); !errors.Is(err, users.ErrInviteGone) {
		t.Errorf("accepting after seven days: %v, want ErrInviteGone", err)
	}
	var list struct {
		Data []map[string]any `json:"data"`
	}
	e.ok(keyOrg, "GET", "/admin/users/invites?status=expired", nil, &list)
	if len(list.Data) != 1 {
		t.Errorf("expired invites: %+v", list)
	}

	_, token = e.invite("once@example.com", users.RoleMember, map[string]string{"id": "ws-1", "role": "member"})
	var wg sync.WaitGroup
	var won, gone atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := users.Accept(ctx, e.store, token, "A", "B", "hash", e.clock.now())
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, users.ErrInviteGone):
				gone.Add(1)
			default:
				t.Errorf("a losing accept: %v", err)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 || gone.Load() != 7 {
		t.Errorf("%d accepts won and %d were told the invite is gone, want 1 and 7", won.Load(), gone.Load())
	}
	e.ok(keyOrg, "GET", "/admin/users/invites?status=accepted", nil, &list)
	if len(list.Data) != 1 || list.Data[0]["accepted_at"] == nil {
		t.Errorf("accepted invites: %+v", list)
	}
	if _, err := users.Accept(ctx, e.store, "short", "A", "B", "", e.clock.now()); !errors.Is(err, users.ErrInviteUnknown) {
		t.Errorf("a malformed token: %v, want ErrInviteUnknown", err)
	}
}

// TestUserRoutes: users in the reference's shapes; PUT changes the
// role, DELETE removes the user with their memberships.
func TestUserRoutes(t *testing.T) {
	e := newEnv(t)
	u := e.person("ann@example.com", users.RoleMember, map[string]string{"id": "ws-1", "role": "member"}, map[string]string{"id": "ws-2", "role": "admin"})
	e.person("bob@example.com", users.RoleAdmin)
	var got map[string]any
	e.ok(keyOrg, "GET", "/admin/users/"+u.ID, nil, &got)
	ts := u.CreatedAt.Truncate(time.Second).Format(time.RFC3339)
	want := map[string]any{"object": "user", "id": u.ID, "first_name": "First", "last_name": "Last", "role": "member",
		"email": "ann@example.com", "created_at": ts, "last_updated_at": ts, "workspace_ids": []any{"ws-1", "ws-2"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("GET user (-want +got):\n%s", d)
	}
	var list struct {
		Object string           `json:"object"`
		Total  int              `json:"total"`
		Data   []map[string]any `json:"data"`
	}
	e.ok(keyOrg, "GET", "/admin/users", nil, &list)
	if list.Object != "list" || list.Total != 2 {
		t.Errorf("users: %+v", list)
	}
	for _, d := range list.Data {
		if _, ok := d["password_hash"]; ok || len(d) != 8 {
			t.Errorf("a listed user: %v", d)
		}
	}
	e.ok(keyOrg, "GET", "/admin/users?role=admin&email=BOB@example.com", nil, &list)
	if list.Total != 1 || list.Data[0]["email"] != "bob@example.com" {
		t.Errorf("users of role admin and email bob: %+v", list)
	}
	e.fails(keyOrg, "GET", "/admin/users?pageSize=0", nil, 400, "page_size")

	e.ok(keyOrg, "PUT", "/admin/users/"+u.ID, map[string]string{"role": "admin"}, nil)
	e.ok(keyOrg, "GET", "/admin/users/"+u.ID, nil, &got)
	if got["role"] != "admin" {
		t.Errorf("the role after PUT: %v", got["role"])
	}
	e.fails(keyOrg, "PUT", "/admin/users/"+u.ID, map[string]string{"role": "boss"}, 400, "role")
	e.fails(keyOrg, "PUT", "/admin/users/"+u.ID, map[string]string{}, 400, "role")
	e.fails(keyOrg, "PUT", "/admin/users/nobody", map[string]string{"role": "admin"}, 404, "userId")

	e.ok(keyOrg, "DELETE", "/admin/users/"+u.ID, nil, nil)
	e.fails(keyOrg, "GET", "/admin/users/"+u.ID, nil, 404, "userId")
	e.fails(keyOrg, "GET", "/admin/workspaces/ws-2/users/"+u.ID, nil, 404, "userId")
	e.fails(keyOrg, "POST", "/admin/users", map[string]string{}, 405, "")
}

// TestMemberRoutes: members in the reference's shapes, with the scopes
// of their role; each workspace sees only its own members.
func TestMemberRoutes(t *testing.T) {
	e := newEnv(t)
	ann := e.person("ann@example.com", users.RoleMember, map[string]string{"id": "ws-1", "role": "member"})
	bob := e.person("bob@example.com", users.RoleMember)
	e.ok(keyOrg, "POST", "/admin/workspaces/ws-2/users", map[string]any{"users": []map[string]string{{"id": bob.ID, "role": "manager"}}}, nil)

	var got map[string]any
	e.ok(keyOrg, "GET", "/admin/workspaces/ws-1/users/"+ann.ID, nil, &got)
	ts := ann.CreatedAt.Truncate(time.Second).Format(time.RFC3339)
	scopes := []any{}
	for _, s := range users.WorkspaceScopes(users.WorkspaceMember) {
		scopes = append(scopes, string(s))
	}
	want := map[string]any{"object": "workspace-user", "id": ann.ID, "first_name": "First", "last_name": "Last",
		"org_role": "member", "role": "member", "created_at": ts, "last_updated_at": ts, "status": "active",
		"workspace_id": "ws-1", "email": "ann@example.com", "scopes": scopes, "settings": nil}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("GET member (-want +got):\n%s", d)
	}

	// Isolation: each workspace lists and finds only its own.
	var list struct {
		Total int              `json:"total"`
		Data  []map[string]any `json:"data"`
	}
	e.ok(keyOrg, "GET", "/admin/workspaces/ws-2/users", nil, &list)
	if list.Total != 1 || list.Data[0]["id"] != bob.ID || list.Data[0]["role"] != "manager" {
		t.Errorf("ws-2's members: %+v", list)
	}
	e.fails(keyOrg, "GET", "/admin/workspaces/ws-2/users/"+ann.ID, nil, 404, "userId")
	e.fails(keyOrg, "PUT", "/admin/workspaces/ws-2/users/"+ann.ID, map[string]string{"role": "admin"}, 404, "userId")
	e.fails(keyOrg, "DELETE", "/admin/workspaces/ws-2/users/"+ann.ID, nil, 404, "userId")
	e.fails(keyOrg, "GET", "/admin/workspaces/ws-9/users", nil, 404, "workspaceId")

	e.ok(keyOrg, "PUT", "/admin/workspaces/ws-1/users/"+ann.ID, map[string]string{"role": "admin"}, nil)
	e.ok(keyOrg, "GET", "/admin/workspaces/ws-1/users?role=admin", nil, &list)
	if list.Total != 1 || list.Data[0]["id"] != ann.ID {
		t.Errorf("ws-1's admins: %+v", list)
	}
	e.fails(keyOrg, "POST", "/admin/workspaces/ws-1/users", map[string]any{"users": []map[string]string{{"id": "nobody", "role": "member"}}}, 400, "users[0].id")
	e.fails(keyOrg, "POST", "/admin/workspaces/ws-1/users", map[string]any{"users": []map[string]string{{"id": bob.ID, "role": "owner"}}}, 400, "users[0].role")
	e.fails(keyOrg, "POST", "/admin/workspaces/ws-1/users", map[string]any{"users": []any{}}, 400, "users")
	e.ok(keyOrg, "DELETE", "/admin/workspaces/ws-1/users/"+ann.ID, nil, nil)
	e.ok(keyOrg, "GET", "/admin/workspaces/ws-1/users", nil, &list)
	if list.Total != 0 {
		t.Errorf("ws-1's members after the delete: %+v", list)
	}
}

// TestOnlyOrganisationManages: workspace keys, organisation keys without
// the workspaces scopes and a member's session may not manage people.
func TestOnlyOrganisationManages(t *testing.T) {
	e := newEnv(t)
	member := e.person("m@example.com", users.RoleMember, map[string]string{"id": "ws-1", "role": "admin"})
	for _, key := range []string{keyWSAdmin, keyOrgMember, e.session(member)} {
		for _, path := range []string{"/admin/users", "/admin/users/invites", "/admin/workspaces/ws-1/users"} {
			ae := e.fails(key, "GET", path, nil, 403, "")
			if ae.Error.Type != gateway.TypePermission {
				t.Errorf("GET %s: type %q", path, ae.Error.Type)
			}
		}
	}
	e.fails("gw-wrong", "GET", "/admin/users", nil, 401, "")
}

// TestSessionKeys: a person's session acts with the scopes of their
// role as it is now, in their workspace only, and ends with their
// membership or account.
func TestSessionKeys(t *testing.T) {
	e := newEnv(t)
	owner := e.person("owner@example.com", users.RoleAdmin)
	if err := e.store.UpdateUser(context.Background(), &users.User{ID: owner.ID, Email: owner.Email, Role: users.RoleOwner}); err != nil {
		t.Fatal(err)
	}
	admin := e.person("admin@example.com", users.RoleAdmin)
	member := e.person("m@example.com", users.RoleMember, map[string]string{"id": "ws-2", "role": "member"}, map[string]string{"id": "ws-1", "role": "member"})
	ownerKey, adminKey, memberKey := e.session(owner), e.session(admin), e.session(member)

	// An admin manages people, but not themselves nor an owner.
	e.ok(adminKey, "GET", "/admin/users", nil, nil)
	e.fails(adminKey, "PUT", "/admin/users/"+admin.ID, map[string]string{"role": "member"}, 403, "userId")
	e.fails(adminKey, "DELETE", "/admin/users/"+owner.ID, nil, 403, "role")
	e.fails(adminKey, "PUT", "/admin/users/"+member.ID, map[string]string{"role": "owner"}, 403, "role")
	e.ok(ownerKey, "PUT", "/admin/users/"+member.ID, map[string]string{"role": "member"}, nil)

	// A member's session acts in the first of their workspaces by id.
	var k *gateway.APIKey
	keys := users.Keys(e.store, e.store)
	k, err := keys.APIKey(context.Background(), gateway.HashAPIKey(memberKey))
	if err != nil || k.Type != gateway.KeyWorkspace || k.WorkspaceID != "ws-1" || !slices.Equal(k.Scopes, users.WorkspaceScopes(users.WorkspaceMember)) ||
		k.UserID != member.ID || k.SubType != gateway.KeyUser {
		t.Fatalf("the member's session key: %+v %v", k, err)
	}
	// A role changed in the workspace applies to the next request.
	e.ok(ownerKey, "PUT", "/admin/workspaces/ws-1/users/"+member.ID, map[string]string{"role": "manager"}, nil)
	if k, _ = keys.APIKey(context.Background(), gateway.HashAPIKey(memberKey)); !slices.Equal(k.Scopes, users.WorkspaceScopes(users.WorkspaceManager)) {
		t.Errorf("scopes after becoming manager: %v", k.Scopes)
	}
	// Removed from the workspace: the session key no longer works.
	e.ok(ownerKey, "DELETE", "/admin/workspaces/ws-1/users/"+member.ID, nil, nil)
	e.fails(memberKey, "GET", "/admin/users", nil, 401, "")
	// An admin made member loses the organisation at once.
	e.ok(ownerKey, "PUT", "/admin/users/"+admin.ID, map[string]string{"role": "member"}, nil)
	e.fails(adminKey, "GET", "/admin/users", nil, 401, "") // a member of no workspace
	// Deleted, or signed out: the key is gone.
	e.ok(ownerKey, "DELETE", "/admin/users/"+admin.ID, nil, nil)
	if err := users.EndSession(context.Background(), e.store, ownerKey); err != nil {
		t.Fatal(err)
	}
	e.fails(ownerKey, "GET", "/admin/users", nil, 401, "")
	if _, err := users.NewSessionKey(context.Background(), e.store, e.person("lone@example.com", users.RoleMember), time.Now(), time.Hour); !errors.Is(err, users.ErrNoWorkspace) {
		t.Errorf("a session of a member of no workspace: %v, want ErrNoWorkspace", err)
	}
}

// TestRoleScopes: the table of workspace roles.
func TestRoleScopes(t *testing.T) {
	admin := users.WorkspaceScopes(users.WorkspaceAdmin)
	manager := users.WorkspaceScopes(users.WorkspaceManager)
	member := users.WorkspaceScopes(users.WorkspaceMember)
	if !slices.Equal(admin, gateway.RoleScopes(gateway.RoleAdmin)) {
		t.Errorf("admin: %v", admin)
	}
	for _, s := range manager {
		if s == gateway.ScopeAPIKeysWrite || s == gateway.ScopeWorkspacesWrite || !slices.Contains(admin, s) {
			t.Errorf("manager holds %s", s)
		}
	}
	if len(manager) != len(admin)-2 {
		t.Errorf("manager: %v", manager)
	}
	for _, s := range member {
		if !slices.Contains(manager, s) || s != gateway.ScopeCompletionsWrite && !strings.HasSuffix(string(s), ".read") {
			t.Errorf("member holds %s", s)
		}
	}
	if !slices.Contains(member, gateway.ScopeLogsRead) {
		t.Error("a member cannot read logs: the console would refuse them")
	}
	if users.WorkspaceScopes("owner") != nil {
		t.Error("an unknown workspace role has scopes")
	}
}

// TestAudited: every write is an audit record naming the person's
// session key and the workspace, and none holds the invite token.
func TestAudited(t *testing.T) {
	e := newEnv(t)
	id, token := e.invite("a@example.com", users.RoleMember, map[string]string{"id": "ws-1", "role": "member"})
	e.ok(keyOrg, "POST", "/admin/users/invites/"+id+"/resend", nil, nil)
	bob := e.person("bob@example.com", users.RoleMember)
	e.ok(keyOrg, "POST", "/admin/workspaces/ws-2/users", map[string]any{"users": []map[string]string{{"id": bob.ID, "role": "member"}}}, nil)
	recs, _, err := e.store.AuditRecords(context.Background(), observe.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]observe.AuditRecord{}
	for _, r := range recs {
		actions[r.Action] = r
		if strings.Contains(r.URI+r.Detail+r.ResourceID, token) {
			t.Errorf("an audit record holds the token: %+v", r)
		}
	}
	if r, ok := actions["user_invites.create"]; !ok || r.ResourceID != id {
		t.Errorf("the invite's record: %+v (%v)", r, actions)
	}
	if _, ok := actions["user_invites.resend"]; !ok {
		t.Errorf("no record of the resend: %v", actions)
	}
	found := false
	for _, r := range recs {
		if r.ResourceType == "workspace_members" && r.WorkspaceID == "ws-2" && r.Status == http.StatusOK {
			found = true
		}
	}
	if !found {
		t.Errorf("no record of the member added to ws-2: %+v", recs)
	}
}
