package users

import (
	"errors"
	"net/http"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// userJSON is a user in the reference's shape (User).
type userJSON struct {
	Object       string   `json:"object"`
	ID           string   `json:"id"`
	FirstName    string   `json:"first_name"`
	LastName     string   `json:"last_name"`
	Role         Role     `json:"role"`
	Email        string   `json:"email"`
	CreatedAt    string   `json:"created_at"`
	UpdatedAt    string   `json:"last_updated_at"`
	WorkspaceIDs []string `json:"workspace_ids,omitempty"`
}

func userWire(u *User) userJSON {
	return userJSON{Object: "user", ID: u.ID, FirstName: u.FirstName, LastName: u.LastName, Role: u.Role,
		Email: u.Email, CreatedAt: timeJSON(u.CreatedAt), UpdatedAt: timeJSON(u.UpdatedAt)}
}

// serveUsers serves /admin/users and /admin/users/{id}:
//
//	GET    /admin/users       list (role, email) → {"object":"list","total","data"}
//	GET    /admin/users/{id}  read → the user, with workspace_ids
//	PUT    /admin/users/{id}  {"role"} → {}
//	DELETE /admin/users/{id}  → {} (with the user's memberships and sessions)
func (p *plane) serveUsers(w http.ResponseWriter, r *http.Request) error {
	uid := r.PathValue("id")
	if uid == "" {
		return httpapi.Methods{http.MethodGet: p.listUsers}.Serve(w, r)
	}
	return httpapi.Methods{
		http.MethodGet:    func(w http.ResponseWriter, r *http.Request) error { return p.getUser(w, r, uid) },
		http.MethodPut:    func(w http.ResponseWriter, r *http.Request) error { return p.updateUser(w, r, uid) },
		http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return p.deleteUser(w, r, uid) },
	}.Serve(w, r)
}

func (p *plane) listUsers(w http.ResponseWriter, r *http.Request) error {
	pg, role, email, err := listParams(r.URL.Query(), string(RoleOwner), string(RoleAdmin), string(RoleMember))
	if err != nil {
		return err
	}
	all, err := p.o.Store.Users(r.Context())
	if err != nil {
		return err
	}
	data, total := httpapi.Filter(all, func(u *User) bool {
		return (role == "" || string(u.Role) == role) && (email == "" || u.Email == email)
	}, userWire, pg)
	writeList(w, data, total)
	return nil
}

// user returns the user of id, else the 404 naming it.
func (p *plane) user(r *http.Request, id string) (*User, error) {
	u, err := p.o.Store.User(r.Context(), id)
	if errors.Is(err, gateway.ErrNotFound) {
		return nil, notFound("userId", "no user "+control.Quote(id))
	}
	return u, err
}

func (p *plane) getUser(w http.ResponseWriter, r *http.Request, id string) error {
	u, err := p.user(r, id)
	if err != nil {
		return err
	}
	ms, err := p.o.Store.Members(r.Context(), "")
	if err != nil {
		return err
	}
	wire := userWire(u)
	wire.WorkspaceIDs = []string{}
	for _, m := range ms {
		if m.UserID == u.ID {
			wire.WorkspaceIDs = append(wire.WorkspaceIDs, m.WorkspaceID)
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, wire)
	return nil
}

// mayChange checks that the caller may change or delete user u: not
// their own account, and an owner only from an owner's session (or a
// key that is no person's).
func (p *plane) mayChange(r *http.Request, u *User, to Role) error {
	me, ok := p.person(r)
	if !ok {
		return nil
	}
	if me.ID == u.ID {
		return control.Forbidden("userId", "a person may not change their own role nor delete themselves")
	}
	if me.Role != RoleOwner && (u.Role == RoleOwner || to == RoleOwner) {
		return control.Forbidden("role", "only an owner may make, change or delete an owner")
	}
	return nil
}

func (p *plane) updateUser(w http.ResponseWriter, r *http.Request, id string) error {
	var b struct {
		Role *Role `json:"role"`
	}
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if b.Role == nil {
		return control.Invalid("role", "role is required")
	}
	if !validRole(*b.Role) {
		return control.Invalid("role", "role must be owner, admin or member")
	}
	u, err := p.user(r, id)
	if err != nil {
		return err
	}
	if err := p.mayChange(r, u, *b.Role); err != nil {
		return err
	}
	u.Role, u.UpdatedAt = *b.Role, p.now()
	if err := p.o.Store.UpdateUser(r.Context(), u); errors.Is(err, gateway.ErrNotFound) {
		return notFound("userId", "no user "+control.Quote(id))
	} else if err != nil {
		return err
	}
	control.Detail(r, "role "+string(u.Role))
	httpapi.WriteJSON(w, http.StatusOK, empty)
	return nil
}

func (p *plane) deleteUser(w http.ResponseWriter, r *http.Request, id string) error {
	u, err := p.user(r, id)
	if err != nil {
		return err
	}
	if err := p.mayChange(r, u, ""); err != nil {
		return err
	}
	if err := p.o.Store.DeleteUser(r.Context(), id); errors.Is(err, gateway.ErrNotFound) {
		return notFound("userId", "no user "+control.Quote(id))
	} else if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, empty)
	return nil
}

func validRole(r Role) bool { return r == RoleOwner || r == RoleAdmin || r == RoleMember }

func validWorkspaceRole(r WorkspaceRole) bool { return WorkspaceScopes(r) != nil }

// checkEmail checks an email a body gives and returns it in lower case:
// at most 254 bytes, one '@' with something on each side, no space or
// control character.
func checkEmail(param, s string) (string, error) {
	local, domain, ok := strings.Cut(s, "@")
	if !ok || local == "" || domain == "" || strings.Contains(domain, "@") || len(s) > 254 ||
		strings.ContainsFunc(s, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		return "", control.Invalid(param, param+" must be an email address")
	}
	return strings.ToLower(s), nil
}
