package users

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// memberJSON is a workspace member in the reference's shape
// (WorkspaceMember).
type memberJSON struct {
	Object      string          `json:"object"`
	ID          string          `json:"id"`
	FirstName   string          `json:"first_name"`
	LastName    string          `json:"last_name"`
	OrgRole     Role            `json:"org_role"`
	Role        WorkspaceRole   `json:"role"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"last_updated_at"`
	Status      string          `json:"status"`
	WorkspaceID string          `json:"workspace_id"`
	Email       string          `json:"email"`
	Scopes      []gateway.Scope `json:"scopes"`
	Settings    any             `json:"settings"`
}

// member is a membership with its user.
type member struct {
	m Member
	u *User
}

func memberWire(x *member) memberJSON {
	return memberJSON{Object: "workspace-user", ID: x.u.ID, FirstName: x.u.FirstName, LastName: x.u.LastName,
		OrgRole: x.u.Role, Role: x.m.Role, CreatedAt: timeJSON(x.m.CreatedAt), UpdatedAt: timeJSON(x.m.UpdatedAt),
		Status: "active", WorkspaceID: x.m.WorkspaceID, Email: x.u.Email, Scopes: WorkspaceScopes(x.m.Role)}
}

// serveMembers serves the members of a workspace:
//
//	POST   /admin/workspaces/{workspaceId}/users       {"users":[{"id","role"}]} → {}
//	GET    /admin/workspaces/{workspaceId}/users       list (role, email) → {"object":"list","total","data"}
//	GET    /admin/workspaces/{workspaceId}/users/{id}  read → the member, with the scopes of their role
//	PUT    /admin/workspaces/{workspaceId}/users/{id}  {"role"} → {}
//	DELETE /admin/workspaces/{workspaceId}/users/{id}  → {}
//
// A workspace that does not exist (Options.Workspaces) is a 404, and so
// is a user who is not a member of this workspace, whatever other
// workspace they belong to.
func (p *plane) serveMembers(w http.ResponseWriter, r *http.Request) error {
	ws, uid := r.PathValue("workspaceId"), r.PathValue("id")
	if p.o.Workspaces != nil {
		if _, err := p.o.Workspaces.Workspace(r.Context(), ws); errors.Is(err, gateway.ErrNotFound) {
			return notFound("workspaceId", "no workspace "+control.Quote(ws))
		} else if err != nil {
			return err
		}
	}
	control.ActedIn(r, ws)
	if uid == "" {
		return httpapi.Methods{
			http.MethodGet:  func(w http.ResponseWriter, r *http.Request) error { return p.listMembers(w, r, ws) },
			http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return p.addMembers(w, r, ws) },
		}.Serve(w, r)
	}
	return httpapi.Methods{
		http.MethodGet:    func(w http.ResponseWriter, r *http.Request) error { return p.getMember(w, r, ws, uid) },
		http.MethodPut:    func(w http.ResponseWriter, r *http.Request) error { return p.updateMember(w, r, ws, uid) },
		http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return p.removeMember(w, r, ws, uid) },
	}.Serve(w, r)
}

// members returns the members of ws with their users, oldest first.
func (p *plane) members(r *http.Request, ws string) ([]member, error) {
	ms, err := p.o.Store.Members(r.Context(), ws)
	if err != nil {
		return nil, err
	}
	out := make([]member, 0, len(ms))
	for _, m := range ms {
		u, err := p.o.Store.User(r.Context(), m.UserID)
		if errors.Is(err, gateway.ErrNotFound) {
			continue // deleted since
		}
		if err != nil {
			return nil, err
		}
		out = append(out, member{m: m, u: u})
	}
	return out, nil
}

func (p *plane) listMembers(w http.ResponseWriter, r *http.Request, ws string) error {
	pg, role, email, err := listParams(r.URL.Query(), string(WorkspaceAdmin), string(WorkspaceManager), string(WorkspaceMember))
	if err != nil {
		return err
	}
	all, err := p.members(r, ws)
	if err != nil {
		return err
	}
	data, total := httpapi.Filter(all, func(x *member) bool {
		return (role == "" || string(x.m.Role) == role) && (email == "" || x.u.Email == email)
	}, memberWire, pg)
	writeList(w, data, total)
	return nil
}

// member returns the member uid of ws, else the 404 naming it.
func (p *plane) member(r *http.Request, ws, uid string) (*member, error) {
	all, err := p.members(r, ws)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(all, func(x member) bool { return x.u.ID == uid })
	if i < 0 {
		return nil, notFound("userId", "no member "+control.Quote(uid)+" in workspace "+control.Quote(ws))
	}
	return &all[i], nil
}

func (p *plane) getMember(w http.ResponseWriter, r *http.Request, ws, uid string) error {
	x, err := p.member(r, ws, uid)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, memberWire(x))
	return nil
}

func (p *plane) addMembers(w http.ResponseWriter, r *http.Request, ws string) error {
	var b struct {
		Users []struct {
			ID   string        `json:"id"`
			Role WorkspaceRole `json:"role"`
		} `json:"users"`
	}
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if len(b.Users) == 0 || len(b.Users) > 100 {
		return control.Invalid("users", "users must list 1 to 100 users")
	}
	for i, x := range b.Users {
		param := "users[" + strconv.Itoa(i) + "]"
		if !validWorkspaceRole(x.Role) {
			return control.Invalid(param+".role", "role must be admin, manager or member")
		}
		if _, err := p.o.Store.User(r.Context(), x.ID); errors.Is(err, gateway.ErrNotFound) {
			return control.Invalid(param+".id", "no user "+control.Quote(x.ID))
		} else if err != nil {
			return err
		}
	}
	now := p.now()
	for _, x := range b.Users {
		if err := p.o.Store.PutMember(r.Context(), &Member{WorkspaceID: ws, UserID: x.ID, Role: x.Role, CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, empty)
	return nil
}

func (p *plane) updateMember(w http.ResponseWriter, r *http.Request, ws, uid string) error {
	var b struct {
		Role *WorkspaceRole `json:"role"`
	}
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if b.Role == nil || !validWorkspaceRole(*b.Role) {
		return control.Invalid("role", "role must be admin, manager or member")
	}
	x, err := p.member(r, ws, uid)
	if err != nil {
		return err
	}
	x.m.Role, x.m.UpdatedAt = *b.Role, p.now()
	if err := p.o.Store.PutMember(r.Context(), &x.m); err != nil {
		return err
	}
	control.Detail(r, "role "+string(x.m.Role))
	httpapi.WriteJSON(w, http.StatusOK, empty)
	return nil
}

func (p *plane) removeMember(w http.ResponseWriter, r *http.Request, ws, uid string) error {
	if err := p.o.Store.DeleteMember(r.Context(), ws, uid); errors.Is(err, gateway.ErrNotFound) {
		return notFound("userId", "no member "+control.Quote(uid)+" in workspace "+control.Quote(ws))
	} else if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, empty)
	return nil
}
