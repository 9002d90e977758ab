package users

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
	"github.com/modelgateway/gateway/observe"
)

// Options configure the people routes Mount adds to a gateway.
type Options struct {
	// Store keeps users, members, invites and session keys. Nil leaves
	// every route answering 404, saying that users are not managed on
	// this gateway.
	Store Store

	// Workspaces is where the workspaces named by invites and members
	// are checked to exist. Nil accepts any workspace id.
	Workspaces gateway.WorkspaceStore

	// PublicURL is the gateway's public origin (the server's -public-url,
	// e.g. "https://gateway.example.com"), on which invite links are
	// made. Empty means the origin of the request that creates the
	// invite (its Host, https when it came over TLS).
	PublicURL string

	// ConsolePath is where the host mounts the console, whose
	// /invite/{token} page an invite link opens. Empty means "/console".
	ConsolePath string

	// Audit records every write of these routes, as acting on users,
	// user_invites or workspace_members. Nil records nothing.
	Audit *observe.Auditor

	// ErrorLog receives the store's failures. Nil means slog.Default().
	ErrorLog *slog.Logger

	// Now is the clock of the records written and of invite expiry. Nil
	// means time.Now.
	Now func() time.Time
}

// plane is the people routes of one Mount.
type plane struct{ o Options }

// now is the time of a write, in microseconds, as every store keeps it.
func (p *plane) now() time.Time { return control.Clock(p.o.Now).UTC().Truncate(time.Microsecond) }

// Mount registers the people routes on g (through g.Handle, so under its
// prefix, behind its trace, key and header stages):
//
//	GET, POST          /admin/users/invites
//	GET, DELETE        /admin/users/invites/{id}
//	POST               /admin/users/invites/{id}/resend
//	GET                /admin/users
//	GET, PUT, DELETE   /admin/users/{id}
//	GET, POST          /admin/workspaces/{workspaceId}/users
//	GET, PUT, DELETE   /admin/workspaces/{workspaceId}/users/{id}
//
// Every other path below /admin/users answers 404. Only organisation
// keys may call them (a workspace key gets 403), with workspaces.read to
// read and workspaces.write to change. A person's own session (Keys)
// may not change their own role nor delete themselves, and only an
// owner's may make, change or delete an owner. Mount panics if a route
// is already registered on g.
func Mount(g *gateway.Gateway, o Options) {
	p := &plane{o: o}
	route := func(resource string, h func(w http.ResponseWriter, r *http.Request) error, patterns ...string) {
		serve := o.Audit.Wrap(resource, p.serve(h))
		for _, pat := range patterns {
			g.Handle(pat, serve)
		}
	}
	route("user_invites", p.serveInvites, "/admin/users/invites", "/admin/users/invites/{id}", "/admin/users/invites/{id}/resend")
	route("users", p.serveUsers, "/admin/users", "/admin/users/{id}")
	route("workspace_members", p.serveMembers, "/admin/workspaces/{workspaceId}/users", "/admin/workspaces/{workspaceId}/users/{id}")
	g.Handle("/admin/users/", http.HandlerFunc(control.NoRoute))
}

// serve checks that the caller is an organisation key with the scope the
// method needs, then runs h, answering its error.
func (p *plane) serve(h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := gateway.IdentityFrom(r.Context())
		if id.Type != gateway.KeyOrganisation {
			gateway.WriteError(w, r, control.Forbidden("", "only an organisation key may manage users"))
			return
		}
		if _, ok := control.Scoped(w, r, gateway.ScopeWorkspacesRead, gateway.ScopeWorkspacesWrite); !ok {
			return
		}
		if p.o.Store == nil {
			gateway.WriteError(w, r, control.NotFound("users are not managed on this gateway"))
			return
		}
		if err := h(w, r); err != nil {
			control.Fail(w, r, p.o.ErrorLog, "user store", err)
		}
	})
}

// person returns the user whose console session r comes from, if any.
func (p *plane) person(r *http.Request) (*User, bool) {
	k, ok := gateway.APIKeyFrom(r.Context())
	if !ok || k.SubType != gateway.KeyUser || k.UserID == "" || !strings.HasPrefix(k.ID, "user-") {
		return nil, false
	}
	u, err := p.o.Store.User(r.Context(), k.UserID)
	return u, err == nil
}

// actor is who a write is by: the person's user id, or the key's id.
func (p *plane) actor(r *http.Request) string {
	if u, ok := p.person(r); ok {
		return u.ID
	}
	id, _ := gateway.IdentityFrom(r.Context())
	return id.KeyID
}

// page reads the paging of a list, in the reference's names (pageSize,
// currentPage) or the control plane's (page_size, current_page).
func page(q url.Values) (httpapi.Page, error) {
	q2 := url.Values{}
	for from, to := range map[string]string{"pageSize": "page_size", "currentPage": "current_page"} {
		if v, ok := q[to]; ok {
			q2[to] = v
		} else if v, ok := q[from]; ok {
			q2[to] = v
		}
	}
	return control.Page(q2)
}

// listParams reads the paging of a list and its role (one of roles) and
// email filters; the email in lower case.
func listParams(q url.Values, roles ...string) (pg httpapi.Page, role, email string, err error) {
	if pg, err = page(q); err != nil {
		return pg, "", "", err
	}
	role, err = control.Enum(q, "role", "", roles...)
	return pg, role, strings.ToLower(q.Get("email")), err
}

// writeList answers one page of a list: {"object":"list","total","data"}.
func writeList[W any](w http.ResponseWriter, data []W, total int) {
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "total": total, "data": data})
}

// notFound is the 404 saying msg, naming param.
func notFound(param, msg string) *gateway.Error {
	e := control.NotFound(msg)
	e.Param = param
	return e
}

// timeJSON is how the routes write a time.
func timeJSON(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// empty is the answer of an update or delete: {}.
var empty = struct{}{}
