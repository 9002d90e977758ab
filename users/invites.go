package users

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// inviteJSON is an invite in the reference's shape (Invite).
type inviteJSON struct {
	Object     string  `json:"object"`
	ID         string  `json:"id"`
	Email      string  `json:"email"`
	Role       Role    `json:"role"`
	CreatedAt  string  `json:"created_at"`
	ExpiresAt  string  `json:"expires_at"`
	AcceptedAt string  `json:"accepted_at,omitempty"`
	Status     string  `json:"status"`
	InvitedBy  string  `json:"invited_by"`
	Workspaces []Grant `json:"workspaces"`
}

func (p *plane) inviteWire(iv *Invite) inviteJSON {
	ws := iv.Workspaces
	if ws == nil {
		ws = []Grant{}
	}
	return inviteJSON{Object: "invite", ID: iv.ID, Email: iv.Email, Role: iv.Role, CreatedAt: timeJSON(iv.CreatedAt),
		ExpiresAt: timeJSON(iv.ExpiresAt), AcceptedAt: timeJSON(iv.AcceptedAt), Status: iv.Status(p.now()),
		InvitedBy: iv.InvitedBy, Workspaces: ws}
}

// serveInvites serves /admin/users/invites:
//
//	POST   /admin/users/invites              {"email","role","workspaces":[{"id","role"}]} → {"id","invite_link"}
//	GET    /admin/users/invites              list (role, email, status) → {"object":"list","total","data"}
//	GET    /admin/users/invites/{id}         read → the invite
//	DELETE /admin/users/invites/{id}         → {} (its link stops working)
//	POST   /admin/users/invites/{id}/resend  → {"inviteLink"} (a new link, seven days more; the old one stops working)
//
// The link is answered only by create and resend, with Cache-Control:
// no-store; the store keeps the token's digest only.
func (p *plane) serveInvites(w http.ResponseWriter, r *http.Request) error {
	iid := r.PathValue("id")
	switch {
	case iid == "":
		return httpapi.Methods{http.MethodGet: p.listInvites, http.MethodPost: p.createInvite}.Serve(w, r)
	case strings.HasSuffix(r.Pattern, "/resend"):
		return httpapi.Methods{http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return p.resendInvite(w, r, iid) }}.Serve(w, r)
	}
	return httpapi.Methods{
		http.MethodGet:    func(w http.ResponseWriter, r *http.Request) error { return p.getInvite(w, r, iid) },
		http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return p.deleteInvite(w, r, iid) },
	}.Serve(w, r)
}

// inviteBody is the body of POST /admin/users/invites (CreateInvite).
type inviteBody struct {
	Email      *string `json:"email"`
	Role       *Role   `json:"role"`
	Workspaces []struct {
		ID   string        `json:"id"`
		Role WorkspaceRole `json:"role"`
	} `json:"workspaces"`
	WorkspaceAPIKeyDetails *struct {
		Scopes []string `json:"scopes"`
	} `json:"workspace_api_key_details"`
}

func (p *plane) createInvite(w http.ResponseWriter, r *http.Request) error {
	var b inviteBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if b.Email == nil {
		return control.Invalid("email", "email is required")
	}
	email, err := checkEmail("email", *b.Email)
	if err != nil {
		return err
	}
	if b.Role == nil {
		return control.Invalid("role", "role is required")
	}
	if *b.Role != RoleAdmin && *b.Role != RoleMember {
		return control.Invalid("role", "role must be admin or member")
	}
	if b.WorkspaceAPIKeyDetails != nil {
		return control.Invalid("workspace_api_key_details", "workspace_api_key_details is not supported: a person's access follows their workspace roles")
	}
	if len(b.Workspaces) > 100 {
		return control.Invalid("workspaces", "at most 100 workspaces")
	}
	iv := &Invite{ID: control.NewUUID(), Email: email, Role: *b.Role, InvitedBy: p.actor(r), CreatedAt: p.now()}
	iv.ExpiresAt = iv.CreatedAt.Add(InviteTTL)
	for i, g := range b.Workspaces {
		param := "workspaces[" + strconv.Itoa(i) + "]"
		if err := p.checkWorkspace(r, param+".id", g.ID); err != nil {
			return err
		}
		if !validWorkspaceRole(g.Role) {
			return control.Invalid(param+".role", "role must be admin, manager or member")
		}
		iv.Workspaces = append(iv.Workspaces, Grant{WorkspaceID: g.ID, Role: g.Role})
	}
	if _, err := p.o.Store.UserByEmail(r.Context(), email); err == nil {
		return control.Conflict("email", "a user already has the email "+control.Quote(email))
	} else if !errors.Is(err, gateway.ErrNotFound) {
		return err
	}
	if _, err := PendingFor(r.Context(), p.o.Store, email, p.now()); err == nil {
		return control.Conflict("email", "a pending invite already has the email "+control.Quote(email)+": resend it")
	} else if !errors.Is(err, gateway.ErrNotFound) {
		return err
	}
	token := randomToken()
	iv.Digest = sha256.Sum256([]byte(token))
	if err := p.o.Store.CreateInvite(r.Context(), iv); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"id": iv.ID, "invite_link": p.link(r, token)})
	return nil
}

// checkWorkspace checks that the workspace id a body names exists.
func (p *plane) checkWorkspace(r *http.Request, param, id string) error {
	if id == "" {
		return control.Invalid(param, param+" is required")
	}
	if err := control.Label(param, id); err != nil {
		return err
	}
	if p.o.Workspaces == nil {
		return nil
	}
	if _, err := p.o.Workspaces.Workspace(r.Context(), id); errors.Is(err, gateway.ErrNotFound) {
		return control.Invalid(param, "no workspace "+control.Quote(id))
	} else if err != nil {
		return err
	}
	return nil
}

// link is the invite link of token: the console's invite page on
// Options.PublicURL, or on the origin r came to.
func (p *plane) link(r *http.Request, token string) string {
	origin := strings.TrimSuffix(p.o.PublicURL, "/")
	if origin == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		origin = scheme + "://" + r.Host
	}
	path := strings.TrimSuffix(p.o.ConsolePath, "/")
	if path == "" {
		path = "/console"
	}
	return origin + path + "/invite/" + token
}

func (p *plane) listInvites(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	pg, role, email, err := listParams(q, string(RoleAdmin), string(RoleMember))
	if err != nil {
		return err
	}
	status, err := control.Enum(q, "status", "", "pending", "cancelled", "accepted", "expired")
	if err != nil {
		return err
	}
	all, err := p.o.Store.Invites(r.Context())
	if err != nil {
		return err
	}
	now := p.now()
	data, total := httpapi.Filter(all, func(iv *Invite) bool {
		return (role == "" || string(iv.Role) == role) && (email == "" || iv.Email == email) &&
			(status == "" || iv.Status(now) == status)
	}, p.inviteWire, pg)
	writeList(w, data, total)
	return nil
}

// invite returns the invite of id, else the 404 naming it.
func (p *plane) invite(r *http.Request, id string) (*Invite, error) {
	iv, err := p.o.Store.Invite(r.Context(), id)
	if errors.Is(err, gateway.ErrNotFound) {
		return nil, notFound("inviteId", "no invite "+control.Quote(id))
	}
	return iv, err
}

func (p *plane) getInvite(w http.ResponseWriter, r *http.Request, id string) error {
	iv, err := p.invite(r, id)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, p.inviteWire(iv))
	return nil
}

func (p *plane) deleteInvite(w http.ResponseWriter, r *http.Request, id string) error {
	if err := p.o.Store.DeleteInvite(r.Context(), id); errors.Is(err, gateway.ErrNotFound) {
		return notFound("inviteId", "no invite "+control.Quote(id))
	} else if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, empty)
	return nil
}

func (p *plane) resendInvite(w http.ResponseWriter, r *http.Request, id string) error {
	iv, err := p.invite(r, id)
	if err != nil {
		return err
	}
	if !iv.AcceptedAt.IsZero() {
		return control.Conflict("inviteId", "the invite was accepted already")
	}
	token := randomToken()
	switch err := p.o.Store.RenewInvite(r.Context(), id, sha256.Sum256([]byte(token)), p.now().Add(InviteTTL)); {
	case errors.Is(err, gateway.ErrNotFound):
		return notFound("inviteId", "no invite "+control.Quote(id))
	case errors.Is(err, gateway.ErrConflict):
		return control.Conflict("inviteId", "the invite was accepted already")
	case err != nil:
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"inviteLink": p.link(r, token)})
	return nil
}
